//! Turns: how the sides of one round (onesided, MPICH, MPICH with its
//! yield settings) run at once yet measure one at a time, case by case.
//!
//! These machines drift between speed modes within seconds, and a side's
//! whole suite takes seconds: two sides run one after the other can land
//! in different modes, and every ratio of that round is off. So the
//! driver starts every side of a round together and hands the turn from
//! side to side at each case: case `k` of one side runs right before or
//! after case `k` of the others (both sides run the cases in the same
//! order), and the order of the sides alternates from case to case
//! ([`order`]), so neither always runs first.
//!
//! The driver gives a side of `N` ranks its turn by writing a byte into
//! each rank's FIFO `PATH.go.RANK` (`PATH` from [`TURNS_ENV`]; without it
//! a side runs every case straight on); each rank runs its case, writes
//! one byte into the side's `PATH.done` and waits, blocked in a `read` of
//! its `go`, for the next. A rank that started up says so (a byte into
//! `PATH.done`) and waits for its first turn; the driver hands out turns
//! once every side is ready. After its last case a rank waits for one
//! more turn, in which it exits: neither start-up nor shutdown overlaps
//! another side's measurement. A side whose processes all exit has no
//! more turns. What each piece is for, as measured:
//!
//! - **One `go` per rank.** With one for all, a rank that finished a case
//!   alone (a one-sided get) took its peer's byte and started the next
//!   case without it: the job hung.
//! - **A barrier before passing the turn** (both sides): a rank waiting
//!   for its turn is outside MPI, and MPICH's passive-target gets on a
//!   window it created need the target's progress (one waited forever).
//! - **Blocked, not polling.** Wake-ups beside the side measuring are not
//!   harmless: 4 processes polling every 1 ms sped up MPICH's busy-polling
//!   ranks at 4 ranks on 2 cores 4 to 6 times (barrier 8.0 -> 2.2 ms,
//!   alltoallv 32 KiB 7.8 -> 1.3 ms: every wake-up is a chance for the
//!   rank that was waited for to run). A rank blocked in a `read` sleeps;
//!   so does its endpoint's progress thread, which waits ever longer while
//!   the application does nothing (`onesided_fabric`'s background
//!   progress).
//! - **[`SETTLE`].** Linux wakes a process blocked in a pipe on its
//!   waker's core: both ranks of a side landed on one core, where their
//!   waits (spin, then `sched_yield`) kept each other cache-hot, and the
//!   other core idled for whole cases (2 ranks: bcast 8 B 0.27 -> 490 us,
//!   about one case in ten). A rank whose turn came spins for `SETTLE`
//!   first, and Linux moves one of two processes spinning on a core to an
//!   idle one within a few ticks: over 288 cases none started on its
//!   peer's core.

use std::fs::{File, OpenOptions};
use std::io::{Read, Write};

/// The environment variable naming a side's turn FIFOs (`PATH.go.RANK`
/// and `PATH.done`).
pub const TURNS_ENV: &str = "ONESIDED_BENCH_TURNS";

/// How long a rank whose turn came spins before its case (see the module
/// docs).
pub const SETTLE: std::time::Duration = std::time::Duration::from_millis(10);

/// The order in which `sides` sides take turn `k`: in order for even
/// turns, reversed for odd ones.
pub fn order(k: usize, sides: usize) -> Vec<usize> {
    if k.is_multiple_of(2) {
        (0..sides).collect()
    } else {
        (0..sides).rev().collect()
    }
}

/// A rank's end of its side's turn FIFOs.
pub struct Turns {
    go: File,
    done: File,
}

impl Turns {
    /// Rank `rank`'s FIFOs of those [`TURNS_ENV`] names, opened; the rank
    /// says it is ready and waits for its first turn. `None` without the
    /// variable.
    ///
    /// # Errors
    /// A FIFO that does not open, or a driver that is gone.
    pub fn from_env(rank: u32) -> std::io::Result<Option<Turns>> {
        let Ok(path) = std::env::var(TURNS_ENV) else {
            return Ok(None);
        };
        let go = File::open(format!("{path}.go.{rank}"))?;
        let done = OpenOptions::new()
            .write(true)
            .open(format!("{path}.done"))?;
        let mut turns = Turns { go, done };
        turns.pass()?;
        Ok(Some(turns))
    }

    /// Ends this rank's turn, waits for its next one, then spins for
    /// [`SETTLE`].
    ///
    /// # Errors
    /// A driver that is gone (the FIFO ended: `UnexpectedEof`) or an I/O
    /// error.
    pub fn pass(&mut self) -> std::io::Result<()> {
        self.done.write_all(&[1])?;
        let mut token = [0u8; 1];
        self.go.read_exact(&mut token)?;
        let start = std::time::Instant::now();
        while start.elapsed() < SETTLE {
            std::hint::spin_loop();
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn sides_alternate_who_goes_first() {
        assert_eq!(order(0, 2), [0, 1]);
        assert_eq!(order(1, 2), [1, 0]);
        assert_eq!(order(2, 3), [0, 1, 2]);
        assert_eq!(order(3, 3), [2, 1, 0]);
        assert_eq!(order(7, 1), [0]);
    }
}
