//! Provider choice and the memory-registration modes a provider may demand.

use std::fmt;
use std::str::FromStr;

use bitflags::bitflags;

use crate::error::Error;

/// The libfabric this process loaded: its version (`MAJOR.MINOR`, as
/// `fi_version` gives it) and the file it came from (from
/// `/proc/self/maps`; empty when not found), for reports that must say
/// which libfabric a measurement ran on.
pub fn libfabric_loaded() -> (String, String) {
    // SAFETY: fi_version takes no arguments and returns a constant.
    let v = unsafe { fabric_sys::fi_version() };
    let maps = std::fs::read_to_string("/proc/self/maps").unwrap_or_default();
    let path = (maps.lines())
        .filter_map(|line| line.split_whitespace().nth(5))
        .find(|path| {
            path.rsplit('/')
                .next()
                .is_some_and(|f| f.starts_with("libfabric.so"))
        })
        .unwrap_or_default();
    (format!("{}.{}", v >> 16, v & 0xffff), path.to_string())
}

/// A libfabric provider onesided knows how to drive.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
#[non_exhaustive]
pub enum Provider {
    /// `shm`: shared memory on one host, the embedded default.
    Shm,
    /// `tcp`: TCP sockets, across hosts: libfabric's native RDM endpoint
    /// where it has one (2.x) and atomics are not asked of the provider
    /// (see [`Atomics`]), else `tcp;ofi_rxm`.
    Tcp,
    /// `sockets`: libfabric's older TCP provider, progress in its own thread.
    Sockets,
    /// `verbs;ofi_rxm`: InfiniBand and RoCE. Accepted and planned for; it
    /// needs RDMA hardware, which the development machines do not have.
    Verbs,
}

impl Provider {
    /// Every provider, in the order of [`Provider::name`].
    pub const ALL: [Provider; 4] = [
        Provider::Shm,
        Provider::Tcp,
        Provider::Sockets,
        Provider::Verbs,
    ];

    /// onesided's short name: `shm`, `tcp`, `sockets`, `verbs`.
    pub fn name(self) -> &'static str {
        match self {
            Provider::Shm => "shm",
            Provider::Tcp => "tcp",
            Provider::Sockets => "sockets",
            Provider::Verbs => "verbs",
        }
    }

    /// The provider string handed to `fi_getinfo` (`tcp;ofi_rxm`, ...).
    pub fn libfabric_name(self) -> &'static str {
        match self {
            Provider::Shm => "shm",
            Provider::Tcp => "tcp;ofi_rxm",
            Provider::Sockets => "sockets",
            Provider::Verbs => "verbs;ofi_rxm",
        }
    }

    /// The provider named by `ONESIDED_PROVIDER`, else by libfabric's own
    /// `FI_PROVIDER`, else [`Provider::Shm`].
    ///
    /// # Errors
    /// [`Error::UnknownProvider`] when the variable names another provider.
    pub fn from_env() -> Result<Provider, Error> {
        for name in ["ONESIDED_PROVIDER", "FI_PROVIDER"] {
            if let Ok(value) = std::env::var(name) {
                if !value.is_empty() {
                    return value.parse();
                }
            }
        }
        Ok(Provider::Shm)
    }
}

impl FromStr for Provider {
    type Err = Error;

    /// Accepts onesided's short names and libfabric's full ones
    /// (`tcp;ofi_rxm`, `verbs;ofi_rxm`), in any case.
    fn from_str(s: &str) -> Result<Provider, Error> {
        let lower = s.trim().to_ascii_lowercase();
        Provider::ALL
            .into_iter()
            .find(|p| p.name() == lower || p.libfabric_name() == lower)
            .ok_or_else(|| Error::UnknownProvider {
                name: s.to_string(),
            })
    }
}

impl fmt::Display for Provider {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.name())
    }
}

/// Who applies remote atomics (`ONESIDED_ATOMICS`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Atomics {
    /// The provider, where it offers atomics; where it offers none, the
    /// endpoint falls back to [`Atomics::Software`].
    Native,
    /// The target's progress engine, with CPU atomics on its memory: each
    /// atomic a request and a reply of the control plane. The default on
    /// `tcp`, as MPICH chooses there (its atomics are active messages on
    /// libfabric 2.x's native `tcp`, which has no atomics).
    Software,
}

impl Atomics {
    /// The default on `provider`: [`Atomics::Software`] on `tcp`, else
    /// [`Atomics::Native`].
    pub fn default_for(provider: Provider) -> Atomics {
        match provider {
            Provider::Tcp => Atomics::Software,
            _ => Atomics::Native,
        }
    }

    /// `native` or `software`.
    pub fn name(self) -> &'static str {
        match self {
            Atomics::Native => "native",
            Atomics::Software => "software",
        }
    }
}

bitflags! {
    /// The `mr_mode` bits of libfabric that onesided honours
    /// (`fi_mr(3)`): what a provider may require of registrations.
    #[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
    pub struct MrMode: u64 {
        /// Local buffers of data transfers must be registered too, and their
        /// descriptor passed with each operation.
        const LOCAL = fabric_sys::FI_MR_LOCAL;
        /// Remote addresses are virtual addresses (else offsets from the start
        /// of the registration).
        const VIRT_ADDR = fabric_sys::FI_MR_VIRT_ADDR;
        /// Only allocated (backed) memory may be registered.
        const ALLOCATED = fabric_sys::FI_MR_ALLOCATED;
        /// The provider chooses the key; read it back after registering.
        const PROV_KEY = fabric_sys::FI_MR_PROV_KEY;
        /// Registrations are bound to an endpoint and enabled before use.
        const ENDPOINT = fabric_sys::FI_MR_ENDPOINT;
    }
}

impl MrMode {
    /// The bits onesided can act on even when the provider did not ask for
    /// them (registering local buffers and passing their descriptors, reading
    /// keys back): requesting them in
    /// [`crate::EndpointConfig::mr_mode_request`] runs those paths on any
    /// provider, so `shm` with [`MrMode::VERBS`] requested runs exactly the
    /// verbs registration path. `VIRT_ADDR` is the provider's choice alone,
    /// and `ENDPOINT` too: `shm`, `tcp` and `sockets` of libfabric 1.17
    /// refuse `fi_mr_bind` to an endpoint unless they asked for it.
    pub const FORCEABLE: MrMode = MrMode::LOCAL
        .union(MrMode::ALLOCATED)
        .union(MrMode::PROV_KEY);

    /// The bits verbs demands (and that onesided can always honour).
    pub const VERBS: MrMode = MrMode::LOCAL
        .union(MrMode::VIRT_ADDR)
        .union(MrMode::ALLOCATED)
        .union(MrMode::PROV_KEY);
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn parses_short_and_libfabric_names() {
        assert_eq!("shm".parse::<Provider>().unwrap(), Provider::Shm);
        assert_eq!("TCP".parse::<Provider>().unwrap(), Provider::Tcp);
        assert_eq!("tcp;ofi_rxm".parse::<Provider>().unwrap(), Provider::Tcp);
        assert_eq!("verbs".parse::<Provider>().unwrap(), Provider::Verbs);
        let err = "psm9".parse::<Provider>().unwrap_err();
        assert_eq!(
            err.to_string(),
            "unknown provider \"psm9\" (known: shm, tcp, sockets, verbs)"
        );
    }

    #[test]
    fn names_round_trip() {
        for p in Provider::ALL {
            assert_eq!(p.name().parse::<Provider>().unwrap(), p);
            assert_eq!(p.to_string(), p.name());
        }
    }
}
