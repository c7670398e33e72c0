//! The control plane: small request/reply services that a process answers
//! from its progress engine, so a peer that computes without calling the
//! library still serves them (through its background progress thread).
//! Upper layers use it for what must not cost the target's attention:
//! remote descriptors of windows, lock fallbacks, pings.
//!
//! Wire format: a request travels with user tag `REQUEST | service` and
//! carries `[reply tag: u64 LE][body]`; the reply travels with that reply
//! tag (the control bit and the call's number; 0 for a notice, which wants
//! no reply). Both use exact tag matching, like every
//! message of the endpoint (see `matching`). A server keeps one receive per
//! peer posted for each service, each with its own buffer of
//! [`MAX_REQUEST`] bytes, and posts it again after every request.
//!
//! Handlers run inside the progress engine, under the endpoint's lock:
//! they compute a reply from the request and must not call the endpoint
//! (that would wait for the lock it runs under).

use crate::matching::{MAX_TAG, TAG_LIMIT};

/// The largest request body, in bytes.
pub const MAX_REQUEST: usize = 4096 - 8;

/// The bit that marks control traffic in a tag; application tags stay below.
const CONTROL: u64 = MAX_TAG + 1;
/// Marks a request (else a reply).
const REQUEST: u64 = CONTROL >> 1;

/// A service's request tag.
pub(crate) fn request_tag(service: u16) -> u64 {
    CONTROL | REQUEST | u64::from(service)
}

/// The reply tag of call number `call`.
pub(crate) fn reply_tag(call: u32) -> u64 {
    CONTROL | u64::from(call)
}

/// A request as it travels: the reply tag, then the body.
pub(crate) fn frame(reply_tag: u64, body: &[u8]) -> Vec<u8> {
    let mut out = Vec::with_capacity(8 + body.len());
    out.extend_from_slice(&reply_tag.to_le_bytes());
    out.extend_from_slice(body);
    out
}

/// The reply tag of a notice, which wants no reply.
pub(crate) const NO_REPLY: u64 = 0;

/// Splits a received request into its reply tag ([`NO_REPLY`] for a
/// notice) and body; `None` when it is too short to hold a reply tag or the
/// tag is neither.
pub(crate) fn unframe(message: &[u8]) -> Option<(u64, &[u8])> {
    let (head, body) = message.split_at_checked(8)?;
    let tag = u64::from_le_bytes(head.try_into().ok()?);
    let valid = tag == NO_REPLY || (tag & CONTROL != 0 && tag & REQUEST == 0 && tag <= TAG_LIMIT);
    valid.then_some((tag, body))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn control_tags_are_above_user_tags_and_distinct() {
        assert!(request_tag(0) > MAX_TAG && reply_tag(0) > MAX_TAG);
        assert!(request_tag(u16::MAX) <= TAG_LIMIT);
        assert!(reply_tag(u32::MAX) <= TAG_LIMIT);
        assert_ne!(request_tag(0), reply_tag(0));
        assert_eq!(reply_tag(7) & REQUEST, 0);
        assert_ne!(request_tag(1) & REQUEST, 0);
    }

    #[test]
    fn requests_frame_and_unframe() {
        let tag = reply_tag(42);
        let msg = frame(tag, b"body");
        assert_eq!(unframe(&msg), Some((tag, &b"body"[..])));
        assert_eq!(unframe(&msg[..5]), None);
        assert_eq!(
            unframe(&frame(request_tag(1), b"x")),
            None,
            "not a reply tag"
        );
        assert_eq!(unframe(&frame(5, b"x")), None, "not a control tag");
        assert_eq!(unframe(&frame(NO_REPLY, b"n")), Some((NO_REPLY, &b"n"[..])));
    }
}
