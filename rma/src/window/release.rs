//! Releasing exposures, and pushing descriptions to a few members on
//! other hosts.
//!
//! A process that releases an exposure (its handle and its windows are
//! all dropped) enters a dissemination barrier of the exposure's group,
//! which the progress engine drives from its `RELEASE_NOTICE` handler
//! ([`crate::relay`]): ceil(log2 p) notices per member, no wait. The
//! memory stays described and registered until the barrier completes
//! here, which says that every member has released the exposure too, so
//! no peer's access can reach memory that now means something else; then
//! it goes back to the pool. (Before, each member told every other one:
//! p - 1 notices per member and release.) A member that died leaves the
//! barrier incomplete: the memory is then retired, never reused.
//!
//! Descriptions travel to the members that access them: a member asks an
//! owner elsewhere at its first access (one round trip), except the
//! owner's [`PUSHED`] nearest members on other hosts in group order (its
//! ring neighbours on both sides, as stencils access them), to which the
//! owner pushes its description when it publishes it, so that their first
//! access finds it.

use std::sync::atomic::Ordering;
use std::sync::Arc;

use onesided_fabric::MemoryRegion;

use super::{Described, State, DESCRIPTION_NOTICE, RELEASE_NOTICE};
use crate::lock_state;
use crate::relay::Send;
use crate::Group;

/// Members on other hosts an owner pushes a description to.
pub(super) const PUSHED: usize = 4;

/// An exposure this process released, kept (and still described to
/// peers) until its release barrier completes: then no peer accesses it
/// any more, and its memory goes back to the pool.
pub(super) struct Releasing {
    id: u64,
    group: Group,
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

/// A release notice's body: the exposure and the barrier's round.
pub(super) fn notice(id: u64, round: u32) -> [u8; 12] {
    let mut body = [0u8; 12];
    body[..8].copy_from_slice(&id.to_le_bytes());
    body[8..].copy_from_slice(&round.to_le_bytes());
    body
}

/// The exposure and round of a release notice.
pub(super) fn parse_notice(body: &[u8]) -> Option<(u64, u32)> {
    let id = u64::from_le_bytes(body.get(..8)?.try_into().ok()?);
    let round = u32::from_le_bytes(body.get(8..12)?.try_into().ok()?);
    Some((id, round))
}

impl State {
    /// Releases exposure `id` of `group` (its memory `header` and `data`,
    /// and a dynamic window's `dynamic` number and attachments): enters
    /// the exposure's release barrier (no wait) and keeps the memory,
    /// still described, until the barrier completes
    /// ([`State::collect_releases`]); `tainted` memory (a window over it
    /// was dropped in an unknown state) is never reused, but waits all the
    /// same: peers may still be reading it.
    pub(super) fn release(
        &self,
        id: u64,
        group: &Group,
        (header, data): (Option<MemoryRegion>, Option<MemoryRegion>),
        dynamic: Option<(u64, Vec<Arc<MemoryRegion>>)>,
        tainted: bool,
    ) {
        if !self.ep.granted().orders_send_after_atomic() {
            // The barrier lets its members reuse their parts' memory, lock
            // words included: this process's lock releases on them land
            // first.
            let _ = self.ep.settle_detached();
        }
        {
            let mut releasing = lock_state(&self.releasing);
            releasing.push(Releasing {
                id,
                group: group.clone(),
                header,
                data,
                dynamic,
                tainted,
            });
            self.releasing_count
                .store(releasing.len(), Ordering::Release);
        }
        let sends = match group.group_rank(self.ep.rank()) {
            Some(me) => {
                let mut served = lock_state(&self.served);
                let relay = served.releases.entry(id).or_default();
                relay.group = Some(group.clone());
                relay.relay.enter(me, group.size())
            }
            None => Vec::new(),
        };
        // Sent without the lock, which the notice handler takes.
        self.send_release_notices(id, group, &sends);
        self.collect_releases();
    }

    /// Sends the release notices of exposure `id`'s barrier in `sends`
    /// (a member that cannot be told counts as dead there).
    fn send_release_notices(&self, id: u64, group: &Group, sends: &[Send]) {
        for send in sends {
            if let Ok(to) = group.job_rank(send.to) {
                let _ = self.ep.notify(to, RELEASE_NOTICE, &notice(id, send.round));
            }
        }
    }

    /// Finishes the releases whose barrier has completed: forgets them and
    /// pools their memory; retires the memory of those a dead member
    /// keeps from completing. Returns how many are still waiting.
    pub(super) fn collect_releases(&self) -> usize {
        // Checked without the lock: expose calls this every time.
        if self.releasing_count.load(Ordering::Acquire) == 0 {
            return 0;
        }
        self.ep.progress();
        // Looked up only once someone died: expose calls this every time.
        let dead = match self.ep.ranks().any_dead() {
            true => self.ep.ranks().dead_ranks(),
            false => Vec::new(),
        };
        let (done, left) = {
            let mut served = lock_state(&self.served);
            let mut releasing = lock_state(&self.releasing);
            let mut done = Vec::new();
            let mut i = 0;
            while i < releasing.len() {
                let r = &mut releasing[i];
                let complete = served.releases.get(&r.id).is_some_and(|x| x.relay.done());
                let orphaned = !complete
                    && !dead.is_empty()
                    && r.group.members().iter().any(|m| dead.contains(m));
                if complete || orphaned {
                    // A member died: the others' barriers may never
                    // complete, and peers may still access the memory.
                    r.tainted |= orphaned;
                    done.push(releasing.swap_remove(i));
                } else {
                    i += 1;
                }
            }
            if done.is_empty() {
                return releasing.len();
            }
            self.releasing_count
                .store(releasing.len(), Ordering::Release);
            // No longer described to peers (under the lock already held).
            for r in &done {
                served.releases.remove(&r.id);
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

    /// The members of `group` that `owner` pushes its descriptions to:
    /// its nearest [`PUSHED`] members in group order on hosts other than
    /// its own, and alive, alternating after and before it (wrapping):
    /// `owner + 1`, `owner - 1`, `owner + 2`, ...
    pub(super) fn pushed_to(&self, group: &Group, owner: u32) -> Vec<u32> {
        let members = group.members();
        let (Some(at), n) = (group.group_rank(owner), members.len()) else {
            return Vec::new();
        };
        let host = self.ep.ranks().host_of(owner);
        let mut out = Vec::with_capacity(PUSHED);
        for i in (1..n).flat_map(|d| [at as usize + d, at as usize + n - d]) {
            let r = members[i % n];
            if out.len() == PUSHED || out.len() == n - 1 {
                break;
            }
            let far = host.is_none() || self.ep.ranks().host_of(r) != host;
            if far && r != owner && !out.contains(&r) && !self.ep.ranks().is_dead(r) {
                out.push(r);
            }
        }
        out
    }

    /// Sends `described` (of exposure or dynamic window `id`) to the
    /// members of `group` it is pushed to ([`State::pushed_to`]), a
    /// notice each, no wait: their first access finds it instead of
    /// asking (members on this host read the board). A description too
    /// long for a notice goes as an empty one, which says "ask".
    pub(super) fn push(&self, group: &Group, id: u64, described: &Described) {
        let far = self.pushed_to(group, self.ep.rank());
        if far.is_empty() {
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

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn notices_round_trip() {
        assert_eq!(
            parse_notice(&notice(u64::MAX - 3, 7)),
            Some((u64::MAX - 3, 7))
        );
        assert_eq!(parse_notice(&[1, 2, 3]), None);
    }
}
