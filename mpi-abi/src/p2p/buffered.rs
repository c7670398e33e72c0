//! Buffered mode: `MPI_Buffer_attach`, `MPI_Buffer_detach`, `MPI_Bsend`
//! and `MPI_Ibsend`. A buffered send completes at once: the engine sends
//! a copy of the message, which it keeps until the message has gone. The
//! attached buffer bounds what may be in flight so, as MPI's: a message
//! takes its size plus `MPI_BSEND_OVERHEAD` of it until it has gone, and
//! one that does not fit is `MPI_ERR_BUFFER`. The program's buffer
//! itself is not written (the copies live on the heap); detaching waits
//! for every buffered message to go, as MPI requires.

use std::ffi::{c_int, c_void};
use std::sync::{Mutex, MutexGuard};

use super::{bsend_start, message_len, sent, with, Message};
use crate::abi::{self, err, Handle};
use crate::errors::{finish, Fail};
use crate::request::{self, Pending};
use crate::{mpi, ptr, runtime};

/// `MPI_BSEND_OVERHEAD`.
const OVERHEAD: usize = 512;

/// The attached buffer: its address and size, and the buffered sends in
/// flight with what each takes of it.
struct Attached {
    addr: usize,
    size: usize,
    inflight: Vec<(u64, usize)>,
}

static ATTACHED: Mutex<Option<Attached>> = Mutex::new(None);

fn attached() -> MutexGuard<'static, Option<Attached>> {
    ATTACHED.lock().unwrap_or_else(|p| p.into_inner())
}

/// Sends `m` on `comm` in buffered mode.
///
/// # Safety
/// The message's buffer is valid for this call.
unsafe fn bsend(comm: Handle, m: Message) -> Result<(), Fail> {
    let c = runtime::comm(comm)?;
    let mut guard = attached();
    let Some(a) = guard.as_mut() else {
        return Err(Fail::new(
            err::BUFFER,
            "no buffer attached (MPI_Buffer_attach)",
        ));
    };
    // What has gone gives its room back.
    let gone: Vec<bool> = with(|e| {
        e.progress()?;
        Ok(a.inflight
            .iter()
            .map(|&(id, _)| e.send_is_done(id))
            .collect())
    })?;
    let mut keep = gone.iter();
    a.inflight
        .retain(|_| !keep.next().copied().unwrap_or(false));
    let used: usize = a.inflight.iter().map(|&(_, n)| n).sum();
    let len = message_len(&m)?;
    if used + len + OVERHEAD > a.size {
        let what = format!(
            "{len} bytes do not fit the attached buffer ({used} of {} in use)",
            a.size
        );
        return Err(Fail::new(err::BUFFER, what));
    }
    // SAFETY: as this function's contract.
    let (id, len) = unsafe { bsend_start(&c, m) }?;
    if let Some(id) = id {
        a.inflight.push((id, len + OVERHEAD));
    }
    Ok(())
}

mpi! {
    /// Sends a message in buffered mode: complete at once.
    fn MPI_Bsend / PMPI_Bsend(
        buf: *const c_void,
        count: c_int,
        datatype: Handle,
        dest: c_int,
        tag: c_int,
        comm: Handle,
    ) -> c_int {
        let m = Message { buf, count, datatype, dest, tag };
        // SAFETY: as the call's contract.
        let result = unsafe { bsend(comm, m) };
        finish("MPI_Bsend", comm, result)
    }
}

mpi! {
    /// Starts a buffered send: its request is complete at once.
    fn MPI_Ibsend / PMPI_Ibsend(
        buf: *const c_void,
        count: c_int,
        datatype: Handle,
        dest: c_int,
        tag: c_int,
        comm: Handle,
        request: *mut Handle,
    ) -> c_int {
        let m = Message { buf, count, datatype, dest, tag };
        // SAFETY: as the call's contract.
        let result = unsafe { bsend(comm, m) }.and_then(|()| {
            let h = request::start(Pending::done())?;
            // SAFETY: as the call's contract.
            unsafe { ptr::write(request, h, "request") }
        });
        finish("MPI_Ibsend", comm, result)
    }
}

mpi! {
    /// Attaches `size` bytes at `buffer` for buffered sends.
    fn MPI_Buffer_attach / PMPI_Buffer_attach(buffer: *mut c_void, size: c_int) -> c_int {
        let result = (|| {
            let size = usize::try_from(size).map_err(|_| Fail::new(err::ARG, format!("size {size}")))?;
            let mut guard = attached();
            if guard.is_some() {
                return Err(Fail::new(err::BUFFER, "a buffer is attached already"));
            }
            *guard = Some(Attached { addr: buffer as usize, size, inflight: Vec::new() });
            Ok(())
        })();
        finish("MPI_Buffer_attach", abi::comm::WORLD, result)
    }
}

mpi! {
    /// Detaches the buffer once every buffered message has gone; its
    /// address goes to `buffer_addr` (a `void **`) and its size to `size`.
    fn MPI_Buffer_detach / PMPI_Buffer_detach(buffer_addr: *mut c_void, size: *mut c_int) -> c_int {
        let result = (|| {
            let a = attached().take().ok_or_else(|| Fail::new(err::BUFFER, "no buffer attached"))?;
            for &(id, _) in &a.inflight {
                sent(id)?;
            }
            // SAFETY: buffer_addr points to a void * (the call's contract).
            unsafe { ptr::write(buffer_addr.cast::<*mut c_void>(), a.addr as *mut c_void, "buffer_addr") }?;
            // SAFETY: as the call's contract.
            unsafe { ptr::write(size, a.size as c_int, "size") }
        })();
        finish("MPI_Buffer_detach", abi::comm::WORLD, result)
    }
}
