//! The algorithm `shared`: collectives through shared memory, for groups
//! whose members are all on one host (as MPICH's shared-memory
//! collectives do), blocking and nonblocking.
//!
//! Each member has a part of a window made over [`Rma`] at the Comm's
//! first such call; on one host that part is shared memory, which the
//! peers map ([`Window::mapped`]), so every access below is a load, a
//! store or a copy, outside any RMA epoch: a `released` counter, a data
//! slot of [`SLOT`] bytes in `CELLS` cells, and a header per cell (a pair
//! of cache lines) holding the step last published in it, the bytes of
//! the publisher's whole contribution to the call (which every reader
//! checks against what it expects: members that pass counts that do not
//! match get an error, not each other's stale bytes; the algorithms over
//! messages do not check; the check costs a small call a few ns, see
//! `docs/measurements.md`, "Contribution check") and, for a piece of up to
//! `INLINE` bytes, the piece itself (so a small piece travels with its
//! flag, in the line pair the CPU fetches together). Counters and flags
//! are polled with plain loads, so a line stays shared until its owner
//! writes it. A call is a sequence of *steps*, numbered alike on every
//! member: calls run their steps in the
//! order they were made (each takes a ticket; a call waits for its turn),
//! each call's steps follow from what the members agree on (lengths,
//! counts), and call `c` of the Comm numbers them from `c * CALL_STEPS +
//! 1` ([`step_of`]). In step `s`:
//!
//! 1. a member that publishes waits until every peer's `released` is at
//!    least the step it last published in the cell of `s` ([`cell_of`]:
//!    nobody still reads that cell), copies its piece into the cell (or
//!    its header);
//! 2. every member stores `s` in the flag of that cell (arrived);
//! 3. it reads what it needs from the peers' cells of step `s`, each after
//!    that peer's flag of the cell reached `s`;
//! 4. it stores `released = s`.
//!
//! A member whose call fails (counts that do not match, a dead peer, a
//! timeout) or whose nonblocking call is dropped unfinished gives it up:
//! it releases every step the call could have and passes the turn to its
//! next call. The members meet again in their next call, even where the
//! failed one took them different numbers of steps (a broadcast's root
//! publishes all its pieces, its readers stop at the first), since that
//! call's steps are numbered from its call number.
//!
//! Contributions larger than a cell go in pieces of [`CELL`] bytes, one
//! step each (a broadcast or a reduction to one root up to a cell goes in
//! pieces of 32 KiB, [`PIECE`]; a gather whose every contribution is
//! lent, below, lends each whole, and a scatter's root lends the blocks
//! its peers read whole).
//! Where the host allows cross-memory reads ([`onesided_fabric::cma`]), a
//! piece of `LEND` bytes or more is lent instead of copied into the cell.
//! Lending is the robust choice, not always the fastest: these 2-core
//! machines switch, minute by minute, between a mode where a line written
//! by one core reaches the other fast and one where it takes much longer.
//! In the first, two copies through a cell beat one cross-memory read; in
//! the second, every line of a cell is such a slow transfer, which reading
//! a lent piece is not (measurements: `docs/measurements.md`, "Lending and
//! the machine's two modes"). A lent piece: the publisher writes where it
//! lies (pid, address), readers copy it straight into their buffers (one
//! copy instead of two), and a call that lent returns only once every
//! reader released its last lent step. A call that fails returns so too, within
//! the endpoint's timeout and while its peers live, once they released
//! or gave up that step: the error hands its buffers back to its caller,
//! and a peer may still be reading them in a call that succeeds there (3
//! ranks, an alltoallv whose counts only rank 1 found wrong: ranks 0 and
//! 2 read rank 1's lent input after its caller had overwritten it, in 4
//! runs of 6, when failed calls returned at once). A large allgather
//! lends outputs instead ([`PUSH_FROM`]): each member checks every peer's
//! contribution and output lengths, then writes its block straight into
//! their outputs (`process_vm_writev`), and stops at its next write when
//! that peer gave the call up.
//! Reductions combine the members' pieces in rank order (so
//! non-commutative operations are right), each reader on its own, but
//! for a reduction among 3 members or more whose inputs are lent: each
//! member then reduces one block of them all, and the root (every member,
//! for an allreduce) reads the others' reduced blocks
//! ([`HostMemory::splits`]). An
//! alltoallv publishes every member's counts in its first step and, beside
//! them, its input ([`beside_counts`]: inline when both fit a
//! header, lent from `LEND` bytes where the ranks have a core each, else
//! in the cell when it fits, else lent where the host allows): each
//! member reads its peers' counts and, in the same step, its blocks. Only
//! an input that fits none of these (larger than a cell where pieces are
//! not lent) goes in the steps that follow, a cell at a time. One
//! synchronisation instead of two (a step of counts, then one of data)
//! made the call faster at every size measured. From `LEND` bytes, with a
//! core per rank, lending beats the cell even though the call then ends
//! with the owner's wait for its readers; where the ranks outnumber the
//! cores, that wait costs another round of switches between processes and
//! the cell wins (measurements: `docs/measurements.md`, "Alltoallv counts
//! beside the input").
//!
//! A [`Run`] is a state machine: [`Run::advance`] goes as far as the
//! peers allow without waiting, so the same code serves blocking calls
//! (advanced in a backing-off loop) and nonblocking ones (advanced by every
//! call into the Comm). A member the launcher reports dead gives a
//! `PeerDead` error naming it; [`Run::waiting_for`] names the member a
//! run that timed out was waiting for. Every call, and every advance of
//! a run, tells the endpoint it is busy ([`Endpoint::note_busy`]): these
//! calls do not poll the fabric, and its background thread's frequent
//! wake-ups would slow their copies.
//!
//! Here: the layout, the policy (what is lent or split) and [`HostMemory`]
//! (the Comm's window and the memory accesses); `shared/plan.rs` holds
//! the plans' vocabulary and the step arithmetic, pure, and
//! `shared/run.rs` the [`Run`] state machine.

use std::ops::Range;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex, MutexGuard, OnceLock};

use onesided_fabric::spin::SpinLock;
use onesided_fabric::{Endpoint, Mapping};
use onesided_rma::{Group, Rma, Window};

use crate::op::Combine;
use crate::Error;

mod plan;
mod run;
mod steps;

use plan::*;

pub(crate) use run::{Held, Run};

/// Bytes of each member's data slot.
pub(crate) const SLOT: usize = 2 << 20;

/// Cells of a slot: the steps publish in them in turn ([`cell_of`]), so
/// a member runs up to `CELLS` steps ahead of its slowest reader (a root's
/// broadcasts do not wait for each reader, and large messages are
/// written into one cell while the previous one is read).
const CELLS: u64 = 8;

/// Bytes of a cell: the pieces large contributions go in.
pub(crate) const CELL: usize = SLOT / CELLS as usize;

/// Byte offsets in a member's part of the window: its `released`
/// counter, the headers of its cells (a pair of cache lines each: the step
/// last published in the cell, the bytes of the publisher's contribution
/// stamped with the step ([`stamped`]) at `WHOLE`, then up to `INLINE`
/// bytes of a small piece at `INLINED`, so that a small piece travels
/// with its flag), and its data slot (page aligned). A small piece inline
/// in the header's second line is a little faster than in a cell
/// (measurements: `docs/measurements.md`, "Inline pieces").
const RELEASED: u64 = 64;
const HEADERS: usize = 512;
const WHOLE: usize = 8;
const INLINED: usize = 16;
const INLINE: usize = 112;
const DATA: usize = 4096;
// The step's flag, then the contribution's bytes, then the inline piece.
const _: () = assert!(WHOLE >= 8 && INLINED >= WHOLE + 8);

/// Where the descriptor of each step's lent piece lies in a member's
/// part (by cell): `[pid, address, bytes]` as `u64`s; readers copy the
/// piece out of process `pid`'s memory at `address`.
const DESCRIPTORS: usize = 128;

/// Pieces this large or larger are lent (not copied into a cell) when the
/// host allows cross-memory reads ([`onesided_fabric::cma`]): one copy
/// instead of two.
const LEND: usize = 64 * 1024;

/// Bytes per member from which an allreduce between 2 members is split
/// ([`HostMemory::splits`]). Each member then reduces half of both inputs
/// instead of all of them, for one step more, whose reduced halves go
/// through the cells. From 4 MiB: smaller splits lost in some jobs (at
/// 2 MiB with caches cold, in three of four medians), larger ones won in
/// nearly all, caches warm or cold; the nonblocking allreduce measured
/// the same (measurements: `docs/measurements.md`, "Pair allreduce
/// split").
const PAIR_ALLREDUCE_SPLITS_FROM: usize = 4 << 20;

/// Bytes per member from which a reduce to one root between 2 members is
/// split ([`HostMemory::splits`]): each member reduces half of both inputs,
/// and the root then reads the other's half. From 16 MiB: with caches
/// warm, splitting lost in some jobs at 4 and 8 MiB and won in every job
/// from 16 MiB (measurements: `docs/measurements.md`, "Pair reduce
/// split").
const PAIR_REDUCE_SPLITS_FROM: usize = 16 << 20;

/// Whether a reduction among `n` members whose inputs of `bytes` each
/// are lent whole is split ([`HostMemory::splits`]), to one root
/// (`to_root`) or to all: among 3 or more, an allreduce always and a
/// reduce above a cell; between 2, from [`PAIR_ALLREDUCE_SPLITS_FROM`]
/// and [`PAIR_REDUCE_SPLITS_FROM`]; alone, never.
fn splits_lent(n: u32, to_root: bool, bytes: usize) -> bool {
    match (n, to_root) {
        (0..=1, _) => false,
        (2, false) => bytes >= PAIR_ALLREDUCE_SPLITS_FROM,
        (2, true) => bytes >= PAIR_REDUCE_SPLITS_FROM,
        (_, false) => true,
        (_, true) => bytes > CELL,
    }
}

/// Output bytes from which an allgather that lends whole pushes instead
/// of reading: every member lends its output, and writes its own block
/// into its peers' ([`Act::Push`], `process_vm_writev`) in turns of
/// [`PUSH_TURN`] bytes, each right after copying it into its own output
/// ([`Act::Uncached`]), while it is in this core's cache. Below, everything
/// stays in the shared cache, and every member reads its peers' blocks
/// whole, which was faster there than going in turns.
///
/// Reading in turns (what pushing replaced) found a peer's turn in the
/// cache the cores share in the machine's fast mode (see the module
/// docs), and in memory in the slow one; pushing reads it from the
/// pusher's own cache in both: a little slower than reading in the fast
/// mode, faster in the slow one, and ahead of MPICH in each benchmark run
/// (measurements, and the other ways tried: `docs/measurements.md`,
/// "Allgather push").
const PUSH_FROM: usize = 32 << 20;

/// Bytes of a turn of an allgather that pushes ([`PUSH_FROM`]): turns of
/// 1 MiB were faster than or even with turns of 256 KiB, which beat turns
/// of 64 KiB (measurements: `docs/measurements.md`, "Allgather push
/// turn").
const PUSH_TURN: usize = 1 << 20;

/// A collective as the shared algorithm runs it (counts in elements).
#[derive(Debug, Clone)]
pub(crate) enum Shape {
    /// Barrier.
    Barrier,
    /// Broadcast from `root`.
    Bcast { root: u32 },
    /// Reduce to `root`, or allreduce (`None`), with an operation that
    /// can combine its left operand in place ([`Reduce::left_in_place`]) or
    /// not.
    ///
    /// [`Reduce::left_in_place`]: crate::op::Reduce::left_in_place
    Reduce {
        root: Option<u32>,
        left_in_place: bool,
    },
    /// Gatherv to `root`, or allgatherv (`None`), of `counts`.
    Gather {
        root: Option<u32>,
        counts: Vec<usize>,
    },
    /// Scatterv of `counts` from `root`.
    Scatter { root: u32, counts: Vec<usize> },
    /// Alltoallv: `sends[r]` elements to rank `r`, `recvs[r]` from it.
    Alltoall {
        sends: Vec<usize>,
        recvs: Vec<usize>,
    },
    /// Reduce-scatter of blocks of `counts`.
    ReduceScatter { counts: Vec<usize> },
}

/// One member's shared-memory state for a Comm. Its Comm and the Comm's
/// runs in flight share it (an `Arc`, so that a Comm can move to another
/// thread); only the Comm's thread reaches it, so its locks are never
/// contended.
pub(crate) struct HostMemory {
    ep: Endpoint,
    group: Group,
    me: u32,
    n: u32,
    /// Reached only to learn a peer's part.
    window: Mutex<Window>,
    /// The members' parts as mapped here, learned at first use, and this
    /// member's own (which every step writes).
    parts: Vec<OnceLock<Arc<Mapping>>>,
    own: Arc<Mapping>,
    /// Whether pieces may be lent (the same on every member of a host).
    cma: bool,
    /// Whether the job's ranks on this host have a core each
    /// (`Ranks::host_cpus`; the same on every member): where an
    /// alltoallv's input goes beside its counts ([`beside_counts`]).
    own_cores: bool,
    /// The last step this member published in, in each cell (the latest
    /// of them is its last publication).
    in_cell: [Counter; CELLS as usize],
    /// A step every peer was last seen to have released.
    released: Counter,
    /// What quick reductions combine peers' pieces through.
    spill: SpinLock<Box<Spill>>,
    /// Tickets given to calls, and the ticket whose turn it is.
    tickets: Counter,
    serving: Counter,
    /// Runs given up before their turn came (dropped unfinished): ticket
    /// and call, abandoned when their turn comes.
    skipped: SpinLock<Vec<(u64, u64)>>,
}

/// A number of [`HostMemory`]'s, read and written by one thread at a time (a
/// `Cell` that may be shared: relaxed loads and stores, plain moves).
#[derive(Default)]
pub(crate) struct Counter(AtomicU64);

impl Counter {
    pub(crate) fn get(&self) -> u64 {
        self.0.load(Ordering::Relaxed)
    }

    pub(crate) fn set(&self, value: u64) {
        self.0.store(value, Ordering::Relaxed);
    }
}

/// `m` locked (a panic while it was held does not matter here: the run
/// that panicked is given up).
pub(crate) fn locked<T: ?Sized>(m: &Mutex<T>) -> MutexGuard<'_, T> {
    m.lock().unwrap_or_else(std::sync::PoisonError::into_inner)
}

impl HostMemory {
    /// Makes this member's window (no message: every member's first
    /// shared call makes it, in the same order).
    ///
    /// # Errors
    /// [`Error::Rma`] when the window cannot be made.
    pub(crate) fn new(rma: &Rma, group: &Group, me: u32) -> Result<HostMemory, Error> {
        // Members reach it through their mappings alone: the provider
        // needs no right to write it. Its counters and headers start at
        // zero before any peer sees it (the window publishes it): a
        // pooled registration holds an earlier Comm's, whose higher steps
        // would read as calls given up.
        let exposure = rma.expose(group, DATA + SLOT, onesided_rma::RemoteAccess::ReadOnly)?;
        exposure.write(0, &[0u8; DATA])?;
        let window = rma.create(&exposure);
        let own = (window.mapped(me)?)
            .ok_or_else(|| Error::BadCall("this member's own part is not mapped".into()))?;
        let parts = vec![OnceLock::new(); group.size() as usize];
        if let Some(slot) = parts.get(me as usize) {
            let _ = slot.set(Arc::clone(&own));
        }
        Ok(HostMemory {
            ep: rma.endpoint().clone(),
            group: group.clone(),
            me,
            n: group.size(),
            window: Mutex::new(window),
            parts,
            own,
            in_cell: Default::default(),
            released: Counter::default(),
            spill: SpinLock::new(Box::default()),
            cma: onesided_fabric::cma::available(),
            own_cores: rma.endpoint().ranks().host_ranks() <= rma.endpoint().ranks().host_cpus(),
            tickets: Counter::default(),
            serving: Counter::default(),
            skipped: SpinLock::new(Vec::new()),
        })
    }

    /// Whether `peer`'s counter at `at` has reached `step`; a dead peer is
    /// an error.
    fn reached(&self, peer: u32, at: u64, step: u64) -> Result<bool, Error> {
        Ok(self.counter(peer, at, step)? >= step)
    }

    /// `peer`'s counter at `at`; a dead peer is an error when it is below
    /// `step`.
    fn counter(&self, peer: u32, at: u64, step: u64) -> Result<u64, Error> {
        let seen = self
            .part(peer)?
            .atomic_u64(at as usize)?
            .load(Ordering::Acquire);
        if seen >= step {
            return Ok(seen);
        }
        let rank = self.group.job_rank(peer)?;
        if self.ep.ranks().is_dead(rank) {
            let op = "a shared-memory collective";
            return Err(onesided_fabric::Error::PeerDead { op, rank }.into());
        }
        Ok(seen)
    }

    /// A peer that has not released `step` yet, or `None` when every peer
    /// has. Their counters are read only when what was read last does not
    /// tell: a member publishing call after call then reads them once in
    /// about `CELLS` calls, not at every call (each read moves a line
    /// the peer writes).
    fn unreleased(&self, step: u64) -> Result<Option<u32>, Error> {
        if step <= self.released.get() {
            return Ok(None);
        }
        let mut least = u64::MAX;
        for p in (0..self.n).filter(|&p| p != self.me) {
            let seen = self.counter(p, RELEASED, step)?;
            if seen < step {
                return Ok(Some(p));
            }
            least = least.min(seen);
        }
        self.released.set(least);
        Ok(None)
    }

    /// Waits, backing off, until `peer`'s counter at `at` reaches `step`.
    ///
    /// # Errors
    /// A dead peer; [`Error::Late`] after the endpoint's timeout.
    fn wait_for(&self, peer: u32, at: u64, step: u64) -> Result<(), Error> {
        if self.reached(peer, at, step)? {
            return Ok(());
        }
        let (mut backoff, limit) = (self.ep.backoff(), self.ep.timeout());
        while !self.reached(peer, at, step)? {
            let waited = backoff.pause();
            if waited > limit {
                let rank = self.group.job_rank(peer)?;
                return Err(Error::Late { rank, waited });
            }
        }
        Ok(())
    }

    /// Bytes of the pieces a call of `shape` over `input` and `output`
    /// elements of `T` goes in, one step each: the rule [`Run::plan`] and
    /// [`HostMemory::quick_fits`] apply alike.
    fn piece_bytes<T>(&self, shape: &Shape, input: usize, output: usize) -> usize {
        let size = size_of::<T>();
        match shape {
            Shape::Bcast { .. } => piece_of(output * size),
            Shape::Reduce { root: Some(_), .. } => piece_of(input * size),
            Shape::Gather { counts, .. } if self.gathers_whole::<T>(counts) => {
                counts.iter().max().map_or(CELL, |&most| most * size)
            }
            Shape::Scatter { root, counts } => {
                let span = scattered(counts, *root).len() * size;
                if self.lends_whole(span) {
                    span
                } else {
                    CELL
                }
            }
            _ => CELL,
        }
    }

    /// Whether a call whose smallest lent piece would be `bytes` lends
    /// its pieces whole, in one step each, instead of cell by cell: every
    /// one of them is lent (the host allows cross-memory reads and
    /// `bytes` is [`LEND`] or more) and there are peers. Only memory its
    /// owner does not write again is lent so (inputs): the owner's next
    /// writes to lines its peers had just read cost a cross-core
    /// invalidation each (measurements: `docs/measurements.md`, "Lending
    /// only inputs").
    fn lends_whole(&self, bytes: usize) -> bool {
        self.cma && self.n > 1 && bytes >= LEND
    }

    /// Whether a reduction of `bytes` per member to `root` (to all:
    /// `None`) is split ([`split_plan`]): in chunks of a cell per member,
    /// each member reduces one block of every member's lent input, and
    /// publishes it (through a cell) while it reduces the next; the root,
    /// or every member for an allreduce, reads the others' reduced blocks.
    /// Instead of every reader reducing every input, an allreduce
    /// member's work falls from `n - 1` whole inputs to about two blocks
    /// of each peer, and a root's from all the inputs to a block of each
    /// plus the others' results. From 3 members, wherever the inputs are
    /// lent whole ([`HostMemory::lends_whole`]); a reduction to one root only
    /// above a cell, below which its unsplit pieces go through the cells
    /// with the root reducing each as it comes, in one step fewer. 2
    /// members split from larger sizes ([`splits_lent`]). Reduced blocks go
    /// through cells, where no peer reads the lines their owner writes
    /// next (lent, they measured the same within noise). Measurements:
    /// `docs/measurements.md`, "Split reductions".
    fn splits(&self, root: Option<u32>, bytes: usize) -> bool {
        self.lends_whole(bytes) && splits_lent(self.n, root.is_some(), bytes)
    }

    /// Whether a gather (or allgather) of `counts` lends every
    /// contribution whole, in one step ([`HostMemory::lends_whole`] of its
    /// smallest): one cross-memory read per peer instead of one per cell,
    /// which is faster (figures: docs/measurements.md, "Gathers and
    /// scatters lent").
    fn gathers_whole<T>(&self, counts: &[usize]) -> bool {
        let least = counts.iter().min().map_or(0, |&c| c * size_of::<T>());
        self.lends_whole(least)
    }

    /// Whether [`HostMemory::quick`] runs a blocking call of `shape` over
    /// `input` and `output` elements of `T`: a barrier, a broadcast of one
    /// piece, a reduction to one root up to a cell (pieces never lent) or
    /// an allreduce of one piece that is not lent, when no earlier call
    /// waits for its turn. A broadcast of more pieces goes the run's way:
    /// a root that publishes them back to back, as this path would, makes
    /// the call slower (measurements: `docs/measurements.md`, "Quick
    /// broadcasts").
    pub(crate) fn quick_fits<T>(&self, shape: &Shape, input: usize, output: usize) -> bool {
        let bytes = |n: usize| n * size_of::<T>();
        self.serving.get() == self.tickets.get()
            && match shape {
                Shape::Barrier => true,
                Shape::Bcast { .. } => bytes(output) <= self.piece_bytes::<T>(shape, input, output),
                // Never lent (as a run plans and places them); the
                // peers' pieces are combined through a buffer of the
                // Comm's.
                Shape::Reduce { root, .. } => {
                    // An allreduce goes in cells, lent from `LEND` bytes.
                    let fits = match root {
                        Some(_) => bytes(input) <= CELL,
                        None => bytes(input) < LEND,
                    };
                    fits && !self.splits(*root, bytes(input))
                        && size_of::<Spill>().is_multiple_of(size_of::<T>().max(1))
                }
                _ => false,
            }
    }

    /// Runs a call [`HostMemory::quick_fits`] at once: the steps a [`Run`]
    /// takes for it (the same protocol, so members may take either path),
    /// without the state machine, which costs more than such a call's
    /// work.
    ///
    /// # Errors
    /// As [`Run::advance`], and [`Error::Late`] when a member does not
    /// take its part within the endpoint's timeout.
    pub(crate) fn quick<T: bytemuck::Pod>(
        &self,
        call: u64,
        shape: &Shape,
        input: &[T],
        output: &mut [T],
        combine: Option<&Combine<T>>,
    ) -> Result<(), Error> {
        self.ep.note_busy();
        // What the call goes in pieces of (a barrier: one step).
        let elements = match shape {
            Shape::Barrier => 1,
            Shape::Bcast { .. } => output.len(),
            Shape::Reduce { .. } => input.len(),
            _ => return Err(Error::BadCall("not a quick shared-memory call".into())),
        };
        let publishes = quick_publishes(shape, self.me);
        // The bytes of every member's whole contribution (the root's
        // broadcast, each one's input).
        let whole = elements * size_of::<T>();
        let piece_bytes = self.piece_bytes::<T>(shape, input.len(), output.len());
        let per = (piece_bytes / size_of::<T>().max(1)).max(1);
        // A reduction's spill, locked once for all its steps.
        let mut spill = match shape {
            Shape::Reduce { .. } => Some(self.spill.try_lock().ok_or_else(|| {
                self.abandon(call);
                Error::BadCall("a reduction operation called its Comm".into())
            })?),
            _ => None,
        };
        // No elements, no step (as a run plans it).
        for (k, start) in (0..elements).step_by(per).enumerate() {
            let range = start..(start + per).min(elements);
            let piece = (range, whole, publishes);
            let spill = spill.as_deref_mut().map(|s| &mut s.0[..]);
            let done = step_of(call, k)
                .and_then(|s| self.quick_step(shape, s, input, output, piece, (combine, spill)));
            if let Err(e) = done {
                self.abandon(call);
                return Err(e);
            }
        }
        Ok(())
    }

    /// The step in which this member last published in the cell of step
    /// `s` (0: none): a member publishes there once every peer released
    /// it.
    fn last_in(&self, s: u64) -> u64 {
        self.in_cell[cell_of(s)].get()
    }

    /// Ends the turn of ticket `ticket` (whose turn it is): the next
    /// ticket's call goes on, or is abandoned if its run was given up.
    /// A blocking call's run (`blocking`: on the Comm's thread, the only
    /// one that makes runs) with no ticket after it has no later run that
    /// could have been given up, and passes the turn without the lock (a
    /// locked instruction right after the call's last store into shared
    /// memory waits for it to reach the peers).
    fn pass_turn(&self, ticket: u64, blocking: bool) {
        if blocking && self.tickets.get() == ticket + 1 {
            self.serving.set(ticket + 1);
            return;
        }
        let mut next = ticket + 1;
        let mut skipped = self.skipped.lock();
        while let Some(i) = skipped.iter().position(|&(t, _)| t == next) {
            let (_, call) = skipped.swap_remove(i);
            self.abandon(call);
            next += 1;
        }
        self.serving.set(next);
    }

    /// Notes that this member publishes in step `s`.
    fn publishing(&self, s: u64) {
        self.in_cell[cell_of(s)].set(s);
    }

    /// Gives up call `call` after an error here (counts that do not
    /// match, a dead peer, a timeout): this member reads nothing more of
    /// it, so it releases every step the call could have, and the peers'
    /// steps in it and their next calls do not wait for it. Members whose
    /// calls took different numbers of steps meet again in the next call,
    /// whose steps are numbered from its call number ([`step_of`]).
    fn abandon(&self, call: u64) {
        let last = step_of(call + 1, 0).map_or(u64::MAX, |s| s - 1);
        // Storing into this member's own part cannot fail once made.
        let _ = self.store(RELEASED, last);
    }

    /// Step `s` of a quick call, over piece `range` of contributions of
    /// `whole` bytes: publishes this member's piece (if it `publishes`),
    /// arrives, waits for and reads or combines what it needs (a
    /// reduction through `spill`), releases.
    fn quick_step<T: bytemuck::Pod>(
        &self,
        shape: &Shape,
        s: u64,
        input: &[T],
        output: &mut [T],
        (range, whole, publishes): (Range<usize>, usize, bool),
        (combine, spill): (Option<&Combine<T>>, Option<&mut [u128]>),
    ) -> Result<(), Error> {
        if publishes {
            let last = self.last_in(s);
            while let Some(p) = self.unreleased(last)? {
                self.wait_for(p, RELEASED, last)?;
            }
            self.publishing(s);
            let piece = match shape {
                Shape::Bcast { .. } => &output[range.clone()],
                _ => &input[range.clone()],
            };
            self.publish(s, piece, Self::unlent::<T>(range.len()), whole)?;
        }
        self.arrive(s)?;
        // A reduction's input of the piece (other calls have none).
        let mine = input.get(range.clone()).unwrap_or_default();
        let me = self.me;
        let flag = header_of(s) as u64;
        let place = Self::unlent::<T>(range.len());
        match shape {
            Shape::Barrier => {
                for p in (0..self.n).filter(|&p| p != me) {
                    self.wait_for(p, flag, s)?;
                }
            }
            Shape::Bcast { root } if *root != me => {
                self.wait_for(*root, flag, s)?;
                self.read_piece(*root, s, (0, place, whole), &mut output[range])?;
            }
            Shape::Reduce {
                root,
                left_in_place,
            } if root.is_none_or(|r| r == me) => {
                let combine = combine
                    .ok_or_else(|| Error::BadCall("a reduction without an operation".into()))?;
                let spill =
                    spill.ok_or_else(|| Error::BadCall("a reduction without a spill".into()))?;
                let theirs = bytemuck::try_cast_slice_mut::<_, T>(spill)
                    .map_err(|e| Error::BadCall(format!("a quick reduction: {e}")))?;
                let per = theirs.len().max(1);
                let output = &mut output[range];
                // Combined as a run combines them; a peer's piece through
                // the spill, a spill at a time.
                for (i, p) in fold_order(self.n, me, *left_in_place).enumerate() {
                    match (p == me, i == 0) {
                        (true, true) => output.copy_from_slice(mine),
                        (true, false) => combine.call(output, mine, p < i as u32),
                        (false, true) => {
                            self.wait_for(p, flag, s)?;
                            self.read_piece(p, s, (0, place, whole), output)?;
                        }
                        (false, false) => {
                            self.wait_for(p, flag, s)?;
                            for (k, out) in output.chunks_mut(per).enumerate() {
                                let at = k * per * size_of::<T>();
                                let theirs = &mut theirs[..out.len()];
                                self.read_piece(p, s, (at, place, whole), theirs)?;
                                combine.call(out, theirs, false);
                            }
                        }
                    }
                }
            }
            _ => {}
        }
        self.store(RELEASED, s)
    }

    /// Where a piece of `elements` that is not lent goes (as
    /// [`Run::place`] puts it).
    fn unlent<T>(elements: usize) -> Place {
        if elements * size_of::<T>() <= INLINE {
            Place::Inline
        } else {
            Place::Cell
        }
    }

    fn store(&self, at: u64, step: u64) -> Result<(), Error> {
        let flag = self.own.atomic_u64(at as usize)?;
        flag.store(step, Ordering::Release);
        Ok(())
    }

    /// `member`'s part as mapped here (mapped at first use).
    fn part(&self, member: u32) -> Result<&Mapping, Error> {
        let slot = (self.parts.get(member as usize))
            .ok_or_else(|| Error::BadCall(format!("no group rank {member}")))?;
        if let Some(part) = slot.get() {
            return Ok(part);
        }
        let mapped = locked(&self.window)
            .mapped(member)?
            .ok_or_else(|| Error::BadCall(format!("group rank {member} is not on this host")))?;
        Ok(slot.get_or_init(|| mapped))
    }

    /// Publishes `piece` for step `s` as `place` says, a piece of a
    /// contribution of `whole` bytes (readers know it when the step's flag
    /// says the step arrived).
    fn publish<T: bytemuck::Pod>(
        &self,
        s: u64,
        piece: &[T],
        place: Place,
        whole: usize,
    ) -> Result<(), Error> {
        self.put(s, piece, (place, 0))?;
        // Last, beside the flag the caller stores next: the line the
        // readers poll is written in one burst (written first, it cost a
        // small allreduce 10% more).
        let word = self.own.atomic_u64(header_of(s) + WHOLE)?;
        word.store(stamped(s, whole)?, Ordering::Relaxed);
        Ok(())
    }

    /// Puts `piece` for step `s` at byte `at` of `place` (a lent piece
    /// is lent whole: `at` is 0).
    fn put<T: bytemuck::Pod>(
        &self,
        s: u64,
        piece: &[T],
        (place, at): (Place, usize),
    ) -> Result<(), Error> {
        let bytes: &[u8] = bytemuck::cast_slice(piece);
        match place {
            Place::Inline => self.write(header_of(s) + INLINED + at, bytes),
            Place::Cell => self.write(cell(s) + at, bytes),
            Place::Lent => {
                let descriptor = [
                    u64::from(std::process::id()),
                    bytes.as_ptr() as u64,
                    bytes.len() as u64,
                ];
                self.write(descriptor_of(s), &descriptor)
            }
        }
    }

    /// [`beside_counts`] of an input of `bytes` in this Comm.
    fn beside_counts(&self, bytes: usize) -> Option<(Place, usize)> {
        beside_counts(self.n, bytes, self.cma, self.own_cores)
    }

    /// Says this member arrived at step `s` (what it published is in
    /// place): the flag of the step's cell.
    fn arrive(&self, s: u64) -> Result<(), Error> {
        self.store(header_of(s) as u64, s)
    }

    /// Whether `peer` arrived at step `s`.
    fn arrived(&self, peer: u32, s: u64) -> Result<bool, Error> {
        self.reached(peer, header_of(s) as u64, s)
    }

    /// Copies `out.len()` elements from byte `at` of what `member`
    /// published in step `s` (from its cell, or lent from its memory).
    ///
    /// # Errors
    /// [`Error::BadCall`] when `member`'s whole contribution is not the
    /// `whole` bytes this member expects (the members' counts do not
    /// match); a dead peer; window errors.
    fn read_piece<T: bytemuck::Pod>(
        &self,
        member: u32,
        s: u64,
        (at, place, whole): (usize, Place, usize),
        out: &mut [T],
    ) -> Result<(), Error> {
        let part = self.contribution(member, s, whole)?;
        let out: &mut [u8] = bytemuck::cast_slice_mut(out);
        if out.is_empty() {
            return Ok(());
        }
        match place {
            Place::Inline => return Ok(part.read_bytes(header_of(s) + INLINED + at, out)?),
            Place::Cell => return Ok(part.read_bytes(cell(s) + at, out)?),
            Place::Lent => {}
        }
        let [pid, address, bytes] = lent(part, s)?;
        if at + out.len() > bytes as usize {
            return Err(Error::BadCall(format!(
                "group rank {member} lent {bytes} bytes, {} wanted at {at}",
                out.len()
            )));
        }
        Ok(onesided_fabric::cma::read(
            pid as u32,
            address as usize + at,
            out,
        )?)
    }

    /// `member`'s part, once its whole contribution to the call of step
    /// `s` proves the `whole` bytes this member expects, published for
    /// step `s` ([`stamped`]).
    ///
    /// # Errors
    /// [`Error::BadCall`] when it does not (the members' counts do not
    /// match), or when what lies there is not of step `s`: `member` gave
    /// the call up (a failure there, or its nonblocking call dropped)
    /// before it published for the step, and its cell's flag went past
    /// `s` as a later call published there; window errors.
    fn contribution(&self, member: u32, s: u64, whole: usize) -> Result<&Mapping, Error> {
        // Published before the step's flag, which the caller saw.
        let part = self.part(member)?;
        let theirs = part
            .atomic_u64(header_of(s) + WHOLE)?
            .load(Ordering::Relaxed);
        let want = stamped(s, whole)?;
        if theirs >> WHOLE_BITS != want >> WHOLE_BITS {
            return Err(gave_up(member));
        }
        if theirs != want {
            return Err(mismatch(member, theirs & ((1 << WHOLE_BITS) - 1), whole));
        }
        Ok(part)
    }

    /// The descriptor of the output `member` lent for writing in step `s`
    /// ([`Publish::Destination`]), once its contribution proves the
    /// `whole` bytes and its output the `total` bytes this member expects.
    ///
    /// # Errors
    /// [`Error::BadCall`] when they do not (the members' counts do not
    /// match); window errors.
    fn destination(
        &self,
        member: u32,
        s: u64,
        (whole, total): (usize, usize),
    ) -> Result<[u64; 3], Error> {
        let descriptor = lent(self.contribution(member, s, whole)?, s)?;
        let bytes = descriptor[2];
        if bytes != total as u64 {
            return Err(Error::BadCall(format!(
                "group rank {member} lent an output of {bytes} bytes, where this member \
                 expects {total}: every member must pass matching counts"
            )));
        }
        Ok(descriptor)
    }

    /// Writes `data` at byte `at` of the output `member` lent for writing
    /// in step `s` ([`HostMemory::destination`] of `whole` and `total`), unless
    /// it gave the call up (its output may be its caller's again).
    ///
    /// # Errors
    /// [`Error::BadCall`] when the members' counts do not match, `data`
    /// does not fit, or `member` gave the call up; a dead peer; window
    /// errors.
    fn push<T: bytemuck::Pod>(
        &self,
        member: u32,
        s: u64,
        (at, whole, total): (usize, usize, usize),
        data: &[T],
    ) -> Result<(), Error> {
        let [pid, address, _] = self.destination(member, s, (whole, total))?;
        let data: &[u8] = bytemuck::cast_slice(data);
        if at + data.len() > total {
            return Err(Error::BadCall(format!(
                "{} bytes at {at} do not fit group rank {member}'s output of {total}",
                data.len()
            )));
        }
        // Its released counter passes the step only once it gave the call
        // up ([`HostMemory::abandon`]): it finishes the call, and goes on to
        // later steps, only after every peer released the step.
        if self.counter(member, RELEASED, s)? > s {
            return Err(gave_up(member));
        }
        Ok(onesided_fabric::cma::write(
            pid as u32,
            address as usize + at,
            data,
        )?)
    }

    /// Waits, within the endpoint's timeout and while they live, until
    /// every peer released step `s`: until they are done with what this
    /// member published in it.
    fn outlived(&self, s: u64) {
        for p in (0..self.n).filter(|&p| p != self.me) {
            // An error (a dead peer, the timeout) ends the wait for it.
            let _ = self.wait_for(p, RELEASED, s);
        }
    }

    /// Copies `data` to byte `at` of this member's part.
    fn write<T: bytemuck::Pod>(&self, at: usize, data: &[T]) -> Result<(), Error> {
        Ok(self.own.write_bytes(at, bytemuck::cast_slice(data))?)
    }
}

impl Drop for HostMemory {
    /// Peers may not have read this member's last publication yet (a
    /// member that finished its part of a call goes on): waits, within
    /// the endpoint's timeout and while they live, until every peer
    /// released that step, so the memory outlives their reads. Dropped
    /// without a collective free, the window's memory is never reused.
    fn drop(&mut self) {
        let last = self.in_cell.iter().map(Counter::get).max().unwrap_or(0);
        if last > 0 {
            self.outlived(last);
        }
    }
}

#[cfg(test)]
mod tests {
    /// A publication's word tells its step's cell-mates in the next calls
    /// apart (the same cell, the same bytes), and refuses what does not
    /// fit beside the step.
    #[test]
    fn a_publication_of_a_later_call_in_the_same_cell_is_told_apart() {
        let whole = 600_000;
        for call in [0, 1, 7, 1 << 20] {
            for k in [0, 1, 9] {
                let s = step_of(call, k).unwrap();
                let word = stamped(s, whole).unwrap();
                assert_eq!(word & ((1 << WHOLE_BITS) - 1), whole as u64);
                for later in 1..16 {
                    for k2 in 0..16 {
                        let next = step_of(call + later, k2).unwrap();
                        if cell_of(next) == cell_of(s) {
                            assert_ne!(stamped(next, whole).unwrap(), word);
                        }
                    }
                }
            }
        }
        assert!(stamped(1, (1 << WHOLE_BITS) - 1).is_ok());
        assert!(matches!(
            stamped(1, 1 << WHOLE_BITS),
            Err(Error::BadCall(_))
        ));
    }

    use super::*;

    #[test]
    fn steps_that_touch_several_peers_lent_memory_check_them_all_first() {
        let read = |peer, place| Act::Read {
            peer,
            at: 0,
            into: 0..4,
            combine: false,
            place,
            whole: 32,
        };
        let push = |peer| Act::Push {
            peer,
            at: 0,
            from: 0..4,
            whole: 32,
            total: 96,
        };
        let check = |peer, total| Act::Check {
            peer,
            whole: 32,
            total,
        };
        // One peer's, or in cells: as planned.
        for planned in [
            vec![read(1, Place::Lent), read(1, Place::Lent)],
            vec![read(1, Place::Cell), read(2, Place::Cell)],
            vec![push(1), push(1)],
        ] {
            let mut ops = planned.clone();
            check_first(&mut ops);
            assert_eq!(ops, planned);
        }
        let mut ops = vec![
            read(2, Place::Lent),
            read(1, Place::Lent),
            read(2, Place::Lent),
        ];
        check_first(&mut ops);
        assert_eq!(&ops[..2], &[check(2, None), check(1, None)]);
        assert_eq!(ops.len(), 5);
        let mut ops = vec![push(0), push(2), push(0), push(2)];
        check_first(&mut ops);
        assert_eq!(&ops[..2], &[check(0, Some(96)), check(2, Some(96))]);
        assert_eq!(ops.len(), 6);
    }

    #[test]
    fn broadcasts_and_reductions_go_in_pieces_up_to_a_cell_then_in_cells() {
        assert_eq!(piece_of(0), PIECE);
        assert_eq!(piece_of(CELL), PIECE);
        assert_eq!(piece_of(CELL + 1), CELL);
        assert_eq!(piece_of(32 << 20), CELL);
        // Pieces fit a cell, and a cell's worth of them splits evenly.
        assert!(PIECE <= CELL && CELL.is_multiple_of(PIECE));
    }

    #[test]
    fn a_quick_call_publishes_what_a_peer_reads() {
        let reduce = |root| Shape::Reduce {
            root,
            left_in_place: true,
        };
        assert!(!quick_publishes(&reduce(Some(1)), 1));
        assert!(quick_publishes(&reduce(Some(1)), 0));
        assert!(quick_publishes(&reduce(None), 1));
        assert!(quick_publishes(&Shape::Bcast { root: 2 }, 2));
        assert!(!quick_publishes(&Shape::Bcast { root: 2 }, 0));
        assert!(!quick_publishes(&Shape::Barrier, 0));
    }

    #[test]
    fn a_scatter_publishes_the_blocks_its_peers_read() {
        assert_eq!(scattered(&[4, 5, 6], 0), 4..15);
        assert_eq!(scattered(&[4, 5, 6], 2), 0..9);
        assert_eq!(scattered(&[4, 5, 6], 1), 0..15);
        assert_eq!(scattered(&[4, 0, 6, 0], 2), 0..4);
        assert_eq!(scattered(&[0, 5, 0], 1), 0..0);
        assert_eq!(scattered(&[7], 0), 0..0);
    }

    #[test]
    fn split_blocks_cover_the_input_in_rank_order_on_cache_lines() {
        for (len, n, size) in [
            (8192, 2, 8),
            (8192, 3, 8),
            (8193, 4, 8),
            (65_536, 7, 4),
            (5, 4, 8),
            (100, 3, 128),
        ] {
            let blocks: Vec<_> = (0..n).map(|p| split_block(len, n, size, p)).collect();
            assert_eq!(blocks[0].start, 0);
            assert_eq!(blocks[n as usize - 1].end, len);
            for pair in blocks.windows(2) {
                assert_eq!(pair[0].end, pair[1].start);
            }
            for b in blocks.iter().filter(|b| b.end < len) {
                assert_eq!(b.end * size % 64, 0, "{b:?} of {len}");
            }
        }
        // Fewer elements than lines: the first block takes them all.
        assert_eq!(split_block(5, 4, 8, 0), 0..5);
        assert_eq!(split_block(5, 4, 8, 1), 5..5);
    }

    #[test]
    fn two_members_split_only_large_reductions_three_or_more_split_lent_ones() {
        assert!(!splits_lent(1, false, PAIR_REDUCE_SPLITS_FROM));
        assert!(!splits_lent(2, false, PAIR_ALLREDUCE_SPLITS_FROM - 1));
        assert!(splits_lent(2, false, PAIR_ALLREDUCE_SPLITS_FROM));
        assert!(!splits_lent(2, true, PAIR_REDUCE_SPLITS_FROM - 1));
        assert!(splits_lent(2, true, PAIR_REDUCE_SPLITS_FROM));
        assert!(splits_lent(3, false, LEND));
        assert!(!splits_lent(4, true, CELL));
        assert!(splits_lent(4, true, CELL + 1));
    }

    #[test]
    fn each_call_numbers_its_steps_from_its_call_number() {
        assert_eq!(step_of(0, 0).unwrap(), 1);
        assert_eq!(step_of(3, 0).unwrap(), 3 * CALL_STEPS + 1);
        assert_eq!(step_of(3, 9).unwrap(), 3 * CALL_STEPS + 10);
        // A call's last step comes before the next call's first, and what
        // a call that gives up releases covers the one but not the other.
        let last = step_of(3, CALL_STEPS as usize - 1).unwrap();
        assert_eq!(last, 4 * CALL_STEPS);
        assert_eq!(last + 1, step_of(4, 0).unwrap());
        assert!(step_of(3, CALL_STEPS as usize).is_err());
        assert!(step_of(1 << 44, 0).is_err());
        assert!(step_of((1 << 44) - 1, CALL_STEPS as usize - 2).is_ok());
        assert!(step_of((1 << 44) - 1, CALL_STEPS as usize - 1).is_err());
        // One-step calls take the cells in turn, as a call's steps do.
        let cells = |call: u64, k: usize| cell_of(step_of(call, k).unwrap());
        assert_eq!(
            (0..9).map(|c| cells(c, 0)).collect::<Vec<_>>(),
            [0, 1, 2, 3, 4, 5, 6, 7, 0]
        );
        assert_eq!(
            (0..9).map(|k| cells(6, k)).collect::<Vec<_>>(),
            [6, 7, 0, 1, 2, 3, 4, 5, 6]
        );
    }

    #[test]
    fn a_split_reduction_goes_in_chunks_of_a_cell_per_member() {
        let cell = CELL / 8;
        for (len, n) in [
            (PAIR_ALLREDUCE_SPLITS_FROM / 8, 2),
            (PAIR_REDUCE_SPLITS_FROM / 8 + 3, 2),
            (4 * cell, 4),
            (4 * cell + 1, 4),
            (10 * cell + 77, 3),
            (9000, 3),
        ] {
            let (sub, steps) = split_plan(len, n, 8);
            assert_eq!(steps, len.div_ceil(n as usize * cell));
            // Every element in exactly one block, each at most a cell.
            let mut next = 0;
            for c in 0..steps {
                for m in 0..n {
                    let b = sub(c, m);
                    assert_eq!(b.start, next, "chunk {c} member {m} of {len}");
                    assert!(b.len() <= cell);
                    next = b.end;
                }
            }
            assert_eq!(next, len);
        }
    }

    #[test]
    fn chunks_cover_their_range_in_order() {
        let c: Vec<_> = chunks(3..10, 3).collect();
        assert_eq!(c, [3..6, 6..9, 9..10]);
        assert_eq!(chunks(5..5, 3).count(), 0);
    }

    #[test]
    fn member_0_takes_its_peer_first_only_when_it_can_combine_on_the_left() {
        let order = |n, me, left| fold_order(n, me, left).collect::<Vec<_>>();
        assert_eq!(order(1, 0, true), [0]);
        assert_eq!(order(2, 0, true), [1, 0]);
        assert_eq!(order(2, 0, false), [0, 1]);
        assert_eq!(order(2, 1, true), [0, 1]);
        assert_eq!(order(4, 0, true), [1, 0, 2, 3]);
        assert_eq!(order(4, 2, true), [0, 1, 2, 3]);
    }

    #[test]
    fn an_alltoallv_input_goes_beside_its_counts_wherever_it_can() {
        let inline = INLINE - 4 * 8;
        for (cma, own_cores) in [(true, true), (true, false), (false, true), (false, false)] {
            let beside = |n, bytes| beside_counts(n, bytes, cma, own_cores);
            // Inline after the counts while both fit a header.
            assert_eq!(beside(4, 0), Some((Place::Inline, 32)));
            assert_eq!(beside(4, inline), Some((Place::Inline, 32)));
            assert_eq!(beside(4, inline + 1), Some((Place::Cell, 0)));
            assert_eq!(beside(4, LEND - 1), Some((Place::Cell, 0)));
            // From `LEND` bytes: lent with a core per rank, else in the
            // cell while it fits; larger, lent or in later steps.
            let lent_from_lend = if cma && own_cores {
                Place::Lent
            } else {
                Place::Cell
            };
            assert_eq!(beside(4, LEND), Some((lent_from_lend, 0)));
            assert_eq!(beside(4, CELL).map(|b| b.0), Some(lent_from_lend));
            let larger = cma.then_some((Place::Lent, 0));
            assert_eq!(beside(4, CELL + 1), larger);
            // Counts too many for a header take the cell's first lines.
            assert_eq!(beside(20, 8), Some((Place::Cell, 192)));
            assert_eq!(
                beside(20, CELL - 192).map(|b| b.1),
                Some(if cma && own_cores { 0 } else { 192 })
            );
            assert_eq!(beside(20, CELL - 191), larger);
        }
    }

    #[test]
    fn unlent_pieces_go_inline_up_to_what_a_header_holds() {
        // A header: the step (8 bytes), then the inline piece, within its
        // slot; headers lie between the descriptors and the data.
        let step = |k: usize| step_of(0, k).unwrap();
        assert!(INLINED + INLINE <= header_of(step(1)) - header_of(step(0)));
        assert!(DESCRIPTORS + CELLS as usize * 32 <= HEADERS);
        assert!(header_of(step(CELLS as usize - 1)) + INLINED + INLINE <= DATA);
        assert_eq!(
            header_of(step(CELLS as usize - 1)),
            header_of(step(0)) + 7 * 128
        );
        assert_eq!(HostMemory::unlent::<u8>(INLINE), Place::Inline);
        assert_eq!(HostMemory::unlent::<u8>(INLINE + 1), Place::Cell);
        assert_eq!(HostMemory::unlent::<f64>(INLINE / 8), Place::Inline);
        assert_eq!(HostMemory::unlent::<f64>(INLINE / 8 + 1), Place::Cell);
        assert_eq!(HostMemory::unlent::<f64>(0), Place::Inline);
    }
}
