//! The one error type of onesided-fabric.

use std::time::Duration;

use crate::pmi::WireError;

/// Everything that can fail in onesided-fabric. Each variant names what
/// failed: the libfabric call and its `fi_strerror` text, the peer rank, the
/// PMI exchange or the range.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum Error {
    /// A libfabric call returned an error.
    #[error("{call} failed: {text} (libfabric error {code})")]
    Fabric {
        /// The libfabric call (`fi_getinfo`, `fi_mr_reg`, ...).
        call: &'static str,
        /// The positive libfabric error number.
        code: i32,
        /// `fi_strerror(code)`.
        text: &'static str,
    },
    /// An operation completed with an error.
    #[error("{op} to rank {rank} failed: {text} (libfabric error {code}, provider error {provider_code})")]
    Completion {
        /// The operation (`read`, `write`, `send`, `fetch_add`, ...).
        op: &'static str,
        /// The peer rank.
        rank: u32,
        /// The positive libfabric error number, whatever sign the provider used.
        code: i32,
        /// The provider's own error number.
        provider_code: i32,
        /// `fi_strerror(code)` (libfabric's static text).
        text: &'static str,
    },
    /// The peer died (reported by the launcher in fault-tolerant mode).
    #[error("{op} to rank {rank} failed: rank {rank} has died")]
    PeerDead {
        /// The operation.
        op: &'static str,
        /// The dead rank.
        rank: u32,
    },
    /// An operation did not complete within the endpoint's timeout.
    #[error("{op} to rank {rank} did not complete within {after:?} (peer hung or unreachable)")]
    Timeout {
        /// The operation.
        op: &'static str,
        /// The peer rank.
        rank: u32,
        /// The timeout that expired.
        after: Duration,
    },
    /// A provider name onesided does not know.
    #[error("unknown provider {name:?} (known: shm, tcp, sockets, verbs)")]
    UnknownProvider {
        /// The name given.
        name: String,
    },
    /// The provider cannot be opened on this machine with what onesided needs.
    #[error("provider {provider} is not available here: {text}")]
    ProviderUnavailable {
        /// The provider.
        provider: &'static str,
        /// Why (`fi_strerror` of `fi_getinfo`'s answer, or what is missing).
        text: String,
    },
    /// A rank outside the job.
    #[error("rank {rank} does not exist (job size {size})")]
    InvalidRank {
        /// The rank given.
        rank: u32,
        /// The job size.
        size: u32,
    },
    /// An access outside a buffer or registration.
    #[error("{what}: bytes {offset}..{end} are outside 0..{size}", end = *offset as u128 + *len as u128)]
    OutOfRange {
        /// What was accessed.
        what: &'static str,
        /// Start of the access.
        offset: u64,
        /// Length of the access.
        len: u64,
        /// Size of what was accessed.
        size: u64,
    },
    /// An access the target region does not allow (a write to a region
    /// registered for reads only); nothing was posted.
    #[error("{op} to rank {rank} refused: the region allows only {}", access_names(*allowed))]
    NotPermitted {
        /// The operation.
        op: &'static str,
        /// The target rank.
        rank: u32,
        /// What the region allows.
        allowed: crate::memory::Access,
    },
    /// A control-plane service that is served already.
    #[error("control service {service} is served already")]
    ServiceTaken {
        /// The service number.
        service: u16,
    },
    /// A misaligned atomic: an offset or length that is not a multiple of
    /// the element size.
    #[error("{what}: offset {offset} or length is not aligned to the element size")]
    Misaligned {
        /// What was accessed.
        what: &'static str,
        /// The offset given.
        offset: u64,
    },
    /// An operation the provider does not offer.
    #[error("{what} is not supported by provider {provider}")]
    NotSupported {
        /// What was asked for.
        what: &'static str,
        /// The provider.
        provider: &'static str,
    },
    /// A message larger than the receive buffer.
    #[error("message from rank {rank} with tag {tag:#x} is {len} bytes, larger than the {capacity}-byte receive buffer")]
    Truncated {
        /// The sender.
        rank: u32,
        /// The tag.
        tag: u64,
        /// Bytes sent.
        len: usize,
        /// Bytes the receiver offered.
        capacity: usize,
    },
    /// A remote memory descriptor that does not decode.
    #[error("malformed remote memory descriptor: {0}")]
    BadDescriptor(String),
    /// A bad setting in the environment.
    #[error("environment variable {name}={value:?}: {why}")]
    BadEnv {
        /// The variable.
        name: &'static str,
        /// Its value.
        value: Box<str>,
        /// What is wrong with it.
        why: &'static str,
    },
    /// The PMI exchange failed.
    #[error("PMI bootstrap: {0}")]
    Pmi(Box<WireError>),
    /// The PMI server answered with an error code.
    #[error("PMI server refused {command}: rc={rc} {message}")]
    PmiRefused {
        /// The command refused.
        command: Box<str>,
        /// The return code.
        rc: i32,
        /// The server's message.
        message: Box<str>,
    },
    /// The launcher could not start the processes a spawn asked for
    /// (every process of the job gets this; the job goes on without them).
    #[error("spawn failed: {0}")]
    SpawnFailed(String),
    /// A standby process (see [`crate::pmi::STANDBY_ENV`]) that the job
    /// ended without needing.
    #[error("this standby process was not needed by the job")]
    Dismissed,
    /// A call that needs the only handle of the endpoint (connecting,
    /// finalizing) while others are still held.
    #[error("{op}: {handles} other handle(s) of the endpoint are still held (windows, communicators, exposures or clones); drop them first")]
    StillShared {
        /// What was refused.
        op: &'static str,
        /// How many other handles there are.
        handles: usize,
    },
    /// An I/O error outside libfabric (sockets, pipes, processes).
    #[error("{what}: {source}")]
    Io {
        /// What was being done.
        what: String,
        /// The error.
        source: std::io::Error,
    },
}

fn access_names(access: crate::memory::Access) -> String {
    if access.is_empty() {
        return "local access".into();
    }
    access
        .iter_names()
        .map(|(name, _)| name)
        .collect::<Vec<_>>()
        .join(" | ")
}

impl From<WireError> for Error {
    fn from(e: WireError) -> Error {
        Error::Pmi(Box::new(e))
    }
}

/// onesided-fabric's result type.
pub type Result<T, E = Error> = std::result::Result<T, E>;

/// `fi_strerror` of a positive libfabric error number: libfabric's own
/// static text, so errors carry it without allocating.
pub(crate) fn strerror(code: i32) -> &'static str {
    // SAFETY: fi_strerror accepts any int and returns a pointer to a static,
    // NUL-terminated string of the loaded library (or null, handled below);
    // libfabric stays loaded for the life of the process.
    let ptr = unsafe { fabric_sys::fi_strerror(code) };
    if ptr.is_null() {
        return "unknown libfabric error";
    }
    // SAFETY: ptr is non-null and points to a static C string.
    unsafe { std::ffi::CStr::from_ptr(ptr) }
        .to_str()
        .unwrap_or("unknown libfabric error")
}

/// Turns a libfabric return code (negative on error) into a `Result`.
pub(crate) fn check(call: &'static str, ret: impl Into<i64>) -> Result<()> {
    let ret = ret.into();
    if ret >= 0 {
        return Ok(());
    }
    let code = i32::try_from(-ret).unwrap_or(i32::MAX);
    Err(Error::Fabric {
        call,
        code,
        text: strerror(code),
    })
}

impl Error {
    /// The rank this error names, when it concerns one peer.
    pub fn rank(&self) -> Option<u32> {
        match self {
            Error::Completion { rank, .. }
            | Error::PeerDead { rank, .. }
            | Error::Timeout { rank, .. }
            | Error::Truncated { rank, .. }
            | Error::NotPermitted { rank, .. } => Some(*rank),
            _ => None,
        }
    }

    /// The error of an operation whose post returned `ret` (negative).
    pub(crate) fn post_failed(op: &'static str, rank: u32, ret: isize) -> Error {
        let code = i32::try_from(ret.unsigned_abs()).unwrap_or(i32::MAX);
        Error::Completion {
            op,
            rank,
            code,
            provider_code: 0,
            text: strerror(code),
        }
    }

    pub(crate) fn io(what: impl Into<String>, source: std::io::Error) -> Error {
        Error::Io {
            what: what.into(),
            source,
        }
    }
}

#[cfg(test)]
mod tests {
    #[test]
    fn error_stays_small() {
        // Every Result of the data path carries one: keep it at seven words.
        assert!(std::mem::size_of::<super::Error>() <= 56);
    }
}
