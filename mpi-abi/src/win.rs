//! Windows and RMA: windows of every flavor (`MPI_Win_allocate` on
//! onesided's windows, which cost no message to make; `create` over the
//! program's memory; `allocate_shared`; `create_dynamic` in
//! `dynamic.rs`), their epochs (lock, lock_all, fence; post/start in
//! `pscw.rs`), flushes, attributes and names; the accesses, with
//! displacement units, in `access.rs`.
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

/// Allocates a window of onesided's memory over `c` (its part on this
/// host is shared memory) and writes its base to `baseptr`, a `void **`.
///
/// # Safety
/// `baseptr` and `win` are valid (`MPI_Win_allocate`'s contract).
unsafe fn allocate(
    c: &CommEntry,
    layout: Layout,
    baseptr: *mut c_void,
    win: *mut Handle,
) -> Result<(), Fail> {
    let len = layout.len()?;
    let make = |rma: &onesided::Rma| {
        let window = rma.allocate(&c.objects, len, RemoteAccess::ReadWrite)?;
        let local = window.local_ptr().map_or(0, |p| p as usize);
        Ok((window, 0, local))
    };
    // SAFETY: as this function's contract.
    let base = unsafe { open(c, layout, win, make) }?;
    // SAFETY: as this function's contract.
    unsafe {
        ptr::write(
            baseptr.cast::<*mut c_void>(),
            base as *mut c_void,
            "baseptr",
        )
    }
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
            // SAFETY: as the call's contract.
            unsafe { allocate(&c, layout, baseptr, win) }
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
            let here = runtime::with(|r| {
                let ep = r.world.endpoint();
                Ok(c.group.members().iter().all(|&m| ep.ranks().same_machine(m)))
            })?;
            if !here {
                return Err(Fail::new(err::RMA_SHARED, "the members do not all live on this host"));
            }
            // SAFETY: as the call's contract.
            unsafe { allocate(&c, layout, baseptr, win) }
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

mod access;

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
