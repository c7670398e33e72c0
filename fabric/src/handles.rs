//! RAII ownership of the raw libfabric objects behind one endpoint.
//!
//! Everything here is `pub(crate)`: the rest of the crate reaches libfabric
//! through these handles, and nothing outside the crate sees a raw pointer.

use std::ffi::{c_void, CString};
use std::ptr;

use fabric_sys as sys;

use crate::error::{check, Error, Result};
use crate::progress::ProgressMode;
use crate::provider::{Atomics, MrMode, Provider};

/// What `fi_getinfo` granted for the endpoint.
#[derive(Debug, Clone)]
pub(crate) struct Info {
    pub mr_mode: MrMode,
    pub inject_size: usize,
    pub auto_progress: bool,
    /// The provider's address length (`src_addrlen`).
    pub addr_len: usize,
    /// Whether addresses are strings (`FI_ADDR_STR`, as `shm`'s are).
    pub string_names: bool,
    /// Bytes of a registration key the application may choose
    /// (`mr_key_size`; 8 on `shm`, `tcp` and `sockets`).
    pub key_size: usize,
    /// Sends are transmitted and processed after earlier atomics to the
    /// same peer (`FI_ORDER_SAW` in both the transmit and receive order).
    pub send_after_atomic: bool,
    /// Who applies atomics: [`Atomics::Native`] when the endpoint was
    /// opened with the provider's atomics.
    pub atomics: Atomics,
    /// libfabric's name of the provider given (`tcp`, `tcp;ofi_rxm`, ...).
    pub name: String,
    /// RMA writes are processed after earlier writes to the same peer
    /// (`FI_ORDER_WAW`, transmit and receive).
    pub write_after_write: bool,
}

/// The longest string address (`FI_ADDR_STR`) accepted from a peer.
const STR_NAME_MAX: usize = 256;

impl Info {
    /// The longest peer name accepted, when this endpoint's own is
    /// `own_len` bytes. String addresses differ in length from process
    /// to process (`shm`'s embed the pid: `fi_shm://9995` and
    /// `fi_shm://10004`), and libfabric reads them up to their NUL, so
    /// only [`STR_NAME_MAX`] bounds them; other formats have one length,
    /// the provider's (or ours, where it reports none).
    fn name_max(&self, own_len: usize) -> usize {
        if self.string_names {
            STR_NAME_MAX
        } else {
            self.addr_len.max(own_len)
        }
    }
}

/// The fabric, domain, address vector, completion queue and endpoint of one
/// process, closed in the right order on drop (endpoint first, info last).
pub(crate) struct Handles {
    pub ep: *mut sys::fid_ep,
    pub cq: *mut sys::fid_cq,
    pub av: *mut sys::fid_av,
    pub domain: *mut sys::fid_domain,
    pub fabric: *mut sys::fid_fabric,
    info: *mut sys::fi_info,
    pub granted: Info,
    /// The completion queue's wait file descriptor, where it has one.
    pub cq_fd: Option<i32>,
}

// SAFETY: the handles are plain libfabric object pointers. The domain is
// opened with FI_THREAD_DOMAIN, and onesided serialises every call on these
// objects behind the endpoint's one lock (see `endpoint::EndpointState`), so moving
// or sharing the pointers between threads is sound.
unsafe impl Send for Handles {}
// SAFETY: as above: all use is serialised by the endpoint's lock.
unsafe impl Sync for Handles {}

fn fid_of<T>(object: *mut T) -> *mut sys::fid {
    // Every libfabric object struct starts with its `struct fid`.
    object.cast()
}

impl Handles {
    /// Opens everything for `provider`, telling it we can honour
    /// `mr_mode_supported`.
    pub fn open(
        provider: Provider,
        mr_mode_supported: MrMode,
        progress: ProgressMode,
        atomics: Atomics,
    ) -> Result<Handles> {
        if provider == Provider::Shm {
            remove_stale_shm_files();
        }
        let (info, atomics) = getinfo(provider, mr_mode_supported, progress, atomics)?;
        let mut handles = Handles {
            ep: ptr::null_mut(),
            cq: ptr::null_mut(),
            av: ptr::null_mut(),
            domain: ptr::null_mut(),
            fabric: ptr::null_mut(),
            info,
            granted: Info {
                mr_mode: MrMode::empty(),
                inject_size: 0,
                auto_progress: false,
                addr_len: 0,
                string_names: false,
                key_size: 0,
                send_after_atomic: false,
                atomics,
                name: String::new(),
                write_after_write: false,
            },
            cq_fd: None,
        };
        // SAFETY: `info` is the non-null result of fi_getinfo, whose attribute
        // pointers are valid until fi_freeinfo (in Drop). Each open call
        // writes a fresh object pointer into the field passed by reference;
        // Drop closes whatever was opened, in reverse order.
        unsafe {
            let attrs = &*info;
            handles.granted = Info {
                mr_mode: MrMode::from_bits_truncate((*attrs.domain_attr).mr_mode as u64),
                inject_size: (*attrs.tx_attr).inject_size,
                addr_len: attrs.src_addrlen,
                string_names: attrs.addr_format == sys::FI_ADDR_STR,
                auto_progress: (*attrs.domain_attr).data_progress == sys::FI_PROGRESS_AUTO,
                key_size: (*attrs.domain_attr).mr_key_size,
                // Software atomics are calls whose replies are waited for.
                send_after_atomic: atomics == Atomics::Native
                    && ((*attrs.tx_attr).msg_order
                        & (*attrs.rx_attr).msg_order
                        & sys::FI_ORDER_SAW)
                        != 0,
                atomics,
                write_after_write: ((*attrs.tx_attr).msg_order
                    & (*attrs.rx_attr).msg_order
                    & sys::FI_ORDER_WAW)
                    != 0,
                name: match (*attrs.fabric_attr).prov_name {
                    name if name.is_null() => String::new(),
                    name => std::ffi::CStr::from_ptr(name)
                        .to_string_lossy()
                        .into_owned(),
                },
            };
            check(
                "fi_fabric",
                sys::fi_fabric(attrs.fabric_attr, &mut handles.fabric, ptr::null_mut()),
            )?;
            check(
                "fi_domain",
                sys::fi_domain(handles.fabric, info, &mut handles.domain, ptr::null_mut()),
            )?;
            let mut av_attr = sys::fi_av_attr {
                type_: sys::FI_AV_TABLE,
                ..Default::default()
            };
            check(
                "fi_av_open",
                sys::fi_av_open(
                    handles.domain,
                    &mut av_attr,
                    &mut handles.av,
                    ptr::null_mut(),
                ),
            )?;
            handles.open_cq(provider)?;
            check(
                "fi_endpoint",
                sys::fi_endpoint(handles.domain, info, &mut handles.ep, ptr::null_mut()),
            )?;
            check(
                "fi_ep_bind(av)",
                sys::fi_ep_bind(handles.ep, fid_of(handles.av), 0),
            )?;
            check(
                "fi_ep_bind(cq)",
                sys::fi_ep_bind(
                    handles.ep,
                    fid_of(handles.cq),
                    sys::FI_TRANSMIT | sys::FI_RECV,
                ),
            )?;
            check("fi_enable", sys::fi_enable(handles.ep))?;
        }
        Ok(handles)
    }

    /// Opens the completion queue, with a file descriptor to wait on when the
    /// provider offers one (not `shm`, whose waits spin in `sched_yield`).
    ///
    /// # Safety
    /// `self.domain` must be open.
    unsafe fn open_cq(&mut self, provider: Provider) -> Result<()> {
        let want_fd = provider != Provider::Shm;
        let mut attr = sys::fi_cq_attr {
            format: sys::FI_CQ_FORMAT_TAGGED,
            wait_obj: if want_fd {
                sys::FI_WAIT_FD
            } else {
                sys::FI_WAIT_NONE
            },
            ..Default::default()
        };
        // SAFETY: the caller guarantees an open domain; attr outlives the call.
        let mut ret =
            unsafe { sys::fi_cq_open(self.domain, &mut attr, &mut self.cq, ptr::null_mut()) };
        if ret != 0 && want_fd {
            attr.wait_obj = sys::FI_WAIT_NONE;
            // SAFETY: as above; the failed call left no object behind.
            ret = unsafe { sys::fi_cq_open(self.domain, &mut attr, &mut self.cq, ptr::null_mut()) };
        } else if want_fd {
            let mut fd: i32 = -1;
            // SAFETY: FI_GETWAIT on a CQ opened with FI_WAIT_FD writes an int.
            let got = unsafe {
                sys::fi_control(
                    fid_of(self.cq),
                    sys::FI_GETWAIT as i32,
                    (&mut fd as *mut i32).cast::<c_void>(),
                )
            };
            if got == 0 && fd >= 0 {
                self.cq_fd = Some(fd);
            }
        }
        check("fi_cq_open", ret)
    }

    /// This endpoint's address, as bytes to hand to peers.
    pub fn name(&self) -> Result<Vec<u8>> {
        let mut buf = vec![0u8; 256];
        let mut len = buf.len();
        // SAFETY: the endpoint is open; buf has `len` writable bytes and
        // fi_getname writes at most that many, updating len.
        let ret = unsafe { sys::fi_getname(fid_of(self.ep), buf.as_mut_ptr().cast(), &mut len) };
        if ret == -(sys::FI_ETOOSMALL as i32) {
            buf.resize(len, 0);
            // SAFETY: as above with the size the provider asked for.
            check("fi_getname", unsafe {
                sys::fi_getname(fid_of(self.ep), buf.as_mut_ptr().cast(), &mut len)
            })?;
        } else {
            check("fi_getname", ret)?;
        }
        buf.truncate(len);
        Ok(buf)
    }

    /// Inserts peer addresses (as peers' [`Handles::name`] gave them);
    /// returns their `fi_addr_t`s in order. `fi_av_insert` takes no
    /// lengths, so each name is checked against the longest the
    /// provider's format allows ([`Info::name_max`]) and copied into a
    /// zero-padded, NUL-terminated slot of that length first: a short or
    /// garbled name from the key-value space cannot make libfabric read
    /// past it. Binary formats go in one `fi_av_insert` of slots of this
    /// endpoint's own name length (names of another length are refused);
    /// string formats (`shm`) one at a time, since providers disagree on
    /// how several strings are laid out (the man page says an array of
    /// pointers, libfabric 1.17's `shm` reads the bytes at `addr`).
    pub fn insert_addresses(&self, names: &[&[u8]], own_len: usize) -> Result<Vec<sys::fi_addr_t>> {
        let len = self.granted.name_max(own_len);
        let string = self.granted.string_names;
        for name in names {
            if name.is_empty() || name.len() > len || (!string && name.len() != own_len) {
                return Err(Error::BadDescriptor(format!(
                    "endpoint name of {} bytes; this provider's names are {}",
                    name.len(),
                    match string {
                        true => format!("1 to {len} bytes"),
                        false => format!("{own_len} bytes"),
                    }
                )));
            }
        }
        if string {
            let mut addrs = Vec::with_capacity(names.len());
            for name in names {
                addrs.extend(self.insert_slots(name, len + 1, 1)?);
            }
            return Ok(addrs);
        }
        self.insert_slots(&names.concat(), own_len, names.len())
    }

    /// Inserts `count` addresses laid out in `slots` of `stride` bytes
    /// each (padded with zeros to the stride, plus one NUL byte).
    fn insert_slots(
        &self,
        names: &[u8],
        stride: usize,
        count: usize,
    ) -> Result<Vec<sys::fi_addr_t>> {
        let mut addrs = vec![sys::FI_ADDR_NOTAVAIL; count];
        if count == 0 {
            return Ok(addrs);
        }
        let mut slots = vec![0u8; stride * count + 1];
        slots[..names.len().min(stride * count)]
            .copy_from_slice(&names[..names.len().min(stride * count)]);
        // SAFETY: the AV is open; `slots` holds `count` addresses of
        // `stride` bytes (at least the provider's address length, or a
        // NUL-terminated string for count 1), zero-padded and followed by
        // a NUL byte; addrs receives one fi_addr_t per address.
        let inserted = unsafe {
            sys::fi_av_insert(
                self.av,
                slots.as_ptr().cast(),
                count,
                addrs.as_mut_ptr(),
                0,
                ptr::null_mut(),
            )
        };
        if inserted != count as i32 {
            check("fi_av_insert", inserted.min(-1))?;
        }
        Ok(addrs)
    }

    /// Whether a thread may block on the completion queue's wait object
    /// now (`fi_trywait`): false when events are pending, which the next
    /// read of the queue collects. The caller holds the endpoint lock.
    pub fn try_wait(&self) -> bool {
        let mut cq = fid_of(self.cq);
        // SAFETY: fabric and CQ are open; fi_trywait reads one fid pointer
        // from the array.
        unsafe { sys::fi_trywait(self.fabric, &mut cq, 1) == 0 }
    }

    /// The endpoint's fid (for `fi_cancel`, `fi_mr_bind`).
    pub fn ep_fid(&self) -> *mut sys::fid {
        fid_of(self.ep)
    }
}

impl Drop for Handles {
    fn drop(&mut self) {
        for fid in [
            fid_of(self.ep),
            fid_of(self.cq),
            fid_of(self.av),
            fid_of(self.domain),
            fid_of(self.fabric),
        ] {
            if !fid.is_null() {
                // SAFETY: each object was opened by Handles::open, is closed
                // exactly once here, and its dependents were closed before it.
                unsafe { sys::fi_close(fid) };
            }
        }
        // SAFETY: info came from fi_getinfo and is freed exactly once.
        unsafe { sys::fi_freeinfo(self.info) };
    }
}

/// Asks libfabric for an RDM endpoint on `provider` with what onesided
/// needs, and atomics where `atomics` asks the provider's (falling back to
/// software atomics where it has none); returns it and who applies atomics.
fn getinfo(
    provider: Provider,
    mr_mode_supported: MrMode,
    progress: ProgressMode,
    atomics: Atomics,
) -> Result<(*mut sys::fi_info, Atomics)> {
    let unavailable = |text: String| Error::ProviderUnavailable {
        provider: provider.name(),
        text,
    };
    // For tcp, the name libfabric matches to its native RDM endpoint where
    // it has one (2.x, as MPICH runs), else to tcp;ofi_rxm (1.x, and
    // whenever atomics are asked for).
    let name = match provider {
        Provider::Tcp => "tcp",
        p => p.libfabric_name(),
    };
    let prov_name = CString::new(name).map_err(|e| unavailable(e.to_string()))?;
    let choices = match atomics {
        Atomics::Native => vec![Atomics::Native, Atomics::Software],
        Atomics::Software => vec![Atomics::Software],
    };
    let mut attempts = vec![true];
    if provider == Provider::Tcp {
        // With onesided's background thread (blocking on the CQ's fd, which
        // also wakes for incoming RMA), manual data progress: rxm's own
        // thread would take turns with the application's on 2 cores
        // (measured, 2 ranks on one host: 8-byte message 26 -> 9 us,
        // ibarrier 79 -> 12 us, 1 MiB put 400 -> 200 us). Without it, ask
        // for automatic progress first, so that passive target still works.
        attempts = if progress == ProgressMode::Background {
            vec![false, true]
        } else {
            vec![true, false]
        };
    }
    let mut last = 0;
    for (atomics, auto) in (choices.iter()).flat_map(|&a| attempts.iter().map(move |&p| (a, p))) {
        // SAFETY: fi_allocinfo returns a zeroed fi_info with allocated
        // attribute structs, or null. The fields set below are plain values,
        // and prov_name is strdup'd because fi_freeinfo frees it.
        unsafe {
            let hints = sys::fi_allocinfo();
            if hints.is_null() {
                return Err(unavailable("fi_allocinfo returned null".into()));
            }
            let h = &mut *hints;
            // The sender's rank travels as remote CQ data.
            (*h.domain_attr).cq_data_size = 4;
            h.caps = sys::FI_MSG | sys::FI_TAGGED | sys::FI_RMA;
            if atomics == Atomics::Native {
                h.caps |= sys::FI_ATOMIC;
            }
            h.mode = 0;
            (*h.ep_attr).type_ = sys::FI_EP_RDM;
            (*h.domain_attr).mr_mode = mr_mode_supported.bits() as i32;
            (*h.domain_attr).threading = sys::FI_THREAD_DOMAIN;
            if provider == Provider::Tcp {
                (*h.domain_attr).data_progress = if auto {
                    sys::FI_PROGRESS_AUTO
                } else {
                    sys::FI_PROGRESS_MANUAL
                };
            }
            (*h.fabric_attr).prov_name = libc::strdup(prov_name.as_ptr());
            let mut info: *mut sys::fi_info = ptr::null_mut();
            let ret = sys::fi_getinfo(
                sys::ONESIDED_FI_VERSION,
                ptr::null(),
                ptr::null(),
                0,
                hints,
                &mut info,
            );
            sys::fi_freeinfo(hints);
            if ret == 0 && !info.is_null() {
                return Ok((info, atomics));
            }
            last = ret;
        }
    }
    let code = -last;
    Err(unavailable(format!(
        "fi_getinfo found no RDM endpoint with tagged messages and RMA: {}",
        crate::error::strerror(code)
    )))
}

/// Removes `/dev/shm/PID:*` files named after this process's PID: libfabric's
/// shm provider names its segment so, refuses to start (`EBUSY`) when one is
/// there already, and none can belong to a live process but this one, so any
/// found now was left by a dead process that had the same PID (killed before
/// it could close its endpoint; PIDs wrap at 32768 here).
fn remove_stale_shm_files() {
    let prefix = format!("{}:", std::process::id());
    if let Ok(entries) = std::fs::read_dir("/dev/shm") {
        for entry in entries.flatten() {
            if entry.file_name().to_string_lossy().starts_with(&prefix) {
                let _ = std::fs::remove_file(entry.path());
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn string_names_of_any_pid_length_fit_and_binary_ones_have_one_length() {
        let mut granted = Info {
            mr_mode: MrMode::empty(),
            inject_size: 0,
            auto_progress: false,
            addr_len: 18,
            string_names: true,
            key_size: 8,
            send_after_atomic: false,
            atomics: Atomics::Native,
            name: String::new(),
            write_after_write: false,
        };
        // A peer whose name is a byte longer than ours (its pid has a
        // digit more: a job that failed so once).
        let (ours, theirs) = ("fi_shm://9995\0".len(), "fi_shm://10004\0".len());
        assert!(theirs > ours && theirs <= granted.name_max(ours));
        assert_eq!(granted.name_max(18), STR_NAME_MAX);
        granted.string_names = false;
        granted.addr_len = 16;
        assert_eq!(granted.name_max(16), 16);
        assert_eq!(granted.name_max(0), 16);
        granted.addr_len = 0;
        assert_eq!(granted.name_max(24), 24);
    }
}
