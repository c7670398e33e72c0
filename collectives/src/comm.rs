//! Collectives over a group: [`Comm`], its blocking calls and the
//! nonblocking forms `ibarrier`, `ibcast`, `ireduce`, `iallreduce` and
//! `iallgatherv`, which return a [`Run`] request (first round posted at
//! once; later rounds when it is tested). A `Run` dropped before it
//! completes leaves the other members' call to fail by timeout.
//!
//! Every member calls the same collectives in the same order (as MPI
//! requires), with matching counts. Each call picks its algorithm from the
//! profile loaded at creation (`ONESIDED_PROFILE`, filtered to the group's
//! geometry) or the built-in defaults. Every rank must pick the same
//! algorithm, so choices come from that loaded profile alone, which is the
//! same everywhere when the ranks read the same file; what the calls
//! measure (monitoring) and the algorithms that fail here are recorded in
//! [`Comm::observed`], for `onesided-tune` and for a later agreement step,
//! and do not change this run's choices. Decision written here because the
//! spec leaves open how ranks agree on updates.

use std::cell::{Cell, Ref, RefCell};
use std::time::Instant;

use onesided_fabric::Endpoint;
use onesided_rma::{Group, Request};

use crate::algorithms as alg;
use crate::op::{Op, Reducible};
use crate::profile::{Collective, Geometry};
use crate::run::{Combine, Run};
use crate::schedule::Schedule;
use crate::select::Selector;
use crate::Error;

/// Collectives over one group, for this process.
pub struct Comm<'e> {
    ep: &'e Endpoint,
    group: Group,
    me: u32,
    geometry: Geometry,
    choices: Selector,
    observed: RefCell<Selector>,
    calls: Cell<u64>,
    /// What tells this Comm's messages from others': the group, the
    /// Comm's number among this process's Comms, and the selection source
    /// (so ranks that loaded different profiles fail fast instead of
    /// choosing different algorithms).
    context: u64,
    warning: Option<String>,
    /// Algorithms forced per collective (tuning, tests).
    forced: RefCell<std::collections::HashMap<Collective, &'static str>>,
}

impl<'e> Comm<'e> {
    /// Collectives over `group` (which this process must belong to), with
    /// the profile of `ONESIDED_PROFILE`; a bad one gives one warning on
    /// standard error per process (also in [`Comm::warning`]) and the
    /// built-in defaults. No message.
    ///
    /// # Errors
    /// [`Error::BadCall`] when this process is not a member.
    pub fn new(ep: &'e Endpoint, group: Group) -> Result<Comm<'e>, Error> {
        let me = group.group_rank(ep.rank()).ok_or_else(|| {
            Error::BadCall(format!("rank {} is not a member of the group", ep.rank()))
        })?;
        let mut per_host = std::collections::HashMap::new();
        for &r in group.members() {
            *per_host.entry(ep.host_of(r)).or_insert(0u32) += 1;
        }
        let geometry = Geometry {
            ranks: group.size(),
            ranks_per_host: per_host.values().copied().max().unwrap_or(1),
        };
        let (choices, warning) = Selector::from_env(geometry);
        // Members create their Comms in the same order (as MPI requires of
        // communicator creation), so this number agrees across them.
        static COMMS: std::sync::atomic::AtomicU64 = std::sync::atomic::AtomicU64::new(0);
        let nth = COMMS.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
        let source = mix(choices
            .profile()
            .to_text()
            .bytes()
            .fold(0u64, |h, b| h.rotate_left(5) ^ u64::from(b)));
        let context = mix(group.key() ^ mix(nth.wrapping_add(1)) ^ source);
        if let Some(w) = &warning {
            // One warning per process, however many groups it makes.
            static WARNED: std::sync::Once = std::sync::Once::new();
            WARNED.call_once(|| eprintln!("{w}"));
        }
        Ok(Comm {
            ep,
            me,
            geometry,
            observed: RefCell::new(choices.clone()),
            choices,
            group,
            calls: Cell::new(0),
            context,
            warning,
            forced: RefCell::default(),
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
    /// its failed algorithms removed (monitoring).
    pub fn observed(&self) -> Ref<'_, Selector> {
        self.observed.borrow()
    }

    /// Makes every later call of `collective` use `algorithm` (`None`:
    /// choose again), as `onesided-tune` and the tests do. Every member
    /// must force the same. A non-commutative reduction still gets an
    /// algorithm that keeps the rank order.
    ///
    /// # Errors
    /// [`Error::BadCall`] for an algorithm `collective` does not have.
    pub fn force(&self, collective: Collective, algorithm: Option<&str>) -> Result<(), Error> {
        let mut forced = self.forced.borrow_mut();
        match algorithm {
            None => {
                forced.remove(&collective);
            }
            Some(name) => {
                let known = crate::select::algorithms(collective)
                    .iter()
                    .find(|a| **a == name)
                    .ok_or_else(|| {
                        Error::BadCall(format!("{} has no algorithm {name:?}", collective.name()))
                    })?;
                forced.insert(collective, known);
            }
        }
        Ok(())
    }

    /// The algorithm a call would use (the same on every rank).
    ///
    /// # Errors
    /// [`Error::NoAlgorithm`] when none is left.
    pub fn algorithm(
        &self,
        collective: Collective,
        element: &str,
        bytes: u64,
        commutative: bool,
    ) -> Result<&'static str, Error> {
        if let Some(a) = self.forced.borrow().get(&collective) {
            if commutative || !crate::select::reorders(collective, a) {
                return Ok(a);
            }
        }
        self.choices
            .choose(collective, element, bytes, commutative)
            .ok_or(Error::NoAlgorithm(collective.name()))
    }

    fn start<'a, T: bytemuck::Pod>(
        &'a self,
        call: u64,
        schedule: Schedule,
        input: &'a [T],
        output: &'a mut [T],
        combine: Option<Combine<'a, T>>,
    ) -> Result<Run<'a, T>, Error> {
        let mut run = Run::new(self.ep, &self.group, schedule, call, input, output, combine)?;
        // Post the first round now: peers waiting on it need not wait for
        // this rank's first test.
        run.test()?;
        Ok(run)
    }

    /// Waits for `run`, recording its time (or its failure) under
    /// `algorithm`.
    fn finish<T: bytemuck::Pod>(
        &self,
        mut run: Run<'_, T>,
        collective: Collective,
        algorithm: &str,
        element: &str,
        bytes: u64,
    ) -> Result<(), Error> {
        let start = Instant::now();
        match run.wait() {
            Ok(()) => {
                let us = start.elapsed().as_secs_f64() * 1e6;
                self.observed
                    .borrow_mut()
                    .observe(collective, algorithm, element, bytes, us);
                Ok(())
            }
            Err(e) => {
                self.observed.borrow_mut().failed(collective, algorithm);
                Err(e.into())
            }
        }
    }

    /// Starts a barrier.
    ///
    /// # Errors
    /// [`Error::NoAlgorithm`]; fabric errors posting its first round.
    pub fn ibarrier(&self) -> Result<Run<'_, u8>, Error> {
        let call = self.next_call();
        self.algorithm(Collective::Barrier, "bytes", 0, true)?;
        self.start(
            call,
            alg::barrier_dissemination(self.group.size(), self.me),
            &[],
            &mut [],
            None,
        )
    }

    /// Barrier.
    ///
    /// # Errors
    /// As [`Comm::ibarrier`]; a dead member or a timeout while waiting.
    pub fn barrier(&self) -> Result<(), Error> {
        // (ibarrier takes the call number.)
        let run = self.ibarrier()?;
        self.finish(run, Collective::Barrier, "dissemination", "bytes", 0)
    }

    fn bcast_schedule<T>(
        &self,
        root: u32,
        count: usize,
    ) -> Result<(Schedule, &'static str), Error> {
        self.check_root(root)?;
        let bytes = (count * size_of::<T>()) as u64;
        let a = self.algorithm(Collective::Bcast, "bytes", bytes, true)?;
        let (n, me) = (self.group.size(), self.me);
        Ok((
            match a {
                "linear" => alg::bcast_linear(n, me, root, count),
                "scatter_allgather" => alg::bcast_scatter_allgather(n, me, root, count),
                _ => alg::bcast_binomial(n, me, root, count),
            },
            a,
        ))
    }

    /// The number of this process's next call on this Comm, taken first
    /// in every collective (before any check), so that a call refused on
    /// one rank leaves every rank's numbering in step; mixed with the
    /// Comm's context into message tags.
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

    /// Starts broadcasting `buf` from group rank `root` (every member
    /// passes a buffer of the same length).
    ///
    /// # Errors
    /// [`Error::BadCall`] for a root outside the group; as
    /// [`Comm::ibarrier`].
    pub fn ibcast<'a, T: bytemuck::Pod>(
        &'a self,
        root: u32,
        buf: &'a mut [T],
    ) -> Result<Run<'a, T>, Error> {
        let call = self.next_call();
        let (s, _) = self.bcast_schedule::<T>(root, buf.len())?;
        self.start(call, s, &[], buf, None)
    }

    /// Broadcasts `buf` from group rank `root`.
    ///
    /// # Errors
    /// As [`Comm::ibcast`], and waiting errors.
    pub fn bcast<T: bytemuck::Pod>(&self, root: u32, buf: &mut [T]) -> Result<(), Error> {
        let call = self.next_call();
        let bytes = std::mem::size_of_val(buf) as u64;
        let (s, a) = self.bcast_schedule::<T>(root, buf.len())?;
        let run = self.start(call, s, &[], buf, None)?;
        self.finish(run, Collective::Bcast, a, "bytes", bytes)
    }

    fn combine<'a, T: Reducible>(op: &Op<T>) -> Result<Combine<'a, T>, Error> {
        op.check()?;
        let op = op.clone();
        Ok(Box::new(move |inout: &mut [T], input: &[T]| {
            op.apply(inout, input)
        }))
    }

    fn reduce_schedule<T: Reducible>(
        &self,
        collective: Collective,
        root: u32,
        count: usize,
        op: &Op<T>,
    ) -> Result<(Schedule, &'static str), Error> {
        let (n, me) = (self.group.size(), self.me);
        let commutative = op.is_commutative();
        let a = self.algorithm(
            collective,
            T::NAME,
            (count * size_of::<T>()) as u64,
            commutative,
        )?;
        Ok((
            match (collective, a) {
                (Collective::Reduce, "linear") => alg::reduce_linear(n, me, root, count),
                (Collective::Reduce, "reduce_scatter_gather") => {
                    alg::reduce_scatter_gather(n, me, root, count)
                }
                (Collective::Reduce, _) => alg::reduce_binomial(n, me, root, count, commutative),
                (_, "ring") => alg::allreduce_ring(n, me, count),
                (_, "rabenseifner") => alg::allreduce_rabenseifner(n, me, count),
                _ => alg::allreduce_recursive_doubling(n, me, count),
            },
            a,
        ))
    }

    /// Starts reducing every member's `input` with `op` into `output` at
    /// group rank `root` (`output` is only used there).
    ///
    /// # Errors
    /// [`Error::BadCall`] for a bad root or buffer lengths;
    /// [`Error::BadOp`] for an operation the element type lacks.
    pub fn ireduce<'a, T: Reducible>(
        &'a self,
        root: u32,
        input: &'a [T],
        output: &'a mut [T],
        op: &Op<T>,
    ) -> Result<Run<'a, T>, Error> {
        let call = self.next_call();
        self.check_root(root)?;
        if self.me == root && output.len() != input.len() {
            return Err(Error::BadCall(format!(
                "reduce output of {} elements for an input of {}",
                output.len(),
                input.len()
            )));
        }
        let (s, _) = self.reduce_schedule(Collective::Reduce, root, input.len(), op)?;
        self.start(call, s, input, output, Some(Self::combine(op)?))
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
        op: &Op<T>,
    ) -> Result<(), Error> {
        let call = self.next_call();
        self.check_root(root)?;
        if self.me == root && output.len() != input.len() {
            return Err(Error::BadCall(format!(
                "reduce output of {} elements for an input of {}",
                output.len(),
                input.len()
            )));
        }
        let bytes = std::mem::size_of_val(input) as u64;
        let (s, a) = self.reduce_schedule(Collective::Reduce, root, input.len(), op)?;
        let run = self.start(call, s, input, output, Some(Self::combine(op)?))?;
        self.finish(run, Collective::Reduce, a, T::NAME, bytes)
    }

    /// Starts reducing every member's `input` with `op` into every
    /// member's `output`.
    ///
    /// # Errors
    /// As [`Comm::ireduce`].
    pub fn iallreduce<'a, T: Reducible>(
        &'a self,
        input: &'a [T],
        output: &'a mut [T],
        op: &Op<T>,
    ) -> Result<Run<'a, T>, Error> {
        let call = self.next_call();
        if output.len() != input.len() {
            return Err(Error::BadCall(format!(
                "allreduce output of {} elements for an input of {}",
                output.len(),
                input.len()
            )));
        }
        let (s, _) = self.reduce_schedule(Collective::Allreduce, 0, input.len(), op)?;
        self.start(call, s, input, output, Some(Self::combine(op)?))
    }

    /// Reduces every member's `input` with `op` into every `output`.
    ///
    /// # Errors
    /// As [`Comm::ireduce`], and waiting errors.
    pub fn allreduce<T: Reducible>(
        &self,
        input: &[T],
        output: &mut [T],
        op: &Op<T>,
    ) -> Result<(), Error> {
        let call = self.next_call();
        if output.len() != input.len() {
            return Err(Error::BadCall(format!(
                "allreduce output of {} elements for an input of {}",
                output.len(),
                input.len()
            )));
        }
        let bytes = std::mem::size_of_val(input) as u64;
        let (s, a) = self.reduce_schedule(Collective::Allreduce, 0, input.len(), op)?;
        let run = self.start(call, s, input, output, Some(Self::combine(op)?))?;
        self.finish(run, Collective::Allreduce, a, T::NAME, bytes)
    }

    /// Gathers every member's `input` (`counts[r]` elements from group
    /// rank `r`) into `output` at `root`, in rank order (`MPI_Gatherv`).
    ///
    /// # Errors
    /// [`Error::BadCall`] when `counts` does not have one count per member
    /// or the buffers do not match it; waiting errors.
    pub fn gatherv<T: bytemuck::Pod>(
        &self,
        root: u32,
        input: &[T],
        output: &mut [T],
        counts: &[usize],
    ) -> Result<(), Error> {
        let call = self.next_call();
        self.check_root(root)?;
        self.check_counts(counts, input.len())?;
        if self.me == root && output.len() != counts.iter().sum::<usize>() {
            return Err(Error::BadCall(format!(
                "gatherv output of {} elements for counts summing to {}",
                output.len(),
                counts.iter().sum::<usize>()
            )));
        }
        let bytes = Self::average::<T>(counts);
        let a = self.algorithm(Collective::Gather, "bytes", bytes, true)?;
        let run = self.start(
            call,
            if a == "linear" {
                alg::gatherv_linear(self.group.size(), self.me, root, counts)
            } else {
                alg::gatherv_binomial(self.group.size(), self.me, root, counts)
            },
            input,
            output,
            None,
        )?;
        self.finish(run, Collective::Gather, a, "bytes", bytes)
    }

    /// Scatters `input` at `root` (`counts[r]` elements to group rank `r`)
    /// into every member's `output` (`MPI_Scatterv`).
    ///
    /// # Errors
    /// As [`Comm::gatherv`].
    pub fn scatterv<T: bytemuck::Pod>(
        &self,
        root: u32,
        input: &[T],
        output: &mut [T],
        counts: &[usize],
    ) -> Result<(), Error> {
        let call = self.next_call();
        self.check_root(root)?;
        self.check_counts(counts, output.len())?;
        if self.me == root && input.len() != counts.iter().sum::<usize>() {
            return Err(Error::BadCall(format!(
                "scatterv input of {} elements for counts summing to {}",
                input.len(),
                counts.iter().sum::<usize>()
            )));
        }
        let bytes = Self::average::<T>(counts);
        let a = self.algorithm(Collective::Scatter, "bytes", bytes, true)?;
        let run = self.start(
            call,
            if a == "linear" {
                alg::scatterv_linear(self.group.size(), self.me, root, counts)
            } else {
                alg::scatterv_binomial(self.group.size(), self.me, root, counts)
            },
            input,
            output,
            None,
        )?;
        self.finish(run, Collective::Scatter, a, "bytes", bytes)
    }

    /// The average bytes per rank of `counts`: a size every rank computes
    /// alike (selection must agree everywhere without a message).
    fn average<T>(counts: &[usize]) -> u64 {
        (counts.iter().sum::<usize>() * size_of::<T>() / counts.len().max(1)) as u64
    }

    /// Sends `count` elements of `input` to every group rank (blocks in rank
    /// order) and receives `count` from each into `output`
    /// (`MPI_Alltoall`).
    ///
    /// # Errors
    /// As [`Comm::gatherv`].
    pub fn alltoall<T: bytemuck::Pod>(
        &self,
        input: &[T],
        output: &mut [T],
        count: usize,
    ) -> Result<(), Error> {
        let call = self.next_call();
        let n = self.group.size() as usize;
        let total = count
            .checked_mul(n)
            .ok_or_else(|| Error::BadCall(format!("alltoall of {count} per rank overflows")))?;
        if input.len() != total || output.len() != total {
            return Err(Error::BadCall(format!(
                "alltoall of {count} per rank needs {} elements each way, got {} and {}",
                count * n,
                input.len(),
                output.len()
            )));
        }
        let counts = vec![count; n];
        let bytes = (count * size_of::<T>()) as u64;
        let a = self.algorithm(Collective::Alltoall, "bytes", bytes, true)?;
        let s = match a {
            "linear" => alg::alltoallv_linear(self.group.size(), self.me, &counts, &counts),
            _ => alg::alltoallv_pairwise(self.group.size(), self.me, &counts, &counts),
        };
        let run = self.start(call, s, input, output, None)?;
        self.finish(run, Collective::Alltoall, a, "bytes", bytes)
    }

    fn check_counts(&self, counts: &[usize], mine: usize) -> Result<(), Error> {
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
        Ok(())
    }

    /// Starts gathering every member's `input` (`counts[r]` elements from
    /// rank `r`) into every `output`, in rank order (`MPI_Iallgatherv`).
    ///
    /// # Errors
    /// As [`Comm::gatherv`].
    pub fn iallgatherv<'a, T: bytemuck::Pod>(
        &'a self,
        input: &'a [T],
        output: &'a mut [T],
        counts: &[usize],
    ) -> Result<Run<'a, T>, Error> {
        let call = self.next_call();
        let (s, _) = self.allgatherv_schedule(input, output, counts)?;
        self.start(call, s, input, output, None)
    }

    fn allgatherv_schedule<T: bytemuck::Pod>(
        &self,
        input: &[T],
        output: &[T],
        counts: &[usize],
    ) -> Result<(Schedule, &'static str), Error> {
        self.check_counts(counts, input.len())?;
        if output.len() != counts.iter().sum::<usize>() {
            return Err(Error::BadCall(format!(
                "allgatherv output of {} elements for counts summing to {}",
                output.len(),
                counts.iter().sum::<usize>()
            )));
        }
        let bytes = Self::average::<T>(counts);
        let a = self.algorithm(Collective::Allgather, "bytes", bytes, true)?;
        let (n, me) = (self.group.size(), self.me);
        Ok((
            match a {
                "ring" => alg::allgatherv_ring(n, me, counts),
                "bruck" => alg::allgatherv_bruck(n, me, counts),
                _ => alg::allgatherv_recursive_doubling(n, me, counts),
            },
            a,
        ))
    }

    /// Gathers every member's `input` into every `output` (`MPI_Allgatherv`).
    ///
    /// # Errors
    /// As [`Comm::gatherv`].
    pub fn allgatherv<T: bytemuck::Pod>(
        &self,
        input: &[T],
        output: &mut [T],
        counts: &[usize],
    ) -> Result<(), Error> {
        let call = self.next_call();
        let bytes = Self::average::<T>(counts);
        let (s, a) = self.allgatherv_schedule(input, output, counts)?;
        let run = self.start(call, s, input, output, None)?;
        self.finish(run, Collective::Allgather, a, "bytes", bytes)
    }

    /// Sends `sends[r]` elements of `input` (laid end to end) to each group
    /// rank `r` and receives `recvs[r]` from each into `output`
    /// (`MPI_Alltoallv`). Its sizes differ per rank, so it runs pairwise (or
    /// the algorithm forced with [`Comm::force`]): ranks must agree on the
    /// algorithm without a message.
    ///
    /// # Errors
    /// As [`Comm::gatherv`].
    pub fn alltoallv<T: bytemuck::Pod>(
        &self,
        input: &[T],
        sends: &[usize],
        output: &mut [T],
        recvs: &[usize],
    ) -> Result<(), Error> {
        let call = self.next_call();
        let n = self.group.size() as usize;
        if sends.len() != n
            || recvs.len() != n
            || input.len() != sends.iter().sum::<usize>()
            || output.len() != recvs.iter().sum::<usize>()
        {
            return Err(Error::BadCall(
                "alltoallv counts do not match the group or the buffers".into(),
            ));
        }
        // Counts differ per rank here, and every rank must choose the same
        // algorithm without a message: pairwise, unless forced.
        let bytes = std::mem::size_of_val(input) as u64 / n.max(1) as u64;
        let a = self
            .forced
            .borrow()
            .get(&Collective::Alltoall)
            .copied()
            .unwrap_or("pairwise");
        let s = match a {
            "linear" => alg::alltoallv_linear(self.group.size(), self.me, sends, recvs),
            _ => alg::alltoallv_pairwise(self.group.size(), self.me, sends, recvs),
        };
        let run = self.start(call, s, input, output, None)?;
        self.finish(run, Collective::Alltoall, a, "bytes", bytes)
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
        op: &Op<T>,
    ) -> Result<(), Error> {
        let call = self.next_call();
        self.check_counts(counts, output.len())?;
        if input.len() != counts.iter().sum::<usize>() {
            return Err(Error::BadCall(format!(
                "reduce_scatter input of {} elements for counts summing to {}",
                input.len(),
                counts.iter().sum::<usize>()
            )));
        }
        let bytes = Self::average::<T>(counts);
        let a = self.algorithm(
            Collective::ReduceScatter,
            T::NAME,
            bytes,
            op.is_commutative(),
        )?;
        let s = match a {
            "ring" => alg::reduce_scatter_ring(self.group.size(), self.me, counts),
            _ => alg::reduce_scatter_pairwise(self.group.size(), self.me, counts),
        };
        let run = self.start(call, s, input, output, Some(Self::combine(op)?))?;
        self.finish(run, Collective::ReduceScatter, a, T::NAME, bytes)
    }
}

/// splitmix64's finaliser: every input bit reaches every output bit.
fn mix(mut h: u64) -> u64 {
    h = (h ^ (h >> 30)).wrapping_mul(0xbf58_476d_1ce4_e5b9);
    h = (h ^ (h >> 27)).wrapping_mul(0x94d0_49bb_1331_11eb);
    h ^ (h >> 31)
}
