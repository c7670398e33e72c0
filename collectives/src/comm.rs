//! Collectives over a group: [`Comm`], its blocking calls and the
//! nonblocking forms `ibarrier`, `ibcast`, `ireduce`, `iallreduce` and
//! `iallgatherv`, which return a [`Run`] request (first round posted at
//! once; later rounds on every call into the Comm). A `Run` dropped before
//! it completes leaves the other members' call to fail by timeout.
//!
//! Every member calls the same collectives in the same order (as MPI
//! requires), with matching counts. Each call picks its algorithm from the
//! profile loaded at creation (`ONESIDED_PROFILE`, where it measured the
//! group's geometry) or the cost model. Every rank must pick the same
//! algorithm, so choices change only in ways that are the same everywhere:
//! an algorithm that fails when a call starts it (its schedule does not fit
//! the call, [`crate::select::FAULT_ENV`] names it) fails on every rank, leaves the
//! choices and the call goes on with the next best; what the calls measure
//! (monitoring) and the algorithms that fail in flight (a transfer error:
//! the call returns it) are recorded in [`Comm::observed`], and become
//! every rank's choices when the program calls [`Comm::agree`]. Decision
//! written here because the spec leaves open how ranks agree on updates.

use std::cell::{Cell, RefCell};
use std::sync::Arc;
use std::time::Instant;

use onesided_rma::{Assert, Group, RemoteAccess, Rma};

use crate::algorithm::{self, Algorithm, Algorithms, Collective};
use crate::op::Combine;
use crate::op::{Op, Reduce, Reducible};
use crate::profile::Geometry;
use crate::run::{Exec, Inflight, Run, Work};
use crate::schedule::algorithms as alg;
use crate::schedule::Schedule;
use crate::scratch::Spare;
use crate::select::{faults_from_env, Selection, Selector, Shape};
use crate::shared::{self, HostMemory};
use crate::Error;

/// Collectives over one group, for this process: an owned handle (it
/// keeps its `Rma` and endpoint alive). It is `Send`, not `Sync`: a thread
/// may be given a Comm of its own (make one per thread, in the same order
/// on every member, as `MPI_Comm_dup`), whose calls then run beside the
/// other threads' Comms.
///
/// ```
/// use onesided_collectives::{Comm, Op};
/// use onesided_rma::{Group, Request, Rma};
///
/// # fn main() -> Result<(), Box<dyn std::error::Error>> {
/// let world = onesided_fabric::World::init()?; // one rank without a launcher
/// let rma = Rma::new(world.endpoint())?;
/// let comm = Comm::new(&rma, Group::world(world.size()))?;
/// let mut sum = [0u64; 2];
/// comm.allreduce(&[1, 2], &mut sum, Op::SUM)?;
/// assert_eq!(sum, [u64::from(world.size()), 2 * u64::from(world.size())]);
/// // Nonblocking: the call owns its buffers until it hands them back.
/// let mut run = comm.iallreduce(vec![1.5f64], vec![0.0], Op::MAX)?;
/// run.wait()?;
/// assert_eq!(run.into_buffers()?.output, [1.5]);
/// # drop((comm, rma));
/// # world.finalize()?;
/// # Ok(())
/// # }
/// ```
pub struct Comm {
    /// The windows of one-sided algorithms.
    rma: Rma,
    group: Group,
    /// The group tagged for this Comm: its windows are numbered apart
    /// from other Comms' and the program's own over the same members.
    objects: Group,
    me: u32,
    geometry: Geometry,
    /// The choices, monitoring and forcing ([`Selection`], pure).
    selection: RefCell<Selection>,
    inflight: Arc<Inflight>,
    /// Buffers for the Comm's calls.
    spare: Spare,
    /// Shared-memory state, made at the first call that uses it.
    shared: std::cell::OnceCell<Arc<HostMemory>>,
    calls: Cell<u64>,
    /// What tells this Comm's messages from others': the group, the
    /// Comm's number among this process's Comms over it, and the selection source
    /// (so ranks that loaded different profiles fail fast instead of
    /// choosing different algorithms).
    context: u64,
    warning: Option<String>,
}

impl Comm {
    /// Collectives over `group` (which this process must belong to), with
    /// the profile of `ONESIDED_PROFILE`; a bad one gives one warning on
    /// standard error per process (also in [`Comm::warning`]) and the
    /// built-in defaults. No message.
    ///
    /// # Errors
    /// [`Error::BadCall`] when this process is not a member.
    pub fn new(rma: &Rma, group: Group) -> Result<Comm, Error> {
        let ep = rma.endpoint();
        let me = group.group_rank(ep.rank()).ok_or_else(|| {
            Error::BadCall(format!("rank {} is not a member of the group", ep.rank()))
        })?;
        let mut per_host = std::collections::HashMap::new();
        for &r in group.members() {
            *per_host.entry(ep.ranks().host_of(r)).or_insert(0u32) += 1;
        }
        let geometry = Geometry {
            ranks: group.size(),
            ranks_per_host: per_host.values().copied().max().unwrap_or(1),
        };
        let (choices, warning) = Selector::from_env(geometry);
        // Members create their Comms over a group in the same order (as
        // MPI requires of communicator creation), so this number agrees
        // across them; Comms over other groups (other threads') do not
        // move it.
        let nth = rma.next_context(&group);
        let source = mix(choices
            .profile()
            .to_text()
            .bytes()
            .fold(0u64, |h, b| h.rotate_left(5) ^ u64::from(b)));
        let context = mix(nth ^ source);
        if let Some(w) = &warning {
            // One warning per process, however many groups it makes.
            static WARNED: std::sync::Once = std::sync::Once::new();
            WARNED.call_once(|| eprintln!("{w}"));
        }
        Ok(Comm {
            rma: rma.clone(),
            me,
            geometry,
            selection: RefCell::new(Selection::new(choices, faults_from_env())),
            inflight: Arc::new(Inflight::new(rma.endpoint(), &group)),
            spare: Spare::default(),
            shared: std::cell::OnceCell::new(),
            objects: group.tagged(context),
            group,
            calls: Cell::new(0),
            context,
            warning,
        })
    }

    /// The warning about the profile (unreadable, malformed: file and
    /// line), if any; the built-in defaults are in use then.
    pub fn warning(&self) -> Option<&str> {
        self.warning.as_deref()
    }

    /// The group's geometry (ranks, and the most on one host).
    pub fn geometry(&self) -> Geometry {
        self.geometry
    }

    /// The group.
    pub fn group(&self) -> &Group {
        &self.group
    }

    /// This process's rank in the group.
    pub fn rank(&self) -> u32 {
        self.me
    }

    /// The loaded profile with this process's measurements folded in and
    /// its failed algorithms removed (monitoring): a copy, which the
    /// caller may keep across calls.
    pub fn observed(&self) -> Selector {
        self.selection.borrow().observed().clone()
    }

    /// Agreement on monitoring (collective): every member adopts group
    /// rank 0's observed profile (the loaded one with rank 0's
    /// measurements folded in) and the union of the members' failed
    /// algorithms, for its choices from then on. Calls choose by what was
    /// loaded until a program calls this (at a phase boundary, say): the
    /// ranks' measurements differ, and their choices must not.
    ///
    /// # Errors
    /// As [`Comm::allgatherv`]; [`Error::Profile`] when rank 0's profile
    /// does not parse here (a version mismatch).
    pub fn agree(&self) -> Result<(), Error> {
        let n = self.group.size() as usize;
        let mine: Vec<u8> = (self.selection.borrow().observed().failures())
            .flat_map(|a| format!("{} {}\n", a.collective().name(), a.name()).into_bytes())
            .collect();
        let mut lens = vec![0u64; n];
        self.allgatherv(&[mine.len() as u64], &mut lens, &vec![1; n])?;
        let counts: Vec<usize> = lens.iter().map(|&l| l as usize).collect();
        let mut failed = vec![0u8; total(&counts)?];
        self.allgatherv(&mine, &mut failed, &counts)?;
        let mut text = if self.me == 0 {
            let selection = self.selection.borrow();
            selection.observed().profile().to_text().into_bytes()
        } else {
            Vec::new()
        };
        let mut len = [text.len() as u64];
        self.bcast(0, &mut len)?;
        text.resize(len[0] as usize, 0);
        self.bcast(0, &mut text)?;
        let text = String::from_utf8_lossy(&text);
        let profile = crate::profile::Profile::parse(&text, "rank 0's observed profile")?;
        let mut agreed = Selector::new(Some(&profile), self.geometry);
        for line in String::from_utf8_lossy(&failed).lines() {
            let Some((c, a)) = line.split_once(' ') else {
                continue;
            };
            if let Some(a) = Collective::from_name(c).and_then(|c| Algorithm::parse(c, a)) {
                agreed.failed(a);
            }
        }
        self.selection.borrow_mut().agreed(agreed);
        Ok(())
    }

    /// Makes every later call of `algorithm`'s collective use it, as
    /// `onesided-tune` and the tests do. Every member must force the
    /// same. A non-commutative reduction still gets an algorithm that
    /// keeps the rank order, and a nonblocking call one that runs
    /// nonblocking.
    pub fn force(&self, algorithm: impl Into<Algorithm>) {
        let algorithm = algorithm.into();
        let collective = algorithm.collective();
        self.selection
            .borrow_mut()
            .force(collective, Some(algorithm));
    }

    /// Lets calls of `collective` choose their algorithm again (undoes
    /// [`Comm::force`]).
    pub fn unforce(&self, collective: Collective) {
        self.selection.borrow_mut().force(collective, None);
    }

    /// The algorithm a blocking call of `collective` on `count` elements
    /// of `T` per rank would use (the same on every rank): a reduction's
    /// with `op` (its element type and whether it commutes choose), a call
    /// that moves data without `op` (chosen by its bytes alone).
    ///
    /// # Errors
    /// [`Error::NoAlgorithm`] when none is left.
    pub fn algorithm<T: Reducible>(
        &self,
        collective: Collective,
        count: usize,
        op: Option<&Op<T>>,
    ) -> Result<Algorithm, Error> {
        let bytes = (count * size_of::<T>()) as u64;
        let shape = match op {
            Some(op) => Shape::sized(collective, T::NAME, bytes, op.is_commutative()),
            None => Shape::sized(collective, "bytes", bytes, true),
        };
        Ok(self.choose(shape, |_| Ok(()))?.0)
    }

    /// The algorithm the last call of `collective` on this Comm started
    /// (blocking or not; none before the first call). It is the same on
    /// every rank, like [`Comm::algorithm`]'s answer, which says what a
    /// call *would* use.
    pub fn last_algorithm(&self, collective: Collective) -> Option<Algorithm> {
        self.selection.borrow().last_started(collective)
    }

    /// The call's algorithm and this rank's plan for it (`build`'s
    /// answer): forced, else chosen by `shape`. An algorithm that fails
    /// here (its plan does not fit the call, it is injected by
    /// [`crate::select::FAULT_ENV`], or it needs what this Comm lacks) is removed from
    /// the choices and the next best is tried: such failures are the same
    /// on every rank, so the ranks go on agreeing without a message. A
    /// forced algorithm that fails is an error.
    fn choose<P>(
        &self,
        shape: Shape,
        build: impl Fn(Algorithm) -> Result<P, Error>,
    ) -> Result<(Algorithm, P), Error> {
        let c = shape.collective;
        loop {
            let algorithm = (self.selection.borrow_mut().pick(shape))
                .ok_or_else(|| Error::NoAlgorithm(c.name()))?;
            let plan = if self.injected(algorithm) {
                Err(Error::BadCall(format!(
                    "{} {algorithm} fails ({})",
                    c.name(),
                    crate::select::FAULT_ENV
                )))
            } else {
                build(algorithm)
            };
            match plan {
                Ok(plan) => {
                    self.selection.borrow_mut().started(algorithm);
                    return Ok((algorithm, plan));
                }
                Err(e) if !self.selection.borrow_mut().refused(algorithm) => return Err(e),
                Err(_) => {}
            }
        }
    }

    /// Whether [`crate::select::FAULT_ENV`] makes `algorithm` fail.
    fn injected(&self, algorithm: Algorithm) -> bool {
        self.selection.borrow().injected(algorithm)
    }

    /// Chooses the call's algorithm and makes its plan with `build`,
    /// checked: a schedule fits the buffers, the shared algorithm has every
    /// member on this host.
    fn prepare<T: bytemuck::Pod + Send, A: Algorithms>(
        &self,
        checked: Checked<T, impl Fn(A) -> Plan>,
        (input, output): (&[T], &[T]),
    ) -> Result<Call<T>, Error> {
        let Checked {
            number,
            shape,
            build,
            combine,
        } = checked;
        let (algorithm, plan) = self.choose(shape, |a| {
            let a = A::of(a).ok_or(Error::NoAlgorithm(shape.collective.name()))?;
            let plan = build(a);
            match &plan {
                Plan::Schedule(schedule) => crate::run::check(schedule, input.len(), output.len())?,
                Plan::Shared(_) if self.geometry.ranks_per_host < self.geometry.ranks => {
                    return Err(Error::BadCall(
                        "the shared algorithm needs every member on this host".into(),
                    ))
                }
                _ => {}
            }
            Ok(plan)
        })?;
        Ok(Call {
            number,
            shape,
            algorithm,
            plan,
            combine,
        })
    }

    /// Runs a call to completion over the caller's buffers (advancing the
    /// nonblocking runs in flight meanwhile), recording its time (or its
    /// failure) under its algorithm (monitoring).
    fn finish<T: bytemuck::Pod + Send>(
        &self,
        call: Call<T>,
        input: &[T],
        output: &mut [T],
    ) -> Result<(), Error> {
        let start = self.monitor_start();
        let Call {
            number,
            shape,
            algorithm,
            plan,
            combine,
        } = call;
        let result = match plan {
            Plan::OneSided { sends, recvs } => {
                self.alltoallv_onesided(number, input, &sends, output, &recvs)
            }
            Plan::Shared(how) if self.inflight.idle() => self.shared().and_then(|shared| {
                let run = shared::Run::new(shared::Held::Lent(shared), how, self.calls.get());
                let combine = combine.as_ref();
                (self.inflight).wait_shared(run, (input, output), combine, &self.spare)
            }),
            plan => self.work(plan).and_then(|work| {
                let spare = &self.spare;
                let buffers = (input, output);
                let exec = Exec::new(work, number, buffers, combine, spare)?;
                self.inflight.wait(exec, &self.spare)
            }),
        };
        self.monitor(shape, algorithm, start, result)
    }

    /// Runs a blocking barrier, broadcast or reduction: at once through
    /// shared memory ([`HostMemory::quick`]) when that is the algorithm its
    /// call would choose and it fits such a call, else as
    /// [`Comm::prepare`] and [`Comm::finish`] run it. The same choice,
    /// monitoring and protocol, without making a [`Call`], whose moves
    /// through the choice showed in small calls: without one, an allreduce
    /// of 8 B and a barrier are measurably faster (figures:
    /// docs/measurements.md, "Blocking calls without a `Call`"). The first
    /// call is prepared and run: it makes the shared-memory state.
    fn blocking<T: bytemuck::Pod + Send, A: Algorithms>(
        &self,
        checked: Checked<T, impl Fn(A) -> Plan>,
        input: &[T],
        output: &mut [T],
    ) -> Result<(), Error> {
        let shape = checked.shape;
        let shared_algorithm = A::SHARED.into();
        if self.selection.borrow_mut().pick(shape) == Some(shared_algorithm)
            && self.inflight.idle()
            && !self.injected(shared_algorithm)
        {
            if let (Some(shared), Plan::Shared(how)) =
                (self.shared.get(), (checked.build)(A::SHARED))
            {
                if shared.quick_fits::<T>(&how, input.len(), output.len()) {
                    self.selection.borrow_mut().started(shared_algorithm);
                    let start = self.monitor_start();
                    let result = shared.quick(
                        self.calls.get(),
                        &how,
                        input,
                        output,
                        checked.combine.as_ref(),
                    );
                    return self.monitor(shape, shared_algorithm, start, result);
                }
            }
        }
        self.prepare_and_run(checked, input, output)
    }

    /// Runs a blocking call: chooses its algorithm and makes its plan
    /// ([`Comm::prepare`]), then runs it ([`Comm::finish`]).
    fn prepare_and_run<T: bytemuck::Pod + Send, A: Algorithms>(
        &self,
        checked: Checked<T, impl Fn(A) -> Plan>,
        input: &[T],
        output: &mut [T],
    ) -> Result<(), Error> {
        let call = self.prepare(checked, (input, output))?;
        self.finish(call, input, output)
    }

    /// When a call is timed for monitoring: one call in [`MONITOR_EVERY`]
    /// (reading the clock twice and recording the time cost about 600
    /// instructions, as much as a small shared-memory call's own work).
    fn monitor_start(&self) -> Option<Instant> {
        self.calls
            .get()
            .is_multiple_of(MONITOR_EVERY)
            .then(Instant::now)
    }

    /// What an executor runs for `plan` (a shared-memory run takes its
    /// turn after the Comm's earlier ones here).
    ///
    /// # Errors
    /// [`Error::BadCall`] for the one-sided alltoallv (not an executor's).
    fn work(&self, plan: Plan) -> Result<Work, Error> {
        match plan {
            Plan::Schedule(schedule) => Ok(Work::Schedule(schedule)),
            Plan::Shared(how) => Ok(Work::Shared(shared::Run::new(
                shared::Held::Owned(Arc::clone(self.shared()?)),
                how,
                self.calls.get(),
            ))),
            Plan::OneSided { .. } => Err(Error::BadCall(
                "the one-sided alltoallv is blocking only".into(),
            )),
        }
    }

    /// This Comm's shared-memory state, made at its first use.
    fn shared(&self) -> Result<&Arc<HostMemory>, Error> {
        if let Some(shared) = self.shared.get() {
            return Ok(shared);
        }
        let made = Arc::new(HostMemory::new(&self.rma, &self.objects, self.me)?);
        Ok(self.shared.get_or_init(|| made))
    }

    /// Records how a call of `algorithm` went (monitoring): its failure,
    /// or its time when it was timed from `start`. A call the caller got
    /// wrong ([`Error::BadCall`]: counts that do not match, say) fails by
    /// any algorithm, and does not count against this one.
    fn monitor(
        &self,
        shape: Shape,
        algorithm: Algorithm,
        start: Option<Instant>,
        result: Result<(), Error>,
    ) -> Result<(), Error> {
        match (&result, start) {
            (Ok(()), Some(start)) => {
                let us = start.elapsed().as_secs_f64() * 1e6;
                self.selection.borrow_mut().observe(shape, algorithm, us);
            }
            (Ok(()), None) | (Err(Error::BadCall(_)), _) => {}
            (Err(_), _) => self.selection.borrow_mut().failed(algorithm),
        }
        result
    }

    /// Starts a call as a nonblocking run over the buffers handed to it.
    fn spawn<T: bytemuck::Pod + Send>(
        &self,
        call: Call<T>,
        input: Vec<T>,
        output: Vec<T>,
    ) -> Result<Run<T>, Error> {
        let work = self.work(call.plan)?;
        let buffers = (input, output);
        let spare = &self.spare;
        self.inflight.reclaim(spare);
        let exec = Exec::new(work, call.number, buffers, call.combine, spare)?;
        Ok(Inflight::start(&self.inflight, exec))
    }

    /// The number of this process's next call on this Comm, taken first
    /// in every collective (before any check), so that a call refused on
    /// one rank leaves every rank's numbering in step; mixed with the
    /// Comm's context into message tags. Unmixed (`calls`, the current
    /// call's while it is made), it numbers a shared-memory call's steps.
    fn next_call(&self) -> u64 {
        let n = self.calls.get() + 1;
        self.calls.set(n);
        mix(self.context ^ n)
    }

    fn check_root(&self, root: u32) -> Result<(), Error> {
        if root < self.group.size() {
            Ok(())
        } else {
            Err(Error::BadCall(format!(
                "root {root} is not in a group of {}",
                self.group.size()
            )))
        }
    }

    /// Checks that `counts` has one count per member and that this rank's
    /// is `mine`; returns their sum.
    fn check_counts(&self, counts: &[usize], mine: usize) -> Result<usize, Error> {
        if counts.len() != self.group.size() as usize {
            return Err(Error::BadCall(format!(
                "{} counts for a group of {}",
                counts.len(),
                self.group.size()
            )));
        }
        if counts[self.me as usize] != mine {
            return Err(Error::BadCall(format!(
                "count {} for this rank, buffer of {mine}",
                counts[self.me as usize]
            )));
        }
        total(counts)
    }

    /// Checks that a buffer of `what` holds `len` elements, `want` wanted.
    fn check_len(what: &str, len: usize, want: usize) -> Result<(), Error> {
        if len == want {
            Ok(())
        } else {
            Err(Error::BadCall(format!(
                "{what} of {len} elements where {want} are needed"
            )))
        }
    }

    /// The average bytes per rank of `counts`: a size every rank computes
    /// alike (selection must agree everywhere without a message).
    fn average<T>(counts: &[usize]) -> u64 {
        (counts.iter().sum::<usize>() * size_of::<T>() / counts.len().max(1)) as u64
    }

    fn combine<T: Reducible>(op: &Op<T>) -> Result<Combine<T>, Error> {
        op.check()?;
        Ok(Combine::new(op))
    }

    fn barrier_call(&self, blocking: bool) -> Checked<u8, impl Fn(algorithm::Barrier) -> Plan> {
        use algorithm::Barrier;
        let number = self.next_call();
        let (n, me) = (self.group.size(), self.me);
        let shape = Shape::sized(Collective::Barrier, "bytes", 0, true).blocking(blocking);
        let build = move |a| match a {
            Barrier::Shared => Plan::Shared(shared::Shape::Barrier),
            Barrier::Dissemination => Plan::Schedule(alg::barrier_dissemination(n, me)),
        };
        Checked::new(number, shape, build, None)
    }

    /// Starts a barrier (its first round is posted at once).
    ///
    /// # Errors
    /// [`Error::NoAlgorithm`]; fabric errors posting its first round.
    pub fn ibarrier(&self) -> Result<Run<u8>, Error> {
        let call = self.prepare(self.barrier_call(false), (&[], &[]))?;
        self.spawn(call, Vec::new(), Vec::new())
    }

    /// Barrier.
    ///
    /// # Errors
    /// As [`Comm::ibarrier`]; a dead member or a timeout while waiting.
    pub fn barrier(&self) -> Result<(), Error> {
        self.blocking(self.barrier_call(true), &[], &mut [])
    }

    fn bcast_call<T: bytemuck::Pod + Send>(
        &self,
        root: u32,
        buf: &[T],
        blocking: bool,
    ) -> Result<Checked<T, impl Fn(algorithm::Bcast) -> Plan>, Error> {
        use algorithm::Bcast;
        let number = self.next_call();
        self.check_root(root)?;
        let (n, me, count) = (self.group.size(), self.me, buf.len());
        let bytes = size_of_val(buf) as u64;
        let shape = Shape::sized(Collective::Bcast, "bytes", bytes, true).blocking(blocking);
        let build = move |a| match a {
            Bcast::Shared => Plan::Shared(shared::Shape::Bcast { root }),
            Bcast::Linear => Plan::Schedule(alg::bcast_linear(n, me, root, count)),
            Bcast::ScatterAllgather => {
                Plan::Schedule(alg::bcast_scatter_allgather(n, me, root, count))
            }
            Bcast::ScatterDoubling => {
                Plan::Schedule(alg::bcast_scatter_doubling(n, me, root, count))
            }
            Bcast::Binomial => Plan::Schedule(alg::bcast_binomial(n, me, root, count)),
        };
        Ok(Checked::new(number, shape, build, None))
    }

    /// Starts broadcasting `buf` from group rank `root` (every member
    /// passes a buffer of the same length); the run hands it back as its
    /// output ([`Run::into_buffers`]).
    ///
    /// # Errors
    /// [`Error::BadCall`] for a root outside the group; as
    /// [`Comm::ibarrier`].
    pub fn ibcast<T: bytemuck::Pod + Send>(&self, root: u32, buf: Vec<T>) -> Result<Run<T>, Error> {
        let call = self.prepare(self.bcast_call(root, &buf, false)?, (&[], &buf))?;
        self.spawn(call, Vec::new(), buf)
    }

    /// Broadcasts `buf` from group rank `root`.
    ///
    /// # Errors
    /// As [`Comm::ibcast`], and waiting errors.
    pub fn bcast<T: bytemuck::Pod + Send>(&self, root: u32, buf: &mut [T]) -> Result<(), Error> {
        self.blocking(self.bcast_call(root, buf, true)?, &[], buf)
    }

    /// The checked parts of a reduce (to `root`) or allreduce (`None`):
    /// the call's number, shape and operation.
    fn reduce_parts<T: Reducible>(
        &self,
        root: Option<u32>,
        input: &[T],
        output: &[T],
        op: &Op<T>,
        blocking: bool,
    ) -> Result<(u64, Shape, Combine<T>), Error> {
        let number = self.next_call();
        let collective = match root {
            Some(r) => {
                self.check_root(r)?;
                Collective::Reduce
            }
            None => Collective::Allreduce,
        };
        if root.is_none_or(|r| r == self.me) {
            let what = match collective {
                Collective::Reduce => "reduce output",
                _ => "allreduce output",
            };
            Self::check_len(what, output.len(), input.len())?;
        }
        let combine = Self::combine(op)?;
        let bytes = size_of_val(input) as u64;
        let shape =
            Shape::sized(collective, T::NAME, bytes, op.is_commutative()).blocking(blocking);
        Ok((number, shape, combine))
    }

    fn reduce_call<'o, T: Reducible>(
        &self,
        root: u32,
        input: &[T],
        output: &[T],
        op: &'o Op<T>,
        blocking: bool,
    ) -> Result<Checked<T, impl Fn(algorithm::Reduce) -> Plan + use<'o, T>>, Error> {
        use algorithm::Reduce;
        let (number, shape, combine) =
            self.reduce_parts(Some(root), input, output, op, blocking)?;
        let (n, me, count) = (self.group.size(), self.me, input.len());
        let commutative = shape.commutative;
        let build = move |a| {
            Plan::Schedule(match a {
                Reduce::Shared => {
                    return Plan::Shared(shared::Shape::Reduce {
                        root: Some(root),
                        left_in_place: op.left_in_place(),
                    })
                }
                Reduce::Linear => alg::reduce_linear(n, me, root, count),
                Reduce::ReduceScatterGather => alg::reduce_scatter_gather(n, me, root, count),
                Reduce::Binomial => alg::reduce_binomial(n, me, root, count, commutative),
            })
        };
        Ok(Checked::new(number, shape, build, Some(combine)))
    }

    fn allreduce_call<'o, T: Reducible>(
        &self,
        input: &[T],
        output: &[T],
        op: &'o Op<T>,
        blocking: bool,
    ) -> Result<Checked<T, impl Fn(algorithm::Allreduce) -> Plan + use<'o, T>>, Error> {
        use algorithm::Allreduce;
        let (number, shape, combine) = self.reduce_parts(None, input, output, op, blocking)?;
        let (n, me, count) = (self.group.size(), self.me, input.len());
        let build = move |a| {
            Plan::Schedule(match a {
                Allreduce::Shared => {
                    return Plan::Shared(shared::Shape::Reduce {
                        root: None,
                        left_in_place: op.left_in_place(),
                    })
                }
                Allreduce::Ring => alg::allreduce_ring(n, me, count),
                Allreduce::Rabenseifner => alg::allreduce_rabenseifner(n, me, count),
                Allreduce::RecursiveDoubling => alg::allreduce_recursive_doubling(n, me, count),
            })
        };
        Ok(Checked::new(number, shape, build, Some(combine)))
    }

    /// Starts reducing every member's `input` with `op` into `output` at
    /// group rank `root` (`output` is only used there).
    ///
    /// # Errors
    /// [`Error::BadCall`] for a bad root or buffer lengths;
    /// [`Error::BadOp`] for an operation the element type lacks.
    pub fn ireduce<T: Reducible>(
        &self,
        root: u32,
        input: Vec<T>,
        output: Vec<T>,
        op: Op<T>,
    ) -> Result<Run<T>, Error> {
        let checked = self.reduce_call(root, &input, &output, &op, false)?;
        let call = self.prepare(checked, (&input, &output))?;
        self.spawn(call, input, output)
    }

    /// Reduces every member's `input` with `op` into `output` at `root`.
    ///
    /// # Errors
    /// As [`Comm::ireduce`], and waiting errors.
    pub fn reduce<T: Reducible>(
        &self,
        root: u32,
        input: &[T],
        output: &mut [T],
        op: Op<T>,
    ) -> Result<(), Error> {
        let checked = self.reduce_call(root, input, output, &op, true)?;
        self.blocking(checked, input, output)
    }

    /// Starts reducing every member's `input` with `op` into every
    /// member's `output`.
    ///
    /// # Errors
    /// As [`Comm::ireduce`].
    pub fn iallreduce<T: Reducible>(
        &self,
        input: Vec<T>,
        output: Vec<T>,
        op: Op<T>,
    ) -> Result<Run<T>, Error> {
        let checked = self.allreduce_call(&input, &output, &op, false)?;
        let call = self.prepare(checked, (&input, &output))?;
        self.spawn(call, input, output)
    }

    /// Reduces every member's `input` with `op` into every `output`.
    ///
    /// # Errors
    /// As [`Comm::ireduce`], and waiting errors.
    pub fn allreduce<T: Reducible>(
        &self,
        input: &[T],
        output: &mut [T],
        op: Op<T>,
    ) -> Result<(), Error> {
        let checked = self.allreduce_call(input, output, &op, true)?;
        self.blocking(checked, input, output)
    }

    /// Gatherv (`gather`) or scatterv: `counts[r]` elements of rank `r`,
    /// laid end to end at `root`.
    fn rooted_v<T: bytemuck::Pod + Send>(
        &self,
        gather: bool,
        root: u32,
        input: &[T],
        output: &mut [T],
        counts: &[usize],
    ) -> Result<(), Error> {
        let number = self.next_call();
        self.check_root(root)?;
        let (mine, whole, what) = if gather {
            (input.len(), output.len(), "gatherv output")
        } else {
            (output.len(), input.len(), "scatterv input")
        };
        let total = self.check_counts(counts, mine)?;
        if self.me == root {
            Self::check_len(what, whole, total)?;
        }
        let collective = if gather {
            Collective::Gather
        } else {
            Collective::Scatter
        };
        let (n, me) = (self.group.size(), self.me);
        let shape = Shape::sized(collective, "bytes", Self::average::<T>(counts), true);
        if gather {
            use algorithm::Gather;
            let build = |a| {
                Plan::Schedule(match a {
                    Gather::Shared => {
                        return Plan::Shared(shared::Shape::Gather {
                            root: Some(root),
                            counts: counts.to_vec(),
                        })
                    }
                    Gather::Linear => alg::gatherv_linear(n, me, root, counts),
                    Gather::Binomial => alg::gatherv_binomial(n, me, root, counts),
                })
            };
            self.prepare_and_run(Checked::new(number, shape, build, None), input, output)
        } else {
            use algorithm::Scatter;
            let build = |a| {
                Plan::Schedule(match a {
                    Scatter::Shared => {
                        return Plan::Shared(shared::Shape::Scatter {
                            root,
                            counts: counts.to_vec(),
                        })
                    }
                    Scatter::Linear => alg::scatterv_linear(n, me, root, counts),
                    Scatter::Binomial => alg::scatterv_binomial(n, me, root, counts),
                })
            };
            self.prepare_and_run(Checked::new(number, shape, build, None), input, output)
        }
    }

    /// Gathers every member's `input` (`counts[r]` elements from group
    /// rank `r`) into `output` at `root`, in rank order (`MPI_Gatherv`).
    ///
    /// # Errors
    /// [`Error::BadCall`] when `counts` does not have one count per member
    /// or the buffers do not match it; waiting errors.
    pub fn gatherv<T: bytemuck::Pod + Send>(
        &self,
        root: u32,
        input: &[T],
        output: &mut [T],
        counts: &[usize],
    ) -> Result<(), Error> {
        self.rooted_v(true, root, input, output, counts)
    }

    /// Scatters `input` at `root` (`counts[r]` elements to group rank `r`)
    /// into every member's `output` (`MPI_Scatterv`).
    ///
    /// # Errors
    /// As [`Comm::gatherv`].
    pub fn scatterv<T: bytemuck::Pod + Send>(
        &self,
        root: u32,
        input: &[T],
        output: &mut [T],
        counts: &[usize],
    ) -> Result<(), Error> {
        self.rooted_v(false, root, input, output, counts)
    }

    fn allgatherv_call<T: bytemuck::Pod + Send>(
        &self,
        input: &[T],
        output: &[T],
        counts: &[usize],
        blocking: bool,
    ) -> Result<Call<T>, Error> {
        let number = self.next_call();
        let total = self.check_counts(counts, input.len())?;
        Self::check_len("allgatherv output", output.len(), total)?;
        let (n, me) = (self.group.size(), self.me);
        let shape = Shape::sized(
            Collective::Allgather,
            "bytes",
            Self::average::<T>(counts),
            true,
        )
        .blocking(blocking);
        let build = |a| {
            use algorithm::Allgather;
            Plan::Schedule(match a {
                Allgather::Shared => {
                    return Plan::Shared(shared::Shape::Gather {
                        root: None,
                        counts: counts.to_vec(),
                    })
                }
                Allgather::Ring => alg::allgatherv_ring(n, me, counts),
                Allgather::Bruck => alg::allgatherv_bruck(n, me, counts),
                Allgather::RecursiveDoubling => alg::allgatherv_recursive_doubling(n, me, counts),
            })
        };
        self.prepare(Checked::new(number, shape, build, None), (input, output))
    }

    /// Starts gathering every member's `input` (`counts[r]` elements from
    /// rank `r`) into every `output`, in rank order (`MPI_Iallgatherv`).
    ///
    /// # Errors
    /// As [`Comm::gatherv`].
    pub fn iallgatherv<T: bytemuck::Pod + Send>(
        &self,
        input: Vec<T>,
        output: Vec<T>,
        counts: &[usize],
    ) -> Result<Run<T>, Error> {
        let call = self.allgatherv_call(&input, &output, counts, false)?;
        self.spawn(call, input, output)
    }

    /// Gathers every member's `input` into every `output` (`MPI_Allgatherv`).
    ///
    /// # Errors
    /// As [`Comm::gatherv`].
    pub fn allgatherv<T: bytemuck::Pod + Send>(
        &self,
        input: &[T],
        output: &mut [T],
        counts: &[usize],
    ) -> Result<(), Error> {
        let call = self.allgatherv_call(input, output, counts, true)?;
        self.finish(call, input, output)
    }

    /// Alltoall (`by_size`: every count the same, the algorithm chosen by
    /// size) or alltoallv (counts differ per rank, so the algorithm cannot
    /// depend on them: the first left, pairwise, unless forced).
    fn exchange<T: bytemuck::Pod + Send>(
        &self,
        number: u64,
        input: &[T],
        sends: &[usize],
        output: &mut [T],
        recvs: &[usize],
        by_size: bool,
    ) -> Result<(), Error> {
        let call = self.exchange_call(number, (input, sends), (output, recvs), by_size, true)?;
        self.finish(call, input, output)
    }

    /// The call of an alltoall(v) (see [`Comm::exchange`]).
    fn exchange_call<T: bytemuck::Pod + Send>(
        &self,
        number: u64,
        (input, sends): (&[T], &[usize]),
        (output, recvs): (&[T], &[usize]),
        by_size: bool,
        blocking: bool,
    ) -> Result<Call<T>, Error> {
        let n = self.group.size() as usize;
        if sends.len() != n || recvs.len() != n {
            return Err(Error::BadCall(format!(
                "alltoall counts for a group of {n}"
            )));
        }
        Self::check_len("alltoall input", input.len(), total(sends)?)?;
        Self::check_len("alltoall output", output.len(), total(recvs)?)?;
        let me = self.me;
        let bytes = size_of_val(input) as u64 / n.max(1) as u64;
        let shape = Shape {
            by_size,
            ..Shape::sized(Collective::Alltoall, "bytes", bytes, true).blocking(blocking)
        };
        let build = |a| {
            use algorithm::Alltoall;
            match a {
                Alltoall::Shared => Plan::Shared(shared::Shape::Alltoall {
                    sends: sends.to_vec(),
                    recvs: recvs.to_vec(),
                }),
                Alltoall::OneSided => Plan::OneSided {
                    sends: sends.to_vec(),
                    recvs: recvs.to_vec(),
                },
                Alltoall::Linear => {
                    Plan::Schedule(alg::alltoallv_linear(n as u32, me, sends, recvs))
                }
                Alltoall::Pairwise => {
                    Plan::Schedule(alg::alltoallv_pairwise(n as u32, me, sends, recvs))
                }
                // Decided by the call's kind, the same on every rank (one
                // rank's counts may look uniform where another's do not).
                Alltoall::Bruck if by_size => {
                    let count = sends.first().copied().unwrap_or(0);
                    Plan::Schedule(alg::alltoall_bruck(n as u32, me, count))
                }
                Alltoall::Bruck => {
                    Plan::Schedule(alg::alltoallv_pairwise(n as u32, me, sends, recvs))
                }
            }
        };
        self.prepare(Checked::new(number, shape, build, None), (input, output))
    }

    /// The one-sided alltoallv: each rank exposes a copy of its input in
    /// a window, tells each peer where that peer's block starts and how
    /// many elements it holds (a pairwise exchange of two numbers, which
    /// also says "my data is in place"), then gets its blocks from every
    /// peer in one `lock_all` epoch; the window's collective free is the
    /// closing barrier. On one host the gets are copies from the peers'
    /// shared memory. A block whose sender's count differs from the
    /// receive count is not read, and the call fails naming the sender,
    /// after the free, which every member reaches.
    fn alltoallv_onesided<T: bytemuck::Pod + Send>(
        &self,
        call: u64,
        input: &[T],
        sends: &[usize],
        output: &mut [T],
        recvs: &[usize],
    ) -> Result<(), Error> {
        let n = self.group.size();
        let size = size_of::<T>() as u64;
        // Peers only read it.
        let window = (self.rma).allocate(
            &self.objects,
            size_of_val(input).max(1),
            RemoteAccess::ReadOnly,
        )?;
        window.write_local(0, input)?;
        // Per peer: where its block starts (bytes), and its count.
        let mut blocks = Vec::with_capacity(2 * n as usize);
        let mut at = 0u64;
        for &c in sends {
            blocks.extend([at * size, c as u64]);
            at += c as u64;
        }
        let mut theirs = vec![0u64; 2 * n as usize];
        let twos = vec![2usize; n as usize];
        let schedule = alg::alltoallv_pairwise(n, self.me, &twos, &twos);
        let exec = Exec::new(
            Work::Schedule(schedule),
            call,
            (&blocks[..], &mut theirs[..]),
            None,
            &self.spare,
        )?;
        self.inflight.wait(exec, &self.spare)?;
        let mut mismatch = None;
        let epoch = window.lock_all(Assert::NOCHECK)?;
        let mut at = 0;
        for (peer, &count) in recvs.iter().enumerate() {
            let (start, sent) = (theirs[2 * peer], theirs[2 * peer + 1]);
            if sent != count as u64 {
                mismatch.get_or_insert(Error::sends(peer, sent, self.me, count));
            } else if count > 0 {
                epoch.get(peer as u32, start, &mut output[at..at + count])?;
            }
            at += count;
        }
        epoch.unlock()?;
        window.free()?;
        mismatch.map_or(Ok(()), Err)
    }

    /// Sends `count` elements of `input` to every group rank (blocks in rank
    /// order) and receives `count` from each into `output`
    /// (`MPI_Alltoall`).
    ///
    /// # Errors
    /// As [`Comm::gatherv`].
    pub fn alltoall<T: bytemuck::Pod + Send>(
        &self,
        input: &[T],
        output: &mut [T],
        count: usize,
    ) -> Result<(), Error> {
        let call = self.next_call();
        let counts = vec![count; self.group.size() as usize];
        self.exchange(call, input, &counts, output, &counts, true)
    }

    /// Sends `sends[r]` elements of `input` (laid end to end) to each group
    /// rank `r` and receives `recvs[r]` from each into `output`
    /// (`MPI_Alltoallv`). Its sizes differ per rank, so it runs pairwise (or
    /// the algorithm forced with [`Comm::force`]): ranks must agree on the
    /// algorithm without a message.
    ///
    /// # Errors
    /// As [`Comm::gatherv`].
    pub fn alltoallv<T: bytemuck::Pod + Send>(
        &self,
        input: &[T],
        sends: &[usize],
        output: &mut [T],
        recvs: &[usize],
    ) -> Result<(), Error> {
        let call = self.next_call();
        self.exchange(call, input, sends, output, recvs, false)
    }

    /// Starts an alltoallv (`MPI_Ialltoallv`): as [`Comm::alltoallv`],
    /// over buffers the run owns and hands back ([`Run::into_buffers`]).
    /// Never by the one-sided algorithm, which is blocking only.
    ///
    /// # Errors
    /// As [`Comm::gatherv`].
    pub fn ialltoallv<T: bytemuck::Pod + Send>(
        &self,
        input: Vec<T>,
        sends: &[usize],
        output: Vec<T>,
        recvs: &[usize],
    ) -> Result<Run<T>, Error> {
        let number = self.next_call();
        let call = self.exchange_call(number, (&input, sends), (&output, recvs), false, false)?;
        self.spawn(call, input, output)
    }

    /// Reduces every member's `input` (blocks of `counts[r]` elements laid
    /// end to end) with `op`, leaving block `r` of the result at group rank
    /// `r` (`MPI_Reduce_scatter`).
    ///
    /// # Errors
    /// As [`Comm::ireduce`].
    pub fn reduce_scatter<T: Reducible>(
        &self,
        input: &[T],
        output: &mut [T],
        counts: &[usize],
        op: Op<T>,
    ) -> Result<(), Error> {
        let number = self.next_call();
        let total = self.check_counts(counts, output.len())?;
        Self::check_len("reduce_scatter input", input.len(), total)?;
        let combine = Self::combine(&op)?;
        let (n, me) = (self.group.size(), self.me);
        let bytes = Self::average::<T>(counts);
        let shape = Shape::sized(
            Collective::ReduceScatter,
            T::NAME,
            bytes,
            op.is_commutative(),
        );
        let build = |a| {
            use algorithm::ReduceScatter;
            match a {
                ReduceScatter::Shared => Plan::Shared(shared::Shape::ReduceScatter {
                    counts: counts.to_vec(),
                }),
                ReduceScatter::Ring => Plan::Schedule(alg::reduce_scatter_ring(n, me, counts)),
                ReduceScatter::RecursiveHalving => {
                    Plan::Schedule(alg::reduce_scatter_halving(n, me, counts))
                }
                ReduceScatter::Pairwise => {
                    Plan::Schedule(alg::reduce_scatter_pairwise(n, me, counts))
                }
            }
        };
        self.prepare_and_run(
            Checked::new(number, shape, build, Some(combine)),
            input,
            output,
        )
    }
}

/// A call whose arguments were checked, its algorithm not chosen yet: its
/// number, what chooses its algorithm, how to plan it under an algorithm,
/// and its operation.
struct Checked<T, B> {
    number: u64,
    shape: Shape,
    build: B,
    combine: Option<Combine<T>>,
}

impl<T, B> Checked<T, B> {
    fn new(number: u64, shape: Shape, build: B, combine: Option<Combine<T>>) -> Checked<T, B> {
        Checked {
            number,
            shape,
            build,
            combine,
        }
    }
}

/// A call ready to run over its buffers: its number, what chose its
/// algorithm, and this rank's plan.
struct Call<T: bytemuck::Pod + Send> {
    number: u64,
    shape: Shape,
    algorithm: Algorithm,
    plan: Plan,
    combine: Option<Combine<T>>,
}

/// Monitoring times one call in this many (per Comm): enough samples for
/// its entries, few enough that a small call barely pays for them.
const MONITOR_EVERY: u64 = 32;

/// How a call runs.
enum Plan {
    /// A schedule over tagged messages (blocking or not).
    Schedule(Schedule),
    /// Through shared memory (blocking only).
    Shared(shared::Shape),
    /// The one-sided alltoallv (blocking only).
    OneSided {
        /// Elements to each rank.
        sends: Vec<usize>,
        /// Elements from each rank.
        recvs: Vec<usize>,
    },
}

/// The sum of `counts`.
///
/// # Errors
/// [`Error::BadCall`] when it overflows.
fn total(counts: &[usize]) -> Result<usize, Error> {
    counts
        .iter()
        .try_fold(0usize, |a, &c| a.checked_add(c))
        .ok_or_else(|| Error::BadCall("counts overflow".into()))
}

/// splitmix64's finaliser: every input bit reaches every output bit.
fn mix(mut h: u64) -> u64 {
    h = (h ^ (h >> 30)).wrapping_mul(0xbf58_476d_1ce4_e5b9);
    h = (h ^ (h >> 27)).wrapping_mul(0x94d0_49bb_1331_11eb);
    h ^ (h >> 31)
}
