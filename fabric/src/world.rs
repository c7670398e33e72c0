//! Bootstrap: PMI-1, one endpoint per process, endpoint names exchanged
//! through the key-value space once, and the launcher's failure notices.

use std::io::{BufRead, BufReader};
use std::os::fd::{FromRawFd, OwnedFd};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex, MutexGuard, Weak};

use crate::binomial;
use crate::bootstrap;
use crate::dissemination;
use crate::endpoint::{Endpoint, EndpointConfig, EndpointState};
use crate::error::{Error, Result};
use crate::join::{self, Inbox, Notice, Place};
use crate::liveness::Process;
use crate::mapping::Mapping;
use crate::pmi::{Pmi, SpawnRequest};
use crate::stats::Stats;

/// Environment variable naming the pipe on which `osrun --ft` reports dead
/// ranks, one line `dead RANK` each.
pub const EVENT_FD_ENV: &str = "ONESIDED_EVENT_FD";

/// A process's place in its job: its PMI connection and its endpoint,
/// connected to every rank.
///
/// ```
/// use onesided_fabric::{FinalizeError, World};
///
/// # fn main() -> Result<(), onesided_fabric::Error> {
/// // Under osrun, mpiexec or srun every rank joins its job; started
/// // alone, a process is a job of one.
/// let world = World::init()?;
/// assert!(world.rank() < world.size());
/// let endpoint = world.endpoint().clone(); // a handle of its own
/// // Refused while the handle is held: the world comes back.
/// let Err(FinalizeError::Refused { world, .. }) = world.finalize() else {
///     panic!("finalized with a handle held");
/// };
/// drop(endpoint);
/// world.finalize()?;
/// # Ok(())
/// # }
/// ```
pub struct World {
    endpoint: Endpoint,
    /// Behind a mutex so that the endpoint can stay borrowed (by windows,
    /// say) while the process uses PMI; shared with [`Spawner`]s.
    pmi: Arc<Mutex<Pmi>>,
    /// Join notices (see [`crate::join`]).
    inbox: Inbox,
    /// Whether processes have left the job ([`Spawner::part_with`]).
    parted: Arc<AtomicBool>,
}

/// What the launcher said about this process at start ([`World::launch`]).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Launch {
    /// Its rank among the processes started with it (a spawned process's
    /// among those of its spawn).
    pub rank: u32,
    /// How many processes were started with it.
    pub size: u32,
    /// Whether it was spawned into a running job.
    pub spawned: bool,
    /// How many processes the launcher may run in all.
    pub universe_size: u32,
    /// The name of its job's key-value space.
    pub kvsname: String,
}

/// Why [`World::finalize`] or [`World::leave`] did not end the process's
/// part in the job.
pub enum FinalizeError {
    /// Other handles of the endpoint (windows, communicators, exposures,
    /// clones, spawners) are still held: nothing was done, and the
    /// `World` comes back to be finalized once they are dropped.
    Refused {
        /// The world, as it was.
        world: World,
        /// [`Error::StillShared`], saying how many handles.
        error: Error,
    },
    /// The closing barrier or the process manager failed.
    Failed(Error),
}

impl FinalizeError {
    /// The error, without the world.
    pub fn error(&self) -> &Error {
        match self {
            FinalizeError::Refused { error, .. } | FinalizeError::Failed(error) => error,
        }
    }
}

impl std::fmt::Debug for FinalizeError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            FinalizeError::Refused { error, .. } => f
                .debug_struct("Refused")
                .field("error", error)
                .finish_non_exhaustive(),
            FinalizeError::Failed(e) => f.debug_tuple("Failed").field(e).finish(),
        }
    }
}

impl std::fmt::Display for FinalizeError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        self.error().fmt(f)
    }
}

impl std::error::Error for FinalizeError {
    fn source(&self) -> Option<&(dyn std::error::Error + 'static)> {
        self.error().source()
    }
}

impl From<FinalizeError> for Error {
    fn from(e: FinalizeError) -> Error {
        match e {
            FinalizeError::Refused { error, .. } | FinalizeError::Failed(error) => error,
        }
    }
}

/// What starts processes into the job ([`World::spawn`]): a handle a
/// struct can keep (it holds a handle of the endpoint, so the world
/// finalizes after it is dropped).
#[derive(Clone)]
pub struct Spawner {
    endpoint: Endpoint,
    pmi: Arc<Mutex<Pmi>>,
    inbox: Inbox,
    parted: Arc<AtomicBool>,
}

impl World {
    /// Joins the job the environment describes (PMI-1 under `osrun`,
    /// `mpiexec` or Slurm; a singleton otherwise) with the endpoint
    /// configuration of [`EndpointConfig::from_env`]. Every rank publishes
    /// its host, its machine, its board and the CPUs it may run on; waits
    /// spin before blocking or yielding unless the ranks on this machine
    /// outnumber the CPUs they may run on together ([`cpus_together`]: a
    /// launcher that binds each rank to a core of its own still gets
    /// spinning waits; measurements: `docs/measurements.md`, "Spinning
    /// under a binding launcher").
    ///
    /// A process started by [`World::spawn`] joins the running job: it
    /// gets the next job ranks, connects to every process of the job, and
    /// returns once each knows it (the spawn's root says so, see
    /// [`crate::join`]). One that `osrun --standby`
    /// started ahead opens its endpoint, then waits here until a spawn
    /// takes it; one the job ends without taking exits here with status 0.
    ///
    /// # Errors
    /// Any error of [`Pmi::from_env`], [`EndpointConfig::from_env`],
    /// [`Endpoint::open`], or of the name exchange; for a joining
    /// process, a job process that dies or does not answer.
    pub fn init() -> Result<World> {
        World::init_with(&EndpointConfig::from_env()?)
    }

    /// As [`World::init`], with an explicit endpoint configuration.
    ///
    /// Cost per process for p processes (see [`crate::bootstrap`]): one
    /// PMI put, one PMI barrier, at most 2 ceil(log2 p) PMI gets,
    /// ceil(log2 p) messages and rounds, one batched address-vector
    /// insertion. A process that joins a running job also reads the
    /// job's places from its preput keys (one get per old rank).
    ///
    /// # Errors
    /// As [`World::init`].
    pub fn init_with(config: &EndpointConfig) -> Result<World> {
        // The endpoint first: a standby process (`osrun --standby`) pays
        // libfabric's start before it is needed.
        let mut endpoint = Endpoint::open(config)?;
        let mut pmi = match Pmi::from_env() {
            Err(Error::Dismissed) => {
                // Not needed: closes the endpoint (so no file stays in
                // /dev/shm) and ends, having run nothing past this call.
                drop(endpoint);
                std::process::exit(0)
            }
            pmi => pmi?,
        };
        // A spawned process of a running job: its job ranks start after
        // the job's (`first`), and it learns the job's places.
        let joins = match pmi.spawned() {
            true => joining(&mut pmi)?,
            false => None,
        };
        let (first, _, parents) = joins.clone().unwrap_or_default();
        let rank = pmi.rank();
        let size = pmi.size();
        if size == 0 || size > crate::MAX_RANKS || rank >= size {
            return Err(Error::InvalidRank { rank, size });
        }
        // A board per process: shared memory the processes on its host
        // read instead of exchanging messages (see Ranks::board_name).
        let board = Mapping::create_shared(BOARD_LEN)?;
        let process = Process::current();
        // One record: its address, host, machine, process, board and the
        // CPUs it may run on.
        let own = format!(
            "{}:{:016x}:{:016x}:{}:{}:{}",
            hex_encode(&endpoint.name()?),
            host_id(first + rank),
            machine_id(),
            process.map(|p| p.encode()).unwrap_or_default(),
            board.name().unwrap_or_default(),
            allowed_cpus()
        );
        if own.len() > bootstrap::MAX_RECORD {
            return Err(Error::BadDescriptor(format!(
                "the start-up record of rank {rank} has {} bytes, over {}",
                own.len(),
                bootstrap::MAX_RECORD
            )));
        }
        pmi.put(&bootstrap::record_key(rank), &own)?;
        pmi.barrier()?;
        // The partners' addresses from the process manager, the rest
        // over the fabric (see crate::bootstrap).
        let mut known: Vec<(u32, Vec<u8>)> = (parents.iter().enumerate())
            .filter(|(_, p)| !p.name.is_empty())
            .map(|(r, p)| (r as u32, p.name.clone()))
            .collect();
        known.push((first + rank, Record::parse(rank, &own)?.name));
        for r in bootstrap::all_partners(rank, size) {
            let record = pmi.get(&bootstrap::record_key(r))?;
            known.push((first + r, Record::parse(r, &record)?.name));
        }
        endpoint.connect_partners(first + rank, first + size, &known)?;
        let mut gather = bootstrap::Gather::new(rank, size, own);
        for k in 0..bootstrap::rounds(size) {
            let (to, from) = bootstrap::partners(rank, size, k);
            let mut buf = vec![0u8; bootstrap::count(size, k) * (bootstrap::MAX_RECORD + 1)];
            let len = endpoint.exchange_bootstrap(
                (first + to, gather.outgoing(k).as_bytes()),
                (first + from, &mut buf),
                k,
            )?;
            let text = std::str::from_utf8(&buf[..len]).ok();
            text.and_then(|t| gather.incoming(k, t)).ok_or_else(|| {
                Error::BadDescriptor(format!("start-up records from rank {from} are malformed"))
            })?;
        }
        let records = gather
            .finish()
            .ok_or_else(|| Error::BadDescriptor("start-up records are missing".into()))?;
        let records: Vec<Record> = (records.iter().enumerate())
            .map(|(r, text)| Record::parse(r as u32, text))
            .collect::<Result<_>>()?;
        let mut names: Vec<Vec<u8>> = parents.iter().map(|p| p.name.clone()).collect();
        names.extend(records.iter().map(|r| r.name.clone()));
        endpoint.connect(first + rank, &names)?;
        // Ranks that left have no place; their host is none of the others'.
        let mut hosts: Vec<u64> = parents.iter().map(|p| p.host).collect();
        let mut boards: Vec<String> = parents.iter().map(|p| p.board.clone()).collect();
        let mut processes: Vec<Option<Process>> = parents.iter().map(|p| p.process).collect();
        let mut machines = Vec::with_capacity(size as usize);
        let mut cpus = Vec::with_capacity(size as usize);
        for record in &records {
            let place = &record.place;
            hosts.push(place.host);
            machines.push(place.machine);
            boards.push(place.board.to_string());
            processes.push(place.process);
            cpus.push(place.cpus.to_string());
        }
        // The CPUs this machine's ranks may run on together (the same on
        // each of them); when the ranks outnumber them, waits block or
        // yield at once instead of spinning. Counted by machine, not by
        // host: ranks that `ONESIDED_HOST` makes hosts of their own still
        // share its cores. A CPU quota of this process's cgroup, which
        // `available_parallelism` counts and masks do not, bounds them.
        let here = machine_id();
        let local: Vec<&str> = (machines.iter().zip(&cpus))
            .filter(|(&m, _)| m == here)
            .map(|(_, c)| c.as_str())
            .collect();
        let host_cpus = cpus_together(&local).unwrap_or_else(online_cpus);
        let cores = std::thread::available_parallelism().map_or(1, |n| n.get());
        let mask = cpu_list(&allowed_cpus()).map_or(0, |c| c.len());
        let usable = if cores < mask {
            host_cpus.min(cores)
        } else {
            host_cpus
        };
        if local.len() > usable {
            endpoint.set_spin(std::time::Duration::ZERO);
        }
        endpoint.set_hosts(hosts, boards, processes, board, host_cpus)?;
        if watch_failure_notices(Arc::downgrade(endpoint.shared()))? {
            // Ranks may die and the job go on.
            endpoint.ranks().watch_processes();
        }
        let inbox = Inbox::default();
        inbox.serve(&endpoint)?;
        if let Some((_, root, _)) = joins {
            // Tells the spawn's root where this process is; the root
            // welcomes it once every process of the job knows it.
            let me = Notice::Join(Place {
                name: endpoint.name()?,
                host: host_id(first + rank),
                board: endpoint
                    .ranks()
                    .board_name(first + rank)
                    .unwrap_or_default()
                    .to_string(),
                process,
            });
            endpoint.notify(root, join::JOIN, &me.encode())?;
            inbox.wait(&endpoint, "join the job", &[root], |_, n| {
                (*n == Notice::Welcome).then_some(())
            })?;
            stop_spinning_when_crowded(&endpoint);
        }
        Ok(World {
            endpoint,
            pmi: Arc::new(Mutex::new(pmi)),
            inbox,
            parted: Arc::new(AtomicBool::new(false)),
        })
    }

    /// A handle that spawns processes into this job, for a struct to keep.
    pub fn spawner(&self) -> Spawner {
        Spawner {
            endpoint: self.endpoint.clone(),
            pmi: Arc::clone(&self.pmi),
            inbox: self.inbox.clone(),
            parted: Arc::clone(&self.parted),
        }
    }

    /// As [`Spawner::spawn`].
    ///
    /// # Errors
    /// As [`Spawner::spawn`].
    pub fn spawn(&self, root: u32, request: &SpawnRequest) -> Result<std::ops::Range<u32>> {
        self.spawner().spawn(root, request)
    }
    /// This process's rank.
    pub fn rank(&self) -> u32 {
        self.endpoint.rank()
    }

    /// Number of processes in the job.
    pub fn size(&self) -> u32 {
        self.endpoint.size()
    }

    /// The endpoint, connected to every rank (clone it for a handle of
    /// one's own).
    pub fn endpoint(&self) -> &Endpoint {
        &self.endpoint
    }

    /// What this process has sent and posted: the endpoint's counters
    /// ([`Endpoint::stats`]) and its requests to the process manager.
    /// With `ONESIDED_STATS=1`, [`World::finalize`] and [`World::leave`]
    /// print them as one JSON line on standard error.
    pub fn stats(&self) -> Stats {
        let mut stats = self.endpoint.stats();
        stats.pmi_requests = self.pmi().requests();
        stats
    }

    /// The PMI connection, locked for one call (never handed out: a
    /// guard held across a call of this `World` would deadlock it).
    fn pmi(&self) -> MutexGuard<'_, Pmi> {
        self.pmi.lock().unwrap_or_else(|p| p.into_inner())
    }

    /// What the launcher said about this process at start: its rank and
    /// size among the processes started with it, whether it was spawned,
    /// and its job's key-value space. An owned copy.
    pub fn launch(&self) -> Launch {
        let pmi = self.pmi();
        Launch {
            rank: pmi.rank(),
            size: pmi.size(),
            spawned: pmi.spawned(),
            universe_size: pmi.universe_size(),
            kvsname: pmi.kvsname().to_string(),
        }
    }

    /// The value of `key` in this job's key-value space (the launcher's;
    /// for a spawned process, what its spawner put there before the spawn).
    ///
    /// # Errors
    /// As [`Pmi::get`]: no such key, or the launcher's connection.
    pub fn kvs_get(&self, key: &str) -> Result<String> {
        self.pmi().get(key)
    }

    /// The value of `key` in another job's key-value space (a parent
    /// job's, named to a spawned job in a preput key).
    ///
    /// # Errors
    /// As [`Pmi::get_from`].
    pub fn kvs_get_from(&self, kvsname: &str, key: &str) -> Result<String> {
        self.pmi().get_from(kvsname, key)
    }

    /// Puts `key` = `value` in this job's key-value space, for processes
    /// that read it after a [`World::barrier`] or a spawn.
    ///
    /// # Errors
    /// As [`Pmi::put`].
    pub fn kvs_put(&self, key: &str, value: &str) -> Result<()> {
        self.pmi().put(key, value)
    }

    /// Starts `request.count` processes as a job of their own, beside
    /// this one (PMI-1 `spawn`, `MPI_Comm_spawn` without the
    /// intercommunicator); [`World::spawn`] starts processes that join
    /// this job instead.
    ///
    /// # Errors
    /// As [`Pmi::spawn`].
    pub fn spawn_job(&self, request: &SpawnRequest) -> Result<()> {
        self.pmi().spawn(request)
    }

    /// Asks the process manager to end the whole job with exit status
    /// `code` (`MPI_Abort`); returns once asked.
    ///
    /// # Errors
    /// As [`Pmi::abort`].
    pub fn abort(&self, code: i32, reason: &str) -> Result<()> {
        self.pmi().abort(code, reason)
    }

    /// Waits for every rank through the process manager. Slow (a round trip
    /// through the launcher) and meant for setup and teardown.
    ///
    /// # Errors
    /// As [`Pmi::barrier`].
    pub fn barrier(&self) -> Result<()> {
        self.pmi().barrier()
    }

    /// Waits for every rank (every live one, over the fabric, when
    /// processes joined or left the job: a dissemination barrier,
    /// ceil(log2 p) notices and rounds per process), closes the endpoint, and tells
    /// the process manager this process is done. Every other handle of the endpoint
    /// (an `Rma`, its windows and exposures, communicators, clones) must be
    /// dropped first: finalize refuses otherwise, rather than close an
    /// endpoint that something still uses.
    ///
    /// # Errors
    /// [`FinalizeError::Refused`] with [`Error::StillShared`] when other
    /// handles of the endpoint are held (then nothing is waited for, the
    /// process manager is not told, and the world comes back);
    /// [`FinalizeError::Failed`] as [`Pmi::barrier`] and [`Pmi::finalize`].
    pub fn finalize(self) -> std::result::Result<(), FinalizeError> {
        self.end("finalize", World::finalize_now)
    }

    /// Ends this process's part by `then`, unless other handles are held:
    /// then nothing is done and the world comes back.
    fn end(
        self,
        op: &'static str,
        then: fn(World) -> Result<()>,
    ) -> std::result::Result<(), FinalizeError> {
        match self.only_handle(op) {
            Err(error) => Err(FinalizeError::Refused { world: self, error }),
            Ok(()) => then(self).map_err(FinalizeError::Failed),
        }
    }

    /// [`World::finalize`] once it is the only handle.
    fn finalize_now(self) -> Result<()> {
        // A job whose processes came and went waits for its live
        // processes over the fabric: the launcher's barrier would wait
        // for those that left (Hydra's does), and those that joined are
        // a job of their own to it. Deaths do not count: views of them
        // differ between processes for a while, and the launchers that
        // survive them (osrun --ft) complete their barrier among the
        // survivors.
        let ep = &self.endpoint;
        let changed = ep.size() != self.pmi().size() || self.parted.load(Ordering::Acquire);
        if changed {
            self.finalize_barrier()?;
        }
        let mut pmi = sole(self.pmi, "finalize")?;
        if !changed {
            pmi.barrier()?;
        }
        print_stats(&self.endpoint, &pmi);
        drop(self.endpoint);
        pmi.finalize()
    }

    /// The barrier of [`World::finalize`] in a job whose processes came
    /// and went: a dissemination barrier over the live ranks (this one
    /// included, in increasing order), ceil(log2 p) notices and rounds
    /// per process.
    fn finalize_barrier(&self) -> Result<()> {
        let ep = &self.endpoint;
        let mut live = ep.ranks().live_ranks();
        let at = live.partition_point(|&r| r < ep.rank());
        live.insert(at, ep.rank());
        let (me, n) = (at as u32, live.len() as u32);
        for round in 0..dissemination::rounds(n) {
            let (to, from) = dissemination::partners(me, n, round);
            ep.notify(
                live[to as usize],
                join::JOIN,
                &Notice::Finalize(round).encode(),
            )?;
            let from = [live[from as usize]];
            (self.inbox).wait(ep, "finalize", &from, |_, n| {
                (*n == Notice::Finalize(round)).then_some(())
            })?;
        }
        Ok(())
    }

    /// Refuses `op` while other handles of the endpoint, or of the PMI
    /// connection (a [`Spawner`]), are held.
    fn only_handle(&self, op: &'static str) -> Result<()> {
        let others = |n: usize| n.saturating_sub(1);
        let handles = others(self.endpoint.handles()).max(others(Arc::strong_count(&self.pmi)));
        match handles {
            0 => Ok(()),
            handles => Err(Error::StillShared { op, handles }),
        }
    }

    /// Leaves a job that goes on without this process (a process retired
    /// by a shrinking reconfiguration): closes the endpoint and tells the
    /// process manager this process is done, without waiting for the
    /// others, which finalize later. The process may then exit with
    /// status 0. Like [`World::finalize`], it refuses while other handles
    /// of the endpoint are held.
    ///
    /// # Errors
    /// As [`World::finalize`]: [`FinalizeError::Refused`] when handles are
    /// held; [`FinalizeError::Failed`] as [`Pmi::finalize`].
    pub fn leave(self) -> std::result::Result<(), FinalizeError> {
        self.end("leave", World::leave_now)
    }

    /// [`World::leave`] once it is the only handle.
    fn leave_now(self) -> Result<()> {
        // Goodbye to the others (Spawner::part_with waits for it), after
        // everything this process needed from them has arrived; one that
        // has gone already does not matter.
        let ep = &self.endpoint;
        for r in ep.ranks().live_ranks() {
            let _ = ep.notify(r, join::JOIN, &Notice::Bye.encode());
        }
        let pmi = sole(self.pmi, "leave")?;
        print_stats(&self.endpoint, &pmi);
        drop(self.endpoint);
        pmi.finalize()
    }
}

/// Prints the counters of `endpoint` and `pmi` as one JSON line on
/// standard error when `ONESIDED_STATS` asks for them (at the end of
/// [`World::finalize`] and [`World::leave`]).
fn print_stats(endpoint: &Endpoint, pmi: &Pmi) {
    if crate::stats::wanted_at_exit() {
        let mut stats = endpoint.stats();
        stats.pmi_requests = pmi.requests();
        // One write, so that the lines of ranks sharing a pipe stay whole.
        let line = format!("{}\n", stats.to_json(endpoint.rank()));
        let _ = std::io::Write::write_all(&mut std::io::stderr(), line.as_bytes());
    }
}

impl Spawner {
    /// Parts with `ranks`, processes retiring from the job: waits until
    /// each has said goodbye ([`World::leave`], sent once it needs nothing
    /// more from anyone), then counts them out (dead), so that nothing
    /// waits for them again. A process that closed its endpoint earlier
    /// could lose what was still on its way to it.
    ///
    /// # Errors
    /// [`Error::Timeout`] naming the first that did not say goodbye
    /// within the endpoint's timeout (all of them are counted out all the
    /// same); [`Error::PeerDead`].
    pub fn part_with(&self, ranks: &[u32]) -> Result<()> {
        let ep = &self.endpoint;
        let heard = self
            .inbox
            .wait(ep, "part with a retiring process", ranks, |_, n| {
                (*n == Notice::Bye).then_some(())
            });
        for &r in ranks {
            ep.mark_dead(r);
        }
        self.parted.store(true, Ordering::Release);
        heard.map(drop)
    }

    /// Starts `request.count` processes of `request.program` that join
    /// this job as its next ranks (returned), from job rank `root`, which
    /// asks the launcher (PMI-1 `spawn`). Every live process of the job
    /// calls it, with the same count. The new processes' [`World::init`]
    /// connects them; this returns once every one is known here (a new
    /// process reads `request.preput`'s keys with [`Pmi::get`]). Existing
    /// windows, groups and communicators stay valid.
    ///
    /// Cost (see [`crate::join`]): the new places go down a binomial tree
    /// of the old processes and the answers come back up, at most
    /// ceil(log2 p) + 1 notices per old process and 2 ceil(log2 p) rounds;
    /// the root also hears from and welcomes each new process. The root
    /// hands every old rank's place to the launcher (one preput key per
    /// rank), which each new process reads (one PMI get per old rank).
    ///
    /// # Errors
    /// [`Error::SpawnFailed`] on every process when the launcher cannot
    /// start them (a missing program, beyond the universe size): the job
    /// goes on without them; [`Error::Timeout`] or [`Error::PeerDead`]
    /// naming a new process, the root, or a process of the tree that
    /// does not come.
    pub fn spawn(&self, root: u32, request: &SpawnRequest) -> Result<std::ops::Range<u32>> {
        let ep = &self.endpoint;
        let ranks = ep.reserve(request.count)?;
        match ep.rank() == root {
            true => self.spawn_root(request, ranks.clone())?,
            false => self.spawn_member(root, ranks.clone())?,
        }
        stop_spinning_when_crowded(ep);
        Ok(ranks)
    }

    /// The root's part of [`Spawner::spawn`]: asks the launcher, hears
    /// from each new process, sends their places down the tree of the old
    /// processes it counts live, and welcomes them once the tree knows
    /// them.
    fn spawn_root(&self, request: &SpawnRequest, ranks: std::ops::Range<u32>) -> Result<()> {
        let ep = &self.endpoint;
        let (root, first) = (ep.rank(), ranks.start);
        // Ranks dead, left, or reserved by an earlier spawn that failed
        // (never joined): out of the tree.
        let live = ep.ranks().live_ranks();
        let excluded: Vec<u32> = (0..first)
            .filter(|&r| r != root && live.binary_search(&r).is_err())
            .collect();
        let mut preput = request.preput.clone();
        preput.push((
            join::JOIN_KEY.to_string(),
            format!("{first}:{}:{root}", request.count),
        ));
        for r in 0..first {
            let place = (ep
                .peer_name(r)
                .filter(|n| !n.is_empty() && !ep.ranks().is_dead(r)))
            .map(|name| Place {
                name: name.to_vec(),
                host: ep.ranks().host_of(r).unwrap_or(u64::MAX),
                board: ep.ranks().board_name(r).unwrap_or_default().to_string(),
                process: ep.process_of(r),
            });
            preput.push((
                join::rank_key(r),
                place.map(|p| p.encode()).unwrap_or_default(),
            ));
        }
        let spawned = (self.pmi.lock().unwrap_or_else(|p| p.into_inner())).spawn(&SpawnRequest {
            preput,
            ..request.clone()
        });
        let members = tree_members(first, &excluded);
        let children = binomial::children(&members, root, root);
        if let Err(e) = spawned {
            let why = e.to_string();
            let failed = Notice::SpawnFailed {
                first,
                excluded,
                // The launcher's reason, cut to fit a notice.
                why: why.chars().take(1024).collect(),
            };
            for &c in &children {
                ep.notify(c, join::JOIN, &failed.encode())?;
            }
            return Err(Error::SpawnFailed(why));
        }
        let new: Vec<u32> = ranks.collect();
        let mut places = self
            .inbox
            .wait(ep, "wait for a new process", &new, |_, n| match n {
                Notice::Join(place) => Some(place.clone()),
                _ => None,
            })?;
        places.sort_by_key(|(r, _)| *r);
        for (rank, place) in &places {
            ep.add_peer(
                *rank,
                &place.name,
                place.host,
                place.board.clone(),
                place.process,
            )?;
        }
        for notice in join::spawn_notices(first, &excluded, &places) {
            for &c in &children {
                ep.notify(c, join::JOIN, &notice.encode())?;
            }
        }
        self.subtree_knows(&children, first)?;
        for &r in &new {
            ep.notify(r, join::JOIN, &Notice::Welcome.encode())?;
        }
        Ok(())
    }

    /// An old process's part of [`Spawner::spawn`]: takes the new places
    /// (or the failure) from its parent in the root's tree, passes them to
    /// its children, and answers its parent once they know them.
    fn spawn_member(&self, root: u32, ranks: std::ops::Range<u32>) -> Result<()> {
        let ep = &self.endpoint;
        let (me, first) = (ep.rank(), ranks.start);
        // The parent in this process's view of the tree: the one named
        // when nothing comes.
        let mut view = ep.ranks().live_ranks();
        view.retain(|&r| r < first);
        view.push(me);
        view.sort_unstable();
        let expected = binomial::parent(&view, root, me).unwrap_or(root);
        let mut known = 0;
        let (parent, children) = loop {
            let (from, notice) = (self.inbox).wait_any(
                ep,
                "hear from the spawn's root",
                expected,
                |_, n| match n {
                    Notice::Spawn { first: f, .. } | Notice::SpawnFailed { first: f, .. }
                        if *f == first =>
                    {
                        Some(n.clone())
                    }
                    _ => None,
                },
            )?;
            let (Notice::Spawn { excluded, .. } | Notice::SpawnFailed { excluded, .. }) = &notice
            else {
                continue;
            };
            let children = binomial::children(&tree_members(first, excluded), root, me);
            for &c in &children {
                ep.notify(c, join::JOIN, &notice.encode())?;
            }
            match notice {
                Notice::SpawnFailed { why, .. } => return Err(Error::SpawnFailed(why)),
                Notice::Spawn { places, .. } => {
                    for (rank, place) in places {
                        ep.add_peer(rank, &place.name, place.host, place.board, place.process)?;
                        known += 1;
                    }
                }
                _ => {}
            }
            if known >= ranks.len() {
                break (from, children);
            }
        };
        self.subtree_knows(&children, first)?;
        ep.notify(parent, join::JOIN, &Notice::Known(first).encode())
    }

    /// Waits until each of `children` says its subtree knows the ranks
    /// from `first`.
    fn subtree_knows(&self, children: &[u32], first: u32) -> Result<()> {
        let ep = &self.endpoint;
        let op = "hear the job knows the new processes";
        (self.inbox).wait(ep, op, children, |_, n| {
            (*n == Notice::Known(first)).then_some(())
        })?;
        Ok(())
    }
}

/// The old processes of a spawn's tree: ranks below `first` but
/// `excluded`.
fn tree_members(first: u32, excluded: &[u32]) -> Vec<u32> {
    (0..first).filter(|r| !excluded.contains(r)).collect()
}

/// Bytes of a process's board (see [`crate::Ranks::board_name`]).
pub const BOARD_LEN: usize = 32 * 1024;

/// Environment variable naming this process's host instead of the
/// machine's identity; `{rank}` in it is replaced by the rank, so
/// `ONESIDED_HOST=node{rank}` makes every rank a host of its own (how the
/// multi-host paths are tested on one machine).
pub const HOST_ENV: &str = "ONESIDED_HOST";

/// This host's identity: [`machine_id`], or a hash of [`HOST_ENV`] with
/// `{rank}` replaced by `rank`. Ranks with the same identity can map each
/// other's shared memory (checked further by the users of that memory).
pub fn host_id(rank: u32) -> u64 {
    match std::env::var(HOST_ENV) {
        Ok(host) => identity("", &host.replace("{rank}", &rank.to_string())),
        Err(_) => machine_id(),
    }
}

/// This machine's identity, whatever [`HOST_ENV`] says: a hash of its boot
/// id and name. Ranks with the same one share its cores.
pub fn machine_id() -> u64 {
    identity(
        &std::fs::read_to_string("/proc/sys/kernel/random/boot_id").unwrap_or_default(),
        &std::fs::read_to_string("/proc/sys/kernel/hostname").unwrap_or_default(),
    )
}

/// The PMI connection when no [`Spawner`] holds it any more.
fn sole(pmi: Arc<Mutex<Pmi>>, op: &'static str) -> Result<Pmi> {
    let pmi = Arc::try_unwrap(pmi).map_err(|shared| Error::StillShared {
        op,
        handles: Arc::strong_count(&shared) - 1,
    })?;
    Ok(pmi.into_inner().unwrap_or_else(|p| p.into_inner()))
}

/// Makes waits stop spinning once the live processes on this machine
/// outnumber its CPUs (a job that grew; hosts that
/// [`HOST_ENV`] makes of its processes count together): a spinning wait
/// would take the core of the process it waits for. Never the other way:
/// a job that shrinks keeps the start's choice.
fn stop_spinning_when_crowded(ep: &Endpoint) {
    if ep.ranks().live_here() > ep.ranks().host_cpus() {
        ep.set_spin(std::time::Duration::ZERO);
    }
}

/// A spawned process's first job rank, the spawn's root and the places of
/// the job's ranks before it, from its preput keys; `None` for a process
/// spawned as a job of its own (without them).
fn joining(pmi: &mut Pmi) -> Result<Option<(u32, u32, Vec<Place>)>> {
    let Ok(text) = pmi.get(join::JOIN_KEY) else {
        return Ok(None);
    };
    let bad = || {
        Error::BadDescriptor(format!(
            "{}: {text:?} is not FIRST:COUNT:ROOT",
            join::JOIN_KEY
        ))
    };
    let mut fields = text.split(':').map(|f| f.parse::<u32>().map_err(|_| bad()));
    let mut field = || fields.next().unwrap_or_else(|| Err(bad()));
    let (first, count, root) = (field()?, field()?, field()?);
    if count != pmi.size()
        || root >= first
        || first
            .checked_add(count)
            .is_none_or(|e| e > crate::MAX_RANKS)
    {
        return Err(bad());
    }
    let mut places = Vec::with_capacity(first as usize);
    for r in 0..first {
        let value = pmi.get(&join::rank_key(r))?;
        places.push(Place::parse(&value).unwrap_or(Place {
            name: Vec::new(),
            host: u64::MAX,
            board: String::new(),
            process: None,
        }));
    }
    Ok(Some((first, root, places)))
}

/// What a rank publishes of its place (`HOST:MACHINE:PROCESS:BOARD:CPUS`,
/// the ids in hex): its host, its machine, its process
/// ([`Process::encode`], empty when unknown), its board's name and the
/// CPUs it may run on.
#[derive(Debug, PartialEq, Eq)]
struct Placement<'a> {
    host: u64,
    machine: u64,
    process: Option<Process>,
    board: &'a str,
    cpus: &'a str,
}

impl Placement<'_> {
    /// Parses a published placement; `None` when malformed.
    fn parse(text: &str) -> Option<Placement<'_>> {
        let (host, rest) = text.split_once(':')?;
        let (machine, rest) = rest.split_once(':')?;
        let (process, rest) = rest.split_once(':')?;
        let (board, cpus) = rest.rsplit_once(':')?;
        Some(Placement {
            host: u64::from_str_radix(host, 16).ok()?,
            machine: u64::from_str_radix(machine, 16).ok()?,
            process: match process {
                "" => None,
                text => Some(Process::parse(text)?),
            },
            board,
            cpus,
        })
    }
}

/// A rank's start-up record, `HEXNAME:PLACEMENT` (see [`Placement`]).
struct Record<'a> {
    name: Vec<u8>,
    place: Placement<'a>,
}

impl Record<'_> {
    /// Parses `rank`'s record.
    ///
    /// # Errors
    /// [`Error::BadDescriptor`] naming the rank when it is malformed.
    fn parse(rank: u32, text: &str) -> Result<Record<'_>> {
        let bad = || {
            Error::BadDescriptor(format!(
                "start-up record of rank {rank} is malformed: {text:?}"
            ))
        };
        let (name, place) = text.split_once(':').ok_or_else(bad)?;
        Ok(Record {
            name: hex_decode(name).filter(|n| !n.is_empty()).ok_or_else(bad)?,
            place: Placement::parse(place).ok_or_else(bad)?,
        })
    }
}

/// A hash of a boot id and a host name.
fn identity(boot: &str, name: &str) -> u64 {
    let mut hash: u64 = 0xcbf2_9ce4_8422_2325;
    for b in boot.trim().bytes().chain([0]).chain(name.trim().bytes()) {
        hash = (hash ^ u64::from(b)).wrapping_mul(0x0100_0000_01b3);
    }
    hash
}

/// The CPUs this process may run on, as the kernel lists them
/// (`Cpus_allowed_list` in `/proc/self/status`, such as `0-3,8`); empty
/// when unknown.
fn allowed_cpus() -> String {
    let status = std::fs::read_to_string("/proc/self/status").unwrap_or_default();
    (status.lines())
        .find_map(|line| line.strip_prefix("Cpus_allowed_list:"))
        .map_or_else(String::new, |list| list.trim().to_string())
}

/// The CPUs the ranks on a host may run on together: the union of their
/// kernel CPU lists `lists` (ranks a launcher binds to a core each, as
/// Slurm or `mpiexec -bind-to core` do, have one each); `None` where a list
/// is missing or malformed.
pub fn cpus_together(lists: &[&str]) -> Option<usize> {
    let mut union = std::collections::BTreeSet::new();
    for list in lists {
        union.extend(cpu_list(list)?);
    }
    Some(union.len())
}

/// The CPUs this host has online (`/sys/devices/system/cpu/online`, the
/// same for every process on it, whatever its affinity; 1 when unknown).
pub fn online_cpus() -> usize {
    std::fs::read_to_string("/sys/devices/system/cpu/online")
        .ok()
        .and_then(|list| cpu_list(&list))
        .map_or(1, |cpus| cpus.len())
}

/// The CPUs of a kernel CPU list such as `0-3,8,10-11`; `None` when
/// malformed (or naming a CPU above 65535).
pub fn cpu_list(list: &str) -> Option<Vec<u32>> {
    let mut cpus = Vec::new();
    for range in list.trim().split(',') {
        let (first, last) = range.split_once('-').unwrap_or((range, range));
        let (first, last): (u32, u32) = (first.parse().ok()?, last.parse().ok()?);
        if first > last || last > u32::from(u16::MAX) {
            return None;
        }
        cpus.extend(first..=last);
    }
    Some(cpus)
}

/// Starts a thread that reads `dead RANK` lines from the launcher's event
/// pipe (if there is one) and marks those ranks dead; whether there is.
fn watch_failure_notices(shared: Weak<EndpointState>) -> Result<bool> {
    let Ok(text) = std::env::var(EVENT_FD_ENV) else {
        return Ok(false);
    };
    let bad = |why| Error::BadEnv {
        name: EVENT_FD_ENV,
        value: text.as_str().into(),
        why,
    };
    let raw: i32 = text
        .trim()
        .parse()
        .map_err(|_| bad("not a file descriptor number"))?;
    // SAFETY: F_GETFD only queries the descriptor; -1 means it is not open.
    if raw < 0 || unsafe { libc::fcntl(raw, libc::F_GETFD) } == -1 {
        return Err(bad("not an open descriptor"));
    }
    static TAKEN: AtomicBool = AtomicBool::new(false);
    if TAKEN.swap(true, Ordering::SeqCst) {
        // A second World in this process: the first one watches already.
        return Ok(true);
    }
    // SAFETY: the launcher hands this descriptor to this process alone, and
    // TAKEN makes this its only owner in the process.
    let fd = unsafe { OwnedFd::from_raw_fd(raw) };
    // SAFETY: F_SETFD on an owned, open descriptor.
    unsafe { libc::fcntl(raw, libc::F_SETFD, libc::FD_CLOEXEC) };
    std::thread::Builder::new()
        .name("onesided-failures".into())
        .spawn(move || {
            let reader = BufReader::new(std::fs::File::from(fd));
            for line in reader.lines() {
                let Ok(line) = line else { return };
                let Some(rank) = parse_notice(&line) else {
                    continue;
                };
                match shared.upgrade() {
                    Some(shared) => shared.mark_dead(rank),
                    None => return,
                }
            }
        })
        .map_err(|e| Error::io("starting the failure-notice thread", e))?;
    Ok(true)
}

/// Parses one failure notice, `dead RANK`.
pub(crate) fn parse_notice(line: &str) -> Option<u32> {
    line.trim().strip_prefix("dead ")?.trim().parse().ok()
}

/// Lower-case hex of `bytes`.
pub(crate) fn hex_encode(bytes: &[u8]) -> String {
    bytes.iter().map(|b| format!("{b:02x}")).collect()
}

/// The bytes of lower- or upper-case hex `text`, or `None`.
pub(crate) fn hex_decode(text: &str) -> Option<Vec<u8>> {
    if !text.len().is_multiple_of(2) {
        return None;
    }
    (0..text.len())
        .step_by(2)
        .map(|i| u8::from_str_radix(text.get(i..i + 2)?, 16).ok())
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn placements_parse_and_malformed_ones_are_refused() {
        assert_eq!(
            Placement::parse("00000000000000ff:1:1.2.3.4:/onesided-7-1:0-1"),
            Some(Placement {
                host: 255,
                machine: 1,
                process: Some(Process {
                    machine: 1,
                    namespace: 2,
                    pid: 3,
                    start: 4
                }),
                board: "/onesided-7-1",
                cpus: "0-1"
            })
        );
        assert_eq!(Placement::parse("1:2:::").map(|p| p.board), Some(""));
        assert_eq!(Placement::parse("1:2:::").map(|p| p.process), Some(None));
        for bad in [
            "",
            "1",
            "1:2",
            "x:2::b:0",
            "1:y::b:0",
            "1:2::b",
            "1:2:3:b:0",
        ] {
            assert_eq!(Placement::parse(bad), None, "{bad:?}");
        }
    }

    #[test]
    fn cpu_lists_parse_and_bound_ranks_per_core() {
        assert_eq!(cpu_list("0-1\n"), Some(vec![0, 1]));
        assert_eq!(cpu_list("0-3,8,10-11").map(|c| c.len()), Some(7));
        for bad in ["", "x", "3-1", "0-", "1,,2", "0-70000"] {
            assert_eq!(cpu_list(bad), None, "{bad:?}");
        }
        // Unbound, bound a core each, confined together to one core.
        assert_eq!(cpus_together(&["0-1", "0-1"]), Some(2));
        assert_eq!(cpus_together(&["0", "1"]), Some(2));
        assert_eq!(cpus_together(&["0", "0"]), Some(1));
        // A list unknown: no answer.
        assert_eq!(cpus_together(&["", "1"]), None);
        assert_eq!(cpus_together(&["0", "x"]), None);
        assert!(online_cpus() >= 1);
    }

    #[test]
    fn hex_round_trips_and_rejects_garbage() {
        let bytes = [0u8, 1, 0xab, 0xff, b'f', b's'];
        assert_eq!(hex_encode(&bytes), "0001abff6673");
        assert_eq!(hex_decode("0001ABff6673").unwrap(), bytes);
        assert_eq!(hex_decode("abc"), None);
        assert_eq!(hex_decode("zz"), None);
        assert_eq!(hex_decode("é0"), None);
        assert_eq!(hex_decode("").unwrap(), Vec::<u8>::new());
    }

    #[test]
    fn parses_failure_notices() {
        assert_eq!(parse_notice("dead 3\n"), Some(3));
        assert_eq!(parse_notice("dead x"), None);
        assert_eq!(parse_notice("alive 3"), None);
    }
}
