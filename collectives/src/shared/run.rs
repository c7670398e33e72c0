//! A shared-memory call in flight: the state machine that plans each
//! step ([`Run::plan`]) and runs the steps, in its turn.

use super::steps::{self, Planner};
use super::*;

/// The member state a run works in: held by a nonblocking run, which
/// outlives the call that started it, and lent to a blocking one. A
/// reference count moved on a blocking call's path is a locked
/// instruction right after the previous call's stores into shared memory,
/// and waits for them to reach the peers (measurements:
/// `docs/measurements.md`, "Locked instructions after shared stores").
pub(crate) enum Held<'s> {
    /// A nonblocking run's.
    Owned(Arc<HostMemory>),
    /// A blocking call's.
    Lent(&'s HostMemory),
}

impl std::ops::Deref for Held<'_> {
    type Target = HostMemory;

    fn deref(&self) -> &HostMemory {
        match self {
            Held::Owned(shared) => shared,
            Held::Lent(shared) => shared,
        }
    }
}

/// A shared-memory call in flight: a state machine over its steps.
pub(crate) struct Run<'s> {
    /// Out of the run while it advances (lent to its steps by reference:
    /// no reference count moves per advance).
    shared: Option<Held<'s>>,
    shape: Shape,
    /// The Comm's number of the call (its steps are numbered from it).
    call: u64,
    ticket: u64,
    /// A blocking call's run (its `HostMemory` lent).
    blocking: bool,
    /// The call's next step (0-based within the call).
    k: usize,
    /// The step number of the step in progress (published), and how many
    /// of its operations are done.
    current: Option<u64>,
    done_ops: usize,
    /// Alltoallv: every member's counts, once read.
    counts: Vec<Vec<u64>>,
    /// The operations of its current step (planned in its turn).
    ops: Vec<Act>,
    /// The peer the last `advance` stopped at.
    blocked_on: Option<u32>,
    /// The last step in which this member lent its memory (0: none).
    lent: u64,
    finished: bool,
    gave_up: bool,
}

impl Drop for Run<'_> {
    fn drop(&mut self) {
        self.give_up();
    }
}

impl<'s> Run<'s> {
    /// Call `call` (the Comm's number of it: later calls have larger
    /// ones) of `shape`, after the calls made before it.
    pub(crate) fn new(shared: Held<'s>, shape: Shape, call: u64) -> Run<'s> {
        let ticket = shared.tickets.get();
        shared.tickets.set(ticket + 1);
        Run {
            blocking: matches!(shared, Held::Lent(_)),
            shared: Some(shared),
            shape,
            call,
            ticket,
            k: 0,
            current: None,
            done_ops: 0,
            counts: Vec::new(),
            ops: Vec::new(),
            blocked_on: None,
            lent: 0,
            finished: false,
            gave_up: false,
        }
    }

    /// Elements of scratch it needs (reductions read peers' pieces
    /// there) for an input of `input` elements.
    pub(crate) fn scratch<T>(&self, input: usize) -> usize {
        let per = CELL / size_of::<T>().max(1);
        match self.shape {
            // What it reduces, then what it combines in.
            _ if (self.shared.as_deref())
                .and_then(|shared| self.accumulator::<T>(shared, input))
                .is_some() =>
            {
                2 * per.min(input)
            }
            Shape::Reduce { .. } | Shape::ReduceScatter { .. } => per.min(input),
            _ => 0,
        }
    }

    /// The elements at the start of its scratch that a member off the
    /// root of a split reduce of `input` elements ([`HostMemory::splits`])
    /// reduces its blocks into, standing for its output (a block of a
    /// chunk is at most a cell); `None` for any other member or call.
    fn accumulator<T>(&self, shared: &HostMemory, input: usize) -> Option<usize> {
        match self.shape {
            Shape::Reduce { root: Some(r), .. }
                if r != shared.me && shared.splits(Some(r), input * size_of::<T>()) =>
            {
                Some((CELL / size_of::<T>().max(1)).min(input))
            }
            _ => None,
        }
    }

    /// Where the run is (step of the call, operations done): changes
    /// whenever it moves on.
    pub(crate) fn mark(&self) -> u64 {
        ((self.k as u64) << 32) | (self.done_ops as u64) << 1 | u64::from(self.current.is_some())
    }

    /// Where a piece of `elements` is published ([`steps::place`]).
    fn place<T>(&self, shared: &HostMemory, elements: usize) -> Place {
        steps::place::<T>(steps::lendable(&self.shape), shared, elements)
    }

    /// Whether peers may still read this member's memory (it lent pieces
    /// and the call has not finished): its buffers must then outlive it.
    pub(crate) fn lends(&self) -> bool {
        self.lent > 0 && !self.finished
    }

    /// Gives up the run after an error, or unfinished when dropped (a
    /// timeout, a nonblocking call dropped): [`HostMemory::abandon`]s its
    /// call when it is its turn (at once, or once the calls before it are
    /// done), so that this member's later calls go on. A run given up
    /// fails if advanced again.
    fn give_up(&mut self) {
        if self.finished || self.gave_up {
            return;
        }
        self.gave_up = true;
        let Some(shared) = &self.shared else {
            return;
        };
        // Whose turn it is, read under the lock that passing a turn holds:
        // a turn passed meanwhile (by another thread) sees this ticket.
        let mut skipped = shared.skipped.lock();
        if shared.serving.get() != self.ticket {
            skipped.push((self.ticket, self.call));
            return;
        }
        drop(skipped);
        shared.abandon(self.call);
        shared.pass_turn(self.ticket, self.blocking);
    }

    /// The member the run was last blocked on (group rank).
    pub(crate) fn waiting_for(&self) -> Option<u32> {
        self.blocked_on
    }

    /// Goes as far as the peers allow; whether the call is done.
    ///
    /// # Errors
    /// A dead peer; window errors; [`Error::BadCall`] when the members'
    /// alltoallv counts disagree.
    pub(crate) fn advance<T: bytemuck::Pod>(
        &mut self,
        input: &[T],
        output: &mut [T],
        scratch: &mut [T],
        combine: Option<&Combine<T>>,
    ) -> Result<bool, Error> {
        if self.gave_up {
            return Err(Error::BadCall("advancing a call that failed".into()));
        }
        let Some(shared) = self.shared.take() else {
            return Err(Error::BadCall("advancing a call from within itself".into()));
        };
        let result = self.go_on(&shared, input, output, scratch, combine);
        self.shared = Some(shared);
        if result.is_err() {
            self.give_up();
            if self.lent > 0 {
                // The error hands what it lent back to the caller: peers
                // still reading it (an alltoallv's members whose counts
                // match this one's go on) finish first, and peers writing
                // into its output see it gave up before their next write.
                if let Some(shared) = &self.shared {
                    shared.outlived(self.lent);
                }
            }
        }
        result
    }

    /// [`Run::advance`] but for what an error leaves.
    fn go_on<T: bytemuck::Pod>(
        &mut self,
        shared: &HostMemory,
        input: &[T],
        output: &mut [T],
        scratch: &mut [T],
        combine: Option<&Combine<T>>,
    ) -> Result<bool, Error> {
        if self.finished {
            return Ok(true);
        }
        shared.ep.note_busy();
        if shared.serving.get() != self.ticket {
            return Ok(false);
        }
        let (output, scratch) = match self.accumulator::<T>(shared, input.len()) {
            Some(len) => scratch.split_at_mut(len),
            None => (output, scratch),
        };
        loop {
            let s = match self.current {
                Some(s) => s,
                None => {
                    let planned = self.plan::<T>(shared, input.len(), output.len());
                    check_first(&mut self.ops);
                    let Some(publish) = planned else {
                        // What this member lent is read before the call
                        // returns (its buffers are the caller's again).
                        if let Some(p) = shared.unreleased(self.lent)? {
                            self.blocked_on = Some(p);
                            return Ok(false);
                        }
                        self.finished = true;
                        shared.pass_turn(self.ticket, self.blocking);
                        return Ok(true);
                    };
                    let s = step_of(self.call, self.k)?;
                    if publish != Publish::Nothing {
                        // Nobody still reads the cell's previous contents.
                        if let Some(p) = shared.unreleased(shared.last_in(s))? {
                            self.blocked_on = Some(p);
                            return Ok(false);
                        }
                        shared.publishing(s);
                    }
                    let place = match publish {
                        Publish::Nothing => None,
                        Publish::Input(r) => {
                            let place = self.place::<T>(shared, r.len());
                            shared.publish(s, &input[r], place, size_of_val(input))?;
                            Some(place)
                        }
                        Publish::Output(r) => {
                            let place = self.place::<T>(shared, r.len());
                            shared.publish(s, &output[r], place, size_of_val(output))?;
                            Some(place)
                        }
                        Publish::Reduced(r) => {
                            let place = HostMemory::unlent::<T>(r.len());
                            shared.publish(s, &output[r], place, size_of_val(input))?;
                            Some(place)
                        }
                        Publish::Split(reduced) => {
                            shared.put(s, input, (Place::Lent, 0))?;
                            let piece = reduced.map_or(&output[..0], |r| &output[r]);
                            let place = HostMemory::unlent::<T>(piece.len());
                            shared.publish(s, piece, place, size_of_val(input))?;
                            Some(Place::Lent)
                        }
                        Publish::Counts => {
                            // This member's, set when the step was planned.
                            let counts = &self.counts[shared.me as usize];
                            let beside = shared.beside_counts(size_of_val(input));
                            if let Some(at) = beside {
                                shared.put(s, input, at)?;
                            }
                            let place = counts_place(counts.len());
                            shared.publish(s, counts, place, size_of_val(&counts[..]))?;
                            beside.map(|(place, _)| place)
                        }
                        Publish::Destination => {
                            shared.publish(s, &output[..], Place::Lent, size_of_val(input))?;
                            Some(Place::Lent)
                        }
                    };
                    if place == Some(Place::Lent) {
                        self.lent = s;
                    }
                    shared.arrive(s)?;
                    self.current = Some(s);
                    self.done_ops = 0;
                    s
                }
            };
            while let Some(op) = self.ops.get(self.done_ops).cloned() {
                let peer = match &op {
                    Act::Wait(p)
                    | Act::Read { peer: p, .. }
                    | Act::Counts { peer: p, .. }
                    | Act::Check { peer: p, .. }
                    | Act::Push { peer: p, .. } => Some(*p),
                    Act::Local { .. } | Act::LocalFirst { .. } | Act::Uncached { .. } => None,
                };
                if let Some(p) = peer {
                    if !shared.arrived(p, s)? {
                        self.blocked_on = Some(p);
                        return Ok(false);
                    }
                }
                self.apply(shared, op, s, input, output, scratch, combine)?;
                self.done_ops += 1;
            }
            shared.store(RELEASED, s)?;
            self.current = None;
            self.k += 1;
            if self.k == 1 {
                self.check_counts(shared)?;
            }
        }
    }

    /// Carries out `op` of step `s`.
    #[allow(clippy::too_many_arguments)]
    fn apply<T: bytemuck::Pod>(
        &mut self,
        shared: &HostMemory,
        op: Act,
        s: u64,
        input: &[T],
        output: &mut [T],
        scratch: &mut [T],
        combine: Option<&Combine<T>>,
    ) -> Result<(), Error> {
        let combine =
            || combine.ok_or_else(|| Error::BadCall("a reduction without an operation".into()));
        match op {
            Act::Wait(_) => {}
            Act::Read {
                peer,
                at,
                into,
                combine: false,
                place,
                whole,
            } => shared.read_piece(peer, s, (at, place, whole), &mut output[into])?,
            Act::Read {
                peer,
                at,
                into,
                place,
                whole,
                ..
            } => {
                let theirs = &mut scratch[..into.len()];
                shared.read_piece(peer, s, (at, place, whole), theirs)?;
                combine()?.call(&mut output[into], theirs, false);
            }
            Act::Local {
                from,
                into,
                combine: false,
            } => output[into].copy_from_slice(&input[from]),
            Act::Local { from, into, .. } => {
                combine()?.call(&mut output[into], &input[from], false)
            }
            Act::Uncached { from, into } => onesided_fabric::uncached::copy(
                bytemuck::cast_slice_mut(&mut output[into]),
                bytemuck::cast_slice(&input[from]),
            ),
            Act::LocalFirst { from, into } => {
                combine()?.call(&mut output[into], &input[from], true)
            }
            Act::Check { peer, whole, total } => match total {
                None => drop(shared.contribution(peer, s, whole)?),
                Some(total) => drop(shared.destination(peer, s, (whole, total))?),
            },
            Act::Push {
                peer,
                at,
                from,
                whole,
                total,
            } => shared.push(peer, s, (at, whole, total), &input[from])?,
            Act::Counts { peer: p, into } => {
                let mut theirs = vec![0u64; shared.n as usize];
                let place = counts_place(theirs.len());
                let whole = size_of_val(&theirs[..]);
                shared.read_piece(p, s, (0, place, whole), &mut theirs)?;
                // This member's block, when p put its input beside its
                // counts and they match (else `check_counts` fails the
                // call once the step is released).
                let me = shared.me as usize;
                let total = theirs.iter().sum::<u64>() as usize * size_of::<T>();
                let beside = shared.beside_counts(total);
                if let (Some((place, at)), true) = (beside, theirs[me] == into.len() as u64) {
                    let from = theirs[..me].iter().sum::<u64>() as usize * size_of::<T>();
                    shared.read_piece(p, s, (at + from, place, whole), &mut output[into])?;
                }
                self.counts[p as usize] = theirs;
            }
        }
        Ok(())
    }

    /// Plans the call's step `self.k` into its list of operations (in
    /// its turn); what it publishes,
    /// or `None` when the call has no more steps.
    fn plan<T>(&mut self, shared: &HostMemory, input: usize, output: usize) -> Option<Publish> {
        let mut ops = std::mem::take(&mut self.ops);
        let planned = self.plan_into::<T>(shared, &mut ops, input, output);
        self.ops = ops;
        planned
    }

    /// [`Run::plan`] into `ops`: the shape's [`Planner`].
    fn plan_into<T>(
        &mut self,
        shared: &HostMemory,
        ops: &mut Vec<Act>,
        input: usize,
        output: usize,
    ) -> Option<Publish> {
        let bytes = input * size_of::<T>();
        let planner = Planner::<T>::new(shared, &self.shape, self.k, (input, output), ops);
        match &self.shape {
            Shape::Barrier => planner.barrier(),
            Shape::Bcast { root } => planner.bcast(*root),
            Shape::Reduce { root, .. } if shared.splits(*root, bytes) => {
                planner.reduce_split(*root)
            }
            Shape::Reduce { root, .. } => planner.reduce_pieces(*root),
            Shape::Gather { root, counts } => planner.gather(*root, counts),
            Shape::Scatter { root, counts } => planner.scatter(*root, counts),
            Shape::Alltoall { sends, recvs } => planner.alltoall((sends, recvs), &mut self.counts),
            Shape::ReduceScatter { counts } if shared.lends_whole(bytes) => {
                planner.reduce_scatter_whole(counts)
            }
            Shape::ReduceScatter { counts } => planner.reduce_scatter_pieces(counts),
        }
    }

    /// Checks the alltoallv counts (once read) against this member's
    /// receive counts.
    ///
    /// # Errors
    /// [`Error::BadCall`] naming the member that disagrees.
    fn check_counts(&self, shared: &HostMemory) -> Result<(), Error> {
        let Shape::Alltoall { recvs, .. } = &self.shape else {
            return Ok(());
        };
        let me = shared.me as usize;
        for (p, theirs) in self.counts.iter().enumerate() {
            if let Some(&c) = theirs.get(me) {
                if c as usize != recvs[p] {
                    return Err(Error::sends(p, c, shared.me, recvs[p]));
                }
            }
        }
        Ok(())
    }
}
