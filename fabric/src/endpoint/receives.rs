//! Receives into caller memory, several at once: posted together, straight
//! into the caller's buffers, and a return only once every one of them has
//! completed. No copy goes through an endpoint-owned buffer, which large
//! messages across hosts pay for with [`Endpoint::recv_start`] (a memcpy
//! about as long as the tcp transfer itself).
//!
//! The borrows are sound because the call blocks: as for
//! [`Endpoint::recv`], nothing returns while the provider may still write
//! the caller's memory. The waits are bounded as that one's: past the
//! endpoint's timeout an unmatched receive is cancelled, and one that has
//! matched completes while its sender lives (the failure detector bounds
//! the rest).

use std::ffi::c_void;

use fabric_sys as sys;

use super::{check_tag, truncated, Endpoint, OnTimeout, Posted};
use crate::error::Result;
use crate::matching::SourceMatch;

/// A receive from `from` with `tag` into `buf`, for
/// [`Endpoint::recv_many`].
#[derive(Debug)]
pub struct Incoming<'a> {
    /// Source rank.
    pub from: u32,
    /// Tag (at most [`crate::MAX_TAG`]).
    pub tag: u64,
    /// Where the message lands (at most its length).
    pub buf: &'a mut [u8],
}

impl Endpoint {
    /// Posts every receive of `recvs`, then waits until all have
    /// completed; returns the bytes each got, in order. Sends that these
    /// receives wait for must be posted before (with
    /// [`Endpoint::send_start`]) or come from other processes.
    ///
    /// # Errors
    /// The first failure, as [`Endpoint::recv`] reports it: an invalid rank
    /// or a tag above [`crate::MAX_TAG`] (checked before anything is
    /// posted), a message larger than its buffer, a dead peer, the timeout,
    /// a failed completion. It returns only after every posted receive has
    /// completed or been cancelled.
    pub fn recv_many(&self, recvs: &mut [Incoming<'_>]) -> Result<Vec<usize>> {
        for r in recvs.iter() {
            check_tag(r.tag)?;
            self.check_peer(r.from, "recv")?;
        }
        let mut posted = Vec::with_capacity(recvs.len());
        let mut failed = None;
        for r in recvs.iter_mut() {
            let (wire, ignore) = SourceMatch::receive(r.tag, Some(r.from));
            match self.post_recv(r.from, wire, ignore, r.buf) {
                Ok(Posted { token, desc, core }) => {
                    drop(core);
                    posted.push((token, desc));
                }
                Err(e) => {
                    failed = Some(e);
                    break;
                }
            }
        }
        if failed.is_some() {
            // Its peers may never send: give up the receives posted.
            let core = self.inner.shared.lock();
            for (token, _) in &posted {
                // SAFETY: the endpoint is open; token is the context of a
                // receive this endpoint posted and has not yet waited for.
                // Its buffer stays borrowed until the wait below.
                unsafe { sys::fi_cancel(core.handles.ep_fid(), *token as *mut c_void) };
            }
        }
        let mut lens = vec![0usize; recvs.len()];
        for (i, (token, desc)) in posted.into_iter().enumerate() {
            let core = self.inner.shared.lock();
            let from = recvs[i].from;
            let done = self.wait(
                "recv",
                from,
                Posted { token, desc, core },
                OnTimeout::Cancel,
            );
            match done {
                Ok(f) => lens[i] = f.len,
                Err(e) => {
                    failed.get_or_insert(truncated(e, recvs[i].buf.len()));
                }
            }
        }
        match failed {
            Some(e) => Err(e),
            None => Ok(lens),
        }
    }
}
