//! Who watches whom: the live members of the group form a ring in group
//! order; each pings its successor every period and watches its
//! predecessor, whose silence for `dead_after` (or whose process this
//! host saw end) it reports, to the master, or to every worker when the
//! predecessor is the master. Pure: the monitor thread does the I/O.
//!
//! Cost per process and period: one ping sent, one received, O(1) work,
//! whatever p (the master's pinging every worker cost it 2(p - 1)
//! messages and O(p) work per period). A death costs one report and the
//! master's broadcast of it (p - 2 notices, once).

use std::time::{Duration, Instant};

/// One member's view of the ring and its watch on its predecessor.
#[derive(Debug, Clone, Default)]
pub(crate) struct Ring {
    me: u32,
    dead: Vec<bool>,
    /// The predecessor watched, and when it was last heard from.
    watched: Option<(u32, Instant)>,
}

/// What a tick of the watch says.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Watch {
    /// All is well.
    Quiet,
    /// This predecessor went silent (or ended): count it dead and report it.
    Lost(u32),
}

impl Ring {
    /// Member `me` of `size`, everyone alive and heard from at `start`.
    pub fn new(me: u32, size: u32, start: Instant) -> Ring {
        let mut ring = Ring {
            me,
            dead: vec![false; size as usize],
            watched: None,
        };
        ring.watched = ring.predecessor().map(|p| (p, start));
        ring
    }

    fn step(&self, back: bool) -> Option<u32> {
        let n = self.dead.len() as u32;
        (1..n)
            .map(|k| match back {
                true => (self.me + n - k) % n,
                false => (self.me + k) % n,
            })
            .find(|&r| !self.dead[r as usize])
    }

    /// The next live member after this one, which it pings.
    pub fn successor(&self) -> Option<u32> {
        self.step(false)
    }

    /// The live member before this one, which it watches.
    pub fn predecessor(&self) -> Option<u32> {
        self.step(true)
    }

    /// Whether `rank` is counted dead here.
    pub fn is_dead(&self, rank: u32) -> bool {
        self.dead.get(rank as usize).copied().unwrap_or(true)
    }

    /// `rank` died: the watch moves to the new predecessor, heard from
    /// `now` on (it learns of the death on its own and pings here then).
    pub fn died(&mut self, rank: u32, now: Instant) {
        if let Some(d) = self.dead.get_mut(rank as usize) {
            *d = true;
        }
        let pred = self.predecessor();
        if self.watched.map(|(w, _)| w) != pred {
            self.watched = pred.map(|p| (p, now));
        }
    }

    /// A message came from `rank` at `now`.
    pub fn heard(&mut self, rank: u32, now: Instant) {
        if let Some((w, at)) = &mut self.watched {
            if *w == rank && *at < now {
                *at = now;
            }
        }
    }

    /// The watch at `now`: the predecessor is lost when it has been silent
    /// for longer than `dead_after` or `ended` says its process ended. A
    /// tick that comes `late` (this thread had no core) first counts the
    /// predecessor heard from one `period` ago: the pings it missed meanwhile
    /// could not be answered either.
    pub fn tick(
        &mut self,
        now: Instant,
        late: Option<Duration>,
        dead_after: Duration,
        ended: bool,
    ) -> Watch {
        let Some((pred, at)) = &mut self.watched else {
            return Watch::Quiet;
        };
        if let Some(period) = late {
            *at = (*at).max(now.checked_sub(period).unwrap_or(now));
        }
        match ended || now.saturating_duration_since(*at) > dead_after {
            true => Watch::Lost(*pred),
            false => Watch::Quiet,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn each_watches_its_predecessor_and_pings_its_successor() {
        let t = Instant::now();
        let mut r = Ring::new(0, 4, t);
        assert_eq!((r.successor(), r.predecessor()), (Some(1), Some(3)));
        r.died(3, t);
        assert_eq!(r.predecessor(), Some(2));
        r.died(1, t);
        assert_eq!((r.successor(), r.predecessor()), (Some(2), Some(2)));
        r.died(2, t);
        assert_eq!((r.successor(), r.predecessor()), (None, None));
        let alone = Ring::new(0, 1, t);
        assert_eq!((alone.successor(), alone.predecessor()), (None, None));
    }

    #[test]
    fn silence_loses_the_predecessor_and_hearing_keeps_it() {
        let t = Instant::now();
        let (period, after) = (Duration::from_millis(100), Duration::from_secs(1));
        let mut r = Ring::new(2, 5, t);
        let at = |secs: f64| t + Duration::from_secs_f64(secs);
        assert_eq!(r.tick(at(0.5), None, after, false), Watch::Quiet);
        r.heard(4, at(0.9));
        assert_eq!(
            r.tick(at(1.5), None, after, false),
            Watch::Lost(1),
            "only 1 is watched"
        );
        r.heard(1, at(2.0));
        assert_eq!(r.tick(at(2.5), None, after, false), Watch::Quiet);
        assert_eq!(r.tick(at(3.5), None, after, false), Watch::Lost(1));
        // A late tick does not count the time it missed.
        assert_eq!(r.tick(at(3.5), Some(period), after, false), Watch::Quiet);
        assert_eq!(r.tick(at(3.6), None, after, true), Watch::Lost(1), "ended");
        // The new predecessor is heard from the death on.
        r.died(1, at(4.0));
        assert_eq!(r.tick(at(4.1), None, after, false), Watch::Quiet);
        assert_eq!(r.predecessor(), Some(0));
    }
}
