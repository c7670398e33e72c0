//! Completion and synchronisation: flush, fence and free.

use super::*;

impl Window {
    /// Completes this process's operations to `target` at the target:
    /// blocking ones are complete already; request-based ones are waited
    /// for.
    ///
    /// # Errors
    /// [`Error::NotInGroup`]; [`Error::NoEpoch`] outside an epoch covering
    /// `target`; [`Error::TransferFailed`] when a request-based operation
    /// failed (its request holds the error).
    pub fn flush(&self, target: u32) -> Result<(), Error> {
        self.group().job_rank(target)?;
        self.epochs.borrow().check_access(target)?;
        self.complete(Some(target))
    }

    /// [`Window::flush`] for every target (`MPI_Win_flush_all`).
    ///
    /// # Errors
    /// [`Error::EpochConflict`] when no epoch is open;
    /// [`Error::TransferFailed`] as [`Window::flush`].
    pub fn flush_all(&self) -> Result<(), Error> {
        if self.epochs.borrow().is_idle() {
            return Err(Error::EpochConflict("flush_all outside an epoch"));
        }
        self.complete(None)
    }

    /// Completes this process's operations to `target` locally
    /// (`MPI_Win_flush_local`): the origin buffers may be reused. Here every
    /// operation copies or waits for its origin buffer before returning, so
    /// only the epoch is checked.
    ///
    /// # Errors
    /// As [`Window::flush`].
    pub fn flush_local(&self, target: u32) -> Result<(), Error> {
        self.group().job_rank(target)?;
        self.epochs.borrow().check_access(target)
    }

    /// Waits for the request-based operations to `target` (all when
    /// `None`); their outcomes stay with their requests. A failed one (or
    /// one given up, which the provider may still carry out) makes it an
    /// error, and taints the exposure: its memory is never reused.
    pub(super) fn complete(&self, target: Option<u32>) -> Result<(), Error> {
        let list: Vec<_> = self.inflight.borrow_mut().drain(..).collect();
        let mut kept = Vec::new();
        let mut failed = None;
        for inflight in list {
            if target.is_none_or(|t| inflight.target() == t) {
                if !inflight.finish() {
                    failed.get_or_insert(inflight.target());
                }
            } else {
                kept.push(inflight);
            }
        }
        self.inflight.borrow_mut().extend(kept);
        match failed {
            None => Ok(()),
            Some(target) => {
                self.exposure().tainted.store(true, Ordering::Relaxed);
                Err(Error::TransferFailed { target })
            }
        }
    }

    /// Active-target synchronisation (`MPI_Win_fence`): completes this
    /// process's operations, waits until every member has reached the fence,
    /// then opens the next fence epoch, or none when `last`
    /// (`MPI_MODE_NOSUCCEED`).
    ///
    /// # Errors
    /// [`Error::EpochConflict`] inside a passive epoch; barrier errors.
    pub fn fence(&self, last: bool) -> Result<(), Error> {
        self.alive()?;
        let mut next = self.epochs.borrow().clone();
        next.fence(last)?;
        self.complete(None)?;
        self.forget_attachments();
        crate::Request::wait(&mut State::ibarrier(&self.rma, self.group())?)?;
        *self.epochs.borrow_mut() = next;
        Ok(())
    }

    /// Frees the window: completes this process's operations on it
    /// (`MPI_Win_free`), at no other cost: **no message**, no wait. Peers
    /// may still access the exposure through their own windows until they
    /// free them: synchronise (an [`Rma::ibarrier`]) before giving the
    /// exposure's bytes another meaning. The memory itself is safe: an
    /// exposure keeps it until released, and releasing waits for the
    /// other members' releases before its memory is reused (see
    /// [`Exposure`]). An allocated or dynamic window releases the exposure
    /// it owns (a notice to each other member; regions still attached to
    /// a dynamic window stay registered and described until then).
    ///
    /// # Errors
    /// [`Error::TransferFailed`] when a request-based operation failed (the
    /// window is freed all the same, its memory never reused).
    pub fn free(mut self) -> Result<(), Error> {
        self.alive()?;
        let completed = self.complete(None);
        let attached = self.attached.take();
        let exposure = self.exposure();
        exposure.freed.fetch_add(1, Ordering::Relaxed);
        if let Some(attached) = attached {
            let (list, _) = attached.into_inner();
            let regions = list.into_iter().map(|a| a.region).collect();
            *lock_state(&exposure.dynamic) = Some((self.id, regions));
        }
        self.freed = true;
        completed
    }
}

impl Drop for Window {
    /// A window dropped without a successful `free`: peers may still use its
    /// memory, so its exposure's registration is never reused (while the
    /// `Rma` lives), and a dynamic window's attachments are kept likewise.
    fn drop(&mut self) {
        if !self.freed {
            self.exposure().tainted.store(true, Ordering::Relaxed);
            let attached = self.attached.take();
            if let Some(attached) = attached {
                let (list, _) = attached.into_inner();
                let regions = list.into_iter().map(|a| a.region).collect();
                *lock_state(&self.exposure().dynamic) = Some((self.id, regions));
            }
        }
        // Failures taint the exposure; nobody is left to tell.
        let _ = self.complete(None);
    }
}
