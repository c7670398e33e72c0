//! Releasing exposures: a notice to every other member, no wait, and the
//! memory kept (still described) until they all have released it too;
//! and pushing descriptions to the members on other hosts.

use std::sync::atomic::Ordering;
use std::sync::Arc;

use onesided_fabric::MemoryRegion;

use super::{Described, State, DESCRIPTION_NOTICE, RELEASE_NOTICE};
use crate::lock_state;
use crate::Group;

/// An exposure this process released, kept (and still described to
/// peers) until every other member has released it too: then no peer
/// accesses it any more, and its memory goes back to the pool.
pub(super) struct Releasing {
    id: u64,
    /// The members (job ranks) not heard from yet.
    waiting: Vec<u32>,
    header: Option<MemoryRegion>,
    data: Option<MemoryRegion>,
    /// A dynamic window's number and its attachments' regions, described
    /// and kept until then too.
    dynamic: Option<(u64, Vec<Arc<MemoryRegion>>)>,
    /// Its memory may still change under it (a window over it was
    /// dropped without `free`, or a transfer on it failed): retired, never
    /// reused, once the members have released it.
    tainted: bool,
}

impl State {
    /// Releases exposure `id` of `group` (its memory `header` and `data`,
    /// and a dynamic window's `dynamic` number and attachments): tells
    /// every other member (a notice each, no wait) and keeps it, still
    /// described, until they all have released it too
    /// ([`State::collect_releases`]); `tainted` memory (a window over it
    /// was dropped in an unknown state) is never reused, but waits for
    /// them all the same: peers may still be reading it.
    pub(super) fn release(
        &self,
        id: u64,
        group: &Group,
        (header, data): (Option<MemoryRegion>, Option<MemoryRegion>),
        dynamic: Option<(u64, Vec<Arc<MemoryRegion>>)>,
        tainted: bool,
    ) {
        let me = self.ep.rank();
        if !self.ep.orders_send_after_atomic() {
            // A notice lets its member reuse its part's memory, lock word
            // included: this process's lock releases on it land first.
            let _ = self.ep.settle_detached();
        }
        let waiting: Vec<u32> = (group.members().iter().copied())
            .filter(|&r| r != me && !self.ep.is_dead(r))
            .filter(|&r| self.ep.notify(r, RELEASE_NOTICE, &id.to_le_bytes()).is_ok())
            .collect();
        {
            let mut releasing = lock_state(&self.releasing);
            releasing.push(Releasing {
                id,
                waiting,
                header,
                data,
                dynamic,
                tainted,
            });
            self.releasing_count
                .store(releasing.len(), Ordering::Release);
        }
        self.collect_releases();
    }

    /// Finishes the releases every other member has released too (or has
    /// died): forgets them and pools their memory. Returns how many are
    /// still waiting.
    pub(super) fn collect_releases(&self) -> usize {
        // Checked without the lock: expose calls this every time.
        if self.releasing_count.load(Ordering::Acquire) == 0 {
            return 0;
        }
        self.ep.progress();
        let (done, left) = {
            let mut served = lock_state(&self.served);
            let mut releasing = lock_state(&self.releasing);
            for r in releasing.iter_mut() {
                r.waiting.retain(|&rank| {
                    !served.released.remove(&(r.id, rank)) && !self.ep.is_dead(rank)
                });
            }
            if releasing.iter().all(|r| !r.waiting.is_empty()) {
                return releasing.len();
            }
            let (done, waiting): (Vec<Releasing>, Vec<Releasing>) = std::mem::take(&mut *releasing)
                .into_iter()
                .partition(|r| r.waiting.is_empty());
            *releasing = waiting;
            self.releasing_count
                .store(releasing.len(), Ordering::Release);
            // No longer described to peers (under the lock already held).
            for r in &done {
                served.described.remove(&r.id);
                served.pushed.retain(|(x, _), _| *x != r.id);
            }
            (done, releasing.len())
        };
        let mut pooled = Vec::with_capacity(done.len());
        for r in done {
            self.forget(r.id);
            if let Some((window, regions)) = r.dynamic {
                self.forget_dynamic(window);
                if r.tainted {
                    lock_state(&self.retired).extend(regions);
                }
            }
            if r.tainted {
                let mut retired = lock_state(&self.retired);
                retired.extend(r.header.map(Arc::new));
                retired.extend(r.data.map(Arc::new));
                continue;
            }
            pooled.push((r.header, r.data));
        }
        self.pool(pooled);
        left
    }

    /// A dynamic window's description goes away with it.
    fn forget_dynamic(&self, window: u64) {
        {
            let mut served = lock_state(&self.served);
            served.described.remove(&window);
            served.pushed.retain(|(x, _), _| *x != window);
        }
        self.directory.withdraw(window);
        lock_state(&self.attachments).retain(|(_, x), _| *x != window);
    }

    /// Sends `described` (of exposure or dynamic window `id`) to the
    /// members of `group` on other hosts, a notice each, no wait: their
    /// first access finds it instead of asking (members on this host read
    /// the board). A description too long for a notice goes as an empty
    /// one, which says "ask".
    pub(super) fn push(&self, group: &Group, id: u64, described: &Described) {
        let me = self.ep.rank();
        let mut far = (group.members().iter().copied())
            .filter(|&r| r != me && !self.same_host(r) && !self.ep.is_dead(r))
            .peekable();
        if far.peek().is_none() {
            return;
        }
        let mut body = id.to_le_bytes().to_vec();
        let encoded = described.encode();
        if body.len() + encoded.len() <= onesided_fabric::control::MAX_REQUEST {
            body.extend_from_slice(&encoded);
        }
        for rank in far {
            // A member that misses it asks.
            let _ = self.ep.notify(rank, DESCRIPTION_NOTICE, &body);
        }
    }
}
