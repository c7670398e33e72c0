//! The process's MPI state, made by `MPI_Init` and ended by
//! `MPI_Finalize`: the `World`, its `Rma`, and the tables of
//! communicators, groups, error handlers, windows, requests, info
//! objects, operations and datatypes. One lock guards the tables
//! and is held only to look a handle up or change a table; a
//! communicator's calls lock that communicator alone.

use std::cell::RefCell;
use std::ffi::c_int;
use std::sync::atomic::{AtomicU32, AtomicU64, AtomicU8, AtomicUsize, Ordering};
use std::sync::{Arc, Mutex, MutexGuard, Weak};

use onesided::rma::Group;
use onesided::{Comm, Rma, World};

use crate::abi::{self, err, Handle};
use crate::derived::Derived;
use crate::errors::{Errhandler, Fail};
use crate::info::Info;
use crate::op::UserOp;
use crate::request::Pending;
use crate::table::Table;
use crate::win::WinEntry;

/// Where the process stands.
const BEFORE: u8 = 0;
const RUNNING: u8 = 1;
const AFTER: u8 = 2;
static STAGE: AtomicU8 = AtomicU8::new(BEFORE);

/// The thread level granted by `MPI_Init_thread`.
pub(crate) static THREAD_LEVEL: AtomicUsize = AtomicUsize::new(0);

static RUNTIME: Mutex<Option<Runtime>> = Mutex::new(None);

/// The MPI state of the process.
pub(crate) struct Runtime {
    pub(crate) world: World,
    pub(crate) rma: Rma,
    pub(crate) comms: Table<Arc<CommEntry>>,
    /// Groups by their members' job ranks, in group order.
    pub(crate) groups: Table<Vec<u32>>,
    pub(crate) errhandlers: Table<Errhandler>,
    pub(crate) windows: Table<Arc<WinEntry>>,
    pub(crate) requests: Table<Pending>,
    pub(crate) infos: Table<Info>,
    pub(crate) ops: Table<UserOp>,
    pub(crate) types: Table<Derived>,
    /// Messages matched probes took (`MPI_Message`).
    pub(crate) messages: Table<crate::p2p::Matched>,
}

/// A communicator: its collectives, its group (job ranks, in its rank
/// order) and its error handler.
pub(crate) struct CommEntry {
    pub(crate) comm: Mutex<Comm>,
    pub(crate) group: Group,
    /// The group tagged for this communicator: its windows are numbered
    /// apart from other communicators' over the same members (whose
    /// creations MPI does not order against this one's).
    pub(crate) objects: Group,
    /// Its rank.
    pub(crate) rank: u32,
    pub(crate) errhandler: AtomicUsize,
    /// How many reductions by a program's operation on a derived
    /// datatype it started (`tree.rs`: their tags carry the number).
    pub(crate) trees: AtomicU32,
    /// Its name (`MPI_Comm_set_name`).
    pub(crate) name: Mutex<String>,
}

impl CommEntry {
    /// A communicator over `group` (which this process belongs to),
    /// returning errors to the program as `errhandler` says.
    pub(crate) fn new(rma: &Rma, group: Group, errhandler: Handle) -> Result<CommEntry, Fail> {
        let comm = Comm::new(rma, group.clone())?;
        let objects = group.tagged(rma.next_context(&group));
        Ok(CommEntry {
            rank: comm.rank(),
            comm: Mutex::new(comm),
            objects,
            group,
            errhandler: AtomicUsize::new(errhandler),
            trees: AtomicU32::new(0),
            name: Mutex::new(String::new()),
        })
    }

    /// Its collectives, for one call.
    pub(crate) fn lock(&self) -> MutexGuard<'_, Comm> {
        self.comm.lock().unwrap_or_else(|p| p.into_inner())
    }

    /// Its size.
    pub(crate) fn size(&self) -> u32 {
        self.group.size()
    }
}

fn state() -> MutexGuard<'static, Option<Runtime>> {
    RUNTIME.lock().unwrap_or_else(|p| p.into_inner())
}

/// Whether `MPI_Init` ran, and whether `MPI_Finalize` did.
pub(crate) fn stage() -> (bool, bool) {
    let s = STAGE.load(Ordering::Acquire);
    (s != BEFORE, s == AFTER)
}

/// Makes the state: the world (from the launcher), `MPI_COMM_WORLD` and
/// `MPI_COMM_SELF` (errors fatal), the predefined error handlers.
///
/// # Errors
/// `MPI_ERR_OTHER` when MPI was initialized before, or the world cannot
/// start.
pub(crate) fn init() -> Result<(), Fail> {
    let mut guard = state();
    if STAGE.load(Ordering::Acquire) != BEFORE {
        return Err(Fail::new(err::OTHER, "MPI was initialized before"));
    }
    let world = World::init()?;
    let rma = Rma::new(world.endpoint())?;
    crate::p2p::start(world.endpoint());
    let (me, n) = (world.rank(), world.size());
    let mut comms = Table::default();
    let fatal = abi::errhandler::ARE_FATAL;
    let all = CommEntry::new(&rma, Group::world(n), fatal)?;
    *all.name.lock().unwrap_or_else(|p| p.into_inner()) = "MPI_COMM_WORLD".into();
    comms.predefine(abi::comm::WORLD, Arc::new(all));
    let own = CommEntry::new(&rma, Group::new(vec![me])?, fatal)?;
    *own.name.lock().unwrap_or_else(|p| p.into_inner()) = "MPI_COMM_SELF".into();
    comms.predefine(abi::comm::SELF, Arc::new(own));
    let mut errhandlers = Table::default();
    errhandlers.predefine(abi::errhandler::ARE_FATAL, Errhandler::Fatal);
    errhandlers.predefine(abi::errhandler::ABORT, Errhandler::Abort);
    errhandlers.predefine(abi::errhandler::RETURN, Errhandler::Return);
    let mut infos = Table::default();
    infos.predefine(abi::info::ENV, Info::default());
    let mut groups = Table::default();
    groups.predefine(abi::group::EMPTY, Vec::new());
    *guard = Some(Runtime {
        world,
        rma,
        comms,
        groups,
        errhandlers,
        windows: Table::default(),
        requests: Table::default(),
        infos,
        ops: Table::default(),
        types: Table::default(),
        messages: Table::default(),
    });
    STAGE.store(RUNNING, Ordering::Release);
    Ok(())
}

/// Ends the state: the communicators, the `Rma`, then the world.
///
/// # Errors
/// `MPI_ERR_OTHER` when MPI is not running, or the world refuses to end.
pub(crate) fn finalize() -> Result<(), Fail> {
    let runtime = state().take();
    forget_lookups();
    let Some(runtime) = runtime else {
        return Err(Fail::new(err::OTHER, "MPI is not running"));
    };
    STAGE.store(AFTER, Ordering::Release);
    let Runtime {
        world,
        rma,
        comms,
        windows,
        requests,
        ..
    } = runtime;
    drop(requests);
    crate::tree::forget_all();
    crate::p2p::stop();
    // Windows the program did not free end here, before the world.
    drop(windows);
    let world_comm = comms.get(abi::comm::WORLD).cloned();
    if let Some(entry) = &world_comm {
        // As MPI_Finalize: a barrier, so that no process leaves while a
        // peer still reaches its memory.
        entry.lock().barrier()?;
    }
    drop((world_comm, comms, rma));
    world
        .finalize()
        .map_err(|e| Fail::new(err::OTHER, format!("finalize: {e}")))
}

/// Runs `f` on the state.
///
/// # Errors
/// `MPI_ERR_OTHER` when MPI is not running; `f`'s.
pub(crate) fn with<R>(f: impl FnOnce(&mut Runtime) -> Result<R, Fail>) -> Result<R, Fail> {
    let mut guard = state();
    match guard.as_mut() {
        Some(runtime) => f(runtime),
        None => Err(Fail::new(err::OTHER, "MPI is not running")),
    }
}

/// Bumped whenever a communicator or window is freed: a thread's cached
/// lookups of an older generation are looked up again.
static GENERATION: AtomicU64 = AtomicU64::new(0);

/// A thread's last lookup of a kind: its handle, generation and entry
/// (the state's lock is not taken on a call's path when the program calls
/// on the same object again). Weak: a thread's cache keeps nothing alive
/// (threads of a pool outlive `MPI_Finalize`).
type Cached<T> = RefCell<Option<(Handle, u64, Weak<T>)>>;

thread_local! {
    static LAST_COMM: Cached<CommEntry> = const { RefCell::new(None) };
    static LAST_WIN: Cached<WinEntry> = const { RefCell::new(None) };
}

/// A handle's entry: this thread's cached one when still current, else
/// `find`'s (then cached).
fn cached<T>(
    cache: &'static std::thread::LocalKey<Cached<T>>,
    handle: Handle,
    find: impl FnOnce() -> Result<Arc<T>, Fail>,
) -> Result<Arc<T>, Fail> {
    let generation = GENERATION.load(Ordering::Acquire);
    let hit = cache.with(|c| match &*c.borrow() {
        Some((h, g, entry)) if *h == handle && *g == generation => entry.upgrade(),
        _ => None,
    });
    if let Some(entry) = hit {
        return Ok(entry);
    }
    let entry = find()?;
    cache.with(|c| *c.borrow_mut() = Some((handle, generation, Arc::downgrade(&entry))));
    Ok(entry)
}

/// A communicator or window was freed: cached lookups are stale.
pub(crate) fn forget_lookups() {
    GENERATION.fetch_add(1, Ordering::AcqRel);
}

/// Communicator `handle`.
///
/// # Errors
/// `MPI_ERR_COMM` for an invalid handle (or `MPI_COMM_NULL`).
pub(crate) fn comm(handle: Handle) -> Result<Arc<CommEntry>, Fail> {
    cached(&LAST_COMM, handle, || {
        with(|r| {
            r.comms
                .get(handle)
                .cloned()
                .ok_or_else(|| Fail::new(err::COMM, format!("invalid communicator {handle:#x}")))
        })
    })
}

/// The error handler that errors of communicator `handle` go to (those
/// of an invalid one go to `MPI_COMM_WORLD`'s; before `MPI_Init` and
/// after `MPI_Finalize`, errors are fatal), and the communicator it is
/// called with.
pub(crate) fn errhandler_of(handle: Handle) -> (Errhandler, Handle) {
    let guard = state();
    let Some(r) = guard.as_ref() else {
        return (Errhandler::Fatal, handle);
    };
    let (entry, handle) = match r.comms.get(handle) {
        Some(entry) => (entry, handle),
        None => match r.comms.get(abi::comm::WORLD) {
            Some(world) => (world, abi::comm::WORLD),
            None => return (Errhandler::Fatal, handle),
        },
    };
    let errhandler = entry.errhandler.load(Ordering::Relaxed);
    let handler = r.errhandlers.get(errhandler).copied();
    (handler.unwrap_or(Errhandler::Fatal), handle)
}

/// Window `handle`.
///
/// # Errors
/// `MPI_ERR_WIN` for an invalid handle (or `MPI_WIN_NULL`).
pub(crate) fn win(handle: Handle) -> Result<Arc<WinEntry>, Fail> {
    cached(&LAST_WIN, handle, || {
        with(|r| {
            r.windows
                .get(handle)
                .cloned()
                .ok_or_else(|| Fail::new(err::WIN, format!("invalid window {handle:#x}")))
        })
    })
}

/// The error handler of window `handle` (`MPI_COMM_WORLD`'s for an
/// invalid one).
pub(crate) fn win_errhandler_of(handle: Handle) -> Errhandler {
    let errhandler = {
        let guard = state();
        let Some(r) = guard.as_ref() else {
            return Errhandler::Fatal;
        };
        match r.windows.get(handle) {
            Some(w) => r
                .errhandlers
                .get(w.errhandler.load(Ordering::Relaxed))
                .copied(),
            None => None,
        }
    };
    match errhandler {
        Some(h) => h,
        None => errhandler_of(abi::comm::WORLD).0,
    }
}

/// Ends the job after printing `line`: through the launcher when MPI
/// runs (every process ends), else this process.
pub(crate) fn abort_job(code: c_int, line: &str) -> ! {
    eprintln!("{line}");
    if let Some(r) = state().as_ref() {
        let _ = r.world.abort(code, line);
    }
    std::process::exit(if code == 0 { 1 } else { code })
}
