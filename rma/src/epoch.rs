//! Which accesses an origin may make: the epoch state machine of one window,
//! as plain data. Passive target: `lock`/`unlock` per target or
//! `lock_all`/`unlock_all`; active target: `fence`. Misuse is an error value
//! and changes nothing.

use crate::lock::LockKind;
use crate::Error;

/// The epochs one process has open on one window.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Epochs {
    /// Targets locked, sorted: a vector keeps its capacity from epoch to
    /// epoch (a map would allocate a node at every lock).
    locks: Vec<(u32, LockKind)>,
    lock_all: bool,
    fence: bool,
}

impl Epochs {
    /// Opens a passive epoch on `target`.
    ///
    /// # Errors
    /// [`Error::AlreadyLocked`] when `target` is locked already;
    /// [`Error::EpochConflict`] inside `lock_all` or a fence epoch.
    pub fn lock(&mut self, target: u32, kind: LockKind) -> Result<(), Error> {
        if self.lock_all {
            return Err(Error::EpochConflict("lock inside lock_all"));
        }
        if self.fence {
            return Err(Error::EpochConflict("lock inside a fence epoch"));
        }
        if self.find(target).is_ok() {
            return Err(Error::AlreadyLocked { target });
        }
        if let Err(at) = self.find(target) {
            self.locks.insert(at, (target, kind));
        }
        Ok(())
    }

    /// Closes the passive epoch on `target`; returns the lock's kind.
    ///
    /// # Errors
    /// [`Error::NotLocked`] when `target` is not locked.
    pub fn unlock(&mut self, target: u32) -> Result<LockKind, Error> {
        let at = self.find(target).map_err(|_| Error::NotLocked { target })?;
        Ok(self.locks.remove(at).1)
    }

    /// Where `target` is among the locked targets, or where it would go.
    fn find(&self, target: u32) -> Result<usize, usize> {
        self.locks.binary_search_by_key(&target, |&(t, _)| t)
    }

    /// Opens a shared passive epoch on every target.
    ///
    /// # Errors
    /// [`Error::EpochConflict`] when any epoch is open.
    pub fn lock_all(&mut self) -> Result<(), Error> {
        if self.lock_all {
            return Err(Error::EpochConflict("lock_all inside lock_all"));
        }
        if !self.locks.is_empty() {
            return Err(Error::EpochConflict("lock_all while targets are locked"));
        }
        if self.fence {
            return Err(Error::EpochConflict("lock_all inside a fence epoch"));
        }
        self.lock_all = true;
        Ok(())
    }

    /// Closes the `lock_all` epoch.
    ///
    /// # Errors
    /// [`Error::EpochConflict`] when no `lock_all` epoch is open.
    pub fn unlock_all(&mut self) -> Result<(), Error> {
        if !self.lock_all {
            return Err(Error::EpochConflict("unlock_all without lock_all"));
        }
        self.lock_all = false;
        Ok(())
    }

    /// A fence: closes the current fence epoch, and opens the next one
    /// unless `last` (`MPI_MODE_NOSUCCEED`).
    ///
    /// # Errors
    /// [`Error::EpochConflict`] inside a passive epoch.
    pub fn fence(&mut self, last: bool) -> Result<(), Error> {
        if self.lock_all || !self.locks.is_empty() {
            return Err(Error::EpochConflict("fence inside a passive epoch"));
        }
        self.fence = !last;
        Ok(())
    }

    /// Checks that an access to `target` lies inside an epoch.
    ///
    /// # Errors
    /// [`Error::NoEpoch`] when none covers it.
    pub fn check_access(&self, target: u32) -> Result<(), Error> {
        if self.lock_all || self.fence || self.find(target).is_ok() {
            Ok(())
        } else {
            Err(Error::NoEpoch { target })
        }
    }

    /// The lock held on `target`, if any (per-target locks only).
    pub fn lock_of(&self, target: u32) -> Option<LockKind> {
        self.find(target).ok().map(|at| self.locks[at].1)
    }

    /// Whether no epoch is open.
    pub fn is_idle(&self) -> bool {
        !self.passive_open() && !self.fence
    }

    /// Whether a passive epoch (lock or lock_all) is open: a window cannot
    /// be freed then (a fence epoch may be open, as in MPI).
    pub fn passive_open(&self) -> bool {
        !self.locks.is_empty() || self.lock_all
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn lock_then_access_then_unlock() {
        let mut e = Epochs::default();
        assert!(matches!(
            e.check_access(1),
            Err(Error::NoEpoch { target: 1 })
        ));
        e.lock(1, LockKind::Exclusive).unwrap();
        e.check_access(1).unwrap();
        assert!(matches!(
            e.check_access(2),
            Err(Error::NoEpoch { target: 2 })
        ));
        e.lock(2, LockKind::Shared).unwrap();
        assert_eq!(e.lock_of(2), Some(LockKind::Shared));
        assert_eq!(e.unlock(1).unwrap(), LockKind::Exclusive);
        assert!(e.check_access(1).is_err());
        e.unlock(2).unwrap();
        assert!(e.is_idle());
    }

    #[test]
    fn misuse_is_an_error_and_changes_nothing() {
        let mut e = Epochs::default();
        assert!(matches!(e.unlock(3), Err(Error::NotLocked { target: 3 })));
        assert!(matches!(e.unlock_all(), Err(Error::EpochConflict(_))));
        e.lock(3, LockKind::Shared).unwrap();
        let before = e.clone();
        assert!(matches!(
            e.lock(3, LockKind::Exclusive),
            Err(Error::AlreadyLocked { target: 3 })
        ));
        assert!(matches!(e.lock_all(), Err(Error::EpochConflict(_))));
        assert!(matches!(e.fence(false), Err(Error::EpochConflict(_))));
        assert_eq!(e, before);
    }

    #[test]
    fn lock_all_covers_every_target_and_excludes_other_epochs() {
        let mut e = Epochs::default();
        e.lock_all().unwrap();
        e.check_access(0).unwrap();
        e.check_access(99).unwrap();
        assert!(e.lock(1, LockKind::Shared).is_err());
        assert!(e.lock_all().is_err());
        e.unlock_all().unwrap();
        assert!(e.is_idle());
    }

    #[test]
    fn fences_open_and_close_active_epochs() {
        let mut e = Epochs::default();
        e.fence(false).unwrap();
        e.check_access(5).unwrap();
        assert!(e.lock(5, LockKind::Shared).is_err());
        e.fence(true).unwrap();
        assert!(e.check_access(5).is_err());
        assert!(e.is_idle());
    }
}
