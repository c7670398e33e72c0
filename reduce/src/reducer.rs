//! The reduction's driver on one process: the [`Reducer`] (its two
//! control services, its executor, monitor and writer threads), which
//! feeds the pure [`Master`] and [`Worker`] and does their I/O.
//!
//! - Data: one dynamic window per reducer, over the group, made once
//!   (the persistent exposure: no window per call). Each line (a partial
//!   result) is a registered region attached to it; its displacement
//!   names it in messages. A fetcher reads the holder's line through the
//!   window without a lock message (`NOCHECK`: a line is never written
//!   while it may be read); the holder writes its lines in place.
//! - Control: notices of the endpoint's control plane. The master's
//!   service runs the scheduler inside the progress engine (the
//!   background progress thread on a master that computes) and sends
//!   tasks from there ([`onesided_fabric::control::Outbox`]). The
//!   workers' service answers pings itself and queues the rest for the
//!   executor thread, which fetches, combines and reloads; the writer
//!   thread, at the lowest priority, syncs files, writes replicas and
//!   removes an ended reduction's files.
//! - Detection ([`crate::ring`]): the live members form a ring; each
//!   monitor thread pings its successor each `ping` and reports its
//!   predecessor when it has been silent for `dead_after` (or its process
//!   on this host ended) to the master, which counts it failed and tells
//!   the workers; the master's watcher tells the workers itself. The
//!   master also counts failed whom the launcher reports dead (`osrun
//!   --ft`). Per process and period: one ping sent, one received.

use std::collections::HashMap;
use std::sync::{Arc, Condvar, Mutex, MutexGuard};
use std::task::Waker;
use std::thread::JoinHandle;
use std::time::{Duration, Instant};

use onesided_fabric::{control::Outbox, pages, Access, Endpoint, MemoryRegion, World};
use onesided_rma::{Assert, Group, LockKind, Rma, Window};

use crate::buffer::{Aligned, Buffer, RootCopy};
use crate::lines::Lines;
use crate::master::Master;
use crate::message::{Key, Message};
use crate::replica::Store;
use crate::ring;
use crate::schedule::{replica_holder, Failure};
use crate::worker::{Combine, Next, Original, Outcome, TaskLine, Work, Worker, Write, ROOT_LINE};
use crate::{Error, ReduceFuture, ReducerBody};

/// The master's control service.
const MASTER_SERVICE: u16 = 0x0201;
/// The workers' control service.
const WORKER_SERVICE: u16 = 0x0202;
/// Tags the group of the lines' dynamic window.
const LINE_TAG: u64 = 0x7265_6475_6365;
/// Silence at the start that does not count (processes create their
/// reducers at their own pace).
const START_GRACE: Duration = Duration::from_secs(2);

/// How failures are detected (and, for tests of the recovery, where
/// this process fails).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Config {
    /// How often each process pings its successor on the ring of live
    /// members (and expects its predecessor's ping).
    pub ping: Duration,
    /// Silence after which a process counts as failed.
    pub dead_after: Duration,
    /// A failure to inject, for tests of the recovery (feature
    /// `fault-injection` only): at this point of a reduction, this
    /// process calls the function, which is to kill it (or stop it).
    #[cfg(feature = "fault-injection")]
    pub inject: Option<(Point, fn())>,
}

/// Where a failure is injected (`Config::inject`, feature
/// `fault-injection`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Point {
    /// Once the call returned, before the master has the data: it is
    /// read back from this process's file.
    Returned,
    /// Once this process's data is contributed: the master may give it a
    /// task (the spec's failure 1) or another worker fetch from it
    /// (failure 3).
    Contributed,
    /// On receiving a task, before fetching (failure 2).
    Task,
    /// In a task, after fetching and before combining (failure 2).
    Fetched,
}

impl Default for Config {
    /// A ping every 100 ms, failed after 1 s of silence: a live process
    /// starved of its core goes unheard for far longer than a ping period
    /// (figures in docs/measurements.md, "reduce"), and a silence counted
    /// as a failure fails running reductions. A process of this host that
    /// has ended counts as failed at the next ping, within 100 ms, with no
    /// launcher ([`onesided_fabric::Ranks::has_ended`]); `osrun --ft`
    /// notices any death at once. The silence catches hung processes and
    /// other hosts'; the environment sets shorter times for quiet hosts.
    fn default() -> Config {
        Config {
            ping: Duration::from_millis(100),
            dead_after: Duration::from_secs(1),
            #[cfg(feature = "fault-injection")]
            inject: None,
        }
    }
}

impl Config {
    /// The failure to inject ([`Config::inject`]); none without the
    /// feature `fault-injection`.
    fn injects(&self) -> Option<(Point, fn())> {
        #[cfg(feature = "fault-injection")]
        return self.inject;
        #[cfg(not(feature = "fault-injection"))]
        None
    }

    /// The defaults, overridden by `ONESIDED_REDUCE_PING` and
    /// `ONESIDED_REDUCE_DEAD_AFTER` (seconds, as `0.02`).
    ///
    /// # Errors
    /// [`Error::Usage`] naming the variable and its value when it is not
    /// a positive number of seconds, or when the silence is not longer
    /// than the ping period.
    pub fn from_env() -> Result<Config, Error> {
        let mut config = Config::default();
        for (name, field) in [
            ("ONESIDED_REDUCE_PING", &mut config.ping),
            ("ONESIDED_REDUCE_DEAD_AFTER", &mut config.dead_after),
        ] {
            if let Ok(text) = std::env::var(name) {
                *field = onesided_fabric::progress::timeout_from_secs(&text).ok_or_else(|| {
                    Error::Usage(format!("{name}={text:?}: not a positive number of seconds"))
                })?;
            }
        }
        if config.dead_after <= config.ping {
            return Err(Error::Usage(format!(
                "ONESIDED_REDUCE_DEAD_AFTER ({:?}) must be longer than ONESIDED_REDUCE_PING ({:?})",
                config.dead_after, config.ping
            )));
        }
        Ok(config)
    }
}

/// The reduction engine of one process over a group: rank 0 of the group
/// is the master (and a worker). One per endpoint at a time (its control
/// services are the endpoint's). Every member creates it.
pub struct Reducer {
    shared: Arc<ReducerState>,
    threads: Vec<JoinHandle<()>>,
}

/// What the handlers, the threads and the futures share.
pub(crate) struct ReducerState {
    ep: Endpoint,
    group: Group,
    pub(crate) me: u32,
    /// The host of each group rank.
    hosts: Vec<u64>,
    store: Store,
    config: Config,
    /// The worker's protocol state.
    local: Mutex<Worker>,
    /// Wakes the executor (work) and the futures (outcomes).
    wake: Condvar,
    /// The tasks awaiting a future's outcome ([`ReducerState::wake_all`]).
    pub(crate) wakers: Mutex<Vec<Waker>>,
    /// The master's state (group rank 0 only).
    master: Option<Mutex<Watch>>,
    /// Stops the monitor.
    stop: (Mutex<bool>, Condvar),
}

/// The master's state, when it last heard from each worker, and its
/// traffic.
struct Watch {
    master: Master,
    load: Load,
}

/// The control traffic through the master since its reducer started
/// (pings and their answers included): the study's master load.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct Load {
    /// Messages the master received.
    pub messages_in: u64,
    /// Bytes it received.
    pub bytes_in: u64,
    /// Messages it sent.
    pub messages_out: u64,
    /// Bytes it sent.
    pub bytes_out: u64,
}

impl Load {
    fn sent(&mut self, bytes: usize) {
        self.messages_out += 1;
        self.bytes_out += bytes as u64;
    }
}

impl Reducer {
    /// The reducer of this process over `group` (which it belongs to):
    /// serves the control services, starts its executor and monitor
    /// threads, and has the endpoint check that a peer's process runs
    /// before posting to it ([`onesided_fabric::Ranks::watch_processes`]:
    /// the reduction outlives its processes). No message.
    ///
    /// # Errors
    /// [`Error::Usage`] when this process is not in `group`;
    /// [`Error::Fabric`] (`ServiceTaken`) when a reducer already runs on
    /// this endpoint; [`Error::Replica`] when the replica directory
    /// cannot be made.
    pub fn new(world: &World, rma: &Rma, group: &Group, config: Config) -> Result<Reducer, Error> {
        let ep = rma.endpoint().clone();
        let me = group
            .group_rank(ep.rank())
            .ok_or_else(|| Error::Usage(format!("rank {} is not in the group", ep.rank())))?;
        let store = Store::new(&world.launch().kvsname)?;
        ep.ranks().watch_processes();
        let size = group.size();
        let hosts: Vec<u64> = (group.members().iter())
            .map(|&r| ep.ranks().host_of(r).unwrap_or(u64::from(r)))
            .collect();
        let start = Instant::now() + START_GRACE;
        let shared = Arc::new(ReducerState {
            ep: ep.clone(),
            group: group.clone(),
            me,
            hosts: hosts.clone(),
            store,
            config,
            local: Mutex::new(Worker::new(me, size, start)),
            wake: Condvar::new(),
            wakers: Mutex::new(Vec::new()),
            master: (me == 0).then(|| {
                Mutex::new(Watch {
                    master: Master::new(hosts),
                    load: Load::default(),
                })
            }),
            stop: (Mutex::new(false), Condvar::new()),
        });
        let worker = Arc::clone(&shared);
        ep.serve(WORKER_SERVICE, move |from, body, _| {
            worker.on_worker_message(from, body);
            Vec::new()
        })?;
        if me == 0 {
            let master = Arc::clone(&shared);
            let served = ep.serve(MASTER_SERVICE, move |from, body, outbox| {
                master.on_master_message(from, body, outbox);
                Vec::new()
            });
            if let Err(e) = served {
                ep.unserve(WORKER_SERVICE);
                return Err(e.into());
            }
        }
        let thread = |name: &str, body: Box<dyn FnOnce() + Send>| {
            std::thread::Builder::new()
                .name(name.into())
                .spawn(body)
                .map_err(|e| Error::Usage(format!("starting thread {name}: {e}")))
        };
        let mut reducer = Reducer {
            shared: Arc::clone(&shared),
            threads: Vec::new(),
        };
        // On an error, dropping `reducer` stops what started and serves no
        // more.
        let window = rma.create_dynamic(&group.tagged(LINE_TAG))?;
        let s = Arc::clone(&shared);
        (reducer.threads).push(thread(
            "onesided-reduce",
            Box::new(move || s.execute(window)),
        )?);
        let s = Arc::clone(&shared);
        (reducer.threads).push(thread(
            "onesided-reduce-monitor",
            Box::new(move || s.monitor()),
        )?);
        let s = Arc::clone(&shared);
        (reducer.threads).push(thread(
            "onesided-reduce-writer",
            Box::new(move || s.write()),
        )?);
        Ok(reducer)
    }

    /// This process's rank in the group.
    pub fn rank(&self) -> u32 {
        self.shared.me
    }

    /// The group's size.
    pub fn size(&self) -> u32 {
        self.shared.group.size()
    }

    /// The master's control traffic so far (on the master, rank 0).
    pub fn master_load(&self) -> Option<Load> {
        (self.shared.master.as_ref()).map(|w| w.lock().unwrap_or_else(|p| p.into_inner()).load)
    }

    /// Starts reduction `id` of `data` (this process's original data, the
    /// same length on every member) by `body`, its result to go to group
    /// rank `root`. Every member calls it for each use of an id; an id is
    /// free again once its reduction ended here. It returns once the data
    /// is copied and, past the root, written to a file on this host (so
    /// that this process's failure from then on is recovered; the
    /// reduction starts while the file is written); the rest runs in the
    /// background.
    ///
    /// # Errors
    /// [`Error::Usage`] for a root outside the group or an id still in
    /// flight here (nothing starts); [`Error::Replica`] when the data
    /// cannot be stored, [`Error::Fabric`] when it cannot be exposed
    /// (the reduction then fails everywhere, naming this rank).
    pub fn reduce<B: ReducerBody>(
        &self,
        root: u32,
        data: &[B::Element],
        body: B,
        id: u64,
    ) -> Result<ReduceFuture<B::Element>, Error> {
        let s = &self.shared;
        if root >= s.group.size() {
            return Err(Error::Usage(format!(
                "root {root} is outside the group of {}",
                s.group.size()
            )));
        }
        if align_of::<B::Element>() > align_of::<u128>() {
            return Err(Error::Usage(format!(
                "elements aligned to {} bytes (at most 16)",
                align_of::<B::Element>()
            )));
        }
        let combine: Combine = Arc::new(move |into: &mut [u8], from: &[u8]| {
            body.combine(bytemuck::cast_slice_mut(into), bytemuck::cast_slice(from))
        });
        // The round counts from the reduction's start here (else it
        // would look ended meanwhile, see `Worker::ended`).
        let key = s.lock().next_key(id)?;
        let bytes: &[u8] = bytemuck::cast_slice(data);
        let result = Arc::new(Mutex::new(None));
        let original = match s.me == root {
            // The root's data is never read by others nor reloaded (its
            // death fails the reduction): no line, no file.
            true => Ok(Original::Root(Box::new(RootCopy {
                data: pages::to_vec(data),
                result: Arc::clone(&result),
            }))),
            false => s.expose(bytes, s.holder().is_some()),
        };
        let original = match original {
            Ok(original) => original,
            Err(e) => {
                s.lock().skip(key);
                s.send(0, MASTER_SERVICE, &Message::Withdrawn { key, root });
                return Err(e);
            }
        };
        s.lock().begin(key, root, bytes.len(), combine, original)?;
        s.wake_all();
        // The file is written while the reduction starts (the line may be
        // fetched meanwhile); it appears whole or not at all. A reduction
        // that ended meanwhile needs none: every process removes an ended
        // reduction's files on its host, so the file may vanish under the
        // write (NotFound) before this one knows it ended.
        if s.me != root {
            let written = match s.store.write(s.me, s.me, key, bytes) {
                Err(Error::Replica { source, .. })
                    if source.kind() == std::io::ErrorKind::NotFound =>
                {
                    Ok(())
                }
                other => other,
            };
            let mut local = s.lock();
            match (local.ended(key), written) {
                (true, _) => {
                    drop(local);
                    s.store.remove(s.me, s.me, key);
                }
                // Not synced to the disk: it serves processes of this
                // host, which read it from the page cache; the replica on
                // another host is what outlives the host.
                (false, Ok(())) => drop(local),
                (false, Err(e)) => {
                    local.abandon(key);
                    drop(local);
                    s.send(0, MASTER_SERVICE, &Message::Withdrawn { key, root });
                    return Err(e);
                }
            }
            // The data outlives this host before the call returns: its
            // replica on another host is durable (or there is none).
            s.wait(|local| !local.replica_waits(key));
            let refused = s.lock().returned(key);
            s.wake_all();
            if let Some(holder) = refused {
                s.send(0, MASTER_SERVICE, &Message::Withdrawn { key, root });
                return Err(Error::Usage(format!(
                    "rank {holder} could not store this rank's replica"
                )));
            }
        }
        Ok(ReduceFuture::new(Arc::clone(s), key, result))
    }
}

impl Drop for Reducer {
    /// Stops the threads and the services; reductions still running here
    /// end without this process.
    fn drop(&mut self) {
        let s = &self.shared;
        s.lock().close();
        s.wake_all();
        *s.stop.0.lock().unwrap_or_else(|p| p.into_inner()) = true;
        s.stop.1.notify_all();
        for thread in self.threads.drain(..) {
            let _ = thread.join();
        }
        s.ep.unserve(WORKER_SERVICE);
        if s.me == 0 {
            s.ep.unserve(MASTER_SERVICE);
        }
        s.store.close();
    }
}

impl ReducerState {
    /// Makes progress until `done` holds: the control messages a
    /// reduction waits for are handled as they come, not when the
    /// background thread next looks (it stays away from an application
    /// that makes progress, for 10 ms at a time). Its pauses sleep from
    /// the start: this process's executor and writer need the cores.
    pub(crate) fn wait(&self, done: impl Fn(&Worker) -> bool) {
        let mut backoff = self.ep.backoff().quiet();
        while !done(&self.lock()) {
            if self.ep.progress() > 0 {
                backoff.reset();
            }
            backoff.pause();
        }
    }

    /// A working copy of `len` bytes: pooled, else made (outside the
    /// lock: faulting in megabytes takes milliseconds).
    fn copy(&self, len: usize) -> Aligned {
        let pooled = self.lock().pool.copy(len);
        pooled.unwrap_or_else(|| Aligned::zeroed(len))
    }

    pub(crate) fn lock(&self) -> MutexGuard<'_, Worker> {
        self.local.lock().unwrap_or_else(|p| p.into_inner())
    }

    /// Wakes the threads waiting on [`ReducerState::wake`] and the tasks
    /// awaiting a future, after a change of [`Local`].
    fn wake_all(&self) {
        self.wake.notify_all();
        let wakers = std::mem::take(&mut *self.wakers.lock().unwrap_or_else(|p| p.into_inner()));
        wakers.into_iter().for_each(Waker::wake);
    }

    /// Group rank `to`'s endpoint rank.
    fn job(&self, to: u32) -> u32 {
        self.group
            .members()
            .get(to as usize)
            .copied()
            .unwrap_or(u32::MAX)
    }

    /// Sends `m` to group rank `to`'s `service`; a dead peer is the
    /// detector's business.
    fn send(&self, to: u32, service: u16, m: &Message) {
        let _ = self.ep.notify(self.job(to), service, &m.encode());
    }

    /// The workers' service (in the progress engine): every message says
    /// its sender is alive (pings say nothing else); deaths move the ring
    /// at once; the rest goes to the executor.
    fn on_worker_message(&self, from: u32, body: &[u8]) {
        let Some(from) = self.group.group_rank(from) else {
            return;
        };
        let Ok(message) = Message::decode(body) else {
            return;
        };
        let changed = self.lock().receive(from, message, Instant::now());
        if changed {
            self.wake_all();
        }
    }

    /// The master's service (in the progress engine): the scheduler.
    fn on_master_message(&self, from: u32, body: &[u8], outbox: &mut Outbox) {
        let (Some(from), Some(watch)) = (self.group.group_rank(from), &self.master) else {
            return;
        };
        let Ok(message) = Message::decode(body) else {
            return;
        };
        let suspect = match message {
            Message::Suspect { rank } => Some(rank),
            _ => None,
        };
        let mut watch = watch.lock().unwrap_or_else(|p| p.into_inner());
        watch.load.messages_in += 1;
        watch.load.bytes_in += body.len() as u64;
        let out = match suspect {
            Some(rank) => watch.master.suspected(rank),
            None => watch.master.on(from, message),
        };
        for (to, m) in out {
            let bytes = m.encode();
            watch.load.sent(bytes.len());
            let _ = outbox.notify(self.job(to), WORKER_SERVICE, &bytes);
        }
        drop(watch);
        let mut local = self.lock();
        local.ring.heard(from, Instant::now());
        if let Some(rank) = suspect {
            local.ring.died(rank, Instant::now());
        }
    }

    /// The monitor thread: pings the ring successor each period, watches
    /// the predecessor ([`crate::ring`]); the master also counts failed
    /// whom the launcher reports dead.
    fn monitor(self: Arc<ReducerState>) {
        let period = self.config.ping;
        let mut last = Instant::now();
        loop {
            {
                let stop = self.stop.0.lock().unwrap_or_else(|p| p.into_inner());
                let (stop, _) = (self.stop.1)
                    .wait_timeout_while(stop, period, |s| !*s)
                    .unwrap_or_else(|p| p.into_inner());
                if *stop {
                    return;
                }
            }
            let now = Instant::now();
            // A late tick (no core) does not count the silence meanwhile.
            let late = (now.saturating_duration_since(last) > 2 * period).then_some(period);
            last = now;
            let (pred, succ) = {
                let local = self.lock();
                (local.ring.predecessor(), local.ring.successor())
            };
            // Asked before the lock: the endpoint's handlers take it.
            let ended = pred.is_some_and(|p| self.ep.ranks().has_ended(self.job(p)));
            let watch = (self.lock().ring).tick(now, late, self.config.dead_after, ended);
            if let Some(to) = succ {
                self.count_sent(Message::Ping.encode().len());
                self.send(to, WORKER_SERVICE, &Message::Ping);
            }
            if let ring::Watch::Lost(rank) = watch {
                self.lost(rank);
            }
            if self.master.is_some() && self.ep.ranks().any_dead() {
                let reported: Vec<u32> = (self.ep.ranks().dead_ranks().into_iter())
                    .filter_map(|r| self.group.group_rank(r))
                    .filter(|&r| r != 0 && !self.lock().ring.is_dead(r))
                    .collect();
                for rank in reported {
                    self.lost(rank);
                }
            }
        }
    }

    /// Group rank `rank` is lost: dead on the ring here; the master counts
    /// it failed and tells the workers; a worker reports it to the master
    /// (or, when it is the master, tells the workers itself).
    fn lost(&self, rank: u32) {
        let live = self.lock().lost(rank, Instant::now());
        self.wake_all();
        if let Some(watch) = &self.master {
            let out = (watch.lock().unwrap_or_else(|p| p.into_inner()).master).suspected(rank);
            for (to, m) in out {
                self.count_sent(m.encode().len());
                self.send(to, WORKER_SERVICE, &m);
            }
        } else if rank == 0 {
            for to in live {
                self.send(to, WORKER_SERVICE, &Message::Dead { rank: 0 });
            }
        } else {
            self.send(0, MASTER_SERVICE, &Message::Suspect { rank });
        }
    }

    /// Counts `bytes` sent by the master (its load).
    fn count_sent(&self, bytes: usize) {
        if let Some(watch) = &self.master {
            watch
                .lock()
                .unwrap_or_else(|p| p.into_inner())
                .load
                .sent(bytes);
        }
    }

    /// The executor thread: works until the reducer closes. Replicas
    /// wait for the rest: they are off the reduction's path.
    fn execute(self: Arc<ReducerState>, window: Window) {
        let mut lines = Lines {
            window,
            held: HashMap::new(),
        };
        loop {
            let work = {
                let mut local = self.lock();
                loop {
                    match local.next_work() {
                        Next::Do(work) => break work,
                        Next::Wait => {
                            local = self.wake.wait(local).unwrap_or_else(|p| p.into_inner())
                        }
                        Next::Close => {
                            drop(local);
                            let pooled = lines.release_all();
                            self.lock().pool.regions.extend(pooled);
                            let _ = lines.window.free();
                            return;
                        }
                    }
                }
            };
            match work {
                Work::Start(key) => self.start(&mut lines, key),
                Work::Message(from, m) => self.handle(&mut lines, from, m),
            }
        }
    }

    /// The writer thread, at the lowest priority (replicas must not take
    /// the cores from the reductions they back): writes, syncs and
    /// removes files until the reducer closes; then only removes (what
    /// it had not written is of no use).
    fn write(self: Arc<ReducerState>) {
        onesided_fabric::priority::lowest();
        loop {
            let job = {
                let mut local = self.lock();
                loop {
                    match local.next_write() {
                        Next::Do(job) => break job,
                        Next::Wait => {
                            local = self.wake.wait(local).unwrap_or_else(|p| p.into_inner())
                        }
                        Next::Close => return,
                    }
                }
            };
            match job {
                // A reduction that ended meanwhile needs its file no more.
                Write::Keep { key, owner, copy } => self.keep(key, owner, copy),
                Write::Remove(key) => self.store.remove_all(key),
            }
        }
    }

    /// Whether work for reduction `key` is of no use
    /// ([`Worker::needless`]).
    fn needless(&self, key: Key) -> bool {
        self.lock().needless(key)
    }

    /// Writes and syncs `owner`'s replica of `key`, tells the master and
    /// the owner; a replica of a reduction that ended meanwhile is not
    /// written, or goes at once.
    fn keep(&self, key: Key, owner: u32, copy: Aligned) {
        let kept = match self.needless(key) {
            true => None,
            false => Some(
                (self.store.write(self.me, owner, key, copy.bytes()))
                    .and_then(|()| self.store.sync(self.me, owner, key)),
            ),
        };
        let ended = {
            let mut local = self.lock();
            local.pool.put_copy(Box::new(copy));
            local.needless(key)
        };
        // A file removed under the write: another process of this host
        // saw the reduction end (and removed its files).
        let removed = matches!(&kept, Some(Err(Error::Replica { source, .. }))
            if source.kind() == std::io::ErrorKind::NotFound);
        let Some(kept) = kept.filter(|_| !ended && !removed) else {
            return self.store.remove(self.me, owner, key);
        };
        if kept.is_ok() {
            self.send(0, MASTER_SERVICE, &Message::Replicated { key, owner });
        }
        let m = Message::Stored {
            key,
            ok: kept.is_ok(),
        };
        self.send(owner, WORKER_SERVICE, &m);
    }

    /// This process's data of `key` in a line, and in a second region
    /// when it is to be `replicated`.
    fn expose(&self, bytes: &[u8], replicated: bool) -> Result<Original, Error> {
        let line = self.filled(bytes)?;
        let source = match replicated {
            true => Some(self.filled(bytes)?),
            false => None,
        };
        Ok(Original::Line(line, source))
    }

    /// A region (pooled or new) holding `bytes`.
    fn filled(&self, bytes: &[u8]) -> Result<Arc<MemoryRegion>, Error> {
        let pooled = self.lock().pool.region(bytes.len());
        let region = match pooled {
            Some(region) => region,
            None => Arc::new(self.ep.register(bytes.len().max(1), Access::REMOTE_READ)?),
        };
        if let Err(e) = region.write_bytes(0, bytes) {
            let evicted = self.lock().pool.put_region(bytes.len(), region);
            drop(evicted);
            return Err(e.into());
        }
        Ok(region)
    }

    /// Where this process's replica goes now ([`replica_holder`]).
    fn holder(&self) -> Option<u32> {
        let dead = self.lock().dead().to_vec();
        replica_holder(self.me, &self.hosts, |r| {
            dead.contains(&r) || self.ep.ranks().is_dead(self.job(r))
        })
    }

    /// Exposes this process's line of `key`, contributes it, and has its
    /// replica made.
    fn start(&self, lines: &mut Lines, key: Key) {
        let taken = self.lock().take_original(key);
        let Some((root, len, original)) = taken else {
            return;
        };
        let (disp, source) = match original {
            Original::Root(copy) => {
                self.lock().put_line(key, ROOT_LINE, copy);
                (ROOT_LINE, None)
            }
            // Attached outside the lock: the endpoint's handlers take it.
            Original::Line(line, source) => {
                let attached = lines.attach(key, len, line).and_then(|disp| match source {
                    Some(source) => Ok((disp, Some(lines.attach(key, len, source)?))),
                    None => Ok((disp, None)),
                });
                match attached {
                    Ok(at) => at,
                    Err(evicted) => {
                        drop(evicted);
                        self.send(0, MASTER_SERVICE, &Message::Withdrawn { key, root });
                        return;
                    }
                }
            }
        };
        self.lock().exposed(key, disp, source);
        if disp != ROOT_LINE {
            self.ask_replica(key, None);
        }
        if matches!(self.config.injects(), Some((Point::Returned, _))) {
            // The call returns once its file and replica are written,
            // maybe after this.
            let mut local = self.lock();
            while local.awaits_return(key) {
                local = self.wake.wait(local).unwrap_or_else(|p| p.into_inner());
            }
        }
        self.injected(Point::Returned);
        self.contribute(key, root, disp);
    }

    /// Asks `holder` (by default [`ReducerState::holder`]) to keep this
    /// process's replica of `key`, read from the copy of its original.
    fn ask_replica(&self, key: Key, holder: Option<u32>) {
        let holder = holder.or_else(|| self.holder());
        let asked = self.lock().ask_replica(key, holder);
        match asked {
            Some((holder, m)) => self.send(holder, WORKER_SERVICE, &m),
            None => self.wake_all(),
        }
    }

    /// Rank `rank` failed: replicas asked of it and not durable yet are
    /// asked of the next.
    fn dead(&self, rank: u32) {
        let waiting = self.lock().failed(rank);
        for key in waiting {
            self.ask_replica(key, None);
        }
    }

    fn contribute(&self, key: Key, root: u32, disp: u64) {
        self.send(0, MASTER_SERVICE, &Message::Contributed { key, root, disp });
        self.injected(Point::Contributed);
    }

    /// Fails here if told to (`Config::inject`).
    fn injected(&self, at: Point) {
        if let Some((point, then)) = self.config.injects() {
            if point == at {
                then();
            }
        }
    }

    /// Reads `into.len()` bytes of group rank `holder`'s line `disp`.
    fn fetch(
        &self,
        lines: &Lines,
        key: Key,
        holder: u32,
        disp: u64,
        into: &mut [u8],
    ) -> Result<(), Error> {
        if holder == self.me {
            if let Some((_, region)) = lines.held.get(&(key, disp)) {
                return Ok(region.read_bytes(0, into)?);
            }
            let local = self.lock();
            return match local.line(key, disp) {
                Some(copy) => {
                    into.copy_from_slice(copy);
                    Ok(())
                }
                None => Err(Error::Usage(format!("no line at {disp:#x} here"))),
            };
        }
        let epoch = lines
            .window
            .lock(holder, LockKind::Shared, Assert::NOCHECK)?;
        let got = epoch.get(holder, disp, into);
        epoch.unlock()?;
        Ok(got?)
    }

    fn handle(&self, lines: &mut Lines, from: u32, m: Message) {
        let Some(m) = self.lock().defer(from, m) else {
            return;
        };
        match m {
            Message::Store { key, disp, len } => self.fetch_replica(lines, key, from, disp, len),
            Message::Task {
                key,
                number,
                into_disp,
                from_holder,
                from_disp,
                from_original,
            } => {
                let from = (from_holder, from_disp, from_original);
                self.task(lines, key, number, into_disp, from)
            }
            Message::Reload { key, rank } => self.reload(lines, key, rank),
            Message::Replicate { key, holder } => self.ask_replica(key, Some(holder)),
            Message::Dead { rank } => self.dead(rank),
            Message::Finished { key, disp } => self.end(lines, key, Outcome::Finished(disp)),
            Message::Failed { key, failure } => self.end(lines, key, Outcome::Failed(failure)),
            _ => {}
        }
    }

    /// Reads `owner`'s line of `key` for the writer to keep as its
    /// replica.
    fn fetch_replica(&self, lines: &mut Lines, key: Key, owner: u32, at: u64, len: u64) {
        if self.needless(key) {
            return;
        }
        let mut copy = self.copy(len as usize);
        match self.fetch(lines, key, owner, at, copy.bytes_mut()) {
            Ok(()) => {
                (self.lock()).write(Write::Keep { key, owner, copy });
                self.wake_all();
            }
            // The owner died (the master hears of it), the line is gone
            // (the reduction ended), or the owner hears it was not kept.
            Err(_) => {
                self.lock().pool.put_copy(Box::new(copy));
                if !self.needless(key) {
                    let m = Message::Stored { key, ok: false };
                    self.send(owner, WORKER_SERVICE, &m);
                }
            }
        }
    }

    /// Runs a task: fetches the provider's line, combines it into line
    /// `into`, exposes the result, reports.
    fn task(&self, lines: &mut Lines, key: Key, number: u64, into: u64, from: (u32, u64, bool)) {
        let (holder, from, original) = from;
        let begun = Instant::now();
        let taken = self.lock().take_line(key, into);
        let Some(TaskLine {
            copy: line,
            combine,
            len,
        }) = taken
        else {
            return;
        };
        let mut other = self.copy(len);
        self.injected(Point::Task);
        let region = lines.held.get(&(key, into)).map(|(_, region)| region);
        // A line's first task makes its working copy.
        let line = match (line, region) {
            (Some(line), _) => Ok(line),
            (None, Some(region)) => {
                let mut copy = self.copy(len);
                (region.read_bytes(0, copy.bytes_mut()).map_err(Error::from))
                    .map(|()| Box::new(copy) as Box<dyn Buffer>)
            }
            (None, None) => Err(Error::Usage(format!("no line at {into:#x} here"))),
        };
        let done = line.and_then(|mut line| {
            let fetched = self.fetch(lines, key, holder, from, other.bytes_mut());
            if fetched.is_ok() {
                self.injected(Point::Fetched);
                combine(line.bytes_mut(), other.bytes());
            }
            let written = match (&fetched, region) {
                (Ok(()), Some(region)) => region.write_bytes(0, line.bytes()).map_err(Error::from),
                _ => Ok(()),
            };
            self.lock().put_line(key, into, line);
            fetched.and(written)
        });
        // The replica travels with the first fetch: the original of a
        // line's holder that asked this process to keep it is written
        // from what the task read.
        let keep = done.is_ok() && original && self.lock().take_store(holder, key);
        match keep {
            true => {
                let job = Write::Keep {
                    key,
                    owner: holder,
                    copy: other,
                };
                self.lock().write(job);
                self.wake_all();
            }
            false => self.lock().pool.put_copy(Box::new(other)),
        }
        let m = match done {
            Ok(()) => Message::Done {
                key,
                number,
                took: begun.elapsed(),
            },
            Err(_) => Message::Aborted { key, number },
        };
        self.send(0, MASTER_SERVICE, &m);
    }

    /// Loads rank `rank`'s original of `key` again (this process's own,
    /// into its own line; or the replica it keeps, or the file of a dead
    /// rank on this host, into a new one) and reports it.
    fn reload(&self, lines: &mut Lines, key: Key, rank: u32) {
        let taken = self.lock().own_line(key);
        let Some((len, own)) = taken else {
            return;
        };
        let Some(line) = self.original(key, rank, len) else {
            // Nothing to reload from: the reduction cannot have this
            // rank's data.
            let m = Message::Failed {
                key,
                failure: Failure::DataLost(rank),
            };
            return self.send(0, MASTER_SERVICE, &m);
        };
        let at = match (rank == self.me, own) {
            (true, Some(own)) => (lines.held.get(&(key, own)).map(|(_, region)| region))
                .ok_or_else(|| Error::Usage("own line not attached".into()))
                .and_then(|region| Ok(region.write_bytes(0, line.bytes())?))
                .map(|()| own),
            _ => self.new_line(lines, key, line.bytes()),
        };
        let Ok(at) = at else { return };
        self.lock().put_line(key, at, Box::new(line));
        let m = Message::Reloaded {
            key,
            rank,
            disp: at,
        };
        self.send(0, MASTER_SERVICE, &m);
    }

    /// Rank `rank`'s original of `key` (the replica kept here, or its file
    /// on this host) in a working copy; None when neither is readable.
    fn original(&self, key: Key, rank: u32, len: usize) -> Option<Aligned> {
        let mut copy = self.copy(len);
        let read = (self.store.read(self.me, rank, key, copy.bytes_mut()))
            .or_else(|_| self.store.read(rank, rank, key, copy.bytes_mut()));
        match read {
            Ok(()) => Some(copy),
            Err(_) => {
                self.lock().pool.put_copy(Box::new(copy));
                None
            }
        }
    }

    /// `bytes` in a new line of `key` (a pooled region or a new one): its
    /// displacement.
    fn new_line(&self, lines: &mut Lines, key: Key, bytes: &[u8]) -> Result<u64, Error> {
        let len = bytes.len();
        let pooled = self.lock().pool.region(len);
        let region = match pooled {
            Some(region) => region,
            None => Arc::new(self.ep.register(len.max(1), Access::REMOTE_READ)?),
        };
        region.write_bytes(0, bytes)?;
        lines.attach(key, len, region).map_err(|evicted| {
            drop(evicted);
            Error::Usage("a dynamic window holds no more lines".into())
        })
    }

    /// Reduction `key` ended: its lines and files go, its memory to the
    /// pool (the root's result stays for its future).
    fn end(&self, lines: &mut Lines, key: Key, outcome: Outcome) {
        self.lock().end(key, outcome);
        self.wake_all();
        let released = lines.release(key);
        let evicted: Vec<_> = {
            let mut local = self.lock();
            (released.into_iter())
                .filter_map(|(len, region)| local.pool.put_region(len, region))
                .collect()
        };
        drop(evicted);
    }
}
