//! Windows: memory of a group of processes open to remote access.
//!
//! # Cost model (the point of this crate)
//! - An [`Exposure`] is memory a process opens to a group, registered once
//!   and kept as long as its owner wants ([`Rma::expose`]): one local
//!   registration, **no message**.
//! - [`Rma::create`] makes a window over an exposure: **no message**, no
//!   registration. Peers on this host read the descriptor from the
//!   owner's board. Elsewhere, the first window over an exposure pushes
//!   its descriptor to the owner's 4 nearest members on other hosts in
//!   group order (its ring neighbours on both sides: at most 4 notices,
//!   whatever p); any other member's first access asks the owner (one
//!   control-plane round trip, answered by the owner's progress engine
//!   even while it computes). The descriptor is cached with the exposure,
//!   so every later window over the same exposure reaches that peer with
//!   no traffic at all.
//! - [`Rma::allocate`] = a new exposure (a pooled registration when one
//!   fits) owned by its window: no message; the first access to each peer
//!   costs one round trip.
//! - [`Rma::create_dynamic`]: a window without memory; [`Window::attach`]
//!   and [`Window::detach`] push the new attachment list to the same 4
//!   members at most (no wait), and to no one on one host. The `k`-th attachment
//!   of a process has displacement `k << 40`, so a program that attaches in
//!   the same order everywhere knows its peers' displacements without
//!   asking (MPI programs exchange `MPI_Get_address` results); an origin
//!   learns a peer's attachments on its first access to them.
//! - [`Window::free`] completes this process's operations and costs
//!   nothing else, on one host and across hosts: **no message**, no wait.
//!   The memory's safety is the exposure's business: releasing an
//!   exposure (when its handle and its windows are all dropped) enters a
//!   dissemination barrier of its group that the progress engines drive
//!   (ceil(log2 p) notices per member, no wait; see `release`), and its
//!   memory is reused (or deregistered) only once that barrier completes,
//!   that is once every member has released it too, so no peer's access
//!   can reach memory that now means something else. Until then it stays
//!   described and registered. When the last handle of the
//!   [`Rma`] goes, it waits for those releases, within the endpoint's
//!   timeout.
//!   Unlike `MPI_Win_free`, freeing does not wait for the peers: a program
//!   that gives an exposure's bytes another meaning while peers may still
//!   access them through their windows synchronises first (an
//!   [`Rma::ibarrier`]), as it would between any two epochs.
//! - Passive epochs: [`Window::lock`] takes the target's lock word (one
//!   atomic round trip through the provider); [`Window::lock_all`] costs
//!   no message, each member's shared lock being taken at the first access
//!   to it; [`Epoch::unlock`] posts the releases and does not wait for
//!   them across hosts (see `Window::release`), so an epoch on a member
//!   elsewhere costs one round trip beyond its accesses. The release
//!   notice of an exposure then waits for this process's releases still in
//!   flight, unless the provider orders messages after atomics (`shm` and
//!   `sockets` do; `tcp` does not).
//!
//! # Memory and paths
//! Every exposure has a header region (128 bytes: the lock word at 0,
//! the region's nonce at 8, a word peers' flushes write at 64), always
//! open to remote atomics, and a data region registered with exactly the
//! rights asked for (a read-only exposure is registered for remote reads
//! only). Both are named shared memory: a peer on the same host maps them
//! (once, on first access) and `get`/`put` are copies; other peers go
//! through the provider. Attachments of dynamic windows are mapped the
//! same way when their memory comes from
//! [`Endpoint::register_shared`], and go through the provider otherwise.
//!
//! Atomics (the lock word, `accumulate`, `fetch_and_op`,
//! `compare_and_swap`) are CPU atomics on the mapped memory when every
//! member of the window lives on one host, and provider atomics otherwise,
//! so that all atomics on one element are atomic with respect to each
//! other.
//!
//! # Completion
//! Blocking operations complete at the target before they return (writes
//! with delivery completion, copies at once), but for a put of up to
//! 64 KiB through the provider: it is posted from a copy and completes at
//! the target by the next `flush`, `unlock`, `fence` or `free`, which
//! reports its failure (as `MPI_Put`; a put then flush costs one round
//! trip either way, puts in a row no longer one each). Request-based
//! operations ([`Epoch::rget`], [`Epoch::rput`]) are completed by their
//! requests or by `flush`, `unlock`, `fence` and `free`; their errors are
//! reported by their requests.
//!
//! Control-plane services of this crate: `DESCRIBE`, `RELEASE_NOTICE`,
//! `BARRIER_NOTICE` and `DESCRIPTION_NOTICE` (0x0101-0x0104).
//!
//! Here: the [`Rma`] registry, [`Exposure`] and the [`Window`] type. Its
//! operations live in submodules: `access` (the data path and atomics),
//! `locks` (passive epochs), `sync` (flush, fence, free), `dynamic`
//! (attach, detach), `description` (the descriptor codec) and `release`
//! (releasing exposures).

use onesided_fabric::fnv::{FastMap, FastSet};
use onesided_fabric::spin::SpinLock;
use onesided_fabric::{Access, Atomics, Endpoint, Mapping, MemoryRegion, RemoteMemory};
use std::cell::{Cell, RefCell};
use std::marker::PhantomData;
use std::sync::atomic::Ordering;
use std::sync::atomic::{AtomicBool, AtomicUsize};
use std::sync::{Arc, Mutex, OnceLock};

use crate::barrier::{Barrier, Barriers, Signals, BARRIER_NOTICE};
use crate::directory::{self, Directory};
use crate::element::{bits, from_bits, Element};
use crate::epoch::Epochs;
use crate::lock::{self, Atomic, LockKind, Outcome};
use crate::mapped::Mapped;
use crate::op::Op;
use crate::relay::Relay;
use crate::transfer::{Inflight, Owned, Rget, Rput};
use crate::{lock_state, Assert, Error, Group};

mod access;
mod description;
mod dynamic;
mod locks;
mod release;
mod sync;

use description::{Attached, Attachments, Described};
use release::Releasing;

/// Control service answering "what is exposure (or dynamic window) X".
pub(crate) const DESCRIBE: u16 = 0x0101;
/// Control service recording "rank R released exposure X".
pub(crate) const RELEASE_NOTICE: u16 = 0x0102;
/// Control service recording "rank R describes X so" (a description
/// pushed to members on other hosts, so that their first access needs no
/// round trip; empty: too long, ask).
pub(crate) const DESCRIPTION_NOTICE: u16 = 0x0104;

/// Bytes of an exposure's header region: two cache lines.
const HEADER: usize = 128;
/// Header offsets: the lock word, the region's nonce, and the word peers
/// write to complete their injected puts (never read).
const LOCK_WORD: usize = 0;
const NONCE: usize = 8;
const FENCE_WORD: usize = 64;

/// Longest description a peer is asked for (a dynamic window's attachments
/// must fit: about a thousand).
const MAX_DESCRIPTION: usize = 64 * 1024;

/// Attachments a dynamic window holds at once (their description must fit
/// [`MAX_DESCRIPTION`]).
const MAX_ATTACHMENTS: usize = 1000;

/// Bits of a dynamic window's displacement below the attachment number.
pub(crate) const ATTACH_SHIFT: u32 = 40;

/// Kinds of collective objects numbered per group.
#[derive(Clone, Copy)]
pub(crate) enum Kind {
    Window = 0,
    Barrier = 1,
    Exposure = 2,
    Context = 3,
}

/// What the control-plane handlers of one process share with its windows.
#[derive(Default)]
struct Served {
    /// This process's exposures and dynamic windows, as peers ask for them.
    described: FastMap<u64, Described>,
    /// Release barriers of exposures (see `release`), by exposure: entered
    /// here, or only heard of from members that entered first.
    releases: FastMap<u64, Release>,
    /// Barrier notices received: (barrier, round, from rank).
    pub(crate) barriers: FastSet<(u64, u32, u32)>,
    /// Descriptions pushed by peers elsewhere, encoded: (exposure or
    /// dynamic window, from rank); empty when too long to push.
    pushed: FastMap<(u64, u32), Vec<u8>>,
}

/// An exposure's release barrier at this process, and its group once
/// this process has entered it (the notice handler needs it to relay).
#[derive(Default)]
struct Release {
    relay: Relay,
    group: Option<Group>,
}

/// A peer's part of an exposure, as cached here.
struct Peer {
    header: RemoteMemory,
    data: RemoteMemory,
    /// Its memory mapped here, when it lives on this host: header, data.
    maps: Option<(Arc<Mapping>, Option<Arc<Mapping>>)>,
}

/// The RMA state of one endpoint: its exposures as served to peers, and
/// the peers' descriptors (and shared memory) as cached here. A handle:
/// clones share it, and its windows and exposures hold it too, so that it
/// lives (and keeps serving) until the last of them is dropped, whatever
/// the order. It is `Send`: a thread may be given a clone (and windows of
/// its own); peers' memory is mapped here and copied to and from without
/// locks, and the registry behind the handle is locked only when a window
/// first meets a peer, exposes or releases. The endpoint's progress thread
/// serves peers meanwhile.
///
/// ```
/// use onesided_rma::{Group, RemoteAccess, Request, Rma};
///
/// # fn main() -> Result<(), Box<dyn std::error::Error>> {
/// let world = onesided_fabric::World::init()?; // one rank without a launcher
/// let rma = Rma::new(world.endpoint())?;
/// let group = Group::world(world.size());
/// let window = rma.allocate(&group, 64, RemoteAccess::ReadWrite)?;
/// // A clone is another handle on the same registry, for another thread
/// // (whose objects go over a group of its own).
/// let (helper, theirs) = (rma.clone(), group.tagged(1));
/// std::thread::spawn(move || helper.ibarrier(&theirs)?.wait())
///     .join()
///     .expect("the helper thread")?;
/// window.free()?;
/// # drop(rma);
/// # world.finalize()?;
/// # Ok(())
/// # }
/// ```
#[derive(Clone)]
pub struct Rma {
    state: Arc<State>,
}

/// What the handles of one [`Rma`] share.
pub(crate) struct State {
    pub(crate) ep: Endpoint,
    served: Arc<Mutex<Served>>,
    attachments: Mutex<FastMap<(u32, u64), Arc<Attachments>>>,
    /// Peers' shared memory mapped here, by name: kept across windows,
    /// since freed regions are reused.
    mappings: Mutex<FastMap<String, Arc<Mapping>>>,
    /// Registered regions ready for the next exposures.
    pools: Mutex<Pools>,
    /// Regions peers may still access: kept, never reused, while the `Rma`
    /// lives.
    retired: Mutex<Vec<Arc<MemoryRegion>>>,
    /// Exposures released here that peers may still access, and how
    /// many (read without the lock).
    releasing: Mutex<Vec<Releasing>>,
    releasing_count: AtomicUsize,
    /// Collective objects created per (member list, kind).
    created: SpinLock<FastMap<(u64, u8), u64>>,
    /// This process's exposures, for peers on this host to read.
    directory: Directory,
    /// Per group key: its barriers here.
    barriers: SpinLock<FastMap<u64, Barriers>>,
    /// Boards of the job's ranks on this host, mapped on first use
    /// (`None`: none), by rank.
    boards: Vec<OnceLock<Option<Arc<Mapping>>>>,
    /// The same for ranks that joined the job after this `Rma` was made,
    /// once their place is known.
    joined_boards: Mutex<FastMap<u32, Option<Arc<Mapping>>>>,
}

/// Registered regions ready for the next exposures: headers, and data.
#[derive(Default)]
struct Pools {
    headers: Vec<MemoryRegion>,
    data: Vec<MemoryRegion>,
}

impl Rma {
    /// Starts serving this process's windows on `ep`. One `Rma` per
    /// endpoint for the life of the process: windows and barriers are
    /// numbered per group, and those numbers live on the endpoint's board.
    ///
    /// # Errors
    /// [`Error::Fabric`] when the services are served already on `ep`;
    /// [`Error::EpochConflict`] when an `Rma` was made on `ep` before.
    pub fn new(ep: &Endpoint) -> Result<Rma, Error> {
        let directory = Directory::new(ep)?;
        let served = Arc::new(Mutex::new(Served::default()));
        let describe = Arc::clone(&served);
        ep.serve(DESCRIBE, move |_, request, _| {
            let Ok(id) = request.try_into().map(u64::from_le_bytes) else {
                return Vec::new();
            };
            lock_state(&describe)
                .described
                .get(&id)
                .map(Described::encode)
                .unwrap_or_default()
        })?;
        let notices = Arc::clone(&served);
        ep.serve(RELEASE_NOTICE, move |_, request, outbox| {
            let Some((id, round)) = release::parse_notice(request) else {
                return Vec::new();
            };
            let mut served = lock_state(&notices);
            let release = served.releases.entry(id).or_default();
            for send in release.relay.arrive(round) {
                // Relayed once this process has entered (and knows the group).
                if let Some(to) = (release.group.as_ref()).and_then(|g| g.job_rank(send.to).ok()) {
                    let _ = outbox.notify(to, RELEASE_NOTICE, &release::notice(id, send.round));
                }
            }
            Vec::new()
        })?;
        let arrivals = Arc::clone(&served);
        ep.serve(BARRIER_NOTICE, move |from, request, _| {
            if let (Some(id), Some(round)) = (
                request
                    .get(..8)
                    .and_then(|b| b.try_into().ok())
                    .map(u64::from_le_bytes),
                request
                    .get(8..12)
                    .and_then(|b| b.try_into().ok())
                    .map(u32::from_le_bytes),
            ) {
                lock_state(&arrivals).barriers.insert((id, round, from));
            }
            Vec::new()
        })?;
        let pushes = Arc::clone(&served);
        ep.serve(DESCRIPTION_NOTICE, move |from, request, _| {
            if let Some((id, description)) = request.split_first_chunk::<8>() {
                let id = u64::from_le_bytes(*id);
                lock_state(&pushes)
                    .pushed
                    .insert((id, from), description.to_vec());
            }
            Vec::new()
        })?;
        Ok(Rma {
            state: Arc::new(State {
                ep: ep.clone(),
                served,
                attachments: Mutex::default(),
                mappings: Mutex::default(),
                pools: Mutex::default(),
                retired: Mutex::default(),
                releasing: Mutex::default(),
                releasing_count: AtomicUsize::new(0),
                created: SpinLock::new(FastMap::default()),
                directory,
                boards: (0..ep.size()).map(|_| OnceLock::new()).collect(),
                joined_boards: Mutex::default(),
                barriers: SpinLock::new(FastMap::default()),
            }),
        })
    }

    /// The endpoint.
    pub fn endpoint(&self) -> &Endpoint {
        &self.state.ep
    }

    /// A context for an object of a layer above over `group` (a
    /// collectives `Comm`, as MPI's context id): the same on every member
    /// that asks in the same order, apart from the group's other contexts
    /// and from its windows, barriers and exposures. No message.
    pub fn next_context(&self, group: &Group) -> u64 {
        self.state.next_id(group, Kind::Context)
    }

    /// Opens `len` bytes of this process's memory to `group` (which it must
    /// belong to), with `access` for the peers. Every member calls it, in the same order for
    /// exposures of the same group; members may expose different lengths.
    /// The bytes are zero when the memory is new and unspecified when a
    /// registration is reused. The owner reads and writes them with
    /// [`Exposure::read`] / [`Exposure::write`] (Rust cannot hand a slice to
    /// remote writers). Peers see the exposure from the first window over
    /// it on, with what the owner wrote before: fill it, then
    /// [`Rma::create`] (as `MPI_Win_create` over memory that holds data).
    ///
    /// Cost: one local registration (none when a pooled one fits); no
    /// message.
    ///
    /// # Errors
    /// [`Error::BadGroup`] when this process is not a member;
    /// [`Error::Fabric`] when registering fails.
    pub fn expose(
        &self,
        group: &Group,
        len: usize,
        access: RemoteAccess,
    ) -> Result<Exposure, Error> {
        self.state.member(group)?;
        // Memory the members have all released goes back to the pools.
        self.state.collect_releases();
        let access = match access {
            RemoteAccess::ReadOnly => Access::REMOTE_READ,
            RemoteAccess::ReadWrite => Access::REMOTE_READ | Access::REMOTE_WRITE,
        };
        let (header, data) = self.state.regions(len, access)?;
        self.exposed(group, header, data, len, access)
    }

    /// Opens the memory of `exposure` to `group` instead (which this
    /// process must belong to), without copying it: what the owner wrote
    /// stays. As [`Rma::expose`], every member of `group` calls it (or
    /// `expose`), in the same order; the old group's members see the old
    /// exposure released, as by its drop. For a job that grows: the data
    /// a process exposed to the old group, opened to the new one.
    ///
    /// Cost: one header from the pool (a registration when it is empty);
    /// no copy, no message.
    ///
    /// ```
    /// use onesided_rma::{Group, RemoteAccess, Rma};
    ///
    /// # fn main() -> Result<(), Box<dyn std::error::Error>> {
    /// let world = onesided_fabric::World::init()?; // one rank without a launcher
    /// let rma = Rma::new(world.endpoint())?;
    /// let old = Group::world(world.size());
    /// let mut exposure = rma.expose(&old, 8, RemoteAccess::ReadOnly)?;
    /// exposure.write(0, &[7u64])?;
    /// let window = rma.create(&exposure);
    /// // Not while a window is open over it; nothing changes.
    /// assert!(rma.regroup(&mut exposure, &old.tagged(1)).is_err());
    /// window.free()?;
    /// rma.regroup(&mut exposure, &old.tagged(1))?;
    /// let mut x = [0u64];
    /// exposure.read(0, &mut x)?;
    /// assert_eq!(x, [7]);
    /// # drop((exposure, rma));
    /// # world.finalize()?;
    /// # Ok(())
    /// # }
    /// ```
    ///
    /// # Errors
    /// [`Error::BadGroup`] when this process is not a member of `group`;
    /// [`Error::EpochConflict`] while a window over `exposure` is open or
    /// after one was dropped without `free` (its memory may still change);
    /// nothing changes then. [`Error::Fabric`] when registering a header fails.
    pub fn regroup(&self, exposure: &mut Exposure, group: &Group) -> Result<(), Error> {
        self.state.member(group)?;
        let Some(old) = Arc::get_mut(&mut exposure.state) else {
            return Err(Error::EpochConflict(
                "regroup: a window over the exposure is still open",
            ));
        };
        if *old.tainted.get_mut() {
            return Err(Error::EpochConflict(
                "regroup: a window over the exposure was dropped without free",
            ));
        }
        self.state.collect_releases();
        let access = old
            .data
            .as_ref()
            .map_or(Access::REMOTE_READ, |d| d.access());
        let (header, _) = self.state.regions(0, access)?;
        let data = old.data.take();
        *exposure = self.exposed(group, header, data, old.len, access)?;
        Ok(())
    }

    /// An exposure to `group` of `data` (`len` bytes of it) with `access`,
    /// its lock word and nonce in `header`.
    fn exposed(
        &self,
        group: &Group,
        header: MemoryRegion,
        data: Option<MemoryRegion>,
        len: usize,
        access: Access,
    ) -> Result<Exposure, Error> {
        // A peer that maps the header checks this, so that it never takes
        // another process's memory of the same name for this one.
        let nonce = nonce();
        header.write_bytes(LOCK_WORD, &0u64.to_le_bytes())?;
        header.write_bytes(NONCE, &nonce.to_le_bytes())?;
        let id = self.state.next_id(group, Kind::Exposure);
        let described = Described::Exposure {
            header: header.remote(),
            // Peers see this exposure's length, not the (pooled) region's.
            data: data.as_ref().map_or(
                RemoteMemory {
                    base: 0,
                    key: 0,
                    len: 0,
                    access,
                },
                |d| RemoteMemory {
                    len: len as u64,
                    ..d.remote()
                },
            ),
            nonce,
            names: (
                header.shared_name().unwrap_or_default().to_string(),
                data.as_ref()
                    .and_then(|d| d.shared_name())
                    .unwrap_or_default()
                    .to_string(),
            ),
        };
        Ok(Exposure {
            state: Arc::new(Exposed {
                rma: Arc::clone(&self.state),
                id,
                group: group.clone(),
                header: Some(header),
                data,
                len,
                tainted: AtomicBool::new(false),
                described: Mutex::new(Some(described)),
                published: AtomicBool::new(false),
                parts: (0..group.size()).map(|_| OnceLock::new()).collect(),
                dynamic: Mutex::new(None),
            }),
        })
    }

    /// Creates a window over `exposure` (the caller's memory), over the
    /// exposure's group. Every member calls it, in the same order for the
    /// windows of one exposure.
    ///
    /// Cost: **no message**, no registration, on one host and across
    /// hosts. The first window over an exposure fetches each peer's
    /// descriptor on first access (one round trip per peer, once per
    /// exposure); every later one reuses them: re-creating a window over
    /// memory already exposed, and freeing it, costs no traffic.
    pub fn create(&self, exposure: &Exposure) -> Window {
        Window::new(Arc::clone(&exposure.state), None)
    }

    /// Creates a window of `len` bytes of new memory over `group` (as
    /// `MPI_Win_allocate`: zero when new, unspecified when a registration
    /// is reused), with `access` for the peers (a window they only read:
    /// [`RemoteAccess::ReadOnly`], its owner writing it with
    /// [`Window::write_local`]). Every member calls it, in the same order
    /// for windows of the same group; members may ask for different
    /// lengths.
    ///
    /// Cost: one local registration (none when a pooled one fits); no
    /// message, on one host and across hosts; the first access to each
    /// peer costs one round trip. Its `free` releases the memory: a notice
    /// to each other member, no wait (see [`Window::free`]).
    ///
    /// # Errors
    /// As [`Rma::expose`].
    pub fn allocate(
        &self,
        group: &Group,
        len: usize,
        access: RemoteAccess,
    ) -> Result<Window, Error> {
        let exposure = self.expose(group, len, access)?;
        Ok(Window::new(exposure.state, None))
    }

    /// Creates a window over `group` without memory
    /// (`MPI_Win_create_dynamic`); memory comes and goes with
    /// [`Window::attach`] / [`Window::detach`].
    ///
    /// Cost: a small registration for the lock word (pooled); no message.
    /// Its `free` sends a notice to each other member, no wait, as an
    /// allocated window's.
    ///
    /// # Errors
    /// As [`Rma::expose`].
    pub fn create_dynamic(&self, group: &Group) -> Result<Window, Error> {
        let exposure = self.expose(group, 0, RemoteAccess::ReadWrite)?;
        let window = Window::new(exposure.state, Some(RefCell::default()));
        window.describe_attachments(&[]);
        Ok(window)
    }

    /// Waits until the exposures this process has released are released
    /// by every member of their groups too, so that their memory is back
    /// in the pool (or retired): the wait `MPI_Win_free` makes at every
    /// free, made here only when a program wants it (before measuring
    /// what it holds, say). Sends nothing.
    ///
    /// # Errors
    /// [`Error::Fabric`] (`Timeout`) when some are still waiting after the
    /// endpoint's timeout.
    pub fn settle_releases(&self) -> Result<(), Error> {
        let (mut backoff, limit) = (self.state.ep.backoff(), self.state.ep.timeout());
        while self.state.collect_releases() > 0 {
            if backoff.pause() > limit {
                return Err(Error::Fabric(onesided_fabric::Error::Timeout {
                    op: "settle releases",
                    rank: self.state.ep.rank(),
                    after: limit,
                }));
            }
        }
        Ok(())
    }

    /// Starts a nonblocking barrier over `group` (a dissemination barrier:
    /// ceil(log2 n) rounds, each a counter raised on this process's board
    /// for partners on its host and a notice for others; see
    /// [`Barrier`]); complete it with
    /// [`crate::Request::test`] / [`crate::Request::wait`]. Every member calls it, in the
    /// same order for barriers of the same group (fences count as
    /// barriers).
    ///
    /// # Errors
    /// [`Error::BadGroup`] when this process is not a member.
    pub fn ibarrier(&self, group: &Group) -> Result<Barrier, Error> {
        State::ibarrier(&self.state, group)
    }
}

impl State {
    /// See [`Rma::ibarrier`].
    fn ibarrier(this: &Arc<State>, group: &Group) -> Result<Barrier, Error> {
        let me = this.member(group)?;
        let start = this.barriers.lock().entry(group.key()).or_default().start();
        let id = collective_id(group, Kind::Barrier as u8, start.seq);
        let signals: Arc<dyn Signals> = this.clone();
        Ok(Barrier::new(signals, group.clone(), me, id, start))
    }

    /// This process's group rank in `group`.
    fn member(&self, group: &Group) -> Result<u32, Error> {
        group
            .group_rank(self.ep.rank())
            .ok_or_else(|| Error::BadGroup(format!("rank {} is not a member", self.ep.rank())))
    }

    /// The number of the next collective object of `kind` over `group`,
    /// the same on every member that creates them in the same order.
    pub(crate) fn next_id(&self, group: &Group, kind: Kind) -> u64 {
        self.next(group, kind).0
    }

    /// The id and the sequence number (from 1) of the next collective
    /// object of `kind` over `group`.
    fn next(&self, group: &Group, kind: Kind) -> (u64, u64) {
        let mut created = self.created.lock();
        let n = created.entry((group.key(), kind as u8)).or_insert(0);
        *n += 1;
        (collective_id(group, kind as u8, *n), *n)
    }

    /// `rank`'s board, when it is on this host and has one.
    pub(crate) fn board(&self, rank: u32) -> Option<Mapped<'_>> {
        let find = || {
            self.same_host(rank)
                .then(|| self.ep.ranks().board_name(rank))
                .flatten()
                .and_then(|name| self.map(name, directory::LEN))
        };
        if let Some(slot) = self.boards.get(rank as usize) {
            return slot.get_or_init(find).as_deref().map(Mapped::Lent);
        }
        if let Some(known) = lock_state(&self.joined_boards).get(&rank) {
            return known.clone().map(Mapped::Held);
        }
        let board = find();
        // A rank not joined yet has no place: asked again later.
        if self.ep.ranks().host_of(rank).is_some() {
            lock_state(&self.joined_boards).insert(rank, board.clone());
        }
        board.map(Mapped::Held)
    }

    /// Whether `rank` shares this process's host (and its shared memory).
    pub(crate) fn same_host(&self, rank: u32) -> bool {
        match (
            self.ep.ranks().host_of(rank),
            self.ep.ranks().host_of(self.ep.rank()),
        ) {
            (Some(a), Some(b)) => a == b,
            _ => false,
        }
    }

    /// The registered shared regions of a new exposure: a header, and
    /// `len` bytes of data with `access` (none when `len` is 0); the
    /// smallest pooled ones that fit, else new ones.
    fn regions(
        &self,
        len: usize,
        access: Access,
    ) -> Result<(MemoryRegion, Option<MemoryRegion>), Error> {
        fn take(pool: &mut Vec<MemoryRegion>, len: usize, access: Access) -> Option<MemoryRegion> {
            let best = pool
                .iter()
                .enumerate()
                .filter(|(_, r)| r.len() >= len && r.access() == access)
                .min_by_key(|(_, r)| r.len())
                .map(|(i, _)| i);
            best.map(|i| pool.swap_remove(i))
        }
        let header_access = Access::REMOTE_READ | Access::REMOTE_WRITE;
        let (header, data) = {
            let mut pools = lock_state(&self.pools);
            let header = take(&mut pools.headers, HEADER, header_access);
            let data = (len > 0).then(|| take(&mut pools.data, len, access));
            (header, data)
        };
        let header = match header {
            Some(h) => h,
            None => self.ep.register_shared(HEADER, header_access)?,
        };
        let data = match data {
            None => None,
            Some(Some(d)) => Some(d),
            Some(None) => Some(self.ep.register_shared(len, access)?),
        };
        Ok((header, data))
    }

    /// Keeps released exposures' regions (header, data) for the next
    /// exposures (a few at most).
    fn pool(&self, regions: Vec<(Option<MemoryRegion>, Option<MemoryRegion>)>) {
        const POOLED: usize = 32;
        if regions.is_empty() {
            return;
        }
        let pools = &mut *lock_state(&self.pools);
        for (header, data) in regions {
            for (pool, region) in [(&mut pools.headers, header), (&mut pools.data, data)] {
                if let Some(region) = region.filter(|_| pool.len() < POOLED) {
                    pool.push(region);
                }
            }
        }
    }

    /// Stops publishing `id` on the board (its description left `served`
    /// with its release) and drops what this process cached of it. Peers'
    /// mappings stay (their regions are pooled and come back with their
    /// next exposures) unless there are many no exposure uses.
    fn forget(&self, id: u64) {
        const MAPPINGS_KEPT: usize = 64;
        self.directory.withdraw(id);
        let mut mappings = lock_state(&self.mappings);
        if mappings.len() > MAPPINGS_KEPT {
            mappings.retain(|_, m| Arc::strong_count(m) > 1);
        }
    }

    /// The description of `id` (an exposure or a dynamic window of
    /// `group`) at `rank`: read from its board when it is on this host, or
    /// from what it pushed here when it is elsewhere and pushes here;
    /// asked over the control plane when `fresh`, when it does not push
    /// here, when the board or the push says to ask, or after a while
    /// without finding it; retried until the peer has created it
    /// (creation is collective: it will come) or the timeout.
    fn look_up(&self, group: &Group, rank: u32, id: u64, fresh: bool) -> Result<Described, Error> {
        /// How long to look where the peer publishes (its board, or what it
        /// pushed) alone before asking too.
        const PUBLISHED_ONLY: std::time::Duration = std::time::Duration::from_millis(20);
        let me = rank == self.ep.rank();
        let board = self.board(rank);
        // Where the owner publishes for this process (its board, or its
        // pushes), the first look waits there; elsewhere it asks at once.
        let published_here =
            board.is_some() || (!me && self.pushed_to(group, rank).contains(&self.ep.rank()));
        let mut backoff = self.ep.backoff();
        let mut waited = std::time::Duration::ZERO;
        loop {
            let mut ask = fresh || waited > PUBLISHED_ONLY || !published_here;
            match &board {
                Some(board) => match directory::lookup(board, id) {
                    directory::Found::Description(bytes) => return Described::decode(&bytes),
                    directory::Found::AskOwner => ask = true,
                    directory::Found::Nothing => {}
                },
                // Nothing is published for it here.
                None if !me && self.same_host(rank) => ask = true,
                None if !fresh && !me => {
                    self.ep.progress();
                    match lock_state(&self.served).pushed.get(&(id, rank)) {
                        Some(bytes) if !bytes.is_empty() => return Described::decode(bytes),
                        Some(_) => ask = true,
                        None => {}
                    }
                }
                None => {}
            }
            if me {
                // Its own is on its board or served here, or gone.
                return lock_state(&self.served)
                    .described
                    .get(&id)
                    .cloned()
                    .ok_or(Error::Gone { window: id });
            }
            if ask {
                let mut reply = vec![0u8; MAX_DESCRIPTION];
                let len = self
                    .ep
                    .call(rank, DESCRIBE, &id.to_le_bytes(), &mut reply)?;
                if len > 0 {
                    return Described::decode(&reply[..len]);
                }
            }
            if self.ep.ranks().is_dead(rank) {
                return Err(onesided_fabric::Error::PeerDead {
                    op: "describe window",
                    rank,
                }
                .into());
            }
            waited = backoff.pause();
            if waited > self.ep.timeout() {
                return Err(Error::Fabric(onesided_fabric::Error::Timeout {
                    op: "describe window (the peer has not created it)",
                    rank,
                    after: self.ep.timeout(),
                }));
            }
        }
    }

    /// How to reach exposure `id` at job rank `rank`: asked of the peer
    /// (or read where it publishes) and mapped when the peer is on this
    /// host. The exposure caches it for all its windows.
    fn peer(&self, group: &Group, rank: u32, id: u64) -> Result<Peer, Error> {
        let Described::Exposure {
            header,
            data,
            nonce,
            names,
        } = self.look_up(group, rank, id, false)?
        else {
            return Err(onesided_fabric::Error::BadDescriptor(format!(
                "rank {rank} described an exposure as a dynamic window"
            ))
            .into());
        };
        let maps = if self.same_host(rank) {
            let unmappable = || {
                onesided_fabric::Error::BadDescriptor(format!(
                    "cannot map the shared memory of rank {rank} on this host"
                ))
            };
            let h = self.map(&names.0, HEADER).ok_or_else(unmappable)?;
            let mut found = [0u8; 8];
            if h.read_bytes(NONCE, &mut found).is_err() || u64::from_le_bytes(found) != nonce {
                return Err(unmappable().into());
            }
            let d = if data.len > 0 {
                Some(
                    self.map(&names.1, data.len as usize)
                        .ok_or_else(unmappable)?,
                )
            } else {
                None
            };
            Some((h, d))
        } else {
            None
        };
        Ok(Peer { header, data, maps })
    }

    /// The attachments of dynamic window `id` at `rank`: cached, or asked
    /// again when `refresh`.
    fn attached(
        &self,
        group: &Group,
        rank: u32,
        id: u64,
        refresh: bool,
    ) -> Result<Arc<Attachments>, Error> {
        if !refresh {
            if let Some(list) = lock_state(&self.attachments).get(&(rank, id)) {
                return Ok(Arc::clone(list));
            }
        }
        let Described::Attachments(list) = self.look_up(group, rank, id, refresh)? else {
            return Err(onesided_fabric::Error::BadDescriptor(format!(
                "rank {rank} described a dynamic window as an exposure"
            ))
            .into());
        };
        let list = Arc::new(list);
        lock_state(&self.attachments).insert((rank, id), Arc::clone(&list));
        Ok(list)
    }

    /// A peer's shared memory `name` of at least `len` bytes, mapped once.
    fn map(&self, name: &str, len: usize) -> Option<Arc<Mapping>> {
        let mut mappings = lock_state(&self.mappings);
        if let Some(m) = mappings.get(name).filter(|m| m.len() >= len) {
            return Some(Arc::clone(m));
        }
        let mapping = Arc::new(Mapping::open_shared(name, len).ok()?);
        mappings.insert(name.to_string(), Arc::clone(&mapping));
        Some(mapping)
    }
}
impl Signals for State {
    fn endpoint(&self) -> &Endpoint {
        &self.ep
    }

    fn board(&self, rank: u32) -> Option<Mapped<'_>> {
        State::board(self, rank)
    }

    fn barrier_done(&self, group: u64, seq: u64) {
        self.barriers.lock().entry(group).or_default().complete(seq);
    }

    /// See [`crate::barrier::claim`].
    fn claim_counter(&self, group: u64) -> Option<usize> {
        crate::barrier::claim(&mut self.barriers.lock(), group)
    }

    /// See [`Directory::raise`].
    fn raise(&self, counter: usize, group: u64, value: u64) -> bool {
        self.directory.raise(counter, group, value)
    }

    fn take_barrier_notice(&self, id: u64, round: u32, from: u32) -> bool {
        lock_state(&self.served).barriers.remove(&(id, round, from))
    }
}

impl Drop for State {
    /// When the last handle goes (the `Rma`'s clones, its windows and
    /// exposures), waits, within the endpoint's timeout and while they live, until
    /// the other members released this process's released exposures too
    /// (they may still be accessing them), then stops serving.
    fn drop(&mut self) {
        let (mut backoff, limit) = (self.ep.backoff(), self.ep.timeout());
        // Lock releases still in flight land first.
        let _ = self.ep.settle_detached();
        while self.collect_releases() > 0 && backoff.pause() <= limit {}
        for service in [DESCRIBE, RELEASE_NOTICE, BARRIER_NOTICE, DESCRIPTION_NOTICE] {
            self.ep.unserve(service);
        }
    }
}

/// A number no other region of this machine is likely to carry.
fn nonce() -> u64 {
    static NEXT: std::sync::atomic::AtomicU64 = std::sync::atomic::AtomicU64::new(0);
    // The process id read once: getpid is a system call (67 ns here), on
    // the path of every exposure.
    static PID: OnceLock<u32> = OnceLock::new();
    let time = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map_or(0, |d| d.as_nanos() as u64);
    mix(u64::from(*PID.get_or_init(std::process::id)) << 32
        ^ NEXT.fetch_add(1, Ordering::Relaxed)
        ^ time.rotate_left(17))
}

/// splitmix64's finaliser: every input bit reaches every output bit.
fn mix(mut h: u64) -> u64 {
    h = (h ^ (h >> 30)).wrapping_mul(0xbf58_476d_1ce4_e5b9);
    h = (h ^ (h >> 27)).wrapping_mul(0x94d0_49bb_1331_11eb);
    h ^ (h >> 31)
}

/// A stable number for the `n`-th collective object of `kind` over
/// `group`: the group's key mixed with the kind and the count (never 0,
/// which marks an empty directory slot).
fn collective_id(group: &Group, kind: u8, n: u64) -> u64 {
    mix(group.key() ^ (u64::from(kind) << 56) ^ n).max(1)
}

/// What peers may do with a process's exposed memory.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
///
/// ```
/// use onesided_rma::{Assert, Error, Group, RemoteAccess, Rma};
///
/// # fn main() -> Result<(), Box<dyn std::error::Error>> {
/// let world = onesided_fabric::World::init()?; // one rank without a launcher
/// let rma = Rma::new(world.endpoint())?;
/// let window = rma.allocate(&Group::world(world.size()), 8, RemoteAccess::ReadOnly)?;
/// window.write_local(0, &[42u64])?; // its owner writes it
/// let epoch = window.lock_all(Assert::empty())?;
/// let refused = epoch.put(0, 0, &[1u64]);
/// assert!(matches!(refused, Err(Error::Fabric(onesided_fabric::Error::NotPermitted { .. }))));
/// epoch.unlock()?;
/// window.free()?;
/// # drop(rma);
/// # world.finalize()?;
/// # Ok(())
/// # }
/// ```
pub enum RemoteAccess {
    /// Read and write it (put, get, atomics).
    ReadWrite,
    /// Only read it: the memory is registered for remote reads alone
    /// (least privilege), and `put` and the atomics on it fail.
    ReadOnly,
}

/// Memory of this process open to a group ([`Rma::expose`]): windows are
/// created over it ([`Rma::create`]) as often as wanted, and keep it as
/// long as they live. It is released when the last of them and this
/// handle are gone: a notice to each other member, no wait; its
/// registration goes back to the pool once every member has released it
/// too (or, when a window over it was dropped without `free`, is kept
/// unused, since peers may still access it).
///
/// ```
/// use onesided_rma::{Assert, Group, RemoteAccess, Rma};
///
/// # fn main() -> Result<(), Box<dyn std::error::Error>> {
/// let world = onesided_fabric::World::init()?; // one rank without a launcher
/// let rma = Rma::new(world.endpoint())?;
/// let group = Group::world(world.size());
/// let exposure = rma.expose(&group, 16, RemoteAccess::ReadOnly)?;
/// exposure.write(0, &[7u64, 8])?;
/// // Windows over it cost no message, and free costs none either.
/// for _ in 0..3 {
///     let window = rma.create(&exposure);
///     let epoch = window.lock_all(Assert::empty())?;
///     let mut got = [0u64; 2];
///     epoch.get(0, 0, &mut got)?;
///     assert_eq!(got, [7, 8]);
///     epoch.unlock()?;
///     window.free()?;
/// }
/// # drop((exposure, rma));
/// # world.finalize()?;
/// # Ok(())
/// # }
/// ```
pub struct Exposure {
    state: Arc<Exposed>,
}

/// An exposure's state, shared by its handle and its windows.
struct Exposed {
    rma: Arc<State>,
    id: u64,
    group: Group,
    header: Option<MemoryRegion>,
    data: Option<MemoryRegion>,
    len: usize,
    /// Members' parts of it, by group rank, learned at the first access
    /// of any of its windows (read without a lock or a reference count
    /// on the data path).
    parts: Vec<OnceLock<Peer>>,
    /// A window over it was dropped without `free` (every window holds
    /// the exposure, so by its drop each was freed or set this).
    tainted: AtomicBool,
    /// Its description, until the first window over it publishes it
    /// (`published` then).
    described: Mutex<Option<Described>>,
    published: AtomicBool,
    /// The dynamic window it served (its number and its attachments'
    /// regions), once freed: released with it.
    dynamic: Mutex<Option<(u64, Vec<Arc<MemoryRegion>>)>>,
}

impl Exposure {
    /// The group it is open to.
    pub fn group(&self) -> &Group {
        &self.state.group
    }

    /// Bytes exposed.
    pub fn len(&self) -> usize {
        self.state.len
    }

    /// Whether no byte is exposed.
    pub fn is_empty(&self) -> bool {
        self.state.len == 0
    }

    /// Copies elements out of the exposed memory, from byte `offset` (a
    /// load: no epoch needed for one's own memory).
    ///
    /// # Errors
    /// [`Error::OutOfRange`] outside the exposure.
    pub fn read<T: bytemuck::Pod>(&self, offset: usize, out: &mut [T]) -> Result<(), Error> {
        self.state.read(offset, out)
    }

    /// Copies elements into the exposed memory at byte `offset` (a store).
    ///
    /// # Errors
    /// [`Error::OutOfRange`] outside the exposure.
    pub fn write<T: bytemuck::Pod>(&self, offset: usize, data: &[T]) -> Result<(), Error> {
        self.state.write(offset, data)
    }
}

impl Exposed {
    fn read<T: bytemuck::Pod>(&self, offset: usize, out: &mut [T]) -> Result<(), Error> {
        let out = bytemuck::cast_slice_mut(out);
        self.check(offset, out.len())?;
        match &self.data {
            Some(d) => Ok(d.read_bytes(offset, out)?),
            None => Ok(()),
        }
    }

    fn write<T: bytemuck::Pod>(&self, offset: usize, data: &[T]) -> Result<(), Error> {
        let data = bytemuck::cast_slice(data);
        self.check(offset, data.len())?;
        match &self.data {
            Some(d) => Ok(d.write_bytes(offset, data)?),
            None => Ok(()),
        }
    }

    /// The same error as a peer's access outside this part gets.
    fn check(&self, offset: usize, len: usize) -> Result<(), Error> {
        match offset.checked_add(len) {
            Some(end) if end <= self.len => Ok(()),
            _ => Err(Error::OutOfRange {
                what: "local access",
                target: self.group.group_rank(self.rma.ep.rank()).unwrap_or(0),
                window: self.id,
                offset: offset as u64,
                len: len as u64,
                size: self.len as u64,
            }),
        }
    }

    fn header(&self) -> Result<&MemoryRegion, Error> {
        self.header.as_ref().ok_or(Error::Gone { window: self.id })
    }
}

impl Drop for Exposed {
    /// Releases it: a notice to each other member, no
    /// wait.
    fn drop(&mut self) {
        let memory = (self.header.take(), self.data.take());
        let tainted = *self.tainted.get_mut();
        let dynamic = self
            .dynamic
            .get_mut()
            .unwrap_or_else(|p| p.into_inner())
            .take();
        self.rma
            .release(self.id, &self.group, memory, dynamic, tainted);
    }
}

/// One attachment of a dynamic window.
struct Attachment {
    disp: u64,
    region: Arc<MemoryRegion>,
}

/// One process's view of a window over a group: an owned handle, which
/// keeps its exposure and its `Rma` alive. It is `Send` (a thread may be
/// given it), not `Sync`: its epochs are this handle's.
///
/// ```
/// use onesided_rma::{Assert, Group, LockKind, Op, RemoteAccess, Rma};
///
/// # fn main() -> Result<(), Box<dyn std::error::Error>> {
/// let world = onesided_fabric::World::init()?; // one rank without a launcher
/// let rma = Rma::new(world.endpoint())?;
/// let window = rma.allocate(&Group::world(world.size()), 8, RemoteAccess::ReadWrite)?;
/// window.write_local(0, &[0u64])?;
/// let epoch = window.lock(0, LockKind::Exclusive, Assert::empty())?;
/// epoch.accumulate(0, 0, &[5u64], Op::SUM)?;
/// assert_eq!(epoch.fetch_and_op(0, 0, 0u64, Op::NO_OP)?, 5);
/// epoch.unlock()?;
/// window.free()?;
/// # drop(rma);
/// # world.finalize()?;
/// # Ok(())
/// # }
/// ```
pub struct Window {
    /// The window's own number (free notices, dynamic descriptions).
    id: u64,
    /// Its memory: the exposure it was created over, or (allocated and
    /// dynamic windows) its own.
    exposure: Arc<Exposed>,
    /// Attachments of a dynamic window (`None`: not dynamic); the count of
    /// attachments ever made.
    attached: Option<RefCell<(Vec<Attachment>, u64)>>,
    /// Atomics on mapped memory are CPU atomics: every member lives on
    /// this host, or atomics are applied by their targets (software).
    local_atomics: bool,
    epochs: RefCell<Epochs>,
    inflight: RefCell<Vec<Arc<Inflight>>>,
    /// Group ranks put to through the provider since their last
    /// completion, and how ([`Epoch::put`]).
    written: RefCell<FastMap<u32, Written>>,
    /// In a `lock_all` epoch that takes locks: whether this process holds
    /// each member's shared lock yet (empty otherwise).
    shared_locks: RefCell<Vec<bool>>,
    /// An access through the provider failed in the current epoch: its
    /// lock releases wait, so that closing it reports a dead target.
    access_failed: Cell<bool>,
    freed: bool,
}

/// How a target was put to since its last completion.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Written {
    /// Posted puts only, each completed by waiting for it.
    Posted,
    /// Injected puts too, completed by a delivered write after them.
    Injected,
}

/// Where `len` bytes of a target live: its rank, descriptor, mapping (on
/// this host) and the offset in that memory.
struct Place<'a> {
    rank: u32,
    remote: RemoteMemory,
    map: Option<Mapped<'a>>,
    at: u64,
}

/// An open epoch: a lock on one target ([`Window::lock`]) or on every
/// member ([`Window::lock_all`]), an `Epoch<Locked>`; or a fence epoch
/// ([`Window::fence`]), an `Epoch<Fenced>`. The accesses are methods of
/// both, so none compiles outside an epoch; `unlock` exists only on a
/// lock epoch and `fence`/`end` only on a fence epoch, and closing
/// consumes the guard, so no access compiles after it. Dropping the
/// guard closes the epoch too, ignoring errors (a fence epoch then ends
/// without the collective).
///
/// ```
/// use onesided_rma::{Assert, Group, RemoteAccess, Request, Rma};
///
/// # fn main() -> Result<(), Box<dyn std::error::Error>> {
/// let world = onesided_fabric::World::init()?; // one rank without a launcher
/// let rma = Rma::new(world.endpoint())?;
/// let window = rma.allocate(&Group::world(world.size()), 16, RemoteAccess::ReadWrite)?;
/// // A fence epoch: every member may be accessed until the last fence.
/// let mut epoch = window.fence(Assert::NOPRECEDE)?;
/// epoch.put(0, 0, &[1u32, 2, 3, 4])?;
/// epoch.fence(Assert::empty())?;
/// let mut back = [0u32; 4];
/// epoch.rget(0, 0, &mut back)?.wait()?;
/// epoch.end(Assert::empty())?; // the last fence, asserting NOSUCCEED
/// assert_eq!(back, [1, 2, 3, 4]);
/// window.free()?;
/// # drop(rma);
/// # world.finalize()?;
/// # Ok(())
/// # }
/// ```
pub struct Epoch<'w, K: EpochKind = Locked> {
    window: &'w Window,
    /// The locked target, or `None` for `lock_all` and fence epochs.
    target: Option<u32>,
    /// The lock taken on the target's lock word (none with `NOCHECK`, and
    /// for `lock_all`, whose locks the window takes and tracks).
    held: Option<LockKind>,
    /// Until the guard closes it (a dropped guard closes it too).
    open: bool,
    kind: PhantomData<K>,
}

/// An [`Epoch`] of passive target, opened by [`Window::lock`] or
/// [`Window::lock_all`] and closed by [`Epoch::unlock`].
#[derive(Debug)]
pub enum Locked {}

/// An [`Epoch`] of active target, opened by [`Window::fence`], advanced by
/// [`Epoch::fence`] and closed by [`Epoch::end`].
#[derive(Debug)]
pub enum Fenced {}

/// Which kind of epoch a guard is ([`Locked`] or [`Fenced`]): its
/// accesses are the same, its synchronisation differs. Sealed.
pub trait EpochKind: sealed::Sealed {
    /// A fence epoch.
    #[doc(hidden)]
    const FENCE: bool;
}

mod sealed {
    pub trait Sealed {}
    impl Sealed for super::Locked {}
    impl Sealed for super::Fenced {}
}

impl EpochKind for Locked {
    const FENCE: bool = false;
}

impl EpochKind for Fenced {
    const FENCE: bool = true;
}

impl<'w, K: EpochKind> Epoch<'w, K> {
    /// A guard over `window` just opened.
    pub(crate) fn opened(window: &'w Window, target: Option<u32>, held: Option<LockKind>) -> Self {
        Epoch {
            window,
            target,
            held,
            open: true,
            kind: PhantomData,
        }
    }
}

impl Window {
    fn new(exposure: Arc<Exposed>, attached: Option<RefCell<(Vec<Attachment>, u64)>>) -> Window {
        let rma = &exposure.rma;
        let on_host = exposure.group.members().iter().all(|&r| rma.same_host(r));
        // Software atomics are CPU atomics at the target: mapped members'
        // CPU atomics join them.
        let local_atomics = on_host || rma.ep.granted().atomics() == Atomics::Software;
        // Published by the first window (checked without the lock after).
        let described = match exposure.published.load(Ordering::Acquire)
            || exposure.published.swap(true, Ordering::AcqRel)
        {
            true => None,
            false => lock_state(&exposure.described).take(),
        };
        if let Some(described) = described {
            // Peers see it from now on, with what the owner wrote so far:
            // on the board, and from the control plane when a member lives
            // elsewhere (or the board has no room).
            let on_board = rma.board(rma.ep.rank()).is_some()
                && rma.directory.publish(exposure.id, &described.encode());
            if !(on_board && on_host) {
                rma.push(&exposure.group, exposure.id, &described);
                lock_state(&rma.served)
                    .described
                    .insert(exposure.id, described);
            }
        }
        let id = rma.next_id(&exposure.group, Kind::Window);
        Window {
            id,
            exposure,
            attached,
            local_atomics,
            epochs: RefCell::default(),
            inflight: RefCell::default(),
            written: RefCell::default(),
            shared_locks: RefCell::default(),
            access_failed: Cell::new(false),
            freed: false,
        }
    }

    /// Group rank `target`'s part of the exposure (job rank `rank`).
    fn part(&self, target: u32, rank: u32) -> Result<&Peer, Error> {
        let slot = self
            .exposure
            .parts
            .get(target as usize)
            .ok_or_else(|| Error::NotInGroup {
                rank: target,
                size: self.exposure.parts.len() as u32,
            })?;
        if let Some(peer) = slot.get() {
            return Ok(peer);
        }
        let peer = self
            .rma()
            .peer(&self.exposure().group, rank, self.exposure().id)?;
        Ok(slot.get_or_init(|| peer))
    }

    /// `target`'s part as this process maps it, when `target` lives on
    /// this host (its part is shared memory): the mapping, the part
    /// starting at its first byte. For layers above that synchronise
    /// through the memory themselves (the shared-memory collectives):
    /// accesses through it are plain loads, stores and CPU atomics,
    /// outside any epoch and its checks. `None` for a peer elsewhere.
    ///
    /// # Errors
    /// [`Error::NotInGroup`]; [`Error::Gone`] after `free`; errors
    /// learning the peer's part.
    pub fn mapped(&self, target: u32) -> Result<Option<Arc<Mapping>>, Error> {
        let rank = self.group().job_rank(target)?;
        self.alive()?;
        let peer = self.part(target, rank)?;
        Ok(peer.maps.as_ref().and_then(|(_, data)| data.clone()))
    }

    fn exposure(&self) -> &Exposed {
        &self.exposure
    }

    /// The registry, through the exposure (one reference count less to
    /// move per window).
    fn rma(&self) -> &Arc<State> {
        &self.exposure.rma
    }

    /// This window's group.
    pub fn group(&self) -> &Group {
        &self.exposure().group
    }

    /// Bytes of this process's part of the window (0 for a dynamic one).
    pub fn len(&self) -> usize {
        self.exposure().len
    }

    /// Whether this process's part is empty.
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    /// Copies elements of this process's own part, from byte `offset` (a
    /// load, no epoch needed).
    ///
    /// # Errors
    /// [`Error::OutOfRange`] outside the window.
    pub fn read_local<T: bytemuck::Pod>(&self, offset: usize, out: &mut [T]) -> Result<(), Error> {
        self.alive()?;
        self.exposure().read(offset, out)
    }

    /// Writes elements into this process's own part at byte `offset` (a
    /// store, no epoch needed).
    ///
    /// # Errors
    /// [`Error::OutOfRange`] outside the window.
    pub fn write_local<T: bytemuck::Pod>(&self, offset: usize, data: &[T]) -> Result<(), Error> {
        self.alive()?;
        self.exposure().write(offset, data)
    }

    fn alive(&self) -> Result<(), Error> {
        self.exposure().header().map(drop)
    }

    /// This process's part as a raw pointer (`None` when it has no memory,
    /// as a dynamic window), for code that shares it with C (the MPI ABI's
    /// base pointer): loads and stores through it race with peers' RMA as
    /// MPI's unified model allows, ordered by the window's epochs. Valid
    /// until the window is freed.
    pub fn local_ptr(&self) -> Option<*mut u8> {
        (self.exposure().data.as_ref()).map(MemoryRegion::as_ptr)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn collective_ids_differ_by_group_kind_and_count() {
        let a = Group::new(vec![0, 1]).unwrap();
        let b = Group::new(vec![1, 0]).unwrap();
        assert_ne!(collective_id(&a, 0, 1), collective_id(&a, 0, 2));
        assert_ne!(collective_id(&a, 0, 1), collective_id(&b, 0, 1));
        assert_ne!(collective_id(&a, 0, 1), collective_id(&a, 1, 1));
        assert_eq!(collective_id(&a, 0, 3), collective_id(&a.clone(), 0, 3));
    }
}
