//! The algorithm `shared`: collectives through shared memory, for groups
//! whose members are all on one host (as MPICH's shared-memory
//! collectives do). It is blocking only.
//!
//! Each member has two windows' parts, made over [`Rma`] at the Comm's
//! first such call (on one host their memory is shared and mapped by the
//! peers, so every access below is a load, a store or a copy): a control
//! part with two counters, `arrived` and `released`, on separate cache
//! lines, and a data slot of [`SLOT`] bytes. A call is a sequence of
//! *steps*, numbered alike on every member (each call's steps are computed
//! from what the members agree on: lengths and counts). In step `s`:
//!
//! 1. a member that publishes waits until every peer's `released` is at
//!    least `s - 1` (nobody still reads its slot), copies its piece into
//!    its slot;
//! 2. every member stores `arrived = s`;
//! 3. it reads what it needs from the peers' slots, each after that
//!    peer's `arrived` reached `s`;
//! 4. it stores `released = s`.
//!
//! Contributions larger than a slot go in pieces of [`SLOT`] bytes, one
//! step each. Reductions combine the members' pieces in rank order (so
//! non-commutative operations are right), each reader on its own.
//!
//! A member that does not arrive within the endpoint's timeout gives
//! [`Error::Late`] naming it; one the launcher reports dead, a
//! `PeerDead` error at once. Waits back off (spin, yield, sleep).

use std::cell::{Cell, RefCell};

use onesided_fabric::Endpoint;
use onesided_rma::{Group, Op as Atomic, Rma, Window};

use crate::run::{Combine, Spare};
use crate::Error;

/// Bytes of each member's data slot.
pub const SLOT: usize = 1 << 20;

/// Byte offsets of the counters in a member's control part.
const ARRIVED: u64 = 0;
const RELEASED: u64 = 64;

/// A collective as the shared algorithm runs it (counts in elements).
#[derive(Debug, Clone)]
pub(crate) enum Shape {
    /// Barrier.
    Barrier,
    /// Broadcast from `root`.
    Bcast { root: u32 },
    /// Reduce to `root`, or allreduce (`None`).
    Reduce { root: Option<u32> },
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

/// One member's shared-memory state for a Comm.
pub(crate) struct Shared<'e> {
    ep: &'e Endpoint,
    group: Group,
    me: u32,
    n: u32,
    control: Window<'e>,
    data: Window<'e>,
    step: Cell<u64>,
}

/// What a step's readers may read: peers' slots, once they arrived.
struct Reader<'s, 'e> {
    shared: &'s Shared<'e>,
    step: u64,
    arrived: RefCell<Vec<bool>>,
}

impl Reader<'_, '_> {
    /// Copies `out.len()` elements from byte `at` of `peer`'s slot, after
    /// it arrived at this step.
    fn read<T: bytemuck::Pod>(&self, peer: u32, at: usize, out: &mut [T]) -> Result<(), Error> {
        self.wait(peer)?;
        if !out.is_empty() {
            self.shared.data.get(peer, at as u64, out)?;
        }
        Ok(())
    }

    /// Waits until `peer` arrived at this step.
    fn wait(&self, peer: u32) -> Result<(), Error> {
        if !self.arrived.borrow()[peer as usize] {
            self.shared.wait(peer, ARRIVED, self.step)?;
            self.arrived.borrow_mut()[peer as usize] = true;
        }
        Ok(())
    }
}

impl<'e> Shared<'e> {
    /// Makes this member's windows (no message: every member's first
    /// shared call makes them, in the same order).
    ///
    /// # Errors
    /// [`Error::Rma`] when a window cannot be made.
    pub(crate) fn new(rma: &'e Rma<'e>, group: &Group, me: u32) -> Result<Shared<'e>, Error> {
        Ok(Shared {
            ep: rma.endpoint(),
            group: group.clone(),
            me,
            n: group.size(),
            control: rma.allocate(group, 128)?,
            data: rma.allocate(group, SLOT)?,
            step: Cell::new(0),
        })
    }

    /// Waits until `peer`'s counter at `at` reaches `step`.
    fn wait(&self, peer: u32, at: u64, step: u64) -> Result<(), Error> {
        let mut backoff = self.ep.backoff();
        let limit = self.ep.timeout();
        while self.control.fetch_and_op(peer, at, 0u64, Atomic::NoOp)? < step {
            let rank = self.group.job_rank(peer)?;
            if self.ep.is_dead(rank) {
                let op = "a shared-memory collective";
                return Err(onesided_fabric::Error::PeerDead { op, rank }.into());
            }
            let waited = backoff.pause();
            if waited > limit {
                return Err(Error::Late { rank: peer, waited });
            }
        }
        Ok(())
    }

    /// One step: publishes `mine` (bytes of at most [`SLOT`]; `None`:
    /// nothing), then lets `read` read the peers' slots.
    fn step<T: bytemuck::Pod>(
        &self,
        mine: Option<&[T]>,
        read: impl FnOnce(&Reader<'_, 'e>) -> Result<(), Error>,
    ) -> Result<(), Error> {
        let s = self.step.get() + 1;
        self.step.set(s);
        let control = self.control.lock_all(true)?;
        let data = self.data.lock_all(true)?;
        if let Some(mine) = mine {
            for p in (0..self.n).filter(|&p| p != self.me) {
                self.wait(p, RELEASED, s - 1)?;
            }
            self.data.write_local(0, mine)?;
        }
        self.control
            .accumulate(self.me, ARRIVED, &[s], Atomic::Replace)?;
        let reader = Reader {
            shared: self,
            step: s,
            arrived: RefCell::new(vec![false; self.n as usize]),
        };
        read(&reader)?;
        self.control
            .accumulate(self.me, RELEASED, &[s], Atomic::Replace)?;
        data.unlock()?;
        control.unlock()?;
        Ok(())
    }

    /// Runs `shape` over `input` and `output` (as the schedules do: the
    /// same buffers and counts), combining with `combine`.
    ///
    /// # Errors
    /// [`Error::BadCall`] for buffers that do not fit `shape` (checked by
    /// the Comm before); [`Error::Late`]; window errors.
    pub(crate) fn run<T: bytemuck::Pod>(
        &self,
        shape: &Shape,
        input: &[T],
        output: &mut [T],
        combine: Option<&Combine<T>>,
        spare: &Spare,
    ) -> Result<(), Error> {
        let per = (SLOT / size_of::<T>().max(1)).max(1);
        let (me, n) = (self.me, self.n);
        let pieces = |len: usize| len.div_ceil(per);
        let piece = |len: usize, k: usize| (k * per).min(len)..((k + 1) * per).min(len);
        match shape {
            Shape::Barrier => self.step::<u8>(None, |r| (0..n).try_for_each(|p| r.wait(p))),
            Shape::Bcast { root } => {
                for k in 0..pieces(output.len()) {
                    let range = piece(output.len(), k);
                    if me == *root {
                        self.step(Some(&output[range]), |_| Ok(()))?;
                    } else {
                        self.step::<T>(None, |r| r.read(*root, 0, &mut output[range]))?;
                    }
                }
                Ok(())
            }
            Shape::Reduce { root } => {
                let combine =
                    combine.ok_or(Error::BadCall("a reduction without an operation".into()))?;
                let reads = root.is_none_or(|r| r == me);
                let mut theirs = spare.zeroed(per.min(input.len()));
                for k in 0..pieces(input.len()) {
                    let range = piece(input.len(), k);
                    let mine = &input[range.clone()];
                    self.step(Some(mine), |r| {
                        if !reads {
                            return Ok(());
                        }
                        let out = &mut output[range.clone()];
                        let theirs = &mut theirs[..range.len()];
                        for p in 0..n {
                            let x: &[T] = if p == me {
                                mine
                            } else {
                                r.read(p, 0, theirs)?;
                                theirs
                            };
                            if p == 0 {
                                out.copy_from_slice(x);
                            } else {
                                combine(out, x);
                            }
                        }
                        Ok(())
                    })?;
                }
                spare.give(theirs);
                Ok(())
            }
            Shape::Gather { root, counts } => {
                let at = displacements(counts);
                let reads = root.is_none_or(|r| r == me);
                if reads {
                    output[at[me as usize]..][..input.len()].copy_from_slice(input);
                }
                let most = counts.iter().copied().max().unwrap_or(0);
                for k in 0..pieces(most) {
                    let mine = &input[piece(input.len(), k)];
                    self.step(Some(mine), |r| {
                        for p in (0..n).filter(|&p| reads && p != me) {
                            let range = piece(counts[p as usize], k);
                            let start = at[p as usize] + range.start;
                            r.read(p, 0, &mut output[start..start + range.len()])?;
                        }
                        Ok(())
                    })?;
                }
                Ok(())
            }
            Shape::Scatter { root, counts } => {
                let at = displacements(counts);
                let mine = at[me as usize]..at[me as usize] + counts[me as usize];
                if me == *root {
                    output.copy_from_slice(&input[mine.clone()]);
                }
                let total: usize = counts.iter().sum();
                for k in 0..pieces(total) {
                    let range = piece(total, k);
                    let published = (me == *root).then(|| &input[range.clone()]);
                    self.step(published, |r| {
                        let (lo, hi) = (range.start.max(mine.start), range.end.min(mine.end));
                        if me != *root && lo < hi {
                            let bytes = (lo - range.start) * size_of::<T>();
                            r.read(*root, bytes, &mut output[lo - mine.start..hi - mine.start])?;
                        }
                        Ok(())
                    })?;
                }
                Ok(())
            }
            Shape::Alltoall { sends, recvs } => {
                // First step: every member's counts (so that every member
                // knows where its blocks lie and how many steps follow).
                let mine: Vec<u64> = sends.iter().map(|&c| c as u64).collect();
                let mut counts = vec![vec![0u64; n as usize]; n as usize];
                self.step(Some(&mine), |r| {
                    for p in 0..n {
                        r.read(p, 0, &mut counts[p as usize])?;
                    }
                    Ok(())
                })?;
                // Where rank p's block for this rank starts in p's input.
                let mut from = Vec::with_capacity(n as usize);
                for (p, theirs) in counts.iter().enumerate() {
                    let (before, count) = theirs.split_at(me as usize);
                    if count[0] as usize != recvs[p] {
                        return Err(Error::BadCall(format!(
                            "group rank {p} sends {} elements to rank {me}, which expects {}",
                            count[0], recvs[p]
                        )));
                    }
                    from.push(before.iter().sum::<u64>() as usize);
                }
                let into = displacements(recvs);
                let own = displacements(sends)[me as usize];
                output[into[me as usize]..][..recvs[me as usize]]
                    .copy_from_slice(&input[own..own + sends[me as usize]]);
                let longest = counts
                    .iter()
                    .map(|c| c.iter().sum::<u64>() as usize)
                    .max()
                    .unwrap_or(0);
                for k in 0..pieces(longest) {
                    let range = piece(longest, k);
                    let published = &input[piece(input.len(), k)];
                    self.step(Some(published), |r| {
                        for p in (0..n).filter(|&p| p != me) {
                            let block = from[p as usize]..from[p as usize] + recvs[p as usize];
                            let (lo, hi) = (range.start.max(block.start), range.end.min(block.end));
                            if lo < hi {
                                let to = into[p as usize] + (lo - block.start);
                                let bytes = (lo - range.start) * size_of::<T>();
                                r.read(p, bytes, &mut output[to..to + (hi - lo)])?;
                            }
                        }
                        Ok(())
                    })?;
                }
                Ok(())
            }
            Shape::ReduceScatter { counts } => {
                let combine =
                    combine.ok_or(Error::BadCall("a reduction without an operation".into()))?;
                let at = displacements(counts);
                let want = at[me as usize]..at[me as usize] + counts[me as usize];
                let mut theirs = spare.zeroed(per.min(want.len()));
                for k in 0..pieces(input.len()) {
                    let range = piece(input.len(), k);
                    self.step(Some(&input[range.clone()]), |r| {
                        let (lo, hi) = (range.start.max(want.start), range.end.min(want.end));
                        if lo >= hi {
                            return Ok(());
                        }
                        let out = &mut output[lo - want.start..hi - want.start];
                        let theirs = &mut theirs[..hi - lo];
                        for p in 0..n {
                            let x: &[T] = if p == me {
                                &input[lo..hi]
                            } else {
                                r.read(p, (lo - range.start) * size_of::<T>(), theirs)?;
                                theirs
                            };
                            if p == 0 {
                                out.copy_from_slice(x);
                            } else {
                                combine(out, x);
                            }
                        }
                        Ok(())
                    })?;
                }
                spare.give(theirs);
                Ok(())
            }
        }
    }
}

/// Where each block of `counts` starts, laid end to end.
fn displacements(counts: &[usize]) -> Vec<usize> {
    counts
        .iter()
        .scan(0, |at, &c| {
            let start = *at;
            *at += c;
            Some(start)
        })
        .collect()
}
