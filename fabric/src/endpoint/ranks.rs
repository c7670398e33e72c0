//! The job's ranks as this endpoint sees them ([`Endpoint::ranks`]):
//! where each lives (its host, this machine's cores and boards) and
//! whether it is alive; so that [`Endpoint`]'s own methods are the data
//! path, progress and the waiting discipline, and what the provider
//! granted is [`crate::Granted`].

use super::*;

/// The job's ranks as an endpoint sees them: topology and liveness
/// ([`Endpoint::ranks`]). A view, as cheap to make as a reference.
#[derive(Clone, Copy)]
pub struct Ranks<'a> {
    ep: &'a Endpoint,
}

impl Endpoint {
    /// The job's ranks as this endpoint sees them: hosts, liveness.
    pub fn ranks(&self) -> Ranks<'_> {
        Ranks { ep: self }
    }
}

impl<'a> Ranks<'a> {
    /// From now on, checks before each send, RMA operation or atomic to a
    /// peer on this machine that its process still runs, and fails it
    /// with [`Error::PeerDead`] (marking the rank dead) when it has ended:
    /// a post to a process killed inside the provider can spin forever
    /// on a lock it left held (see [`crate::liveness`]). Costs one `poll`
    /// per such post (figures: docs/measurements.md, "Checking a peer's
    /// process"). [`crate::World::init`] turns it on under a launcher that
    /// reports deaths (`osrun --ft`); layers that survive failures turn it
    /// on themselves.
    pub fn watch_processes(&self) {
        let mut core = self.ep.inner.shared.lock();
        let own = core.processes.get(core.rank);
        core.processes.watch(own);
    }

    /// Whether `rank` is known to have died ([`Ranks::is_dead`]) or,
    /// once [`Ranks::watch_processes`] is on, is a process of this
    /// machine that has ended, which this call records. For failure
    /// detectors, each period: a death on this host is seen without a
    /// launcher's notice.
    pub fn has_ended(&self, rank: u32) -> bool {
        if self.is_dead(rank) {
            return true;
        }
        let ended = self.ep.inner.shared.lock().processes.ended(rank);
        if ended {
            self.ep.inner.shared.mark_dead(rank);
        }
        ended
    }

    /// Whether `rank` is known to have died (a cheap check while none has).
    pub fn is_dead(&self, rank: u32) -> bool {
        self.ep.inner.shared.is_dead(rank)
    }

    /// Whether any rank is known to have died (one atomic load).
    pub fn any_dead(&self) -> bool {
        self.ep.inner.shared.any_dead.load(Ordering::Acquire)
    }

    /// The ranks known to have died, in increasing order.
    pub fn dead_ranks(&self) -> Vec<u32> {
        let mut dead: Vec<u32> = self
            .ep
            .inner
            .shared
            .dead
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .iter()
            .copied()
            .collect();
        dead.sort_unstable();
        dead
    }

    /// The other ranks this process can reach: known addresses (not
    /// reserved for processes that have not joined, nor left) of ranks
    /// not known to have died.
    pub fn live_ranks(&self) -> Vec<u32> {
        let me = self.ep.inner.rank;
        (0..self.ep.size())
            .filter(|&r| r != me && !self.is_dead(r))
            .filter(|&r| self.ep.peer_name(r).is_some_and(|n| !n.is_empty()))
            .collect()
    }

    /// The CPUs the ranks on this process's machine may run on together
    /// (several hosts when [`crate::world::HOST_ENV`] makes them): the
    /// same on each of them, so that they can agree on what depends on it
    /// without a message (the host's online CPUs when unknown).
    pub fn host_cpus(&self) -> usize {
        self.ep.inner.host_cpus
    }

    /// Whether `rank` runs on this process's machine, by the machines of
    /// their processes (by host where one is unknown): ranks that
    /// [`crate::world::HOST_ENV`] makes hosts of their own still share
    /// the machine's CPUs.
    pub fn same_machine(&self, rank: u32) -> bool {
        let me = self.ep.inner.rank;
        match (self.ep.process_of(me), self.ep.process_of(rank)) {
            (Some(mine), Some(theirs)) => mine.machine == theirs.machine,
            _ => self.host_of(rank) == self.host_of(me),
        }
    }

    /// The live processes on this process's machine, itself included:
    /// what competes for its CPUs now (a job grows and shrinks). Views of
    /// liveness differ between processes for a while: nothing that must
    /// agree without a message may depend on it ([`Ranks::host_ranks`]).
    pub fn live_here(&self) -> usize {
        1 + (self.live_ranks().into_iter())
            .filter(|&r| self.same_machine(r))
            .count()
    }

    /// The ranks on this process's host (all of them when hosts are
    /// unknown).
    pub fn host_ranks(&self) -> usize {
        let all = self.ep.inner.peers.len();
        match self.host_of(self.ep.inner.rank) {
            Some(here) => (0..all).filter(|&r| self.host_of(r) == Some(here)).count(),
            None => all as usize,
        }
    }

    /// The name of `rank`'s board: [`crate::world::BOARD_LEN`] bytes of
    /// shared memory, zero at first, that the processes on its host map by
    /// this name (the upper layers lay it out; onesided-rma keeps its
    /// directory of windows and its barrier counters there). `None` when
    /// unknown (an endpoint opened without [`crate::World`]).
    pub fn board_name(&self, rank: u32) -> Option<&'a str> {
        self.ep
            .inner
            .peers
            .get(rank)
            .map(|p| p.board.as_str())
            .filter(|n| !n.is_empty())
    }

    /// The host identity of `rank`, when known: ranks with the same one
    /// share a host and can map each other's shared memory.
    pub fn host_of(&self, rank: u32) -> Option<u64> {
        self.ep.inner.peers.get(rank)?.host
    }
}
