//! The nonblocking barrier ([`crate::Rma::ibarrier`]): a dissemination
//! barrier (see [`crate::request::dissemination`]). A member signals a
//! partner on its host by raising its own counter for the group on its
//! board (`seq * 64 + round + 1`, monotone over the group's barriers, so a
//! partner that looks late still sees it), and a partner elsewhere with a
//! control-plane notice; a waiter checks both. A counter may only be
//! raised for a barrier once the group's earlier barriers have completed
//! here (so a counter never runs ahead of an unfinished barrier);
//! barriers started while an earlier one is in flight use notices.

use std::sync::Arc;
use std::time::Duration;

use onesided_fabric::Endpoint;

use crate::mapped::Mapped;
use crate::request::{dissemination, Request};
use crate::{Error, Group};

/// Control service recording "rank R reached round K of barrier B".
pub(crate) const BARRIER_NOTICE: u16 = 0x0103;

/// What a barrier needs of its [`crate::Rma`], which implements it: the
/// endpoint, the boards of peers on this host, this process's own counters
/// and the notices received. (A trait, so that this module does not depend
/// on the one holding the `Rma`.)
pub(crate) trait Signals: Send + Sync {
    /// The endpoint.
    fn endpoint(&self) -> &Endpoint;
    /// `rank`'s board, mapped, when it shares this host.
    fn board(&self, rank: u32) -> Option<Mapped<'_>>;
    /// How many of `group`'s barriers have completed here in order.
    fn barriers_done(&self, group: u64) -> u64;
    /// Records barrier `seq` of `group` as completed here.
    fn barrier_done(&self, group: u64, seq: u64);
    /// Raises this process's counter for `group` to `value`; whether the
    /// board had room for it.
    fn signal(&self, group: u64, value: u64) -> bool;
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
    /// This barrier's number among the group's barriers (from 1).
    seq: u64,
    round: u32,
    signalled: bool,
}

impl Barrier {
    pub(crate) fn new(rma: Arc<dyn Signals>, group: Group, me: u32, id: u64, seq: u64) -> Barrier {
        Barrier {
            rma,
            group,
            me,
            id,
            seq,
            round: 0,
            signalled: false,
        }
    }

    /// The group counter that says "reached `round` of this barrier".
    fn mark(&self, round: u32) -> u64 {
        self.seq
            .saturating_mul(64)
            .saturating_add(u64::from(round) + 1)
    }
}

impl Request for Barrier {
    fn test(&mut self) -> Result<bool, Error> {
        let n = self.group.size();
        let ep = self.rma.endpoint();
        let key = self.group.key();
        loop {
            if self.round >= dissemination::rounds(n) {
                self.rma.barrier_done(key, self.seq);
                return Ok(true);
            }
            let (to, from) = dissemination::partners(self.me, n, self.round);
            let mark = self.mark(self.round);
            if !self.signalled {
                let to = self.group.job_rank(to)?;
                let near = self.rma.board(to).is_some()
                    && self.rma.barriers_done(key) + 1 == self.seq
                    && self.rma.signal(key, mark);
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
                if ep.is_dead(from) {
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
