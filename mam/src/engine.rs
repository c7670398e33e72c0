//! The engine: registered data, and the checkpoint that moves it from the
//! NS sources to the NT targets.

use std::time::Instant;

use onesided_collectives::{Comm, Op};
use onesided_fabric::pmi::SpawnRequest;
use onesided_fabric::{Spawner, World};
use onesided_rma::{Assert, Exposure, Group, LockKind, RemoteAccess, Rma, Window};

use crate::block::{self, Piece};
use crate::config::{Config, Handoff, Method, Strategy, HANDOFF_KEY};
use crate::data::{self, Column, Data, Layout, Moves};
use crate::Error;

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
    /// the job: it drops its handles and may exit with status 0.
    Retired,
}

/// How a checkpoint waits.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Wait {
    /// Returns at once with the state.
    Check,
    /// Returns when the reconfiguration is done.
    Wait,
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
    /// The whole reconfiguration.
    pub total: f64,
}

impl Times {
    fn as_array(self) -> [f64; 5] {
        [self.spawn, self.background, self.end, self.user, self.total]
    }

    fn from_array(a: [f64; 5]) -> Times {
        Times {
            spawn: a[0],
            background: a[1],
            end: a[2],
            user: a[3],
            total: a[4],
        }
    }
}

/// One registered array.
struct Entry {
    layout: Layout,
    moves: Moves,
    column: Box<dyn Column>,
    /// The column's bytes, exposed read-only to the group: what the RMA
    /// methods read (variable data is copied in at the checkpoint).
    exposure: Exposure,
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
    times: (Times, Times),
    /// What spawned processes run.
    program: (String, Vec<String>),
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
        let spawned = world.pmi().spawned();
        let handoff = match spawned {
            true => world.pmi().get(HANDOFF_KEY).ok(),
            false => None,
        };
        let (group, sources, config) = match handoff {
            Some(text) => {
                let h = Handoff::parse(&text)?;
                let pmi_rank = world.pmi().rank();
                let first = world.rank() - pmi_rank;
                let new = first..first + world.pmi().size();
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
            times: Default::default(),
            program: (program, std::env::args().skip(1).collect()),
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
        let targets = self.config?.targets;
        Some(if self.me >= self.sources {
            Role::New
        } else if self.me < targets {
            Role::Continues
        } else {
            Role::Retires
        })
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
    pub fn add<T: bytemuck::Pod + Send>(
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
        let exposure = self.expose(&local)?;
        self.entries.push(Entry {
            layout,
            moves,
            column: Box::new(local),
            exposure,
        });
        Ok(Data::new(index))
    }

    /// The local data of `data`.
    ///
    /// # Errors
    /// [`Error::Registration`] for a handle of another engine.
    pub fn get<T: bytemuck::Pod + Send>(&self, data: Data<T>) -> Result<&[T], Error> {
        self.entries
            .get(data.index)
            .and_then(|e| e.column.as_any().downcast_ref::<Vec<T>>())
            .map(Vec::as_slice)
            .ok_or_else(|| unknown(data.index))
    }

    /// The local data of `data`, to modify. Constant data must not change
    /// after registration (a reconfiguration may be moving it).
    ///
    /// # Errors
    /// As [`Mam::get`].
    pub fn get_mut<T: bytemuck::Pod + Send>(&mut self, data: Data<T>) -> Result<&mut [T], Error> {
        self.entries
            .get_mut(data.index)
            .and_then(|e| e.column.as_any_mut().downcast_mut::<Vec<T>>())
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
        if let Some(pending) = self.config {
            return Err(Error::State(format!(
                "a reconfiguration to {} processes is asked for already",
                pending.targets
            )));
        }
        if config.strategy != Strategy::Blocking {
            return Err(Error::Config(format!(
                "strategy {} is not built yet (use blocking)",
                config.strategy
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
    pub fn times(&self) -> (Times, Times) {
        self.times
    }

    /// Runs the reconfiguration asked for with [`Mam::reconfigure`], if
    /// any, collectively over the group: spawns the processes a growing
    /// job lacks (they join it), checks that every process registered
    /// the same data, moves it from the NS sources to the NT targets, and
    /// leaves this process with its new blocks and group
    /// ([`Status::Completed`]) or out of the job ([`Status::Retired`]).
    /// With a blocking strategy `wait` does not matter.
    ///
    /// # Errors
    /// [`Error::Fabric`] (`SpawnFailed`) on every source when the
    /// processes cannot be started: the job goes on as it was;
    /// [`Error::Registration`] on every process when registrations differ
    /// (nothing moved); collective and window errors (a process that
    /// died: an error naming it).
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
        let _ = wait;
        let Some(config) = self.config else {
            return Ok(Status::NotStarted);
        };
        let result = self.run(config, user);
        self.config = None;
        result
    }

    fn run(&mut self, config: Config, user: impl FnOnce(Phase<'_>)) -> Result<Status, Error> {
        let start = Instant::now();
        let (ns, nt) = (self.sources, config.targets);
        if nt > self.group.size() {
            self.grow(config)?;
        }
        let spawned = Instant::now();
        // Variable data as the application left it, in the exposures the
        // RMA methods read; the check's allgather then orders these writes
        // before any target's read.
        if config.method != Method::Col {
            for e in &self.entries {
                if e.moves == Moves::Variable {
                    if let Some(d) = exposed_data(e) {
                        e.exposure.write(0, d)?;
                    }
                }
            }
        }
        let reference = self.check_registrations()?;
        let mut fresh = self.fresh(&reference, (ns, nt));
        let constant = Instant::now();
        self.redistribute(config.method, Moves::Constant, &mut fresh, (ns, nt))?;
        let user_start = Instant::now();
        let role = self.role().unwrap_or(Role::Continues);
        user(Phase {
            sources: ns,
            targets: nt,
            role,
            group: &self.group,
        });
        let end = Instant::now();
        self.redistribute(config.method, Moves::Variable, &mut fresh, (ns, nt))?;
        // The sources' memory stays until every target has read it.
        if config.method != Method::Col {
            self.comm.barrier()?;
        }
        let done = Instant::now();
        let secs = |a: Instant, b: Instant| (b - a).as_secs_f64();
        let mine = Times {
            spawn: secs(start, spawned),
            background: secs(constant, user_start),
            end: secs(end, done),
            user: secs(user_start, end),
            total: secs(start, done),
        };
        let mut most = [0.0; 5];
        self.comm.allreduce(&mine.as_array(), &mut most, Op::MAX)?;
        self.times = (mine, Times::from_array(most));
        self.commit(fresh, nt)
    }

    /// Spawns the processes the job lacks for `config` and takes them
    /// into the group, exposing the data to the new group (no message).
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
        for i in 0..self.entries.len() {
            let exposure = self.expose_bytes(i)?;
            self.entries[i].exposure = exposure;
        }
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

    /// New columns for this process as a target (empty when it is not
    /// one): its new block, or a replicated array's copy (its own, or
    /// to be filled from rank 0 when it is new).
    fn fresh(&self, reference: &[[u64; 4]], (ns, nt): (u32, u32)) -> Vec<Box<dyn Column>> {
        (self.entries.iter().zip(reference))
            .map(|(e, sig)| match e.layout {
                Layout::Distributed { len } => {
                    let b = block::block(len, nt, self.me);
                    e.column.fresh((b.end - b.start) as usize)
                }
                Layout::Replicated if self.me < ns.min(nt) => {
                    let mut copy = e
                        .column
                        .fresh(e.column.bytes().len() / e.column.element_size());
                    copy.bytes_mut().copy_from_slice(e.column.bytes());
                    copy
                }
                // Rank 0's length.
                Layout::Replicated => e.column.fresh(sig[1] as usize),
            })
            .collect()
    }

    /// Moves the data that `moves` into `fresh` by `method`.
    fn redistribute(
        &self,
        method: Method,
        moves: Moves,
        fresh: &mut [Box<dyn Column>],
        (ns, nt): (u32, u32),
    ) -> Result<(), Error> {
        for (e, new) in self.entries.iter().zip(fresh.iter_mut()) {
            if e.moves != moves {
                continue;
            }
            let size = e.column.element_size() as u64;
            let new_len = new.bytes().len() as u64 / size.max(1);
            let (reads, writes) = self.pieces(e, new_len, (ns, nt));
            match method {
                Method::Col => self.by_alltoallv(e, new.bytes_mut(), size, (&reads, &writes))?,
                Method::RmaLock | Method::RmaLockAll => {
                    let window = self.rma.create(&e.exposure);
                    let result = self.by_gets(
                        &window,
                        method == Method::RmaLockAll,
                        e.column.bytes(),
                        new.bytes_mut(),
                        size,
                        &reads,
                    );
                    window.free()?;
                    result?;
                }
            }
        }
        Ok(())
    }

    /// What this process reads as a target and writes as a source of
    /// entry `e`, in elements.
    /// (`new_len`: elements of this process's new column.)
    fn pieces(&self, e: &Entry, new_len: u64, (ns, nt): (u32, u32)) -> (Vec<Piece>, Vec<Piece>) {
        match e.layout {
            Layout::Distributed { len } => (
                block::reads(len, ns, nt, self.me),
                block::writes(len, ns, nt, self.me),
            ),
            // New targets read the whole array from rank 0.
            Layout::Replicated => {
                let own = (e.column.bytes().len() / e.column.element_size().max(1)) as u64;
                let whole = |peer, count| Piece {
                    peer,
                    from: 0,
                    to: 0,
                    count,
                };
                let reads = match self.me >= ns && self.me < nt {
                    true => vec![whole(0, new_len)],
                    false => Vec::new(),
                };
                let writes = match self.me == 0 {
                    true => (ns..nt).map(|t| whole(t, own)).collect(),
                    false => Vec::new(),
                };
                (reads, writes)
            }
        }
    }

    /// COL: one alltoallv of bytes over the group.
    fn by_alltoallv(
        &self,
        e: &Entry,
        new: &mut [u8],
        size: u64,
        (reads, writes): (&[Piece], &[Piece]),
    ) -> Result<(), Error> {
        let n = self.group.size();
        let bytes = |pieces: &[Piece]| -> Vec<usize> {
            block::counts(pieces, n)
                .into_iter()
                .map(|c| (c * size) as usize)
                .collect()
        };
        let (sends, recvs) = (bytes(writes), bytes(reads));
        let old = e.column.bytes();
        let span = |p: &Piece| (p.from * size) as usize..((p.from + p.count) * size) as usize;
        // A distributed array's pieces lie end to end in the old block, in
        // target order: sent from where they are. A replicated array goes
        // whole to each new target: copies laid end to end.
        let contiguous = writes
            .windows(2)
            .all(|w| w[0].from + w[0].count == w[1].from);
        let copies: Vec<u8>;
        let input = match (contiguous, writes.first(), writes.last()) {
            (true, Some(a), Some(b)) => &old[span(a).start..span(b).end],
            (true, _, _) => &[][..],
            (false, _, _) => {
                copies = writes.iter().flat_map(|p| &old[span(p)]).copied().collect();
                &copies[..]
            }
        };
        // What arrives fills the new column from its start (a continuing
        // process's replicated copy receives nothing).
        let output = &mut new[..recvs.iter().sum::<usize>()];
        Ok(self.comm.alltoallv(input, &sends, output, &recvs)?)
    }

    /// RMA: this process's pieces as a target, from each source's
    /// exposure (a lock each, or one `lock_all`); its own piece is copied
    /// locally.
    fn by_gets(
        &self,
        window: &Window,
        all: bool,
        old: &[u8],
        new: &mut [u8],
        size: u64,
        reads: &[Piece],
    ) -> Result<(), Error> {
        let at = |p: &Piece| {
            (
                (p.from * size) as usize,
                (p.to * size) as usize,
                (p.count * size) as usize,
            )
        };
        let epoch = if all && reads.iter().any(|p| p.peer != self.me) {
            Some(window.lock_all(Assert::NOCHECK)?)
        } else {
            None
        };
        for p in reads {
            let (from, to, len) = at(p);
            let into = &mut new[to..to + len];
            if p.peer == self.me {
                into.copy_from_slice(&old[from..from + len]);
            } else if let Some(epoch) = &epoch {
                epoch.get(p.peer, from as u64, into)?;
            } else {
                let epoch = window.lock(p.peer, LockKind::Shared, Assert::NOCHECK)?;
                epoch.get(p.peer, from as u64, into)?;
                epoch.unlock()?;
            }
        }
        if let Some(epoch) = epoch {
            epoch.unlock()?;
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
            e.column = column;
        }
        // The old exposures go (a notice to every old member, the retired
        // included, which wait for them before they leave), then the
        // retired are forgotten.
        for i in 0..self.entries.len() {
            let exposure = self.expose_bytes(i)?;
            self.entries[i].exposure = exposure;
        }
        let ep = self.rma.endpoint();
        for &r in &retired {
            ep.mark_dead(r);
        }
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

/// The bytes of `e` that its exposure holds.
fn exposed_data(e: &Entry) -> Option<&[u8]> {
    let bytes = e.column.bytes();
    (!bytes.is_empty()).then_some(bytes)
}

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
