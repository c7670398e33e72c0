//! Windows: memory of a group of processes open to remote access.
//!
//! Cost model (the point of this crate):
//! - [`Rma::allocate`] registers memory locally and records it: **no
//!   message**, no synchronisation;
//! - the first access to a peer's window asks that peer for the window's
//!   descriptor once (one control-plane round trip, answered by the peer's
//!   progress engine even while it computes); the descriptor is then cached,
//!   so later accesses cost nothing extra;
//! - [`Window::free`] tells every other member and waits for their word
//!   (`n - 1` small messages each way), so that nobody frees memory a peer
//!   may still access.
//!
//! On one host, a window's memory is named shared memory: a peer on the same
//! host maps it (on first access, with the descriptor) and `get`/`put` are
//! plain copies; other peers go through the provider. Atomics (locks,
//! `fetch_add`) always go through the provider, so that they stay atomic
//! with respect to each other whichever host they come from.
//!
//! Locks use the protocol of [`crate::lock`] on a lock word at the start of
//! each window's region. Operations complete at the target before they
//! return (writes with delivery completion, copies at once), so `flush` has
//! nothing left to wait for.
//!
//! Control-plane services of this crate: [`DESCRIBE`], [`FREE_NOTICE`] and
//! [`BARRIER_NOTICE`].

use onesided_fabric::{Access, Endpoint, Mapping, MemoryRegion, RemoteMemory};
use std::collections::{HashMap, HashSet};
use std::rc::Rc;
use std::sync::{Arc, Mutex, MutexGuard};
use std::time::Duration;

use crate::epoch::Epochs;
use crate::lock::{self, Atomic, LockKind, Outcome};
use crate::request::{dissemination, Request};
use crate::{Error, Group};

/// Control service answering "what is window W" with its descriptor.
pub const DESCRIBE: u16 = 0x0101;
/// Control service recording "rank R frees window W".
pub const FREE_NOTICE: u16 = 0x0102;
/// Control service recording "rank R reached round K of barrier B".
pub const BARRIER_NOTICE: u16 = 0x0103;

/// Bytes before a window's data: the lock word (offset 0) and the region's
/// nonce (offset 8), padded to a cache line.
const HEADER: u64 = 64;

/// A window's number, the same on every member: the group's members and
/// the window's rank among the windows created over that group.
type WindowId = u64;

fn lock_state<T>(m: &Mutex<T>) -> MutexGuard<'_, T> {
    m.lock().unwrap_or_else(|p| p.into_inner())
}

/// What the control-plane handlers of one process share with its windows.
#[derive(Default)]
struct Served {
    /// This process's windows, as peers address them: the descriptor, the
    /// region's nonce and the shared-memory name.
    exposed: HashMap<WindowId, (RemoteMemory, u64, String)>,
    /// Free notices received: (window, from rank).
    freeing: HashSet<(WindowId, u32)>,
    /// Barrier notices received: (barrier, round, from rank).
    barriers: HashSet<(u64, u32, u32)>,
}

/// The RMA state of one endpoint: its windows' descriptors as served to
/// peers, and the peers' descriptors (and shared memory) as cached here.
/// It and its windows belong to the thread that made them (peers' memory
/// is mapped here and copied to and from without locks); the endpoint's
/// progress thread serves peers meanwhile.
pub struct Rma<'e> {
    ep: &'e Endpoint,
    served: Arc<Mutex<Served>>,
    cache: Mutex<HashMap<(u32, WindowId), Rc<Peer>>>,
    /// Peers' shared memory mapped here, by name: kept across windows,
    /// since freed regions are reused.
    mappings: Mutex<HashMap<String, Rc<Mapping>>>,
    /// Regions of freed windows, registered and ready for the next ones.
    pool: Mutex<Vec<MemoryRegion>>,
    /// Regions of windows dropped without `free`: never reused.
    retired: Mutex<Vec<MemoryRegion>>,
    host: u64,
    /// Windows (kind 0) and barriers (kind 1) created per member list.
    created: Mutex<HashMap<(Vec<u32>, u8), u64>>,
}

impl<'e> Rma<'e> {
    /// Starts serving this process's windows on `ep`.
    ///
    /// # Errors
    /// [`Error::Fabric`] when the services are served already on `ep`.
    pub fn new(ep: &'e Endpoint) -> Result<Rma<'e>, Error> {
        let served = Arc::new(Mutex::new(Served::default()));
        let describe = Arc::clone(&served);
        let host = onesided_fabric::world::host_id().to_le_bytes();
        ep.serve(DESCRIBE, move |_, request| {
            let Ok(id) = request.try_into().map(u64::from_le_bytes) else {
                return Vec::new();
            };
            lock_state(&describe)
                .exposed
                .get(&id)
                .map(|(remote, nonce, name)| {
                    let mut reply = remote.to_bytes().to_vec();
                    reply.extend_from_slice(&host);
                    reply.extend_from_slice(&nonce.to_le_bytes());
                    reply.extend_from_slice(name.as_bytes());
                    reply
                })
                .unwrap_or_default()
        })?;
        let notices = Arc::clone(&served);
        ep.serve(FREE_NOTICE, move |from, request| {
            if let Ok(id) = request.try_into().map(u64::from_le_bytes) {
                lock_state(&notices).freeing.insert((id, from));
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
        Ok(Rma {
            ep,
            served,
            cache: Mutex::new(HashMap::new()),
            mappings: Mutex::new(HashMap::new()),
            pool: Mutex::new(Vec::new()),
            retired: Mutex::new(Vec::new()),
            host: onesided_fabric::world::host_id(),
            created: Mutex::new(HashMap::new()),
        })
    }

    /// The endpoint.
    pub fn endpoint(&self) -> &'e Endpoint {
        self.ep
    }

    /// Creates a window of `len` bytes over `group`, which this process must
    /// belong to. The bytes are zero when the memory is new and unspecified
    /// when a freed window's registration is reused (as with
    /// `MPI_Win_allocate`). Every member calls it, in the same order for
    /// windows of the same group; members may ask for different lengths.
    ///
    /// Cost: one local registration; no message.
    ///
    /// # Errors
    /// [`Error::BadGroup`] when this process is not a member;
    /// [`Error::Fabric`] when registering fails.
    pub fn allocate(&self, group: &Group, len: usize) -> Result<Window<'_, 'e>, Error> {
        let me = group
            .group_rank(self.ep.rank())
            .ok_or_else(|| Error::BadGroup(format!("rank {} is not a member", self.ep.rank())))?;
        let total = (HEADER as usize).checked_add(len).ok_or({
            onesided_fabric::Error::OutOfRange {
                what: "window size",
                offset: 0,
                len: len as u64,
                size: isize::MAX as u64,
            }
        })?;
        let region = self.region(total)?;
        let name = region.shared_name().unwrap_or_default().to_string();
        // A peer that maps the name checks this, so that it never takes
        // another process's memory of the same name for this one.
        let nonce = nonce();
        region.write_bytes(8, &nonce.to_le_bytes())?;
        // Peers see this window's length, not the (pooled) region's.
        let remote = RemoteMemory {
            len: HEADER + len as u64,
            ..region.remote()
        };
        let id = {
            let mut created = lock_state(&self.created);
            let n = created.entry((group.members().to_vec(), 0)).or_insert(0);
            *n += 1;
            window_id(group, 0, *n)
        };
        lock_state(&self.served)
            .exposed
            .insert(id, (remote, nonce, name));
        Ok(Window {
            rma: self,
            id,
            group: group.clone(),
            me,
            region: Some(region),
            len,
            epochs: Mutex::new(Epochs::default()),
        })
    }

    /// Starts a nonblocking barrier over `group` (a dissemination barrier:
    /// ceil(log2 n) rounds of one notice each); complete it with
    /// [`Request::test`] / [`Request::wait`]. Every member calls it, in the
    /// same order for barriers of the same group (fences count as
    /// barriers).
    ///
    /// # Errors
    /// [`Error::BadGroup`] when this process is not a member.
    pub fn ibarrier(&self, group: &Group) -> Result<Barrier<'_, 'e>, Error> {
        let me = group
            .group_rank(self.ep.rank())
            .ok_or_else(|| Error::BadGroup(format!("rank {} is not a member", self.ep.rank())))?;
        let id = {
            let mut created = lock_state(&self.created);
            let n = created.entry((group.members().to_vec(), 1)).or_insert(0);
            *n += 1;
            window_id(group, 1, *n)
        };
        Ok(Barrier {
            rma: self,
            group: group.clone(),
            me,
            id,
            round: 0,
            signalled: false,
        })
    }

    /// Stops serving window `id` and drops what this process cached of it.
    /// Peers' mappings stay (their regions are pooled and come back with
    /// their next windows) unless there are many no window uses.
    fn forget(&self, id: WindowId) {
        const MAPPINGS_KEPT: usize = 64;
        lock_state(&self.served).exposed.remove(&id);
        lock_state(&self.cache).retain(|(_, w), _| *w != id);
        let mut mappings = lock_state(&self.mappings);
        if mappings.len() > MAPPINGS_KEPT {
            mappings.retain(|_, m| Rc::strong_count(m) > 1);
        }
    }

    /// Keeps a freed window's region for the next window (a few at most).
    fn pool(&self, region: MemoryRegion) {
        const POOLED: usize = 16;
        let mut pool = lock_state(&self.pool);
        if pool.len() < POOLED {
            pool.push(region);
        }
    }

    /// A registered shared region of at least `len` bytes: the smallest
    /// that fits from the pool of freed windows, else a new one. Its bytes
    /// are unspecified (as `MPI_Win_allocate`'s), but its lock word is 0.
    fn region(&self, len: usize) -> Result<MemoryRegion, Error> {
        let pooled = {
            let mut pool = lock_state(&self.pool);
            let best = pool
                .iter()
                .enumerate()
                .filter(|(_, r)| r.len() >= len)
                .min_by_key(|(_, r)| r.len())
                .map(|(i, _)| i);
            best.map(|i| pool.swap_remove(i))
        };
        let region = match pooled {
            Some(region) => region,
            None => self
                .ep
                .register_shared(len, Access::REMOTE_READ | Access::REMOTE_WRITE)?,
        };
        region.write_bytes(0, &[0u8; 8])?;
        Ok(region)
    }

    /// How to reach `id` at job rank `rank`: from the cache, else asked of
    /// the peer (retried while the peer has not created it yet), and mapped
    /// when the peer is on this host.
    fn describe(&self, rank: u32, id: WindowId) -> Result<Rc<Peer>, Error> {
        if let Some(peer) = lock_state(&self.cache).get(&(rank, id)) {
            return Ok(Rc::clone(peer));
        }
        let mut backoff = self.ep.backoff();
        loop {
            let mut reply = [0u8; RemoteMemory::ENCODED_LEN + 8 + 64];
            let len = self
                .ep
                .call(rank, DESCRIBE, &id.to_le_bytes(), &mut reply)?;
            if len > RemoteMemory::ENCODED_LEN + 8 {
                let peer = Rc::new(self.peer(&reply[..len])?);
                lock_state(&self.cache).insert((rank, id), Rc::clone(&peer));
                return Ok(peer);
            }
            // Not created there yet: creation is collective, it will come.
            if backoff.pause() > self.ep.timeout() {
                return Err(Error::Fabric(onesided_fabric::Error::Timeout {
                    op: "describe window",
                    rank,
                    after: self.ep.timeout(),
                }));
            }
        }
    }

    /// Decodes a DESCRIBE reply: descriptor, host, shared-memory name.
    /// Decodes a DESCRIBE reply: descriptor, host, nonce, shared-memory
    /// name.
    fn peer(&self, reply: &[u8]) -> Result<Peer, Error> {
        let bad =
            |why: &str| onesided_fabric::Error::BadDescriptor(format!("window description: {why}"));
        let (remote, rest) = reply
            .split_at_checked(RemoteMemory::ENCODED_LEN)
            .ok_or_else(|| bad("too short"))?;
        let remote = RemoteMemory::from_bytes(remote)?;
        if remote.len < HEADER {
            return Err(bad("region shorter than its header").into());
        }
        let word = |b: &[u8]| u64::from_le_bytes(b.try_into().unwrap_or_default());
        let (host, rest) = rest.split_at_checked(8).ok_or_else(|| bad("no host"))?;
        let (nonce, name) = rest.split_at_checked(8).ok_or_else(|| bad("no nonce"))?;
        let (host, nonce) = (word(host), word(nonce));
        let mapping = match (host == self.host, std::str::from_utf8(name)) {
            // Same host: map its memory if it is really that region (a
            // failure leaves the provider path).
            (true, Ok(name)) => self.map(name, remote.len as usize).filter(|m| {
                let mut found = [0u8; 8];
                m.read_bytes(8, &mut found).is_ok() && u64::from_le_bytes(found) == nonce
            }),
            _ => None,
        };
        Ok(Peer { remote, mapping })
    }

    /// A peer's shared memory `name` of at least `len` bytes, mapped once.
    fn map(&self, name: &str, len: usize) -> Option<Rc<Mapping>> {
        let mut mappings = lock_state(&self.mappings);
        if let Some(m) = mappings.get(name).filter(|m| m.len() >= len) {
            return Some(Rc::clone(m));
        }
        let mapping = Rc::new(Mapping::open_shared(name, len).ok()?);
        mappings.insert(name.to_string(), Rc::clone(&mapping));
        Some(mapping)
    }
}

/// A peer's part of a window: its descriptor, and its memory mapped here
/// when it lives on this host.
struct Peer {
    remote: RemoteMemory,
    mapping: Option<Rc<Mapping>>,
}

/// A number no other region of this machine is likely to carry.
fn nonce() -> u64 {
    use std::hash::{BuildHasher, Hasher};
    let mut h = std::collections::hash_map::RandomState::new().build_hasher();
    h.write_u32(std::process::id());
    h.write_u128(
        std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .map(|d| d.as_nanos())
            .unwrap_or(0),
    );
    h.finish()
}

fn fnv(bytes: impl IntoIterator<Item = u8>) -> u64 {
    let mut hash: u64 = 0xcbf2_9ce4_8422_2325;
    for b in bytes {
        hash = (hash ^ u64::from(b)).wrapping_mul(0x0100_0000_01b3);
    }
    hash
}

impl Drop for Rma<'_> {
    fn drop(&mut self) {
        for service in [DESCRIBE, FREE_NOTICE, BARRIER_NOTICE] {
            self.ep.unserve(service);
        }
    }
}

/// A stable number for the `n`-th window (`kind` 0) or barrier (`kind` 1)
/// over `group`: FNV-1a of the members, the kind and the count.
fn window_id(group: &Group, kind: u8, n: u64) -> WindowId {
    fnv(group
        .members()
        .iter()
        .map(|&m| u64::from(m))
        .chain([u64::MAX - u64::from(kind), n])
        .flat_map(u64::to_le_bytes))
}

/// A nonblocking barrier in flight ([`Rma::ibarrier`]).
pub struct Barrier<'r, 'e> {
    rma: &'r Rma<'e>,
    group: Group,
    me: u32,
    id: u64,
    round: u32,
    signalled: bool,
}

impl Request for Barrier<'_, '_> {
    fn test(&mut self) -> Result<bool, Error> {
        let n = self.group.size();
        let ep = self.rma.ep;
        loop {
            if self.round >= dissemination::rounds(n) {
                return Ok(true);
            }
            let (to, from) = dissemination::partners(self.me, n, self.round);
            if !self.signalled {
                let mut notice = self.id.to_le_bytes().to_vec();
                notice.extend_from_slice(&self.round.to_le_bytes());
                ep.notify(self.group.job_rank(to)?, BARRIER_NOTICE, &notice)?;
                self.signalled = true;
            }
            ep.progress();
            let from = self.group.job_rank(from)?;
            if !lock_state(&self.rma.served)
                .barriers
                .remove(&(self.id, self.round, from))
            {
                return Ok(false);
            }
            self.round += 1;
            self.signalled = false;
        }
    }

    fn timeout(&self) -> Duration {
        self.rma.ep.timeout()
    }

    fn backoff(&self) -> onesided_fabric::progress::Backoff {
        self.rma.ep.backoff()
    }
}

/// One process's view of a window: its own memory, and the group's.
pub struct Window<'r, 'e> {
    rma: &'r Rma<'e>,
    id: WindowId,
    group: Group,
    me: u32,
    /// Taken by `free` (to the pool) or `Drop` (retired).
    region: Option<MemoryRegion>,
    len: usize,
    epochs: Mutex<Epochs>,
}

/// An open passive-target epoch; [`Epoch::unlock`] closes it. Dropping it
/// unlocks too, ignoring errors.
pub struct Epoch<'w, 'r, 'e> {
    window: &'w Window<'r, 'e>,
    /// The locked target, or `None` for `lock_all`.
    target: Option<u32>,
    /// The lock taken on the target's lock word (none with `nocheck`).
    held: Option<LockKind>,
    open: bool,
}

impl Window<'_, '_> {
    /// This window's group.
    pub fn group(&self) -> &Group {
        &self.group
    }

    /// Bytes of this process's part of the window.
    pub fn len(&self) -> usize {
        self.len
    }

    /// Whether this process's part is empty.
    pub fn is_empty(&self) -> bool {
        self.len == 0
    }

    /// Copies bytes of this process's own part (a load, no epoch needed).
    ///
    /// # Errors
    /// [`Error::Fabric`] (`OutOfRange`) outside the window.
    pub fn read_local(&self, offset: usize, out: &mut [u8]) -> Result<(), Error> {
        self.check_local(offset, out.len())?;
        Ok(self.own()?.read_bytes(HEADER as usize + offset, out)?)
    }

    /// Writes bytes of this process's own part (a store, no epoch needed).
    ///
    /// # Errors
    /// [`Error::Fabric`] (`OutOfRange`) outside the window.
    pub fn write_local(&self, offset: usize, data: &[u8]) -> Result<(), Error> {
        self.check_local(offset, data.len())?;
        Ok(self.own()?.write_bytes(HEADER as usize + offset, data)?)
    }

    /// This process's region (present until `free` or drop take it).
    fn own(&self) -> Result<&MemoryRegion, Error> {
        self.region
            .as_ref()
            .ok_or(Error::EpochConflict("window already freed"))
    }

    fn check_local(&self, offset: usize, len: usize) -> Result<(), Error> {
        match offset.checked_add(len) {
            Some(end) if end <= self.len => Ok(()),
            _ => Err(onesided_fabric::Error::OutOfRange {
                what: "window (local)",
                offset: offset as u64,
                len: len as u64,
                size: self.len as u64,
            }
            .into()),
        }
    }

    /// Locks group rank `target`: `Shared` or `Exclusive`; with `nocheck`
    /// (`MPI_MODE_NOCHECK`) no lock is taken, the caller vouching that no
    /// conflicting access happens.
    ///
    /// # Errors
    /// [`Error::NotInGroup`], [`Error::AlreadyLocked`],
    /// [`Error::EpochConflict`], or [`Error::Fabric`] from the atomics.
    pub fn lock(
        &self,
        target: u32,
        kind: LockKind,
        nocheck: bool,
    ) -> Result<Epoch<'_, '_, '_>, Error> {
        self.group.job_rank(target)?;
        lock_state(&self.epochs).lock(target, kind)?;
        let held = if nocheck {
            None
        } else if let Err(e) = self.acquire(target, kind) {
            let _ = lock_state(&self.epochs).unlock(target);
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
    /// `nocheck`, no lock word is touched.
    ///
    /// # Errors
    /// [`Error::EpochConflict`], or [`Error::Fabric`] from the atomics.
    pub fn lock_all(&self, nocheck: bool) -> Result<Epoch<'_, '_, '_>, Error> {
        lock_state(&self.epochs).lock_all()?;
        if !nocheck {
            if let Err(e) = self.acquire_all() {
                let _ = lock_state(&self.epochs).unlock_all();
                return Err(e);
            }
        }
        Ok(Epoch {
            window: self,
            target: None,
            held: (!nocheck).then_some(LockKind::Shared),
            open: true,
        })
    }

    fn lock_word(&self, target: u32) -> Result<(u32, RemoteMemory), Error> {
        let rank = self.group.job_rank(target)?;
        Ok((rank, self.rma.describe(rank, self.id)?.remote))
    }

    fn atomic(&self, rank: u32, remote: &RemoteMemory, atomic: Atomic) -> Result<u64, Error> {
        let ep = self.rma.ep;
        Ok(match atomic {
            Atomic::CompareSwap { expected, new } => {
                ep.compare_swap(rank, remote, 0, expected, new)?
            }
            Atomic::FetchAdd(delta) => ep.fetch_add(rank, remote, 0, delta)?,
        })
    }

    /// Takes `kind` on `target`'s lock word, backing off while it is held.
    /// One attempt at `kind` on `target`'s lock word; whether granted (a
    /// refused shared request has been undone).
    fn try_acquire(&self, target: u32, kind: LockKind) -> Result<bool, Error> {
        let (rank, remote) = self.lock_word(target)?;
        let previous = self.atomic(rank, &remote, lock::request(kind))?;
        Ok(match lock::outcome(kind, previous) {
            Outcome::Granted => true,
            Outcome::Retry => false,
            Outcome::Undo(undo) => {
                self.atomic(rank, &remote, undo)?;
                false
            }
        })
    }

    /// Shared locks on every member. Holding some while waiting for another
    /// could wait on a process that waits for one held here, so a refusal
    /// releases them all before backing off and starting over.
    fn acquire_all(&self) -> Result<(), Error> {
        let mut backoff = self.rma.ep.backoff();
        'attempt: loop {
            for target in 0..self.group.size() {
                let granted = match self.try_acquire(target, LockKind::Shared) {
                    Ok(granted) => granted,
                    Err(e) => {
                        for held in 0..target {
                            let _ = self.release(held, LockKind::Shared);
                        }
                        return Err(e);
                    }
                };
                if !granted {
                    for held in 0..target {
                        self.release(held, LockKind::Shared)?;
                    }
                    if backoff.pause() > self.rma.ep.timeout() {
                        return Err(Error::Fabric(onesided_fabric::Error::Timeout {
                            op: "window lock_all",
                            rank: self.rma.ep.rank(),
                            after: self.rma.ep.timeout(),
                        }));
                    }
                    continue 'attempt;
                }
            }
            return Ok(());
        }
    }

    fn acquire(&self, target: u32, kind: LockKind) -> Result<(), Error> {
        let mut backoff = self.rma.ep.backoff();
        loop {
            if self.try_acquire(target, kind)? {
                return Ok(());
            }
            if backoff.pause() > self.rma.ep.timeout() {
                let rank = self.group.job_rank(target)?;
                return Err(Error::Fabric(onesided_fabric::Error::Timeout {
                    op: "window lock",
                    rank,
                    after: self.rma.ep.timeout(),
                }));
            }
        }
    }

    fn release(&self, target: u32, kind: LockKind) -> Result<(), Error> {
        let (rank, remote) = self.lock_word(target)?;
        self.atomic(rank, &remote, lock::release(kind)).map(drop)
    }

    /// Where `len` bytes at `offset` of `target`'s part are, after checking
    /// the epoch and the bounds.
    fn target(
        &self,
        target: u32,
        offset: u64,
        len: usize,
        what: &'static str,
    ) -> Result<(u32, Rc<Peer>, u64), Error> {
        let rank = self.group.job_rank(target)?;
        lock_state(&self.epochs).check_access(target)?;
        if self.rma.ep.is_dead(rank) {
            // Its mapped memory would still answer: say it is gone.
            return Err(onesided_fabric::Error::PeerDead { op: what, rank }.into());
        }
        let peer = self.rma.describe(rank, self.id)?;
        let size = peer.remote.len - HEADER;
        match offset.checked_add(len as u64) {
            Some(end) if end <= size => Ok((rank, peer, HEADER + offset)),
            _ => Err(onesided_fabric::Error::OutOfRange {
                what,
                offset,
                len: len as u64,
                size,
            }
            .into()),
        }
    }

    /// Reads `buf.len()` bytes at `offset` of `target`'s part.
    ///
    /// # Errors
    /// [`Error::NoEpoch`] outside an epoch covering `target`;
    /// [`Error::Fabric`] (`OutOfRange`, peer errors). Nothing is posted on
    /// a checked error.
    pub fn get(&self, target: u32, offset: u64, buf: &mut [u8]) -> Result<(), Error> {
        let (rank, peer, at) = self.target(target, offset, buf.len(), "window get")?;
        match &peer.mapping {
            Some(mapping) => Ok(mapping.read_bytes(at as usize, buf)?),
            None => Ok(self.rma.ep.read(rank, &peer.remote, at, buf)?),
        }
    }

    /// Writes `data` at `offset` of `target`'s part; complete at the target
    /// when it returns.
    ///
    /// # Errors
    /// As [`Window::get`].
    pub fn put(&self, target: u32, offset: u64, data: &[u8]) -> Result<(), Error> {
        let (rank, peer, at) = self.target(target, offset, data.len(), "window put")?;
        match &peer.mapping {
            Some(mapping) => Ok(mapping.write_bytes(at as usize, data)?),
            None => Ok(self.rma.ep.write_delivered(rank, &peer.remote, at, data)?),
        }
    }

    /// Atomically adds `value` to the u64 at `offset` (8-aligned) of
    /// `target`'s part; returns the previous value.
    ///
    /// # Errors
    /// As [`Window::get`], and `Misaligned`.
    pub fn fetch_add_u64(&self, target: u32, offset: u64, value: u64) -> Result<u64, Error> {
        let (rank, peer, at) = self.target(target, offset, 8, "window fetch_add")?;
        Ok(self.rma.ep.fetch_add(rank, &peer.remote, at, value)?)
    }

    /// Completes this process's operations to `target` at the target.
    /// Operations complete before they return, so there is nothing left to
    /// wait for; the epoch is still checked.
    ///
    /// # Errors
    /// [`Error::NoEpoch`] outside an epoch covering `target`.
    pub fn flush(&self, target: u32) -> Result<(), Error> {
        self.group.job_rank(target)?;
        lock_state(&self.epochs).check_access(target)
    }

    /// Atomically replaces the u64 at `offset` (8-aligned) of `target`'s
    /// part with `new` if it equals `expected`; returns the previous value.
    ///
    /// # Errors
    /// As [`Window::fetch_add_u64`].
    pub fn compare_and_swap_u64(
        &self,
        target: u32,
        offset: u64,
        expected: u64,
        new: u64,
    ) -> Result<u64, Error> {
        let (rank, peer, at) = self.target(target, offset, 8, "window compare_and_swap")?;
        Ok(self
            .rma
            .ep
            .compare_swap(rank, &peer.remote, at, expected, new)?)
    }

    /// Active-target synchronisation (`MPI_Win_fence`): waits until every
    /// member has reached the fence (operations complete before they
    /// return, so a barrier is all it takes), then opens the next fence
    /// epoch, or none when `last` (`MPI_MODE_NOSUCCEED`).
    ///
    /// # Errors
    /// [`Error::EpochConflict`] inside a passive epoch; barrier errors.
    pub fn fence(&self, last: bool) -> Result<(), Error> {
        let mut next = lock_state(&self.epochs).clone();
        next.fence(last)?;
        self.rma.ibarrier(&self.group)?.wait()?;
        *lock_state(&self.epochs) = next;
        Ok(())
    }

    /// Frees the window: every member calls it once its epochs are closed;
    /// it returns when every member has called it, so no peer still uses
    /// this process's memory.
    ///
    /// Cost: one notice to, and one from, every other member.
    ///
    /// # Errors
    /// [`Error::EpochConflict`] while an epoch is open (nothing is freed);
    /// [`Error::Fabric`] when a member cannot be told or does not answer.
    pub fn free(mut self) -> Result<(), Error> {
        if lock_state(&self.epochs).passive_open() {
            return Err(Error::EpochConflict("free with a passive epoch open"));
        }
        let ep = self.rma.ep;
        // Dead members neither hear nor answer.
        let others: Vec<u32> = (0..self.group.size())
            .filter(|&g| g != self.me)
            .filter_map(|g| self.group.job_rank(g).ok())
            .filter(|&r| !ep.is_dead(r))
            .collect();
        for &rank in &others {
            ep.notify(rank, FREE_NOTICE, &self.id.to_le_bytes())?;
        }
        let mut backoff = self.rma.ep.backoff();
        loop {
            ep.progress();
            {
                let mut served = lock_state(&self.rma.served);
                let heard = |r: &u32| served.freeing.contains(&(self.id, *r)) || ep.is_dead(*r);
                if others.iter().all(heard) {
                    for &r in &others {
                        served.freeing.remove(&(self.id, r));
                    }
                    break;
                }
            }
            if backoff.pause() > ep.timeout() {
                return Err(Error::Fabric(onesided_fabric::Error::Timeout {
                    op: "window free",
                    rank: ep.rank(),
                    after: ep.timeout(),
                }));
            }
        }
        self.rma.forget(self.id);
        // Every member is done with it: keep the registration for the next
        // window.
        if let Some(region) = self.region.take() {
            self.rma.pool(region);
        }
        Ok(())
    }
}

impl Drop for Window<'_, '_> {
    /// A window dropped without a successful `free`: peers may still use its
    /// memory, so the registration is kept (never reused) while the `Rma`
    /// lives, and peers asking for it are told it is gone.
    fn drop(&mut self) {
        if let Some(region) = self.region.take() {
            self.rma.forget(self.id);
            lock_state(&self.rma.retired).push(region);
        }
    }
}

impl Epoch<'_, '_, '_> {
    /// Closes the epoch, releasing its lock(s).
    ///
    /// # Errors
    /// [`Error::Fabric`] when a release atomic fails (the epoch is closed
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
        match self.target {
            Some(target) => {
                lock_state(&window.epochs).unlock(target)?;
                if let Some(kind) = self.held {
                    window.release(target, kind)?;
                }
            }
            None => {
                lock_state(&window.epochs).unlock_all()?;
                if self.held.is_some() {
                    let mut first_error = None;
                    for target in 0..window.group.size() {
                        if let Err(e) = window.release(target, LockKind::Shared) {
                            first_error.get_or_insert(e);
                        }
                    }
                    if let Some(e) = first_error {
                        return Err(e);
                    }
                }
            }
        }
        Ok(())
    }
}

impl Drop for Epoch<'_, '_, '_> {
    fn drop(&mut self) {
        let _ = self.close();
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn window_ids_differ_by_group_and_count() {
        let a = Group::new(vec![0, 1]).unwrap();
        let b = Group::new(vec![1, 0]).unwrap();
        assert_ne!(window_id(&a, 0, 1), window_id(&a, 0, 2));
        assert_ne!(window_id(&a, 0, 1), window_id(&b, 0, 1));
        assert_ne!(
            window_id(&a, 0, 1),
            window_id(&a, 1, 1),
            "windows and barriers"
        );
        assert_eq!(window_id(&a, 0, 3), window_id(&a.clone(), 0, 3));
    }
}
