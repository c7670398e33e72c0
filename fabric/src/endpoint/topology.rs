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
    /// `Endpoint::connect_partners` inserted already stay.
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
    pub(crate) fn connect_partners(
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
    pub(crate) fn reserve(&self, count: u32) -> Result<std::ops::Range<u32>> {
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
    pub(crate) fn add_peer(
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
    /// [`Ranks::watch_processes`]).
    pub(crate) fn process_of(&self, rank: u32) -> Option<Process> {
        self.inner.shared.lock().processes.get(rank)
    }

    /// The endpoint name of `rank`, when known (empty for a rank that has
    /// left).
    pub(crate) fn peer_name(&self, rank: u32) -> Option<&[u8]> {
        self.inner.peers.get(rank).map(|p| p.name.as_slice())
    }

    /// Records each rank's host identity ([`crate::world::host_id`]),
    /// board name and process (see [`Ranks::watch_processes`]), keeps
    /// this process's `board`, and records `host_cpus`,
    /// the CPUs the ranks on its machine may run on together
    /// ([`crate::world::cpus_together`]); [`crate::World::init`] does, from
    /// the PMI key space.
    ///
    /// # Errors
    /// [`Error::StillShared`] when other handles of the endpoint exist.
    pub(crate) fn set_hosts(
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
