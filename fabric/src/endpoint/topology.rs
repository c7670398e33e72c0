//! What the endpoint knows of the job's ranks: their addresses, hosts
//! and boards, learnt at start ([`Endpoint::connect`],
//! [`Endpoint::set_hosts`]) and from processes that join later
//! ([`Endpoint::reserve`], [`Endpoint::add_peer`]).

use super::*;
use crate::liveness::Process;

impl Endpoint {
    /// Learns every rank's address: `names[r]` is rank `r`'s
    /// [`Endpoint::name`], and `rank` is this endpoint's own. Costs no
    /// traffic: connections are made on first use. An empty name stands
    /// for a rank that has left the job (not this one): it is counted
    /// dead. The addresses go into the address vector in one batch
    /// (see `Handles::insert_addresses`); those that
    /// [`Endpoint::connect_partners`] inserted already stay.
    ///
    /// # Errors
    /// [`Error::InvalidRank`] when `rank` is not below `names.len()` or there
    /// are more than [`MAX_RANKS`] names; [`Error::Fabric`] when
    /// `fi_av_insert` refuses a name; [`Error::StillShared`] when other
    /// handles of the endpoint exist. Nothing changes then.
    pub fn connect(&mut self, rank: u32, names: &[Vec<u8>]) -> Result<()> {
        let size = check_size(rank, names.len())?;
        let inner = self.unique("connect")?;
        let known: Vec<(u32, &[u8])> = (names.iter().enumerate())
            .filter(|(r, name)| !name.is_empty() || *r as u32 == rank)
            .map(|(r, name)| (r as u32, name.as_slice()))
            .collect();
        inner.learn(rank, size, &known)?;
        for (r, name) in names.iter().enumerate() {
            if name.is_empty() && r as u32 != rank {
                inner.shared.mark_dead(r as u32);
            }
        }
        Ok(())
    }

    /// Learns the addresses of some of the `size` ranks, `known` (rank,
    /// name) pairs, `rank` being this endpoint's own: those it will
    /// exchange messages with before it knows the others (the start-up's
    /// partners, see [`crate::bootstrap`]). Operations to the other ranks
    /// fail with [`Error::InvalidRank`] until [`Endpoint::connect`].
    ///
    /// # Errors
    /// As [`Endpoint::connect`].
    pub fn connect_partners(
        &mut self,
        rank: u32,
        size: u32,
        known: &[(u32, Vec<u8>)],
    ) -> Result<()> {
        let size = check_size(rank, size as usize)?;
        if let Some(&(r, _)) = known.iter().find(|(r, _)| *r >= size) {
            return Err(Error::InvalidRank { rank: r, size });
        }
        let inner = self.unique("connect")?;
        let known: Vec<(u32, &[u8])> = known.iter().map(|(r, n)| (*r, n.as_slice())).collect();
        inner.learn(rank, size, &known)
    }

    /// Makes room for `count` processes that join the job as its next
    /// ranks, which it returns: their control-plane requests are received
    /// from now on, their addresses come with [`Endpoint::add_peer`]
    /// (until then, operations to them fail with [`Error::InvalidRank`]).
    /// Every process of the job reserves the same ranks.
    ///
    /// # Errors
    /// [`Error::InvalidRank`] beyond [`MAX_RANKS`].
    pub fn reserve(&self, count: u32) -> Result<std::ops::Range<u32>> {
        let mut core = self.inner.shared.lock();
        let first = self.inner.peers.len();
        let end =
            first
                .checked_add(count)
                .filter(|&e| e <= MAX_RANKS)
                .ok_or(Error::InvalidRank {
                    rank: MAX_RANKS,
                    size: MAX_RANKS,
                })?;
        core.addrs.resize(end as usize, sys::FI_ADDR_NOTAVAIL);
        let services: Vec<u16> = core.control.handlers.keys().copied().collect();
        for service in services {
            core.post_request_receives(service, first..end);
        }
        drop(core);
        self.inner.peers.grow(end);
        Ok(first..end)
    }

    /// Learns the address, placement and process of `rank`, a process
    /// that joined the job (a rank [`Endpoint::reserve`]d here).
    ///
    /// # Errors
    /// [`Error::InvalidRank`] for a rank not reserved or known already;
    /// [`Error::BadDescriptor`] or [`Error::Fabric`] for a name the
    /// provider refuses.
    pub fn add_peer(
        &self,
        rank: u32,
        name: &[u8],
        host: u64,
        board: String,
        process: Option<Process>,
    ) -> Result<()> {
        let mut core = self.inner.shared.lock();
        let size = core.addrs.len() as u32;
        match core.addrs.get(rank as usize) {
            Some(&a) if a == sys::FI_ADDR_NOTAVAIL && self.inner.peers.get(rank).is_none() => {}
            _ => return Err(Error::InvalidRank { rank, size }),
        }
        let own_len = core.handles.name()?.len();
        let addr = core.handles.insert_addresses(&[name], own_len)?[0];
        core.addrs[rank as usize] = addr;
        core.stats.addresses(1);
        core.processes.set(rank, process);
        drop(core);
        self.inner.peers.set(
            rank,
            Peer {
                name: name.to_vec(),
                host: Some(host),
                board,
            },
        );
        Ok(())
    }

    /// The process of `rank`, when known (see
    /// [`Endpoint::watch_processes`]).
    pub(crate) fn process_of(&self, rank: u32) -> Option<Process> {
        self.inner.shared.lock().processes.get(rank)
    }

    /// The endpoint name of `rank`, when known (empty for a rank that has
    /// left).
    pub fn peer_name(&self, rank: u32) -> Option<&[u8]> {
        self.inner.peers.get(rank).map(|p| p.name.as_slice())
    }

    /// The other ranks this process can reach: known addresses (not
    /// reserved for processes that have not joined, nor left) of ranks
    /// not known to have died.
    pub fn live_ranks(&self) -> Vec<u32> {
        let me = self.inner.rank;
        (0..self.size())
            .filter(|&r| r != me && !self.is_dead(r))
            .filter(|&r| self.peer_name(r).is_some_and(|n| !n.is_empty()))
            .collect()
    }

    /// Records each rank's host identity ([`crate::world::host_id`]),
    /// board name and process (see [`Endpoint::watch_processes`]), keeps
    /// this process's `board`, and records `host_cpus`,
    /// the CPUs the ranks on its machine may run on together
    /// ([`crate::world::cpus_together`]); [`crate::World::init`] does, from
    /// the PMI key space.
    ///
    /// # Errors
    /// [`Error::StillShared`] when other handles of the endpoint exist.
    pub fn set_hosts(
        &mut self,
        hosts: Vec<u64>,
        boards: Vec<String>,
        processes: Vec<Option<Process>>,
        board: Mapping,
        host_cpus: usize,
    ) -> Result<()> {
        let inner = self.unique("set hosts")?;
        let mut core = inner.shared.lock();
        for (r, process) in processes.into_iter().enumerate() {
            core.processes.set(r as u32, process);
        }
        drop(core);
        let peers = Peers::new();
        for (r, (host, board)) in hosts.into_iter().zip(boards).enumerate() {
            let r = r as u32;
            let name = inner
                .peers
                .get(r)
                .map(|p| p.name.clone())
                .unwrap_or_default();
            let host = Some(host);
            peers.set(r, Peer { name, host, board });
        }
        peers.grow(inner.peers.len());
        inner.peers = peers;
        inner._board = Some(Mutex::new(board));
        inner.host_cpus = host_cpus;
        Ok(())
    }

    /// The CPUs the ranks on this process's machine may run on together
    /// (several hosts when [`crate::world::HOST_ENV`] makes them): the
    /// same on each of them, so that they can agree on what depends on it
    /// without a message (the host's online CPUs when unknown).
    pub fn host_cpus(&self) -> usize {
        self.inner.host_cpus
    }

    /// Whether `rank` runs on this process's machine, by the machines of
    /// their processes (by host where one is unknown): ranks that
    /// [`crate::world::HOST_ENV`] makes hosts of their own still share
    /// the machine's CPUs.
    pub fn same_machine(&self, rank: u32) -> bool {
        let me = self.inner.rank;
        match (self.process_of(me), self.process_of(rank)) {
            (Some(mine), Some(theirs)) => mine.machine == theirs.machine,
            _ => self.host_of(rank) == self.host_of(me),
        }
    }

    /// The live processes on this process's machine, itself included:
    /// what competes for its CPUs now (a job grows and shrinks). Views of
    /// liveness differ between processes for a while: nothing that must
    /// agree without a message may depend on it ([`Endpoint::host_ranks`]).
    pub fn live_here(&self) -> usize {
        1 + (self.live_ranks().into_iter())
            .filter(|&r| self.same_machine(r))
            .count()
    }

    /// The ranks on this process's host (all of them when hosts are
    /// unknown).
    pub fn host_ranks(&self) -> usize {
        let all = self.inner.peers.len();
        match self.host_of(self.inner.rank) {
            Some(here) => (0..all).filter(|&r| self.host_of(r) == Some(here)).count(),
            None => all as usize,
        }
    }

    /// The name of `rank`'s board: [`crate::world::BOARD_LEN`] bytes of
    /// shared memory, zero at first, that the processes on its host map by
    /// this name (the upper layers lay it out; onesided-rma keeps its
    /// directory of windows and its barrier counters there). `None` when
    /// unknown (an endpoint opened without [`crate::World`]).
    pub fn board_name(&self, rank: u32) -> Option<&str> {
        self.inner
            .peers
            .get(rank)
            .map(|p| p.board.as_str())
            .filter(|n| !n.is_empty())
    }

    /// The host identity of `rank`, when known: ranks with the same one
    /// share a host and can map each other's shared memory.
    pub fn host_of(&self, rank: u32) -> Option<u64> {
        self.inner.peers.get(rank)?.host
    }
}

/// The job size of `len` ranks, `rank` among them.
fn check_size(rank: u32, len: usize) -> Result<u32> {
    let size = u32::try_from(len)
        .ok()
        .filter(|&n| n <= MAX_RANKS)
        .ok_or(Error::InvalidRank {
            rank: MAX_RANKS,
            size: MAX_RANKS,
        })?;
    if rank >= size {
        return Err(Error::InvalidRank { rank, size });
    }
    Ok(size)
}

impl Inner {
    /// Makes this endpoint rank `rank` of `size` knowing the `known`
    /// ranks' names: inserts in one batch the addresses not inserted with
    /// the same name before, and forgets the others.
    fn learn(&mut self, rank: u32, size: u32, known: &[(u32, &[u8])]) -> Result<()> {
        let mut core = self.shared.lock();
        let own_len = core.handles.name()?.len();
        let mut addrs = vec![sys::FI_ADDR_NOTAVAIL; size as usize];
        let mut fresh: Vec<(u32, &[u8])> = Vec::new();
        for &(r, name) in known {
            let before = (core.addrs.get(r as usize).copied())
                .filter(|&a| a != sys::FI_ADDR_NOTAVAIL)
                .filter(|_| self.peers.get(r).is_some_and(|p| p.name == name));
            match before {
                Some(a) => addrs[r as usize] = a,
                None => fresh.push((r, name)),
            }
        }
        let names: Vec<&[u8]> = fresh.iter().map(|(_, n)| *n).collect();
        let inserted = core.handles.insert_addresses(&names, own_len)?;
        for (&(r, _), a) in fresh.iter().zip(inserted) {
            addrs[r as usize] = a;
        }
        core.stats.addresses(fresh.len());
        core.addrs = addrs;
        core.rank = rank;
        drop(core);
        self.rank = rank;
        self.peers = Peers::new();
        for &(r, name) in known {
            self.peers.set(
                r,
                Peer {
                    name: name.to_vec(),
                    ..Peer::default()
                },
            );
        }
        self.peers.grow(size);
        Ok(())
    }
}
