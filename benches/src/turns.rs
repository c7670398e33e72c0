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
//! each rank's FIFO `PATH.go.RANK`; each rank runs its case, writes one
//! byte into the side's `PATH.done` and waits for the next. (One `go` for
//! all ranks let a rank that finished a case alone, as a one-sided get
//! does, take its peer's byte and start the next case without it: the
//! job hung.) Both sides end a case with a barrier before they pass the
//! turn: a rank waiting for its turn is outside MPI, and MPICH's
//! passive-target operations on a window it created need the target's
//! progress (a get waited forever). A rank waits for its turn by
//! trying to read a byte every [`POLL`], sleeping in between: it takes
//! next to nothing from the side measuring, and it wakes where it slept.
//! A rank blocked in the `read` instead is woken by the driver's write,
//! and Linux then moves a woken process to the waker's core: both ranks
//! of a side landed on one core, spinning there, while the other core
//! idled, for whole cases (2 ranks: barrier 0.27 -> 0.3-200 us, bcast
//! 8 B -> 490 us, in about one case in ten). Polling made that rare, not
//! gone (3 cases in 300); a rank whose turn came now spins for [`SETTLE`]
//! before its case, and in 300 cases none started on its peer's core. `PATH` comes from [`TURNS_ENV`];
//! without it a side runs every case straight on. A rank that started up
//! says so (a byte into `PATH.done`) and waits for its first turn; the
//! driver hands out turns once every side is ready. After its last case a
//! rank waits for one more turn, in which it exits: neither start-up nor
//! shutdown overlaps another side's measurement. A side whose processes
//! all exit has no more turns.

use std::fs::{File, OpenOptions};
use std::io::{ErrorKind, Read, Write};
use std::os::unix::fs::OpenOptionsExt;

/// The environment variable naming a side's turn FIFOs (`PATH.go.RANK`
/// and `PATH.done`).
pub const TURNS_ENV: &str = "ONESIDED_BENCH_TURNS";

/// How long a rank whose turn came spins before it goes on: a side's
/// ranks can still come back on one core (woken where a process of the
/// other side just ran), and Linux spreads spinning processes over idle
/// cores within a few scheduler ticks, not at once.
pub const SETTLE: std::time::Duration = std::time::Duration::from_millis(10);

/// How often a waiting rank looks for its turn.
pub const POLL: std::time::Duration = std::time::Duration::from_millis(1);

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
        let go = OpenOptions::new()
            .read(true)
            .custom_flags(libc::O_NONBLOCK)
            .open(format!("{path}.go.{rank}"))?;
        let done = OpenOptions::new()
            .write(true)
            .open(format!("{path}.done"))?;
        let mut turns = Turns { go, done };
        turns.pass()?;
        Ok(Some(turns))
    }

    /// Ends this rank's turn and waits for its next one.
    ///
    /// # Errors
    /// A driver that is gone (the FIFO ended: `UnexpectedEof`) or an I/O
    /// error.
    pub fn pass(&mut self) -> std::io::Result<()> {
        self.done.write_all(&[1])?;
        let mut token = [0u8; 1];
        loop {
            match self.go.read(&mut token) {
                Ok(1) => {
                    let start = std::time::Instant::now();
                    while start.elapsed() < SETTLE {
                        std::hint::spin_loop();
                    }
                    return Ok(());
                }
                Ok(_) => return Err(ErrorKind::UnexpectedEof.into()),
                Err(e) if e.kind() == ErrorKind::WouldBlock => std::thread::sleep(POLL),
                Err(e) if e.kind() == ErrorKind::Interrupted => {}
                Err(e) => return Err(e),
            }
        }
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
