//! The engine: registered data, and the checkpoint that moves it from the
//! NS sources to the NT targets.

use std::sync::Arc;
use std::time::Instant;

use onesided_collectives::{Comm, Op};
use onesided_fabric::pmi::SpawnRequest;
use onesided_fabric::{Spawner, World};
use onesided_rma::{Exposure, Group, RemoteAccess, Rma, Window};

use crate::block::{self, Piece};
use crate::config::{Config, Handoff, Method, Strategy, HANDOFF_KEY};
use crate::data::{self, Column, Data, Layout, Moves};
use crate::moving::{self, Cursor, Move, Work};
use crate::Error;

/// A helper thread that gives the moves back, and its speed.
type Helper = (
    std::thread::JoinHandle<Result<Vec<Move>, Error>>,
    moving::Speed,
);

/// What a checkpoint found.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Status {
    /// No reconfiguration is asked for.
    NotStarted,
    /// A reconfiguration is in flight (background strategies).
    Pending,
    /// The reconfiguration is done: this process is a target, with its
    /// new data and group.
    Completed,
    /// The reconfiguration is done and this process is no longer part of
    /// the job: it drops its handles and calls `World::leave` (the
    /// others wait for its goodbye), then may exit with status 0.
    Retired,
}

/// How a checkpoint waits.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Wait {
    /// Advances the reconfiguration once and returns its state
    /// (`MPI_Test`'s way).
    Test,
    /// Returns when the reconfiguration is done (`MPI_Wait`'s way).
    Block,
}

/// The times of the last reconfiguration ([`Mam::times`]).
#[derive(Debug, Clone, Copy, Default, PartialEq)]
pub struct LastTimes {
    /// This process's.
    pub mine: Times,
    /// The most of each over the processes that took part.
    pub most: Times,
}

/// A process's part in a reconfiguration (MaM's `CONTINUE`, `NEW_RANK`,
/// `ZOMBIE`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Role {
    /// A source that stays a target.
    Continues,
    /// A process spawned by this reconfiguration: a target only.
    New,
    /// A source that leaves the job after it.
    Retires,
}

/// What the user phase of a reconfiguration is told (see
/// [`Mam::checkpoint_with`]).
#[derive(Debug, Clone, Copy)]
pub struct Phase<'a> {
    /// Processes before the reconfiguration.
    pub sources: u32,
    /// Processes after it.
    pub targets: u32,
    /// This process's part.
    pub role: Role,
    /// The group of every process taking part (sources first, then the
    /// new processes); the targets are its first `targets` members.
    pub group: &'a Group,
}

/// Times of the last reconfiguration, in seconds.
#[derive(Debug, Clone, Copy, Default, PartialEq)]
pub struct Times {
    /// Starting and joining processes.
    pub spawn: f64,
    /// Moving the constant data.
    pub background: f64,
    /// Moving the variable data (the end of the cycle).
    pub end: f64,
    /// The user phase.
    pub user: f64,
    /// Moving the data: `background + end` of one process. Reduced over
    /// the processes, the most of that sum (the redistribution's length),
    /// not the sum of the most background and the most end, which come
    /// from different processes when targets read while sources wait.
    pub redistribution: f64,
    /// The whole reconfiguration.
    pub total: f64,
}

impl Times {
    fn as_array(self) -> [f64; 6] {
        [
            self.spawn,
            self.background,
            self.end,
            self.user,
            self.redistribution,
            self.total,
        ]
    }

    fn from_array(a: [f64; 6]) -> Times {
        Times {
            spawn: a[0],
            background: a[1],
            end: a[2],
            user: a[3],
            redistribution: a[4],
            total: a[5],
        }
    }
}

/// One registered array.
struct Entry {
    layout: Layout,
    moves: Moves,
    /// Shared with a move of it in the background.
    column: Arc<dyn Column>,
    /// The column's bytes, exposed read-only to the group: what the RMA
    /// methods read (variable data is copied in at the end of a
    /// reconfiguration). None in a process spawned by a `Col` growth
    /// until it ends: that method reads none (the processes that were
    /// there keep theirs, over the old group, for as long).
    exposure: Option<Exposure>,
}

/// The redistribution engine of one process: its registered data, the
/// group it belongs to, and the reconfiguration asked for.
pub struct Mam {
    rma: Rma,
    spawner: Spawner,
    /// The processes taking part: the sources, then (while a
    /// reconfiguration that grows the job runs) the new processes.
    group: Group,
    comm: Comm,
    me: u32,
    /// Processes holding the data now (the first of the group).
    sources: u32,
    entries: Vec<Entry>,
    config: Option<Config>,
    /// The reconfiguration under way (background strategies).
    running: Option<Running>,
    times: LastTimes,
    /// What spawned processes run.
    program: (String, Vec<String>),
    /// Processes the last reconfiguration retired, not parted with yet.
    retiring: Vec<u32>,
}

/// A reconfiguration whose constant data moves while the application
/// iterates.
struct Running {
    config: Config,
    /// Rank 0's registrations.
    reference: Vec<[u64; 4]>,
    /// The constant data's moves (a helper thread holds them while it
    /// runs).
    moves: Vec<Move>,
    work: Work,
    /// The Comm of [`Work::Exchange`]'s rounds, kept to the end.
    exchange: Option<Comm>,
    /// Over the sources, which iterate while the constant data moves in
    /// the background: each of their checkpoints agrees whether every
    /// source's part is done (None in new processes, which wait, and
    /// when blocking).
    agree: Option<Comm>,
    /// When it started, when its processes were there, when the constant
    /// data started moving.
    times: [Instant; 3],
}

impl Mam {
    /// The engine of this process. Started with the job, it holds
    /// nothing yet over the job's processes, which are the sources of the
    /// first reconfiguration. Spawned by a reconfiguration, it joins it:
    /// the program registers its data as the others did (distributed
    /// arrays with empty blocks, replicated ones empty) and its next
    /// [`Mam::checkpoint`] receives them. Spawned processes run this
    /// process's program with its arguments (see [`Mam::set_program`]).
    /// No message, apart from a joining process's reading of its
    /// configuration from the launcher.
    ///
    /// # Errors
    /// [`Error::Config`] for a malformed configuration from the spawning
    /// processes; [`Error::Collective`] when a communicator cannot be made.
    pub fn init(world: &World, rma: &Rma) -> Result<Mam, Error> {
        let launch = world.launch();
        let handoff = match launch.spawned {
            true => world.kvs_get(HANDOFF_KEY).ok(),
            false => None,
        };
        let (group, sources, config) = match handoff {
            Some(text) => {
                let h = Handoff::parse(&text)?;
                let first = world.rank() - launch.rank;
                let new = first..first + launch.size;
                let members: Vec<u32> = h.members.iter().copied().chain(new).collect();
                (Group::new(members)?, h.sources, Some(h.config))
            }
            None => (Group::world(world.size()), world.size(), None),
        };
        let comm = Comm::new(rma, group.clone())?;
        let mut args = std::env::args();
        let program = std::env::current_exe()
            .map(|p| p.to_string_lossy().into_owned())
            .unwrap_or_else(|_| args.next().unwrap_or_default());
        Ok(Mam {
            rma: rma.clone(),
            spawner: world.spawner(),
            me: comm.rank(),
            group,
            comm,
            sources,
            entries: Vec::new(),
            config,
            running: None,
            times: Default::default(),
            program: (program, std::env::args().skip(1).collect()),
            retiring: Vec::new(),
        })
    }

    /// Sets what processes spawned by a reconfiguration run (by default
    /// this process's program and arguments).
    pub fn set_program(&mut self, program: impl Into<String>, args: Vec<String>) {
        self.program = (program.into(), args);
    }

    /// This process's part in the reconfiguration asked for (or running),
    /// `None` without one.
    pub fn role(&self) -> Option<Role> {
        let config = self.config.or(self.running.as_ref().map(|r| r.config))?;
        Some(self.role_in(config))
    }

    /// Registers `local`: this process's block of a distributed array
    /// (as [`block::block`] gives it; empty in a process that joins) or
    /// its copy of a replicated one (anything, ignored, in a process that
    /// joins: it receives rank 0's). Every process registers the same
    /// data in the same order. Exposes it to the group (one local
    /// registration, no message).
    ///
    /// # Errors
    /// [`Error::Registration`] for a block of the wrong length;
    /// [`Error::Rma`] when exposing fails.
    pub fn add<T: bytemuck::Pod + Send + Sync>(
        &mut self,
        local: Vec<T>,
        layout: Layout,
        moves: Moves,
    ) -> Result<Data<T>, Error> {
        let index = self.entries.len();
        let local = match layout {
            Layout::Replicated if self.me >= self.sources => Vec::new(),
            _ => local,
        };
        if let Layout::Distributed { len } = layout {
            let b = block::block(len, self.sources, self.me);
            if local.len() as u64 != b.end - b.start {
                return Err(Error::Registration {
                    data: index,
                    what: format!(
                        "{} elements here, where rank {} of {} holds {} of {len}",
                        local.len(),
                        self.me,
                        self.sources,
                        b.end - b.start
                    ),
                });
            }
        }
        let collective = self.config.is_some_and(|c| c.method == Method::Col);
        let exposure = match self.me >= self.sources && collective {
            true => None,
            false => Some(self.expose(&local)?),
        };
        self.entries.push(Entry {
            layout,
            moves,
            column: Arc::new(local),
            exposure,
        });
        Ok(Data::new(index))
    }

    /// The local data of `data`.
    ///
    /// # Errors
    /// [`Error::Registration`] for a handle of another engine.
    pub fn get<T: bytemuck::Pod + Send + Sync>(&self, data: Data<T>) -> Result<&[T], Error> {
        self.entries
            .get(data.index)
            .and_then(|e| e.column.as_any().downcast_ref::<Vec<T>>())
            .map(Vec::as_slice)
            .ok_or_else(|| unknown(data.index))
    }

    /// The local data of `data`, to modify.
    ///
    /// # Errors
    /// As [`Mam::get`]; [`Error::State`] while a reconfiguration moves it
    /// (constant data in the background).
    pub fn get_mut<T: bytemuck::Pod + Send + Sync>(
        &mut self,
        data: Data<T>,
    ) -> Result<&mut [T], Error> {
        let entry = self
            .entries
            .get_mut(data.index)
            .ok_or_else(|| unknown(data.index))?;
        let column = Arc::get_mut(&mut entry.column).ok_or_else(|| {
            Error::State(format!(
                "data {} is moving: it cannot change now",
                data.index
            ))
        })?;
        (column.as_any_mut().downcast_mut::<Vec<T>>())
            .map(Vec::as_mut_slice)
            .ok_or_else(|| unknown(data.index))
    }

    /// Asks for a reconfiguration at the next checkpoint (growing the
    /// job spawns the processes it lacks, through the launcher that
    /// started it).
    ///
    /// # Errors
    /// [`Error::Config`] for a configuration that cannot run: a target
    /// count of 0, a strategy not built yet; [`Error::State`] while
    /// another is asked for.
    pub fn reconfigure(&mut self, config: Config) -> Result<(), Error> {
        config.check()?;
        if let Some(pending) = self.config.or(self.running.as_ref().map(|r| r.config)) {
            return Err(Error::State(format!(
                "a reconfiguration to {} processes is asked for already",
                pending.targets
            )));
        }
        self.config = Some(config);
        Ok(())
    }

    /// The group (job ranks) the engine's data is spread over.
    pub fn group(&self) -> &Group {
        &self.group
    }

    /// The engine's communicator over [`Mam::group`].
    pub fn comm(&self) -> &Comm {
        &self.comm
    }

    /// Processes holding the data now: the first of [`Mam::group`] (the
    /// others, while a reconfiguration that grows the job runs, are new).
    pub fn sources(&self) -> u32 {
        self.sources
    }

    /// This process's rank in [`Mam::group`].
    pub fn rank(&self) -> u32 {
        self.me
    }

    /// Times of the last reconfiguration: this process's, and the most
    /// over the processes that took part.
    pub fn times(&self) -> LastTimes {
        self.times
    }

    /// Runs the reconfiguration asked for with [`Mam::reconfigure`], if
    /// any, collectively over the group: spawns the processes a growing
    /// job lacks (they join it), checks that every process registered
    /// the same data, moves the constant data (with its strategy: at once,
    /// or in the background over the following checkpoints), then the
    /// variable data, and leaves this process with its new blocks and
    /// group ([`Status::Completed`]) or out of the job
    /// ([`Status::Retired`]). `Check` returns [`Status::Pending`] while
    /// the constant data moves in the background; `Wait` waits (blocking
    /// or backing off) until the end.
    ///
    /// In the background, the sources' checkpoints agree (an allreduce of
    /// one byte each, as MaM's do): every source sees the end at the
    /// same checkpoint, the first after the last one's part was done, so
    /// an application whose iterations hold collectives stays in step.
    /// Sources therefore call `checkpoint` alike: once per iteration
    /// while it is pending (a `Wait` counts as every call until the end).
    ///
    /// # Errors
    /// [`Error::Fabric`] (`SpawnFailed`) on every source when the
    /// processes cannot be started: the job goes on as it was;
    /// [`Error::Registration`] on every process when registrations differ
    /// (nothing moved); collective and window errors (a process that
    /// died: an error naming it). After an error the reconfiguration is
    /// abandoned.
    pub fn checkpoint(&mut self, wait: Wait) -> Result<Status, Error> {
        self.checkpoint_with(wait, |_| ())
    }

    /// As [`Mam::checkpoint`], running `user` between the constant and
    /// the variable data's moves (the user phase: MaM's callback), on
    /// every process taking part.
    ///
    /// # Errors
    /// As [`Mam::checkpoint`].
    pub fn checkpoint_with(
        &mut self,
        wait: Wait,
        user: impl FnOnce(Phase<'_>),
    ) -> Result<Status, Error> {
        self.part_with_retired()?;
        if self.running.is_none() {
            let Some(config) = self.config.take() else {
                return Ok(Status::NotStarted);
            };
            let running = self.start(config)?;
            self.running = Some(running);
        }
        // A process that waits moves at full speed, unless the processes
        // here outnumber the cores: it would take the iterating ones' time
        // (and its waits then sleep at once: a yield keeps it runnable).
        let host = self.host();
        let ep = self.rma.endpoint();
        let mut backoff = match host.live > host.cpus {
            true => ep.backoff().quiet(),
            false => ep.backoff(),
        };
        let waited_for =
            (self.running.as_ref()).is_some_and(|r| r.config.strategy == Strategy::WaitTargets);
        let new = self.me >= self.sources;
        let share = moving::checkpoint_share(wait == Wait::Block, new, waited_for, host);
        loop {
            let Some(mut running) = self.running.take() else {
                return Ok(Status::NotStarted);
            };
            let work = std::mem::replace(&mut running.work, Work::Done);
            let (rma, group) = (&self.rma, &self.group);
            let moves = &mut running.moves;
            let comm = running.exchange.as_ref();
            running.work = moving::advance(work, moves, comm, share, || Ok(rma.ibarrier(group)?))?;
            let here = matches!(running.work, Work::Done);
            let everywhere = match &running.agree {
                Some(sources) => {
                    let mut all = [0u8];
                    sources.allreduce(&[u8::from(here)], &mut all, Op::MIN)?;
                    all[0] == 1
                }
                None => here,
            };
            if everywhere {
                return self.finish(running, user);
            }
            self.running = Some(running);
            if wait == Wait::Test {
                return Ok(Status::Pending);
            }
            // A paced move wakes rarely; the end (a barrier, the others'
            // agreement) is polled.
            let paced = share < 1.0
                && (self.running.as_ref())
                    .is_some_and(|r| !matches!(r.work, Work::Barrier(_) | Work::Done));
            match paced {
                true => std::thread::sleep(moving::WAKE),
                false => {
                    backoff.pause();
                }
            }
        }
    }

    /// Starts a reconfiguration: spawns what a growing job lacks, checks
    /// the registrations, and starts the constant data's move (done at
    /// once when blocking).
    fn start(&mut self, config: Config) -> Result<Running, Error> {
        let start = Instant::now();
        let (ns, nt) = (self.sources, config.targets);
        let grows = nt > self.group.size();
        if grows {
            self.grow(config)?;
        }
        let spawned = Instant::now();
        let rma_method = config.method != Method::Col;
        if grows && rma_method {
            // The data opened to the grown group, not copied (the new
            // processes exposed theirs at registration), in the same order.
            for e in &mut self.entries {
                let exposure = e.exposure.as_mut().ok_or_else(|| {
                    Error::State("internal: data of a source is not exposed".into())
                })?;
                self.rma.regroup(exposure, &self.group)?;
            }
        }
        let reference = self.check_registrations()?;
        let blocking = config.strategy == Strategy::Blocking;
        let mut moves = self.moves(
            Moves::Constant,
            &reference,
            (ns, nt),
            blocking && rma_method,
        );
        let constant = Instant::now();
        let then_barrier = config.strategy == Strategy::WaitTargets;
        let mut exchange = None;
        let work = match config.strategy {
            Strategy::Blocking => {
                if let Err(e) = self.run_moves(config.method, &mut moves) {
                    self.put_back(moves)?;
                    return Err(e);
                }
                Work::Done
            }
            Strategy::NonBlocking | Strategy::WaitTargets if rma_method => Work::Reads {
                windows: self.windows(&moves)?,
                all: config.method == Method::RmaLockAll,
                me: self.me,
                cursor: Cursor::new(&moves),
                budget: moving::Budget::default(),
                then_barrier,
                last: Instant::now(),
            },
            Strategy::NonBlocking | Strategy::WaitTargets => {
                let comm = Comm::new(&self.rma, self.group.tagged(HELPER_TAG))?;
                // Wait Targets moves flat out: a round per move, all at once.
                let cut = config.strategy == Strategy::NonBlocking;
                let rounds = moving::Rounds::agree(&comm, &moves, moving::ROUND, cut)?;
                exchange = Some(comm);
                Work::Exchange {
                    lanes: if cut { 1 } else { rounds.len() },
                    rounds,
                    laid: moving::laid_out(&moves),
                    at: (0, 0),
                    runs: Vec::new(),
                    pacer: moving::RoundPacer::default(),
                    then_barrier,
                }
            }
            Strategy::Thread => {
                let (thread, speed) = self.helper(config.method, std::mem::take(&mut moves))?;
                Work::Helper {
                    thread,
                    speed,
                    then_barrier,
                }
            }
        };
        let agree = match config.strategy != Strategy::Blocking && self.me < ns {
            true => {
                let sources = Group::new(self.group.members()[..ns as usize].to_vec())?;
                Some(Comm::new(&self.rma, sources.tagged(AGREE_TAG))?)
            }
            false => None,
        };
        Ok(Running {
            config,
            reference,
            moves,
            work,
            exchange,
            agree,
            times: [start, spawned, constant],
        })
    }

    /// A window over each move's exposure (made here, in the same order
    /// on every process).
    fn windows(&self, moves: &[Move]) -> Result<Vec<Window>, Error> {
        (moves.iter())
            .map(|m| Ok(self.rma.create(self.exposure(m.entry)?)))
            .collect()
    }

    /// Entry `i`'s exposure, which an RMA method reads.
    fn exposure(&self, i: usize) -> Result<&Exposure, Error> {
        (self.entries.get(i).and_then(|e| e.exposure.as_ref()))
            .ok_or_else(|| Error::State(format!("internal: data {i} is not exposed")))
    }

    /// Starts a thread that makes `moves` by `method` (with a
    /// communicator or windows of its own, made here) and gives them
    /// back; its speed, which a checkpoint may raise.
    fn helper(&self, method: Method, mut moves: Vec<Move>) -> Result<Helper, Error> {
        let me = self.me;
        let share = self.helper_share();
        let speed = moving::Speed::new(share);
        let paced = speed.clone();
        type Body = Box<dyn FnOnce() -> Result<Vec<Move>, Error> + Send>;
        let body: Body = match method {
            Method::Col => {
                let comm = Comm::new(&self.rma, self.group.tagged(HELPER_TAG))?;
                Box::new(move || {
                    for m in &mut moves {
                        moving::by_alltoallv_paced(&comm, m, &paced)?;
                    }
                    Ok(moves)
                })
            }
            Method::RmaLock | Method::RmaLockAll => {
                let windows = self.windows(&moves)?;
                let all = method == Method::RmaLockAll;
                Box::new(move || {
                    for (m, w) in moves.iter_mut().zip(windows) {
                        moving::by_gets(&w, all, me, m, &paced)?;
                        w.free()?;
                    }
                    Ok(moves)
                })
            }
        };
        let thread = std::thread::Builder::new()
            .name("onesided-mam".into())
            .spawn(move || {
                // A helper that shares the cores with the application
                // waits without spinning or yielding.
                if share < 1.0 {
                    onesided_fabric::progress::wait_quietly();
                }
                body()
            });
        let thread =
            thread.map_err(|e| Error::State(format!("starting the helper thread: {e}")))?;
        Ok((thread, speed))
    }

    /// The share of a core a helper thread takes ([`moving::helper_share`]).
    fn helper_share(&self) -> f64 {
        moving::helper_share(self.host())
    }

    /// Who shares this machine's CPUs now: the group's members after the
    /// sources are the processes a growth spawned.
    fn host(&self) -> moving::Host {
        let ep = self.rma.endpoint();
        let new = (self.group.members().iter().skip(self.sources as usize))
            .filter(|&&r| ep.ranks().same_machine(r))
            .count();
        moving::Host {
            live: ep.ranks().live_here(),
            new,
            cpus: ep.ranks().host_cpus(),
        }
    }

    /// Ends a reconfiguration whose constant data has moved: the user
    /// phase, the variable data, the times, the new data and group.
    fn finish(&mut self, running: Running, user: impl FnOnce(Phase<'_>)) -> Result<Status, Error> {
        let Running {
            config,
            reference,
            mut moves,
            times: [start, spawned, constant_start],
            ..
        } = running;
        let (ns, nt) = (self.sources, config.targets);
        let user_start = Instant::now();
        user(Phase {
            sources: ns,
            targets: nt,
            role: self.role_in(config),
            group: &self.group,
        });
        let end = Instant::now();
        if let Err(e) = self.move_variable(config, &reference, &mut moves) {
            self.put_back(moves)?;
            return Err(e);
        }
        // The sources' memory stays until every target has read it: the
        // allreduce of the times below, which every process enters after
        // its reads, is the closing barrier (the exposures change after
        // it, in `commit`).
        let done = Instant::now();
        let secs = |a: Instant, b: Instant| (b - a).as_secs_f64();
        let mine = Times {
            spawn: secs(start, spawned),
            background: secs(constant_start, user_start),
            end: secs(end, done),
            user: secs(user_start, end),
            redistribution: secs(constant_start, user_start) + secs(end, done),
            total: secs(start, done),
        };
        let mut most = [0.0; 6];
        if let Err(e) = self.comm.allreduce(&mine.as_array(), &mut most, Op::MAX) {
            self.put_back(moves)?;
            return Err(e.into());
        }
        self.times = LastTimes {
            mine,
            most: Times::from_array(most),
        };
        let mut fresh: Vec<Option<Box<dyn Column>>> = self.entries.iter().map(|_| None).collect();
        for m in moves {
            fresh[m.entry] = Some(m.new);
        }
        let fresh = (fresh.into_iter().enumerate())
            .map(|(i, f)| f.ok_or_else(|| Error::State(format!("internal: data {i} did not move"))))
            .collect::<Result<Vec<_>, Error>>()?;
        self.commit(fresh, nt)
    }

    /// Moves the variable data (blocking), adding its moves to `moves`.
    fn move_variable(
        &mut self,
        config: Config,
        reference: &[[u64; 4]],
        moves: &mut Vec<Move>,
    ) -> Result<(), Error> {
        let rma_method = config.method != Method::Col;
        // Every process registered the same data (checked), so all agree.
        let variable_data = self.entries.iter().any(|e| e.moves == Moves::Variable);
        if rma_method && variable_data {
            // Variable data as the application left it, in the exposures
            // the targets read, before any reads it.
            for (i, e) in self.entries.iter().enumerate() {
                if e.moves == Moves::Variable && !e.column.bytes().is_empty() {
                    self.exposure(i)?.write(0, e.column.bytes())?;
                }
            }
            self.comm.barrier()?;
        }
        let (ns, nt) = (self.sources, config.targets);
        let mut variable = self.moves(Moves::Variable, reference, (ns, nt), rma_method);
        let moved = self.run_moves(config.method, &mut variable);
        moves.append(&mut variable);
        moved
    }

    /// Makes `moves` at once by `method`.
    fn run_moves(&self, method: Method, moves: &mut [Move]) -> Result<(), Error> {
        for m in moves {
            match method {
                Method::Col => moving::by_alltoallv(&self.comm, m)?,
                Method::RmaLock | Method::RmaLockAll => {
                    let window = self.rma.create(self.exposure(m.entry)?);
                    let result = moving::by_gets(
                        &window,
                        method == Method::RmaLockAll,
                        self.me,
                        m,
                        &moving::Speed::new(1.0),
                    );
                    window.free()?;
                    result?;
                }
            }
        }
        Ok(())
    }

    /// Parts with the processes the last reconfiguration retired: waits
    /// for each one's goodbye, sent once it needs nothing more from
    /// anyone (until then it may still be receiving what this process
    /// sent it), then counts it out. The next checkpoint and the engine's
    /// drop do it; a process that retired waits, before its goodbye, for
    /// the others to let go of what they hold over the old group (drop
    /// Comms over it before the engine).
    ///
    /// # Errors
    /// [`Error::Fabric`]: a timeout naming the first that did not say
    /// goodbye (all are counted out all the same).
    pub fn part_with_retired(&mut self) -> Result<(), Error> {
        if self.retiring.is_empty() {
            return Ok(());
        }
        let retiring = std::mem::take(&mut self.retiring);
        Ok(self.spawner.part_with(&retiring)?)
    }

    /// This process's part in a reconfiguration by `config`.
    fn role_in(&self, config: Config) -> Role {
        if self.me >= self.sources {
            Role::New
        } else if self.me < config.targets {
            Role::Continues
        } else {
            Role::Retires
        }
    }

    /// Spawns the processes the job lacks for `config` and takes them
    /// into the group.
    fn grow(&mut self, config: Config) -> Result<(), Error> {
        let members = self.group.members().to_vec();
        let handoff = Handoff {
            sources: self.sources,
            config,
            members: members.clone(),
        };
        let request = SpawnRequest {
            count: config.targets - self.group.size(),
            program: self.program.0.clone(),
            args: self.program.1.clone(),
            preput: vec![(HANDOFF_KEY.to_string(), handoff.encode())],
        };
        let root = members[0];
        let new = self.spawner.spawn(root, &request)?;
        let group = Group::new(members.into_iter().chain(new).collect())?;
        self.comm = Comm::new(&self.rma, group.clone())?;
        self.group = group;
        Ok(())
    }

    /// Checks that every process registered the same data (an allgather
    /// of signatures); every process finds the same first difference.
    /// Returns rank 0's signatures.
    fn check_registrations(&self) -> Result<Vec<[u64; 4]>, Error> {
        let mine: Vec<[u64; 4]> = (self.entries.iter())
            .map(|e| {
                let len = e.column.bytes().len() / e.column.element_size().max(1);
                data::signature(e.layout, len as u64, e.column.element_size(), e.moves)
            })
            .collect();
        let n = self.group.size() as usize;
        let mut counts = vec![0u64; n];
        self.comm
            .allgatherv(&[mine.len() as u64], &mut counts, &vec![1; n])?;
        let sizes: Vec<usize> = counts.iter().map(|&c| 4 * c as usize).collect();
        let flat: Vec<u64> = mine.iter().flatten().copied().collect();
        let mut all = vec![0u64; sizes.iter().sum()];
        self.comm.allgatherv(&flat, &mut all, &sizes)?;
        let mut at = 0;
        let reference: Vec<[u64; 4]> = as_signatures(&all[..sizes[0]]);
        for (rank, &size) in sizes.iter().enumerate() {
            let theirs = as_signatures(&all[at..at + size]);
            at += size;
            let new = rank as u32 >= self.sources;
            if let Some((data, what)) = data::differs(&reference, &theirs, rank as u32, new) {
                return Err(Error::Registration { data, what });
            }
        }
        Ok(reference)
    }

    /// The moves of the data that `kind`: each array's new column for
    /// this process (its new block, or a replicated array's copy: its
    /// own, or rank 0's length to fill when it is new) and its pieces.
    /// `in_place` (blocking RMA moves, which read the exposures): a
    /// process that held the array takes its column from the application
    /// to arrange it into the new one ([`Move::in_place`]; the
    /// application cannot read it meanwhile, and [`Mam::put_back`] gives
    /// it back should the move fail).
    fn moves(
        &mut self,
        kind: Moves,
        reference: &[[u64; 4]],
        (ns, nt): (u32, u32),
        in_place: bool,
    ) -> Vec<Move> {
        let me = self.me;
        let mut moves = Vec::new();
        for ((entry, e), sig) in self.entries.iter_mut().enumerate().zip(reference) {
            if e.moves != kind {
                continue;
            }
            let size = e.column.element_size().max(1) as u64;
            let own = e.column.bytes().len() as u64 / size;
            let new_len = match e.layout {
                Layout::Distributed { len } => {
                    let b = block::block(len, nt, me);
                    b.end - b.start
                }
                Layout::Replicated if me < ns.min(nt) => own,
                Layout::Replicated => sig[1],
            };
            let taken = match (in_place && me < ns.min(nt), Arc::get_mut(&mut e.column)) {
                (true, Some(column)) => Some(column.take()),
                _ => None,
            };
            let in_place = taken.as_ref().map(|_| new_len);
            let new = match (taken, e.layout) {
                (Some(column), _) => column,
                (None, Layout::Replicated) if me < ns.min(nt) => {
                    let mut copy = e.column.fresh(own as usize);
                    copy.bytes_mut().copy_from_slice(e.column.bytes());
                    copy
                }
                (None, _) => e.column.fresh(new_len as usize),
            };
            let (reads, writes) = pieces(me, e.layout, (own, new_len), (ns, nt));
            moves.push(Move {
                entry,
                size,
                old: Arc::clone(&e.column),
                new,
                reads,
                writes,
                in_place,
            });
        }
        moves
    }

    /// Gives the application back the columns that `moves` took from it
    /// ([`Move::in_place`]), as they were: a move that failed may have
    /// arranged them already, so their bytes come from the exposures,
    /// which hold the same.
    fn put_back(&mut self, moves: Vec<Move>) -> Result<(), Error> {
        for mut m in moves.into_iter().filter(|m| m.in_place.is_some()) {
            let exposure = self.exposure(m.entry)?;
            m.new.resize(exposure.len() / m.size as usize);
            exposure.read(0, m.new.bytes_mut())?;
            let entry = (self.entries.get_mut(m.entry)).ok_or_else(|| unknown(m.entry))?;
            entry.column = Arc::from(m.new);
        }
        Ok(())
    }

    /// Takes the new data and group: targets keep their new columns
    /// (exposed again, over the new group) and forget the processes that
    /// retired; retired processes drop everything.
    fn commit(&mut self, fresh: Vec<Box<dyn Column>>, nt: u32) -> Result<Status, Error> {
        let (targets, retired) = self.group.members().split_at(nt as usize);
        let (targets, retired) = (targets.to_vec(), retired.to_vec());
        if self.me >= nt {
            self.entries.clear();
            return Ok(Status::Retired);
        }
        let group = Group::new(targets)?;
        self.comm = Comm::new(&self.rma, group.clone())?;
        self.group = group;
        self.sources = nt;
        for (e, column) in self.entries.iter_mut().zip(fresh) {
            e.column = Arc::from(column);
        }
        // The old exposures go (a notice to every old member, the retired
        // included, which wait for them before they leave). The retired
        // are parted with later ([`Mam::part_with_retired`]): they leave
        // once the application here let go of what it holds over the old
        // group too (a Comm), which it does after this returns.
        for i in 0..self.entries.len() {
            self.entries[i].exposure = Some(self.expose_bytes(i)?);
        }
        self.retiring = retired;
        Ok(Status::Completed)
    }

    /// `local` exposed read-only to the group.
    fn expose<T: bytemuck::Pod>(&self, local: &[T]) -> Result<Exposure, Error> {
        let bytes: &[u8] = bytemuck::cast_slice(local);
        let exposure = self
            .rma
            .expose(&self.group, bytes.len(), RemoteAccess::ReadOnly)?;
        exposure.write(0, bytes)?;
        Ok(exposure)
    }

    /// Entry `i`'s column exposed read-only to the group.
    fn expose_bytes(&self, i: usize) -> Result<Exposure, Error> {
        self.expose(self.entries[i].column.bytes())
    }
}

impl Drop for Mam {
    /// Parts with the processes the last reconfiguration retired (see
    /// [`Mam::part_with_retired`]), so that this process does not close
    /// its endpoint under a message still on its way to them.
    fn drop(&mut self) {
        let _ = self.part_with_retired();
    }
}

/// What process `me` reads as a target and writes as a source of an
/// array of `layout` (holding `own` elements, `new` after), in
/// elements.
fn pieces(
    me: u32,
    layout: Layout,
    (own, new): (u64, u64),
    (ns, nt): (u32, u32),
) -> (Vec<Piece>, Vec<Piece>) {
    match layout {
        Layout::Distributed { len } => (
            block::reads(len, ns, nt, me),
            block::writes(len, ns, nt, me),
        ),
        // New targets read the whole array from rank 0.
        Layout::Replicated => {
            let whole = |peer, count| Piece {
                peer,
                from: 0,
                to: 0,
                count,
            };
            let reads = match me >= ns && me < nt {
                true => vec![whole(0, new)],
                false => Vec::new(),
            };
            let writes = match me == 0 {
                true => (ns..nt).map(|t| whole(t, own)).collect(),
                false => Vec::new(),
            };
            (reads, writes)
        }
    }
}

/// Tags the group of the communicator of a helper thread, or of the
/// rounds of a collective move at checkpoints.
const HELPER_TAG: u64 = 0x6d61_6d00;
/// Tags the group of the communicator over which sources agree that a
/// background move is done.
const AGREE_TAG: u64 = 0x6d61_6d01;

fn as_signatures(flat: &[u64]) -> Vec<[u64; 4]> {
    flat.chunks_exact(4)
        .map(|c| [c[0], c[1], c[2], c[3]])
        .collect()
}

fn unknown(index: usize) -> Error {
    Error::Registration {
        data: index,
        what: "no such data of this type here (a handle of another engine?)".into(),
    }
}
