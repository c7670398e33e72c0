//! Passive-target epochs: the lock word's requests and releases, and
//! closing an epoch.

use super::*;

impl Window {
    /// Locks group rank `target` (`MPI_Win_lock`): `Shared` or
    /// `Exclusive`; with [`Assert::NOCHECK`] no lock is taken, the caller
    /// vouching that no conflicting access happens. The epoch's guard
    /// reaches `target` alone.
    ///
    /// # Errors
    /// [`Error::NotInGroup`], [`Error::AlreadyLocked`],
    /// [`Error::EpochConflict`], [`Error::BadAssert`], or
    /// [`Error::Fabric`] from the atomics.
    pub fn lock(&self, target: u32, kind: LockKind, assert: Assert) -> Result<Epoch<'_>, Error> {
        let nocheck = assert
            .allow("lock", Assert::NOCHECK)?
            .contains(Assert::NOCHECK);
        self.group().job_rank(target)?;
        self.alive()?;
        self.epochs.borrow_mut().lock(target, kind)?;
        self.forget_attachments();
        let held = if nocheck {
            None
        } else if let Err(e) = self.acquire(target, kind) {
            let _ = self.epochs.borrow_mut().unlock(target);
            return Err(e);
        } else {
            Some(kind)
        };
        Ok(Epoch::opened(self, Some(target), held))
    }

    /// Opens a shared epoch on every member (`MPI_Win_lock_all`); with
    /// [`Assert::NOCHECK`], no lock word is touched. Its [`Epoch::unlock`]
    /// is `MPI_Win_unlock_all`.
    ///
    /// Each member's shared lock is taken before the first access to it in
    /// the epoch (as MPI allows), not here: opening the epoch costs no
    /// message, and a member never accessed costs none. A process that
    /// holds exclusive locks on several members while another's epoch
    /// waits for one of them can leave both waiting until the timeout.
    ///
    /// # Errors
    /// [`Error::EpochConflict`], [`Error::BadAssert`].
    pub fn lock_all(&self, assert: Assert) -> Result<Epoch<'_>, Error> {
        let nocheck = assert
            .allow("lock_all", Assert::NOCHECK)?
            .contains(Assert::NOCHECK);
        self.alive()?;
        self.epochs.borrow_mut().lock_all()?;
        self.forget_attachments();
        if !nocheck {
            // Its capacity stays from epoch to epoch: no allocation.
            let mut locks = self.shared_locks.borrow_mut();
            locks.clear();
            locks.resize(self.group().size() as usize, false);
        }
        Ok(Epoch::opened(self, None, None))
    }

    /// Applies `atomic` to `target`'s lock word; returns its previous value.
    fn lock_word(&self, target: u32, atomic: Atomic) -> Result<u64, Error> {
        let rank = self.group().job_rank(target)?;
        let peer = self.part(target, rank)?;
        if let (true, Some((header, _))) = (self.local_atomics, &peer.maps) {
            if self.rma().ep.ranks().is_dead(rank) {
                return Err(onesided_fabric::Error::PeerDead {
                    op: "window lock",
                    rank,
                }
                .into());
            }
            // One read-modify-write instruction each (a CAS loop would
            // move the cache line twice).
            let word = header.atomic_u64(LOCK_WORD)?;
            return Ok(match atomic {
                Atomic::FetchAdd(delta) => word.fetch_add(delta, Ordering::AcqRel),
                Atomic::CompareSwap { expected, new } => {
                    match word.compare_exchange(expected, new, Ordering::AcqRel, Ordering::Acquire)
                    {
                        Ok(v) | Err(v) => v,
                    }
                }
            });
        }
        let ep = &self.rma().ep;
        Ok(match atomic {
            Atomic::CompareSwap { expected, new } => {
                ep.compare_swap(rank, &peer.header, LOCK_WORD as u64, expected, new)?
            }
            Atomic::FetchAdd(delta) => ep.fetch_add(rank, &peer.header, LOCK_WORD as u64, delta)?,
        })
    }

    /// One attempt at `kind` on `target`'s lock word; whether granted (a
    /// refused shared request has been undone).
    fn try_acquire(&self, target: u32, kind: LockKind) -> Result<bool, Error> {
        let previous = self.lock_word(target, lock::request(kind))?;
        Ok(match lock::outcome(kind, previous) {
            Outcome::Granted => true,
            Outcome::Retry => false,
            Outcome::Undo(undo) => {
                self.lock_word(target, undo)?;
                false
            }
        })
    }

    /// In a `lock_all` epoch, takes `target`'s shared lock before the
    /// first access to it.
    pub(super) fn lock_lazily(&self, target: u32) -> Result<(), Error> {
        if self.shared_locks.borrow().get(target as usize) == Some(&false) {
            self.acquire(target, LockKind::Shared)?;
            if let Some(held) = self.shared_locks.borrow_mut().get_mut(target as usize) {
                *held = true;
            }
        }
        Ok(())
    }

    fn acquire(&self, target: u32, kind: LockKind) -> Result<(), Error> {
        // Made at the first refusal: an uncontended lock needs none (a
        // backoff holds a reference to the endpoint's wait object).
        let mut backoff = None;
        loop {
            if self.try_acquire(target, kind)? {
                return Ok(());
            }
            let rank = self.group().job_rank(target)?;
            if self.rma().ep.ranks().is_dead(rank) {
                return Err(onesided_fabric::Error::PeerDead {
                    op: "window lock",
                    rank,
                }
                .into());
            }
            let backoff = backoff.get_or_insert_with(|| self.rma().ep.backoff());
            if backoff.pause() > self.rma().ep.timeout() {
                return Err(self.timeout("window lock", rank));
            }
        }
    }

    fn timeout(&self, op: &'static str, rank: u32) -> Error {
        Error::Fabric(onesided_fabric::Error::Timeout {
            op,
            rank,
            after: self.rma().ep.timeout(),
        })
    }

    /// A provider access's result; a failure is noted for the epoch's
    /// lock releases.
    pub(super) fn through<T>(&self, result: onesided_fabric::Result<T>) -> Result<T, Error> {
        result.map_err(|e| {
            self.access_failed.set(true);
            e.into()
        })
    }

    /// Releases `kind` on `target`'s lock word. Where the word is not
    /// reached by CPU atomics, the release is posted and left in flight
    /// ([`Endpoint::add_detached`]),
    /// so closing an epoch there costs no round trip, unless an access or
    /// a request `failed` in the epoch: then the release waits, and fails
    /// with the target's error. Leaving it in flight is safe: a
    /// release only lowers the word, so a late one makes other processes'
    /// requests retry, never grants one wrongly, and this process's own
    /// later requests only add to it. The word's memory must not be reused
    /// while a release is on its way: its owner reuses it once every member
    /// has sent its release notice, and a notice follows the atomics in the
    /// provider's order (`FI_ORDER_SAW`) or waits for them
    /// ([`State::release`], `Drop for State`). A release that fails (its
    /// target died) is dropped: the epoch is over here.
    fn release(&self, target: u32, kind: LockKind, failed: bool) -> Result<(), Error> {
        let rank = self.group().job_rank(target)?;
        let peer = self.part(target, rank)?;
        let cpu = self.local_atomics && peer.maps.is_some();
        match lock::release(kind) {
            Atomic::FetchAdd(delta) if !cpu && !failed => {
                let ep = &self.rma().ep;
                Ok(ep.add_detached(rank, &peer.header, LOCK_WORD as u64, delta)?)
            }
            atomic => self.lock_word(target, atomic).map(drop),
        }
    }
}

impl Epoch<'_, Locked> {
    /// Closes the epoch (`MPI_Win_unlock`, or `MPI_Win_unlock_all` for a
    /// `lock_all` epoch): completes its operations, then releases its
    /// lock(s). On a member of another host the release is posted and not
    /// waited for: closing costs no round trip (see `Window::release`).
    ///
    /// # Errors
    /// [`Error::TransferFailed`] when a request-based operation failed (the
    /// locks are released all the same); [`Error::Fabric`] when a release
    /// atomic fails (the epoch is closed locally all the same).
    pub fn unlock(mut self) -> Result<(), Error> {
        self.close()
    }
}

impl Epoch<'_, Fenced> {
    /// The next fence of a fence epoch (`MPI_Win_fence`): completes this
    /// process's operations (none with [`Assert::NOPRECEDE`]) and waits
    /// until every member has reached it; the epoch goes on. End it with
    /// [`Epoch::end`].
    ///
    /// # Errors
    /// [`Error::BadAssert`] (it takes `NOPRECEDE`; `NOSUCCEED` is
    /// [`Epoch::end`]'s); [`Error::EpochConflict`] with operations in
    /// flight under [`Assert::NOPRECEDE`]; [`Error::TransferFailed`];
    /// barrier errors. Nothing changes on a checked error.
    pub fn fence(&mut self, assert: Assert) -> Result<(), Error> {
        let assert = assert.allow(
            "fence of an open epoch (end it with end)",
            Assert::NOPRECEDE,
        )?;
        self.window.fence_step(assert)
    }

    /// The last fence (`MPI_Win_fence` asserting `MPI_MODE_NOSUCCEED`):
    /// as [`Epoch::fence`], then the epoch ends with its guard.
    ///
    /// # Errors
    /// As [`Epoch::fence`]. On an error after the checks the epoch is
    /// ended all the same.
    pub fn end(mut self, assert: Assert) -> Result<(), Error> {
        let assert = assert.allow(
            "end of a fence epoch",
            Assert::NOPRECEDE | Assert::NOSUCCEED,
        )?;
        let ended = self.window.fence_step(assert | Assert::NOSUCCEED);
        // Else the guard's drop ends it here, without the collective.
        self.open = ended.is_err();
        ended
    }
}

impl<K: EpochKind> Epoch<'_, K> {
    fn close(&mut self) -> Result<(), Error> {
        if !self.open {
            return Ok(());
        }
        self.open = false;
        let window = self.window;
        let completed = window.complete(self.target);
        if K::FENCE {
            // A fence epoch dropped without its last fence: it ends here,
            // without the collective (as a last fence may be left out).
            let _ = window.epochs.borrow_mut().fence(true);
            return completed;
        }
        let failed = window.access_failed.replace(false) || completed.is_err();
        match self.target {
            Some(target) => {
                window.epochs.borrow_mut().unlock(target)?;
                if let Some(kind) = self.held {
                    window.release(target, kind, failed)?;
                }
            }
            None => {
                // Taken out and put back empty: its capacity is kept.
                let mut held = std::mem::take(&mut *window.shared_locks.borrow_mut());
                let unlocked = window.epochs.borrow_mut().unlock_all();
                let mut first_error = unlocked.err();
                for (target, _) in (0u32..).zip(&held).filter(|(_, h)| **h) {
                    if let Err(e) = window.release(target, LockKind::Shared, failed) {
                        first_error.get_or_insert(e);
                    }
                }
                held.clear();
                *window.shared_locks.borrow_mut() = held;
                if let Some(e) = first_error {
                    return Err(e);
                }
            }
        }
        completed
    }
}

impl<K: EpochKind> Drop for Epoch<'_, K> {
    fn drop(&mut self) {
        let _ = self.close();
    }
}
