//! The control plane: small request/reply services that a process answers
//! from its progress engine, so a peer that computes without calling the
//! library still serves them (through its background progress thread).
//! Upper layers use it for what must not cost the target's attention:
//! remote descriptors of windows, lock fallbacks, pings.
//!
//! Wire format: a request travels with user tag `REQUEST | service` and
//! carries `[reply tag: u64 LE][body]`; the reply travels with that reply
//! tag (the control bit and the call's number; 0 for a notice, which wants
//! no reply). A server keeps [`POOL`] receives posted for each service,
//! each matching a request from any rank (the sender's rank travels as CQ
//! data) with its own buffer of [`MAX_REQUEST`] bytes, and posts each
//! again after its request: memory per process of services x [`POOL`] x
//! 4 KiB, whatever the number of processes. Where a receive from any rank
//! loses queued messages (libfabric 1.17's `shm`, see `matching`), it keeps
//! one exact receive per peer instead: on that provider every peer is on
//! this host, so the cost grows with the processes per host only.
//!
//! Handlers run inside the progress engine, under the endpoint's lock:
//! they compute a reply from the request and must not call the endpoint
//! (that would wait for the lock it runs under). What they send besides
//! the reply, they leave in an [`Outbox`], posted once they return: a
//! server that decides for others (a scheduler) needs no thread of its own.

use crate::matching::{MAX_TAG, TAG_LIMIT};

/// The largest request body, in bytes.
pub const MAX_REQUEST: usize = 4096 - 8;

/// Receives a server keeps posted per service (requests beyond them wait
/// in the provider's unexpected queue until one is posted again).
pub const POOL: usize = 4;

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

/// Marks the start-up's messages (see [`crate::bootstrap`]): neither a
/// request (no `REQUEST` bit) nor a reply (above every call number).
const BOOTSTRAP: u64 = 1 << 36;

/// The tag of the start-up's messages of `round`.
pub(crate) fn bootstrap_tag(round: u32) -> u64 {
    CONTROL | BOOTSTRAP | u64::from(round)
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

/// Notices a handler sends besides its reply (see [`Endpoint::serve`]),
/// posted in order once it returns, as [`Endpoint::notify`] would.
///
/// [`Endpoint::serve`]: crate::Endpoint::serve
/// [`Endpoint::notify`]: crate::Endpoint::notify
#[derive(Debug, Default)]
pub struct Outbox {
    pub(crate) notices: Vec<(u32, u16, Vec<u8>)>,
}

impl Outbox {
    /// Sends `body` to `to`'s `service` once the handler returns.
    ///
    /// # Errors
    /// [`crate::Error::OutOfRange`] for a body over [`MAX_REQUEST`] bytes
    /// (nothing is queued).
    pub fn notify(&mut self, to: u32, service: u16, body: &[u8]) -> crate::Result<()> {
        check_request("control notice", body)?;
        self.notices.push((to, service, frame(NO_REPLY, body)));
        Ok(())
    }
}

/// Checks that `body` fits a request.
pub(crate) fn check_request(what: &'static str, body: &[u8]) -> crate::Result<()> {
    match body.len() <= MAX_REQUEST {
        true => Ok(()),
        false => Err(crate::Error::OutOfRange {
            what,
            offset: 0,
            len: body.len() as u64,
            size: MAX_REQUEST as u64,
        }),
    }
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
        let boot = bootstrap_tag(63);
        assert!(boot > reply_tag(u32::MAX) && boot & REQUEST == 0 && boot <= TAG_LIMIT);
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

    #[test]
    fn an_outbox_frames_notices_and_refuses_long_ones() {
        let mut out = Outbox::default();
        out.notify(3, 7, b"hi").unwrap();
        assert_eq!(out.notices, vec![(3, 7, frame(NO_REPLY, b"hi"))]);
        assert!(out.notify(3, 7, &vec![0; MAX_REQUEST + 1]).is_err());
        assert_eq!(out.notices.len(), 1);
    }
}
