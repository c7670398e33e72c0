//! The passive-target lock protocol on a lock word, as pure decisions.
//!
//! Each target keeps one 64-bit lock word per window in registered memory.
//! Bit 63 marks an exclusive holder; the low 32 bits count shared holders.
//! Origins change the word only with remote atomics, so a target that
//! computes without calling the library still grants locks (through its
//! progress thread):
//!
//! - **exclusive**: compare-and-swap `0 → EXCLUSIVE`; granted when the word
//!   was 0, else retried after a backoff. Released by adding `-EXCLUSIVE`.
//! - **shared**: fetch-and-add `1`; granted when the word had no exclusive
//!   bit, else undone (add `-1`) and retried after a backoff. Released by
//!   adding `-1`.
//!
//! Fairness: an exclusive requester can wait while shared holders keep
//! coming and going (readers win); a shared requester never overtakes a
//! granted exclusive holder. The module decides; the window performs the
//! atomics and the backoff.

/// The exclusive bit of a lock word.
pub const EXCLUSIVE: u64 = 1 << 63;

/// A lock's kind, as in `MPI_LOCK_SHARED` / `MPI_LOCK_EXCLUSIVE`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
///
/// ```
/// use onesided_rma::{Assert, Group, LockKind, RemoteAccess, Rma};
///
/// # fn main() -> Result<(), Box<dyn std::error::Error>> {
/// let world = onesided_fabric::World::init()?; // one rank without a launcher
/// let rma = Rma::new(world.endpoint())?;
/// let window = rma.allocate(&Group::world(world.size()), 8, RemoteAccess::ReadWrite)?;
/// let reader = window.lock(0, LockKind::Shared, Assert::empty())?;
/// reader.unlock()?;
/// let writer = window.lock(0, LockKind::Exclusive, Assert::empty())?;
/// writer.put(0, 0, &[1u64])?;
/// writer.unlock()?;
/// window.free()?;
/// # drop(rma);
/// # world.finalize()?;
/// # Ok(())
/// # }
/// ```
pub enum LockKind {
    /// Any number of shared holders at once, no exclusive one.
    Shared,
    /// One holder, nobody else.
    Exclusive,
}

/// A remote atomic on the lock word.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Atomic {
    /// Compare-and-swap: replace `expected` with `new`.
    CompareSwap {
        /// The value that must be there.
        expected: u64,
        /// The value to put.
        new: u64,
    },
    /// Fetch-and-add of a wrapping delta.
    FetchAdd(u64),
}

/// What the previous value of the lock word means for a request.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Outcome {
    /// The lock is held.
    Granted,
    /// Not granted and nothing changed: back off and retry.
    Retry,
    /// Not granted, and the request's own change must be undone with this
    /// atomic before backing off and retrying.
    Undo(Atomic),
}

/// The atomic that requests `kind`.
pub fn request(kind: LockKind) -> Atomic {
    match kind {
        LockKind::Exclusive => Atomic::CompareSwap {
            expected: 0,
            new: EXCLUSIVE,
        },
        LockKind::Shared => Atomic::FetchAdd(1),
    }
}

/// Whether a request for `kind` that found `previous` in the word got it.
pub fn outcome(kind: LockKind, previous: u64) -> Outcome {
    match kind {
        LockKind::Exclusive if previous == 0 => Outcome::Granted,
        LockKind::Exclusive => Outcome::Retry,
        LockKind::Shared if previous & EXCLUSIVE == 0 => Outcome::Granted,
        LockKind::Shared => Outcome::Undo(release(LockKind::Shared)),
    }
}

/// The atomic that releases a granted `kind`.
pub fn release(kind: LockKind) -> Atomic {
    match kind {
        LockKind::Exclusive => Atomic::FetchAdd(EXCLUSIVE.wrapping_neg()),
        LockKind::Shared => Atomic::FetchAdd(1u64.wrapping_neg()),
    }
}

/// Applies `atomic` to `word` (what the target's memory does), returning
/// the previous value. Used by tests and by origins that hold the word
/// locally.
pub fn apply(word: &mut u64, atomic: Atomic) -> u64 {
    let previous = *word;
    match atomic {
        Atomic::CompareSwap { expected, new } if previous == expected => *word = new,
        Atomic::CompareSwap { .. } => {}
        Atomic::FetchAdd(delta) => *word = previous.wrapping_add(delta),
    }
    previous
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Runs one acquisition attempt against `word`; returns whether granted.
    fn attempt(word: &mut u64, kind: LockKind) -> bool {
        match outcome(kind, apply(word, request(kind))) {
            Outcome::Granted => true,
            Outcome::Retry => false,
            Outcome::Undo(undo) => {
                apply(word, undo);
                false
            }
        }
    }

    #[test]
    fn shared_holders_coexist_and_exclude_a_writer() {
        let mut word = 0;
        assert!(attempt(&mut word, LockKind::Shared));
        assert!(attempt(&mut word, LockKind::Shared));
        assert_eq!(word, 2);
        assert!(!attempt(&mut word, LockKind::Exclusive));
        assert_eq!(word, 2, "a refused exclusive request changes nothing");
        apply(&mut word, release(LockKind::Shared));
        apply(&mut word, release(LockKind::Shared));
        assert!(attempt(&mut word, LockKind::Exclusive));
        assert_eq!(word, EXCLUSIVE);
    }

    #[test]
    fn an_exclusive_holder_excludes_everyone_until_released() {
        let mut word = 0;
        assert!(attempt(&mut word, LockKind::Exclusive));
        assert!(!attempt(&mut word, LockKind::Exclusive));
        assert!(!attempt(&mut word, LockKind::Shared));
        assert_eq!(
            word, EXCLUSIVE,
            "a refused shared request undoes its increment"
        );
        apply(&mut word, release(LockKind::Exclusive));
        assert_eq!(word, 0);
        assert!(attempt(&mut word, LockKind::Shared));
    }

    #[test]
    fn interleaved_requests_never_grant_conflicting_locks() {
        // Every interleaving of two origins' steps (request, then undo if
        // needed) keeps the invariant: no exclusive holder alongside anyone.
        for first in [LockKind::Shared, LockKind::Exclusive] {
            for second in [LockKind::Shared, LockKind::Exclusive] {
                let mut word = 0;
                let a = apply(&mut word, request(first));
                let b = apply(&mut word, request(second));
                let (ga, gb) = (outcome(first, a), outcome(second, b));
                let granted_a = ga == Outcome::Granted;
                let granted_b = gb == Outcome::Granted;
                if granted_a && granted_b {
                    assert_eq!((first, second), (LockKind::Shared, LockKind::Shared));
                }
                for o in [ga, gb] {
                    if let Outcome::Undo(undo) = o {
                        apply(&mut word, undo);
                    }
                }
                let holders = [(granted_a, first), (granted_b, second)];
                let expect: u64 = holders
                    .iter()
                    .filter(|(g, _)| *g)
                    .map(|(_, k)| {
                        if *k == LockKind::Exclusive {
                            EXCLUSIVE
                        } else {
                            1
                        }
                    })
                    .sum();
                assert_eq!(word, expect, "{first:?} then {second:?}");
            }
        }
    }
}
