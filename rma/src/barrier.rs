//! The nonblocking barrier ([`crate::Rma::ibarrier`]): a dissemination
//! barrier (see [`crate::request::dissemination`]). A member signals a
//! partner on its host by raising its own counter for the group on its
//! board (`seq * 64 + round + 1`, monotone over the group's barriers, so a
//! partner that looks late still sees it), and a partner elsewhere with a
//! control-plane notice; a waiter checks both. A counter may only be
//! raised for a barrier once the group's earlier barriers have completed
//! here (so a counter never runs ahead of an unfinished barrier);
//! barriers started while an earlier one is in flight use notices. A
//! group's barrier state ([`Barriers`]) sits under one lock, taken when a
//! barrier starts and when it completes, not in every round.

use std::collections::{BTreeSet, HashMap};
use std::sync::Arc;
use std::time::Duration;

use onesided_fabric::Endpoint;

use crate::mapped::Mapped;
use crate::request::{dissemination, Request};
use crate::{Error, Group};

/// Control service recording "rank R reached round K of barrier B".
pub(crate) const BARRIER_NOTICE: u16 = 0x0103;

/// One group's barriers on this process: how many started, how many
/// completed in order and which completed ahead of an earlier one, and
/// the group's counter on this process's board once claimed. Plain
/// bookkeeping, under the `Rma`'s lock.
#[derive(Debug, Default)]
pub(crate) struct Barriers {
    started: u64,
    done: u64,
    ahead: BTreeSet<u64>,
    counter: Option<usize>,
}

/// What a barrier learns when it starts.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct Start {
    /// Its number among the group's barriers (from 1).
    pub(crate) seq: u64,
    /// Whether every earlier barrier of the group has completed here:
    /// only then may it raise the group's counter.
    pub(crate) in_order: bool,
    /// The group's counter on this process's board, if claimed.
    pub(crate) counter: Option<usize>,
}

impl Barriers {
    /// Starts the group's next barrier.
    pub(crate) fn start(&mut self) -> Start {
        self.started += 1;
        Start {
            seq: self.started,
            in_order: self.done + 1 == self.started,
            counter: self.counter,
        }
    }

    /// Records barrier `seq` as completed here; barriers completed out of
    /// order count once the ones before them complete.
    pub(crate) fn complete(&mut self, seq: u64) {
        if seq > self.done {
            self.ahead.insert(seq);
        }
        while self.ahead.remove(&(self.done + 1)) {
            self.done += 1;
        }
    }
}

/// Claims a counter on this process's board for `group` among the groups'
/// barriers in `all` (the one it has, after the first time): the first of
/// its [`crate::directory::counters`] that no other group holds; `None`
/// when they are all held.
pub(crate) fn claim<S>(all: &mut HashMap<u64, Barriers, S>, group: u64) -> Option<usize>
where
    S: std::hash::BuildHasher,
{
    if let Some(counter) = all.get(&group).and_then(|b| b.counter) {
        return Some(counter);
    }
    let held: Vec<usize> = all.values().filter_map(|b| b.counter).collect();
    let counter = crate::directory::counters(group).find(|c| !held.contains(c))?;
    all.entry(group).or_default().counter = Some(counter);
    Some(counter)
}

/// What a barrier needs of its [`crate::Rma`], which implements it: the
/// endpoint, the boards of peers on this host, this process's own counters
/// and the notices received. (A trait, so that this module does not depend
/// on the one holding the `Rma`.)
pub(crate) trait Signals: Send + Sync {
    /// The endpoint.
    fn endpoint(&self) -> &Endpoint;
    /// `rank`'s board, mapped, when it shares this host.
    fn board(&self, rank: u32) -> Option<Mapped<'_>>;
    /// Records barrier `seq` of `group` as completed here.
    fn barrier_done(&self, group: u64, seq: u64);
    /// Claims `group`'s counter on this process's board (once per group);
    /// `None` when the board has no room.
    fn claim_counter(&self, group: u64) -> Option<usize>;
    /// Raises this process's `counter` for `group` to `value`; whether it
    /// could.
    fn raise(&self, counter: usize, group: u64, value: u64) -> bool;
    /// Removes the notice (barrier, round, from); whether it was there.
    fn take_barrier_notice(&self, id: u64, round: u32, from: u32) -> bool;
}

/// A nonblocking barrier in flight: an owned request (it keeps its `Rma`
/// alive), which may move to another thread.
///
/// ```
/// use onesided_rma::{Group, Request, Rma};
///
/// # fn main() -> Result<(), Box<dyn std::error::Error>> {
/// let world = onesided_fabric::World::init()?; // one rank without a launcher
/// let rma = Rma::new(world.endpoint())?;
/// let mut barrier = rma.ibarrier(&Group::world(world.size()))?;
/// while !barrier.test()? {
///     // compute
/// }
/// # drop((barrier, rma));
/// # world.finalize()?;
/// # Ok(())
/// # }
/// ```
pub struct Barrier {
    rma: Arc<dyn Signals>,
    group: Group,
    me: u32,
    id: u64,
    start: Start,
    round: u32,
    signalled: bool,
}

impl Barrier {
    pub(crate) fn new(
        rma: Arc<dyn Signals>,
        group: Group,
        me: u32,
        id: u64,
        start: Start,
    ) -> Barrier {
        Barrier {
            rma,
            group,
            me,
            id,
            start,
            round: 0,
            signalled: false,
        }
    }

    /// The group counter that says "reached `round` of this barrier".
    fn mark(&self, round: u32) -> u64 {
        (self.start.seq)
            .saturating_mul(64)
            .saturating_add(u64::from(round) + 1)
    }

    /// Raises this process's counter for `group` to `mark` when the
    /// barrier that `start`ed may (it started in order); whether it did.
    fn raise(rma: &dyn Signals, start: &mut Start, group: u64, mark: u64) -> bool {
        if !start.in_order {
            return false;
        }
        if start.counter.is_none() {
            start.counter = rma.claim_counter(group);
        }
        start.counter.is_some_and(|c| rma.raise(c, group, mark))
    }
}

impl Request for Barrier {
    type Error = Error;

    fn test(&mut self) -> Result<bool, Error> {
        let n = self.group.size();
        let ep = self.rma.endpoint();
        let key = self.group.key();
        loop {
            if self.round >= dissemination::rounds(n) {
                self.rma.barrier_done(key, self.start.seq);
                return Ok(true);
            }
            let (to, from) = dissemination::partners(self.me, n, self.round);
            let mark = self.mark(self.round);
            if !self.signalled {
                let to = self.group.job_rank(to)?;
                let near = self.rma.board(to).is_some()
                    && Self::raise(&*self.rma, &mut self.start, key, mark);
                if !near {
                    let mut notice = self.id.to_le_bytes().to_vec();
                    notice.extend_from_slice(&self.round.to_le_bytes());
                    ep.notify(to, BARRIER_NOTICE, &notice)?;
                }
                self.signalled = true;
            }
            let from = self.group.job_rank(from)?;
            let arrived = match self.rma.board(from) {
                Some(board) => crate::directory::counter(&board, key) >= mark,
                None => false,
            } || {
                ep.progress();
                self.rma.take_barrier_notice(self.id, self.round, from)
            };
            if !arrived {
                if ep.ranks().is_dead(from) {
                    return Err(onesided_fabric::Error::PeerDead {
                        op: "ibarrier",
                        rank: from,
                    }
                    .into());
                }
                return Ok(false);
            }
            self.round += 1;
            self.signalled = false;
        }
    }

    fn timeout(&self) -> Duration {
        self.rma.endpoint().timeout()
    }

    fn backoff(&self) -> onesided_fabric::progress::Backoff {
        self.rma.endpoint().backoff()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn barriers_raise_counters_only_in_order() {
        let mut b = Barriers::default();
        let first = b.start();
        assert_eq!((first.seq, first.in_order, first.counter), (1, true, None));
        // Started while the first is in flight: notices only.
        let second = b.start();
        assert_eq!((second.seq, second.in_order), (2, false));
        // The second completes first: it counts once the first does.
        b.complete(2);
        assert!(!b.start().in_order);
        b.complete(1);
        b.complete(3);
        b.counter = Some(5);
        let fourth = b.start();
        assert_eq!(
            (fourth.seq, fourth.in_order, fourth.counter),
            (4, true, Some(5))
        );
    }

    #[test]
    fn each_group_claims_a_counter_of_its_own_once() {
        let mut all = HashMap::new();
        let a = 42;
        let first = claim(&mut all, a).unwrap();
        assert_eq!(claim(&mut all, a), Some(first), "a group keeps its counter");
        assert_eq!(claim(&mut all, 0), None, "group 0 marks an empty counter");
        // Groups probing the same counters take the next free one, until
        // all of them are held.
        let others: Vec<Option<usize>> = (1..=8).map(|i| claim(&mut all, a + i * 64)).collect();
        assert_eq!(
            others.iter().filter(|c| c.is_none()).count(),
            1,
            "{others:?}"
        );
        let mut held: Vec<usize> = all.values().filter_map(|b| b.counter).collect();
        held.sort_unstable();
        held.dedup();
        assert_eq!(held.len(), 8, "no counter held twice");
        // A group's barriers started after its claim know its counter.
        assert_eq!(all.get_mut(&a).unwrap().start().counter, Some(first));
    }
}
