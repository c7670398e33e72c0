//! Windows and RMA: `MPI_Win_allocate` on onesided's windows (which cost
//! no message to make), its epochs (lock, lock_all, fence), the
//! accesses (put, get, accumulate, get_accumulate, fetch_and_op,
//! compare_and_swap) with displacement units, flushes, attributes and
//! names.
//!
//! A window keeps its onesided `Window` boxed beside the epochs open on
//! it, which borrow it: C holds an epoch across calls, where Rust's
//! guards hold it within one scope. An access finds the epoch that
//! covers its target (a lock of it, else `lock_all`, else the fence
//! epoch); none is `MPI_ERR_RMA_SYNC`.

use std::ffi::{c_char, c_int, c_void};
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Mutex, MutexGuard};

use onesided::fabric::fnv::FastMap;
use onesided::rma::{
    Assert, Element, Epoch, Fenced, Group, LockKind, Locked, Op, RemoteAccess, Window,
};

use crate::abi::{self, err, Aint, Handle};
use crate::datatype::{self, by_element};
use crate::derived;
use crate::errors::{finish, finish_win, Fail};
use crate::runtime::{self, CommEntry};
use crate::{mpi, ptr};

mod dynamic;
mod pscw;

pub(crate) use dynamic::serve as serve_attachments;

/// `MPI_LOCK_EXCLUSIVE`, `MPI_LOCK_SHARED`.
const LOCK_EXCLUSIVE: c_int = 301;
const LOCK_SHARED: c_int = 302;
/// Window assertion modes.
const MODE_NOCHECK: c_int = 1024;
const MODE_NOPRECEDE: c_int = 2048;
const MODE_NOPUT: c_int = 4096;
const MODE_NOSTORE: c_int = 8192;
const MODE_NOSUCCEED: c_int = 16384;
/// Attribute keys, flavors and the memory model.
const WIN_BASE: c_int = 601;
const WIN_DISP_UNIT: c_int = 602;
const WIN_SIZE: c_int = 603;
const WIN_CREATE_FLAVOR: c_int = 604;
const WIN_MODEL: c_int = 605;
const FLAVOR_CREATE: c_int = 311;
const FLAVOR_ALLOCATE: c_int = 312;
const FLAVOR_DYNAMIC: c_int = 313;
const FLAVOR_SHARED: c_int = 314;
const UNIFIED: c_int = 321;

/// A window: its onesided window and epochs, its layout, its handler.
pub(crate) struct WinEntry {
    state: Mutex<Option<WinState>>,
    /// The displacement unit of each member, by window rank.
    disp_units: Vec<usize>,
    /// Where displacement 0 of each member lies in onesided's window (0,
    /// or the program's memory attached to a dynamic window).
    bases: Vec<u64>,
    /// The size of each member's part.
    sizes: Vec<Aint>,
    /// The members' parts this process mapped (`MPI_Win_shared_query`),
    /// kept while the window lives.
    shared: Mutex<FastMap<u32, Arc<onesided::fabric::Mapping>>>,
    /// A dynamic window's members' attachments, as last asked.
    attachments: Mutex<FastMap<u32, Vec<dynamic::Attached>>>,
    /// The group a window over the program's memory synchronizes at
    /// `MPI_Win_free` (the program frees that memory after it).
    free_barrier: Option<Group>,
    /// The point-to-point context of its notices (post, complete), and
    /// this process's window rank.
    ctx: u64,
    rank: u32,
    /// Its group's job ranks, in window rank order.
    members: Vec<u32>,
    /// The attributes `MPI_Win_get_attr` points to (they live as long as
    /// the entry).
    base: usize,
    size: Aint,
    disp_unit: c_int,
    flavor: c_int,
    model: c_int,
    name: Mutex<String>,
    pub(crate) errhandler: AtomicUsize,
}

/// The window and the epochs open on it.
struct WinState {
    // Declared before the window: they borrow it and end first.
    locks: FastMap<u32, Epoch<'static, Locked>>,
    all: Option<Epoch<'static, Locked>>,
    fence: Option<Epoch<'static, Fenced>>,
    /// The access epoch of `MPI_Win_start`: its targets and their epoch.
    started: Option<(Vec<u32>, Epoch<'static, Locked>)>,
    /// The exposure epoch of `MPI_Win_post`: the receives of its origins'
    /// completion notices.
    posted: Option<Vec<u64>>,
    window: Box<Window>,
}

// SAFETY: a `WinState` is reached only through its entry's mutex, one
// thread at a time, and moves between threads whole (the window and the
// epochs borrowing it together), so the window's cells are never used by
// two threads at once.
unsafe impl Send for WinState {}

impl WinState {
    /// The window, for as long as the state: epochs made from it are kept
    /// in this state, which drops them before the box.
    fn window(&self) -> &'static Window {
        // SAFETY: the box's allocation does not move while the state
        // lives, and every epoch borrowing it is a field of this state
        // declared before `window`, so it ends first (and `free` ends them
        // before taking the window).
        unsafe { &*std::ptr::from_ref::<Window>(&self.window) }
    }

    /// Ends the fence epoch a fence without `MPI_MODE_NOSUCCEED` left
    /// open, here, without the collective: a passive epoch follows (MPI
    /// lets a program lock after such a fence when it made no access
    /// since).
    fn end_fence(&mut self) {
        drop(self.fence.take());
    }

    /// The epoch that covers `target`.
    fn covering(&self, target: u32) -> Result<Access<'_>, Fail> {
        if let Some(e) = self.locks.get(&target) {
            return Ok(Access::Locked(e));
        }
        if let Some(e) = &self.all {
            return Ok(Access::Locked(e));
        }
        if let Some((targets, e)) = &self.started {
            if targets.contains(&target) {
                return Ok(Access::Locked(e));
            }
        }
        match &self.fence {
            Some(e) => Ok(Access::Fenced(e)),
            None => Err(Fail::new(
                err::RMA_SYNC,
                format!("no epoch covers rank {target}"),
            )),
        }
    }
}

/// An epoch that covers a target.
enum Access<'a> {
    Locked(&'a Epoch<'static, Locked>),
    Fenced(&'a Epoch<'static, Fenced>),
}

/// Calls the same method on either kind of epoch.
macro_rules! on_epoch {
    ($access:expr, $e:ident => $body:expr) => {
        match $access {
            Access::Locked($e) => $body,
            Access::Fenced($e) => $body,
        }
    };
}

impl WinEntry {
    fn lock(&self) -> MutexGuard<'_, Option<WinState>> {
        self.state.lock().unwrap_or_else(|p| p.into_inner())
    }

    /// Runs `f` on the live state.
    fn with<R>(&self, f: impl FnOnce(&mut WinState) -> Result<R, Fail>) -> Result<R, Fail> {
        match self.lock().as_mut() {
            Some(state) => f(state),
            None => Err(Fail::new(err::WIN, "the window was freed")),
        }
    }

    /// Window rank `rank`, checked; `None` for `MPI_PROC_NULL`.
    fn rank_of(&self, rank: c_int) -> Result<Option<u32>, Fail> {
        if rank == abi::PROC_NULL {
            return Ok(None);
        }
        (u32::try_from(rank).ok())
            .filter(|&r| (r as usize) < self.disp_units.len())
            .map(Some)
            .ok_or_else(|| {
                let n = self.disp_units.len();
                Fail::new(err::RANK, format!("rank {rank} of a window of {n}"))
            })
    }

    /// Window rank `rank` as a target, and the byte offset of
    /// displacement `disp` there; `None` for `MPI_PROC_NULL`.
    fn target(&self, rank: c_int, disp: Aint) -> Result<Option<(u32, u64)>, Fail> {
        let Some(rank) = self.rank_of(rank)? else {
            return Ok(None);
        };
        let unit = &self.disp_units[rank as usize];
        let disp = u64::try_from(disp)
            .map_err(|_| Fail::new(err::DISP, format!("displacement {disp}")))?;
        if self.flavor == FLAVOR_DYNAMIC {
            // An address in the target process.
            return Ok(Some((rank, self.attached_at(rank, disp, 1)?)));
        }
        let offset = disp
            .checked_mul(*unit as u64)
            .and_then(|o| o.checked_add(self.bases[rank as usize]))
            .ok_or_else(|| Fail::new(err::DISP, format!("displacement {disp}")))?;
        Ok(Some((rank, offset)))
    }
}

/// The assertions onesided takes of `mode` (`NOPUT` and `NOSTORE` are
/// hints it has no use for).
fn assert_of(mode: c_int) -> Result<Assert, Fail> {
    let known = MODE_NOCHECK | MODE_NOPRECEDE | MODE_NOPUT | MODE_NOSTORE | MODE_NOSUCCEED;
    if mode & !known != 0 {
        return Err(Fail::new(err::ASSERT, format!("assertion {mode:#x}")));
    }
    let mut assert = Assert::empty();
    for (bit, flag) in [
        (MODE_NOCHECK, Assert::NOCHECK),
        (MODE_NOPRECEDE, Assert::NOPRECEDE),
        (MODE_NOSUCCEED, Assert::NOSUCCEED),
    ] {
        if mode & bit != 0 {
            assert |= flag;
        }
    }
    Ok(assert)
}

/// A window's layout as the call gave it.
struct Layout {
    size: Aint,
    disp_unit: c_int,
    flavor: c_int,
}

impl Layout {
    /// The window's bytes.
    fn len(&self) -> Result<usize, Fail> {
        if self.disp_unit <= 0 {
            let unit = self.disp_unit;
            return Err(Fail::new(err::DISP, format!("displacement unit {unit}")));
        }
        usize::try_from(self.size).map_err(|_| Fail::new(err::SIZE, format!("size {}", self.size)))
    }
}

/// Makes the window over `c` that `make` opens (given the `Rma`), with the
/// members' displacement units, bases and sizes gathered (one allgather
/// of 3p integers), and writes its handle to `win`; its local memory's
/// address.
///
/// # Safety
/// `win` is valid for a handle.
unsafe fn open(
    c: &CommEntry,
    layout: Layout,
    win: *mut Handle,
    make: impl FnOnce(&onesided::Rma) -> Result<(Window, u64, usize), Fail>,
) -> Result<usize, Fail> {
    let n = c.size() as usize;
    let rma = runtime::with(|r| Ok(r.rma.clone()))?;
    let (window, base, local) = make(&rma)?;
    let mut all = vec![0u64; 3 * n];
    let mine = [layout.disp_unit as u64, base, layout.size as u64];
    c.lock().allgatherv(&mine, &mut all, &vec![3; n])?;
    let program_memory = matches!(layout.flavor, FLAVOR_CREATE | FLAVOR_DYNAMIC);
    let free_barrier = program_memory.then(|| c.objects.clone());
    let ctx = c.objects.tagged(rma.next_context(&c.objects)).key();
    let entry = WinEntry {
        state: Mutex::new(Some(WinState {
            locks: FastMap::default(),
            all: None,
            fence: None,
            started: None,
            posted: None,
            window: Box::new(window),
        })),
        ctx,
        rank: c.rank,
        disp_units: all.iter().step_by(3).map(|&u| u as usize).collect(),
        bases: all.iter().skip(1).step_by(3).copied().collect(),
        sizes: all.iter().skip(2).step_by(3).map(|&s| s as Aint).collect(),
        shared: Mutex::new(FastMap::default()),
        attachments: Mutex::new(FastMap::default()),
        free_barrier,
        members: c.group.members().to_vec(),
        base: local,
        size: layout.size,
        disp_unit: layout.disp_unit,
        flavor: layout.flavor,
        model: UNIFIED,
        name: Mutex::new(String::new()),
        errhandler: AtomicUsize::new(abi::errhandler::ARE_FATAL),
    };
    let handle = runtime::with(|r| Ok(r.windows.insert(Arc::new(entry))))?;
    // SAFETY: as this function's contract.
    unsafe { ptr::write(win, handle, "win") }?;
    Ok(local)
}

mpi! {
    /// Allocates `size` bytes in a window over `comm` (collective: the
    /// members' displacement units are gathered; onesided's window itself
    /// costs no message); `baseptr` is a `void **`.
    fn MPI_Win_allocate / PMPI_Win_allocate(
        size: Aint,
        disp_unit: c_int,
        _info: Handle,
        comm: Handle,
        baseptr: *mut c_void,
        win: *mut Handle,
    ) -> c_int {
        let result = runtime::comm(comm).and_then(|c| {
            let layout = Layout { size, disp_unit, flavor: FLAVOR_ALLOCATE };
            let len = layout.len()?;
            // SAFETY: as the call's contract.
            let base = unsafe {
                open(&c, layout, win, |rma| {
                    let window = rma.allocate(&c.objects, len, RemoteAccess::ReadWrite)?;
                    let local = window.local_ptr().map_or(0, |p| p as usize);
                    Ok((window, 0, local))
                })
            }?;
            // SAFETY: baseptr points to a void * (the call's contract).
            unsafe { ptr::write(baseptr.cast::<*mut c_void>(), base as *mut c_void, "baseptr") }
        });
        finish("MPI_Win_allocate", comm, result)
    }
}

mpi! {
    /// Allocates `size` bytes in a window over `comm`, whose members must
    /// all live on this host, each able to load and store the others'
    /// parts (`MPI_Win_shared_query`). Each part is a mapping of its own:
    /// the parts are not contiguous across ranks (as if
    /// `alloc_shared_noncontig` were given).
    fn MPI_Win_allocate_shared / PMPI_Win_allocate_shared(
        size: Aint,
        disp_unit: c_int,
        _info: Handle,
        comm: Handle,
        baseptr: *mut c_void,
        win: *mut Handle,
    ) -> c_int {
        let result = runtime::comm(comm).and_then(|c| {
            let layout = Layout { size, disp_unit, flavor: FLAVOR_SHARED };
            let len = layout.len()?;
            let here = runtime::with(|r| {
                let ep = r.world.endpoint();
                Ok(c.group.members().iter().all(|&m| ep.ranks().same_machine(m)))
            })?;
            if !here {
                return Err(Fail::new(err::RMA_SHARED, "the members do not all live on this host"));
            }
            // SAFETY: as the call's contract.
            let base = unsafe {
                open(&c, layout, win, |rma| {
                    let window = rma.allocate(&c.objects, len, RemoteAccess::ReadWrite)?;
                    let local = window.local_ptr().map_or(0, |p| p as usize);
                    Ok((window, 0, local))
                })
            }?;
            // SAFETY: baseptr points to a void * (the call's contract).
            unsafe { ptr::write(baseptr.cast::<*mut c_void>(), base as *mut c_void, "baseptr") }
        });
        finish("MPI_Win_allocate_shared", comm, result)
    }
}

mpi! {
    /// The size, displacement unit and address (in this process) of
    /// member `rank`'s part of a shared-memory window; for
    /// `MPI_PROC_NULL`, of the first member whose part is not empty.
    fn MPI_Win_shared_query / PMPI_Win_shared_query(
        win: Handle,
        rank: c_int,
        size: *mut Aint,
        disp_unit: *mut c_int,
        baseptr: *mut c_void,
    ) -> c_int {
        let result = runtime::win(win).and_then(|w| {
            if w.flavor != FLAVOR_SHARED {
                return Err(Fail::new(err::RMA_FLAVOR, "not a shared-memory window"));
            }
            let target = match rank {
                abi::PROC_NULL => w.sizes.iter().position(|&s| s > 0).unwrap_or(0) as u32,
                r => w.rank_of(r)?.unwrap_or(0),
            };
            let address = match target == w.rank {
                true => w.base,
                false => {
                    let mut shared = w.shared.lock().unwrap_or_else(|p| p.into_inner());
                    match shared.get(&target) {
                        Some(m) => m.as_ptr() as usize,
                        None => {
                            let mapping = w.with(|s| Ok(s.window().mapped(target)?))?;
                            let mapping = mapping.ok_or_else(|| {
                                Fail::new(err::RMA_SHARED, format!("rank {target}'s part is not mapped here"))
                            })?;
                            let address = mapping.as_ptr() as usize;
                            shared.insert(target, mapping);
                            address
                        }
                    }
                }
            };
            let t = target as usize;
            // SAFETY: as the call's contract.
            unsafe { ptr::write(size, w.sizes[t], "size") }?;
            // SAFETY: as the call's contract.
            unsafe { ptr::write(disp_unit, w.disp_units[t] as c_int, "disp_unit") }?;
            // SAFETY: baseptr points to a void * (the call's contract).
            unsafe { ptr::write(baseptr.cast::<*mut c_void>(), address as *mut c_void, "baseptr") }
        });
        finish_win("MPI_Win_shared_query", win, result)
    }
}

mpi! {
    /// Makes a window over `size` bytes of the program's memory at `base`
    /// (collective): the memory is registered with the provider and
    /// attached to a dynamic onesided window, so peers reach it through
    /// the provider (no shared mapping); `MPI_Win_free` synchronizes the
    /// members before the program may free it.
    fn MPI_Win_create / PMPI_Win_create(
        base: *mut c_void,
        size: Aint,
        disp_unit: c_int,
        _info: Handle,
        comm: Handle,
        win: *mut Handle,
    ) -> c_int {
        let result = runtime::comm(comm).and_then(|c| {
            let layout = Layout { size, disp_unit, flavor: FLAVOR_CREATE };
            let len = layout.len()?;
            if base.is_null() && len > 0 {
                return Err(Fail::new(err::BUFFER, "base is NULL"));
            }
            let make = |rma: &onesided::Rma| {
                let window = rma.create_dynamic(&c.objects)?;
                let access = onesided::fabric::Access::REMOTE_READ | onesided::fabric::Access::REMOTE_WRITE;
                // SAFETY: the program's window memory, valid until
                // MPI_Win_free (MPI's rule), which synchronizes the members
                // before returning.
                let region = unsafe { rma.endpoint().register_external((base.cast(), len), access) }?;
                let at = window.attach(Arc::new(region))?;
                Ok((window, at, base as usize))
            };
            // SAFETY: as the call's contract.
            unsafe { open(&c, layout, win, make) }?;
            Ok(())
        });
        finish("MPI_Win_create", comm, result)
    }
}

mpi! {
    /// Frees a window (no epoch may be open but the fence's); the handle
    /// becomes `MPI_WIN_NULL`.
    fn MPI_Win_free / PMPI_Win_free(win: *mut Handle) -> c_int {
        // SAFETY: as the call's contract.
        let handle = unsafe { ptr::read(win, "win") }.unwrap_or(0);
        let result = runtime::win(handle).and_then(|w| {
            let state = {
                let mut guard = w.lock();
                let busy = |s: &WinState| {
                    !s.locks.is_empty() || s.all.is_some() || s.started.is_some() || s.posted.is_some()
                };
                if guard.as_ref().is_some_and(busy) {
                    return Err(Fail::new(err::RMA_SYNC, "a lock or post/start epoch is still open"));
                }
                guard.take()
            };
            let Some(WinState { locks, all, fence, started, posted, window }) = state else {
                return Err(Fail::new(err::WIN, "the window was freed"));
            };
            // A fence epoch still open (the last fence without
            // MPI_MODE_NOSUCCEED) ends here without a collective: members
            // that locked since have ended theirs already.
            drop((locks, all, fence, started, posted));
            runtime::with(|r| Ok(r.windows.remove(handle)))?;
            runtime::forget_lookups();
            dynamic::forget(w.ctx);
            let freed = window.free();
            if let Some(group) = &w.free_barrier {
                let rma = runtime::with(|r| Ok(r.rma.clone()))?;
                let mut barrier = rma.ibarrier(group)?;
                onesided::Request::wait(&mut barrier)?;
            }
            freed?;
            // SAFETY: as the call's contract.
            unsafe { ptr::write(win, abi::WIN_NULL, "win") }
        });
        finish_win("MPI_Win_free", handle, result)
    }
}

mpi! {
    /// Opens a passive-target epoch on `rank`.
    fn MPI_Win_lock / PMPI_Win_lock(lock_type: c_int, rank: c_int, assert: c_int, win: Handle) -> c_int {
        let result = runtime::win(win).and_then(|w| {
            let kind = match lock_type {
                LOCK_EXCLUSIVE => LockKind::Exclusive,
                LOCK_SHARED => LockKind::Shared,
                _ => return Err(Fail::new(err::LOCKTYPE, format!("lock type {lock_type}"))),
            };
            let assert = assert_of(assert)?;
            let Some(target) = w.rank_of(rank)? else {
                return Ok(());
            };
            w.with(|s| {
                if s.locks.contains_key(&target) || s.all.is_some() {
                    return Err(Fail::new(err::RMA_SYNC, format!("rank {rank} is locked already")));
                }
                s.end_fence();
                let epoch = s.window().lock(target, kind, assert)?;
                s.locks.insert(target, epoch);
                Ok(())
            })
        });
        finish_win("MPI_Win_lock", win, result)
    }
}

mpi! {
    /// Closes the passive-target epoch on `rank`: its accesses are done
    /// at the target.
    fn MPI_Win_unlock / PMPI_Win_unlock(rank: c_int, win: Handle) -> c_int {
        let result = runtime::win(win).and_then(|w| {
            let Some(target) = w.rank_of(rank)? else {
                return Ok(());
            };
            let epoch = w.with(|s| {
                s.locks.remove(&target)
                    .ok_or_else(|| Fail::new(err::RMA_SYNC, format!("rank {rank} is not locked")))
            })?;
            Ok(epoch.unlock()?)
        });
        finish_win("MPI_Win_unlock", win, result)
    }
}

mpi! {
    /// Opens a passive-target epoch on every member.
    fn MPI_Win_lock_all / PMPI_Win_lock_all(assert: c_int, win: Handle) -> c_int {
        let result = runtime::win(win).and_then(|w| {
            let assert = assert_of(assert)?;
            w.with(|s| {
                if s.all.is_some() || !s.locks.is_empty() {
                    return Err(Fail::new(err::RMA_SYNC, "a lock epoch is open already"));
                }
                s.end_fence();
                s.all = Some(s.window().lock_all(assert)?);
                Ok(())
            })
        });
        finish_win("MPI_Win_lock_all", win, result)
    }
}

mpi! {
    /// Closes the epoch of `MPI_Win_lock_all`.
    fn MPI_Win_unlock_all / PMPI_Win_unlock_all(win: Handle) -> c_int {
        let result = runtime::win(win).and_then(|w| {
            let epoch = w.with(|s| {
                s.all.take().ok_or_else(|| Fail::new(err::RMA_SYNC, "no lock_all epoch is open"))
            })?;
            Ok(epoch.unlock()?)
        });
        finish_win("MPI_Win_unlock_all", win, result)
    }
}

mpi! {
    /// A fence: closes the fence epoch open (its accesses done
    /// everywhere) and opens the next, unless `MPI_MODE_NOSUCCEED`.
    fn MPI_Win_fence / PMPI_Win_fence(assert: c_int, win: Handle) -> c_int {
        let result = runtime::win(win).and_then(|w| {
            let assert = assert_of(assert)?;
            let last = assert.contains(Assert::NOSUCCEED);
            let rest = assert - Assert::NOSUCCEED;
            let open = w.with(|s| {
                if !s.locks.is_empty() || s.all.is_some() {
                    return Err(Fail::new(err::RMA_SYNC, "a lock epoch is open"));
                }
                Ok(s.fence.take())
            })?;
            match (open, last) {
                (Some(epoch), true) => epoch.end(assert)?,
                (Some(mut epoch), false) => {
                    epoch.fence(rest)?;
                    w.with(|s| {
                        s.fence = Some(epoch);
                        Ok(())
                    })?;
                }
                (None, true) => {
                    let epoch = w.with(|s| Ok(s.window().fence(rest)?))?;
                    epoch.end(assert)?;
                }
                (None, false) => {
                    w.with(|s| {
                        s.fence = Some(s.window().fence(rest)?);
                        Ok(())
                    })?;
                }
            }
            Ok(())
        });
        finish_win("MPI_Win_fence", win, result)
    }
}

/// The bytes of an origin and a target buffer, which must match.
fn matching(
    (ocount, otype): (c_int, Handle),
    (tcount, ttype): (c_int, Handle),
) -> Result<usize, Fail> {
    let (origin, target) = (
        datatype::bytes(ocount, otype)?,
        datatype::bytes(tcount, ttype)?,
    );
    match origin == target {
        true => Ok(origin),
        false => Err(Fail::new(
            err::TYPE,
            format!("{origin} origin bytes for {target} at the target"),
        )),
    }
}

/// Whether an access moves plain bytes: both datatypes contiguous.
fn contiguous(otype: Handle, ttype: Handle) -> bool {
    [otype, ttype].iter().all(|&t| {
        datatype::predefined(t).is_some() || derived::committed(t).is_ok_and(|m| m.is_dense())
    })
}

/// The bytes of an access at the target, in type-map order: runs of
/// `(offset, len)` from byte `offset` for `count` elements of
/// `datatype`, checked against `target`'s part (nothing moves when one
/// lies outside it).
fn target_runs(
    w: &WinEntry,
    (target, offset): (u32, u64),
    (count, datatype): (c_int, Handle),
) -> Result<Vec<(u64, usize)>, Fail> {
    let map = derived::committed(datatype)?;
    let n = usize::try_from(count).map_err(|_| Fail::new(err::COUNT, format!("count {count}")))?;
    let mut runs = Vec::with_capacity(map.runs.len() * n);
    let (base, size) = (
        w.bases[target as usize] as i128,
        w.sizes[target as usize] as i128,
    );
    // A dynamic window's attachments are checked by onesided.
    let checked = w.flavor != FLAVOR_DYNAMIC;
    for i in 0..n {
        for run in &map.runs {
            let at = offset as i128 + i as i128 * map.extent() as i128 + run.at as i128;
            if checked && (at < base || at + run.len as i128 > base + size) {
                let what = format!(
                    "{} bytes at {} of rank {target}'s {size}",
                    run.len,
                    at - base
                );
                return Err(Fail::new(err::RMA_RANGE, what));
            }
            runs.push((at as u64, run.len));
        }
    }
    Ok(runs)
}

/// An access whose datatypes are not both contiguous: the origin packed
/// (`MPI_Put`) or unpacked (`MPI_Get`), one access per run at the target.
///
/// # Safety
/// The origin buffer is valid for its elements (for writes when `put`
/// is false).
unsafe fn scattered(
    w: &WinEntry,
    (origin, ocount, otype): (*mut c_void, c_int, Handle),
    (target_rank, target_disp, tcount, ttype): (c_int, Aint, c_int, Handle),
    put: bool,
) -> Result<(), Fail> {
    let omap = derived::committed(otype)?;
    let on =
        usize::try_from(ocount).map_err(|_| Fail::new(err::COUNT, format!("count {ocount}")))?;
    let Some(at) = w.target(target_rank, target_disp)? else {
        return Ok(());
    };
    let runs = target_runs(w, at, (tcount, ttype))?;
    let total: usize = runs.iter().map(|r| r.1).sum();
    if total != omap.size * on {
        let what = format!("{} origin bytes for {total} at the target", omap.size * on);
        return Err(Fail::new(err::TYPE, what));
    }
    let target = at.0;
    let mut data = match put {
        // SAFETY: as this function's contract.
        true => unsafe { derived::pack(&omap, origin.cast(), on) },
        false => vec![0u8; total],
    };
    w.with(|s| {
        let mut from = 0;
        for &(offset, len) in &runs {
            let part = &mut data[from..from + len];
            match put {
                true => on_epoch!(s.covering(target)?, e => e.put(target, offset, &*part))?,
                false => on_epoch!(s.covering(target)?, e => e.get(target, offset, part))?,
            }
            from += len;
        }
        Ok(())
    })?;
    if !put {
        // SAFETY: as this function's contract.
        unsafe { derived::unpack(&omap, &data, origin.cast(), on) };
    }
    Ok(())
}

mpi! {
    /// Writes the origin buffer at displacement `target_disp` of rank
    /// `target_rank`.
    fn MPI_Put / PMPI_Put(
        origin_addr: *const c_void,
        origin_count: c_int,
        origin_datatype: Handle,
        target_rank: c_int,
        target_disp: Aint,
        target_count: c_int,
        target_datatype: Handle,
        win: Handle,
    ) -> c_int {
        let result = runtime::win(win).and_then(|w| {
            if !contiguous(origin_datatype, target_datatype) {
                let origin = (origin_addr.cast_mut(), origin_count, origin_datatype);
                let target = (target_rank, target_disp, target_count, target_datatype);
                // SAFETY: as the call's contract.
                return unsafe { scattered(&w, origin, target, true) };
            }
            let len = matching((origin_count, origin_datatype), (target_count, target_datatype))?;
            let Some((target, offset)) = w.target(target_rank, target_disp)? else {
                return Ok(());
            };
            // SAFETY: origin_count elements at origin_addr (the call's contract).
            let data = unsafe { ptr::slice(origin_addr.cast::<u8>(), len, "origin_addr") }?;
            w.with(|s| Ok(on_epoch!(s.covering(target)?, e => e.put(target, offset, data))?))
        });
        finish_win("MPI_Put", win, result)
    }
}

mpi! {
    /// Reads from displacement `target_disp` of rank `target_rank` into
    /// the origin buffer (complete at the epoch's end or a flush).
    fn MPI_Get / PMPI_Get(
        origin_addr: *mut c_void,
        origin_count: c_int,
        origin_datatype: Handle,
        target_rank: c_int,
        target_disp: Aint,
        target_count: c_int,
        target_datatype: Handle,
        win: Handle,
    ) -> c_int {
        let result = runtime::win(win).and_then(|w| {
            if !contiguous(origin_datatype, target_datatype) {
                let origin = (origin_addr, origin_count, origin_datatype);
                let target = (target_rank, target_disp, target_count, target_datatype);
                // SAFETY: as the call's contract.
                return unsafe { scattered(&w, origin, target, false) };
            }
            let len = matching((origin_count, origin_datatype), (target_count, target_datatype))?;
            let Some((target, offset)) = w.target(target_rank, target_disp)? else {
                return Ok(());
            };
            // SAFETY: origin_count elements at origin_addr (the call's contract).
            let buf = unsafe { ptr::slice_mut(origin_addr.cast::<u8>(), len, "origin_addr") }?;
            w.with(|s| Ok(on_epoch!(s.covering(target)?, e => e.get(target, offset, buf))?))
        });
        finish_win("MPI_Get", win, result)
    }
}

/// `op` as an atomic operation of onesided.
fn atomic_op<T>(op: Handle) -> Result<Op<T>, Fail> {
    Ok(match op {
        abi::op::SUM => Op::SUM,
        abi::op::MIN => Op::MIN,
        abi::op::MAX => Op::MAX,
        abi::op::REPLACE => Op::REPLACE,
        abi::op::NO_OP => Op::NO_OP,
        _ => {
            return Err(Fail::new(
                err::OP,
                format!("operation {op:#x} in an accumulate (onesided's atomics take SUM, MIN, MAX, REPLACE and NO_OP)"),
            ))
        }
    })
}

/// An accumulate's buffers and operation.
#[derive(Clone, Copy)]
struct Atomic {
    origin: *const c_void,
    result: *mut c_void,
    compare: *const c_void,
    count: usize,
    target: u32,
    offset: u64,
    op: Handle,
}

/// The accesses an atomic call makes, on elements of `T`.
#[derive(Clone, Copy, PartialEq, Eq)]
enum AtomicKind {
    Accumulate,
    Fetch,
    CompareSwap,
}

/// Runs atomic `a` of `kind` on `access` with elements of `T`.
///
/// # Safety
/// `a`'s origin, result and compare buffers are valid for `count`
/// elements of `T` where the kind uses them.
unsafe fn atomic_as<T: Element>(
    access: Access<'_>,
    a: &Atomic,
    kind: AtomicKind,
) -> Result<(), Fail> {
    let size = size_of::<T>() as u64;
    match kind {
        AtomicKind::Accumulate => {
            // SAFETY: as this function's contract.
            let values = unsafe { ptr::slice(a.origin.cast::<T>(), a.count, "origin_addr") }?;
            let op = atomic_op::<T>(a.op)?;
            on_epoch!(access, e => e.accumulate(a.target, a.offset, values, op))?;
        }
        AtomicKind::Fetch => {
            // SAFETY: as this function's contract (NO_OP reads no origin).
            let values = match a.op {
                abi::op::NO_OP => None,
                _ => Some(unsafe { ptr::slice(a.origin.cast::<T>(), a.count, "origin_addr") }?),
            };
            // SAFETY: as this function's contract.
            let out = unsafe { ptr::slice_mut(a.result.cast::<T>(), a.count, "result_addr") }?;
            for (i, o) in out.iter_mut().enumerate() {
                let v = values.map_or(T::zeroed(), |v| v[i]);
                let at = a.offset + i as u64 * size;
                let op = atomic_op::<T>(a.op)?;
                *o = on_epoch!(access, e => e.fetch_and_op(a.target, at, v, op))?;
            }
        }
        AtomicKind::CompareSwap => {
            // SAFETY: as this function's contract (one element each).
            let new = unsafe { ptr::read(a.origin.cast::<T>(), "origin_addr") }?;
            // SAFETY: as above.
            let compare = unsafe { ptr::read(a.compare.cast::<T>(), "compare_addr") }?;
            let old = on_epoch!(access, e => e.compare_and_swap(a.target, a.offset, compare, new))?;
            // SAFETY: as above.
            unsafe { ptr::write(a.result.cast::<T>(), old, "result_addr") }?;
        }
    }
    Ok(())
}

/// Runs atomic `a` of `kind` on window `w` for `datatype`.
///
/// # Safety
/// As [`atomic_as`], for the datatype's elements.
unsafe fn atomic(w: &WinEntry, a: &Atomic, kind: AtomicKind, datatype: Handle) -> Result<(), Fail> {
    let (per, _, element) = datatype::reducible(datatype)?;
    let count = (a.count.checked_mul(per))
        .ok_or_else(|| Fail::new(err::COUNT, format!("count {}", a.count)))?;
    let a = &Atomic { count, ..*a };
    w.with(|s| {
        let access = s.covering(a.target)?;
        // SAFETY: as this function's contract, for the datatype's Rust type.
        unsafe {
            by_element!(element, T => atomic_as::<T>(access, a, kind), Err(Fail::new(err::TYPE, format!("atomics on datatype {datatype:#x}"))))
        }
    })
}

mpi! {
    /// Combines the origin buffer into the target's by `op`, element by
    /// element atomically.
    fn MPI_Accumulate / PMPI_Accumulate(
        origin_addr: *const c_void,
        origin_count: c_int,
        origin_datatype: Handle,
        target_rank: c_int,
        target_disp: Aint,
        target_count: c_int,
        target_datatype: Handle,
        op: Handle,
        win: Handle,
    ) -> c_int {
        let result = runtime::win(win).and_then(|w| {
            matching((origin_count, origin_datatype), (target_count, target_datatype))?;
            let Some((target, offset)) = w.target(target_rank, target_disp)? else {
                return Ok(());
            };
            let count = origin_count as usize;
            let a = Atomic { origin: origin_addr, result: std::ptr::null_mut(), compare: std::ptr::null(), count, target, offset, op };
            // SAFETY: origin_count elements at origin_addr (the call's contract).
            unsafe { atomic(&w, &a, AtomicKind::Accumulate, origin_datatype) }
        });
        finish_win("MPI_Accumulate", win, result)
    }
}

mpi! {
    /// Fetches the target's elements into the result buffer and combines
    /// the origin's into them by `op`, element by element atomically.
    fn MPI_Get_accumulate / PMPI_Get_accumulate(
        origin_addr: *const c_void,
        origin_count: c_int,
        origin_datatype: Handle,
        result_addr: *mut c_void,
        result_count: c_int,
        result_datatype: Handle,
        target_rank: c_int,
        target_disp: Aint,
        target_count: c_int,
        target_datatype: Handle,
        op: Handle,
        win: Handle,
    ) -> c_int {
        let result = runtime::win(win).and_then(|w| {
            matching((result_count, result_datatype), (target_count, target_datatype))?;
            if op != abi::op::NO_OP {
                matching((origin_count, origin_datatype), (target_count, target_datatype))?;
            }
            let Some((target, offset)) = w.target(target_rank, target_disp)? else {
                return Ok(());
            };
            let count = result_count as usize;
            let a = Atomic { origin: origin_addr, result: result_addr, compare: std::ptr::null(), count, target, offset, op };
            // SAFETY: the buffers hold their counts (the call's contract).
            unsafe { atomic(&w, &a, AtomicKind::Fetch, result_datatype) }
        });
        finish_win("MPI_Get_accumulate", win, result)
    }
}

mpi! {
    /// One element of `MPI_Get_accumulate`.
    fn MPI_Fetch_and_op / PMPI_Fetch_and_op(
        origin_addr: *const c_void,
        result_addr: *mut c_void,
        datatype: Handle,
        target_rank: c_int,
        target_disp: Aint,
        op: Handle,
        win: Handle,
    ) -> c_int {
        let result = runtime::win(win).and_then(|w| {
            let Some((target, offset)) = w.target(target_rank, target_disp)? else {
                return Ok(());
            };
            let a = Atomic { origin: origin_addr, result: result_addr, compare: std::ptr::null(), count: 1, target, offset, op };
            // SAFETY: one element in each buffer (the call's contract).
            unsafe { atomic(&w, &a, AtomicKind::Fetch, datatype) }
        });
        finish_win("MPI_Fetch_and_op", win, result)
    }
}

mpi! {
    /// Replaces the target's element by the origin's when it equals the
    /// compare element; the old one goes to the result buffer.
    fn MPI_Compare_and_swap / PMPI_Compare_and_swap(
        origin_addr: *const c_void,
        compare_addr: *const c_void,
        result_addr: *mut c_void,
        datatype: Handle,
        target_rank: c_int,
        target_disp: Aint,
        win: Handle,
    ) -> c_int {
        let result = runtime::win(win).and_then(|w| {
            let Some((target, offset)) = w.target(target_rank, target_disp)? else {
                return Ok(());
            };
            let a = Atomic { origin: origin_addr, result: result_addr, compare: compare_addr, count: 1, target, offset, op: abi::op::REPLACE };
            // SAFETY: one element in each buffer (the call's contract).
            unsafe { atomic(&w, &a, AtomicKind::CompareSwap, datatype) }
        });
        finish_win("MPI_Compare_and_swap", win, result)
    }
}

/// Ends a request-based access: `access` made it (an error code from
/// it is returned as it is), then `how` completes it, and the request
/// is complete from the start (onesided's accesses need no request:
/// MPI allows these only in passive-target epochs, where a flush does).
///
/// # Safety
/// `request` is null or valid for a handle.
unsafe fn completed(
    call: &str,
    (win, rank): (Handle, c_int),
    access: c_int,
    how: Flush,
    request: *mut Handle,
) -> c_int {
    if access != err::SUCCESS {
        return access;
    }
    let result = flush(win, Some(rank), how).and_then(|()| {
        let handle = crate::request::start(crate::request::Pending::done())?;
        // SAFETY: as this function's contract.
        unsafe { ptr::write(request, handle, "request") }
    });
    finish_win(call, win, result)
}

mpi! {
    /// `MPI_Put` with a request, complete once the origin buffer may be
    /// reused.
    fn MPI_Rput / PMPI_Rput(
        origin_addr: *const c_void,
        origin_count: c_int,
        origin_datatype: Handle,
        target_rank: c_int,
        target_disp: Aint,
        target_count: c_int,
        target_datatype: Handle,
        win: Handle,
        request: *mut Handle,
    ) -> c_int {
        // SAFETY: the call's contract, passed on.
        let access = unsafe { PMPI_Put(origin_addr, origin_count, origin_datatype, target_rank, target_disp, target_count, target_datatype, win) };
        // SAFETY: as the call's contract.
        unsafe { completed("MPI_Rput", (win, target_rank), access, Flush::Local, request) }
    }
}

mpi! {
    /// `MPI_Get` with a request, complete once the data arrived.
    fn MPI_Rget / PMPI_Rget(
        origin_addr: *mut c_void,
        origin_count: c_int,
        origin_datatype: Handle,
        target_rank: c_int,
        target_disp: Aint,
        target_count: c_int,
        target_datatype: Handle,
        win: Handle,
        request: *mut Handle,
    ) -> c_int {
        // SAFETY: the call's contract, passed on.
        let access = unsafe { PMPI_Get(origin_addr, origin_count, origin_datatype, target_rank, target_disp, target_count, target_datatype, win) };
        // SAFETY: as the call's contract.
        unsafe { completed("MPI_Rget", (win, target_rank), access, Flush::Remote, request) }
    }
}

mpi! {
    /// `MPI_Accumulate` with a request, complete once the origin buffer
    /// may be reused.
    fn MPI_Raccumulate / PMPI_Raccumulate(
        origin_addr: *const c_void,
        origin_count: c_int,
        origin_datatype: Handle,
        target_rank: c_int,
        target_disp: Aint,
        target_count: c_int,
        target_datatype: Handle,
        op: Handle,
        win: Handle,
        request: *mut Handle,
    ) -> c_int {
        // SAFETY: the call's contract, passed on.
        let access = unsafe { PMPI_Accumulate(origin_addr, origin_count, origin_datatype, target_rank, target_disp, target_count, target_datatype, op, win) };
        // SAFETY: as the call's contract.
        unsafe { completed("MPI_Raccumulate", (win, target_rank), access, Flush::Local, request) }
    }
}

mpi! {
    /// `MPI_Get_accumulate` with a request, complete once the result
    /// arrived.
    fn MPI_Rget_accumulate / PMPI_Rget_accumulate(
        origin_addr: *const c_void,
        origin_count: c_int,
        origin_datatype: Handle,
        result_addr: *mut c_void,
        result_count: c_int,
        result_datatype: Handle,
        target_rank: c_int,
        target_disp: Aint,
        target_count: c_int,
        target_datatype: Handle,
        op: Handle,
        win: Handle,
        request: *mut Handle,
    ) -> c_int {
        // SAFETY: the call's contract, passed on.
        let access = unsafe {
            PMPI_Get_accumulate(origin_addr, origin_count, origin_datatype, result_addr, result_count, result_datatype, target_rank, target_disp, target_count, target_datatype, op, win)
        };
        // SAFETY: as the call's contract.
        unsafe { completed("MPI_Rget_accumulate", (win, target_rank), access, Flush::Remote, request) }
    }
}

/// What a flush completes.
#[derive(Clone, Copy)]
enum Flush {
    /// At the target.
    Remote,
    /// At the origin (buffers reusable).
    Local,
}

/// Flushes `rank` (every target when `None`) of window `win`.
fn flush(win: Handle, rank: Option<c_int>, how: Flush) -> Result<(), Fail> {
    let w = runtime::win(win)?;
    let target = match rank {
        Some(rank) => match w.rank_of(rank)? {
            Some(t) => Some(t),
            None => return Ok(()),
        },
        None => None,
    };
    let outside = || Fail::new(err::RMA_SYNC, "a flush outside a passive-target epoch");
    w.with(|s| {
        let Some(t) = target else {
            let mut any = false;
            for e in s.locks.values().chain(s.all.as_ref()) {
                any = true;
                e.flush_all()?;
            }
            return if any { Ok(()) } else { Err(outside()) };
        };
        match (s.covering(t)?, how) {
            (Access::Locked(e), Flush::Remote) => Ok(e.flush(t)?),
            (Access::Locked(e), Flush::Local) => Ok(e.flush_local(t)?),
            (Access::Fenced(_), _) => Err(outside()),
        }
    })
}

mpi! {
    /// Completes the accesses to `rank` at the target.
    fn MPI_Win_flush / PMPI_Win_flush(rank: c_int, win: Handle) -> c_int {
        finish_win("MPI_Win_flush", win, flush(win, Some(rank), Flush::Remote))
    }
}

mpi! {
    /// Completes every access at its target.
    fn MPI_Win_flush_all / PMPI_Win_flush_all(win: Handle) -> c_int {
        finish_win("MPI_Win_flush_all", win, flush(win, None, Flush::Remote))
    }
}

mpi! {
    /// Completes the accesses to `rank` at the origin.
    fn MPI_Win_flush_local / PMPI_Win_flush_local(rank: c_int, win: Handle) -> c_int {
        finish_win("MPI_Win_flush_local", win, flush(win, Some(rank), Flush::Local))
    }
}

mpi! {
    /// Completes every access at the origin (here: at the target).
    fn MPI_Win_flush_local_all / PMPI_Win_flush_local_all(win: Handle) -> c_int {
        finish_win("MPI_Win_flush_local_all", win, flush(win, None, Flush::Local))
    }
}

mpi! {
    /// Synchronizes the public and private copies: one copy here (the
    /// unified model), so a memory barrier.
    fn MPI_Win_sync / PMPI_Win_sync(win: Handle) -> c_int {
        let result = runtime::win(win).map(|_| std::sync::atomic::fence(Ordering::SeqCst));
        finish_win("MPI_Win_sync", win, result)
    }
}

mpi! {
    /// A window's attribute (`MPI_WIN_BASE`, `MPI_WIN_SIZE`,
    /// `MPI_WIN_DISP_UNIT`, `MPI_WIN_CREATE_FLAVOR`, `MPI_WIN_MODEL`);
    /// `attribute_val` is a `void *` set to the base, or to the value's
    /// address.
    fn MPI_Win_get_attr / PMPI_Win_get_attr(
        win: Handle,
        keyval: c_int,
        attribute_val: *mut c_void,
        flag: *mut c_int,
    ) -> c_int {
        let result = runtime::win(win).and_then(|w| {
            let value: *const c_void = match keyval {
                WIN_BASE => w.base as *const c_void,
                WIN_SIZE => std::ptr::from_ref(&w.size).cast(),
                WIN_DISP_UNIT => std::ptr::from_ref(&w.disp_unit).cast(),
                WIN_CREATE_FLAVOR => std::ptr::from_ref(&w.flavor).cast(),
                WIN_MODEL => std::ptr::from_ref(&w.model).cast(),
                _ => return Err(Fail::new(err::KEYVAL, format!("attribute key {keyval}"))),
            };
            // The entry lives in the table until freed, so do its fields.
            let at = attribute_val.cast::<*const c_void>();
            // SAFETY: attribute_val points to a void * (the call's contract).
            unsafe { ptr::write(at, value, "attribute_val") }?;
            // SAFETY: as the call's contract.
            unsafe { ptr::write(flag, 1, "flag") }
        });
        finish_win("MPI_Win_get_attr", win, result)
    }
}

mpi! {
    /// The group of a window.
    fn MPI_Win_get_group / PMPI_Win_get_group(win: Handle, group: *mut Handle) -> c_int {
        let result = runtime::win(win).and_then(|w| {
            let handle = runtime::with(|r| Ok(r.groups.insert(w.members.clone())))?;
            // SAFETY: as the call's contract.
            unsafe { ptr::write(group, handle, "group") }
        });
        finish_win("MPI_Win_get_group", win, result)
    }
}

mpi! {
    /// Names a window.
    fn MPI_Win_set_name / PMPI_Win_set_name(win: Handle, name: *const c_char) -> c_int {
        let result = runtime::win(win).and_then(|w| {
            // SAFETY: a NUL-terminated string (the call's contract).
            let text = unsafe { ptr::read_name(name) }?;
            *w.name.lock().unwrap_or_else(|p| p.into_inner()) = text;
            Ok(())
        });
        finish_win("MPI_Win_set_name", win, result)
    }
}

mpi! {
    /// A window's name (empty when none was set).
    fn MPI_Win_get_name / PMPI_Win_get_name(win: Handle, name: *mut c_char, resultlen: *mut c_int) -> c_int {
        let result = runtime::win(win).and_then(|w| {
            let text = w.name.lock().unwrap_or_else(|p| p.into_inner()).clone();
            // SAFETY: a buffer of MPI_MAX_OBJECT_NAME (the call's contract).
            unsafe { ptr::write_text(name, resultlen, &text, abi::MAX_OBJECT_NAME) }
        });
        finish_win("MPI_Win_get_name", win, result)
    }
}

mpi! {
    /// Sets the error handler of a window.
    fn MPI_Win_set_errhandler / PMPI_Win_set_errhandler(win: Handle, errhandler: Handle) -> c_int {
        let result = runtime::win(win).and_then(|w| {
            runtime::with(|r| match r.errhandlers.get(errhandler) {
                Some(_) => Ok(()),
                None => Err(Fail::new(err::ERRHANDLER, format!("invalid error handler {errhandler:#x}"))),
            })?;
            w.errhandler.store(errhandler, Ordering::Relaxed);
            Ok(())
        });
        finish_win("MPI_Win_set_errhandler", win, result)
    }
}

mpi! {
    /// The error handler of a window.
    fn MPI_Win_get_errhandler / PMPI_Win_get_errhandler(win: Handle, errhandler: *mut Handle) -> c_int {
        let result = runtime::win(win).and_then(|w| {
            // SAFETY: as the call's contract.
            unsafe { ptr::write(errhandler, w.errhandler.load(Ordering::Relaxed), "errhandler") }
        });
        finish_win("MPI_Win_get_errhandler", win, result)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn assertions_map_to_onesided_and_hints_are_ignored() {
        assert_eq!(assert_of(0).unwrap(), Assert::empty());
        assert_eq!(
            assert_of(MODE_NOCHECK | MODE_NOPUT).unwrap(),
            Assert::NOCHECK
        );
        assert_eq!(
            assert_of(MODE_NOPRECEDE | MODE_NOSUCCEED | MODE_NOSTORE).unwrap(),
            Assert::NOPRECEDE | Assert::NOSUCCEED
        );
        assert_eq!(assert_of(1).map_err(|f| f.class), Err(err::ASSERT));
    }
}
