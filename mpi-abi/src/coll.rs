//! Collectives on any communicator, on its `Comm`: data movement as
//! bytes (a datatype is its size here), reductions on the Rust type of
//! the predefined datatype, `MPI_IN_PLACE` by a copy of the data in
//! place.

use std::ffi::{c_int, c_void};

use onesided::{Comm, Run};

use crate::abi::{self, err, Handle};
use crate::datatype::{self, by_reducible, Element};
use crate::errors::{finish, Fail};
use crate::op::Typed;
use crate::request::{Pending, Running};
use crate::runtime::{self, CommEntry};
use crate::stage::{self, Arg};
use crate::tree::Tree;
use crate::{mpi, ptr};

/// Whether a buffer argument is `MPI_IN_PLACE`.
pub(crate) fn in_place(p: *const c_void) -> bool {
    p as usize == abi::IN_PLACE
}

/// `root` as a rank of `c`.
pub(crate) fn root_of(c: &CommEntry, root: c_int) -> Result<u32, Fail> {
    (u32::try_from(root).ok())
        .filter(|&r| r < c.size())
        .ok_or_else(|| Fail::new(err::ROOT, format!("root {root} of {} ranks", c.size())))
}

mpi! {
    /// Waits for every member of `comm`.
    fn MPI_Barrier / PMPI_Barrier(comm: Handle) -> c_int {
        let result = runtime::comm(comm).and_then(|c| Ok(c.lock().barrier()?));
        finish("MPI_Barrier", comm, result)
    }
}

mpi! {
    /// Broadcasts `count` elements from `root`.
    fn MPI_Bcast / PMPI_Bcast(
        buffer: *mut c_void,
        count: c_int,
        datatype: Handle,
        root: c_int,
        comm: Handle,
    ) -> c_int {
        if stage::any_scattered(&[datatype]) {
            let at_root = runtime::comm(comm).is_ok_and(|c| c.rank as c_int == root);
            let arg = Arg { buf: buffer, count, datatype, blocks: 1, read: at_root, written: !at_root, used: true };
            // SAFETY: as the call's contract.
            return unsafe { stage::run("MPI_Bcast", comm, [arg], |[(b, n, t)]| PMPI_Bcast(b, n, t, root, comm)) };
        }
        let result = runtime::comm(comm).and_then(|c| {
            let root = root_of(&c, root)?;
            let len = datatype::bytes(count, datatype)?;
            // SAFETY: count elements of datatype at buffer (the call's contract).
            let buf = unsafe { ptr::slice_mut(buffer.cast::<u8>(), len, "buffer") }?;
            Ok(c.lock().bcast(root, buf)?)
        });
        finish("MPI_Bcast", comm, result)
    }
}

/// Reads `count` elements of `T` at `p`.
///
/// # Safety
/// `p` is valid for `count` elements of `T` (aligned as C aligns them).
unsafe fn elements<'a, T>(p: *const c_void, count: usize, what: &str) -> Result<&'a [T], Fail> {
    // SAFETY: as this function's contract.
    unsafe { ptr::slice(p.cast::<T>(), count, what) }
}

/// As [`elements`], to write.
///
/// # Safety
/// As [`elements`], for writes, with nothing else reaching them.
unsafe fn elements_mut<'a, T>(
    p: *mut c_void,
    count: usize,
    what: &str,
) -> Result<&'a mut [T], Fail> {
    // SAFETY: as this function's contract.
    unsafe { ptr::slice_mut(p.cast::<T>(), count, what) }
}

/// A reduction's buffers, as the call passed them.
struct Reduction {
    send: *const c_void,
    recv: *mut c_void,
    count: usize,
    op: Handle,
    /// The elements' datatype (a program's operation is told it).
    datatype: Handle,
    /// `None` for an allreduce.
    root: Option<u32>,
}

/// Runs `r` on `comm` with elements of `T`.
///
/// # Safety
/// The buffers of `r` are valid for `count` elements of `T` (the receive
/// buffer at the root only, for a reduce).
unsafe fn reduce_as<T: Typed>(comm: &Comm, r: &Reduction, element: Element) -> Result<(), Fail> {
    let op = crate::op::of::<T>(r.op, element, r.datatype)?;
    let receives = r.root.is_none_or(|root| root == comm.rank());
    let mut scratch = Vec::new();
    let output: &mut [T] = match receives {
        // SAFETY: as this function's contract.
        true => unsafe { elements_mut(r.recv, r.count, "recvbuf") }?,
        false => {
            scratch.resize(r.count, T::zeroed());
            &mut scratch
        }
    };
    let copy: Vec<T>;
    let input: &[T] = match in_place(r.send) {
        true if receives => {
            copy = output.to_vec();
            &copy
        }
        true => return Err(Fail::new(err::BUFFER, "MPI_IN_PLACE off the root")),
        // SAFETY: as this function's contract.
        false => unsafe { elements(r.send, r.count, "sendbuf") }?,
    };
    match r.root {
        Some(root) => comm.reduce(root, input, output, op)?,
        None => comm.allreduce(input, output, op)?,
    }
    Ok(())
}

/// Runs reduction `r` on `c` for `datatype`.
///
/// # Safety
/// As [`reduce_as`], for the datatype's elements.
unsafe fn reduce(c: &CommEntry, r: &Reduction, datatype: Handle) -> Result<(), Fail> {
    if datatype::predefined(datatype).is_none() {
        if let Some(op) = crate::tree::user_op(r.op) {
            let buffers = (r.send, r.recv);
            // SAFETY: as this function's contract.
            return unsafe { crate::tree::reduce(c, buffers, (r.count, datatype), (op, r.root)) };
        }
    }
    let (_, element) = datatype::of(datatype)?;
    let comm = c.lock();
    // SAFETY: as this function's contract, for the datatype's Rust type.
    unsafe {
        by_reducible!(element, T => reduce_as::<T>(&comm, r, element), Err(Fail::new(err::OP, format!("operation {:#x} on datatype {datatype:#x}", r.op))))
    }
}

/// `count` elements of committed `datatype`: its map and the count.
fn typed(
    count: c_int,
    datatype: Handle,
) -> Result<(std::sync::Arc<crate::typemap::TypeMap>, usize), Fail> {
    let (map, n) = (crate::derived::committed(datatype)?, count_of(count)?);
    crate::derived::bytes_of(&map, n)?;
    Ok((map, n))
}

/// `count` as a length.
fn count_of(count: c_int) -> Result<usize, Fail> {
    usize::try_from(count).map_err(|_| Fail::new(err::COUNT, format!("count {count}")))
}

mpi! {
    /// Combines every member's `sendbuf` by `op` into every `recvbuf`.
    fn MPI_Allreduce / PMPI_Allreduce(
        sendbuf: *const c_void,
        recvbuf: *mut c_void,
        count: c_int,
        datatype: Handle,
        op: Handle,
        comm: Handle,
    ) -> c_int {
        let result = runtime::comm(comm).and_then(|c| {
            let r = Reduction { send: sendbuf, recv: recvbuf, count: count_of(count)?, op, datatype, root: None };
            // SAFETY: the buffers hold count elements (the call's contract).
            unsafe { reduce(&c, &r, datatype) }
        });
        finish("MPI_Allreduce", comm, result)
    }
}

mpi! {
    /// Combines every member's `sendbuf` by `op` into `recvbuf` at `root`.
    fn MPI_Reduce / PMPI_Reduce(
        sendbuf: *const c_void,
        recvbuf: *mut c_void,
        count: c_int,
        datatype: Handle,
        op: Handle,
        root: c_int,
        comm: Handle,
    ) -> c_int {
        let result = runtime::comm(comm).and_then(|c| {
            let root = Some(root_of(&c, root)?);
            let r = Reduction { send: sendbuf, recv: recvbuf, count: count_of(count)?, op, datatype, root };
            // SAFETY: the buffers hold count elements (the call's contract).
            unsafe { reduce(&c, &r, datatype) }
        });
        finish("MPI_Reduce", comm, result)
    }
}

/// The bytes of a send and a receive block, which must match.
fn blocks(
    (scount, stype): (c_int, Handle),
    (rcount, rtype): (c_int, Handle),
) -> Result<usize, Fail> {
    let (send, recv) = (
        datatype::bytes(scount, stype)?,
        datatype::bytes(rcount, rtype)?,
    );
    match send == recv {
        true => Ok(send),
        false => Err(Fail::new(
            err::TRUNCATE,
            format!("{send} bytes sent to blocks of {recv}"),
        )),
    }
}

/// The bytes of a block of an all-to-all exchange: the receive block's
/// when the send buffer is `MPI_IN_PLACE`, else the send block's, which
/// must match it.
fn block_of(
    sendbuf: *const c_void,
    send: (c_int, Handle),
    recv: (c_int, Handle),
) -> Result<usize, Fail> {
    match in_place(sendbuf) {
        true => datatype::bytes(recv.0, recv.1),
        false => blocks(send, recv),
    }
}

mpi! {
    /// Gathers every member's block into every `recvbuf`, in rank order.
    fn MPI_Allgather / PMPI_Allgather(
        sendbuf: *const c_void,
        sendcount: c_int,
        sendtype: Handle,
        recvbuf: *mut c_void,
        recvcount: c_int,
        recvtype: Handle,
        comm: Handle,
    ) -> c_int {
        if stage::any_scattered(&[sendtype, recvtype]) {
            let n = runtime::comm(comm).map_or(1, |c| c.size() as usize);
            let send = Arg { buf: sendbuf, count: sendcount, datatype: sendtype, blocks: 1, read: true, written: false, used: !in_place(sendbuf) };
            let recv = Arg { buf: recvbuf, count: recvcount, datatype: recvtype, blocks: n, read: in_place(sendbuf), written: true, used: true };
            // SAFETY: as the call's contract.
            return unsafe {
                stage::run("MPI_Allgather", comm, [send, recv], |[(sb, sc, st), (rb, rc, rt)]| {
                    PMPI_Allgather(sb, sc, st, rb, rc, rt, comm)
                })
            };
        }
        let result = runtime::comm(comm).and_then(|c| {
            let n = c.size() as usize;
            let block = block_of(sendbuf, (sendcount, sendtype), (recvcount, recvtype))?;
            // SAFETY: n blocks at recvbuf (the call's contract).
            let output = unsafe { ptr::slice_mut(recvbuf.cast::<u8>(), n * block, "recvbuf") }?;
            let own: Vec<u8>;
            let input: &[u8] = match in_place(sendbuf) {
                true => {
                    let me = c.rank as usize;
                    own = output[me * block..(me + 1) * block].to_vec();
                    &own
                }
                // SAFETY: a block at sendbuf (the call's contract).
                false => unsafe { ptr::slice(sendbuf.cast::<u8>(), block, "sendbuf") }?,
            };
            Ok(c.lock().allgatherv(input, output, &vec![block; n])?)
        });
        finish("MPI_Allgather", comm, result)
    }
}

mpi! {
    /// Sends block `r` of every member's `sendbuf` to rank `r`.
    fn MPI_Alltoall / PMPI_Alltoall(
        sendbuf: *const c_void,
        sendcount: c_int,
        sendtype: Handle,
        recvbuf: *mut c_void,
        recvcount: c_int,
        recvtype: Handle,
        comm: Handle,
    ) -> c_int {
        if stage::any_scattered(&[sendtype, recvtype]) {
            let n = runtime::comm(comm).map_or(1, |c| c.size() as usize);
            let send = Arg { buf: sendbuf, count: sendcount, datatype: sendtype, blocks: n, read: true, written: false, used: !in_place(sendbuf) };
            let recv = Arg { buf: recvbuf, count: recvcount, datatype: recvtype, blocks: n, read: in_place(sendbuf), written: true, used: true };
            // SAFETY: as the call's contract.
            return unsafe {
                stage::run("MPI_Alltoall", comm, [send, recv], |[(sb, sc, st), (rb, rc, rt)]| {
                    PMPI_Alltoall(sb, sc, st, rb, rc, rt, comm)
                })
            };
        }
        let result = runtime::comm(comm).and_then(|c| {
            let n = c.size() as usize;
            let block = block_of(sendbuf, (sendcount, sendtype), (recvcount, recvtype))?;
            // SAFETY: n blocks at recvbuf (the call's contract).
            let output = unsafe { ptr::slice_mut(recvbuf.cast::<u8>(), n * block, "recvbuf") }?;
            let copy: Vec<u8>;
            let input: &[u8] = match in_place(sendbuf) {
                true => {
                    copy = output.to_vec();
                    &copy
                }
                // SAFETY: n blocks at sendbuf (the call's contract).
                false => unsafe { ptr::slice(sendbuf.cast::<u8>(), n * block, "sendbuf") }?,
            };
            Ok(c.lock().alltoall(input, output, block)?)
        });
        finish("MPI_Alltoall", comm, result)
    }
}

mpi! {
    /// Gathers every member's block into `recvbuf` at `root`.
    fn MPI_Gather / PMPI_Gather(
        sendbuf: *const c_void,
        sendcount: c_int,
        sendtype: Handle,
        recvbuf: *mut c_void,
        recvcount: c_int,
        recvtype: Handle,
        root: c_int,
        comm: Handle,
    ) -> c_int {
        if stage::any_scattered(&[sendtype, recvtype]) {
            let (n, at_root) = runtime::comm(comm).map_or((1, false), |c| (c.size() as usize, c.rank as c_int == root));
            let send = Arg { buf: sendbuf, count: sendcount, datatype: sendtype, blocks: 1, read: true, written: false, used: !in_place(sendbuf) };
            let recv = Arg { buf: recvbuf, count: recvcount, datatype: recvtype, blocks: n, read: in_place(sendbuf), written: true, used: at_root };
            // SAFETY: as the call's contract.
            return unsafe {
                stage::run("MPI_Gather", comm, [send, recv], |[(sb, sc, st), (rb, rc, rt)]| {
                    PMPI_Gather(sb, sc, st, rb, rc, rt, root, comm)
                })
            };
        }
        let result = runtime::comm(comm).and_then(|c| {
            let root = root_of(&c, root)?;
            let (n, at_root) = (c.size() as usize, c.rank == root);
            let block = match (at_root, in_place(sendbuf)) {
                (true, true) => datatype::bytes(recvcount, recvtype)?,
                (true, false) => blocks((sendcount, sendtype), (recvcount, recvtype))?,
                (false, _) => datatype::bytes(sendcount, sendtype)?,
            };
            let output: &mut [u8] = match at_root {
                // SAFETY: n blocks at recvbuf at the root (the call's contract).
                true => unsafe { ptr::slice_mut(recvbuf.cast::<u8>(), n * block, "recvbuf") }?,
                false => &mut [],
            };
            let own: Vec<u8>;
            let input: &[u8] = match (at_root, in_place(sendbuf)) {
                (true, true) => {
                    let me = c.rank as usize;
                    own = output[me * block..(me + 1) * block].to_vec();
                    &own
                }
                (false, true) => return Err(Fail::new(err::BUFFER, "MPI_IN_PLACE off the root")),
                // SAFETY: a block at sendbuf (the call's contract).
                (_, false) => unsafe { ptr::slice(sendbuf.cast::<u8>(), block, "sendbuf") }?,
            };
            Ok(c.lock().gatherv(root, input, output, &vec![block; n])?)
        });
        finish("MPI_Gather", comm, result)
    }
}

mpi! {
    /// Sends block `r` of `sendbuf` at `root` to rank `r`.
    fn MPI_Scatter / PMPI_Scatter(
        sendbuf: *const c_void,
        sendcount: c_int,
        sendtype: Handle,
        recvbuf: *mut c_void,
        recvcount: c_int,
        recvtype: Handle,
        root: c_int,
        comm: Handle,
    ) -> c_int {
        if stage::any_scattered(&[sendtype, recvtype]) {
            let (n, at_root) = runtime::comm(comm).map_or((1, false), |c| (c.size() as usize, c.rank as c_int == root));
            let send = Arg { buf: sendbuf, count: sendcount, datatype: sendtype, blocks: n, read: true, written: false, used: at_root };
            let recv = Arg { buf: recvbuf, count: recvcount, datatype: recvtype, blocks: 1, read: false, written: true, used: !in_place(recvbuf) };
            // SAFETY: as the call's contract.
            return unsafe {
                stage::run("MPI_Scatter", comm, [send, recv], |[(sb, sc, st), (rb, rc, rt)]| {
                    PMPI_Scatter(sb, sc, st, rb, rc, rt, root, comm)
                })
            };
        }
        let result = runtime::comm(comm).and_then(|c| {
            let root = root_of(&c, root)?;
            let (n, at_root) = (c.size() as usize, c.rank == root);
            let block = match (at_root, in_place(recvbuf)) {
                (true, true) => datatype::bytes(sendcount, sendtype)?,
                (true, false) => blocks((sendcount, sendtype), (recvcount, recvtype))?,
                (false, _) => datatype::bytes(recvcount, recvtype)?,
            };
            let input: &[u8] = match at_root {
                // SAFETY: n blocks at sendbuf at the root (the call's contract).
                true => unsafe { ptr::slice(sendbuf.cast::<u8>(), n * block, "sendbuf") }?,
                false => &[],
            };
            let mut own = Vec::new();
            let output: &mut [u8] = match (at_root, in_place(recvbuf)) {
                (true, true) => {
                    own.resize(block, 0);
                    &mut own
                }
                (false, true) => return Err(Fail::new(err::BUFFER, "MPI_IN_PLACE off the root")),
                // SAFETY: a block at recvbuf (the call's contract).
                (_, false) => unsafe { ptr::slice_mut(recvbuf.cast::<u8>(), block, "recvbuf") }?,
            };
            Ok(c.lock().scatterv(root, input, output, &vec![block; n])?)
        });
        finish("MPI_Scatter", comm, result)
    }
}

/// Writes request `handle` for `pending` started.
///
/// # Safety
/// `request` is null or valid for a handle.
pub(crate) unsafe fn started(request: *mut Handle, pending: Pending) -> Result<(), Fail> {
    let handle = crate::request::start(pending)?;
    // SAFETY: as this function's contract.
    unsafe { ptr::write(request, handle, "request") }
}

mpi! {
    /// Starts a barrier.
    fn MPI_Ibarrier / PMPI_Ibarrier(comm: Handle, request: *mut Handle) -> c_int {
        let result = runtime::comm(comm).and_then(|c| {
            let run = c.lock().ibarrier()?;
            let pending = Pending::new(Running::U8(run), (std::ptr::null_mut(), 0), comm);
            // SAFETY: as the call's contract.
            unsafe { started(request, pending) }
        });
        finish("MPI_Ibarrier", comm, result)
    }
}

mpi! {
    /// Starts a broadcast; `buffer` holds the result at completion.
    fn MPI_Ibcast / PMPI_Ibcast(
        buffer: *mut c_void,
        count: c_int,
        datatype: Handle,
        root: c_int,
        comm: Handle,
        request: *mut Handle,
    ) -> c_int {
        let result = runtime::comm(comm).and_then(|c| {
            let root = root_of(&c, root)?;
            let (map, n) = typed(count, datatype)?;
            let buf = match c.rank == root {
                // SAFETY: count elements at buffer (the call's contract).
                true => unsafe { crate::derived::pack(&map, buffer.cast(), n) },
                false => vec![0u8; map.size * n],
            };
            let run = c.lock().ibcast(root, buf)?;
            let pending = Pending::typed(Running::U8(run), buffer.cast(), (map, n), comm);
            // SAFETY: as the call's contract.
            unsafe { started(request, pending) }
        });
        finish("MPI_Ibcast", comm, result)
    }
}

/// Starts reduction `r` on `comm` with elements of `T`.
///
/// # Safety
/// As [`reduce_as`].
unsafe fn ireduce_as<T: Typed>(
    comm: &Comm,
    r: &Reduction,
    element: Element,
) -> Result<Running, Fail>
where
    Running: From<Run<T>>,
{
    let op = crate::op::of::<T>(r.op, element, r.datatype)?;
    let receives = r.root.is_none_or(|root| root == comm.rank());
    let input = match (in_place(r.send), receives) {
        // SAFETY: as this function's contract.
        (true, true) => unsafe { elements::<T>(r.recv, r.count, "recvbuf") }?.to_vec(),
        (true, false) => return Err(Fail::new(err::BUFFER, "MPI_IN_PLACE off the root")),
        // SAFETY: as this function's contract.
        (false, _) => unsafe { elements::<T>(r.send, r.count, "sendbuf") }?.to_vec(),
    };
    let output = vec![T::zeroed(); r.count];
    let run = match r.root {
        Some(root) => comm.ireduce(root, input, output, op)?,
        None => comm.iallreduce(input, output, op)?,
    };
    Ok(Running::from(run))
}

/// Starts reduction `r` of `datatype` on `c`; its request.
///
/// # Safety
/// As [`reduce`].
unsafe fn ireduce(
    c: &CommEntry,
    r: &Reduction,
    datatype: Handle,
    comm: Handle,
) -> Result<Pending, Fail> {
    if datatype::predefined(datatype).is_none() {
        if let Some(op) = crate::tree::user_op(r.op) {
            let (buffers, shape) = ((r.send, r.recv), (r.count, datatype));
            // SAFETY: as this function's contract.
            let tree = unsafe { Tree::start(c, buffers, shape, (op, r.root), true) }?;
            return Ok(Pending::tree(tree, comm));
        }
    }
    let (size, element) = datatype::of(datatype)?;
    let guard = c.lock();
    // SAFETY: as this function's contract, for the datatype's Rust type.
    let running = unsafe {
        by_reducible!(element, T => ireduce_as::<T>(&guard, r, element), Err(Fail::new(err::OP, format!("operation {:#x} on datatype {datatype:#x}", r.op))))
    }?;
    let receives = r.root.is_none_or(|root| root == guard.rank());
    let len = if receives { r.count * size } else { 0 };
    Ok(Pending::new(running, (r.recv.cast(), len), comm))
}

mpi! {
    /// Starts an allreduce; `recvbuf` holds the result at completion.
    fn MPI_Iallreduce / PMPI_Iallreduce(
        sendbuf: *const c_void,
        recvbuf: *mut c_void,
        count: c_int,
        datatype: Handle,
        op: Handle,
        comm: Handle,
        request: *mut Handle,
    ) -> c_int {
        let result = runtime::comm(comm).and_then(|c| {
            let r = Reduction { send: sendbuf, recv: recvbuf, count: count_of(count)?, op, datatype, root: None };
            // SAFETY: the buffers hold count elements (the call's contract).
            let pending = unsafe { ireduce(&c, &r, datatype, comm) }?;
            // SAFETY: as the call's contract.
            unsafe { started(request, pending) }
        });
        finish("MPI_Iallreduce", comm, result)
    }
}

mpi! {
    /// Starts a reduce; `recvbuf` at `root` holds the result at completion.
    fn MPI_Ireduce / PMPI_Ireduce(
        sendbuf: *const c_void,
        recvbuf: *mut c_void,
        count: c_int,
        datatype: Handle,
        op: Handle,
        root: c_int,
        comm: Handle,
        request: *mut Handle,
    ) -> c_int {
        let result = runtime::comm(comm).and_then(|c| {
            let root = Some(root_of(&c, root)?);
            let r = Reduction { send: sendbuf, recv: recvbuf, count: count_of(count)?, op, datatype, root };
            // SAFETY: the buffers hold count elements (the call's contract).
            let pending = unsafe { ireduce(&c, &r, datatype, comm) }?;
            // SAFETY: as the call's contract.
            unsafe { started(request, pending) }
        });
        finish("MPI_Ireduce", comm, result)
    }
}

mpi! {
    /// Starts an allgather; `recvbuf` holds the blocks at completion.
    fn MPI_Iallgather / PMPI_Iallgather(
        sendbuf: *const c_void,
        sendcount: c_int,
        sendtype: Handle,
        recvbuf: *mut c_void,
        recvcount: c_int,
        recvtype: Handle,
        comm: Handle,
        request: *mut Handle,
    ) -> c_int {
        let result = runtime::comm(comm).and_then(|c| {
            let n = c.size() as usize;
            let (rmap, rcount) = typed(recvcount, recvtype)?;
            let input = match in_place(sendbuf) {
                true => {
                    let extent = rmap.extent() * rcount as isize;
                    let own = (recvbuf as isize).wrapping_add(extent * c.rank as isize) as *const u8;
                    // SAFETY: n blocks at recvbuf (the call's contract).
                    unsafe { crate::derived::pack(&rmap, own, rcount) }
                }
                false => {
                    let (smap, scount) = typed(sendcount, sendtype)?;
                    // SAFETY: a block at sendbuf (the call's contract).
                    unsafe { crate::derived::pack(&smap, sendbuf.cast(), scount) }
                }
            };
            let block = rmap.size * rcount;
            if input.len() != block {
                return Err(Fail::new(err::TRUNCATE, format!("{} bytes sent to blocks of {block}", input.len())));
            }
            let run = c.lock().iallgatherv(input, vec![0u8; n * block], &vec![block; n])?;
            let pending = Pending::typed(Running::U8(run), recvbuf.cast(), (rmap, n * rcount), comm);
            // SAFETY: as the call's contract.
            unsafe { started(request, pending) }
        });
        finish("MPI_Iallgather", comm, result)
    }
}

mpi! {
    /// Starts an alltoall; `recvbuf` holds the blocks at completion.
    fn MPI_Ialltoall / PMPI_Ialltoall(
        sendbuf: *const c_void,
        sendcount: c_int,
        sendtype: Handle,
        recvbuf: *mut c_void,
        recvcount: c_int,
        recvtype: Handle,
        comm: Handle,
        request: *mut Handle,
    ) -> c_int {
        let result = runtime::comm(comm).and_then(|c| {
            let n = c.size() as usize;
            let (rmap, rcount) = typed(recvcount, recvtype)?;
            let (smap, scount, from) = match in_place(sendbuf) {
                true => (rmap.clone(), rcount, recvbuf.cast_const()),
                false => {
                    let (smap, scount) = typed(sendcount, sendtype)?;
                    (smap, scount, sendbuf)
                }
            };
            let block = rmap.size * rcount;
            if smap.size * scount != block {
                return Err(Fail::new(err::TRUNCATE, format!("{} bytes sent to blocks of {block}", smap.size * scount)));
            }
            // SAFETY: n blocks at the send (or receive) buffer (the call's contract).
            let input = unsafe { crate::derived::pack(&smap, from.cast(), n * scount) };
            let counts = vec![block; n];
            let run = c.lock().ialltoallv(input, &counts, vec![0u8; n * block], &counts)?;
            let pending = Pending::typed(Running::U8(run), recvbuf.cast(), (rmap, n * rcount), comm);
            // SAFETY: as the call's contract.
            unsafe { started(request, pending) }
        });
        finish("MPI_Ialltoall", comm, result)
    }
}

/// A reduce-scatter of `counts` on elements of `T`.
///
/// # Safety
/// The send buffer (or, in place, the receive buffer) holds the counts'
/// total; the receive buffer this rank's count.
unsafe fn reduce_scatter_as<T: Typed>(
    comm: &Comm,
    (send, recv): (*const c_void, *mut c_void),
    counts: &[usize],
    (op, datatype): (Handle, Handle),
    element: Element,
) -> Result<(), Fail> {
    let op = crate::op::of::<T>(op, element, datatype)?;
    let total: usize = counts.iter().sum();
    let mine = counts[comm.rank() as usize];
    let input: Vec<T> = match in_place(send) {
        // SAFETY: as this function's contract.
        true => unsafe { elements::<T>(recv, total, "recvbuf") }?.to_vec(),
        // SAFETY: as this function's contract.
        false => unsafe { elements::<T>(send, total, "sendbuf") }?.to_vec(),
    };
    // SAFETY: as this function's contract.
    let output = unsafe { elements_mut::<T>(recv, mine, "recvbuf") }?;
    comm.reduce_scatter(&input, output, counts, op)?;
    Ok(())
}

/// A reduce-scatter of `counts` elements of `datatype` by `op` on `c`.
///
/// # Safety
/// As [`reduce_scatter_as`], for the datatype's elements.
pub(crate) unsafe fn reduce_scatter_typed(
    c: &CommEntry,
    buffers: (*const c_void, *mut c_void),
    counts: &[usize],
    datatype: Handle,
    op: Handle,
) -> Result<(), Fail> {
    if counts.len() != c.size() as usize {
        return Err(Fail::new(err::COUNT, "one count per rank"));
    }
    if datatype::predefined(datatype).is_none() {
        if let Some(op) = crate::tree::user_op(op) {
            // SAFETY: as this function's contract.
            return unsafe { crate::tree::reduce_scatter(c, buffers, (counts, datatype), op) };
        }
    }
    let (_, element) = datatype::of(datatype)?;
    let comm = c.lock();
    // SAFETY: as this function's contract, for the datatype's Rust type.
    unsafe {
        by_reducible!(element, T => reduce_scatter_as::<T>(&comm, buffers, counts, (op, datatype), element), Err(Fail::new(err::OP, format!("operation {op:#x} on datatype {datatype:#x}"))))
    }
}
