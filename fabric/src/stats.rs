//! What an endpoint has sent and posted: the counters behind
//! [`crate::World::stats`] and `ONESIDED_STATS=1` (the role of MPI_T's
//! performance variables).
//!
//! Counting is part of posting: plain integers behind the endpoint's lock,
//! which every post holds already. The counts are exact, so tests assert
//! each protocol's cost in p against them.

use crate::atomic_service::ATOMIC;
use crate::endpoint::Operation;

/// Messages (or operations) and their payload bytes.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct Traffic {
    /// How many were posted.
    pub count: u64,
    /// Their payload, in bytes.
    pub bytes: u64,
}

impl Traffic {
    fn add(&mut self, bytes: usize) {
        self.count += 1;
        self.bytes += bytes as u64;
    }

    fn since(self, earlier: Traffic) -> Traffic {
        Traffic {
            count: self.count.saturating_sub(earlier.count),
            bytes: self.bytes.saturating_sub(earlier.bytes),
        }
    }
}

/// An endpoint's counters: what it sent by kind, what it asked the
/// process manager, the receives it keeps posted and whom it reached.
/// Cumulative since the endpoint opened, except the standing receives
/// and their memory, which are as they are now.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Stats {
    /// Tagged messages of the application (and of the layers above that
    /// send messages: collectives).
    pub tagged: Traffic,
    /// Control-plane requests, notices and replies sent, by service
    /// (see [`crate::control`]), in increasing order of service.
    pub control: Vec<(u16, Traffic)>,
    /// RMA reads posted.
    pub reads: Traffic,
    /// RMA writes posted.
    pub writes: Traffic,
    /// Atomics posted (every element operation the provider carries, or
    /// request to a target's atomics service).
    pub atomics: Traffic,
    /// Requests sent to the process manager (PMI), when counted by
    /// [`crate::World::stats`].
    pub pmi_requests: u64,
    /// Receives posted, all of them: the application's and the control
    /// plane's.
    pub receives: u64,
    /// Receives the endpoint keeps posted now for its control services.
    pub standing_receives: u64,
    /// Bytes those standing receives hold.
    pub receive_memory: u64,
    /// Distinct peers this endpoint has sent to or accessed.
    pub peers_contacted: u64,
    /// Peer addresses in the address vector.
    pub av_entries: u64,
}

impl Stats {
    /// Messages sent: tagged and control.
    pub fn messages(&self) -> u64 {
        self.tagged.count + self.control.iter().map(|(_, t)| t.count).sum::<u64>()
    }

    /// Bytes of the messages sent.
    pub fn message_bytes(&self) -> u64 {
        self.tagged.bytes + self.control.iter().map(|(_, t)| t.bytes).sum::<u64>()
    }

    /// Everything posted towards peers: messages, reads, writes, atomics.
    pub fn operations(&self) -> u64 {
        self.messages() + self.reads.count + self.writes.count + self.atomics.count
    }

    /// Control messages of `service`.
    pub fn service(&self, service: u16) -> Traffic {
        (self.control.iter())
            .find(|(s, _)| *s == service)
            .map_or(Traffic::default(), |(_, t)| *t)
    }

    /// What happened between `earlier` (a snapshot of the same endpoint)
    /// and this: cumulative counts as differences; the standing receives,
    /// their memory and the address vector as they are now.
    pub fn since(&self, earlier: &Stats) -> Stats {
        Stats {
            tagged: self.tagged.since(earlier.tagged),
            control: (self.control.iter())
                .map(|&(s, t)| (s, t.since(earlier.service(s))))
                .filter(|(_, t)| t.count > 0)
                .collect(),
            reads: self.reads.since(earlier.reads),
            writes: self.writes.since(earlier.writes),
            atomics: self.atomics.since(earlier.atomics),
            pmi_requests: self.pmi_requests.saturating_sub(earlier.pmi_requests),
            receives: self.receives.saturating_sub(earlier.receives),
            standing_receives: self.standing_receives,
            receive_memory: self.receive_memory,
            peers_contacted: self.peers_contacted.saturating_sub(earlier.peers_contacted),
            av_entries: self.av_entries,
        }
    }

    /// One line of JSON for `rank` (what `ONESIDED_STATS=1` prints).
    pub fn to_json(&self, rank: u32) -> String {
        let t = |t: Traffic| format!("{{\"count\":{},\"bytes\":{}}}", t.count, t.bytes);
        let control: Vec<String> = (self.control.iter())
            .map(|&(s, c)| format!("\"{s:#06x}\":{}", t(c)))
            .collect();
        format!(
            "{{\"onesided_stats\":{{\"rank\":{rank},\"messages\":{},\"message_bytes\":{},\
             \"tagged\":{},\"control\":{{{}}},\"reads\":{},\"writes\":{},\"atomics\":{},\
             \"pmi_requests\":{},\"receives\":{},\"standing_receives\":{},\
             \"receive_memory\":{},\"peers_contacted\":{},\"av_entries\":{}}}}}",
            self.messages(),
            self.message_bytes(),
            t(self.tagged),
            control.join(","),
            t(self.reads),
            t(self.writes),
            t(self.atomics),
            self.pmi_requests,
            self.receives,
            self.standing_receives,
            self.receive_memory,
            self.peers_contacted,
            self.av_entries,
        )
    }
}

/// Environment variable that makes every rank print its [`Stats`] as one
/// JSON line on standard error when it finalizes or leaves.
pub const STATS_ENV: &str = "ONESIDED_STATS";

/// Whether [`STATS_ENV`] asks for the counters at exit.
pub fn wanted_at_exit() -> bool {
    std::env::var(STATS_ENV).is_ok_and(|v| !v.is_empty() && v != "0")
}

/// The counters as the endpoint keeps them, behind its lock.
#[derive(Debug, Default)]
pub(crate) struct Counters {
    stats: Stats,
    /// One bit per rank ever reached.
    contacted: Vec<u64>,
}

impl Counters {
    /// Counts an operation posted to `rank` with `bytes` of payload.
    #[inline]
    pub fn posted(&mut self, op: Operation, rank: u32, bytes: usize) {
        let s = &mut self.stats;
        match op {
            Operation::Send => s.tagged.add(bytes),
            // An atomic is counted as one, whoever applies it.
            Operation::Control(ATOMIC) => s.atomics.add(bytes),
            Operation::Control(service) => return self.control(service, rank, bytes),
            Operation::Recv => {
                s.receives += 1;
                return;
            }
            Operation::Read => s.reads.add(bytes),
            Operation::Write | Operation::WriteDelivered => s.writes.add(bytes),
            Operation::Atomic | Operation::FetchAtomic | Operation::CompareSwap => {
                s.atomics.add(bytes)
            }
        }
        self.contact(rank);
    }

    /// Counts a reply of `service` sent to `rank`: a control message,
    /// except the atomics service's (a provider atomic's response is not
    /// counted either).
    pub fn reply(&mut self, service: u16, rank: u32, bytes: usize) {
        if service != ATOMIC {
            self.control(service, rank, bytes);
        }
    }

    /// Counts a control message of `service` sent to `rank`.
    pub fn control(&mut self, service: u16, rank: u32, bytes: usize) {
        let control = &mut self.stats.control;
        let at = match control.binary_search_by_key(&service, |(s, _)| *s) {
            Ok(at) => at,
            Err(at) => {
                control.insert(at, (service, Traffic::default()));
                at
            }
        };
        control[at].1.add(bytes);
        self.contact(rank);
    }

    /// Counts a standing receive of `bytes` posted.
    pub fn standing_posted(&mut self, bytes: usize) {
        self.stats.receives += 1;
        self.stats.standing_receives += 1;
        self.stats.receive_memory += bytes as u64;
    }

    /// Counts a standing receive of `bytes` completed (or given up).
    pub fn standing_done(&mut self, bytes: usize) {
        self.stats.standing_receives = self.stats.standing_receives.saturating_sub(1);
        self.stats.receive_memory = self.stats.receive_memory.saturating_sub(bytes as u64);
    }

    /// Counts `n` addresses inserted into the address vector.
    pub fn addresses(&mut self, n: usize) {
        self.stats.av_entries += n as u64;
    }

    fn contact(&mut self, rank: u32) {
        let (word, bit) = ((rank / 64) as usize, rank % 64);
        if word >= self.contacted.len() {
            self.contacted.resize(word + 1, 0);
        }
        if self.contacted[word] & (1 << bit) == 0 {
            self.contacted[word] |= 1 << bit;
            self.stats.peers_contacted += 1;
        }
    }

    /// A snapshot.
    pub fn snapshot(&self) -> Stats {
        self.stats.clone()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn counts_by_kind_and_peer() {
        let mut c = Counters::default();
        c.posted(Operation::Send, 3, 10);
        c.posted(Operation::Control(0x102), 3, 8);
        c.posted(Operation::Control(0x101), 70, 16);
        c.control(0x102, 4, 8);
        c.posted(Operation::Read, 70, 100);
        c.posted(Operation::FetchAtomic, 5, 8);
        c.posted(Operation::Recv, 9, 100);
        c.standing_posted(4096);
        c.standing_posted(4096);
        c.standing_done(4096);
        c.addresses(64);
        let s = c.snapshot();
        assert_eq!(
            s.tagged,
            Traffic {
                count: 1,
                bytes: 10
            }
        );
        assert_eq!(
            s.control.iter().map(|(s, _)| *s).collect::<Vec<_>>(),
            [0x101, 0x102]
        );
        assert_eq!(
            s.service(0x102),
            Traffic {
                count: 2,
                bytes: 16
            }
        );
        assert_eq!(
            (s.messages(), s.message_bytes(), s.operations()),
            (4, 42, 6)
        );
        assert_eq!(
            (s.receives, s.standing_receives, s.receive_memory),
            (3, 1, 4096)
        );
        assert_eq!(
            s.peers_contacted, 4,
            "3, 4, 5 and 70; a receive reaches nobody"
        );
        assert_eq!(s.av_entries, 64);
    }

    #[test]
    fn since_subtracts_counts_and_keeps_levels() {
        let mut c = Counters::default();
        c.posted(Operation::Send, 1, 4);
        c.standing_posted(100);
        let before = c.snapshot();
        c.posted(Operation::Send, 1, 4);
        c.posted(Operation::Control(7), 2, 3);
        let d = c.snapshot().since(&before);
        assert_eq!(d.tagged, Traffic { count: 1, bytes: 4 });
        assert_eq!(d.control, vec![(7, Traffic { count: 1, bytes: 3 })]);
        assert_eq!((d.peers_contacted, d.receive_memory), (1, 100));
        let json = c.snapshot().to_json(2);
        assert!(
            json.starts_with("{\"onesided_stats\":{\"rank\":2,\"messages\":3,"),
            "{json}"
        );
        assert!(
            json.contains("\"0x0007\":{\"count\":1,\"bytes\":3}"),
            "{json}"
        );
    }
}
