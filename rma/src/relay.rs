//! One member's side of a dissemination barrier that arrivals drive: no
//! polling, so a progress engine can run it from its notice handler
//! (the release of an exposure, see `window::release`). Pure bookkeeping
//! over group positions; the caller sends the notices it returns.
//!
//! Cost for `n` members: ceil(log2 n) notices sent and received per
//! member, ceil(log2 n) rounds (see [`crate::request::dissemination`]).

use crate::request::dissemination;

/// A notice to send: round `round` to group position `to`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct Send {
    pub round: u32,
    pub to: u32,
}

/// The barrier at one member: which rounds' notices have arrived, and how
/// far it has got once entered.
#[derive(Debug, Clone, Default)]
pub(crate) struct Relay {
    /// This member's group position and the group size, once entered.
    entered: Option<(u32, u32)>,
    /// Bit k: round k's notice has arrived (they may come before entry).
    arrived: u64,
    /// Rounds completed.
    round: u32,
}

impl Relay {
    /// Enters the barrier as position `me` of `n`: the notices to send.
    pub fn enter(&mut self, me: u32, n: u32) -> Vec<Send> {
        if self.entered.is_some() {
            return Vec::new();
        }
        self.entered = Some((me, n));
        let mut sends = Vec::new();
        if dissemination::rounds(n) > 0 {
            sends.push(Send {
                round: 0,
                to: dissemination::partners(me, n, 0).0,
            });
        }
        self.advance(&mut sends);
        sends
    }

    /// Records the notice of `round`: the notices to send now.
    pub fn arrive(&mut self, round: u32) -> Vec<Send> {
        if round < 64 {
            self.arrived |= 1 << round;
        }
        let mut sends = Vec::new();
        self.advance(&mut sends);
        sends
    }

    /// Whether every member has entered (as far as this one can tell: all
    /// its rounds are complete).
    pub fn done(&self) -> bool {
        self.entered
            .is_some_and(|(_, n)| self.round >= dissemination::rounds(n))
    }

    fn advance(&mut self, sends: &mut Vec<Send>) {
        let Some((me, n)) = self.entered else {
            return;
        };
        let rounds = dissemination::rounds(n);
        while self.round < rounds && self.arrived & (1 << self.round) != 0 {
            self.round += 1;
            if self.round < rounds {
                sends.push(Send {
                    round: self.round,
                    to: dissemination::partners(me, n, self.round).0,
                });
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Runs `n` members that enter in `order`, delivering each notice
    /// when it is sent; returns the notices each member sent.
    fn run(n: u32, order: &[u32]) -> Vec<u32> {
        let mut relays = vec![Relay::default(); n as usize];
        let mut sent = vec![0u32; n as usize];
        let mut queue: Vec<(u32, Send)> = Vec::new();
        for (i, &me) in order.iter().enumerate() {
            queue.extend(
                relays[me as usize]
                    .enter(me, n)
                    .into_iter()
                    .map(|s| (me, s)),
            );
            while let Some((from, send)) = queue.pop() {
                sent[from as usize] += 1;
                assert_eq!(dissemination::partners(from, n, send.round).0, send.to);
                let to = send.to;
                queue.extend(
                    relays[to as usize]
                        .arrive(send.round)
                        .into_iter()
                        .map(|s| (to, s)),
                );
            }
            // Nobody is done before everyone has entered.
            let everyone = i + 1 == order.len();
            for r in &relays {
                assert_eq!(
                    r.done(),
                    everyone && n > 0,
                    "n {n}, after {} entered",
                    i + 1
                );
            }
        }
        sent
    }

    #[test]
    fn completes_only_when_all_entered_with_log_p_notices_each() {
        for n in 1..=33u32 {
            let forward: Vec<u32> = (0..n).collect();
            let backward: Vec<u32> = (0..n).rev().collect();
            let mixed: Vec<u32> = (0..n).map(|i| (i * 7 + 3) % n).collect();
            for order in [forward, backward, mixed] {
                let mut seen = order.clone();
                seen.sort_unstable();
                seen.dedup();
                if seen.len() != n as usize {
                    continue;
                }
                let sent = run(n, &order);
                assert!(
                    sent.iter().all(|&s| s == dissemination::rounds(n)),
                    "{n}: {sent:?}"
                );
            }
        }
    }

    #[test]
    fn a_notice_before_entry_waits_for_it() {
        let mut r = Relay::default();
        assert!(r.arrive(0).is_empty());
        assert!(!r.done());
        // Entering as 0 of 2: round 0 goes to 1, and the early notice
        // completes the barrier.
        assert_eq!(r.enter(0, 2), vec![Send { round: 0, to: 1 }]);
        assert!(r.done());
        assert!(r.enter(0, 2).is_empty(), "entered once");
    }
}
