//! Completion and synchronisation: flush, fence and free.

use super::*;

impl Window {
    /// Waits for the request-based operations to `target` (all when
    /// `None`); their outcomes stay with their requests. A failed one (or
    /// one given up, which the provider may still carry out) makes it an
    /// error, and taints the exposure: its memory is never reused.
    pub(super) fn complete(&self, target: Option<u32>) -> Result<(), Error> {
        if self.inflight.borrow().is_empty() && self.written.borrow().is_empty() {
            return Ok(());
        }
        let mut failed = None;
        let mut fence = |t: u32| {
            if self.complete_injected(t).is_err() {
                failed.get_or_insert(t);
            }
        };
        match target {
            Some(t) => {
                if self.written.borrow_mut().remove(&t) == Some(Written::Injected) {
                    fence(t);
                }
            }
            None => {
                let written: Vec<(u32, Written)> = self.written.borrow_mut().drain().collect();
                for (t, _) in written.into_iter().filter(|(_, w)| *w == Written::Injected) {
                    fence(t);
                }
            }
        }
        let list: Vec<_> = self.inflight.borrow_mut().drain(..).collect();
        let mut kept = Vec::new();
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

    /// Completes the injected puts to group rank `target`: one write of
    /// its fence word, delivered after them (`FI_ORDER_WAW`).
    fn complete_injected(&self, target: u32) -> Result<(), Error> {
        let rank = self.group().job_rank(target)?;
        let header = self.part(target, rank)?.header;
        let zero = [0u8; 8];
        self.through(
            self.rma()
                .ep
                .write_delivered(rank, &header, FENCE_WORD as u64, &zero),
        )
    }

    /// Active-target synchronisation (`MPI_Win_fence`) that opens a fence
    /// epoch: waits until every member has reached the fence, and returns
    /// the epoch's guard, through which every member may be accessed until
    /// the guard's last fence ([`Epoch::end`]). Every member calls it
    /// (fences count as barriers of the window's group).
    ///
    /// # Errors
    /// [`Error::EpochConflict`] inside another epoch; [`Error::BadAssert`]
    /// (it takes `NOPRECEDE`; a fence that opens no epoch,
    /// `NOSUCCEED`, is the guard's [`Epoch::end`]); barrier errors.
    pub fn fence(&self, assert: Assert) -> Result<Epoch<'_, Fenced>, Error> {
        let assert = assert.allow("fence opening an epoch", Assert::NOPRECEDE)?;
        self.fence_step(assert)?;
        Ok(Epoch::opened(self, None, None))
    }

    /// One fence: see [`Window::fence`], [`Epoch::fence`] and
    /// [`Epoch::end`].
    pub(super) fn fence_step(&self, assert: Assert) -> Result<(), Error> {
        let assert = assert.allow("fence", Assert::NOPRECEDE | Assert::NOSUCCEED)?;
        self.alive()?;
        let mut next = self.epochs.borrow().clone();
        next.fence(assert.contains(Assert::NOSUCCEED))?;
        if !assert.contains(Assert::NOPRECEDE) {
            self.complete(None)?;
        } else if self.inflight.borrow().iter().any(|i| !i.is_done())
            || self
                .written
                .borrow()
                .values()
                .any(|&w| w == Written::Injected)
        {
            return Err(Error::EpochConflict(
                "fence asserting NOPRECEDE with operations in flight",
            ));
        }
        self.forget_attachments();
        crate::Request::wait(&mut State::ibarrier(self.rma(), self.group())?)?;
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
