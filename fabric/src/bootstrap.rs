//! How the processes of a job learn each other's addresses and places at
//! start: each puts one record in the process manager's key-value space,
//! reads the records of its O(log p) partners only, and the rest travel
//! over the fabric by a Bruck allgather among the partners. Pure
//! arithmetic and encoding; [`crate::World::init`] does the I/O.
//!
//! Cost per process for `p` processes: 1 PMI put, 1 PMI barrier, at most
//! 2 ceil(log2 p) PMI gets (the partners it sends to and receives from;
//! both sides insert each other before a message passes, as `shm` needs),
//! ceil(log2 p) messages and rounds carrying p - 1 records in all, and one
//! batched address-vector insertion of the p addresses. (Before: 2 puts
//! and 2p gets per process, 2p^2 PMI round trips in the job.)

/// Longest record a process may publish, in bytes.
pub const MAX_RECORD: usize = 1024;

/// The key of `rank`'s record.
pub(crate) fn record_key(rank: u32) -> String {
    format!("onesided-{rank}")
}

/// Rounds of the allgather among `n` processes: ceil(log2 n).
pub(crate) fn rounds(n: u32) -> u32 {
    crate::dissemination::rounds(n)
}

/// (whom to send to, whom to receive from) in round `k`: `me - 2^k` and
/// `me + 2^k`, modulo `n`.
pub(crate) fn partners(me: u32, n: u32, k: u32) -> (u32, u32) {
    let (from, to) = crate::dissemination::partners(me, n, k);
    (to, from)
}

/// Every process `me` exchanges with (sends to or receives from), in
/// increasing order, without itself.
pub(crate) fn all_partners(me: u32, n: u32) -> Vec<u32> {
    let mut all: Vec<u32> = (0..rounds(n))
        .flat_map(|k| {
            let (to, from) = partners(me, n, k);
            [to, from]
        })
        .filter(|&r| r != me)
        .collect();
    all.sort_unstable();
    all.dedup();
    all
}

/// Records sent in round `k` among `n`: min(2^k, n - 2^k).
pub(crate) fn count(n: u32, k: u32) -> usize {
    let step = 1usize << k;
    step.min((n as usize).saturating_sub(step))
}

/// One process's side of the allgather: the records of `me`, `me + 1`,
/// ... it holds so far.
#[derive(Debug)]
pub(crate) struct Gather {
    me: u32,
    n: u32,
    held: Vec<String>,
}

impl Gather {
    /// Starts with this process's own record.
    pub fn new(me: u32, n: u32, own: String) -> Gather {
        Gather {
            me,
            n,
            held: vec![own],
        }
    }

    /// What to send in round `k`: the first [`count`] records held, one
    /// a line.
    pub fn outgoing(&self, k: u32) -> String {
        self.held[..count(self.n, k).min(self.held.len())].join("\n")
    }

    /// Takes the message of round `k`; `None` when it does not hold the
    /// expected number of records.
    pub fn incoming(&mut self, k: u32, message: &str) -> Option<()> {
        let records: Vec<&str> = message.split('\n').collect();
        (records.len() == count(self.n, k)).then_some(())?;
        self.held.extend(records.into_iter().map(str::to_string));
        Some(())
    }

    /// Every record, in rank order, once all rounds are done.
    pub fn finish(mut self) -> Option<Vec<String>> {
        (self.held.len() == self.n as usize).then_some(())?;
        self.held.rotate_right(self.me as usize);
        Some(self.held)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_process_gathers_every_record_in_log_p_rounds() {
        for n in 1..=37u32 {
            let mut gathers: Vec<Gather> =
                (0..n).map(|r| Gather::new(r, n, format!("r{r}"))).collect();
            for k in 0..rounds(n) {
                let sent: Vec<String> = gathers.iter().map(|g| g.outgoing(k)).collect();
                for me in 0..n {
                    let (to, from) = partners(me, n, k);
                    assert_eq!(partners(to, n, k).1, me, "n {n}: {to} receives from {me}");
                    gathers[me as usize]
                        .incoming(k, &sent[from as usize])
                        .expect("the expected count");
                }
            }
            for g in gathers {
                let want: Vec<String> = (0..n).map(|r| format!("r{r}")).collect();
                assert_eq!(g.finish().expect("all"), want, "n {n}");
            }
        }
    }

    #[test]
    fn partners_are_at_most_two_per_round() {
        assert_eq!(all_partners(0, 1), Vec::<u32>::new());
        assert_eq!(all_partners(0, 2), vec![1]);
        assert_eq!(all_partners(3, 8), vec![1, 2, 4, 5, 7]);
        for n in [2u32, 5, 64, 1000] {
            for me in [0, n / 2, n - 1] {
                assert!(all_partners(me, n).len() <= 2 * rounds(n) as usize);
            }
        }
    }

    #[test]
    fn a_message_with_the_wrong_count_is_refused() {
        let mut g = Gather::new(0, 4, "a".into());
        assert!(g.incoming(0, "b\nc").is_none());
        assert!(g.incoming(0, "b").is_some());
        assert!(Gather::new(0, 4, "a".into()).finish().is_none());
    }
}
