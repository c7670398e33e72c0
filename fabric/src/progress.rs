//! The progress engine's waiting discipline.
//!
//! libfabric's `shm` and `tcp;ofi_rxm` (without automatic progress) move data
//! only while some thread calls into the provider. onesided therefore makes
//! progress on every call that waits, and by default also runs a background
//! progress thread per endpoint ([`ProgressMode::Background`]) that serves
//! passive-target traffic while the application computes.
//!
//! Neither may steal a core: on the development machines four ranks share two
//! cores. Every wait goes through a [`Backoff`]: a short spin, then
//! `sched_yield`, then sleeps that double up to a cap. Where the completion
//! queue has a wait object (`tcp`, `sockets`), the background thread blocks on
//! its file descriptor instead. The background thread also stays out of the
//! way while the application itself is making progress.

use std::time::Duration;

/// How an endpoint makes progress.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ProgressMode {
    /// Only calls into the library make progress. A target that computes
    /// without calling the library then serves no remote reads or atomics on
    /// providers with manual progress (`shm`, `tcp` without auto progress).
    Manual,
    /// A background thread makes progress too (the default): passive target
    /// works while the application computes.
    Background,
}

/// The default cap of a backoff's sleep.
pub const DEFAULT_MAX_SLEEP: Duration = Duration::from_micros(500);

/// What a [`Backoff`] says to do next.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Pause {
    /// Poll again at once.
    Spin,
    /// Give the core away once (`sched_yield`).
    Yield,
    /// Sleep this long.
    Sleep(Duration),
}

/// A spin, yield, then sleep schedule for polling loops. Pure: it says what
/// to do; [`Backoff::pause`] does it.
#[derive(Debug, Clone)]
pub struct Backoff {
    step: u32,
    max_sleep: Duration,
}

/// Polls without pausing before yielding.
const SPINS: u32 = 64;
/// Yields before sleeping.
const YIELDS: u32 = 16;
/// First sleep.
const FIRST_SLEEP: Duration = Duration::from_micros(2);

impl Backoff {
    /// A fresh backoff whose sleeps grow to `max_sleep`.
    pub fn new(max_sleep: Duration) -> Backoff {
        Backoff { step: 0, max_sleep }
    }

    /// Starts over (call after useful work was found).
    pub fn reset(&mut self) {
        self.step = 0;
    }

    /// The next pause, advancing the schedule.
    pub fn next_pause(&mut self) -> Pause {
        let step = self.step;
        self.step = self.step.saturating_add(1);
        if step < SPINS {
            Pause::Spin
        } else if step < SPINS + YIELDS {
            Pause::Yield
        } else {
            let doublings = (step - SPINS - YIELDS).min(20);
            Pause::Sleep((FIRST_SLEEP * (1u32 << doublings)).min(self.max_sleep))
        }
    }

    /// Takes the next pause.
    pub fn pause(&mut self) {
        match self.next_pause() {
            Pause::Spin => std::hint::spin_loop(),
            Pause::Yield => std::thread::yield_now(),
            Pause::Sleep(d) => std::thread::sleep(d),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn spins_then_yields_then_sleeps_up_to_the_cap() {
        let mut b = Backoff::new(Duration::from_micros(100));
        let pauses: Vec<Pause> = (0..200).map(|_| b.next_pause()).collect();
        assert!(pauses[..SPINS as usize].iter().all(|p| *p == Pause::Spin));
        assert!(pauses[SPINS as usize..(SPINS + YIELDS) as usize]
            .iter()
            .all(|p| *p == Pause::Yield));
        let sleeps: Vec<Duration> = pauses[(SPINS + YIELDS) as usize..]
            .iter()
            .map(|p| match p {
                Pause::Sleep(d) => *d,
                other => panic!("expected a sleep, got {other:?}"),
            })
            .collect();
        assert_eq!(sleeps[0], FIRST_SLEEP);
        assert!(sleeps.windows(2).all(|w| w[1] >= w[0]));
        assert_eq!(*sleeps.last().unwrap(), Duration::from_micros(100));
    }

    #[test]
    fn reset_starts_over() {
        let mut b = Backoff::new(DEFAULT_MAX_SLEEP);
        for _ in 0..1000 {
            b.next_pause();
        }
        assert_eq!(b.next_pause(), Pause::Sleep(DEFAULT_MAX_SLEEP));
        b.reset();
        assert_eq!(b.next_pause(), Pause::Spin);
    }
}
