//! A test-and-set lock whose release is a plain store: the endpoint's,
//! and the layers' above for state that small calls lock every time.
//!
//! Every operation takes the endpoint lock once or twice, so its cost shows
//! in small-message latency (measured: the two atomic read-modify-writes of
//! a `std::sync::Mutex` lock/unlock pair are a sizeable part of an 8-byte
//! shm message; figures: docs/measurements.md, "Spin locks"). Worse, a
//! locked instruction waits for the stores before it to leave the core:
//! after a store into shared memory that a peer reads (a flag of a
//! shared-memory collective), the release of a `Mutex` waits for that line
//! to come back from the peer, where a plain store does not wait. Holders
//! do short work; waiters spin briefly, then yield, so a preempted holder
//! on an oversubscribed machine gets its core back. Use it where the lock
//! is rarely contended (threads that share a handle); it does not block,
//! and does not poison.

use std::cell::UnsafeCell;
use std::ops::{Deref, DerefMut};
use std::sync::atomic::{AtomicBool, Ordering};

/// A value behind a test-and-set lock.
///
/// ```
/// let counter = onesided_fabric::spin::SpinLock::new(0u64);
/// *counter.lock() += 1;
/// assert_eq!(*counter.lock(), 1);
/// ```
pub struct SpinLock<T> {
    locked: AtomicBool,
    value: UnsafeCell<T>,
}

// SAFETY: access to the value is serialised by `locked` (acquire on lock,
// release on unlock), exactly as for a mutex; T must be Send to move between
// the threads that take the lock.
unsafe impl<T: Send> Sync for SpinLock<T> {}
// SAFETY: as above.
unsafe impl<T: Send> Send for SpinLock<T> {}

impl<T> SpinLock<T> {
    /// A new, unlocked lock around `value`.
    pub fn new(value: T) -> SpinLock<T> {
        SpinLock {
            locked: AtomicBool::new(false),
            value: UnsafeCell::new(value),
        }
    }

    /// Takes the lock.
    pub fn lock(&self) -> SpinGuard<'_, T> {
        let mut spins = 0u32;
        while self
            .locked
            .compare_exchange_weak(false, true, Ordering::Acquire, Ordering::Relaxed)
            .is_err()
        {
            while self.locked.load(Ordering::Relaxed) {
                spins += 1;
                if spins < 64 {
                    std::hint::spin_loop();
                } else {
                    std::thread::yield_now();
                }
            }
        }
        SpinGuard { lock: self }
    }

    /// Takes the lock if it is free (`None`: held, by another thread or
    /// by this one).
    pub fn try_lock(&self) -> Option<SpinGuard<'_, T>> {
        (self.locked)
            .compare_exchange(false, true, Ordering::Acquire, Ordering::Relaxed)
            .is_ok()
            .then_some(SpinGuard { lock: self })
    }
}

/// Holds a [`SpinLock`]; releases it on drop.
pub struct SpinGuard<'a, T> {
    lock: &'a SpinLock<T>,
}

impl<T> Deref for SpinGuard<'_, T> {
    type Target = T;
    fn deref(&self) -> &T {
        // SAFETY: the guard holds the lock, so no other reference exists.
        unsafe { &*self.lock.value.get() }
    }
}

impl<T> DerefMut for SpinGuard<'_, T> {
    fn deref_mut(&mut self) -> &mut T {
        // SAFETY: the guard holds the lock, so no other reference exists.
        unsafe { &mut *self.lock.value.get() }
    }
}

impl<T> Drop for SpinGuard<'_, T> {
    fn drop(&mut self) {
        self.lock.locked.store(false, Ordering::Release);
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::sync::Arc;

    #[test]
    fn try_lock_fails_while_held() {
        let lock = SpinLock::new(1);
        let held = lock.lock();
        assert!(lock.try_lock().is_none());
        drop(held);
        assert_eq!(lock.try_lock().map(|g| *g), Some(1));
    }

    #[test]
    fn serialises_increments_across_threads() {
        let lock = Arc::new(SpinLock::new(0u64));
        let threads: Vec<_> = (0..4)
            .map(|_| {
                let lock = Arc::clone(&lock);
                std::thread::spawn(move || {
                    for _ in 0..10_000 {
                        *lock.lock() += 1;
                    }
                })
            })
            .collect();
        for t in threads {
            t.join().unwrap();
        }
        assert_eq!(*lock.lock(), 40_000);
    }
}
