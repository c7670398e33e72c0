//! Requests (`MPI_Request`): of the nonblocking collectives, onesided's
//! `Run` (which owns copies of the buffers while it runs) and where its
//! result goes, copied into the program's buffer when it completes; of
//! point-to-point, the engine's request number; persistent ones
//! (`MPI_Send_init`, `MPI_Recv_init`), which stay, inactive, after they
//! complete until `MPI_Request_free`; and `MPI_Wait`, `MPI_Test` and
//! their `all`/`any`/`some` forms (which pass over inactive ones). A completed receive's
//! status says who sent what; any other's is empty (`MPI_ANY_SOURCE`,
//! `MPI_ANY_TAG`, `MPI_SUCCESS`).

use std::ffi::c_int;
use std::sync::Arc;

use onesided::{Request as _, Run};

use crate::abi::{self, err, Handle, Status};
use crate::errors::{finish, Fail};
use crate::op::{DoubleInt, FloatInt, LongInt, ShortInt, TwoDouble, TwoInt, TwoReal};
use crate::p2p::{self, Persistent, Received};
use crate::tree::{self, Tree};
use crate::typemap::TypeMap;
use crate::vcoll::Layout;
use crate::{mpi, ptr, runtime};

/// `MPI_REQUEST_NULL`.
const NULL: Handle = abi::REQUEST_NULL;

/// A run on elements of the datatype's Rust type.
pub(crate) enum Running {
    I8(Run<i8>),
    U8(Run<u8>),
    I16(Run<i16>),
    U16(Run<u16>),
    I32(Run<i32>),
    U32(Run<u32>),
    I64(Run<i64>),
    U64(Run<u64>),
    F32(Run<f32>),
    F64(Run<f64>),
    FloatInt(Run<FloatInt>),
    DoubleInt(Run<DoubleInt>),
    LongInt(Run<LongInt>),
    TwoInt(Run<TwoInt>),
    ShortInt(Run<ShortInt>),
    TwoReal(Run<TwoReal>),
    TwoDouble(Run<TwoDouble>),
}

macro_rules! from_runs {
    ($($t:ty => $v:ident),*) => {$(
        impl From<Run<$t>> for Running {
            fn from(run: Run<$t>) -> Running {
                Running::$v(run)
            }
        }
    )*};
}
from_runs!(
    i8 => I8, u8 => U8, i16 => I16, u16 => U16, i32 => I32, u32 => U32, i64 => I64, u64 => U64,
    f32 => F32, f64 => F64, FloatInt => FloatInt, DoubleInt => DoubleInt, LongInt => LongInt,
    TwoInt => TwoInt, ShortInt => ShortInt, TwoReal => TwoReal, TwoDouble => TwoDouble
);

/// Calls the same on a run of any element type.
macro_rules! each {
    ($running:expr, $r:ident => $body:expr) => {
        match $running {
            Running::I8($r) => $body,
            Running::U8($r) => $body,
            Running::I16($r) => $body,
            Running::U16($r) => $body,
            Running::I32($r) => $body,
            Running::U32($r) => $body,
            Running::I64($r) => $body,
            Running::U64($r) => $body,
            Running::F32($r) => $body,
            Running::F64($r) => $body,
            Running::FloatInt($r) => $body,
            Running::DoubleInt($r) => $body,
            Running::LongInt($r) => $body,
            Running::TwoInt($r) => $body,
            Running::ShortInt($r) => $body,
            Running::TwoReal($r) => $body,
            Running::TwoDouble($r) => $body,
        }
    };
}

/// A request in flight.
pub(crate) struct Pending {
    work: Work,
    /// The communicator, whose handler its errors go to.
    pub(crate) comm: Handle,
}

/// What a request waits for.
enum Work {
    /// Nothing: done when it started (request-based RMA, which onesided
    /// completes within the call; an eager send).
    Done,
    /// A collective whose output goes to `out` (the program's buffer) as
    /// `place` says.
    Collective {
        run: Running,
        out: usize,
        place: Place,
    },
    /// The engine's send.
    Send(u64),
    /// The engine's receive (`None`: from `MPI_PROC_NULL`).
    Receive(Option<u64>),
    /// A persistent operation, and what it does while active.
    Persistent(Persistent, Option<Box<Work>>),
    /// A reduction by the program's operation on a derived datatype:
    /// its number among those in flight (`tree.rs`).
    Tree(u64),
}

/// Where a collective's output goes in the program's buffer.
enum Place {
    /// Its first `len` bytes, from the start.
    Bytes(usize),
    /// Its blocks, each at its displacement.
    Blocks(Layout),
    /// `count` elements of a datatype of this map.
    Typed(Arc<TypeMap>, usize),
}

/// How a completed request fills its status.
enum Completion {
    Empty,
    Received(Option<Received>),
}

impl Pending {
    /// A run whose output's first `len` bytes go to `out` at completion.
    pub(crate) fn new(run: Running, (out, len): (*mut u8, usize), comm: Handle) -> Pending {
        let (out, place) = (out as usize, Place::Bytes(len));
        Pending {
            work: Work::Collective { run, out, place },
            comm,
        }
    }

    /// A run whose output is `count` elements of `map` at `out`.
    pub(crate) fn typed(
        run: Running,
        out: *mut u8,
        (map, count): (Arc<TypeMap>, usize),
        comm: Handle,
    ) -> Pending {
        let (out, place) = (out as usize, Place::Typed(map, count));
        Pending {
            work: Work::Collective { run, out, place },
            comm,
        }
    }

    /// A run whose output's blocks go to `out` as `layout` places them.
    pub(crate) fn blocks(run: Running, out: *mut u8, layout: Layout, comm: Handle) -> Pending {
        let (out, place) = (out as usize, Place::Blocks(layout));
        Pending {
            work: Work::Collective { run, out, place },
            comm,
        }
    }

    /// Reduction `tree` on `comm`, started.
    pub(crate) fn tree(tree: Tree, comm: Handle) -> Pending {
        let work = Work::Tree(tree::start(tree));
        Pending { work, comm }
    }

    /// A request complete from the start.
    pub(crate) fn done() -> Pending {
        Pending {
            work: Work::Done,
            comm: abi::comm::WORLD,
        }
    }

    /// The engine's send `id` on `comm` (`None`: complete).
    pub(crate) fn send(id: Option<u64>, comm: Handle) -> Pending {
        let work = id.map_or(Work::Done, Work::Send);
        Pending { work, comm }
    }

    /// The engine's receive `id` on `comm` (`None`: from `MPI_PROC_NULL`).
    pub(crate) fn receive(id: Option<u64>, comm: Handle) -> Pending {
        let work = Work::Receive(id);
        Pending { work, comm }
    }

    /// Persistent operation `op`, inactive.
    pub(crate) fn persistent(op: Persistent) -> Pending {
        let comm = op.comm();
        Pending {
            work: Work::Persistent(op, None),
            comm,
        }
    }

    /// The persistent operation this request is, if it is one.
    fn persistent_op(&self) -> Option<Persistent> {
        match self.work {
            Work::Persistent(op, _) => Some(op),
            _ => None,
        }
    }

    /// The engine's receive this request is, if it is one.
    fn receive_id(&self) -> Option<u64> {
        match &self.work {
            Work::Receive(id) => *id,
            Work::Persistent(_, Some(w)) => match **w {
                Work::Receive(id) => id,
                _ => None,
            },
            _ => None,
        }
    }

    fn test(&mut self) -> Result<bool, Fail> {
        test_work(&mut self.work)
    }

    /// Starts a persistent request (`MPI_Start`).
    ///
    /// # Safety
    /// Its buffer stays valid until it completes (MPI's rule).
    unsafe fn start(&mut self) -> Result<(), Fail> {
        match &mut self.work {
            Work::Persistent(op, active @ None) => {
                // SAFETY: as this function's contract.
                let started = unsafe { op.start() }?;
                *active = Some(Box::new(started.work));
                Ok(())
            }
            Work::Persistent(_, Some(_)) => Err(Fail::new(
                err::REQUEST,
                "a persistent request started twice",
            )),
            _ => Err(Fail::new(
                err::REQUEST,
                "MPI_Start of a request that is not persistent",
            )),
        }
    }

    /// Waits for the end and copies the result out.
    ///
    /// # Safety
    /// The program's buffer is valid for what the output fills (MPI: it
    /// stays so until the request completes).
    unsafe fn complete(self) -> Result<Completion, Fail> {
        // SAFETY: as this function's contract.
        unsafe { complete_work(self.work) }
    }
}

/// Whether `work` is done (progress made).
fn test_work(work: &mut Work) -> Result<bool, Fail> {
    // Whatever is tested, the reductions in flight move on.
    tree::advance_all();
    match work {
        Work::Collective { run, .. } => Ok(each!(run, r => r.test())?),
        Work::Send(id) => p2p::with(|e| {
            e.progress()?;
            Ok(e.send_is_done(*id))
        }),
        Work::Receive(Some(id)) => p2p::with(|e| {
            e.progress()?;
            Ok(e.recv_is_done(*id))
        }),
        Work::Persistent(_, Some(active)) => test_work(active),
        Work::Tree(id) => tree::test(*id),
        Work::Done | Work::Receive(None) | Work::Persistent(_, None) => Ok(true),
    }
}

/// Waits for `work` and copies its result out.
///
/// # Safety
/// As [`Pending::complete`].
unsafe fn complete_work(work: Work) -> Result<Completion, Fail> {
    match work {
        Work::Done | Work::Persistent(_, None) => Ok(Completion::Empty),
        // SAFETY: as this function's contract.
        Work::Persistent(_, Some(active)) => unsafe { complete_work(*active) },
        Work::Send(id) => p2p::sent(id).map(|()| Completion::Empty),
        Work::Receive(None) => Ok(Completion::Received(None)),
        Work::Receive(Some(id)) => p2p::received_by(id).map(|r| Completion::Received(Some(r))),
        // SAFETY: as this function's contract.
        Work::Tree(id) => unsafe { tree::finish(id) }.map(|()| Completion::Empty),
        Work::Collective {
            mut run,
            out,
            place,
        } => {
            // Waited by tests, so that the reductions in flight move on
            // meanwhile.
            p2p::until(|| Ok(each!(&mut run, r => r.test())?))?;
            each!(run, r => {
                let buffers = r.into_buffers()?;
                let bytes: &[u8] = bytemuck::cast_slice(&buffers.output);
                match &place {
                    Place::Bytes(len) => {
                        let len = (*len).min(bytes.len());
                        // SAFETY: as this function's contract.
                        let dest = unsafe { ptr::slice_mut(out as *mut u8, len, "recvbuf") }?;
                        dest.copy_from_slice(&bytes[..len]);
                    }
                    Place::Typed(map, count) => {
                        // SAFETY: as this function's contract.
                        unsafe { crate::derived::unpack(map, bytes, out as *mut u8, *count) };
                    }
                    Place::Blocks(layout) => {
                        // SAFETY: as this function's contract (the
                        // buffer holds the blocks).
                        unsafe { layout.unpack(bytes, out as *mut u8) }?;
                    }
                }
            });
            Ok(Completion::Empty)
        }
    }
}

/// Whether request `handle` has nothing to complete: `MPI_REQUEST_NULL`
/// or an inactive persistent request (`Waitany` and its kin pass over
/// both).
fn idle(handle: Handle) -> bool {
    handle == NULL
        || runtime::with(|r| {
            Ok(matches!(
                r.requests.get(handle).map(|p| &p.work),
                Some(Work::Persistent(_, None))
            ))
        })
        .unwrap_or(false)
}

/// Writes a completed request's status; a receive's error as a failure.
///
/// # Safety
/// `status` is null or valid for a status.
unsafe fn fill(status: *mut Status, completion: Completion) -> Result<(), Fail> {
    match completion {
        // SAFETY: as this function's contract.
        Completion::Empty => unsafe { empty_status(status) },
        // SAFETY: as this function's contract.
        Completion::Received(r) => return unsafe { p2p::received(status, r) },
    }
    Ok(())
}

/// A new request of `pending`.
pub(crate) fn start(pending: Pending) -> Result<Handle, Fail> {
    runtime::with(|r| Ok(r.requests.insert(pending)))
}

/// Writes an empty status, unless `status` is `MPI_STATUS_IGNORE`.
///
/// # Safety
/// `status` is null or valid for a status.
unsafe fn empty_status(status: *mut Status) {
    if !status.is_null() {
        let empty = Status {
            source: abi::ANY_SOURCE,
            tag: abi::ANY_TAG,
            error: err::SUCCESS,
            internal: [0; 5],
        };
        // SAFETY: not null; valid by the contract.
        unsafe { status.write(empty) };
    }
}

/// Takes request `handle` out of the table (`None` for the null one).
fn take(handle: Handle) -> Result<Option<Pending>, Fail> {
    if handle == NULL {
        return Ok(None);
    }
    runtime::with(|r| {
        (r.requests.remove(handle).map(Some))
            .ok_or_else(|| Fail::new(err::REQUEST, format!("invalid request {handle:#x}")))
    })
}

/// Waits for the request at `request` and frees it; the communicator its
/// errors go to.
///
/// # Safety
/// `request` valid for a handle; the request's buffer as [`Pending::complete`].
unsafe fn wait_one(request: *mut Handle, status: *mut Status) -> (Handle, Result<(), Fail>) {
    // SAFETY: as this function's contract.
    let handle = match unsafe { ptr::read(request, "request") } {
        Ok(h) => h,
        Err(e) => return (abi::comm::WORLD, Err(e)),
    };
    let pending = match take(handle) {
        Ok(Some(p)) => p,
        Ok(None) => {
            // SAFETY: as this function's contract.
            unsafe { empty_status(status) };
            return (abi::comm::WORLD, Ok(()));
        }
        Err(e) => return (abi::comm::WORLD, Err(e)),
    };
    let comm = pending.comm;
    let keep = pending.persistent_op();
    // SAFETY: as this function's contract.
    let result = unsafe { pending.complete() }.and_then(|done| {
        // SAFETY: as this function's contract.
        unsafe { finished(request, handle, keep) }?;
        // SAFETY: as this function's contract.
        unsafe { fill(status, done) }
    });
    (comm, result)
}

/// A request completed: a persistent one stays, inactive, under its
/// handle; another is freed (the handle becomes `MPI_REQUEST_NULL`).
///
/// # Safety
/// `request` valid for a handle.
unsafe fn finished(
    request: *mut Handle,
    handle: Handle,
    keep: Option<Persistent>,
) -> Result<(), Fail> {
    match keep {
        Some(op) => runtime::with(|r| {
            r.requests.restore(handle, Pending::persistent(op));
            Ok(())
        }),
        // SAFETY: as this function's contract.
        None => unsafe { ptr::write(request, NULL, "request") },
    }
}

/// Tests the request at `request`: completes and frees it when done.
///
/// # Safety
/// As [`wait_one`].
unsafe fn test_one(request: *mut Handle, status: *mut Status) -> (Handle, Result<bool, Fail>) {
    // SAFETY: as this function's contract.
    let handle = match unsafe { ptr::read(request, "request") } {
        Ok(h) => h,
        Err(e) => return (abi::comm::WORLD, Err(e)),
    };
    let mut pending = match take(handle) {
        Ok(Some(p)) => p,
        Ok(None) => {
            // SAFETY: as this function's contract.
            unsafe { empty_status(status) };
            return (abi::comm::WORLD, Ok(true));
        }
        Err(e) => return (abi::comm::WORLD, Err(e)),
    };
    let comm = pending.comm;
    match pending.test() {
        Ok(false) => {
            let back = runtime::with(|r| {
                r.requests.restore(handle, pending);
                Ok(())
            });
            (comm, back.map(|()| false))
        }
        Ok(true) => {
            let keep = pending.persistent_op();
            // SAFETY: as this function's contract.
            let result = unsafe { pending.complete() }.and_then(|done| {
                // SAFETY: as this function's contract.
                unsafe { finished(request, handle, keep) }?;
                // SAFETY: as this function's contract.
                unsafe { fill(status, done) }
            });
            (comm, result.map(|()| true))
        }
        Err(e) => (comm, Err(e)),
    }
}

mpi! {
    /// Waits for a request to complete.
    fn MPI_Wait / PMPI_Wait(request: *mut Handle, status: *mut Status) -> c_int {
        // SAFETY: as the call's contract.
        let (comm, result) = unsafe { wait_one(request, status) };
        finish("MPI_Wait", comm, result)
    }
}

mpi! {
    /// Whether a request completed (it is freed then).
    fn MPI_Test / PMPI_Test(request: *mut Handle, flag: *mut c_int, status: *mut Status) -> c_int {
        // SAFETY: as the call's contract.
        let (comm, result) = unsafe { test_one(request, status) };
        let result = result.and_then(|done| {
            // SAFETY: as the call's contract.
            unsafe { ptr::write(flag, c_int::from(done), "flag") }
        });
        finish("MPI_Test", comm, result)
    }
}

/// The status slot `i` of `statuses` (null for `MPI_STATUSES_IGNORE`).
fn slot(statuses: *mut Status, i: usize) -> *mut Status {
    match statuses.is_null() {
        true => std::ptr::null_mut(),
        false => statuses.wrapping_add(i),
    }
}

mpi! {
    /// Waits for every request.
    fn MPI_Waitall / PMPI_Waitall(count: c_int, requests: *mut Handle, statuses: *mut Status) -> c_int {
        let n = usize::try_from(count).unwrap_or(0);
        let mut first = None;
        for i in 0..n {
            // SAFETY: count requests and statuses (the call's contract).
            let (comm, result) = unsafe { wait_one(requests.wrapping_add(i), slot(statuses, i)) };
            if let (Err(e), None) = (result, &first) {
                first = Some((comm, e));
            }
        }
        match first {
            None => err::SUCCESS,
            Some((comm, e)) => finish("MPI_Waitall", comm, Err(e)),
        }
    }
}

mpi! {
    /// Whether every request completed (then all are freed).
    fn MPI_Testall / PMPI_Testall(
        count: c_int,
        requests: *mut Handle,
        flag: *mut c_int,
        statuses: *mut Status,
    ) -> c_int {
        let n = usize::try_from(count).unwrap_or(0);
        let mut all = true;
        let mut first = None;
        for i in 0..n {
            // SAFETY: count requests and statuses (the call's contract).
            let (comm, result) = unsafe { test_one(requests.wrapping_add(i), slot(statuses, i)) };
            match result {
                Ok(done) => all &= done,
                Err(e) => {
                    first.get_or_insert((comm, e));
                }
            }
        }
        if let Some((comm, e)) = first {
            return finish("MPI_Testall", comm, Err(e));
        }
        // SAFETY: as the call's contract.
        let result = unsafe { ptr::write(flag, c_int::from(all), "flag") };
        finish("MPI_Testall", abi::comm::WORLD, result)
    }
}

/// Tests `count` requests until one completes (`wait`), or once; its
/// index, or `MPI_UNDEFINED` when every request is null (or, without
/// `wait`, none completed).
///
/// # Safety
/// `requests` valid for `count` handles; `status` null or valid.
unsafe fn any(
    count: c_int,
    requests: *mut Handle,
    status: *mut Status,
    wait: bool,
) -> (Handle, Result<c_int, Fail>) {
    let n = usize::try_from(count).unwrap_or(0);
    let mut backoff = runtime::with(|r| Ok(r.world.endpoint().backoff())).ok();
    loop {
        let mut live = false;
        for i in 0..n {
            let at = requests.wrapping_add(i);
            // SAFETY: as this function's contract.
            if unsafe { ptr::read(at, "request") }.is_ok_and(idle) {
                continue;
            }
            live = true;
            // SAFETY: as this function's contract.
            match unsafe { test_one(at, status) } {
                (_, Ok(true)) => return (abi::comm::WORLD, Ok(i as c_int)),
                (_, Ok(false)) => {}
                (comm, Err(e)) => return (comm, Err(e)),
            }
        }
        if !live || !wait {
            // SAFETY: as this function's contract.
            unsafe { empty_status(status) };
            return (abi::comm::WORLD, Ok(abi::UNDEFINED));
        }
        match backoff.as_mut() {
            Some(b) => drop(b.pause()),
            None => std::thread::yield_now(),
        }
    }
}

mpi! {
    /// Waits for one of the requests; its index (`MPI_UNDEFINED` when all
    /// are null).
    fn MPI_Waitany / PMPI_Waitany(count: c_int, requests: *mut Handle, index: *mut c_int, status: *mut Status) -> c_int {
        // SAFETY: as the call's contract.
        let (comm, result) = unsafe { any(count, requests, status, true) };
        let result = result.and_then(|i| {
            // SAFETY: as the call's contract.
            unsafe { ptr::write(index, i, "index") }
        });
        finish("MPI_Waitany", comm, result)
    }
}

mpi! {
    /// Whether one of the requests completed, and which.
    fn MPI_Testany / PMPI_Testany(
        count: c_int,
        requests: *mut Handle,
        index: *mut c_int,
        flag: *mut c_int,
        status: *mut Status,
    ) -> c_int {
        // SAFETY: as the call's contract.
        let (comm, result) = unsafe { any(count, requests, status, false) };
        let result = result.and_then(|i| {
            // SAFETY: as the call's contract.
            unsafe { ptr::write(index, i, "index") }?;
            let done = i != abi::UNDEFINED;
            let all_null = done || {
                let n = usize::try_from(count).unwrap_or(0);
                // SAFETY: count requests (the call's contract).
                (0..n).all(|k| unsafe { ptr::read(requests.wrapping_add(k), "request") }.is_ok_and(idle))
            };
            // SAFETY: as the call's contract.
            unsafe { ptr::write(flag, c_int::from(all_null), "flag") }
        });
        finish("MPI_Testany", comm, result)
    }
}

/// Tests every request once (`wait`: until one completes); how many
/// completed, their indices written to `indices` (`MPI_UNDEFINED` when
/// every request is null).
///
/// # Safety
/// `requests` and `indices` valid for `count`; `statuses` null or valid
/// for `count`.
unsafe fn some(
    count: c_int,
    requests: *mut Handle,
    indices: *mut c_int,
    statuses: *mut Status,
    wait: bool,
) -> (Handle, Result<c_int, Fail>) {
    let n = usize::try_from(count).unwrap_or(0);
    let mut backoff = runtime::with(|r| Ok(r.world.endpoint().backoff())).ok();
    loop {
        let (mut live, mut done) = (false, 0usize);
        for i in 0..n {
            let at = requests.wrapping_add(i);
            // SAFETY: as this function's contract.
            if unsafe { ptr::read(at, "request") }.is_ok_and(idle) {
                continue;
            }
            live = true;
            // SAFETY: as this function's contract.
            match unsafe { test_one(at, slot(statuses, done)) } {
                (_, Ok(true)) => {
                    // SAFETY: as this function's contract.
                    if let Err(e) =
                        unsafe { ptr::write(indices.wrapping_add(done), i as c_int, "indices") }
                    {
                        return (abi::comm::WORLD, Err(e));
                    }
                    done += 1;
                }
                (_, Ok(false)) => {}
                (comm, Err(e)) => return (comm, Err(e)),
            }
        }
        if !live {
            return (abi::comm::WORLD, Ok(abi::UNDEFINED));
        }
        if done > 0 || !wait {
            return (abi::comm::WORLD, Ok(done as c_int));
        }
        match backoff.as_mut() {
            Some(b) => drop(b.pause()),
            None => std::thread::yield_now(),
        }
    }
}

mpi! {
    /// Waits until at least one request completes; how many did, and
    /// which.
    fn MPI_Waitsome / PMPI_Waitsome(
        incount: c_int,
        requests: *mut Handle,
        outcount: *mut c_int,
        indices: *mut c_int,
        statuses: *mut Status,
    ) -> c_int {
        // SAFETY: as the call's contract.
        let (comm, result) = unsafe { some(incount, requests, indices, statuses, true) };
        // SAFETY: as the call's contract.
        let result = result.and_then(|k| unsafe { ptr::write(outcount, k, "outcount") });
        finish("MPI_Waitsome", comm, result)
    }
}

mpi! {
    /// Which requests have completed, now.
    fn MPI_Testsome / PMPI_Testsome(
        incount: c_int,
        requests: *mut Handle,
        outcount: *mut c_int,
        indices: *mut c_int,
        statuses: *mut Status,
    ) -> c_int {
        // SAFETY: as the call's contract.
        let (comm, result) = unsafe { some(incount, requests, indices, statuses, false) };
        // SAFETY: as the call's contract.
        let result = result.and_then(|k| unsafe { ptr::write(outcount, k, "outcount") });
        finish("MPI_Testsome", comm, result)
    }
}

mpi! {
    /// Cancels a receive no message has matched yet (it completes, and
    /// `MPI_Test_cancelled` says so); any other request completes as it
    /// would (MPI allows a cancellation to fail).
    fn MPI_Cancel / PMPI_Cancel(request: *mut Handle) -> c_int {
        // SAFETY: as the call's contract.
        let result = unsafe { ptr::read(request, "request") }.and_then(|h| {
            let id = runtime::with(|r| {
                let pending = (r.requests.get(h))
                    .ok_or_else(|| Fail::new(err::REQUEST, format!("invalid request {h:#x}")))?;
                Ok(pending.receive_id())
            })?;
            if let Some(id) = id {
                p2p::with(|e| Ok(e.cancel_recv(id)))?;
            }
            Ok(())
        });
        finish("MPI_Cancel", abi::comm::WORLD, result)
    }
}

mpi! {
    /// Whether the request a status came from was cancelled.
    fn MPI_Test_cancelled / PMPI_Test_cancelled(status: *const Status, flag: *mut c_int) -> c_int {
        // SAFETY: as the call's contract.
        let result = unsafe { ptr::read(status, "status") }.and_then(|s| {
            // SAFETY: as the call's contract.
            unsafe { ptr::write(flag, c_int::from(s.internal[2] != 0), "flag") }
        });
        finish("MPI_Test_cancelled", abi::comm::WORLD, result)
    }
}

mpi! {
    /// Whether a request completed, and its status, leaving it as it is
    /// (`MPI_Wait` or `MPI_Test` still completes it).
    fn MPI_Request_get_status / PMPI_Request_get_status(request: Handle, flag: *mut c_int, status: *mut Status) -> c_int {
        let result = (|| {
            let Some(mut pending) = take(request)? else {
                // SAFETY: as the call's contract.
                unsafe { empty_status(status) };
                // SAFETY: as the call's contract.
                return unsafe { ptr::write(flag, 1, "flag") };
            };
            let done = pending.test();
            let id = pending.receive_id();
            runtime::with(|r| {
                r.requests.restore(request, pending);
                Ok(())
            })?;
            let done = done?;
            if done {
                match id.map(|id| p2p::with(|e| Ok(e.recv_peek(id)))).transpose()?.flatten() {
                    // The receive's own error class stays in the status.
                    // SAFETY: as the call's contract.
                    Some(got) => drop(unsafe { p2p::received(status, Some(got)) }),
                    // SAFETY: as the call's contract.
                    None => unsafe { empty_status(status) },
                }
            }
            // SAFETY: as the call's contract.
            unsafe { ptr::write(flag, c_int::from(done), "flag") }
        })();
        finish("MPI_Request_get_status", abi::comm::WORLD, result)
    }
}

mpi! {
    /// Starts a persistent request.
    fn MPI_Start / PMPI_Start(request: *mut Handle) -> c_int {
        // SAFETY: as the call's contract.
        let result = unsafe { start_one(request) };
        finish("MPI_Start", abi::comm::WORLD, result)
    }
}

mpi! {
    /// Starts `count` persistent requests.
    fn MPI_Startall / PMPI_Startall(count: c_int, requests: *mut Handle) -> c_int {
        let n = usize::try_from(count).unwrap_or(0);
        // SAFETY: count requests (the call's contract).
        let result = (0..n).try_for_each(|i| unsafe { start_one(requests.wrapping_add(i)) });
        finish("MPI_Startall", abi::comm::WORLD, result)
    }
}

/// Starts the persistent request at `request`.
///
/// # Safety
/// `request` valid for a handle; its buffer as MPI requires.
unsafe fn start_one(request: *mut Handle) -> Result<(), Fail> {
    // SAFETY: as this function's contract.
    let handle = unsafe { ptr::read(request, "request") }?;
    let mut pending =
        take(handle)?.ok_or_else(|| Fail::new(err::REQUEST, "MPI_Start of MPI_REQUEST_NULL"))?;
    // SAFETY: as this function's contract.
    let started = unsafe { pending.start() };
    runtime::with(|r| {
        r.requests.restore(handle, pending);
        Ok(())
    })?;
    started
}

mpi! {
    /// Frees a request: a collective one is waited for first (its peers
    /// would wait for it otherwise).
    fn MPI_Request_free / PMPI_Request_free(request: *mut Handle) -> c_int {
        // SAFETY: as the call's contract.
        let (comm, result) = unsafe { wait_one(request, std::ptr::null_mut()) };
        // A persistent request stays after its wait: it goes now.
        // SAFETY: as the call's contract.
        let result = result.and_then(|()| match unsafe { ptr::read(request, "request") }? {
            NULL => Ok(()),
            h => {
                take(h)?;
                // SAFETY: as the call's contract.
                unsafe { ptr::write(request, NULL, "request") }
            }
        });
        finish("MPI_Request_free", comm, result)
    }
}
