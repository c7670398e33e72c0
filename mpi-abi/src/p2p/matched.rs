//! Matched probes: `MPI_Mprobe` and `MPI_Improbe` take the message they
//! find out of matching (no other receive can take it, whichever thread
//! posts one), as an `MPI_Message`; `MPI_Mrecv` and `MPI_Imrecv` receive
//! that very message.

use std::ffi::{c_int, c_void};

use super::engine::Body;
use super::matching::Envelope;
use super::{layout, pattern, post_into, received, received_by, wait, with};
use crate::abi::{self, err, Handle, Status};
use crate::errors::{finish, Fail};
use crate::request::{self, Pending};
use crate::{mpi, ptr, runtime};

/// `MPI_MESSAGE_NULL`, `MPI_MESSAGE_NO_PROC`.
const NULL: Handle = 0x128;
const NO_PROC: Handle = 0x129;

/// A message a matched probe took: its communicator's context and
/// handle, envelope and body.
pub(crate) struct Matched {
    ctx: u64,
    comm: Handle,
    envelope: Envelope,
    body: Body,
}

/// Probes `comm` for a message from `source` with `tag` (waiting for one
/// when `block`) and takes it: its handle, and its status written.
///
/// # Safety
/// `message` valid for a handle; `status` null or valid.
unsafe fn mprobe(
    (source, tag, comm): (c_int, c_int, Handle),
    block: bool,
    (message, status): (*mut Handle, *mut Status),
) -> Result<bool, Fail> {
    let c = runtime::comm(comm)?;
    let Some(p) = pattern(&c, source, tag)? else {
        // SAFETY: as this function's contract.
        unsafe { ptr::write(message, NO_PROC, "message") }?;
        // SAFETY: as this function's contract.
        unsafe { received(status, None) }?;
        return Ok(true);
    };
    let (ctx, members) = (c.objects.key(), c.group.members());
    let found = match block {
        true => Some(wait(|e| e.mprobe(ctx, p, members).transpose())?),
        false => with(|e| e.mprobe(ctx, p, members))?,
    };
    let Some((envelope, body)) = found else {
        return Ok(false);
    };
    let got = super::Received {
        envelope,
        len: body.len(),
        class: err::SUCCESS,
        cancelled: false,
    };
    let h = runtime::with(|r| {
        Ok(r.messages.insert(Matched {
            ctx,
            comm,
            envelope,
            body,
        }))
    })?;
    // SAFETY: as this function's contract.
    unsafe { ptr::write(message, h, "message") }?;
    // SAFETY: as this function's contract.
    unsafe { received(status, Some(got)) }?;
    Ok(true)
}

mpi! {
    /// Waits for a message from `source` with `tag` and takes it for
    /// `MPI_Mrecv`.
    fn MPI_Mprobe / PMPI_Mprobe(source: c_int, tag: c_int, comm: Handle, message: *mut Handle, status: *mut Status) -> c_int {
        // SAFETY: as the call's contract.
        let result = unsafe { mprobe((source, tag, comm), true, (message, status)) }.map(drop);
        finish("MPI_Mprobe", comm, result)
    }
}

mpi! {
    /// Takes a message from `source` with `tag` if one is there.
    fn MPI_Improbe / PMPI_Improbe(
        source: c_int,
        tag: c_int,
        comm: Handle,
        flag: *mut c_int,
        message: *mut Handle,
        status: *mut Status,
    ) -> c_int {
        // SAFETY: as the call's contract.
        let result = unsafe { mprobe((source, tag, comm), false, (message, status)) }
            // SAFETY: as the call's contract.
            .and_then(|found| unsafe { ptr::write(flag, c_int::from(found), "flag") });
        finish("MPI_Improbe", comm, result)
    }
}

/// Starts receiving message `*message` into `count` elements of
/// `datatype` at `buf`; the message handle becomes `MPI_MESSAGE_NULL`.
/// Its request, and its communicator (`None` for `MPI_MESSAGE_NO_PROC`).
///
/// # Safety
/// `message` valid for a handle; the buffer valid until the request
/// completes.
unsafe fn mrecv_start(
    (buf, count, datatype): (*mut c_void, c_int, Handle),
    message: *mut Handle,
) -> Result<Option<(u64, Handle)>, Fail> {
    // SAFETY: as this function's contract.
    let h = unsafe { ptr::read(message, "message") }?;
    if h == NO_PROC {
        // SAFETY: as this function's contract.
        unsafe { ptr::write(message, NULL, "message") }?;
        return Ok(None);
    }
    let (map, n) = layout(buf, count, datatype)?;
    let m = runtime::with(|r| {
        (r.messages.remove(h))
            .ok_or_else(|| Fail::new(err::REQUEST, format!("invalid message {h:#x}")))
    })?;
    // SAFETY: as this function's contract.
    unsafe { ptr::write(message, NULL, "message") }?;
    let (ctx, comm) = (m.ctx, m.comm);
    let taken = (m.envelope, m.body);
    let post = |e: &mut super::Engine, into| {
        // SAFETY: into is the program's buffer or the packed one, valid
        // until the request completes (post_into's contract).
        unsafe { e.recv_matched(ctx, taken, into) }
    };
    // SAFETY: as this function's contract.
    let id = unsafe { post_into((buf, map, n), post) }?;
    Ok(Some((id, comm)))
}

mpi! {
    /// Receives the message a matched probe took.
    fn MPI_Mrecv / PMPI_Mrecv(
        buf: *mut c_void,
        count: c_int,
        datatype: Handle,
        message: *mut Handle,
        status: *mut Status,
    ) -> c_int {
        // SAFETY: as the call's contract.
        let result = unsafe { mrecv_start((buf, count, datatype), message) }.and_then(|started| {
            let got = started.map(|(id, _)| received_by(id)).transpose()?;
            // SAFETY: as the call's contract.
            unsafe { received(status, got) }
        });
        finish("MPI_Mrecv", abi::comm::WORLD, result)
    }
}

mpi! {
    /// Starts receiving the message a matched probe took.
    fn MPI_Imrecv / PMPI_Imrecv(
        buf: *mut c_void,
        count: c_int,
        datatype: Handle,
        message: *mut Handle,
        request: *mut Handle,
    ) -> c_int {
        // SAFETY: as the call's contract.
        let result = unsafe { mrecv_start((buf, count, datatype), message) }.and_then(|started| {
            let pending = match started {
                Some((id, comm)) => Pending::receive(Some(id), comm),
                None => Pending::receive(None, abi::comm::WORLD),
            };
            let h = request::start(pending)?;
            // SAFETY: as the call's contract.
            unsafe { ptr::write(request, h, "request") }
        });
        finish("MPI_Imrecv", abi::comm::WORLD, result)
    }
}
