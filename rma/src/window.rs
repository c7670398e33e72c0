//! Windows: memory of a group of processes open to remote access.
//!
//! # Cost model (the point of this crate)
//! - An [`Exposure`] is memory a process opens to a group, registered once
//!   and kept as long as its owner wants ([`Rma::expose`]): one local
//!   registration, **no message**.
//! - [`Rma::create`] makes a window over an exposure: **no message**, no
//!   registration. The first access to a peer's part of an exposure asks
//!   that peer for its descriptor (one control-plane round trip, answered
//!   by the peer's progress engine even while it computes); the descriptor
//!   is cached with the exposure, so every later window over the same
//!   exposure reaches that peer with no traffic at all.
//! - [`Rma::allocate`] = a new exposure (a pooled registration when one
//!   fits) owned by its window: no message; the first access to each peer
//!   costs one round trip.
//! - [`Rma::create_dynamic`]: a window without memory; [`Window::attach`]
//!   and [`Window::detach`] are local (no message). The `k`-th attachment
//!   of a process has displacement `k << 40`, so a program that attaches in
//!   the same order everywhere knows its peers' displacements without
//!   asking (MPI programs exchange `MPI_Get_address` results); an origin
//!   learns a peer's attachments on its first access to them.
//! - [`Window::free`] completes this process's operations and costs
//!   nothing else, on one host and across hosts: **no message**, no wait.
//!   The memory's safety is the exposure's business: releasing an
//!   exposure (dropping it; an allocated or dynamic window's own, with the
//!   window) sends each other member a notice and returns, and its memory
//!   is reused (or deregistered) only once every member has released it
//!   too, so no peer's access can reach memory that now means something
//!   else. Until then it stays described and registered. Dropping the
//!   [`Rma`] waits for those releases, within the endpoint's timeout.
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
//! Every exposure has a header region (128 bytes: the lock word at 0 and
//! the region's nonce at 8), always
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
//! with delivery completion, copies at once). Request-based operations
//! ([`Window::rget`], [`Window::rput`]) are completed by their requests or
//! by `flush`, `unlock`, `fence` and `free`; their errors are reported by
//! their requests.
//!
//! Control-plane services of this crate: [`DESCRIBE`], [`RELEASE_NOTICE`],
//! [`BARRIER_NOTICE`] and [`DESCRIPTION_NOTICE`].

use onesided_fabric::{Access, Endpoint, Mapping, MemoryRegion, RemoteMemory};
use std::cell::{Cell, RefCell};
use std::collections::{HashMap, HashSet};
use std::rc::Rc;
use std::sync::atomic::Ordering;
use std::sync::{Arc, Mutex, MutexGuard};

use crate::barrier::Barrier;
use crate::directory::{self, Directory};
use crate::element::{bits, from_bits, Element, Op};
use crate::epoch::Epochs;
use crate::lock::{self, Atomic, LockKind, Outcome};
use crate::transfer::{Inflight, Rget, Rput};
use crate::{Error, Group};

mod description;
mod release;

use description::{Attached, Attachments, Described};
use release::Releasing;

/// Control service answering "what is exposure (or dynamic window) X".
pub const DESCRIBE: u16 = 0x0101;
/// Control service recording "rank R released exposure X".
pub const RELEASE_NOTICE: u16 = 0x0102;
/// Control service recording "rank R reached round K of barrier B".
pub const BARRIER_NOTICE: u16 = 0x0103;
/// Control service recording "rank R describes X so" (a description
/// pushed to members on other hosts, so that their first access needs no
/// round trip; empty: too long, ask).
pub const DESCRIPTION_NOTICE: u16 = 0x0104;

/// Bytes of an exposure's header region: two cache lines.
const HEADER: usize = 128;
/// Header offsets: the lock word and the region's nonce.
const LOCK_WORD: usize = 0;
const NONCE: usize = 8;

/// Longest description a peer is asked for (a dynamic window's attachments
/// must fit: about a thousand).
const MAX_DESCRIPTION: usize = 64 * 1024;

/// Attachments a dynamic window holds at once (their description must fit
/// [`MAX_DESCRIPTION`]).
const MAX_ATTACHMENTS: usize = 1000;

/// Bits of a dynamic window's displacement below the attachment number.
pub const ATTACH_SHIFT: u32 = 40;

/// Kinds of collective objects numbered per group.
#[derive(Clone, Copy)]
pub(crate) enum Kind {
    Window = 0,
    Barrier = 1,
    Exposure = 2,
}

pub(crate) fn lock_state<T>(m: &Mutex<T>) -> MutexGuard<'_, T> {
    m.lock().unwrap_or_else(|p| p.into_inner())
}

/// FNV-1a, for the small keys of this module's maps (ids, ranks, names):
/// several times cheaper than the default SipHash, and these keys are not
/// chosen by an adversary.
#[derive(Default)]
pub struct Fnv(u64);

impl std::hash::Hasher for Fnv {
    fn finish(&self) -> u64 {
        self.0
    }

    fn write(&mut self, bytes: &[u8]) {
        let mut hash = if self.0 == 0 {
            0xcbf2_9ce4_8422_2325
        } else {
            self.0
        };
        for b in bytes {
            hash = (hash ^ u64::from(*b)).wrapping_mul(0x0100_0000_01b3);
        }
        self.0 = hash;
    }
}

/// A map with [`Fnv`] hashing.
pub type FastMap<K, V> = HashMap<K, V, std::hash::BuildHasherDefault<Fnv>>;
/// A set with [`Fnv`] hashing.
pub(crate) type FastSet<K> = HashSet<K, std::hash::BuildHasherDefault<Fnv>>;

/// What the control-plane handlers of one process share with its windows.
#[derive(Default)]
struct Served {
    /// This process's exposures and dynamic windows, as peers ask for them.
    described: FastMap<u64, Described>,
    /// Release notices received: (exposure, from rank).
    released: FastSet<(u64, u32)>,
    /// Barrier notices received: (barrier, round, from rank).
    pub(crate) barriers: FastSet<(u64, u32, u32)>,
    /// Descriptions pushed by peers elsewhere, encoded: (exposure or
    /// dynamic window, from rank); empty when too long to push.
    pushed: FastMap<(u64, u32), Vec<u8>>,
}

/// A peer's part of an exposure, as cached here.
struct Peer {
    header: RemoteMemory,
    data: RemoteMemory,
    /// Its memory mapped here, when it lives on this host: header, data.
    maps: Option<(Rc<Mapping>, Option<Rc<Mapping>>)>,
}

/// The RMA state of one endpoint: its exposures as served to peers, and
/// the peers' descriptors (and shared memory) as cached here. It and its
/// windows belong to the thread that made them (peers' memory is mapped
/// here and copied to and from without locks); the endpoint's progress
/// thread serves peers meanwhile.
pub struct Rma<'e> {
    pub(crate) ep: &'e Endpoint,
    served: Arc<Mutex<Served>>,
    peers: RefCell<FastMap<(u32, u64), Rc<Peer>>>,
    attachments: RefCell<FastMap<(u32, u64), Rc<Attachments>>>,
    /// Peers' shared memory mapped here, by name: kept across windows,
    /// since freed regions are reused.
    mappings: RefCell<FastMap<String, Rc<Mapping>>>,
    /// Registered data regions ready for the next exposures.
    pool: RefCell<Vec<MemoryRegion>>,
    /// Registered header regions ready for the next exposures.
    headers: RefCell<Vec<MemoryRegion>>,
    /// Regions peers may still access: kept, never reused, while the `Rma`
    /// lives.
    retired: RefCell<Vec<MemoryRegion>>,
    /// Exposures released here that peers may still access.
    releasing: RefCell<Vec<Releasing>>,
    /// Collective objects created per (member list, kind).
    created: RefCell<FastMap<(u64, u8), u64>>,
    /// This process's exposures, for peers on this host to read.
    directory: Directory,
    /// Per group key: barriers completed in order, and those completed
    /// ahead of an earlier one.
    barriers_done: RefCell<FastMap<u64, (u64, FastSet<u64>)>>,
    /// Boards of peers on this host, mapped on first use (`None`: none).
    boards: RefCell<FastMap<u32, Option<Rc<Mapping>>>>,
}

impl<'e> Rma<'e> {
    /// Starts serving this process's windows on `ep`. One `Rma` per
    /// endpoint for the life of the process: windows and barriers are
    /// numbered per group, and those numbers live on the endpoint's board.
    ///
    /// # Errors
    /// [`Error::Fabric`] when the services are served already on `ep`;
    /// [`Error::EpochConflict`] when an `Rma` was made on `ep` before.
    pub fn new(ep: &'e Endpoint) -> Result<Rma<'e>, Error> {
        let directory = Directory::new(ep)?;
        let served = Arc::new(Mutex::new(Served::default()));
        let describe = Arc::clone(&served);
        ep.serve(DESCRIBE, move |_, request| {
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
        ep.serve(RELEASE_NOTICE, move |from, request| {
            if let Ok(id) = request.try_into().map(u64::from_le_bytes) {
                lock_state(&notices).released.insert((id, from));
            }
            Vec::new()
        })?;
        let arrivals = Arc::clone(&served);
        ep.serve(BARRIER_NOTICE, move |from, request| {
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
        ep.serve(DESCRIPTION_NOTICE, move |from, request| {
            if let Some((id, description)) = request.split_first_chunk::<8>() {
                let id = u64::from_le_bytes(*id);
                lock_state(&pushes)
                    .pushed
                    .insert((id, from), description.to_vec());
            }
            Vec::new()
        })?;
        Ok(Rma {
            ep,
            served,
            peers: RefCell::default(),
            attachments: RefCell::default(),
            mappings: RefCell::default(),
            pool: RefCell::default(),
            headers: RefCell::default(),
            retired: RefCell::default(),
            releasing: RefCell::default(),
            created: RefCell::default(),
            directory,
            boards: RefCell::default(),
            barriers_done: RefCell::default(),
        })
    }

    /// The endpoint.
    pub fn endpoint(&self) -> &'e Endpoint {
        self.ep
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
        let mut created = self.created.borrow_mut();
        let n = created.entry((group.key(), kind as u8)).or_insert(0);
        *n += 1;
        (collective_id(group, kind as u8, *n), *n)
    }

    /// `rank`'s board, when it is on this host and has one.
    pub(crate) fn board(&self, rank: u32) -> Option<Rc<Mapping>> {
        if let Some(known) = self.boards.borrow().get(&rank) {
            return known.clone();
        }
        let board = self
            .same_host(rank)
            .then(|| self.ep.board_name(rank))
            .flatten()
            .and_then(|name| self.map(name, directory::LEN));
        self.boards.borrow_mut().insert(rank, board.clone());
        board
    }

    /// How many of `group`'s barriers have completed here in order.
    pub(crate) fn barriers_done(&self, group: u64) -> u64 {
        self.barriers_done.borrow().get(&group).map_or(0, |d| d.0)
    }

    /// Records that barrier `seq` of `group` completed here (barriers
    /// completed out of order wait until the ones before them complete).
    pub(crate) fn barrier_done(&self, group: u64, seq: u64) {
        let mut done = self.barriers_done.borrow_mut();
        let (upto, ahead) = done.entry(group).or_default();
        if seq > *upto {
            ahead.insert(seq);
        }
        while ahead.remove(&(*upto + 1)) {
            *upto += 1;
        }
    }

    /// Sets this process's counter of `group` (see [`Directory::signal`]).
    pub(crate) fn signal(&self, group: u64, value: u64) -> bool {
        self.directory.signal(group, value)
    }

    /// Whether `rank` shares this process's host (and its shared memory).
    pub(crate) fn same_host(&self, rank: u32) -> bool {
        match (self.ep.host_of(rank), self.ep.host_of(self.ep.rank())) {
            (Some(a), Some(b)) => a == b,
            _ => false,
        }
    }

    /// Opens `len` bytes of this process's memory to `group` (which it must
    /// belong to), for reading and writing or, with `read_only`, for
    /// reading alone. Every member calls it, in the same order for
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
        read_only: bool,
    ) -> Result<Exposure<'_>, Error> {
        self.member(group)?;
        let access = if read_only {
            Access::REMOTE_READ
        } else {
            Access::REMOTE_READ | Access::REMOTE_WRITE
        };
        let header = self.region(
            &self.headers,
            HEADER,
            Access::REMOTE_READ | Access::REMOTE_WRITE,
        )?;
        let data = if len > 0 {
            Some(self.region(&self.pool, len, access)?)
        } else {
            None
        };
        // A peer that maps the header checks this, so that it never takes
        // another process's memory of the same name for this one.
        let nonce = nonce();
        header.write_bytes(LOCK_WORD, &0u64.to_le_bytes())?;
        header.write_bytes(NONCE, &nonce.to_le_bytes())?;
        let id = self.next_id(group, Kind::Exposure);
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
            rma: self,
            id,
            group: group.clone(),
            header: Some(header),
            data,
            len,
            windows: Cell::new(0),
            freed: Cell::new(0),
            tainted: Cell::new(false),
            described: RefCell::new(Some(described)),
            dynamic: RefCell::new(None),
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
    pub fn create<'a>(&'a self, exposure: &'a Exposure<'a>) -> Window<'a> {
        Window::new(self, Memory::Borrowed(exposure), None)
    }

    /// Creates a window of `len` bytes of new memory over `group` (as
    /// `MPI_Win_allocate`: zero when new, unspecified when a registration
    /// is reused). Every member calls it, in the same order for windows of
    /// the same group; members may ask for different lengths.
    ///
    /// Cost: one local registration (none when a pooled one fits); no
    /// message, on one host and across hosts; the first access to each
    /// peer costs one round trip. Its `free` releases the memory: a notice
    /// to each other member, no wait (see [`Window::free`]).
    ///
    /// # Errors
    /// As [`Rma::expose`].
    pub fn allocate(&self, group: &Group, len: usize) -> Result<Window<'_>, Error> {
        let exposure = self.expose(group, len, false)?;
        Ok(Window::new(self, Memory::Owned(Box::new(exposure)), None))
    }

    /// As [`Rma::allocate`], for a window its peers only read: its memory
    /// is registered for remote reads alone (least privilege), and `put`
    /// and the atomics on it fail. Its owner writes it with
    /// [`Window::write_local`].
    ///
    /// # Errors
    /// As [`Rma::expose`].
    pub fn allocate_read_only(&self, group: &Group, len: usize) -> Result<Window<'_>, Error> {
        let exposure = self.expose(group, len, true)?;
        Ok(Window::new(self, Memory::Owned(Box::new(exposure)), None))
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
    pub fn create_dynamic(&self, group: &Group) -> Result<Window<'_>, Error> {
        let exposure = self.expose(group, 0, false)?;
        let window = Window::new(
            self,
            Memory::Owned(Box::new(exposure)),
            Some(RefCell::default()),
        );
        window.describe_attachments(&[]);
        Ok(window)
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
    pub fn ibarrier(&self, group: &Group) -> Result<Barrier<'_, 'e>, Error> {
        let me = self.member(group)?;
        let (id, seq) = self.next(group, Kind::Barrier);
        Ok(Barrier::new(self, group.clone(), me, id, seq))
    }

    /// Removes the barrier notice (barrier, round, from); whether it was
    /// there.
    pub(crate) fn take_barrier_notice(&self, id: u64, round: u32, from: u32) -> bool {
        lock_state(&self.served).barriers.remove(&(id, round, from))
    }

    /// A registered shared region of at least `len` bytes with `access`:
    /// the smallest that fits from `pool`, else a new one.
    fn region(
        &self,
        pool: &RefCell<Vec<MemoryRegion>>,
        len: usize,
        access: Access,
    ) -> Result<MemoryRegion, Error> {
        self.collect_releases();
        let pooled = {
            let mut pool = pool.borrow_mut();
            let best = pool
                .iter()
                .enumerate()
                .filter(|(_, r)| r.len() >= len && r.access() == access)
                .min_by_key(|(_, r)| r.len())
                .map(|(i, _)| i);
            best.map(|i| pool.swap_remove(i))
        };
        match pooled {
            Some(region) => Ok(region),
            None => Ok(self.ep.register_shared(len.max(1), access)?),
        }
    }

    /// Keeps a region in `pool` for the next exposures (a few at most).
    fn pool(pool: &RefCell<Vec<MemoryRegion>>, region: MemoryRegion) {
        const POOLED: usize = 32;
        let mut pool = pool.borrow_mut();
        if pool.len() < POOLED {
            pool.push(region);
        }
    }

    /// Stops serving `id` and drops what this process cached of it. Peers'
    /// mappings stay (their regions are pooled and come back with their
    /// next exposures) unless there are many no exposure uses.
    fn forget(&self, id: u64) {
        const MAPPINGS_KEPT: usize = 64;
        {
            let mut served = lock_state(&self.served);
            served.described.remove(&id);
            served.pushed.retain(|(x, _), _| *x != id);
        }
        self.directory.withdraw(id);
        self.peers.borrow_mut().retain(|(_, x), _| *x != id);
        self.attachments.borrow_mut().retain(|(_, x), _| *x != id);
        let mut mappings = self.mappings.borrow_mut();
        if mappings.len() > MAPPINGS_KEPT {
            mappings.retain(|_, m| Rc::strong_count(m) > 1);
        }
    }

    /// The description of `id` (an exposure or a dynamic window) at
    /// `rank`: read from its board when it is on this host, or from what
    /// it pushed here when it is elsewhere; asked over the control plane
    /// when `fresh`, when the board or the push says to ask, or after a
    /// while without finding it; retried until the peer has created it
    /// (creation is collective: it will come) or the timeout.
    fn look_up(&self, rank: u32, id: u64, fresh: bool) -> Result<Described, Error> {
        /// How long to look where the peer publishes (its board, or what it
        /// pushed) alone before asking too.
        const PUBLISHED_ONLY: std::time::Duration = std::time::Duration::from_millis(20);
        let me = rank == self.ep.rank();
        let board = self.board(rank);
        let mut backoff = self.ep.backoff();
        let mut waited = std::time::Duration::ZERO;
        loop {
            let mut ask = fresh || waited > PUBLISHED_ONLY;
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
            if self.ep.is_dead(rank) {
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

    /// How to reach exposure `id` at job rank `rank`: cached, else asked
    /// of the peer and mapped when the peer is on this host.
    fn peer(&self, rank: u32, id: u64) -> Result<Rc<Peer>, Error> {
        if let Some(peer) = self.peers.borrow().get(&(rank, id)) {
            return Ok(Rc::clone(peer));
        }
        let Described::Exposure {
            header,
            data,
            nonce,
            names,
        } = self.look_up(rank, id, false)?
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
        let peer = Rc::new(Peer { header, data, maps });
        self.peers.borrow_mut().insert((rank, id), Rc::clone(&peer));
        Ok(peer)
    }

    /// The attachments of dynamic window `id` at `rank`: cached, or asked
    /// again when `refresh`.
    fn attached(&self, rank: u32, id: u64, refresh: bool) -> Result<Rc<Attachments>, Error> {
        if !refresh {
            if let Some(list) = self.attachments.borrow().get(&(rank, id)) {
                return Ok(Rc::clone(list));
            }
        }
        let Described::Attachments(list) = self.look_up(rank, id, refresh)? else {
            return Err(onesided_fabric::Error::BadDescriptor(format!(
                "rank {rank} described a dynamic window as an exposure"
            ))
            .into());
        };
        let list = Rc::new(list);
        self.attachments
            .borrow_mut()
            .insert((rank, id), Rc::clone(&list));
        Ok(list)
    }

    /// A peer's shared memory `name` of at least `len` bytes, mapped once.
    fn map(&self, name: &str, len: usize) -> Option<Rc<Mapping>> {
        let mut mappings = self.mappings.borrow_mut();
        if let Some(m) = mappings.get(name).filter(|m| m.len() >= len) {
            return Some(Rc::clone(m));
        }
        let mapping = Rc::new(Mapping::open_shared(name, len).ok()?);
        mappings.insert(name.to_string(), Rc::clone(&mapping));
        Some(mapping)
    }
}

impl Drop for Rma<'_> {
    /// Waits, within the endpoint's timeout and while they live, until
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
    let time = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map_or(0, |d| d.as_nanos() as u64);
    mix(u64::from(std::process::id()) << 32
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

/// Memory of this process open to a group ([`Rma::expose`]): windows are
/// created over it ([`Rma::create`]) as often as wanted. Dropping it
/// releases it: a notice to each other member, no wait; its registration
/// goes back to the pool once every member has released it too (or, when
/// a window over it was dropped without `free`, is kept unused, since
/// peers may still access it).
pub struct Exposure<'a> {
    rma: &'a Rma<'a>,
    id: u64,
    group: Group,
    header: Option<MemoryRegion>,
    data: Option<MemoryRegion>,
    len: usize,
    /// Windows created over it, and freed.
    windows: Cell<u64>,
    freed: Cell<u64>,
    /// A window over it was dropped without `free`.
    tainted: Cell<bool>,
    /// Its description, until the first window over it publishes it.
    described: RefCell<Option<Described>>,
    /// The dynamic window it served (its number and its attachments'
    /// regions), once freed: released with it.
    dynamic: RefCell<Option<(u64, Vec<MemoryRegion>)>>,
}

impl Exposure<'_> {
    /// The group it is open to.
    pub fn group(&self) -> &Group {
        &self.group
    }

    /// Bytes exposed.
    pub fn len(&self) -> usize {
        self.len
    }

    /// Whether no byte is exposed.
    pub fn is_empty(&self) -> bool {
        self.len == 0
    }

    /// Copies elements out of the exposed memory, from byte `offset` (a
    /// load: no epoch needed for one's own memory).
    ///
    /// # Errors
    /// [`Error::Fabric`] (`OutOfRange`) outside the exposure.
    pub fn read<T: bytemuck::Pod>(&self, offset: usize, out: &mut [T]) -> Result<(), Error> {
        let out = bytemuck::cast_slice_mut(out);
        self.check(offset, out.len())?;
        match &self.data {
            Some(d) => Ok(d.read_bytes(offset, out)?),
            None => Ok(()),
        }
    }

    /// Copies elements into the exposed memory at byte `offset` (a store).
    ///
    /// # Errors
    /// [`Error::Fabric`] (`OutOfRange`) outside the exposure.
    pub fn write<T: bytemuck::Pod>(&self, offset: usize, data: &[T]) -> Result<(), Error> {
        let data = bytemuck::cast_slice(data);
        self.check(offset, data.len())?;
        match &self.data {
            Some(d) => Ok(d.write_bytes(offset, data)?),
            None => Ok(()),
        }
    }

    fn check(&self, offset: usize, len: usize) -> Result<(), Error> {
        match offset.checked_add(len) {
            Some(end) if end <= self.len => Ok(()),
            _ => Err(onesided_fabric::Error::OutOfRange {
                what: "exposure (local)",
                offset: offset as u64,
                len: len as u64,
                size: self.len as u64,
            }
            .into()),
        }
    }

    fn header(&self) -> Result<&MemoryRegion, Error> {
        self.header
            .as_ref()
            .ok_or(Error::EpochConflict("window already freed"))
    }
}

impl Drop for Exposure<'_> {
    /// Releases it: a notice to each other member, no
    /// wait.
    fn drop(&mut self) {
        let memory = (self.header.take(), self.data.take());
        let tainted = self.tainted.get() || self.freed.get() != self.windows.get();
        let dynamic = self.dynamic.take();
        self.rma
            .release(self.id, &self.group, memory, dynamic, tainted);
    }
}

/// A window's memory: an exposure it owns (allocated and dynamic windows)
/// or one it borrows (created windows).
enum Memory<'a> {
    Owned(Box<Exposure<'a>>),
    Borrowed(&'a Exposure<'a>),
}

/// One attachment of a dynamic window.
struct Attachment {
    disp: u64,
    region: MemoryRegion,
}

/// One process's view of a window over a group.
pub struct Window<'a> {
    rma: &'a Rma<'a>,
    /// The window's own number (free notices, dynamic descriptions).
    id: u64,
    memory: Memory<'a>,
    /// Attachments of a dynamic window (`None`: not dynamic); the count of
    /// attachments ever made.
    attached: Option<RefCell<(Vec<Attachment>, u64)>>,
    /// Every member lives on this host: atomics are CPU atomics.
    local_atomics: bool,
    epochs: RefCell<Epochs>,
    inflight: RefCell<Vec<Rc<Inflight<'a>>>>,
    /// Members' parts of the exposure, by group rank, once looked up.
    parts: RefCell<Vec<Option<Rc<Peer>>>>,
    /// In a `lock_all` epoch that takes locks: whether this process holds
    /// each member's shared lock yet (empty otherwise).
    shared_locks: RefCell<Vec<bool>>,
    /// An access through the provider failed in the current epoch: its
    /// lock releases wait, so that closing it reports a dead target.
    access_failed: Cell<bool>,
    freed: bool,
}

/// Where `len` bytes of a target live: its rank, descriptor, mapping (on
/// this host) and the offset in that memory.
struct Place {
    rank: u32,
    remote: RemoteMemory,
    map: Option<Rc<Mapping>>,
    at: u64,
}

/// An open passive-target epoch; [`Epoch::unlock`] closes it. Dropping it
/// unlocks too, ignoring errors.
pub struct Epoch<'w, 'a> {
    window: &'w Window<'a>,
    /// The locked target, or `None` for `lock_all`.
    target: Option<u32>,
    /// The lock taken on the target's lock word (none with `nocheck`, and
    /// for `lock_all`, whose locks the window takes and tracks).
    held: Option<LockKind>,
    open: bool,
}

impl<'a> Window<'a> {
    fn new(
        rma: &'a Rma<'a>,
        memory: Memory<'a>,
        attached: Option<RefCell<(Vec<Attachment>, u64)>>,
    ) -> Window<'a> {
        let exposure = match &memory {
            Memory::Owned(x) => x,
            Memory::Borrowed(x) => *x,
        };
        exposure.windows.set(exposure.windows.get() + 1);
        let local_atomics = exposure.group.members().iter().all(|&r| rma.same_host(r));
        if let Some(described) = exposure.described.take() {
            // Peers see it from now on, with what the owner wrote so far:
            // on the board, and from the control plane when a member lives
            // elsewhere (or the board has no room).
            let on_board = rma.board(rma.ep.rank()).is_some()
                && rma.directory.publish(exposure.id, &described.encode());
            if !(on_board && local_atomics) {
                rma.push(&exposure.group, exposure.id, &described);
                lock_state(&rma.served)
                    .described
                    .insert(exposure.id, described);
            }
        }
        let id = rma.next_id(&exposure.group, Kind::Window);
        let members = exposure.group.size() as usize;
        Window {
            rma,
            id,
            memory,
            attached,
            local_atomics,
            epochs: RefCell::default(),
            inflight: RefCell::default(),
            parts: RefCell::new(vec![None; members]),
            shared_locks: RefCell::default(),
            access_failed: Cell::new(false),
            freed: false,
        }
    }

    /// Group rank `target`'s part of the exposure (job rank `rank`).
    fn part(&self, target: u32, rank: u32) -> Result<Rc<Peer>, Error> {
        if let Some(Some(peer)) = self.parts.borrow().get(target as usize) {
            return Ok(Rc::clone(peer));
        }
        let peer = self.rma.peer(rank, self.exposure().id)?;
        if let Some(slot) = self.parts.borrow_mut().get_mut(target as usize) {
            *slot = Some(Rc::clone(&peer));
        }
        Ok(peer)
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
    pub fn mapped(&self, target: u32) -> Result<Option<Rc<Mapping>>, Error> {
        let rank = self.group().job_rank(target)?;
        self.alive()?;
        let peer = self.part(target, rank)?;
        Ok(peer.maps.as_ref().and_then(|(_, data)| data.clone()))
    }

    fn exposure(&self) -> &Exposure<'a> {
        match &self.memory {
            Memory::Owned(x) => x,
            Memory::Borrowed(x) => x,
        }
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
    /// [`Error::Fabric`] (`OutOfRange`) outside the window.
    pub fn read_local<T: bytemuck::Pod>(&self, offset: usize, out: &mut [T]) -> Result<(), Error> {
        self.alive()?;
        self.exposure().read(offset, out)
    }

    /// Writes elements into this process's own part at byte `offset` (a
    /// store, no epoch needed).
    ///
    /// # Errors
    /// [`Error::Fabric`] (`OutOfRange`) outside the window.
    pub fn write_local<T: bytemuck::Pod>(&self, offset: usize, data: &[T]) -> Result<(), Error> {
        self.alive()?;
        self.exposure().write(offset, data)
    }

    fn alive(&self) -> Result<(), Error> {
        self.exposure().header().map(drop)
    }

    /// Attaches `region` (from [`Endpoint::register`], with the remote
    /// rights peers need) to this dynamic window; returns its displacement:
    /// `k << 40` for the `k`-th attachment of this process (1-based), so
    /// that processes attaching in the same order know each other's
    /// displacements. Local: no message.
    ///
    /// # Errors
    /// [`Error::EpochConflict`] when the window is not dynamic;
    /// [`Error::TooMany`] beyond 1000 attachments at once.
    pub fn attach(&self, region: MemoryRegion) -> Result<u64, Error> {
        let attached = self.attached.as_ref().ok_or(Error::EpochConflict(
            "attach to a window that is not dynamic",
        ))?;
        let mut attached = attached.borrow_mut();
        if attached.0.len() >= MAX_ATTACHMENTS {
            return Err(Error::TooMany(
                "a dynamic window holds at most 1000 attachments at once",
            ));
        }
        let disp = (attached.1 + 1)
            .checked_mul(1 << ATTACH_SHIFT)
            .ok_or(Error::TooMany(
                "a dynamic window takes at most 2^24 attachments in its life",
            ))?;
        attached.1 += 1;
        attached.0.push(Attachment { disp, region });
        self.describe_attachments(&attached.0);
        Ok(disp)
    }

    /// Detaches the attachment at displacement `disp` and gives its region
    /// back. Peers must have finished their accesses to it (as with
    /// `MPI_Win_detach`). Local: no message.
    ///
    /// # Errors
    /// [`Error::EpochConflict`] when the window is not dynamic;
    /// [`Error::Fabric`] (`OutOfRange`) when nothing is attached there.
    pub fn detach(&self, disp: u64) -> Result<MemoryRegion, Error> {
        let attached = self.attached.as_ref().ok_or(Error::EpochConflict(
            "detach from a window that is not dynamic",
        ))?;
        let mut attached = attached.borrow_mut();
        let i = attached.0.iter().position(|a| a.disp == disp).ok_or(
            onesided_fabric::Error::OutOfRange {
                what: "dynamic window attachment",
                offset: disp,
                len: 0,
                size: 0,
            },
        )?;
        let gone = attached.0.remove(i);
        self.describe_attachments(&attached.0);
        Ok(gone.region)
    }

    /// A dynamic window learns its peers' attachments anew in each epoch
    /// (at its first access to each), so that an access to memory detached
    /// since is refused rather than made.
    fn forget_attachments(&self) {
        if self.attached.is_some() {
            self.rma
                .attachments
                .borrow_mut()
                .retain(|(_, x), _| *x != self.id);
        }
    }

    /// Publishes this dynamic window's attachments (to the directory too,
    /// when they fit).
    fn describe_attachments(&self, list: &[Attachment]) {
        let list = list
            .iter()
            .map(|a| Attached {
                disp: a.disp,
                remote: a.region.remote(),
                name: a.region.shared_name().unwrap_or_default().to_string(),
            })
            .collect();
        let described = Described::Attachments(list);
        self.rma.directory.withdraw(self.id);
        self.rma.directory.publish(self.id, &described.encode());
        self.rma.push(self.group(), self.id, &described);
        lock_state(&self.rma.served)
            .described
            .insert(self.id, described);
    }

    /// Locks group rank `target`: `Shared` or `Exclusive`; with `nocheck`
    /// (`MPI_MODE_NOCHECK`) no lock is taken, the caller vouching that no
    /// conflicting access happens.
    ///
    /// # Errors
    /// [`Error::NotInGroup`], [`Error::AlreadyLocked`],
    /// [`Error::EpochConflict`], or [`Error::Fabric`] from the atomics.
    pub fn lock(&self, target: u32, kind: LockKind, nocheck: bool) -> Result<Epoch<'_, 'a>, Error> {
        self.group().job_rank(target)?;
        self.alive()?;
        self.epochs.borrow_mut().lock(target, kind)?;
        self.forget_attachments();
        let held = if nocheck {
            None
        } else if let Err(e) = self.acquire(target, kind) {
            let _ = self.epochs.borrow_mut().unlock(target);
            return Err(e);
        } else {
            Some(kind)
        };
        Ok(Epoch {
            window: self,
            target: Some(target),
            held,
            open: true,
        })
    }

    /// Opens a shared epoch on every member (`MPI_Win_lock_all`); with
    /// `nocheck`, no lock word is touched. Its [`Epoch::unlock`] is
    /// `MPI_Win_unlock_all`.
    ///
    /// Each member's shared lock is taken before the first access to it in
    /// the epoch (as MPI allows), not here: opening the epoch costs no
    /// message, and a member never accessed costs none. A process that
    /// holds exclusive locks on several members while another's epoch
    /// waits for one of them can leave both waiting until the timeout.
    ///
    /// # Errors
    /// [`Error::EpochConflict`].
    pub fn lock_all(&self, nocheck: bool) -> Result<Epoch<'_, 'a>, Error> {
        self.alive()?;
        self.epochs.borrow_mut().lock_all()?;
        self.forget_attachments();
        if !nocheck {
            // Its capacity stays from epoch to epoch: no allocation.
            let mut locks = self.shared_locks.borrow_mut();
            locks.clear();
            locks.resize(self.group().size() as usize, false);
        }
        Ok(Epoch {
            window: self,
            target: None,
            held: None,
            open: true,
        })
    }

    /// Applies `atomic` to `target`'s lock word; returns its previous value.
    fn lock_word(&self, target: u32, atomic: Atomic) -> Result<u64, Error> {
        let rank = self.group().job_rank(target)?;
        let peer = self.part(target, rank)?;
        if let (true, Some((header, _))) = (self.local_atomics, &peer.maps) {
            if self.rma.ep.is_dead(rank) {
                return Err(onesided_fabric::Error::PeerDead {
                    op: "window lock",
                    rank,
                }
                .into());
            }
            // One read-modify-write instruction each (a CAS loop would
            // move the cache line twice).
            let word = header.atomic_u64(LOCK_WORD)?;
            return Ok(match atomic {
                Atomic::FetchAdd(delta) => word.fetch_add(delta, Ordering::AcqRel),
                Atomic::CompareSwap { expected, new } => {
                    match word.compare_exchange(expected, new, Ordering::AcqRel, Ordering::Acquire)
                    {
                        Ok(v) | Err(v) => v,
                    }
                }
            });
        }
        let ep = self.rma.ep;
        Ok(match atomic {
            Atomic::CompareSwap { expected, new } => {
                ep.compare_swap(rank, &peer.header, LOCK_WORD as u64, expected, new)?
            }
            Atomic::FetchAdd(delta) => ep.fetch_add(rank, &peer.header, LOCK_WORD as u64, delta)?,
        })
    }

    /// One attempt at `kind` on `target`'s lock word; whether granted (a
    /// refused shared request has been undone).
    fn try_acquire(&self, target: u32, kind: LockKind) -> Result<bool, Error> {
        let previous = self.lock_word(target, lock::request(kind))?;
        Ok(match lock::outcome(kind, previous) {
            Outcome::Granted => true,
            Outcome::Retry => false,
            Outcome::Undo(undo) => {
                self.lock_word(target, undo)?;
                false
            }
        })
    }

    /// In a `lock_all` epoch, takes `target`'s shared lock before the
    /// first access to it.
    fn lock_lazily(&self, target: u32) -> Result<(), Error> {
        if self.shared_locks.borrow().get(target as usize) == Some(&false) {
            self.acquire(target, LockKind::Shared)?;
            if let Some(held) = self.shared_locks.borrow_mut().get_mut(target as usize) {
                *held = true;
            }
        }
        Ok(())
    }

    fn acquire(&self, target: u32, kind: LockKind) -> Result<(), Error> {
        let mut backoff = self.rma.ep.backoff();
        loop {
            if self.try_acquire(target, kind)? {
                return Ok(());
            }
            let rank = self.group().job_rank(target)?;
            if self.rma.ep.is_dead(rank) {
                return Err(onesided_fabric::Error::PeerDead {
                    op: "window lock",
                    rank,
                }
                .into());
            }
            if backoff.pause() > self.rma.ep.timeout() {
                return Err(self.timeout("window lock", rank));
            }
        }
    }

    fn timeout(&self, op: &'static str, rank: u32) -> Error {
        Error::Fabric(onesided_fabric::Error::Timeout {
            op,
            rank,
            after: self.rma.ep.timeout(),
        })
    }

    /// A provider access's result; a failure is noted for the epoch's
    /// lock releases.
    fn through<T>(&self, result: onesided_fabric::Result<T>) -> Result<T, Error> {
        result.map_err(|e| {
            self.access_failed.set(true);
            e.into()
        })
    }

    /// Releases `kind` on `target`'s lock word. Through the provider the
    /// release is posted and left in flight ([`Endpoint::add_detached`]),
    /// so closing an epoch there costs no round trip, unless an access or
    /// a request `failed` in the epoch: then the release waits, and fails
    /// with the target's error. Leaving it in flight is safe: a
    /// release only lowers the word, so a late one makes other processes'
    /// requests retry, never grants one wrongly, and this process's own
    /// later requests only add to it. The word's memory must not be reused
    /// while a release is on its way: its owner reuses it once every member
    /// has sent its release notice, and a notice follows the atomics in the
    /// provider's order (`FI_ORDER_SAW`) or waits for them
    /// ([`Rma::release`], `Drop for Rma`). A release that fails (its
    /// target died) is dropped: the epoch is over here.
    fn release(&self, target: u32, kind: LockKind, failed: bool) -> Result<(), Error> {
        match lock::release(kind) {
            Atomic::FetchAdd(delta) if !self.local_atomics && !failed => {
                let rank = self.group().job_rank(target)?;
                let peer = self.part(target, rank)?;
                let ep = self.rma.ep;
                Ok(ep.add_detached(rank, &peer.header, LOCK_WORD as u64, delta)?)
            }
            atomic => self.lock_word(target, atomic).map(drop),
        }
    }

    /// Where `len` bytes at `offset` of `target`'s part are, after checking
    /// the window, the epoch, the peer and the bounds (in that order).
    fn place(
        &self,
        target: u32,
        offset: u64,
        len: usize,
        what: &'static str,
    ) -> Result<Place, Error> {
        let rank = self.group().job_rank(target)?;
        self.alive()?;
        self.epochs.borrow().check_access(target)?;
        if self.rma.ep.is_dead(rank) {
            // Its mapped memory would still answer: say it is gone.
            return Err(onesided_fabric::Error::PeerDead { op: what, rank }.into());
        }
        self.lock_lazily(target)?;
        let out_of_range = |size: u64| -> Error {
            Error::OutOfRange {
                what,
                target,
                window: self.id,
                offset,
                len: len as u64,
                size,
            }
        };
        let end = offset
            .checked_add(len as u64)
            .ok_or_else(|| out_of_range(0))?;
        if self.attached.is_some() {
            let find = |list: &[Attached]| {
                list.iter()
                    .find(|a| offset >= a.disp && end <= a.disp + a.remote.len)
                    .cloned()
            };
            let mut found = find(&self.rma.attached(rank, self.id, false)?);
            if found.is_none() {
                // Attached since last asked?
                found = find(&self.rma.attached(rank, self.id, true)?);
            }
            let a = found.ok_or_else(|| out_of_range(0))?;
            // On this host, memory from `register_shared` is mapped.
            let map = (self.rma.same_host(rank) && !a.name.is_empty())
                .then(|| self.rma.map(&a.name, a.remote.len as usize))
                .flatten();
            return Ok(Place {
                rank,
                remote: a.remote,
                map,
                at: offset - a.disp,
            });
        }
        let peer = self.part(target, rank)?;
        if end > peer.data.len {
            return Err(out_of_range(peer.data.len));
        }
        Ok(Place {
            rank,
            remote: peer.data,
            map: peer.maps.as_ref().and_then(|(_, d)| d.clone()),
            at: offset,
        })
    }

    /// Reads elements at byte `offset` of group rank `target`'s part into
    /// `buf`.
    ///
    /// # Errors
    /// [`Error::NotInGroup`]; [`Error::NoEpoch`] outside an epoch covering
    /// `target`; [`Error::OutOfRange`] outside its part; [`Error::Fabric`]
    /// (a dead peer, forbidden access, ...). Nothing is posted on a checked
    /// error.
    pub fn get<T: bytemuck::Pod>(
        &self,
        target: u32,
        offset: u64,
        buf: &mut [T],
    ) -> Result<(), Error> {
        let buf: &mut [u8] = bytemuck::cast_slice_mut(buf);
        let p = self.place(target, offset, buf.len(), "window get")?;
        match &p.map {
            Some(map) => {
                p.remote
                    .permits(Access::REMOTE_READ, "window get", p.rank)?;
                Ok(map.read_bytes(p.at as usize, buf)?)
            }
            None => self.through(self.rma.ep.read(p.rank, &p.remote, p.at, buf)),
        }
    }

    /// Writes `data` at byte `offset` of group rank `target`'s part;
    /// complete at the target when it returns.
    ///
    /// # Errors
    /// As [`Window::get`].
    pub fn put<T: bytemuck::Pod>(&self, target: u32, offset: u64, data: &[T]) -> Result<(), Error> {
        let data: &[u8] = bytemuck::cast_slice(data);
        let p = self.place(target, offset, data.len(), "window put")?;
        match &p.map {
            Some(map) => {
                p.remote
                    .permits(Access::REMOTE_WRITE, "window put", p.rank)?;
                Ok(map.write_bytes(p.at as usize, data)?)
            }
            None => self.through(self.rma.ep.write_delivered(p.rank, &p.remote, p.at, data)),
        }
    }

    /// Starts reading `buf.len()` elements at byte `offset` of `target`'s
    /// part; the bytes reach `buf` when the request completes (`test` /
    /// `wait`; after a `flush` or `unlock` it completes at once).
    ///
    /// # Errors
    /// As [`Window::get`] (checked before anything is posted).
    pub fn rget<'w, 'b, T: bytemuck::Pod>(
        &'w self,
        target: u32,
        offset: u64,
        buf: &'b mut [T],
    ) -> Result<Rget<'w, 'b, 'a>, Error> {
        let bytes: &mut [u8] = bytemuck::cast_slice_mut(buf);
        let p = self.place(target, offset, bytes.len(), "window rget")?;
        if let Some(map) = &p.map {
            p.remote
                .permits(Access::REMOTE_READ, "window rget", p.rank)?;
            map.read_bytes(p.at as usize, bytes)?;
            return Ok(Rget::new(self, None, bytes));
        }
        let transfer = self
            .rma
            .ep
            .read_start(p.rank, &p.remote, p.at, bytes.len())?;
        let inflight = self.track(target, transfer);
        Ok(Rget::new(self, Some(inflight), bytes))
    }

    /// Starts writing `data` at byte `offset` of `target`'s part (`data`
    /// is copied: the caller may reuse it at once); the request completes
    /// when the bytes are in the target's memory.
    ///
    /// # Errors
    /// As [`Window::get`].
    pub fn rput<T: bytemuck::Pod>(
        &self,
        target: u32,
        offset: u64,
        data: &[T],
    ) -> Result<Rput<'_, 'a>, Error> {
        let data: &[u8] = bytemuck::cast_slice(data);
        let p = self.place(target, offset, data.len(), "window rput")?;
        if let Some(map) = &p.map {
            p.remote
                .permits(Access::REMOTE_WRITE, "window rput", p.rank)?;
            map.write_bytes(p.at as usize, data)?;
            return Ok(Rput::new(self, None));
        }
        let transfer = self.rma.ep.write_start(p.rank, &p.remote, p.at, data)?;
        Ok(Rput::new(self, Some(self.track(target, transfer))))
    }

    fn track(&self, target: u32, transfer: onesided_fabric::Transfer<'a>) -> Rc<Inflight<'a>> {
        let inflight = Rc::new(Inflight::new(target, transfer));
        let mut list = self.inflight.borrow_mut();
        list.retain(|i| !i.is_done());
        list.push(Rc::clone(&inflight));
        inflight
    }

    pub(crate) fn endpoint(&self) -> &'a Endpoint {
        self.rma.ep
    }

    /// Applies `op` with `values` to the elements at byte `offset` of
    /// `target`'s part, each element atomically (`MPI_Accumulate`).
    ///
    /// # Errors
    /// As [`Window::get`], and `Misaligned` for an offset that is not a
    /// multiple of the element size.
    pub fn accumulate<T: Element>(
        &self,
        target: u32,
        offset: u64,
        values: &[T],
        op: Op,
    ) -> Result<(), Error> {
        self.atomic(target, offset, values, op, None, "window accumulate")
    }

    /// Applies `op` with `value` to the element at byte `offset` of
    /// `target`'s part atomically; returns its previous value
    /// (`MPI_Fetch_and_op`; with [`Op::NoOp`], an atomic read).
    ///
    /// # Errors
    /// As [`Window::accumulate`].
    pub fn fetch_and_op<T: Element>(
        &self,
        target: u32,
        offset: u64,
        value: T,
        op: Op,
    ) -> Result<T, Error> {
        let mut previous = [T::zeroed()];
        self.atomic(
            target,
            offset,
            &[value],
            op,
            Some(&mut previous),
            "window fetch_and_op",
        )?;
        Ok(previous[0])
    }

    fn atomic<T: Element>(
        &self,
        target: u32,
        offset: u64,
        values: &[T],
        op: Op,
        fetch: Option<&mut [T]>,
        what: &'static str,
    ) -> Result<(), Error> {
        let size = size_of::<T>();
        let p = self.place(target, offset, size_of_val(values), what)?;
        if !offset.is_multiple_of(size as u64) {
            return Err(onesided_fabric::Error::Misaligned { what, offset }.into());
        }
        match (&p.map, self.local_atomics) {
            (Some(map), true) => {
                p.remote
                    .permits(Access::REMOTE_READ | Access::REMOTE_WRITE, what, p.rank)?;
                let mut fetch = fetch;
                for (i, v) in values.iter().enumerate() {
                    let x = bits(*v);
                    let at = p.at as usize + i * size;
                    let previous = map.update(at, size, |t| {
                        Some(onesided_fabric::atomic::apply(
                            T::DATATYPE,
                            op.atomic(),
                            t,
                            x,
                        ))
                    })?;
                    if let Some(f) = fetch.as_deref_mut() {
                        f[i] = from_bits(previous);
                    }
                }
                Ok(())
            }
            _ => self.through(self.rma.ep.atomic(
                p.rank,
                &p.remote,
                p.at,
                T::DATATYPE,
                op.atomic(),
                bytemuck::cast_slice(values),
                fetch.map(bytemuck::cast_slice_mut),
            )),
        }
    }

    /// Replaces the element at byte `offset` of `target`'s part with `new`
    /// if it equals `compare` (bitwise), atomically; returns its previous
    /// value (`MPI_Compare_and_swap`).
    ///
    /// # Errors
    /// As [`Window::accumulate`].
    pub fn compare_and_swap<T: Element>(
        &self,
        target: u32,
        offset: u64,
        compare: T,
        new: T,
    ) -> Result<T, Error> {
        let what = "window compare_and_swap";
        let size = size_of::<T>();
        let p = self.place(target, offset, size, what)?;
        if !offset.is_multiple_of(size as u64) {
            return Err(onesided_fabric::Error::Misaligned { what, offset }.into());
        }
        if let (Some(map), true) = (&p.map, self.local_atomics) {
            p.remote
                .permits(Access::REMOTE_READ | Access::REMOTE_WRITE, what, p.rank)?;
            let (c, n) = (bits(compare), bits(new));
            let previous = map.update(p.at as usize, size, |t| (t == c).then_some(n))?;
            return Ok(from_bits(previous));
        }
        let mut previous = T::zeroed();
        self.through(self.rma.ep.compare_swap_element(
            p.rank,
            &p.remote,
            p.at,
            T::DATATYPE,
            bytemuck::bytes_of(&compare),
            bytemuck::bytes_of(&new),
            bytemuck::bytes_of_mut(&mut previous),
        ))?;
        Ok(previous)
    }

    /// Completes this process's operations to `target` at the target:
    /// blocking ones are complete already; request-based ones are waited
    /// for.
    ///
    /// # Errors
    /// [`Error::NotInGroup`]; [`Error::NoEpoch`] outside an epoch covering
    /// `target`; [`Error::TransferFailed`] when a request-based operation
    /// failed (its request holds the error).
    pub fn flush(&self, target: u32) -> Result<(), Error> {
        self.group().job_rank(target)?;
        self.epochs.borrow().check_access(target)?;
        self.complete(Some(target))
    }

    /// [`Window::flush`] for every target (`MPI_Win_flush_all`).
    ///
    /// # Errors
    /// [`Error::EpochConflict`] when no epoch is open;
    /// [`Error::TransferFailed`] as [`Window::flush`].
    pub fn flush_all(&self) -> Result<(), Error> {
        if self.epochs.borrow().is_idle() {
            return Err(Error::EpochConflict("flush_all outside an epoch"));
        }
        self.complete(None)
    }

    /// Completes this process's operations to `target` locally
    /// (`MPI_Win_flush_local`): the origin buffers may be reused. Here every
    /// operation copies or waits for its origin buffer before returning, so
    /// only the epoch is checked.
    ///
    /// # Errors
    /// As [`Window::flush`].
    pub fn flush_local(&self, target: u32) -> Result<(), Error> {
        self.group().job_rank(target)?;
        self.epochs.borrow().check_access(target)
    }

    /// Waits for the request-based operations to `target` (all when
    /// `None`); their outcomes stay with their requests. A failed one (or
    /// one given up, which the provider may still carry out) makes it an
    /// error, and taints the exposure: its memory is never reused.
    fn complete(&self, target: Option<u32>) -> Result<(), Error> {
        let list: Vec<_> = self.inflight.borrow_mut().drain(..).collect();
        let mut kept = Vec::new();
        let mut failed = None;
        for inflight in list {
            if target.is_none_or(|t| inflight.target() == t) {
                if !inflight.finish() {
                    failed.get_or_insert(inflight.target());
                }
            } else {
                kept.push(inflight);
            }
        }
        self.inflight.borrow_mut().extend(kept);
        match failed {
            None => Ok(()),
            Some(target) => {
                self.exposure().tainted.set(true);
                Err(Error::TransferFailed { target })
            }
        }
    }

    /// Active-target synchronisation (`MPI_Win_fence`): completes this
    /// process's operations, waits until every member has reached the fence,
    /// then opens the next fence epoch, or none when `last`
    /// (`MPI_MODE_NOSUCCEED`).
    ///
    /// # Errors
    /// [`Error::EpochConflict`] inside a passive epoch; barrier errors.
    pub fn fence(&self, last: bool) -> Result<(), Error> {
        self.alive()?;
        let mut next = self.epochs.borrow().clone();
        next.fence(last)?;
        self.complete(None)?;
        self.forget_attachments();
        crate::Request::wait(&mut self.rma.ibarrier(self.group())?)?;
        *self.epochs.borrow_mut() = next;
        Ok(())
    }

    /// Frees the window: completes this process's operations on it
    /// (`MPI_Win_free`), at no other cost: **no message**, no wait. Peers
    /// may still access the exposure through their own windows until they
    /// free them: synchronise (an [`Rma::ibarrier`]) before giving the
    /// exposure's bytes another meaning. The memory itself is safe: an
    /// exposure keeps it until released, and releasing waits for the
    /// other members' releases before its memory is reused (see
    /// [`Exposure`]). An allocated or dynamic window releases the exposure
    /// it owns (a notice to each other member; regions still attached to
    /// a dynamic window stay registered and described until then).
    ///
    /// # Errors
    /// [`Error::TransferFailed`] when a request-based operation failed (the
    /// window is freed all the same, its memory never reused).
    pub fn free(mut self) -> Result<(), Error> {
        self.alive()?;
        let completed = self.complete(None);
        let attached = self.attached.take();
        let exposure = self.exposure();
        exposure.freed.set(exposure.freed.get() + 1);
        if let Some(attached) = attached {
            let (list, _) = attached.into_inner();
            let regions = list.into_iter().map(|a| a.region).collect();
            *exposure.dynamic.borrow_mut() = Some((self.id, regions));
        }
        self.freed = true;
        completed
    }
}

impl Drop for Window<'_> {
    /// A window dropped without a successful `free`: peers may still use its
    /// memory, so its exposure's registration is never reused (while the
    /// `Rma` lives), and a dynamic window's attachments are kept likewise.
    fn drop(&mut self) {
        if !self.freed {
            self.exposure().tainted.set(true);
            let attached = self.attached.take();
            if let Some(attached) = attached {
                let (list, _) = attached.into_inner();
                let regions = list.into_iter().map(|a| a.region).collect();
                *self.exposure().dynamic.borrow_mut() = Some((self.id, regions));
            }
        }
        // Failures taint the exposure; nobody is left to tell.
        let _ = self.complete(None);
    }
}

impl Epoch<'_, '_> {
    /// Closes the epoch (`MPI_Win_unlock`, or `MPI_Win_unlock_all` for a
    /// `lock_all` epoch): completes its operations, then releases its
    /// lock(s). On a member of another host the release is posted and not
    /// waited for: closing costs no round trip (see `Window::release`).
    ///
    /// # Errors
    /// [`Error::TransferFailed`] when a request-based operation failed (the
    /// locks are released all the same); [`Error::Fabric`] when a release
    /// atomic fails (the epoch is closed
    /// locally all the same).
    pub fn unlock(mut self) -> Result<(), Error> {
        self.close()
    }

    fn close(&mut self) -> Result<(), Error> {
        if !self.open {
            return Ok(());
        }
        self.open = false;
        let window = self.window;
        let completed = window.complete(self.target);
        let failed = window.access_failed.replace(false) || completed.is_err();
        match self.target {
            Some(target) => {
                window.epochs.borrow_mut().unlock(target)?;
                if let Some(kind) = self.held {
                    window.release(target, kind, failed)?;
                }
            }
            None => {
                // Taken out and put back empty: its capacity is kept.
                let mut held = std::mem::take(&mut *window.shared_locks.borrow_mut());
                let unlocked = window.epochs.borrow_mut().unlock_all();
                let mut first_error = unlocked.err();
                for (target, _) in (0u32..).zip(&held).filter(|(_, h)| **h) {
                    if let Err(e) = window.release(target, LockKind::Shared, failed) {
                        first_error.get_or_insert(e);
                    }
                }
                held.clear();
                *window.shared_locks.borrow_mut() = held;
                if let Some(e) = first_error {
                    return Err(e);
                }
            }
        }
        completed
    }
}

impl Drop for Epoch<'_, '_> {
    fn drop(&mut self) {
        let _ = self.close();
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
