//! How a receive picks its source: the tag layout of messages.
//!
//! A message's wire tag is `(tag << 24) | sender_rank`, and every message
//! also carries the sender's rank as remote CQ data. A receive from a named
//! rank matches its wire tag exactly; a receive from any rank ignores the
//! low 24 bits. Sources are never selected by address: with libfabric
//! 1.17, `sockets` cannot tell which address a message came from once there
//! are more than two peers, and `shm` occasionally fails to match directed
//! receives (both measured here).
//!
//! libfabric 1.17's `shm` also loses queued unexpected messages that a
//! receive matches through ignore bits (measured: of two messages queued
//! with one tag, the second is never delivered). On that provider and
//! version a receive from any rank therefore polls the ranks one by one
//! with exact receives, cancelling each that finds nothing
//! ([`SourceMatch::poll_any_source`]).
//!
//! Before libfabric 1.19, `shm` also hangs when several messages larger
//! than its inject size wait unexpected at a receiver (ofiwg/libfabric
//! issue 9143; measured here: four ranks, two nonblocking collectives of
//! 40 KB messages in flight at once, a hang in one job of five; one of
//! two with cross-memory attach disabled). Callers that can keep such
//! messages in flight one exchange at a time are told so
//! ([`SourceMatch::queues_large_unexpected`]).

use crate::provider::Provider;

/// Bits of the wire tag holding the sender's rank.
pub(crate) const RANK_BITS: u32 = 24;
const RANK_MASK: u64 = (1 << RANK_BITS) - 1;

/// The largest tag a wire tag can carry: a message's wire tag is
/// `(tag << 24) | sender`, and a receive from any rank ignores the low 24
/// bits. (Sources are never selected by address: libfabric 1.17's `sockets`
/// cannot tell which address a message came from with more than two peers,
/// and its `shm` occasionally fails to match such receives.)
pub(crate) const TAG_LIMIT: u64 = (1 << (64 - RANK_BITS)) - 1;

/// The largest tag of application messages; the tags above it carry the
/// control plane ([`crate::control`]).
pub const MAX_TAG: u64 = TAG_LIMIT >> 1;

/// How receives select their source; see the module docs.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct SourceMatch {
    /// Whether any-source receives poll ranks one by one.
    pub poll_any_source: bool,
    /// Whether a receiver may hold several unexpected messages larger
    /// than the inject size (see the module docs).
    pub queues_large_unexpected: bool,
}

impl SourceMatch {
    /// The way that works on `provider` of libfabric `version`
    /// (`FI_VERSION` encoding).
    pub fn new(provider: Provider, version: u32) -> SourceMatch {
        SourceMatch {
            poll_any_source: provider == Provider::Shm
                && version < fabric_sys::fi_version_of(1, 18),
            queues_large_unexpected: provider != Provider::Shm
                || version >= fabric_sys::fi_version_of(1, 19),
        }
    }

    /// The wire tag of a message with `tag` from `sender`; what a receive
    /// from `sender` matches exactly.
    pub fn wire_tag(tag: u64, sender: u32) -> u64 {
        (tag << RANK_BITS) | (u64::from(sender) & RANK_MASK)
    }

    /// The wire tag and ignore bits of a receive of `tag` from `from` (any
    /// rank when `None`).
    pub fn receive(tag: u64, from: Option<u32>) -> (u64, u64) {
        match from {
            Some(rank) => (Self::wire_tag(tag, rank), 0),
            None => (Self::wire_tag(tag, 0), RANK_MASK),
        }
    }

    /// The user tag of a wire tag.
    pub fn user_tag(wire: u64) -> u64 {
        wire >> RANK_BITS
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn rank_sits_in_the_low_bits() {
        let wire = SourceMatch::wire_tag(TAG_LIMIT, 5);
        assert_eq!(wire & RANK_MASK, 5);
        assert_eq!(SourceMatch::user_tag(wire), TAG_LIMIT);
        assert_eq!(SourceMatch::receive(TAG_LIMIT, Some(5)), (wire, 0));
        assert_ne!(SourceMatch::receive(TAG_LIMIT, Some(4)).0, wire);
        let (any, ignore) = SourceMatch::receive(TAG_LIMIT, None);
        assert_eq!(any | ignore, wire | ignore);
    }

    #[test]
    fn only_shm_before_1_19_cannot_queue_large_unexpected_messages() {
        let (v117, v119) = (
            fabric_sys::fi_version_of(1, 17),
            fabric_sys::fi_version_of(1, 19),
        );
        assert!(!SourceMatch::new(Provider::Shm, v117).queues_large_unexpected);
        assert!(SourceMatch::new(Provider::Shm, v119).queues_large_unexpected);
        assert!(SourceMatch::new(Provider::Tcp, v117).queues_large_unexpected);
        assert!(SourceMatch::new(Provider::Sockets, v117).queues_large_unexpected);
    }

    #[test]
    fn only_old_shm_polls() {
        let v117 = fabric_sys::fi_version_of(1, 17);
        let v25 = fabric_sys::fi_version_of(2, 5);
        assert!(SourceMatch::new(Provider::Shm, v117).poll_any_source);
        assert!(!SourceMatch::new(Provider::Shm, v25).poll_any_source);
        assert!(!SourceMatch::new(Provider::Tcp, v117).poll_any_source);
        assert!(!SourceMatch::new(Provider::Sockets, v117).poll_any_source);
    }
}
