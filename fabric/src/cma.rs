//! Cross-memory attach: copying straight out of another process's memory
//! on this host (`process_vm_readv`, one copy where shared memory takes
//! two), or into it (`process_vm_writev`), for large pieces of the
//! shared-memory collectives.
//!
//! The kernel allows it between processes of one user unless Yama's
//! `ptrace_scope` is above 0 or a seccomp filter forbids the call.
//! [`available`] decides from what every process of a job on this host
//! sees alike (the sysctl, and a read of its own memory), so that the
//! ranks agree on using it without a message. [`CMA_ENV`]` = off` turns
//! it off (set it alike on every rank of a host): the collectives then
//! copy every piece through shared memory, as on a host that forbids the
//! call.

use std::sync::OnceLock;

use crate::{Error, Result};

/// The environment variable that turns cross-memory reads `off` (or
/// `on`: the default, where the host allows them).
pub const CMA_ENV: &str = "ONESIDED_CMA";

/// Whether this host lets processes of one user read each other's memory
/// and [`CMA_ENV`] does not turn that off (decided once per process; a
/// value other than `on` or `off` gives a warning and counts as `on`).
pub fn available() -> bool {
    static AVAILABLE: OnceLock<bool> = OnceLock::new();
    *AVAILABLE.get_or_init(|| {
        match std::env::var(CMA_ENV).as_deref() {
            Ok("off") => return false,
            Ok("on") | Err(_) => {}
            Ok(other) => {
                eprintln!("onesided: {CMA_ENV}={other:?} is neither on nor off: taken as on")
            }
        }
        let scope = std::fs::read_to_string("/proc/sys/kernel/yama/ptrace_scope")
            .ok()
            .and_then(|s| s.trim().parse::<u32>().ok())
            .unwrap_or(0);
        let probe = [0x5au8; 8];
        let mut out = [0u8; 8];
        scope == 0
            && read(std::process::id(), probe.as_ptr() as usize, &mut out).is_ok()
            && out == probe
    })
}

/// Copies `out.len()` bytes at `address` of process `pid` into `out`.
///
/// # Errors
/// [`Error::Io`] when the kernel refuses (no permission, no such process,
/// an address range the process does not map) or copies less.
pub fn read(pid: u32, address: usize, out: &mut [u8]) -> Result<()> {
    let len = out.len();
    transfer(pid, address, len, ("reading", "of"), |done, remote| {
        let local = libc::iovec {
            iov_base: out[done..].as_mut_ptr().cast(),
            iov_len: len - done,
        };
        // SAFETY: `local` describes the writable rest of `out`, which
        // lives for the call; the kernel checks `remote` against process
        // `pid`'s mappings and fails with EFAULT instead of touching
        // anything else; no pointer is kept after the call.
        unsafe { libc::process_vm_readv(pid as libc::pid_t, &local, 1, remote, 1, 0) }
    })
}

/// Copies `data` to `address` of process `pid`: memory that process
/// lent for it to be written (the caller's protocol says so; the kernel
/// only checks that `pid` maps the range writable).
///
/// # Errors
/// [`Error::Io`] when the kernel refuses (no permission, no such process,
/// an address range the process does not map writable) or copies less.
pub fn write(pid: u32, address: usize, data: &[u8]) -> Result<()> {
    transfer(
        pid,
        address,
        data.len(),
        ("writing", "into"),
        |done, remote| {
            let local = libc::iovec {
                iov_base: data[done..].as_ptr().cast_mut().cast(),
                iov_len: data.len() - done,
            };
            // SAFETY: `local` describes the rest of `data`, which lives for
            // the call and which the kernel only reads; the kernel checks
            // `remote` against process `pid`'s mappings and fails with EFAULT
            // instead of touching anything else; no pointer is kept after the
            // call. This process's own memory is written only where it is
            // `remote`, which is the case only for a range its caller lent for
            // writing.
            unsafe { libc::process_vm_writev(pid as libc::pid_t, &local, 1, remote, 1, 0) }
        },
    )
}

/// Moves `len` bytes between this process and `address` of process
/// `pid` by calls of `copy(done, remote)` (which may copy less than asked)
/// until all are moved; `doing` names the direction in errors.
fn transfer(
    pid: u32,
    address: usize,
    len: usize,
    (doing, at): (&str, &str),
    mut copy: impl FnMut(usize, &libc::iovec) -> isize,
) -> Result<()> {
    let mut done = 0;
    while done < len {
        let remote = libc::iovec {
            iov_base: (address + done) as *mut libc::c_void,
            iov_len: len - done,
        };
        let n = copy(done, &remote);
        if n <= 0 {
            let source = if n == 0 {
                std::io::Error::new(std::io::ErrorKind::UnexpectedEof, "nothing copied")
            } else {
                std::io::Error::last_os_error()
            };
            return Err(Error::io(
                format!("{doing} {} bytes {at} process {pid}", len - done),
                source,
            ));
        }
        done += n as usize;
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn reads_this_process_and_refuses_bad_addresses() {
        let data: Vec<u8> = (0..100_000u32).map(|i| (i % 251) as u8).collect();
        let mut out = vec![0u8; data.len()];
        read(std::process::id(), data.as_ptr() as usize, &mut out).unwrap();
        assert_eq!(out, data);
        let mut one = [0u8; 8];
        assert!(read(std::process::id(), 8, &mut one).is_err(), "page 0");
    }

    #[test]
    fn writes_this_process_and_refuses_bad_addresses() {
        let data: Vec<u8> = (0..100_000u32).map(|i| (i % 251) as u8).collect();
        let mut target = vec![0u8; data.len()];
        write(std::process::id(), target.as_mut_ptr() as usize, &data).unwrap();
        // Read back through the kernel too: the compiler never saw the
        // bytes written.
        let mut seen = vec![0u8; data.len()];
        read(std::process::id(), target.as_ptr() as usize, &mut seen).unwrap();
        assert_eq!(seen, data);
        assert!(write(std::process::id(), 8, &data[..8]).is_err(), "page 0");
    }
}
