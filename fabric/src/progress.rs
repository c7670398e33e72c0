//! The progress engine's waiting discipline.
//!
//! libfabric's `shm` and `tcp;ofi_rxm` (with the manual data progress
//! onesided asks `tcp` for when its background thread runs: rxm's own thread
//! would take turns with the application's on two cores) move data only
//! while some thread calls into the provider. onesided therefore makes
//! progress on every call that waits, and by default also runs a background
//! progress thread per endpoint ([`ProgressMode::Background`]) that serves
//! passive-target traffic while the application computes.
//!
//! Neither may steal a core: on the development machines four ranks share two
//! cores. Every wait goes through a [`Backoff`]: a spin (none when the ranks
//! on this machine outnumber its cores), then `sched_yield`, then, where
//! the completion queue has a wait object (`tcp`, `sockets`, `verbs`),
//! blocks on it that end as soon as a completion or an incoming request
//! arrives; elsewhere (`shm`) sleeps that double up to a cap. The
//! background thread blocks on the wait object too. The background
//! thread also stays out of the way while the application itself is making
//! progress, and polls only every 10 ms while the application is busy in
//! calls that do not poll (collectives through shared memory,
//! [`Endpoint::note_busy`]).
//!
//! A thread that runs beside the application's, and must leave it its
//! core even at the cost of its own latency (a malleable job's helper
//! thread moving data in the background), makes its own waits block
//! from the start with [`wait_quietly`].
//!
//! [`Endpoint::note_busy`]: crate::Endpoint::note_busy

use std::sync::Arc;
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

/// The longest timeout accepted (a year): beyond it, deadlines overflow.
const MAX_TIMEOUT_SECS: f64 = 365.0 * 24.0 * 3600.0;

/// A timeout given in seconds (`2`, `0.5`): positive, finite, at most a
/// year; `None` otherwise.
pub fn timeout_from_secs(text: &str) -> Option<Duration> {
    let secs: f64 = text.trim().parse().ok()?;
    (secs > 0.0 && secs <= MAX_TIMEOUT_SECS).then(|| Duration::from_secs_f64(secs))
}

/// The default cap of a backoff's sleep.
pub const DEFAULT_MAX_SLEEP: Duration = Duration::from_micros(500);

/// What a [`Backoff`] says to do next.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Pause {
    /// Poll again at once.
    Spin,
    /// Give the core away once (`sched_yield`): free when nothing else wants
    /// the core, and hands it over when something does.
    Yield,
    /// Sleep this long.
    Sleep(Duration),
    /// Block on the wait object until it signals, at most this long.
    Block(Duration),
}

/// Something a waiting thread can block on until an event that may end
/// its wait (the completion queue's wait object), or a timeout.
pub(crate) trait WaitObject: Send + Sync {
    /// Returns at once when events are pending; else blocks until one
    /// arrives or `max` has passed.
    fn block(&self, max: Duration);
}

/// How long a wait polls without pausing when the host has a core for
/// every rank (when ranks outnumber cores, [`World::init`] sets none):
/// longer than a scheduler tick (4 ms at Linux's `HZ=250`), so that a rank
/// waits out, polling, a peer that lost its core to another task for a
/// time slice, as MPI libraries do (MPICH never stops polling). A wait
/// that yields sooner hands its core to that task whenever it outlasts
/// the spin, and the two ranks then wait for each other by turns: beside
/// a busy loop at `nice 19`, small collectives took far longer than
/// MPICH's with spins shorter than a tick, and about as long with longer
/// ones. The price, beside a busy loop at the ranks' own priority, is that
/// the spin holds a core that loop could have, and a large call whose
/// ranks wait for each other's copies loses some (measurements:
/// `docs/measurements.md`, "Default spin").
///
/// [`World::init`]: crate::World::init
pub const DEFAULT_SPIN: Duration = Duration::from_millis(10);
/// How long a wait yields between polls, after its spin, before it starts
/// sleeping.
const YIELD_FOR: Duration = Duration::from_millis(1);
/// The first sleep.
const FIRST_SLEEP: Duration = Duration::from_micros(4);

std::thread_local! {
    /// Whether this thread's waits neither spin nor yield ([`wait_quietly`]).
    static QUIET: std::cell::Cell<bool> = const { std::cell::Cell::new(false) };
}

/// Makes this thread's waits, from now on and for its life, sleep or
/// block from the start: no spin, no yield. A yielding thread stays
/// runnable, and the scheduler runs it often where threads outnumber
/// cores: a helper waiting for its peers by yields takes the cores of the
/// application it should leave them to.
pub fn wait_quietly() {
    QUIET.with(|q| q.set(true));
}

/// A spin, yield, then sleep schedule for polling loops, by time waited so
/// far: polls back to back for a while ([`DEFAULT_SPIN`] by default; none
/// when ranks outnumber cores, where spinning takes the core from the rank
/// being waited for), yields between polls for 1 ms more, then sleeps in
/// doubling steps up to a cap. A backoff with a wait object (an endpoint's
/// whose completion queue has one: [`Endpoint::backoff`]) blocks on it
/// instead of sleeping, for the same doubling steps: a wait for a
/// completion ends when it arrives, and a wait for anything else (a lock
/// another rank holds) looks again as often as a sleeping one. It yields
/// first all the same: where ranks outnumber cores, a yield hands the core
/// to the rank being waited for sooner than a block and its wake-up do
/// (figures: docs/measurements.md, "Three and four ranks on two cores:
/// where the time goes").
/// On a thread that called [`wait_quietly`], it sleeps (or blocks) from
/// the start.
/// Pure: [`Backoff::next_pause`] says what to do for a given elapsed time;
/// [`Backoff::pause`] does it.
///
/// [`Endpoint::backoff`]: crate::Endpoint::backoff
#[derive(Clone)]
pub struct Backoff {
    spin: Duration,
    yield_for: Duration,
    start: Option<std::time::Instant>,
    calls: u32,
    elapsed: Duration,
    sleep: Duration,
    max_sleep: Duration,
    wait: Option<Arc<dyn WaitObject>>,
}

impl std::fmt::Debug for Backoff {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Backoff")
            .field("spin", &self.spin)
            .field("elapsed", &self.elapsed)
            .field("sleep", &self.sleep)
            .field("max_sleep", &self.max_sleep)
            .field("blocks", &self.wait.is_some())
            .finish()
    }
}

impl Backoff {
    /// A fresh backoff that spins for [`DEFAULT_SPIN`] and whose sleeps grow
    /// to `max_sleep`.
    pub fn new(max_sleep: Duration) -> Backoff {
        Backoff::with_spin(DEFAULT_SPIN, max_sleep)
    }

    /// A fresh backoff that spins for `spin` (zero: yield from the start)
    /// and whose sleeps grow to `max_sleep`.
    pub fn with_spin(spin: Duration, max_sleep: Duration) -> Backoff {
        let backoff = Backoff {
            spin,
            yield_for: YIELD_FOR,
            start: None,
            calls: 0,
            elapsed: Duration::ZERO,
            sleep: FIRST_SLEEP.min(max_sleep),
            max_sleep,
            wait: None,
        };
        match QUIET.with(std::cell::Cell::get) {
            true => backoff.quiet(),
            false => backoff,
        }
    }

    /// This backoff, sleeping (or blocking) from the start: no spin, no
    /// yield (as on a thread that called [`wait_quietly`]), for a wait
    /// that must leave the cores to others.
    pub fn quiet(mut self) -> Backoff {
        self.spin = Duration::ZERO;
        self.yield_for = Duration::ZERO;
        self
    }

    /// This backoff, blocking on `wait` instead of yielding and sleeping.
    pub(crate) fn blocking_on(mut self, wait: Arc<dyn WaitObject>) -> Backoff {
        self.wait = Some(wait);
        self
    }

    /// Starts over (call after useful work was found).
    pub fn reset(&mut self) {
        let (wait, yield_for) = (self.wait.take(), self.yield_for);
        *self = Backoff::with_spin(self.spin, self.max_sleep);
        (self.wait, self.yield_for) = (wait, yield_for);
    }

    /// The pause to take after waiting `elapsed` so far; sleeps grow with
    /// each call past the yield phase.
    pub fn next_pause(&mut self, elapsed: Duration) -> Pause {
        if elapsed < self.spin {
            Pause::Spin
        } else if elapsed < self.spin + self.yield_for {
            Pause::Yield
        } else {
            let sleep = self.sleep;
            self.sleep = (self.sleep * 2).min(self.max_sleep);
            match self.wait {
                Some(_) => Pause::Block(sleep),
                None => Pause::Sleep(sleep),
            }
        }
    }

    /// Takes the next pause; returns how long the wait had lasted before it
    /// (counted from the eighth call), for the caller's deadline. While
    /// spinning the clock is read on every eighth call only (a read costs as
    /// much as a poll), and on every call after that.
    pub fn pause(&mut self) -> Duration {
        self.calls = self.calls.wrapping_add(1);
        match self.start {
            None if self.calls >= 8 => self.start = Some(std::time::Instant::now()),
            Some(start) if self.elapsed >= self.spin || self.calls.is_multiple_of(8) => {
                self.elapsed = start.elapsed()
            }
            _ => {}
        }
        let elapsed = self.elapsed;
        match self.next_pause(elapsed) {
            // Back to back: a PAUSE instruction per poll showed in 8-byte
            // message latency, and a rank spins only on a core of its own.
            Pause::Spin => {}
            Pause::Yield => std::thread::yield_now(),
            Pause::Sleep(d) => std::thread::sleep(d),
            Pause::Block(d) => {
                if let Some(wait) = &self.wait {
                    wait.block(d)
                }
            }
        }
        elapsed
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn us(n: u64) -> Duration {
        Duration::from_micros(n)
    }

    #[test]
    fn spins_then_yields_then_sleeps_up_to_the_cap() {
        let mut b = Backoff::with_spin(us(20), us(100));
        assert_eq!(b.next_pause(us(0)), Pause::Spin);
        assert_eq!(b.next_pause(us(19)), Pause::Spin);
        assert_eq!(b.next_pause(us(20)), Pause::Yield);
        assert_eq!(b.next_pause(us(1019)), Pause::Yield);
        let sleeps: Vec<Pause> = (0..8).map(|i| b.next_pause(us(1020 + i))).collect();
        assert_eq!(
            sleeps,
            [4, 8, 16, 32, 64, 100, 100, 100].map(|n| Pause::Sleep(us(n)))
        );
    }

    #[test]
    fn timeouts_parse_within_bounds() {
        assert_eq!(timeout_from_secs("2.5"), Some(Duration::from_millis(2500)));
        for bad in ["0", "-1", "1e20", "inf", "NaN", "x", ""] {
            assert_eq!(timeout_from_secs(bad), None, "{bad}");
        }
    }

    #[test]
    fn without_a_spin_phase_it_yields_at_once() {
        let mut b = Backoff::with_spin(Duration::ZERO, us(100));
        assert_eq!(b.next_pause(us(0)), Pause::Yield);
        assert_eq!(b.next_pause(us(999)), Pause::Yield);
        assert_eq!(b.next_pause(us(1000)), Pause::Sleep(FIRST_SLEEP));
        b.reset();
        assert_eq!(b.next_pause(us(0)), Pause::Yield);
    }

    #[test]
    fn a_quiet_thread_sleeps_from_the_start() {
        let pauses = std::thread::spawn(|| {
            wait_quietly();
            let mut b = Backoff::new(us(100));
            [b.next_pause(us(0)), b.next_pause(us(5))]
        });
        let pauses = pauses.join().expect("the thread ends");
        assert_eq!(pauses, [Pause::Sleep(FIRST_SLEEP), Pause::Sleep(us(8))]);
        // Other threads are unchanged; one wait can be quiet too.
        assert_eq!(Backoff::new(us(100)).next_pause(us(0)), Pause::Spin);
        let mut quiet = Backoff::new(us(100)).quiet();
        assert_eq!(quiet.next_pause(us(0)), Pause::Sleep(FIRST_SLEEP));
        quiet.next_pause(us(5));
        quiet.reset();
        assert_eq!(quiet.next_pause(us(0)), Pause::Sleep(FIRST_SLEEP));
    }

    #[test]
    fn reset_starts_over() {
        let mut b = Backoff::new(DEFAULT_MAX_SLEEP);
        assert_eq!(b.next_pause(DEFAULT_SPIN - us(1)), Pause::Spin);
        let sleeping = DEFAULT_SPIN + YIELD_FOR;
        for i in 0..100 {
            b.next_pause(sleeping + us(i));
        }
        assert_eq!(b.next_pause(sleeping), Pause::Sleep(DEFAULT_MAX_SLEEP));
        b.reset();
        assert_eq!(b.next_pause(sleeping), Pause::Sleep(FIRST_SLEEP));
    }

    /// Counts its blocks.
    struct Counting(std::sync::atomic::AtomicUsize);

    impl WaitObject for Counting {
        fn block(&self, _max: Duration) {
            self.0.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
        }
    }

    #[test]
    fn with_a_wait_object_it_blocks_instead_of_yielding_and_sleeping() {
        let counting = Arc::new(Counting(0.into()));
        let mut b = Backoff::with_spin(us(20), us(100)).blocking_on(counting.clone());
        assert_eq!(b.next_pause(us(19)), Pause::Spin);
        assert_eq!(b.next_pause(us(1019)), Pause::Yield);
        let blocks: Vec<Pause> = (0..7).map(|i| b.next_pause(us(1020 + i))).collect();
        assert_eq!(
            blocks,
            [4, 8, 16, 32, 64, 100, 100].map(|n| Pause::Block(us(n)))
        );
        b.reset();
        assert_eq!(b.next_pause(us(1020)), Pause::Block(FIRST_SLEEP));
        let mut b = Backoff::with_spin(Duration::ZERO, us(100)).blocking_on(counting.clone());
        // By the wait's own clock, not the test's: on a loaded machine a
        // yield can last a time slice, longer than a few milliseconds.
        while b.pause() < Duration::from_millis(2) {}
        // Past the yields, every pause blocked.
        assert!(counting.0.load(std::sync::atomic::Ordering::Relaxed) > 0);
    }

    #[test]
    fn pause_measures_time_itself() {
        let mut b = Backoff::with_spin(us(20), us(50));
        let start = std::time::Instant::now();
        while start.elapsed() < Duration::from_millis(3) {
            b.pause();
        }
        assert!(matches!(b.next_pause(us(5000)), Pause::Sleep(_)));
    }
}
