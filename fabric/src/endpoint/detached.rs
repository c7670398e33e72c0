//! Atomics left in flight: posted, their completion taken by the endpoint
//! (`Core::retained`), counted until it arrives so that a caller can wait
//! for all of them at once. The lock release of an epoch on another host
//! goes so (onesided-rma), costing no round trip.

use std::sync::atomic::AtomicU64;
use std::sync::Arc;

use fabric_sys as sys;

use super::{Endpoint, OnTimeout, Operation, Posted};
use crate::atomic::{AtomicOp, Datatype};
use crate::error::Result;
use crate::memory::RemoteMemory;
use crate::provider::MrMode;

/// The storage of an [`Endpoint::add_detached`] operation, kept in
/// `Core::retained` until it completes.
pub(super) struct Detached(#[allow(dead_code)] Arc<[AtomicU64; 2]>);

impl Endpoint {
    /// Atomically adds `value` to the u64 at `offset` of `at`'s region
    /// `remote`, without waiting: the operation is posted and left to the
    /// endpoint, which takes its completion (an error, such as a dead
    /// target's, is dropped). [`Endpoint::settle_detached`] waits for every
    /// such operation.
    ///
    /// # Errors
    /// As [`Endpoint::atomic`] (checked before anything is posted), and a
    /// failed post.
    pub fn add_detached(
        &self,
        at: u32,
        remote: &RemoteMemory,
        offset: u64,
        value: u64,
    ) -> Result<()> {
        if self.inner.shared.mr_mode.contains(MrMode::LOCAL) {
            // Its temporary registration would have to outlive the call:
            // wait instead.
            return self.fetch_add(at, remote, offset, value).map(drop);
        }
        let operation = Operation::Atomic;
        let name = operation.name();
        let address = Self::atomic_target(remote, offset, 8, 8, name, at)?;
        self.atomic_count(Datatype::U64, Some(AtomicOp::Sum), true)?;
        // [operand, previous value]: the fetching form, as in
        // Endpoint::atomic, so that completion means "applied".
        let words: Arc<[AtomicU64; 2]> = Arc::new([AtomicU64::new(value), AtomicU64::new(0)]);
        let base = words.as_ptr().cast::<u8>().cast_mut();
        let posted = self.post(operation, at, (base, 16), true, |core, addr, ctx, desc| {
            // SAFETY: `words` (operand, then room for the previous value;
            // AtomicU64 has u64's layout) is kept by the endpoint until the
            // completion arrives (below), and desc covers it; the target
            // word lies in the peer's registration (checked).
            unsafe {
                sys::fi_fetch_atomic(
                    core.handles.ep,
                    base.cast(),
                    1,
                    desc,
                    base.wrapping_add(8).cast(),
                    desc,
                    addr,
                    address,
                    remote.key,
                    Datatype::U64.fi(),
                    AtomicOp::Sum.fi(),
                    ctx,
                )
            }
        })?;
        // No temporary registration was made (no FI_MR_LOCAL).
        let Posted {
            token, mut core, ..
        } = posted;
        core.forget(token, OnTimeout::Release(Box::new(Detached(words))));
        core.detached += 1;
        Ok(())
    }

    /// Waits until every operation of [`Endpoint::add_detached`] has
    /// completed, making progress.
    ///
    /// # Errors
    /// [`Error::Timeout`](crate::Error::Timeout) when some are still in
    /// flight after the endpoint's timeout.
    pub fn settle_detached(&self) -> Result<()> {
        let mut backoff = self.inner.shared.backoff();
        loop {
            {
                let mut core = self.inner.shared.lock();
                core.poll();
                if core.detached == 0 {
                    return Ok(());
                }
            }
            self.pause_within_timeout(&mut backoff, "detached atomics")?;
        }
    }
}
