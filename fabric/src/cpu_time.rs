//! The CPU time the calling thread has used: what a paced background move
//! measures its work by. A wall clock also counts the time the thread was
//! preempted, which on a host with more processes than CPUs makes a move
//! look slower than it is, and pacing by it starves the move.

use std::time::Duration;

/// The CPU time this thread has used so far (`CLOCK_THREAD_CPUTIME_ID`);
/// zero where the clock cannot be read (never on Linux).
pub fn thread() -> Duration {
    let mut ts = libc::timespec {
        tv_sec: 0,
        tv_nsec: 0,
    };
    // SAFETY: clock_gettime writes one timespec into `ts`, a valid, owned
    // and writable one; CLOCK_THREAD_CPUTIME_ID needs no other argument.
    let rc = unsafe { libc::clock_gettime(libc::CLOCK_THREAD_CPUTIME_ID, &mut ts) };
    match rc {
        0 => Duration::new(ts.tv_sec as u64, ts.tv_nsec as u32),
        _ => Duration::ZERO,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn work_counts_and_sleep_does_not() {
        let start = thread();
        let mut x = 0u64;
        while thread() - start < Duration::from_millis(2) {
            x = std::hint::black_box(x.wrapping_add(1));
        }
        let worked = thread();
        std::thread::sleep(Duration::from_millis(20));
        assert!(thread() - worked < Duration::from_millis(10));
        assert!(worked - start >= Duration::from_millis(2));
    }
}
