//! Raw libfabric loops: the same operations as [`crate::Endpoint`]'s, posted
//! straight on the provider with no completion table, no tokens and no
//! backoff. They are the floor of the `pingpong` benchmark: the endpoint's
//! latency is reported as a ratio to these.
//!
//! Each loop holds the endpoint's lock for its whole run and busy-polls the
//! completion queue, taking every completion as its own: that is what makes
//! it a floor, and why the functions are `unsafe` (see their `# Safety`). Like the endpoint's own waits, it tells the background
//! progress thread that the application is making progress, so the thread
//! sleeps as it does during the endpoint's operations (rather than blocking
//! on the lock, which measurably changes the machine's timing).

use std::ffi::c_void;
use std::ptr;
use std::time::{Duration, Instant};

use fabric_sys as sys;

use crate::endpoint::Core;
use crate::error::{Error, Result};
use crate::matching::SourceMatch;
use crate::memory::RemoteMemory;
use crate::Endpoint;

/// The descriptor of `buf`, which must lie in a region of the endpoint when
/// the provider wants local descriptors (`FI_MR_LOCAL`).
fn local_desc(
    shared: &crate::endpoint::EndpointState,
    buf: *mut u8,
    len: usize,
) -> Result<*mut c_void> {
    let desc = shared.desc_of(buf as usize, len);
    if desc.is_null() && shared.granted.mr_mode.contains(crate::MrMode::LOCAL) {
        return Err(Error::BadDescriptor(
            "raw loops need a buffer inside a registered region under FI_MR_LOCAL".into(),
        ));
    }
    Ok(desc)
}

/// Spins on the completion queue until one completion arrives.
fn await_one(core: &Core, op: &'static str, rank: u32) -> Result<()> {
    let mut entry = sys::fi_cq_tagged_entry::default();
    loop {
        // SAFETY: the CQ is open with the tagged format; entry has room for one.
        let n = unsafe {
            sys::fi_cq_read(
                core.handles.cq,
                (&mut entry as *mut sys::fi_cq_tagged_entry).cast(),
                1,
            )
        };
        if n == 1 {
            return Ok(());
        }
        if n == -(sys::FI_EAVAIL as isize) {
            let mut err = sys::fi_cq_err_entry::default();
            // SAFETY: an error entry is available; err is a zeroed entry.
            unsafe { sys::fi_cq_readerr(core.handles.cq, &mut err, 0) };
            let code = err.err.saturating_abs();
            return Err(Error::Completion {
                op,
                rank,
                code,
                provider_code: err.prov_errno,
                text: crate::error::strerror(code),
            });
        }
    }
}

/// Retries `post` while the provider answers `FI_EAGAIN`, polling the CQ.
fn post_retry(
    core: &Core,
    op: &'static str,
    rank: u32,
    mut post: impl FnMut() -> isize,
) -> Result<()> {
    loop {
        let ret = post();
        if ret == 0 {
            return Ok(());
        }
        if ret != -(sys::FI_EAGAIN as isize) {
            return Err(Error::post_failed(op, rank, ret));
        }
        let mut entry = sys::fi_cq_tagged_entry::default();
        // SAFETY: as in await_one. A completion read here would belong to an
        // earlier operation of this loop, all of which were awaited already.
        unsafe {
            sys::fi_cq_read(
                core.handles.cq,
                (&mut entry as *mut sys::fi_cq_tagged_entry).cast(),
                1,
            )
        };
    }
}

/// Reads `buf.len()` bytes at offset 0 of `from`'s region `remote` into
/// `buf`, `iterations` times, each read awaited before the next; returns the
/// time of each read.
///
/// # Errors
/// [`Error::OutOfRange`] when `len` exceeds the region; errors of the
/// provider as [`Error::Completion`].
///
/// # Safety
/// No other operation of `ep` may be in flight or posted while the loop
/// runs (it takes every completion as its own), and the target must make
/// progress. If the loop returns an error, the provider may still write
/// into `buf`: keep `buf` alive until `ep` is dropped.
pub unsafe fn read_loop(
    ep: &Endpoint,
    from: u32,
    remote: &RemoteMemory,
    buf: &mut [u8],
    iterations: usize,
) -> Result<Vec<Duration>> {
    let len = buf.len();
    remote.permits(crate::Access::REMOTE_READ, "raw read", from)?;
    let address = remote.address_of(0, len as u64, "raw read")?;
    let shared = ep.shared();
    let core = shared.lock();
    let addr = core.addr(from)?;
    let buf = buf.as_mut_ptr();
    let desc = local_desc(shared, buf, len)?;
    let mut times = Vec::with_capacity(iterations);
    for _ in 0..iterations {
        let start = Instant::now();
        post_retry(&core, "raw read", from, || {
            // SAFETY: buf is `len` bytes borrowed mutably for this function;
            // the read is awaited below before the next is posted.
            unsafe {
                sys::fi_read(
                    core.handles.ep,
                    buf.cast(),
                    len,
                    desc,
                    addr,
                    address,
                    remote.key,
                    ptr::null_mut(),
                )
            }
        })?;
        await_one(&core, "raw read", from)?;
        times.push(start.elapsed());
        shared.note_app_progress();
    }
    Ok(times)
}

/// Tagged ping-pong of `buf.len()`-byte messages with `peer`, `iterations`
/// round trips: the initiator sends then receives, the other side receives then
/// sends. Returns the time of each round trip.
///
/// # Errors
/// Errors of the provider as [`Error::Completion`].
///
/// # Safety
/// As [`read_loop`], for `buf` and the peer.
pub unsafe fn tagged_pingpong(
    ep: &Endpoint,
    peer: u32,
    tag: u64,
    buf: &mut [u8],
    iterations: usize,
    initiator: bool,
) -> Result<Vec<Duration>> {
    let len = buf.len();
    let shared = ep.shared();
    let core = shared.lock();
    let addr = core.addr(peer)?;
    let buf = buf.as_mut_ptr();
    let desc = local_desc(shared, buf, len)?;
    let me = u64::from(ep.rank());
    let send_tag = SourceMatch::wire_tag(tag, ep.rank());
    let recv_tag = SourceMatch::wire_tag(tag, peer);
    let inject = len <= shared.inject_size();
    let send = || -> Result<()> {
        post_retry(&core, "raw send", peer, || {
            // SAFETY: buf is `len` bytes borrowed for this function; an injected message is
            // copied before fi_tinject returns, a sent one is awaited below.
            unsafe {
                if inject {
                    sys::fi_tinjectdata(core.handles.ep, buf.cast(), len, me, addr, send_tag)
                } else {
                    sys::fi_tsenddata(
                        core.handles.ep,
                        buf.cast(),
                        len,
                        desc,
                        me,
                        addr,
                        send_tag,
                        ptr::null_mut(),
                    )
                }
            }
        })?;
        if !inject {
            await_one(&core, "raw send", peer)?;
        }
        Ok(())
    };
    let recv = || -> Result<()> {
        post_retry(&core, "raw recv", peer, || {
            // SAFETY: buf is `len` bytes borrowed for this function; the receive is awaited
            // below before buf is used again.
            unsafe {
                sys::fi_trecv(
                    core.handles.ep,
                    buf.cast::<c_void>(),
                    len,
                    desc,
                    sys::FI_ADDR_UNSPEC,
                    recv_tag,
                    0,
                    ptr::null_mut(),
                )
            }
        })?;
        await_one(&core, "raw recv", peer)
    };
    let mut times = Vec::with_capacity(iterations);
    for _ in 0..iterations {
        let start = Instant::now();
        if initiator {
            send()?;
            recv()?;
        } else {
            recv()?;
            send()?;
        }
        times.push(start.elapsed());
        shared.note_app_progress();
    }
    Ok(times)
}
