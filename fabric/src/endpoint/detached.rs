//! Atomics left in flight: posted, their completion taken by the endpoint
//! (`Core::retained`), counted until it arrives so that a caller can wait
//! for all of them at once. The lock release of an epoch on another host
//! goes so (onesided-rma), costing no round trip. Under
//! [`Atomics::Software`] the same holds for the request to the target's
//! atomics service: its reply's receive is left to the endpoint.

use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;

use fabric_sys as sys;

use super::{Endpoint, OnTimeout, Operation, Posted, SourceMatch};
use crate::atomic::{AtomicOp, Datatype};
use crate::atomic_service::{Action, Request, ATOMIC};
use crate::control;
use crate::error::Result;
use crate::memory::RemoteMemory;
use crate::provider::{Atomics, MrMode};

/// The storage of an [`Endpoint::add_detached`] operation to `rank`, kept
/// in `Core::retained` until it completes.
pub(super) struct Detached {
    _storage: Arc<[AtomicU64; 2]>,
    pub rank: u32,
}

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
        if self.inner.shared.granted.mr_mode.contains(MrMode::LOCAL) {
            // Its temporary registration would have to outlive the call:
            // wait instead.
            return self.fetch_add(at, remote, offset, value).map(drop);
        }
        let operation = Operation::Atomic;
        let name = operation.name();
        let address = Self::atomic_target(remote, offset, 8, 8, name, at)?;
        if self.inner.shared.granted.atomics == Atomics::Software {
            return self.add_detached_by_target(at, remote.key, address, value);
        }
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
        let detached = Detached {
            _storage: words,
            rank: at,
        };
        core.forget(token, OnTimeout::Release(Box::new(detached)));
        core.detached += 1;
        Ok(())
    }

    /// [`Endpoint::add_detached`] through `at`'s atomics service: the
    /// reply's receive is posted and left to the endpoint, then the
    /// request goes.
    fn add_detached_by_target(&self, at: u32, key: u64, address: u64, value: u64) -> Result<()> {
        let tag = control::reply_tag(self.inner.shared.next_call.fetch_add(1, Ordering::Relaxed));
        // The reply: a status word and the previous value.
        let words: Arc<[AtomicU64; 2]> = Arc::new([AtomicU64::new(0), AtomicU64::new(0)]);
        let base = words.as_ptr().cast::<u8>().cast_mut();
        let wire = SourceMatch::wire_tag(tag, at);
        // SAFETY: `words` (16 bytes; AtomicU64 has u64's layout) is kept by
        // the endpoint until the receive completes or is cancelled (below),
        // and nothing else touches it meanwhile.
        let posted = unsafe { self.post_recv_raw(at, wire, 0, (base, 16))? };
        // Left to the endpoint before the request goes, so that the reply
        // finds it so. No temporary registration was made (no FI_MR_LOCAL).
        let Posted {
            token, mut core, ..
        } = posted;
        let detached = Detached {
            _storage: Arc::clone(&words),
            rank: at,
        };
        core.forget(token, OnTimeout::Release(Box::new(detached)));
        core.detached += 1;
        drop(core);
        let request = Request {
            action: Action::Apply(AtomicOp::Sum),
            datatype: Datatype::U64,
            key,
            address,
            operand: &value.to_le_bytes(),
            compare: &[],
        };
        let body = control::frame(tag, &request.encode());
        let sent = self.send_tagged(
            Operation::Control(ATOMIC),
            at,
            control::request_tag(ATOMIC),
            &body,
        );
        if sent.is_err() {
            // No reply will come: stop counting it, and take the receive
            // back (its storage stays kept until its cancellation completes).
            let mut core = self.inner.shared.lock();
            if let Some(kept) = core.retained.iter_mut().find(|(t, _)| *t == token) {
                kept.1 = Box::new(words);
                core.detached -= 1;
            }
            // SAFETY: the endpoint is open; token is the context of the
            // receive posted above.
            unsafe { sys::fi_cancel(core.handles.ep_fid(), token as *mut std::ffi::c_void) };
        }
        sent
    }

    /// Waits until every operation of [`Endpoint::add_detached`] has
    /// completed, making progress (one to a rank known dead is not waited
    /// for: its completion may never come).
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
                let shared = &self.inner.shared;
                let live = |kept: &super::Kept| {
                    (kept.downcast_ref::<Detached>()).is_some_and(|d| !shared.is_dead(d.rank))
                };
                if core.detached == 0 || !core.retained.iter().any(|(_, kept)| live(kept)) {
                    return Ok(());
                }
            }
            self.pause_within_timeout(&mut backoff, "detached atomics")?;
        }
    }
}
