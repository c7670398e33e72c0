//! The reduction's runtime on one process: the [`Reducer`] (its two
//! control services, its executor thread and its monitor thread) and the
//! [`ReduceFuture`].
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
//!   executor thread, which fetches, combines, stores and reloads.
//! - Detection: the monitor thread of the master pings every worker
//!   each `ping` and counts one silent for `dead_after` as failed (or
//!   dead as the launcher says: `osrun --ft`); the workers' monitor
//!   counts the master failed when its pings stop.

use std::collections::{HashMap, VecDeque};
use std::marker::PhantomData;
use std::sync::{Arc, Condvar, Mutex, MutexGuard};
use std::thread::JoinHandle;
use std::time::{Duration, Instant};

use onesided_fabric::{control::Outbox, Access, Endpoint, MemoryRegion, World};
use onesided_rma::{Assert, Group, LockKind, Rma, Window};

use crate::master::Master;
use crate::message::{Key, Message};
use crate::replica::Store;
use crate::schedule::Failure;
use crate::{Error, ReducerBody};

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
    /// How often the master pings each worker (and workers expect it).
    pub ping: Duration,
    /// Silence after which a process counts as failed.
    pub dead_after: Duration,
    /// A failure to inject: at this point of a reduction, this process
    /// calls the function, which is to kill it (or stop it).
    pub inject: Option<(Point, fn())>,
}

/// Where a failure is injected ([`Config::inject`]).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Point {
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
    /// as a failure fails running reductions. `osrun --ft` notices a
    /// death at once; the environment sets shorter times for quiet hosts.
    fn default() -> Config {
        Config {
            ping: Duration::from_millis(100),
            dead_after: Duration::from_secs(1),
            inject: None,
        }
    }
}

impl Config {
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
    shared: Arc<Shared>,
    executor: Option<JoinHandle<()>>,
    monitor: Option<JoinHandle<()>>,
}

/// What the handlers, the threads and the futures share.
struct Shared {
    ep: Endpoint,
    group: Group,
    me: u32,
    store: Store,
    config: Config,
    local: Mutex<Local>,
    /// Wakes the executor (work) and the futures (outcomes).
    wake: Condvar,
    /// The master's state (group rank 0 only).
    master: Option<Mutex<Watch>>,
    /// Stops the monitor.
    stop: (Mutex<bool>, Condvar),
}

/// The master's state, when it last heard from each worker, and its
/// traffic.
struct Watch {
    master: Master,
    heard: Vec<Instant>,
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

#[derive(Default)]
struct Local {
    work: VecDeque<Work>,
    reductions: HashMap<Key, Reduction>,
    /// Rounds started per id.
    rounds: HashMap<u64, u32>,
    /// Outcomes that came before this process started the reduction.
    early: HashMap<Key, Outcome>,
    /// Replicas kept here, by reduction: their owners.
    kept: HashMap<Key, Vec<u32>>,
    /// Work for reductions not started here yet: done at their start.
    deferred: HashMap<Key, Vec<Work>>,
    master_heard: Option<Instant>,
    /// The master was seen dead: every reduction fails.
    master_dead: bool,
    /// Ranks the master said failed.
    dead: Vec<u32>,
    closing: bool,
}

/// The executor's work.
enum Work {
    Start(Key),
    Message(u32, Message),
}

/// One reduction on this process.
struct Reduction {
    root: u32,
    len: usize,
    combine: Combine,
    /// This process's original data, until its line is attached.
    original: Option<Aligned>,
    /// Its own line's displacement, once attached.
    own: Option<u64>,
    /// Lines held here, by displacement: the working copies a task
    /// combines into (a region hands out no slice), written back to the
    /// line's region after each task.
    lines: HashMap<u64, Aligned>,
    /// Where the replica of this process's data is asked for or durable.
    replica: Option<u32>,
    /// Whether the master has this process's data.
    contributed: bool,
    outcome: Outcome,
    /// Its future was dropped before the end: it goes at the end.
    abandoned: bool,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Outcome {
    Running,
    Finished(u64),
    Failed(Failure),
}

type Combine = Arc<dyn Fn(&mut [u8], &[u8]) + Send + Sync>;

/// Bytes aligned for any element type of alignment 16 or less.
struct Aligned {
    words: Vec<u128>,
    len: usize,
}

impl Aligned {
    fn zeroed(len: usize) -> Aligned {
        Aligned {
            words: vec![0; len.div_ceil(16)],
            len,
        }
    }

    fn bytes(&self) -> &[u8] {
        &bytemuck::cast_slice(&self.words)[..self.len]
    }

    fn bytes_mut(&mut self) -> &mut [u8] {
        &mut bytemuck::cast_slice_mut(&mut self.words)[..self.len]
    }
}

impl Reducer {
    /// The reducer of this process over `group` (which it belongs to):
    /// serves the control services, starts its executor and monitor
    /// threads. No message.
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
        let store = Store::new(world.pmi().kvsname())?;
        let size = group.size();
        let start = Instant::now() + START_GRACE;
        let shared = Arc::new(Shared {
            ep: ep.clone(),
            group: group.clone(),
            me,
            store,
            config,
            local: Mutex::new(Local {
                master_heard: Some(start),
                ..Local::default()
            }),
            wake: Condvar::new(),
            master: (me == 0).then(|| {
                Mutex::new(Watch {
                    master: Master::new(size),
                    heard: vec![start; size as usize],
                    load: Load::default(),
                })
            }),
            stop: (Mutex::new(false), Condvar::new()),
        });
        let worker = Arc::clone(&shared);
        ep.serve(WORKER_SERVICE, move |from, body, outbox| {
            worker.on_worker_message(from, body, outbox);
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
            executor: None,
            monitor: None,
        };
        // On an error, dropping `reducer` stops what started and serves no
        // more.
        let window = rma.create_dynamic(&group.tagged(LINE_TAG))?;
        let s = Arc::clone(&shared);
        reducer.executor = Some(thread(
            "onesided-reduce",
            Box::new(move || s.execute(window)),
        )?);
        let s = Arc::clone(&shared);
        reducer.monitor = Some(thread(
            "onesided-reduce-monitor",
            Box::new(move || s.monitor()),
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
    /// free again once its reduction ended here. The data is stored on
    /// this process's disk at once and on the next live member's before
    /// it counts as contributed (so that a failure of this process from
    /// then on is recovered); the rest runs in the background.
    ///
    /// # Errors
    /// [`Error::Usage`] for a root outside the group or an id still in
    /// flight here (nothing starts); [`Error::Replica`] when the data
    /// cannot be stored (the reduction then fails everywhere, naming this
    /// rank).
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
        let bytes: &[u8] = bytemuck::cast_slice(data);
        let mut aligned = Aligned::zeroed(bytes.len());
        aligned.bytes_mut().copy_from_slice(bytes);
        let combine: Combine = Arc::new(move |into: &mut [u8], from: &[u8]| {
            body.combine(bytemuck::cast_slice_mut(into), bytemuck::cast_slice(from))
        });
        let key = {
            let mut local = s.lock();
            let round = local.rounds.get(&id).copied().unwrap_or(0);
            let key = Key { id, round };
            if round > 0
                && local.reductions.contains_key(&Key {
                    id,
                    round: round - 1,
                })
            {
                return Err(Error::Usage(format!(
                    "reduction {id} is still in flight here"
                )));
            }
            local.rounds.insert(id, round + 1);
            key
        };
        if let Err(e) = s.store.write(s.me, s.me, key, bytes) {
            s.send(0, MASTER_SERVICE, &Message::Withdrawn { key, root });
            return Err(e);
        }
        let mut local = s.lock();
        let mut outcome = local.early.remove(&key).unwrap_or(Outcome::Running);
        if local.master_dead {
            outcome = Outcome::Failed(Failure::MasterDied(0));
        }
        local.reductions.insert(
            key,
            Reduction {
                root,
                len: bytes.len(),
                combine,
                original: Some(aligned),
                own: None,
                lines: HashMap::new(),
                replica: None,
                contributed: false,
                outcome,
                abandoned: false,
            },
        );
        local.work.push_back(Work::Start(key));
        let deferred = local.deferred.remove(&key).unwrap_or_default();
        local.work.extend(deferred);
        drop(local);
        s.wake.notify_all();
        Ok(ReduceFuture {
            shared: Arc::clone(s),
            key,
            taken: false,
            _t: PhantomData,
        })
    }
}

impl Drop for Reducer {
    /// Stops the threads and the services; reductions still running here
    /// end without this process.
    fn drop(&mut self) {
        let s = &self.shared;
        s.lock().closing = true;
        s.wake.notify_all();
        *s.stop.0.lock().unwrap_or_else(|p| p.into_inner()) = true;
        s.stop.1.notify_all();
        for thread in [self.executor.take(), self.monitor.take()]
            .into_iter()
            .flatten()
        {
            let _ = thread.join();
        }
        s.ep.unserve(WORKER_SERVICE);
        if s.me == 0 {
            s.ep.unserve(MASTER_SERVICE);
        }
        s.store.close();
    }
}

/// A reduction under way: poll it ([`ReduceFuture::is_done`]) while
/// computing, or wait for it ([`ReduceFuture::get`]).
pub struct ReduceFuture<T> {
    shared: Arc<Shared>,
    key: Key,
    taken: bool,
    _t: PhantomData<fn() -> T>,
}

impl<T: bytemuck::Pod> ReduceFuture<T> {
    /// Its id.
    pub fn id(&self) -> u64 {
        self.key.id
    }

    /// Whether it ended: `Ok(true)` when it finished.
    ///
    /// # Errors
    /// [`Error::Failed`] naming the rank that failed and how.
    pub fn is_done(&self) -> Result<bool, Error> {
        let local = self.shared.lock();
        match local.reductions.get(&self.key).map(|r| r.outcome) {
            Some(Outcome::Running) => Ok(false),
            Some(Outcome::Failed(failure)) => Err(Error::Failed {
                id: self.key.id,
                failure,
            }),
            _ => Ok(true),
        }
    }

    /// Waits for the end: the result at the root (`Some`), `None`
    /// elsewhere. Bounded: a failed process is detected within the
    /// detection's `dead_after`.
    ///
    /// # Errors
    /// [`Error::Failed`] naming the rank that failed and how.
    pub fn get(mut self) -> Result<Option<Vec<T>>, Error> {
        let s = Arc::clone(&self.shared);
        let mut local = s.lock();
        loop {
            let Some(r) = local.reductions.get(&self.key) else {
                return Err(Error::Usage("the reduction is gone".into()));
            };
            match r.outcome {
                Outcome::Running => {}
                Outcome::Failed(failure) => {
                    local.reductions.remove(&self.key);
                    self.taken = true;
                    return Err(Error::Failed {
                        id: self.key.id,
                        failure,
                    });
                }
                Outcome::Finished(disp) => {
                    let mut r = local
                        .reductions
                        .remove(&self.key)
                        .ok_or_else(|| Error::Usage("the reduction is gone".into()))?;
                    self.taken = true;
                    let result = (r.root == s.me)
                        .then(|| r.lines.remove(&disp))
                        .flatten()
                        .map(|line| elements(line.bytes()));
                    return Ok(result);
                }
            }
            local = s.wake.wait(local).unwrap_or_else(|p| p.into_inner());
        }
    }
}

impl<T> Drop for ReduceFuture<T> {
    /// A future dropped before its end leaves the reduction to finish
    /// without a reader: its state goes when it ends.
    fn drop(&mut self) {
        if self.taken {
            return;
        }
        let mut local = self.shared.lock();
        match local.reductions.get_mut(&self.key) {
            Some(r) if r.outcome == Outcome::Running => r.abandoned = true,
            Some(_) => {
                local.reductions.remove(&self.key);
            }
            None => {}
        }
    }
}

/// `bytes` as elements.
fn elements<T: bytemuck::Pod>(bytes: &[u8]) -> Vec<T> {
    let mut out = vec![T::zeroed(); bytes.len().checked_div(size_of::<T>()).unwrap_or(0)];
    bytemuck::cast_slice_mut(&mut out).copy_from_slice(bytes);
    out
}

/// The executor's window and the lines attached to it.
struct Lines {
    window: Window,
    /// Lines held here, by (reduction, displacement).
    held: HashMap<(Key, u64), Arc<MemoryRegion>>,
}

impl Shared {
    fn lock(&self) -> MutexGuard<'_, Local> {
        self.local.lock().unwrap_or_else(|p| p.into_inner())
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

    /// The workers' service (in the progress engine): pings are answered
    /// here, the rest goes to the executor.
    fn on_worker_message(&self, from: u32, body: &[u8], outbox: &mut Outbox) {
        let Some(from) = self.group.group_rank(from) else {
            return;
        };
        let Ok(message) = Message::decode(body) else {
            return;
        };
        let mut local = self.lock();
        if from == 0 {
            local.master_heard = Some(Instant::now());
        }
        if message == Message::Ping {
            let _ = outbox.notify(self.job(0), MASTER_SERVICE, &Message::Pong.encode());
            return;
        }
        local.work.push_back(Work::Message(from, message));
        drop(local);
        self.wake.notify_all();
    }

    /// The master's service (in the progress engine): the scheduler.
    fn on_master_message(&self, from: u32, body: &[u8], outbox: &mut Outbox) {
        let (Some(from), Some(watch)) = (self.group.group_rank(from), &self.master) else {
            return;
        };
        let Ok(message) = Message::decode(body) else {
            return;
        };
        let mut watch = watch.lock().unwrap_or_else(|p| p.into_inner());
        if let Some(heard) = watch.heard.get_mut(from as usize) {
            *heard = Instant::now();
        }
        watch.load.messages_in += 1;
        watch.load.bytes_in += body.len() as u64;
        for (to, m) in watch.master.on(from, message) {
            let bytes = m.encode();
            watch.load.sent(bytes.len());
            let _ = outbox.notify(self.job(to), WORKER_SERVICE, &bytes);
        }
    }

    /// The monitor thread: the master pings and watches the workers; a
    /// worker watches the master.
    fn monitor(self: Arc<Shared>) {
        let size = self.group.size();
        let mut last = Instant::now();
        loop {
            {
                let stop = self.stop.0.lock().unwrap_or_else(|p| p.into_inner());
                let (stop, _) = (self.stop.1)
                    .wait_timeout_while(stop, self.config.ping, |s| !*s)
                    .unwrap_or_else(|p| p.into_inner());
                if *stop {
                    return;
                }
            }
            let now = Instant::now();
            // A tick that came late (this thread had no core) does not
            // count the others' silence meanwhile: the pings it did not
            // send could not be answered.
            let late = now.saturating_duration_since(last) > 2 * self.config.ping;
            last = now;
            if let Some(watch) = &self.master {
                let mut out = Vec::new();
                let mut ping = Vec::new();
                let mut died = Vec::new();
                {
                    let mut watch = watch.lock().unwrap_or_else(|p| p.into_inner());
                    if late {
                        let floor = now.checked_sub(self.config.ping).unwrap_or(now);
                        for h in watch.heard.iter_mut() {
                            *h = (*h).max(floor);
                        }
                    }
                    for r in 1..size {
                        if watch.master.is_dead(r) {
                            continue;
                        }
                        let silent = now.saturating_duration_since(watch.heard[r as usize]);
                        if silent > self.config.dead_after || self.ep.is_dead(self.job(r)) {
                            out.extend(watch.master.died(r));
                            died.push(r);
                        } else {
                            ping.push(r);
                        }
                    }
                }
                // The failure is broadcast: workers stop counting on it.
                let dead = (died.iter())
                    .flat_map(|&rank| {
                        (0..size)
                            .filter(move |&t| t != rank)
                            .map(move |t| (t, rank))
                    })
                    .map(|(to, rank)| (to, Message::Dead { rank }));
                let out: Vec<(u32, Vec<u8>)> = (ping.into_iter())
                    .map(|r| (r, Message::Ping))
                    .chain(dead)
                    .chain(out)
                    .map(|(to, m)| (to, m.encode()))
                    .collect();
                {
                    let mut watch = watch.lock().unwrap_or_else(|p| p.into_inner());
                    for (_, bytes) in &out {
                        watch.load.sent(bytes.len());
                    }
                }
                for (to, bytes) in out {
                    let _ = self.ep.notify(self.job(to), WORKER_SERVICE, &bytes);
                }
            } else {
                let mut local = self.lock();
                if late {
                    let floor = now.checked_sub(self.config.ping).unwrap_or(now);
                    local.master_heard = local.master_heard.map(|h| h.max(floor));
                }
                let silent = (local.master_heard)
                    .is_some_and(|h| now.saturating_duration_since(h) > self.config.dead_after);
                if !local.master_dead && (silent || self.ep.is_dead(self.job(0))) {
                    local.master_dead = true;
                    let failure = Failure::MasterDied(0);
                    let keys: Vec<Key> = local.reductions.keys().copied().collect();
                    for key in keys {
                        local
                            .work
                            .push_back(Work::Message(0, Message::Failed { key, failure }));
                    }
                    drop(local);
                    self.wake.notify_all();
                }
            }
        }
    }

    /// The executor thread: works until the reducer closes.
    fn execute(self: Arc<Shared>, window: Window) {
        let mut lines = Lines {
            window,
            held: HashMap::new(),
        };
        loop {
            let work = {
                let mut local = self.lock();
                loop {
                    if local.closing {
                        drop(local);
                        lines.release_all();
                        let _ = lines.window.free();
                        return;
                    }
                    if let Some(w) = local.work.pop_front() {
                        break w;
                    }
                    local = self.wake.wait(local).unwrap_or_else(|p| p.into_inner());
                }
            };
            match work {
                Work::Start(key) => self.start(&mut lines, key),
                Work::Message(from, m) => self.handle(&mut lines, from, m),
            }
        }
    }

    /// Attaches this process's line of `key` and asks for its replica
    /// (or contributes at once in a group of one).
    fn start(&self, lines: &mut Lines, key: Key) {
        let taken = {
            let mut local = self.lock();
            let Some(r) = local.reductions.get_mut(&key) else {
                return;
            };
            if r.outcome != Outcome::Running {
                return;
            }
            (r.root, r.original.take())
        };
        let (root, Some(line)) = taken else { return };
        // Attached outside the lock: the endpoint's handlers take it.
        match self.attach(lines, key, line.bytes()) {
            Ok(disp) => {
                if let Some(r) = self.lock().reductions.get_mut(&key) {
                    r.own = Some(disp);
                    r.lines.insert(disp, line);
                }
            }
            Err(_) => {
                self.send(0, MASTER_SERVICE, &Message::Withdrawn { key, root });
                return;
            }
        }
        self.ask_replica(key, None);
    }

    /// Asks `holder` (by default the next live member) to keep this
    /// process's replica of `key`; contributes at once when there is no
    /// other member.
    fn ask_replica(&self, key: Key, holder: Option<u32>) {
        let size = self.group.size();
        let dead = self.lock().dead.clone();
        let holder = holder.or_else(|| {
            (1..size)
                .map(|k| (self.me + k) % size)
                .find(|&r| !dead.contains(&r) && !self.ep.is_dead(self.job(r)))
        });
        let (root, len, own) = {
            let mut local = self.lock();
            let Some(r) = local.reductions.get_mut(&key) else {
                return;
            };
            r.replica = holder;
            (r.root, r.len, r.own.unwrap_or(0))
        };
        match holder {
            Some(h) => self.send(
                h,
                WORKER_SERVICE,
                &Message::Store {
                    key,
                    disp: own,
                    len: len as u64,
                },
            ),
            None => self.contribute(key, root, None),
        }
    }

    /// Rank `rank` failed: replicas asked of it are asked of the next.
    fn dead(&self, rank: u32) {
        let waiting: Vec<Key> = {
            let mut local = self.lock();
            local.dead.push(rank);
            (local.reductions.iter())
                .filter(|(_, r)| {
                    r.replica == Some(rank) && !r.contributed && r.outcome == Outcome::Running
                })
                .map(|(k, _)| *k)
                .collect()
        };
        for key in waiting {
            self.ask_replica(key, None);
        }
    }

    fn contribute(&self, key: Key, root: u32, replica: Option<u32>) {
        let own = match self.lock().reductions.get_mut(&key) {
            Some(r) => {
                r.contributed = true;
                r.own.unwrap_or(0)
            }
            None => return,
        };
        let m = Message::Contributed {
            key,
            root,
            disp: own,
            replica,
        };
        self.send(0, MASTER_SERVICE, &m);
        self.injected(Point::Contributed);
    }

    /// Fails here if told to ([`Config::inject`]).
    fn injected(&self, at: Point) {
        if let Some((point, then)) = self.config.inject {
            if point == at {
                then();
            }
        }
    }

    /// A line of `key` holding `bytes`, attached to the window: its
    /// displacement.
    fn attach(&self, lines: &mut Lines, key: Key, bytes: &[u8]) -> Result<u64, Error> {
        let region = Arc::new(self.ep.register(bytes.len().max(1), Access::REMOTE_READ)?);
        region.write_bytes(0, bytes)?;
        let disp = lines.window.attach(Arc::clone(&region))?;
        lines.held.insert((key, disp), region);
        Ok(disp)
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
            return match lines.held.get(&(key, disp)) {
                Some(region) => Ok(region.read_bytes(0, into)?),
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
        let waits = match &m {
            Message::Task { key, .. }
            | Message::Reload { key, .. }
            | Message::Replicate { key, .. } => Some(*key),
            _ => None,
        };
        if let Some(key) = waits {
            let mut local = self.lock();
            if !local.reductions.contains_key(&key) {
                local
                    .deferred
                    .entry(key)
                    .or_default()
                    .push(Work::Message(from, m));
                return;
            }
        }
        match m {
            Message::Store { key, disp, len } => self.keep_replica(lines, key, from, disp, len),
            Message::Stored { key, ok } => self.stored(key, from, ok),
            Message::Task {
                key,
                number,
                into_disp,
                from_holder,
                from_disp,
            } => self.task(lines, key, number, into_disp, from_holder, from_disp),
            Message::Reload { key, rank } => self.reload(lines, key, rank),
            Message::Replicate { key, holder } => self.ask_replica(key, Some(holder)),
            Message::Dead { rank } => self.dead(rank),
            Message::Finished { key, disp } => self.end(lines, key, Outcome::Finished(disp)),
            Message::Failed { key, failure } => self.end(lines, key, Outcome::Failed(failure)),
            _ => {}
        }
    }

    /// Keeps `owner`'s replica of `key`: reads its line, writes and syncs
    /// the file, tells it.
    fn keep_replica(&self, lines: &mut Lines, key: Key, owner: u32, at: u64, len: u64) {
        let mut bytes = vec![0u8; len as usize];
        if self.fetch(lines, key, owner, at, &mut bytes).is_err() {
            return; // The owner died: the master hears of it.
        }
        let ok = self.store.write(self.me, owner, key, &bytes).is_ok();
        if ok {
            self.lock().kept.entry(key).or_default().push(owner);
        }
        self.send(owner, WORKER_SERVICE, &Message::Stored { key, ok });
    }

    /// This process's replica of `key` is durable on `holder` (or could
    /// not be stored there).
    fn stored(&self, key: Key, holder: u32, ok: bool) {
        let (root, first) = {
            let local = self.lock();
            let Some(r) = local.reductions.get(&key) else {
                return;
            };
            if r.replica != Some(holder) || r.outcome != Outcome::Running {
                return;
            }
            (r.root, !r.contributed)
        };
        match (ok, first) {
            (true, true) => self.contribute(key, root, Some(holder)),
            (true, false) => {
                let m = Message::Replicated {
                    key,
                    owner: self.me,
                };
                self.send(0, MASTER_SERVICE, &m);
            }
            (false, _) => self.send(0, MASTER_SERVICE, &Message::Withdrawn { key, root }),
        }
    }

    /// Runs a task: fetches the provider's line, combines it into line
    /// `into`, exposes the result, reports.
    fn task(&self, lines: &mut Lines, key: Key, number: u64, into: u64, holder: u32, from: u64) {
        let begun = Instant::now();
        let taken = {
            let mut local = self.lock();
            (local.reductions.get_mut(&key))
                .and_then(|r| Some((r.lines.remove(&into)?, Arc::clone(&r.combine), r.len)))
        };
        let Some((mut line, combine, len)) = taken else {
            return;
        };
        self.injected(Point::Task);
        let mut other = Aligned::zeroed(len);
        let fetched = self.fetch(lines, key, holder, from, other.bytes_mut());
        if fetched.is_ok() {
            self.injected(Point::Fetched);
        }
        let done = fetched.and_then(|()| {
            combine(line.bytes_mut(), other.bytes());
            match lines.held.get(&(key, into)) {
                Some(region) => Ok(region.write_bytes(0, line.bytes())?),
                None => Err(Error::Usage(format!("no line at {into:#x} here"))),
            }
        });
        if let Some(r) = self.lock().reductions.get_mut(&key) {
            r.lines.insert(into, line);
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
    /// into its own line, or the replica it keeps, into a new one) and
    /// reports it.
    fn reload(&self, lines: &mut Lines, key: Key, rank: u32) {
        let Some((len, own)) = self.lock().reductions.get(&key).map(|r| (r.len, r.own)) else {
            return;
        };
        let mut line = Aligned::zeroed(len);
        if self
            .store
            .read(self.me, rank, key, line.bytes_mut())
            .is_err()
        {
            return; // Counted as lost when this process is seen dead.
        }
        let at = match (rank == self.me, own) {
            (true, Some(own)) => (lines.held.get(&(key, own)))
                .ok_or_else(|| Error::Usage("own line not attached".into()))
                .and_then(|region| Ok(region.write_bytes(0, line.bytes())?))
                .map(|()| own),
            _ => self.attach(lines, key, line.bytes()),
        };
        let Ok(at) = at else { return };
        if let Some(r) = self.lock().reductions.get_mut(&key) {
            r.lines.insert(at, line);
        }
        let m = Message::Reloaded {
            key,
            rank,
            disp: at,
        };
        self.send(0, MASTER_SERVICE, &m);
    }

    /// Reduction `key` ended: its lines, windows and files go (the
    /// root's result stays for its future).
    fn end(&self, lines: &mut Lines, key: Key, outcome: Outcome) {
        let kept = {
            let mut local = self.lock();
            let kept = local.kept.remove(&key).unwrap_or_default();
            local.deferred.remove(&key);
            match local.reductions.get_mut(&key) {
                Some(r) if r.abandoned => {
                    local.reductions.remove(&key);
                }
                Some(r) if r.outcome == Outcome::Running => {
                    r.outcome = outcome;
                    let keep = match (outcome, r.root == self.me) {
                        (Outcome::Finished(d), true) => Some(d),
                        _ => None,
                    };
                    r.lines.retain(|&d, _| Some(d) == keep);
                }
                Some(_) => {}
                None => {
                    local.early.insert(key, outcome);
                }
            }
            kept
        };
        self.wake.notify_all();
        lines.release(key);
        self.store.remove(self.me, self.me, key);
        // The master removes the files of the dead on its host.
        if let Some(watch) = &self.master {
            let dead: Vec<u32> = {
                let watch = watch.lock().unwrap_or_else(|p| p.into_inner());
                (0..self.group.size())
                    .filter(|&r| watch.master.is_dead(r))
                    .collect()
            };
            let here = self.ep.host_of(self.ep.rank());
            for d in dead
                .into_iter()
                .filter(|&d| self.ep.host_of(self.job(d)) == here)
            {
                self.store.remove_held_by(d, key);
            }
        }
        for owner in kept {
            self.store.remove(self.me, owner, key);
        }
    }
}

impl Lines {
    /// Detaches reduction `key`'s lines (every fetch of them is over).
    fn release(&mut self, key: Key) {
        let mine: Vec<(Key, u64)> = (self.held.keys())
            .filter(|(k, _)| *k == key)
            .copied()
            .collect();
        for at in mine {
            self.held.remove(&at);
            let _ = self.window.detach(at.1);
        }
    }

    fn release_all(&mut self) {
        for ((_, disp), _) in std::mem::take(&mut self.held) {
            let _ = self.window.detach(disp);
        }
    }
}
