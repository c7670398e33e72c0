//! The endpoint: one reliable-datagram endpoint per process, with tagged
//! messages, RMA reads and writes, 64-bit atomics and memory registration,
//! driven by the progress engine of [`crate::progress`].
//!
//! Every libfabric call on the endpoint's objects is serialised by one lock
//! ([`crate::spin`]; the domain is opened with `FI_THREAD_DOMAIN`). Each posted operation gets
//! a token, passed to libfabric as its context; whichever thread reads the
//! completion queue (a waiting caller or the background progress thread)
//! files the completion under its token, and the caller waiting for it picks
//! it up.
//!
//! Liveness: a peer reported dead (see [`Endpoint::mark_dead`]; `osrun --ft`
//! reports deaths) fails the operations waiting on it with
//! [`Error::PeerDead`] after a short grace period in which the provider may
//! still flush the operation's own completion; a dead process performs no
//! more transfers, so its operations' buffers are free after that. Past the
//! endpoint's timeout ([`EndpointConfig::timeout`]) a wait gives up only
//! where that is sound: retries of a post the provider refused, posted
//! receives it can cancel, and atomics (whose operands the endpoint owns and
//! keeps until the completion arrives). Reads, writes, sends and receives
//! that have matched use the caller's memory, which cannot be handed back
//! while the provider may still use it: they wait for their completion or for
//! the failure detector. (Without `--ft`, a rank's death ends the job.)
//!
//! Here: opening, peers and topology, registration, the completion core
//! (`Core`, `EndpointState`) and the post / wait machinery every operation uses.
//! The operations live in submodules named after them: `config`,
//! `granted` (what the provider granted),
//! `messages` (tagged messages, control-plane calls), `receives` (several
//! into caller memory), `rma`, `atomics`, `detached` (atomics left in
//! flight), `transfer` (operations over endpoint-owned buffers) and
//! `waiting` (wait objects, the background progress thread).

use std::collections::{HashMap, HashSet};
use std::ffi::c_void;
use std::ptr::{self, NonNull};
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::{Arc, Mutex};
use std::thread::JoinHandle;
use std::time::Duration;

use fabric_sys as sys;

use crate::atomic::{AtomicOp, Datatype};
use crate::atomic_service::Registry;
use crate::control;
use crate::error::{strerror, Error, Result};
use crate::handles::Handles;
use crate::liveness::Processes;
use crate::mapping::Mapping;
use crate::matching::{SourceMatch, MAX_TAG};
use crate::memory::{register_memory, Access, LocalRegion, MemoryRegion, RemoteMemory};
use crate::peers::{Peer, Peers};
use crate::progress::{timeout_from_secs, Backoff, ProgressMode, DEFAULT_MAX_SLEEP};
use crate::provider::{Atomics, MrMode, Provider};
use crate::slots::Slots;
use crate::spin::{SpinGuard, SpinLock};
use crate::stats::{Counters, Stats};

mod atomics;
mod config;
mod detached;
mod granted;
mod messages;
mod operation;
mod ranks;
mod receives;
mod rma;
mod topology;
mod transfer;
mod waiting;

pub use config::EndpointConfig;
pub use granted::Granted;
pub(crate) use operation::Operation;
pub use ranks::Ranks;
use transfer::RawBuffer;
pub use transfer::Transfer;

pub use receives::Incoming;
use waiting::background_progress;

/// Largest job an endpoint supports: a message's wire tag carries the
/// sender's rank in its low 24 bits (see [`MAX_TAG`]).
pub const MAX_RANKS: u32 = 1 << 24;
/// Completion-queue polls a waiting thread makes per lock acquisition.
const POLLS_PER_LOCK: usize = 8;
/// How long an operation to a dead peer may still complete on its own.
const DEAD_PEER_GRACE: Duration = Duration::from_millis(200);

/// What a receive got.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Received {
    /// The sender.
    pub from: u32,
    /// The tag.
    pub tag: u64,
    /// Bytes received.
    pub len: usize,
}

/// A receive's truncation as reported: the completion carries the bytes
/// that did not fit into `capacity`, the error the message's whole length.
fn truncated(e: Error, capacity: usize) -> Error {
    match e {
        Error::Truncated {
            rank,
            tag,
            len: overflow,
            ..
        } => Error::Truncated {
            rank,
            tag,
            len: capacity + overflow,
            capacity,
        },
        e => e,
    }
}

fn check_tag(tag: u64) -> Result<()> {
    if tag > MAX_TAG {
        return Err(Error::OutOfRange {
            what: "message tag",
            offset: tag,
            len: 1,
            size: MAX_TAG + 1,
        });
    }
    Ok(())
}

/// How one posted operation ended.
type Outcome = std::result::Result<Finished, FailedCompletion>;

#[derive(Debug, Clone, Copy)]
struct Finished {
    len: usize,
    tag: u64,
    /// The remote CQ data: the sender's rank, for received messages.
    data: u64,
}

#[derive(Debug, Clone, Copy)]
struct FailedCompletion {
    code: i32,
    provider_code: i32,
    overflow: usize,
    tag: u64,
    sender: u32,
}

/// Everything behind the endpoint lock: what a post and a completion
/// change together. The provider's objects (opened `FI_THREAD_DOMAIN`:
/// their calls are serialized by this lock), the addresses, the slots
/// completions land in, the storage of operations given up on, the
/// control plane's queues, and the counters and process checks each
/// post updates. What changes on its own (liveness, tuning, the progress
/// thread's signals, pools) is in [`EndpointState`] beside it, each
/// behind its own atomic or lock.
pub(crate) struct Core {
    // Declared first so that the endpoint is closed before the buffers
    // below are freed.
    pub handles: Handles,
    addrs: Vec<sys::fi_addr_t>,
    rank: u32,
    slots: Slots<Outcome>,
    /// Storage of operations given up on, kept until their completions
    /// arrive (or the endpoint closes).
    retained: Vec<(u64, Kept)>,
    /// Operations of [`Endpoint::add_detached`] not completed yet.
    detached: usize,
    control: ControlState,
    /// The peers' processes on this machine (see [`crate::liveness`]).
    processes: Processes,
    /// What this endpoint has sent and posted (see [`crate::stats`]).
    stats: Counters,
}

/// Storage an abandoned operation may still use.
type Kept = Box<dyn std::any::Any + Send>;

/// A control-plane handler: the reply to a request from a rank, and
/// notices to send.
type Handler = Box<dyn FnMut(u32, &[u8], &mut control::Outbox) -> Vec<u8> + Send>;

/// The served side of the control plane (see [`crate::control`]).
#[derive(Default)]
struct ControlState {
    handlers: HashMap<u16, Handler>,
    /// Whether each service keeps a receive posted per peer (where a
    /// receive from any rank loses queued messages: see
    /// [`crate::matching`]) rather than [`control::POOL`] from any rank.
    per_peer: bool,
    /// Posted request receives: token → (service, the peer it takes
    /// requests from or any, buffer).
    receives: HashMap<u64, (u16, Source, Box<[u8]>)>,
    /// Replies in flight: token → their buffer.
    replies: HashMap<u64, Box<[u8]>>,
    /// Work the provider refused for now (`FI_EAGAIN`), retried after polls.
    deferred: Vec<Deferred>,
}

/// Whom a standing request receive takes requests from.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Source {
    Any,
    Rank(u32),
}

enum Deferred {
    Receive(u16, Source, Box<[u8]>),
    Reply(u16, u32, u64, Box<[u8]>),
}

impl Core {
    /// Reads the completion queue dry, filing completions under their tokens
    /// and serving control requests. Returns how many it read.
    fn poll(&mut self) -> usize {
        let found = self.poll_cq();
        if !self.control.deferred.is_empty() {
            self.retry_deferred();
        }
        found
    }

    fn poll_cq(&mut self) -> usize {
        const BATCH: usize = 16;
        let mut total = 0;
        loop {
            // Left uninitialised: zeroing 16 entries on every poll costs more
            // than the poll itself when the queue is empty.
            let mut entries = [std::mem::MaybeUninit::<sys::fi_cq_tagged_entry>::uninit(); BATCH];
            // SAFETY: the CQ is open and was opened with the tagged format;
            // `entries` has room for BATCH entries of that format.
            let n = unsafe {
                sys::fi_cq_read(
                    self.handles.cq,
                    entries.as_mut_ptr().cast::<c_void>(),
                    BATCH,
                )
            };
            if n > 0 {
                let n = (n as usize).min(BATCH);
                for entry in &entries[..n] {
                    // SAFETY: fi_cq_read initialised the first n entries.
                    let entry = unsafe { entry.assume_init_ref() };
                    self.finish(
                        entry.op_context as u64,
                        Ok(Finished {
                            len: entry.len,
                            tag: entry.tag,
                            data: entry.data,
                        }),
                    );
                }
                total += n;
                if n < BATCH {
                    return total;
                }
            } else if n == -(sys::FI_EAVAIL as isize) {
                let mut err = sys::fi_cq_err_entry::default();
                // SAFETY: the CQ is open and reports an error entry; err is a
                // valid, zeroed fi_cq_err_entry (err_data null: none wanted).
                let got = unsafe { sys::fi_cq_readerr(self.handles.cq, &mut err, 0) };
                if got <= 0 {
                    return total;
                }
                self.finish(
                    err.op_context as u64,
                    Err(FailedCompletion {
                        // Providers disagree on the sign (shm negative).
                        code: err.err.saturating_abs(),
                        provider_code: err.prov_errno.saturating_abs(),
                        overflow: err.olen,
                        tag: err.tag,
                        sender: err.data as u32,
                    }),
                );
                total += 1;
            } else {
                return total;
            }
        }
    }

    fn finish(&mut self, token: u64, outcome: Outcome) {
        if !self.control.receives.is_empty() || !self.control.replies.is_empty() {
            if let Some((service, source, buffer)) = self.control.receives.remove(&token) {
                self.slots.remove(token);
                self.stats.standing_done(buffer.len());
                self.serve(service, source, buffer, outcome);
                return;
            }
            if self.control.replies.remove(&token).is_some() {
                self.slots.remove(token);
                return;
            }
        }
        // Completions of operations given up on find no slot: release what
        // they kept.
        if !self.slots.finish(token, outcome) && !self.retained.is_empty() {
            let detached = &mut self.detached;
            self.retained.retain(|(t, kept)| {
                let this = *t == token;
                if this && (**kept).is::<detached::Detached>() {
                    *detached -= 1;
                }
                !this
            });
        }
    }

    /// A request for `service` from `source` arrived in `buffer` (or its
    /// receive failed): answer it and post the receive again.
    fn serve(&mut self, service: u16, source: Source, buffer: Box<[u8]>, outcome: Outcome) {
        match outcome {
            Ok(done) => {
                // Every message carries its sender's rank as CQ data.
                let peer = done.data as u32;
                let len = done.len.min(buffer.len());
                if let Some((reply_tag, body)) = control::unframe(&buffer[..len]) {
                    if let Some(handler) = self.control.handlers.get_mut(&service) {
                        let mut outbox = control::Outbox::default();
                        let reply = handler(peer, body, &mut outbox);
                        if reply_tag != control::NO_REPLY {
                            self.post_reply(service, peer, reply_tag, reply.into_boxed_slice());
                        }
                        for (to, service, notice) in outbox.notices {
                            let tag = control::request_tag(service);
                            self.post_reply(service, to, tag, notice.into_boxed_slice());
                        }
                    }
                }
            }
            // Cancelled: the endpoint is closing.
            Err(f) if f.code == sys::FI_ECANCELED as i32 => return,
            // A malformed (too long) request: nothing to answer.
            Err(_) => {}
        }
        self.post_request_receive(service, source, buffer);
    }

    /// Posts the standing receives of `service`: one per peer in
    /// `peers` where receives are per peer, else [`control::POOL`] from any
    /// rank (when `peers` starts at 0: the service is new).
    fn post_request_receives(&mut self, service: u16, peers: std::ops::Range<u32>) {
        let sources: Vec<Source> = match self.control.per_peer {
            true => peers.map(Source::Rank).collect(),
            false if peers.start == 0 => vec![Source::Any; control::POOL],
            false => Vec::new(),
        };
        for source in sources {
            let buffer = vec![0u8; 8 + control::MAX_REQUEST].into_boxed_slice();
            self.post_request_receive(service, source, buffer);
        }
    }

    /// Posts the receive of the next request for `service` from `source`.
    fn post_request_receive(&mut self, service: u16, source: Source, mut buffer: Box<[u8]>) {
        let (wire, ignore) = match source {
            Source::Rank(peer) if peer as usize >= self.addrs.len() => return,
            Source::Rank(peer) => SourceMatch::receive(control::request_tag(service), Some(peer)),
            Source::Any => SourceMatch::receive(control::request_tag(service), None),
        };
        let token = self.slots.insert();
        // SAFETY: the endpoint is open; buffer is owned by the control
        // state until the receive completes or the endpoint closes (the
        // handles are closed before the control state is dropped).
        let ret = unsafe {
            sys::fi_trecv(
                self.handles.ep,
                buffer.as_mut_ptr().cast(),
                buffer.len(),
                ptr::null_mut(),
                sys::FI_ADDR_UNSPEC,
                wire,
                ignore,
                token as *mut c_void,
            )
        };
        if ret == 0 {
            self.stats.standing_posted(buffer.len());
            self.control
                .receives
                .insert(token, (service, source, buffer));
        } else {
            self.slots.remove(token);
            self.control
                .deferred
                .push(Deferred::Receive(service, source, buffer));
        }
    }

    /// Sends `reply` (a reply, or a notice a handler left, counted under
    /// `service`) to `peer` under `tag`.
    fn post_reply(&mut self, service: u16, peer: u32, tag: u64, reply: Box<[u8]>) {
        let Ok(addr) = self.addr(peer) else { return };
        if self.processes.ended(peer) {
            return;
        }
        let wire = SourceMatch::wire_tag(tag, self.rank);
        let me = u64::from(self.rank);
        let ret = if reply.len() <= self.handles.granted.inject_size {
            // SAFETY: the endpoint is open; the provider copies reply before
            // fi_tinjectdata returns.
            let ret = unsafe {
                sys::fi_tinjectdata(
                    self.handles.ep,
                    reply.as_ptr().cast(),
                    reply.len(),
                    me,
                    addr,
                    wire,
                )
            };
            if ret == 0 {
                self.stats.reply(service, peer, reply.len());
            }
            ret
        } else {
            let token = self.slots.insert();
            // SAFETY: the endpoint is open; reply is kept in the control
            // state until the send completes or the endpoint closes.
            let ret = unsafe {
                sys::fi_tsenddata(
                    self.handles.ep,
                    reply.as_ptr().cast(),
                    reply.len(),
                    ptr::null_mut(),
                    me,
                    addr,
                    wire,
                    token as *mut c_void,
                )
            };
            if ret == 0 {
                self.stats.reply(service, peer, reply.len());
                self.control.replies.insert(token, reply);
                return;
            }
            self.slots.remove(token);
            ret
        };
        if ret != 0 {
            self.control
                .deferred
                .push(Deferred::Reply(service, peer, tag, reply));
        }
    }

    fn retry_deferred(&mut self) {
        for work in std::mem::take(&mut self.control.deferred) {
            match work {
                Deferred::Receive(service, source, buffer) => {
                    self.post_request_receive(service, source, buffer)
                }
                Deferred::Reply(service, peer, tag, reply) => {
                    self.post_reply(service, peer, tag, reply)
                }
            }
        }
    }

    /// Gives up on the operation `token`: its completion, if one comes, is
    /// dropped, and storage it owns is kept until then.
    fn forget(&mut self, token: u64, on_timeout: OnTimeout) {
        self.slots.remove(token);
        if let OnTimeout::Release(storage) = on_timeout {
            self.retained.push((token, storage));
        }
    }

    // Built lazily on purpose: building (and dropping) the error on every
    // call showed in 8-byte message latency.
    #[allow(clippy::unnecessary_lazy_evaluations)]
    pub(crate) fn addr(&self, rank: u32) -> Result<sys::fi_addr_t> {
        self.addrs
            .get(rank as usize)
            .copied()
            .filter(|&a| a != sys::FI_ADDR_NOTAVAIL)
            .ok_or_else(|| Error::InvalidRank {
                rank,
                size: self.addrs.len() as u32,
            })
    }
}

/// State shared by the endpoint, its memory regions and its background
/// thread.
pub(crate) struct EndpointState {
    core: SpinLock<Core>,
    /// What the provider granted, fixed at open.
    pub(crate) granted: Granted,
    /// How long waits spin before yielding, in nanoseconds (0 when this
    /// host runs more ranks than it has cores).
    spin_ns: AtomicU64,
    /// Numbers control-plane calls (their reply tags).
    next_call: std::sync::atomic::AtomicU32,
    /// Where the next polling any-source receive starts (fairness).
    next_any_source: std::sync::atomic::AtomicU32,
    pub(crate) local_regions: Mutex<Vec<LocalRegion>>,
    dead: Mutex<HashSet<u32>>,
    any_dead: AtomicBool,
    /// Bumped by every progress call of the application, so the background
    /// thread can tell it need not poll.
    app_progress: AtomicU64,
    /// Bumped by the application's calls that keep it busy without
    /// polling (see [`Endpoint::note_busy`]).
    app_busy: AtomicU64,
    stop: AtomicBool,
    /// An eventfd written when the endpoint ends, so that the background
    /// thread's sleeps and blocks end at once (none if the system refused
    /// one: they then run out).
    stop_wake: Option<std::fs::File>,
    timeout: Duration,
    max_sleep: Duration,
    cq_fd: Option<i32>,
    /// Buffers of finished transfers, for the next ones.
    buffers: Mutex<Vec<Box<[u8]>>>,
    /// Tasks awaiting something this endpoint moves
    /// ([`Endpoint::wake_later`]), woken by the background thread.
    tasks: Mutex<Vec<std::task::Waker>>,
    /// The regions peers' software atomics may reach (filled only under
    /// [`Atomics::Software`]).
    pub(crate) atomic_regions: Registry,
    /// Elements per atomic, by (compare / fetch / plain, datatype, op), as
    /// the provider said (0: not asked yet).
    atomic_counts: [std::sync::atomic::AtomicUsize; ATOMIC_KINDS],
}

/// Bytes of transfer buffers an endpoint keeps for reuse.
const BUFFER_POOL: usize = 64 << 20;

/// Entries of `EndpointState::atomic_counts`: 3 kinds x 10 datatypes x 5 ops.
const ATOMIC_KINDS: usize = 3 * 10 * 5;

impl EndpointState {
    /// Wakes the tasks waiting for a progress pass
    /// ([`Endpoint::wake_later`]); whether there were any.
    pub(crate) fn wake_tasks(&self) -> bool {
        let tasks = std::mem::take(&mut *self.tasks.lock().unwrap_or_else(|p| p.into_inner()));
        let any = !tasks.is_empty();
        tasks.into_iter().for_each(std::task::Waker::wake);
        any
    }

    pub(crate) fn lock(&self) -> SpinGuard<'_, Core> {
        self.core.lock()
    }

    /// A key for the next registration: random, so that a process outside
    /// the job that reaches this endpoint cannot guess one (keys only
    /// travel to the job's peers); within the provider's key size.
    /// Ignored where the provider chooses keys (`FI_MR_PROV_KEY`).
    pub(crate) fn next_key(&self) -> u64 {
        random_key(self.granted.key_size)
    }

    pub(crate) fn mark_dead(&self, rank: u32) {
        self.dead
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .insert(rank);
        self.any_dead.store(true, Ordering::Release);
    }

    #[inline]
    fn is_dead(&self, rank: u32) -> bool {
        self.any_dead.load(Ordering::Acquire) && self.is_listed_dead(rank)
    }

    #[cold]
    fn is_listed_dead(&self, rank: u32) -> bool {
        self.dead
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .contains(&rank)
    }

    /// The descriptor of a local buffer inside one of this endpoint's
    /// regions, or null.
    pub(crate) fn desc_of(&self, ptr: usize, len: usize) -> *mut c_void {
        self.local_desc(ptr, len).unwrap_or(ptr::null_mut())
    }

    /// A backoff for a wait of this endpoint (see [`Endpoint::backoff`]).
    pub(crate) fn backoff(self: &Arc<Self>) -> Backoff {
        let backoff = Backoff::with_spin(
            Duration::from_nanos(self.spin_ns.load(Ordering::Relaxed)),
            self.max_sleep,
        );
        match self.cq_fd {
            Some(_) => backoff.blocking_on(Arc::clone(self) as _),
            None => backoff,
        }
    }

    /// A transfer buffer of at least `len` bytes (a power of two, at
    /// least 4 KiB): the smallest pooled one of up to four times that,
    /// else a new one. Pooling spares large transfers the page faults
    /// (and zeroing) of fresh memory.
    fn take_buffer(&self, len: usize) -> Box<[u8]> {
        let class = len.max(4096).checked_next_power_of_two().unwrap_or(len);
        let fits = |b: &[u8]| b.len() >= class && b.len() / 4 <= class;
        let mut pool = self.buffers.lock().unwrap_or_else(|p| p.into_inner());
        let smallest = (pool.iter().enumerate())
            .filter(|(_, b)| fits(b))
            .min_by_key(|(_, b)| b.len())
            .map(|(i, _)| i);
        match smallest {
            Some(i) => pool.swap_remove(i),
            None => {
                drop(pool);
                vec![0u8; class].into_boxed_slice()
            }
        }
    }

    /// Returns a transfer buffer to the pool, which keeps at most
    /// [`BUFFER_POOL`] bytes: smaller buffers make room for a larger one
    /// (the larger, the more a fresh one costs: a large allgather across
    /// hosts took far longer while buffers of smaller calls kept its own
    /// out; figures: docs/measurements.md, "Pooled transfer buffers").
    fn give_buffer(&self, buffer: Box<[u8]>) {
        if buffer.len() > BUFFER_POOL {
            return;
        }
        let mut evicted = Vec::new();
        let mut pool = self.buffers.lock().unwrap_or_else(|p| p.into_inner());
        let mut held: usize = pool.iter().map(|b| b.len()).sum();
        while held + buffer.len() > BUFFER_POOL {
            let smallest = (pool.iter().enumerate())
                .filter(|(_, b)| b.len() < buffer.len())
                .min_by_key(|(_, b)| b.len())
                .map(|(i, _)| i);
            let Some(i) = smallest else {
                return;
            };
            let gone = pool.swap_remove(i);
            held -= gone.len();
            evicted.push(gone);
        }
        pool.push(buffer);
        // Freed after the lock.
        drop(pool);
        drop(evicted);
    }

    /// Tells the background thread the application is making progress.
    pub(crate) fn note_app_progress(&self) {
        self.app_progress.fetch_add(1, Ordering::Relaxed);
    }

    pub(crate) fn inject_size(&self) -> usize {
        self.granted.inject_size
    }

    fn local_desc(&self, ptr: usize, len: usize) -> Option<*mut c_void> {
        self.local_regions
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .iter()
            .find(|r| ptr >= r.start && ptr + len <= r.start + r.len)
            .map(|r| r.desc as *mut c_void)
    }
}

/// A random registration key of `size` bytes (at most 8): SipHash under
/// the standard library's per-thread random keys (drawn from the kernel
/// at a thread's first use; every `RandomState` steps one of them), so
/// that nobody without those keys can tell one, nor one from another.
fn random_key(size: usize) -> u64 {
    use std::hash::BuildHasher;
    let key = std::collections::hash_map::RandomState::new().hash_one(0u64);
    match size {
        8.. => key,
        0 => 0,
        n => key & ((1u64 << (8 * n)) - 1),
    }
}

/// One reliable-datagram endpoint with its address vector, completion queue
/// and progress engine. Ranks are the order in which peer names were given
/// to [`Endpoint::connect`].
///
/// A handle: clones share the one endpoint (an `Arc`), so that windows,
/// communicators and transfers own theirs instead of borrowing it, and a
/// thread can be given its own. The endpoint closes when the last handle
/// goes. It is `Send` and `Sync`: its completion core is behind a lock, and
/// the progress thread already serves it beside the application.
#[derive(Clone)]
pub struct Endpoint {
    inner: Arc<Inner>,
}

/// What the handles of one endpoint share, beyond what the background
/// thread does ([`EndpointState`]): the thread holds no `Inner`, so the
/// last handle's drop stops and joins it.
struct Inner {
    shared: Arc<EndpointState>,
    rank: u32,
    /// Each rank's name, host and board; grows as processes join.
    peers: Peers,
    /// The CPUs the ranks on this process's host may run on together.
    host_cpus: usize,
    /// This process's board, kept alive (and removed at the end) here; it
    /// is used through mappings of its name.
    _board: Option<Mutex<Mapping>>,
    background: Option<JoinHandle<()>>,
}

/// What a wait may do with its operation once the timeout has passed.
enum OnTimeout {
    /// A posted receive: cancel it; if it has already matched, keep waiting.
    Cancel,
    /// The operation's buffers are this storage: the endpoint keeps it until
    /// the completion arrives.
    Release(Kept),
    /// The provider may still use caller memory: keep waiting.
    Wait,
}

/// Where an atomic goes: peer address, remote address and key, context.
struct AtomicTarget {
    addr: sys::fi_addr_t,
    address: u64,
    key: u64,
    ctx: *mut c_void,
}

/// An operation just posted, with the endpoint lock still held.
struct Posted<'a> {
    token: u64,
    desc: LocalDesc,
    core: SpinGuard<'a, Core>,
}

/// A local buffer's descriptor for one operation: found among this
/// endpoint's regions, or a registration made for the operation alone.
struct LocalDesc {
    desc: *mut c_void,
    temporary: *mut sys::fid_mr,
}

// SAFETY: the descriptor and the temporary registration are handles of the
// domain, not tied to a thread. A LocalDesc moves with its Transfer, which
// closes it only while holding the endpoint's lock; that lock serialises
// every call on the domain (opened with FI_THREAD_DOMAIN), whichever
// thread takes it.
unsafe impl Send for LocalDesc {}

impl LocalDesc {
    /// No descriptor (the provider does not want local ones).
    const NONE: LocalDesc = LocalDesc {
        desc: ptr::null_mut(),
        temporary: ptr::null_mut(),
    };

    fn close(self) {
        if !self.temporary.is_null() {
            // SAFETY: a registration made by local_desc for one operation that
            // has completed (or been abandoned); closed once.
            unsafe { sys::fi_close(self.temporary.cast()) };
        }
    }
}

impl Endpoint {
    /// Opens an endpoint. It knows no peers until [`Endpoint::connect`].
    ///
    /// # Errors
    /// [`Error::ProviderUnavailable`] when the provider cannot give an RDM
    /// endpoint with tagged messages and RMA; [`Error::Fabric`] when
    /// opening one of its objects fails.
    pub fn open(config: &EndpointConfig) -> Result<Endpoint> {
        let offered = MrMode::VIRT_ADDR
            | MrMode::ALLOCATED
            | MrMode::PROV_KEY
            | MrMode::ENDPOINT
            | config.mr_mode_request;
        let atomics = (config.atomics).unwrap_or_else(|| Atomics::default_for(config.provider));
        let handles = Handles::open(config.provider, offered, config.progress, atomics)?;
        let granted = handles.granted.clone();
        // SAFETY: fi_version takes no arguments and returns a constant.
        let source_match = SourceMatch::new(config.provider, unsafe { sys::fi_version() });
        let shared = Arc::new(EndpointState {
            granted: Granted {
                provider: config.provider,
                mr_mode: granted.mr_mode | (config.mr_mode_request & MrMode::FORCEABLE),
                inject_size: granted.inject_size,
                source_match,
                key_size: granted.key_size,
                auto_progress: granted.auto_progress,
                send_after_atomic: granted.send_after_atomic,
                write_after_write: granted.write_after_write,
                atomics: granted.atomics,
                provider_name: granted.name.clone(),
            },
            next_any_source: std::sync::atomic::AtomicU32::new(0),
            next_call: std::sync::atomic::AtomicU32::new(0),
            spin_ns: AtomicU64::new(crate::progress::DEFAULT_SPIN.as_nanos() as u64),
            local_regions: Mutex::new(Vec::new()),
            dead: Mutex::new(HashSet::new()),
            any_dead: AtomicBool::new(false),
            app_progress: AtomicU64::new(0),
            app_busy: AtomicU64::new(0),
            stop: AtomicBool::new(false),
            stop_wake: waiting::event_file(),
            timeout: config.timeout,
            max_sleep: config.max_sleep,
            cq_fd: handles.cq_fd,
            atomic_regions: Registry::default(),
            atomic_counts: std::array::from_fn(|_| std::sync::atomic::AtomicUsize::new(0)),
            buffers: Mutex::new(Vec::new()),
            tasks: Mutex::new(Vec::new()),
            core: SpinLock::new(Core {
                handles,
                addrs: Vec::new(),
                rank: 0,
                slots: Slots::default(),
                retained: Vec::new(),
                detached: 0,
                control: ControlState {
                    per_peer: source_match.poll_any_source,
                    ..ControlState::default()
                },
                processes: Processes::default(),
                stats: Counters::default(),
            }),
        });
        let background = match config.progress {
            ProgressMode::Manual => None,
            ProgressMode::Background => {
                let shared = Arc::clone(&shared);
                Some(
                    std::thread::Builder::new()
                        .name("onesided-progress".into())
                        .spawn(move || background_progress(&shared))
                        .map_err(|e| Error::io("starting the progress thread", e))?,
                )
            }
        };
        Ok(Endpoint {
            inner: Arc::new(Inner {
                shared,
                rank: 0,
                peers: {
                    let peers = Peers::new();
                    peers.grow(1);
                    peers
                },
                background,
                host_cpus: crate::world::online_cpus(),
                _board: None,
            }),
        })
    }

    /// This endpoint's address, to hand to peers (a few dozen bytes).
    ///
    /// # Errors
    /// [`Error::Fabric`] when `fi_getname` fails.
    pub fn name(&self) -> Result<Vec<u8>> {
        self.inner.shared.lock().handles.name()
    }

    /// The endpoint's state, when this is its only handle.
    fn unique(&mut self, op: &'static str) -> Result<&mut Inner> {
        let handles = Arc::strong_count(&self.inner) - 1;
        Arc::get_mut(&mut self.inner).ok_or(Error::StillShared { op, handles })
    }

    /// How many handles of this endpoint exist, this one included.
    pub fn handles(&self) -> usize {
        Arc::strong_count(&self.inner)
    }

    /// This process's rank.
    pub fn rank(&self) -> u32 {
        self.inner.rank
    }

    /// Number of ranks.
    pub fn size(&self) -> u32 {
        self.inner.peers.len()
    }

    /// Records that `rank` has died: operations waiting on it fail with
    /// [`Error::PeerDead`], and new ones to it fail at once.
    pub(crate) fn mark_dead(&self, rank: u32) {
        self.inner.shared.mark_dead(rank);
    }

    /// A backoff for waits on this endpoint's peers: upper layers' waits use
    /// it so that every wait of the process follows one discipline. Where
    /// the completion queue has a wait object, it blocks on it instead of
    /// sleeping: a wait that a completion, an incoming message or a peer's
    /// RMA ends wakes as it arrives, and a wait on anything else (shared
    /// memory a peer writes) looks again as often as a sleeping one.
    pub fn backoff(&self) -> Backoff {
        self.inner.shared.backoff()
    }

    /// Sets how long waits spin before yielding: [`World::init`] sets zero
    /// when this host runs more ranks than it has cores (spinning would take
    /// the core from the rank being waited for).
    ///
    /// [`World::init`]: crate::World::init
    pub(crate) fn set_spin(&self, spin: Duration) {
        self.inner.shared.spin_ns.store(
            spin.as_nanos().min(u128::from(u64::MAX)) as u64,
            Ordering::Relaxed,
        );
    }

    /// How long an operation waits before giving up where that is sound
    /// ([`EndpointConfig::timeout`]); upper layers bound their own waits by
    /// it too.
    pub fn timeout(&self) -> Duration {
        self.inner.shared.timeout
    }

    /// Tells the background progress thread that the application is busy
    /// in a call that does not poll the completion queue (a collective
    /// through shared memory): while such calls go on, the thread polls
    /// once every `ACTIVE_CHECK_INTERVAL` (10 ms) instead of every
    /// `max_sleep`, which bounds how late a peer's operation on this
    /// rank's memory progresses meanwhile. Its wake-ups every 500 us slow
    /// large collectives on 2 cores (measurements: `docs/measurements.md`,
    /// "Busy calls"). A relaxed load and store, not an atomic add (a locked
    /// instruction per call): the thread only looks for a change, which
    /// threads racing here still make.
    pub fn note_busy(&self) {
        let busy = &self.inner.shared.app_busy;
        busy.store(
            busy.load(Ordering::Relaxed).wrapping_add(1),
            Ordering::Relaxed,
        );
    }

    /// What this endpoint has sent and posted so far (see
    /// [`crate::stats`]); [`crate::World::stats`] adds the PMI requests.
    pub fn stats(&self) -> Stats {
        self.inner.shared.lock().stats.snapshot()
    }

    /// Makes progress once: reads the completion queue, which also drives
    /// the provider's data movement. Returns the completions read.
    pub fn progress(&self) -> usize {
        self.inner.shared.note_app_progress();
        self.inner.shared.lock().poll()
    }

    /// Has the task of `waker` polled again after the progress engine's
    /// next pass: by the background thread, which then neither blocks nor
    /// sleeps longer than its shortest naps while tasks wait (how the
    /// library's futures are woken: what they await may move through
    /// shared memory as well as the provider); at once under
    /// [`ProgressMode::Manual`], where only the task's own polls move
    /// anything.
    pub fn wake_later(&self, waker: &std::task::Waker) {
        if self.inner.background.is_none() {
            waker.wake_by_ref();
            return;
        }
        let tasks = &self.inner.shared.tasks;
        let mut tasks = tasks.lock().unwrap_or_else(|p| p.into_inner());
        if !tasks.iter().any(|w| w.will_wake(waker)) {
            tasks.push(waker.clone());
        }
    }

    /// Registers `len` bytes of fresh zeroed memory for `access` by peers.
    ///
    /// # Errors
    /// [`Error::Fabric`] when `fi_mr_reg` (or, under `FI_MR_ENDPOINT`,
    /// binding it) fails; [`Error::Io`] when memory runs out.
    pub fn register(&self, len: usize, access: Access) -> Result<MemoryRegion> {
        self.serve_atomics(access)?;
        MemoryRegion::register(
            Arc::clone(&self.inner.shared),
            Mapping::anonymous(len)?,
            access,
        )
    }

    /// As [`Endpoint::register`], in named shared memory that processes on
    /// this host can map ([`MemoryRegion::shared_name`],
    /// [`Mapping::open_shared`]) to copy in and out without the provider.
    /// The name is removed when the region is dropped.
    ///
    /// # Errors
    /// As [`Endpoint::register`].
    pub fn register_shared(&self, len: usize, access: Access) -> Result<MemoryRegion> {
        self.serve_atomics(access)?;
        MemoryRegion::register(
            Arc::clone(&self.inner.shared),
            Mapping::create_shared(len)?,
            access,
        )
    }

    /// As [`Endpoint::register`], over the caller's `len` bytes at `ptr`
    /// (no copy: peers' RMA reaches that memory).
    ///
    /// # Errors
    /// As [`Endpoint::register`].
    ///
    /// # Safety
    /// The bytes stay valid until the region is dropped; peers write them
    /// at any time meanwhile (as [`Mapping::external`]).
    pub unsafe fn register_external(
        &self,
        (ptr, len): (*mut u8, usize),
        access: Access,
    ) -> Result<MemoryRegion> {
        self.serve_atomics(access)?;
        // SAFETY: as this function's contract.
        let memory = unsafe { Mapping::external(ptr, len) };
        MemoryRegion::register(Arc::clone(&self.inner.shared), memory, access)
    }

    fn check_peer(&self, rank: u32, op: &'static str) -> Result<()> {
        let size = self.inner.peers.len();
        if rank >= size {
            return Err(Error::InvalidRank { rank, size });
        }
        if self.inner.shared.is_dead(rank) {
            return Err(Error::PeerDead { op, rank });
        }
        Ok(())
    }

    /// The descriptor for a local buffer when the provider wants one.
    #[cold]
    fn local_desc(&self, core: &Core, ptr: *const u8, len: usize) -> Result<LocalDesc> {
        let mut out = LocalDesc::NONE;
        if let Some(desc) = self.inner.shared.local_desc(ptr as usize, len) {
            out.desc = desc;
            return Ok(out);
        }
        // SAFETY: ptr..ptr+len is a live buffer borrowed for the whole
        // operation, and the registration is closed (by LocalDesc::close)
        // before the borrow ends; the caller holds the lock (`core`).
        let mr = unsafe {
            register_memory(
                core,
                ptr,
                len,
                sys::FI_READ | sys::FI_WRITE | sys::FI_SEND | sys::FI_RECV,
                self.inner.shared.next_key(),
                self.inner.shared.granted.mr_mode,
            )
        }?;
        out.temporary = mr;
        // SAFETY: mr is an open registration.
        out.desc = unsafe { sys::fi_mr_desc(mr) };
        Ok(out)
    }

    /// Posts one operation with `post(core, peer address, context, local
    /// descriptor)`, retrying while the provider says `FI_EAGAIN`. Returns the
    /// posted operation with the endpoint lock still held, so the first wait
    /// needs no second acquisition. An operation that produces no completion
    /// (`completes` false: inject) gets token 0.
    fn post(
        &self,
        operation: Operation,
        rank: u32,
        buffer: (*const u8, usize),
        completes: bool,
        mut post: impl FnMut(&Core, sys::fi_addr_t, *mut c_void, *mut c_void) -> isize,
    ) -> Result<Posted<'_>> {
        let op = operation.name();
        self.check_peer(rank, op)?;
        let mut backoff: Option<Backoff> = None;
        loop {
            let mut core = self.inner.shared.lock();
            let addr = core.addr(rank)?;
            // Receives only match what arrives; the rest enter the peer's
            // side, which a process that ended may have left locked.
            if operation.reaches_peer() && core.processes.ended(rank) {
                drop(core);
                self.inner.shared.mark_dead(rank);
                return Err(Error::PeerDead { op, rank });
            }
            let desc = if self.inner.shared.granted.mr_mode.contains(MrMode::LOCAL) {
                self.local_desc(&core, buffer.0, buffer.1)?
            } else {
                LocalDesc::NONE
            };
            let token = if completes { core.slots.insert() } else { 0 };
            let ret = post(&core, addr, token as *mut c_void, desc.desc);
            if ret == 0 {
                core.stats.posted(operation, rank, buffer.1);
                return Ok(Posted { token, desc, core });
            }
            desc.close();
            core.slots.remove(token);
            if ret != -(sys::FI_EAGAIN as isize) {
                return Err(Error::post_failed(op, rank, ret));
            }
            // The provider's queues are full: make progress, then retry.
            core.poll();
            drop(core);
            self.inner.shared.note_app_progress();
            if self.inner.shared.is_dead(rank) {
                return Err(Error::PeerDead { op, rank });
            }
            let waited = backoff
                .get_or_insert_with(|| self.inner.shared.backoff())
                .pause();
            if waited > self.inner.shared.timeout {
                return Err(Error::Timeout {
                    op,
                    rank,
                    after: self.inner.shared.timeout,
                });
            }
        }
    }

    /// Backs off once after a look that found nothing (noting that the
    /// application polls); [`Error::Timeout`] for `op`, naming this rank,
    /// once `backoff` has waited past the endpoint's timeout.
    fn pause_within_timeout(&self, backoff: &mut Backoff, op: &'static str) -> Result<()> {
        self.inner.shared.note_app_progress();
        if backoff.pause() > self.inner.shared.timeout {
            return Err(Error::Timeout {
                op,
                rank: self.inner.rank,
                after: self.inner.shared.timeout,
            });
        }
        Ok(())
    }

    /// Waits for a posted operation to `rank`, making progress; `on_timeout`
    /// says what may happen when the endpoint's timeout passes.
    #[inline(always)]
    fn wait(
        &self,
        op: &'static str,
        rank: u32,
        posted: Posted<'_>,
        on_timeout: OnTimeout,
    ) -> Result<Finished> {
        let Posted { token, desc, core } = posted;
        let result = self.wait_token(op, rank, token, core, on_timeout);
        let abandoned = matches!(
            result,
            Err(Error::PeerDead { .. }) | Err(Error::Timeout { .. })
        );
        // An abandoned operation keeps its temporary registration: the
        // provider may still hold it.
        if !desc.temporary.is_null() && !abandoned {
            let _core = self.inner.shared.lock();
            desc.close();
        }
        result
    }

    /// The wait of [`Endpoint::wait`]. A buffer the provider may still write
    /// is never given back early: past the timeout, a posted receive is
    /// cancelled (and the wait goes on if it has already matched), owned
    /// storage is handed to the endpoint until the completion arrives, and an
    /// operation on caller memory keeps waiting, bounded by the failure
    /// detector. A dead peer ends every wait after a grace period: a dead
    /// process performs no more transfers (shm copies are done by the
    /// processes themselves; tcp flushes the connection's operations).
    fn wait_token(
        &self,
        op: &'static str,
        rank: u32,
        token: u64,
        core: SpinGuard<'_, Core>,
        on_timeout: OnTimeout,
    ) -> Result<Finished> {
        // First look with the lock the post still holds: most operations on
        // one host complete within these polls, before any wait state exists.
        let mut core = core;
        for _ in 0..POLLS_PER_LOCK {
            if core.poll() > 0 {
                break;
            }
        }
        if let Some(outcome) = core.slots.take_done(token) {
            return self.outcome(op, rank, outcome);
        }
        drop(core);
        self.wait_longer(op, rank, token, on_timeout)
    }

    /// The rest of [`Endpoint::wait_token`]: polls with backoff, minds the
    /// timeout and the failure detector.
    #[cold]
    #[inline(never)]
    fn wait_longer(
        &self,
        op: &'static str,
        rank: u32,
        token: u64,
        mut on_timeout: OnTimeout,
    ) -> Result<Finished> {
        let mut backoff = self.inner.shared.backoff();
        let mut limit = Some(self.inner.shared.timeout);
        let mut dead_seen = false;
        let mut polls: u32 = 0;
        loop {
            {
                let mut core = self.inner.shared.lock();
                for _ in 0..POLLS_PER_LOCK {
                    if core.poll() > 0 {
                        break;
                    }
                }
                if let Some(outcome) = core.slots.take_done(token) {
                    return self.outcome(op, rank, outcome);
                }
            }
            polls = polls.wrapping_add(1);
            if polls % 64 == 1 {
                self.inner.shared.note_app_progress();
            }
            let waited = backoff.pause();
            if !dead_seen && self.inner.shared.is_dead(rank) {
                dead_seen = true;
                limit = Some(waited + DEAD_PEER_GRACE);
            }
            if limit.is_none_or(|limit| waited <= limit) {
                continue;
            }
            let mut core = self.inner.shared.lock();
            let given_up = if dead_seen {
                if matches!(on_timeout, OnTimeout::Cancel) {
                    // SAFETY: the endpoint is open; token is the context of a
                    // receive this endpoint posted. Whether or not it was
                    // still unmatched, its sender is gone.
                    unsafe { sys::fi_cancel(core.handles.ep_fid(), token as *mut c_void) };
                }
                core.forget(token, on_timeout);
                Error::PeerDead { op, rank }
            } else {
                match on_timeout {
                    OnTimeout::Cancel => {
                        // SAFETY: the endpoint is open; token is the context
                        // of a receive this endpoint posted.
                        let ret =
                            unsafe { sys::fi_cancel(core.handles.ep_fid(), token as *mut c_void) };
                        if ret != 0 {
                            // Already matched: its data is arriving.
                            on_timeout = OnTimeout::Wait;
                            limit = None;
                            continue;
                        }
                    }
                    OnTimeout::Release(_) => {}
                    OnTimeout::Wait => {
                        limit = None;
                        continue;
                    }
                }
                core.forget(token, on_timeout);
                Error::Timeout {
                    op,
                    rank,
                    after: self.inner.shared.timeout,
                }
            };
            return Err(given_up);
        }
    }

    /// The result of an operation to `rank` that ended with `outcome`.
    #[inline(always)]
    fn outcome(&self, op: &'static str, rank: u32, outcome: Outcome) -> Result<Finished> {
        outcome.map_err(|f| {
            if f.code == sys::FI_ETRUNC as i32 {
                // `len` carries the overflow; recv adds its capacity.
                Error::Truncated {
                    rank: f.sender,
                    tag: SourceMatch::user_tag(f.tag),
                    len: f.overflow,
                    capacity: 0,
                }
            } else {
                Error::Completion {
                    op,
                    rank,
                    code: f.code,
                    provider_code: f.provider_code,
                    text: strerror(f.code),
                }
            }
        })
    }

    pub(crate) fn shared(&self) -> &Arc<EndpointState> {
        &self.inner.shared
    }
}

impl Drop for Inner {
    fn drop(&mut self) {
        self.shared.stop.store(true, Ordering::Release);
        if let Some(mut wake) = self.shared.stop_wake.as_ref() {
            let _ = std::io::Write::write_all(&mut wake, &1u64.to_ne_bytes());
        }
        if let Some(thread) = self.background.take() {
            let _ = thread.join();
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn shm() -> Endpoint {
        let config = EndpointConfig {
            progress: ProgressMode::Manual,
            ..EndpointConfig::default()
        };
        Endpoint::open(&config).expect("shm endpoint")
    }

    #[test]
    fn registration_keys_differ_and_fit_the_key_size() {
        let keys: std::collections::HashSet<u64> = (0..1000).map(|_| random_key(8)).collect();
        assert_eq!(keys.len(), 1000);
        assert!(keys.iter().any(|&k| k > u64::from(u32::MAX)));
        assert!((0..100).all(|_| random_key(2) <= 0xffff));
        assert_eq!(random_key(0), 0);
    }

    #[test]
    fn malformed_peer_names_are_refused() {
        let mut ep = shm();
        let own = ep.name().expect("name");
        for bad in [Vec::new(), vec![b'x'; 100_000]] {
            let err = ep.connect(0, &[bad]).unwrap_err();
            assert!(matches!(err, Error::BadDescriptor(_)), "{err}");
        }
        assert!(matches!(
            ep.connect(1, std::slice::from_ref(&own)),
            Err(Error::InvalidRank { rank: 1, size: 1 })
        ));
        ep.connect(0, &[own]).expect("its own name is fine");
        assert_eq!((ep.rank(), ep.size()), (0, 1));
    }

    #[test]
    fn a_singleton_talks_to_itself_and_checks_every_access() {
        let mut ep = shm();
        let own = ep.name().expect("name");
        ep.connect(0, &[own]).expect("connect");
        ep.send(0, 7, b"hello").expect("send");
        let mut buf = [0u8; 16];
        let got = ep.recv(None, 7, &mut buf).expect("recv");
        assert_eq!((got.from, got.tag, &buf[..got.len]), (0, 7, &b"hello"[..]));
        let region = ep
            .register(100, Access::REMOTE_READ | Access::REMOTE_WRITE)
            .expect("register");
        region.write_bytes(0, &[5u8; 100]).expect("fill");
        let remote = region.remote();
        let mut out = [0u8; 10];
        ep.read(0, &remote, 90, &mut out).expect("read");
        assert_eq!(out, [5u8; 10]);
        assert!(matches!(
            ep.read(0, &remote, 91, &mut out),
            Err(Error::OutOfRange { .. })
        ));
        assert!(matches!(
            ep.read(1, &remote, 0, &mut out),
            Err(Error::InvalidRank { .. })
        ));
        assert_eq!(
            ep.fetch_add(0, &remote, 8, 3).expect("fetch_add"),
            0x0505_0505_0505_0505
        );
        assert!(matches!(
            ep.fetch_add(0, &remote, 4, 1),
            Err(Error::Misaligned { .. })
        ));
    }

    #[test]
    fn a_singleton_serves_its_own_calls() {
        let mut ep = shm();
        let own = ep.name().expect("name");
        ep.connect(0, &[own]).expect("connect");
        let mut served = 0u32;
        ep.serve(3, move |from, request, _| {
            served += 1;
            let mut reply = request.to_vec();
            reply.reverse();
            reply.push(from as u8);
            reply.push(served as u8);
            reply
        })
        .expect("serve");
        assert!(matches!(
            ep.serve(3, |_, _, _| Vec::new()),
            Err(Error::ServiceTaken { service: 3 })
        ));
        let mut reply = [0u8; 16];
        for round in 1..=3u8 {
            let len = ep.call(0, 3, b"abc", &mut reply).expect("call");
            assert_eq!(&reply[..len], &[b'c', b'b', b'a', 0, round]);
        }
        let mut small = [0u8; 2];
        assert!(matches!(
            ep.call(0, 3, b"abc", &mut small),
            Err(Error::Truncated { capacity: 2, .. })
        ));
        let huge = vec![0u8; control::MAX_REQUEST + 1];
        assert!(matches!(
            ep.call(0, 3, &huge, &mut reply),
            Err(Error::OutOfRange { .. })
        ));
        // Still serving after the errors.
        assert_eq!(ep.call(0, 3, b"z", &mut reply).expect("call"), 3);
        // A notice runs the handler and wants no reply.
        ep.notify(0, 3, b"q").expect("notify");
        let len = ep.call(0, 3, b"y", &mut reply).expect("call");
        assert_eq!(
            reply[len - 1],
            7,
            "the notice was the 6th request, this the 7th"
        );
    }

    #[test]
    fn a_handler_sends_notices_from_its_outbox() {
        let mut ep = shm();
        let own = ep.name().expect("name");
        ep.connect(0, &[own]).expect("connect");
        // Service 4 relays each request to service 5 as a notice, which
        // counts what it got; a call to 5 reads the count.
        ep.serve(4, |_, request, outbox| {
            outbox.notify(0, 5, request).expect("fits");
            Vec::new()
        })
        .expect("serve");
        let mut got = 0u8;
        ep.serve(5, move |_, request, _| {
            got += u8::from(request == b"relayed");
            vec![got]
        })
        .expect("serve");
        ep.notify(0, 4, b"relayed").expect("notify");
        let mut reply = [0u8; 1];
        let deadline = std::time::Instant::now() + Duration::from_secs(10);
        while reply[0] == 0 && std::time::Instant::now() < deadline {
            ep.call(0, 5, b"count", &mut reply).expect("call");
        }
        assert_eq!(reply[0], 1, "the relayed notice arrived once");
    }

    #[test]
    fn impossible_region_sizes_are_errors() {
        let ep = shm();
        let err = ep
            .register(usize::MAX - 100, Access::REMOTE_READ)
            .err()
            .expect("refused");
        assert!(matches!(err, Error::OutOfRange { .. }), "{err}");
    }
}
