//! The nonblocking barrier ([`crate::Rma::ibarrier`]): a dissemination
//! barrier of control-plane notices (see [`crate::request::dissemination`]).

use std::time::Duration;

use crate::request::{dissemination, Request};
use crate::window::BARRIER_NOTICE;
use crate::{Error, Group, Rma};

/// A nonblocking barrier in flight.
pub struct Barrier<'r, 'e> {
    rma: &'r Rma<'e>,
    group: Group,
    me: u32,
    id: u64,
    round: u32,
    signalled: bool,
}

impl<'r, 'e> Barrier<'r, 'e> {
    pub(crate) fn new(rma: &'r Rma<'e>, group: Group, me: u32, id: u64) -> Barrier<'r, 'e> {
        Barrier {
            rma,
            group,
            me,
            id,
            round: 0,
            signalled: false,
        }
    }
}

impl Request for Barrier<'_, '_> {
    fn test(&mut self) -> Result<bool, Error> {
        let n = self.group.size();
        let ep = self.rma.ep;
        loop {
            if self.round >= dissemination::rounds(n) {
                return Ok(true);
            }
            let (to, from) = dissemination::partners(self.me, n, self.round);
            if !self.signalled {
                let mut notice = self.id.to_le_bytes().to_vec();
                notice.extend_from_slice(&self.round.to_le_bytes());
                ep.notify(self.group.job_rank(to)?, BARRIER_NOTICE, &notice)?;
                self.signalled = true;
            }
            ep.progress();
            let from = self.group.job_rank(from)?;
            if !self.rma.take_barrier_notice(self.id, self.round, from) {
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
        self.rma.ep.timeout()
    }

    fn backoff(&self) -> onesided_fabric::progress::Backoff {
        self.rma.ep.backoff()
    }
}
