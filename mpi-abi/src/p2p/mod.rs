//! Point-to-point: `MPI_Send` and its forms, receives, probes and
//! `MPI_Get_count`, on one engine per process ([`engine`]) whose
//! matching is pure ([`matching`]). A datatype is its size here; a
//! message is `count` times it, in bytes.

mod buffered;
mod engine;
mod matched;
pub(crate) mod matching;

use std::ffi::{c_int, c_void};
use std::sync::{Arc, Mutex, MutexGuard};

use onesided::fabric::Endpoint;

pub(crate) use engine::Received;
pub(crate) use engine::Route;
use engine::{Engine, Unpack};
pub(crate) use matched::Matched;
pub(crate) use matching::Pattern;

use crate::abi::{self, err, Handle, Status};
use crate::datatype;
use crate::derived;
use crate::errors::{finish, Fail};
use crate::request::{self, Pending};
use crate::runtime::{self, CommEntry};
use crate::typemap::TypeMap;
use crate::{mpi, ptr};

static ENGINE: Mutex<Option<Engine>> = Mutex::new(None);

fn engine() -> MutexGuard<'static, Option<Engine>> {
    ENGINE.lock().unwrap_or_else(|p| p.into_inner())
}

/// Starts the engine over `ep` (`MPI_Init`).
pub(crate) fn start(ep: &Endpoint) {
    *engine() = Some(Engine::new(ep));
}

/// Ends the engine (`MPI_Finalize`): what is still posted is cancelled,
/// what no receive took is dropped.
pub(crate) fn stop() {
    drop(engine().take());
}

/// Runs `f` on the engine.
///
/// # Errors
/// `MPI_ERR_OTHER` when MPI is not running; `f`'s.
pub(crate) fn with<R>(f: impl FnOnce(&mut Engine) -> Result<R, Fail>) -> Result<R, Fail> {
    match engine().as_mut() {
        Some(e) => f(e),
        None => Err(Fail::new(err::OTHER, "MPI is not running")),
    }
}

/// Makes progress until `ready` has an answer, backing off between
/// tries; requests waiting for a peer that ended fail.
///
/// # Errors
/// The progress's, `ready`'s.
pub(crate) fn wait<R>(
    mut ready: impl FnMut(&mut Engine) -> Option<Result<R, Fail>>,
) -> Result<R, Fail> {
    let mut answer = None;
    until(|| {
        answer = poll(&mut ready)?;
        Ok(answer.is_some())
    })?;
    answer.unwrap_or_else(|| Err(Fail::new(err::INTERN, "a wait ended without an answer")))
}

/// Waits for send `id`. Should waiting fail (the engine's progress),
/// the request is given up: nothing refers to its buffer once this
/// returns.
///
/// # Errors
/// The send's failure, or the engine's.
pub(crate) fn sent(id: u64) -> Result<(), Fail> {
    wait(|e| e.send_done(id)).inspect_err(|_| abandon(id))
}

/// Waits for receive `id`, as [`sent`].
///
/// # Errors
/// The receive's failure, or the engine's.
pub(crate) fn received_by(id: u64) -> Result<Received, Fail> {
    wait(|e| e.recv_done(id)).inspect_err(|_| abandon(id))
}

/// Makes progress once and asks `ready`; requests waiting for a peer
/// that ended fail before it is asked again.
///
/// # Errors
/// The progress's.
pub(crate) fn poll<R>(mut ready: impl FnMut(&mut Engine) -> Option<R>) -> Result<Option<R>, Fail> {
    with(|e| {
        e.progress()?;
        if let Some(r) = ready(e) {
            return Ok(Some(r));
        }
        e.fail_dead();
        Ok(ready(e))
    })
}

/// Calls `done` until it says so, backing off between tries; the
/// nonblocking tree reductions in flight move on at each try.
///
/// # Errors
/// `done`'s.
pub(crate) fn until(mut done: impl FnMut() -> Result<bool, Fail>) -> Result<(), Fail> {
    let mut backoff = None;
    while {
        crate::tree::advance_all();
        !done()?
    } {
        if backoff.is_none() {
            backoff = Some(with(|e| Ok(e.endpoint().backoff()))?);
        }
        if let Some(b) = backoff.as_mut() {
            b.pause();
        }
    }
    Ok(())
}

/// Gives up request `id`: nothing refers to its buffer once this
/// returns.
pub(crate) fn abandon(id: u64) {
    let _ = with(|e| {
        e.abandon(id);
        Ok(())
    });
}

/// Forgets what matching kept for communicator `c` (freed).
pub(crate) fn forget(c: &CommEntry) {
    let _ = with(|e| {
        for ctx in [
            c.objects.key(),
            crate::tree::context(c),
            crate::scan::context(c),
        ] {
            e.forget(ctx);
        }
        Ok(())
    });
}

/// Sends `send` to rank `partner` of `c` and receives `recv` from it,
/// with `tag` on context `ctx` (a collective's own, apart from the
/// program's messages); returns once both are done.
///
/// # Errors
/// The engine's.
pub(crate) fn exchange(
    c: &CommEntry,
    ctx: u64,
    (partner, tag): (u32, i32),
    send: &[u8],
    recv: &mut [u8],
) -> Result<(), Fail> {
    let route = Route {
        ctx,
        to: c.group.job_rank(partner)?,
        source: c.rank,
        tag,
    };
    let pattern = Pattern {
        source: Some(partner),
        tag: Some(tag),
    };
    let members = c.group.members();
    let (recv_id, send_id) = with(|e| {
        // SAFETY: both buffers outlive the call, which waits for both
        // requests below.
        let r = unsafe { e.recv(ctx, pattern, (recv.as_mut_ptr(), recv.len()), members) }?;
        // SAFETY: as above.
        let s = unsafe { e.send(route, (send.as_ptr(), send.len()), false) }?;
        Ok((r, s))
    })?;
    let sent = match send_id {
        Some(id) => sent(id),
        None => Ok(()),
    };
    let got = received_by(recv_id)?;
    sent?;
    match got.class {
        err::SUCCESS => Ok(()),
        class => Err(Fail::new(class, "a collective's message did not fit")),
    }
}

/// Sends an empty notice with `tag` on context `ctx` to job rank `to`,
/// from rank `source` of the group the context belongs to (one eager
/// message, complete when sent).
///
/// # Errors
/// The engine's.
pub(crate) fn notify(ctx: u64, (to, source): (u32, u32), tag: i32) -> Result<(), Fail> {
    let route = Route {
        ctx,
        to,
        source,
        tag,
    };
    // SAFETY: no byte is read.
    let id =
        with(|e| unsafe { e.send(route, (std::ptr::NonNull::dangling().as_ptr(), 0), false) })?;
    match id {
        Some(id) => sent(id),
        None => Ok(()),
    }
}

/// Posts the receive of an empty notice with `tag` on context `ctx` from
/// rank `from` of `members` (job ranks); its receive, for [`arrived`].
///
/// # Errors
/// The engine's.
pub(crate) fn expect(ctx: u64, members: &[u32], from: u32, tag: i32) -> Result<u64, Fail> {
    let pattern = Pattern {
        source: Some(from),
        tag: Some(tag),
    };
    let nothing = (std::ptr::NonNull::dangling().as_ptr(), 0);
    // SAFETY: no byte is written.
    with(|e| unsafe { e.recv(ctx, pattern, nothing, members) })
}

/// Whether the notice of receive `id` (from [`expect`]) arrived, waiting
/// for it when `block`; once it has, the receive is gone.
///
/// # Errors
/// The engine's.
pub(crate) fn arrived(id: u64, block: bool) -> Result<bool, Fail> {
    if block {
        return received_by(id).map(|_| true);
    }
    with(|e| {
        e.progress()?;
        match e.recv_is_done(id) {
            true => e.recv_done(id).transpose().map(|_| true),
            false => Ok(false),
        }
    })
}

/// A peer of `c`: `None` for `MPI_PROC_NULL`.
fn peer(c: &CommEntry, rank: c_int) -> Result<Option<u32>, Fail> {
    if rank == abi::PROC_NULL {
        return Ok(None);
    }
    (u32::try_from(rank).ok())
        .filter(|&r| r < c.size())
        .map(Some)
        .ok_or_else(|| Fail::new(err::RANK, format!("rank {rank} of {} ranks", c.size())))
}

/// A send's tag: 0 to `MPI_TAG_UB`.
fn send_tag(tag: c_int) -> Result<i32, Fail> {
    match tag >= 0 {
        true => Ok(tag),
        false => Err(Fail::new(err::TAG, format!("tag {tag}"))),
    }
}

/// A receive's pattern on `c`; `None` for `MPI_PROC_NULL`.
fn pattern(c: &CommEntry, source: c_int, tag: c_int) -> Result<Option<Pattern>, Fail> {
    let tag = match tag {
        abi::ANY_TAG => None,
        t => Some(send_tag(t)?),
    };
    Ok(match source {
        abi::ANY_SOURCE => Some(Pattern { source: None, tag }),
        s => peer(c, s)?.map(|s| Pattern {
            source: Some(s),
            tag,
        }),
    })
}

/// A message's bytes: the program's, or packed from a non-contiguous
/// datatype.
enum Bytes {
    Direct(*const u8, usize),
    Packed(Vec<u8>),
}

impl Bytes {
    fn parts(&self) -> (*const u8, usize) {
        match self {
            Bytes::Direct(p, len) => (*p, *len),
            Bytes::Packed(v) => (v.as_ptr(), v.len()),
        }
    }
}

/// `count` elements of `datatype` at `buf`: the datatype's map and the
/// count, checked.
fn layout(
    buf: *const c_void,
    count: c_int,
    datatype: Handle,
) -> Result<(Arc<TypeMap>, usize), Fail> {
    let n = usize::try_from(count).map_err(|_| Fail::new(err::COUNT, format!("count {count}")))?;
    let map = derived::committed(datatype)?;
    let len = map
        .size
        .checked_mul(n)
        .ok_or_else(|| Fail::new(err::COUNT, format!("count {count}")))?;
    if buf.is_null() && len > 0 && map.is_dense() {
        return Err(Fail::new(err::BUFFER, "buf is NULL"));
    }
    Ok((map, n))
}

/// A send's bytes.
///
/// # Safety
/// `count` elements of `datatype` at `buf` are valid for reads.
unsafe fn outgoing(buf: *const c_void, count: c_int, datatype: Handle) -> Result<Bytes, Fail> {
    let (map, n) = layout(buf, count, datatype)?;
    Ok(match map.is_dense() {
        true => Bytes::Direct(buf.cast(), map.size * n),
        // SAFETY: as this function's contract.
        false => Bytes::Packed(unsafe { derived::pack(&map, buf.cast(), n) }),
    })
}

/// A persistent operation (`MPI_Send_init`, `MPI_Recv_init`): its
/// arguments, started again by each `MPI_Start`.
#[derive(Debug, Clone, Copy)]
pub(crate) struct Persistent {
    /// The program's buffer (valid while the request lives).
    buf: usize,
    count: c_int,
    datatype: Handle,
    /// The destination, or the source of a receive.
    peer: c_int,
    tag: c_int,
    comm: Handle,
    /// A send, and whether synchronous; `None` for a receive.
    send: Option<bool>,
}

impl Persistent {
    /// Its communicator.
    pub(crate) fn comm(&self) -> Handle {
        self.comm
    }

    /// Starts the operation: its request in flight.
    ///
    /// # Safety
    /// The buffer is valid until the request completes (MPI's rule).
    pub(crate) unsafe fn start(&self) -> Result<Pending, Fail> {
        let c = runtime::comm(self.comm)?;
        let (buf, count, datatype) = (self.buf as *mut c_void, self.count, self.datatype);
        match self.send {
            Some(sync) => {
                let m = Message {
                    buf,
                    count,
                    datatype,
                    dest: self.peer,
                    tag: self.tag,
                };
                // SAFETY: as this function's contract.
                Ok(Pending::send(
                    unsafe { send_start(&c, m, sync) }?,
                    self.comm,
                ))
            }
            None => {
                let r = Receive {
                    buf,
                    count,
                    datatype,
                    source: self.peer,
                    tag: self.tag,
                };
                // SAFETY: as this function's contract.
                Ok(Pending::receive(unsafe { recv_start(&c, r) }?, self.comm))
            }
        }
    }
}

/// Makes persistent request `p` (inactive) after checking its arguments
/// as a start would, and writes its handle to `request`.
///
/// # Safety
/// `request` valid for a handle.
unsafe fn persistent(call: &str, p: Persistent, request: *mut Handle) -> c_int {
    let result = runtime::comm(p.comm).and_then(|c| {
        derived::committed(p.datatype)?;
        usize::try_from(p.count)
            .map_err(|_| Fail::new(err::COUNT, format!("count {}", p.count)))?;
        match p.send {
            Some(_) => {
                send_tag(p.tag)?;
                peer(&c, p.peer)?;
            }
            None => {
                pattern(&c, p.peer, p.tag)?;
            }
        }
        let h = request::start(Pending::persistent(p))?;
        // SAFETY: as this function's contract.
        unsafe { ptr::write(request, h, "request") }
    });
    finish(call, p.comm, result)
}

mpi! {
    /// A persistent send, started by `MPI_Start`.
    fn MPI_Send_init / PMPI_Send_init(
        buf: *const c_void,
        count: c_int,
        datatype: Handle,
        dest: c_int,
        tag: c_int,
        comm: Handle,
        request: *mut Handle,
    ) -> c_int {
        let p = Persistent { buf: buf as usize, count, datatype, peer: dest, tag, comm, send: Some(false) };
        // SAFETY: as the call's contract.
        unsafe { persistent("MPI_Send_init", p, request) }
    }
}

mpi! {
    /// A persistent synchronous send, started by `MPI_Start`.
    fn MPI_Ssend_init / PMPI_Ssend_init(
        buf: *const c_void,
        count: c_int,
        datatype: Handle,
        dest: c_int,
        tag: c_int,
        comm: Handle,
        request: *mut Handle,
    ) -> c_int {
        let p = Persistent { buf: buf as usize, count, datatype, peer: dest, tag, comm, send: Some(true) };
        // SAFETY: as the call's contract.
        unsafe { persistent("MPI_Ssend_init", p, request) }
    }
}

mpi! {
    /// A persistent send in ready mode (as `MPI_Send_init`).
    fn MPI_Rsend_init / PMPI_Rsend_init(
        buf: *const c_void,
        count: c_int,
        datatype: Handle,
        dest: c_int,
        tag: c_int,
        comm: Handle,
        request: *mut Handle,
    ) -> c_int {
        let p = Persistent { buf: buf as usize, count, datatype, peer: dest, tag, comm, send: Some(false) };
        // SAFETY: as the call's contract.
        unsafe { persistent("MPI_Rsend_init", p, request) }
    }
}

mpi! {
    /// A persistent receive, started by `MPI_Start`.
    fn MPI_Recv_init / PMPI_Recv_init(
        buf: *mut c_void,
        count: c_int,
        datatype: Handle,
        source: c_int,
        tag: c_int,
        comm: Handle,
        request: *mut Handle,
    ) -> c_int {
        let p = Persistent { buf: buf as usize, count, datatype, peer: source, tag, comm, send: None };
        // SAFETY: as the call's contract.
        unsafe { persistent("MPI_Recv_init", p, request) }
    }
}

/// What a send is.
#[derive(Debug, Clone, Copy)]
struct Message {
    buf: *const c_void,
    count: c_int,
    datatype: Handle,
    dest: c_int,
    tag: c_int,
}

/// Starts a send on `c`: `None` when it completed (or went to
/// `MPI_PROC_NULL`), else the engine's send request.
///
/// # Safety
/// The buffer stays valid until the request completes.
unsafe fn send_start(c: &CommEntry, m: Message, sync: bool) -> Result<Option<u64>, Fail> {
    // SAFETY: as this function's contract.
    let data = unsafe { outgoing(m.buf, m.count, m.datatype) }?;
    // SAFETY: as this function's contract.
    unsafe { send_bytes(c, m, data, sync) }
}

/// The bytes message `m` moves.
fn message_len(m: &Message) -> Result<usize, Fail> {
    let (map, n) = layout(m.buf, m.count, m.datatype)?;
    Ok(map.size * n)
}

/// Starts a buffered send on `c` (`MPI_Bsend`): of a copy, which the
/// engine keeps until it has gone; as [`send_start`] otherwise.
///
/// # Safety
/// The buffer is valid for the message (for this call only).
unsafe fn bsend_start(c: &CommEntry, m: Message) -> Result<(Option<u64>, usize), Fail> {
    // SAFETY: as this function's contract.
    let copy = match unsafe { outgoing(m.buf, m.count, m.datatype) }? {
        // SAFETY: as this function's contract.
        Bytes::Direct(p, len) => unsafe { ptr::slice(p, len, "buf") }?.to_vec(),
        Bytes::Packed(packed) => packed,
    };
    let len = copy.len();
    // SAFETY: the copy is the engine's until the send completes.
    Ok((
        unsafe { send_bytes(c, m, Bytes::Packed(copy), false) }?,
        len,
    ))
}

/// Starts sending `data` as message `m` says on `c`.
///
/// # Safety
/// Direct bytes stay valid until the request completes.
unsafe fn send_bytes(
    c: &CommEntry,
    m: Message,
    data: Bytes,
    sync: bool,
) -> Result<Option<u64>, Fail> {
    let tag = send_tag(m.tag)?;
    let Some(dest) = peer(c, m.dest)? else {
        return Ok(None);
    };
    let route = Route {
        ctx: c.objects.key(),
        to: c.group.job_rank(dest)?,
        source: c.rank,
        tag,
    };
    with(|e| {
        // SAFETY: as this function's contract; packed bytes are kept
        // until the send completes.
        let id = unsafe { e.send(route, data.parts(), sync) }?;
        if let (Some(id), Bytes::Packed(packed)) = (id, data) {
            e.keep_packed(id, packed);
        }
        Ok(id)
    })
}

/// A blocking send.
///
/// # Safety
/// The buffer is valid for the message.
unsafe fn send_blocking(comm: Handle, m: Message, sync: bool) -> Result<(), Fail> {
    let c = runtime::comm(comm)?;
    // SAFETY: the call blocks until the request completes.
    match unsafe { send_start(&c, m, sync) }? {
        Some(id) => sent(id),
        None => Ok(()),
    }
}

/// A nonblocking send; its request.
///
/// # Safety
/// The buffer stays valid until the request completes (MPI's rule).
unsafe fn send_request(comm: Handle, m: Message, sync: bool) -> Result<Handle, Fail> {
    let c = runtime::comm(comm)?;
    // SAFETY: as this function's contract.
    let id = unsafe { send_start(&c, m, sync) }?;
    request::start(Pending::send(id, comm))
}

/// What a receive is.
#[derive(Debug, Clone, Copy)]
struct Receive {
    buf: *mut c_void,
    count: c_int,
    datatype: Handle,
    source: c_int,
    tag: c_int,
}

/// Posts a receive on `c`: `None` for `MPI_PROC_NULL`.
///
/// # Safety
/// The buffer stays valid, and untouched, until the request completes.
unsafe fn recv_start(c: &CommEntry, r: Receive) -> Result<Option<u64>, Fail> {
    let (map, n) = layout(r.buf, r.count, r.datatype)?;
    let Some(pattern) = pattern(c, r.source, r.tag)? else {
        return Ok(None);
    };
    let members = c.group.members();
    let ctx = c.objects.key();
    let post = |e: &mut Engine, into| {
        // SAFETY: into is the program's buffer or the packed one, valid
        // until the request completes (post_into's contract).
        unsafe { e.recv(ctx, pattern, into, members) }
    };
    // SAFETY: as this function's contract.
    unsafe { post_into((r.buf, map, n), post) }.map(Some)
}

/// Posts a receive by `post` into `n` elements of `map` at `buf`: the
/// program's bytes when contiguous, else a packed buffer the request
/// keeps and unpacks into the program's when it completes.
///
/// # Safety
/// The elements stay valid, and untouched, until the request completes.
unsafe fn post_into(
    (buf, map, n): (*mut c_void, Arc<TypeMap>, usize),
    post: impl FnOnce(&mut Engine, (*mut u8, usize)) -> Result<u64, Fail>,
) -> Result<u64, Fail> {
    if map.is_dense() {
        let into = (buf.cast::<u8>(), map.size * n);
        return with(|e| post(e, into));
    }
    let mut temp = vec![0u8; map.size * n];
    let into = (temp.as_mut_ptr(), temp.len());
    let unpack = Unpack {
        temp,
        map,
        base: buf as usize,
        count: n,
    };
    with(|e| {
        // The packed buffer moves into the receive with its heap
        // allocation in place.
        let id = post(e, into)?;
        // SAFETY: as this function's contract.
        unsafe { e.packed_into(id, unpack) };
        Ok(id)
    })
}

/// Writes a receive's status; its error (`MPI_ERR_TRUNCATE`) as a
/// failure.
///
/// # Safety
/// `status` is null or valid for a status.
pub(crate) unsafe fn received(status: *mut Status, r: Option<Received>) -> Result<(), Fail> {
    let (source, tag, class, len, cancelled) = match r {
        Some(r) => (
            r.envelope.source as c_int,
            r.envelope.tag,
            r.class,
            r.len,
            r.cancelled,
        ),
        None => (abi::PROC_NULL, abi::ANY_TAG, err::SUCCESS, 0, false),
    };
    if !status.is_null() {
        let len = len as u64;
        let s = Status {
            source,
            tag,
            error: class,
            internal: [
                len as u32 as c_int,
                (len >> 32) as c_int,
                c_int::from(cancelled),
                0,
                0,
            ],
        };
        // SAFETY: not null; valid by the contract.
        unsafe { status.write(s) };
    }
    match class {
        err::SUCCESS => Ok(()),
        class => Err(Fail::new(
            class,
            format!("a message of more than {len} bytes"),
        )),
    }
}

/// A blocking receive.
///
/// # Safety
/// The buffer is valid for the message; `status` null or valid.
unsafe fn recv_blocking(comm: Handle, r: Receive, status: *mut Status) -> Result<(), Fail> {
    let c = runtime::comm(comm)?;
    // SAFETY: the call blocks until the request completes.
    let got = match unsafe { recv_start(&c, r) }? {
        Some(id) => Some(received_by(id)?),
        None => None,
    };
    // SAFETY: as this function's contract.
    unsafe { received(status, got) }
}

mpi! {
    /// Sends a message (eagerly up to the engine's limit, else once the
    /// receive is posted).
    fn MPI_Send / PMPI_Send(
        buf: *const c_void,
        count: c_int,
        datatype: Handle,
        dest: c_int,
        tag: c_int,
        comm: Handle,
    ) -> c_int {
        let m = Message { buf, count, datatype, dest, tag };
        // SAFETY: as the call's contract.
        let result = unsafe { send_blocking(comm, m, false) };
        finish("MPI_Send", comm, result)
    }
}

mpi! {
    /// Sends a message in ready mode: as `MPI_Send` (a correct program's
    /// receive is posted already).
    fn MPI_Rsend / PMPI_Rsend(
        buf: *const c_void,
        count: c_int,
        datatype: Handle,
        dest: c_int,
        tag: c_int,
        comm: Handle,
    ) -> c_int {
        let m = Message { buf, count, datatype, dest, tag };
        // SAFETY: as the call's contract.
        let result = unsafe { send_blocking(comm, m, false) };
        finish("MPI_Rsend", comm, result)
    }
}

mpi! {
    /// Sends a message and returns once a receive has matched it.
    fn MPI_Ssend / PMPI_Ssend(
        buf: *const c_void,
        count: c_int,
        datatype: Handle,
        dest: c_int,
        tag: c_int,
        comm: Handle,
    ) -> c_int {
        let m = Message { buf, count, datatype, dest, tag };
        // SAFETY: as the call's contract.
        let result = unsafe { send_blocking(comm, m, true) };
        finish("MPI_Ssend", comm, result)
    }
}

/// A nonblocking send's call: its request written to `request`.
///
/// # Safety
/// As [`send_request`]; `request` valid for a handle.
unsafe fn isend(call: &str, m: Message, comm: Handle, request: *mut Handle, sync: bool) -> c_int {
    // SAFETY: as this function's contract.
    let result = unsafe { send_request(comm, m, sync) }
        // SAFETY: as this function's contract.
        .and_then(|h| unsafe { ptr::write(request, h, "request") });
    finish(call, comm, result)
}

mpi! {
    /// Starts a send.
    fn MPI_Isend / PMPI_Isend(
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
        unsafe { isend("MPI_Isend", m, comm, request, false) }
    }
}

mpi! {
    /// Starts a send in ready mode (as `MPI_Isend`).
    fn MPI_Irsend / PMPI_Irsend(
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
        unsafe { isend("MPI_Irsend", m, comm, request, false) }
    }
}

mpi! {
    /// Starts a synchronous send: it completes once a receive matched it.
    fn MPI_Issend / PMPI_Issend(
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
        unsafe { isend("MPI_Issend", m, comm, request, true) }
    }
}

mpi! {
    /// Receives a message.
    fn MPI_Recv / PMPI_Recv(
        buf: *mut c_void,
        count: c_int,
        datatype: Handle,
        source: c_int,
        tag: c_int,
        comm: Handle,
        status: *mut Status,
    ) -> c_int {
        let r = Receive { buf, count, datatype, source, tag };
        // SAFETY: as the call's contract.
        let result = unsafe { recv_blocking(comm, r, status) };
        finish("MPI_Recv", comm, result)
    }
}

mpi! {
    /// Posts a receive.
    fn MPI_Irecv / PMPI_Irecv(
        buf: *mut c_void,
        count: c_int,
        datatype: Handle,
        source: c_int,
        tag: c_int,
        comm: Handle,
        request: *mut Handle,
    ) -> c_int {
        let r = Receive { buf, count, datatype, source, tag };
        let result = runtime::comm(comm).and_then(|c| {
            // SAFETY: the program keeps the buffer until the request
            // completes (the call's contract).
            let id = unsafe { recv_start(&c, r) }?;
            let h = request::start(Pending::receive(id, comm))?;
            // SAFETY: as the call's contract.
            unsafe { ptr::write(request, h, "request") }
        });
        finish("MPI_Irecv", comm, result)
    }
}

/// Sends `m` and receives `r` on `comm`, the receive posted first.
///
/// # Safety
/// Both buffers valid for their messages; `status` null or valid.
unsafe fn sendrecv(comm: Handle, m: Message, r: Receive, status: *mut Status) -> Result<(), Fail> {
    let c = runtime::comm(comm)?;
    // SAFETY: the call waits for the receive below.
    let receive = unsafe { recv_start(&c, r) }?;
    // SAFETY: the call waits for the send below.
    let send = unsafe { send_start(&c, m, false) }?;
    if let Some(id) = send {
        sent(id)?;
    }
    let got = match receive {
        Some(id) => Some(received_by(id)?),
        None => None,
    };
    // SAFETY: as this function's contract.
    unsafe { received(status, got) }
}

mpi! {
    /// Sends a message and receives one.
    fn MPI_Sendrecv / PMPI_Sendrecv(
        sendbuf: *const c_void,
        sendcount: c_int,
        sendtype: Handle,
        dest: c_int,
        sendtag: c_int,
        recvbuf: *mut c_void,
        recvcount: c_int,
        recvtype: Handle,
        source: c_int,
        recvtag: c_int,
        comm: Handle,
        status: *mut Status,
    ) -> c_int {
        let m = Message { buf: sendbuf, count: sendcount, datatype: sendtype, dest, tag: sendtag };
        let r = Receive { buf: recvbuf, count: recvcount, datatype: recvtype, source, tag: recvtag };
        // SAFETY: as the call's contract.
        let result = unsafe { sendrecv(comm, m, r, status) };
        finish("MPI_Sendrecv", comm, result)
    }
}

mpi! {
    /// Sends a buffer and receives into it (the send goes from a copy).
    fn MPI_Sendrecv_replace / PMPI_Sendrecv_replace(
        buf: *mut c_void,
        count: c_int,
        datatype: Handle,
        dest: c_int,
        sendtag: c_int,
        source: c_int,
        recvtag: c_int,
        comm: Handle,
        status: *mut Status,
    ) -> c_int {
        // SAFETY: count elements of datatype at buf (the call's contract).
        let result = unsafe { outgoing(buf, count, datatype) }.and_then(|bytes| {
            let copy = match bytes {
                // SAFETY: as above.
                Bytes::Direct(p, len) => unsafe { ptr::slice(p, len, "buf") }?.to_vec(),
                Bytes::Packed(packed) => packed,
            };
            let len = c_int::try_from(copy.len()).map_err(|_| Fail::new(err::COUNT, "a message over 2 GiB"))?;
            let m = Message { buf: copy.as_ptr().cast(), count: len, datatype: abi::datatype::BYTE, dest, tag: sendtag };
            let r = Receive { buf, count, datatype, source, tag: recvtag };
            // SAFETY: the copy lives until the call returns; buf as the
            // call's contract.
            unsafe { sendrecv(comm, m, r, status) }
        });
        finish("MPI_Sendrecv_replace", comm, result)
    }
}

/// Probes `comm` once for a message from `source` with `tag`; its status.
fn probe_once(c: &CommEntry, source: c_int, tag: c_int) -> Result<Option<Received>, Fail> {
    let Some(pattern) = pattern(c, source, tag)? else {
        return Ok(None);
    };
    let found = with(|e| e.probe(c.objects.key(), pattern, c.group.members()))?;
    Ok(found.map(|(envelope, len)| Received {
        envelope,
        len,
        class: err::SUCCESS,
        cancelled: false,
    }))
}

mpi! {
    /// Waits until a message matching `source` and `tag` can be
    /// received; its status (the message stays).
    fn MPI_Probe / PMPI_Probe(source: c_int, tag: c_int, comm: Handle, status: *mut Status) -> c_int {
        let result = runtime::comm(comm).and_then(|c| {
            let found = match pattern(&c, source, tag)? {
                Some(p) => {
                    let (ctx, members) = (c.objects.key(), c.group.members());
                    let found = wait(|e| e.probe(ctx, p, members).transpose())?;
                    Some(Received { envelope: found.0, len: found.1, class: err::SUCCESS, cancelled: false })
                }
                None => None,
            };
            // SAFETY: as the call's contract.
            unsafe { received(status, found) }
        });
        finish("MPI_Probe", comm, result)
    }
}

mpi! {
    /// Whether a message matching `source` and `tag` can be received,
    /// and its status.
    fn MPI_Iprobe / PMPI_Iprobe(
        source: c_int,
        tag: c_int,
        comm: Handle,
        flag: *mut c_int,
        status: *mut Status,
    ) -> c_int {
        let result = runtime::comm(comm).and_then(|c| {
            let null = source == abi::PROC_NULL;
            let found = probe_once(&c, source, tag)?;
            // SAFETY: as the call's contract.
            unsafe { ptr::write(flag, c_int::from(null || found.is_some()), "flag") }?;
            match (null, found) {
                // SAFETY: as the call's contract.
                (true, _) => unsafe { received(status, None) },
                // SAFETY: as the call's contract.
                (false, Some(r)) => unsafe { received(status, Some(r)) },
                (false, None) => Ok(()),
            }
        });
        finish("MPI_Iprobe", comm, result)
    }
}

/// The elements of `datatype` a status's bytes hold (`MPI_UNDEFINED`
/// when they are not whole elements).
///
/// # Safety
/// `status` is null or valid for a status.
unsafe fn count_of(status: *const Status, datatype: Handle) -> Result<c_int, Fail> {
    // SAFETY: as this function's contract.
    let s = unsafe { ptr::read(status, "status") }?;
    let size = datatype::size_of(datatype)?;
    let bytes = u64::from(s.internal[0] as u32) | (u64::from(s.internal[1] as u32) << 32);
    Ok(match size {
        0 => 0,
        size if bytes % size as u64 == 0 => {
            c_int::try_from(bytes / size as u64).unwrap_or(abi::UNDEFINED)
        }
        _ => abi::UNDEFINED,
    })
}

/// The predefined elements of `datatype` a status's bytes hold.
///
/// # Safety
/// `status` is null or valid for a status.
unsafe fn elements_of(status: *const Status, datatype: Handle) -> Result<c_int, Fail> {
    // SAFETY: as this function's contract.
    let s = unsafe { ptr::read(status, "status") }?;
    let map = derived::map_of(datatype)?;
    let bytes =
        (u64::from(s.internal[0] as u32) | (u64::from(s.internal[1] as u32) << 32)) as usize;
    if map.size == 0 {
        return Ok(0);
    }
    let (whole, rest) = (bytes / map.size, bytes % map.size);
    let partial = match (rest, map.element) {
        (0, _) => Some(0),
        (rest, Some((_, size))) if rest % size == 0 => Some(rest / size),
        _ => None,
    };
    Ok(partial
        .and_then(|p| c_int::try_from(whole * map.elements + p).ok())
        .unwrap_or(abi::UNDEFINED))
}

mpi! {
    /// The number of elements of `datatype` a receive got.
    fn MPI_Get_count / PMPI_Get_count(status: *const Status, datatype: Handle, count: *mut c_int) -> c_int {
        // SAFETY: as the call's contract.
        let result = unsafe { count_of(status, datatype) }
            // SAFETY: as the call's contract.
            .and_then(|n| unsafe { ptr::write(count, n, "count") });
        finish("MPI_Get_count", abi::comm::WORLD, result)
    }
}

mpi! {
    /// The number of predefined elements a receive got (`MPI_UNDEFINED`
    /// when a last partial element of a datatype mixing elements cannot
    /// be counted).
    fn MPI_Get_elements / PMPI_Get_elements(status: *const Status, datatype: Handle, count: *mut c_int) -> c_int {
        // SAFETY: as the call's contract.
        let result = unsafe { elements_of(status, datatype) }
            // SAFETY: as the call's contract.
            .and_then(|n| unsafe { ptr::write(count, n, "count") });
        finish("MPI_Get_elements", abi::comm::WORLD, result)
    }
}
