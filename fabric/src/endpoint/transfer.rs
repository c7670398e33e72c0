//! Operations in flight over endpoint-owned buffers (or the caller's
//! memory, borrowed): starting them (messages; reads and writes start in
//! `rma`), testing, waiting, and handing a buffer back to the endpoint
//! when one is given up.

use super::*;

impl Endpoint {
    /// Starts sending a copy of `data` to `to` with `tag` (at most
    /// [`MAX_TAG`]); the transfer completes when the provider is done with
    /// it (as [`Endpoint::send`] returns).
    ///
    /// # Errors
    /// As [`Endpoint::send`] (checked before anything is posted).
    pub fn send_start(&self, to: u32, tag: u64, data: &[u8]) -> Result<Transfer> {
        check_tag(tag)?;
        let mut filled = self.inner.shared.take_buffer(data.len());
        filled[..data.len()].copy_from_slice(data);
        self.send_from(to, tag, RawBuffer::new(filled), data.len())
    }

    /// As [`Endpoint::send_start`], straight from the caller's `len` bytes
    /// at `ptr` (no copy); the transfer completes when the provider is
    /// done with them.
    ///
    /// # Errors
    /// As [`Endpoint::send`] (checked before anything is posted).
    ///
    /// # Safety
    /// The bytes stay valid, and unwritten, until the transfer completes
    /// or is dropped (dropping an incomplete one waits, up to the
    /// endpoint's timeout, for the provider to let them go).
    pub unsafe fn send_start_borrowed(
        &self,
        to: u32,
        tag: u64,
        (ptr, len): (*const u8, usize),
    ) -> Result<Transfer> {
        check_tag(tag)?;
        self.send_from(to, tag, RawBuffer::borrowed(ptr.cast_mut(), len), len)
    }

    /// Posts a send of the first `len` bytes of `buffer` to `to` with `tag`.
    fn send_from(&self, to: u32, tag: u64, buffer: RawBuffer, len: usize) -> Result<Transfer> {
        let me = u64::from(self.inner.rank);
        let wire = SourceMatch::wire_tag(tag, self.inner.rank);
        let ptr = buffer.ptr();
        self.start_always(Operation::Send, to, buffer, len, |core, addr, ctx, desc| {
            // SAFETY: the buffer is owned by the Transfer (or the endpoint)
            // until the completion arrives, or is the caller's, kept as long
            // (send_start_borrowed); desc is its descriptor or null.
            unsafe {
                sys::fi_tsenddata(core.handles.ep, ptr.cast(), len, desc, me, addr, wire, ctx)
            }
        })
    }

    /// Starts receiving a message of at most `len` bytes from `from` with
    /// `tag` into a buffer the endpoint owns; once complete,
    /// [`Transfer::data`] holds the message. Dropped before it completes,
    /// the receive is cancelled.
    ///
    /// # Errors
    /// As [`Endpoint::recv`] (checked before anything is posted).
    pub fn recv_start(&self, from: u32, tag: u64, len: usize) -> Result<Transfer> {
        check_tag(tag)?;
        let buffer = RawBuffer::new(self.inner.shared.take_buffer(len));
        self.recv_into(from, tag, buffer, len)
    }

    /// As [`Endpoint::recv_start`], straight into the caller's `len` bytes
    /// at `ptr` (no copy; [`Transfer::data`] is empty, the length received
    /// is [`Transfer::len`]).
    ///
    /// # Errors
    /// As [`Endpoint::recv`] (checked before anything is posted).
    ///
    /// # Safety
    /// The bytes stay valid, and nothing else reaches them, until the
    /// transfer completes or is dropped (dropping an incomplete one
    /// cancels it and waits, up to the endpoint's timeout, for the
    /// cancellation).
    pub unsafe fn recv_start_borrowed(
        &self,
        from: u32,
        tag: u64,
        (ptr, len): (*mut u8, usize),
    ) -> Result<Transfer> {
        check_tag(tag)?;
        self.recv_into(from, tag, RawBuffer::borrowed(ptr, len), len)
    }

    /// Posts a receive of at most `len` bytes from `from` with `tag` into
    /// `buffer`.
    fn recv_into(&self, from: u32, tag: u64, buffer: RawBuffer, len: usize) -> Result<Transfer> {
        let (wire, ignore) = SourceMatch::receive(tag, Some(from));
        let ptr = buffer.ptr();
        self.start_always(
            Operation::Recv,
            from,
            buffer,
            len,
            |core, _addr, ctx, desc| {
                // SAFETY: the buffer is owned by the Transfer (or, once given
                // up, by the endpoint, after cancelling the receive) until the
                // completion arrives, or is the caller's, kept as long
                // (recv_start_borrowed).
                unsafe {
                    sys::fi_trecv(
                        core.handles.ep,
                        ptr.cast(),
                        len,
                        desc,
                        sys::FI_ADDR_UNSPEC,
                        wire,
                        ignore,
                        ctx,
                    )
                }
            },
        )
    }

    /// [`Endpoint::start`] that posts even an empty transfer (messages of
    /// zero bytes still travel).
    pub(super) fn start_always(
        &self,
        op: Operation,
        rank: u32,
        buffer: RawBuffer,
        len: usize,
        post: impl FnMut(&Core, sys::fi_addr_t, *mut c_void, *mut c_void) -> isize,
    ) -> Result<Transfer> {
        let posted = match self.post(op, rank, (buffer.ptr(), len), true, post) {
            Ok(posted) => posted,
            Err(e) => {
                if let Some(owned) = buffer.into_box() {
                    self.inner.shared.give_buffer(owned);
                }
                return Err(e);
            }
        };
        let Posted { token, desc, core } = posted;
        drop(core);
        Ok(Transfer {
            ep: self.clone(),
            op,
            rank,
            token,
            buffer: Some(buffer),
            len,
            receive: op == Operation::Recv,
            desc: Some(desc),
            done: false,
            dead_seen: None,
        })
    }

    /// Posts a transfer over the first `len` bytes of `buffer` (an empty
    /// RMA transfer completes at once, without posting).
    pub(super) fn start(
        &self,
        op: Operation,
        rank: u32,
        buffer: RawBuffer,
        len: usize,
        post: impl FnMut(&Core, sys::fi_addr_t, *mut c_void, *mut c_void) -> isize,
    ) -> Result<Transfer> {
        if len > 0 {
            return self.start_always(op, rank, buffer, len, post);
        }
        self.check_peer(rank, op.name())?;
        Ok(Transfer {
            ep: self.clone(),
            op,
            rank,
            token: 0,
            buffer: Some(buffer),
            len,
            receive: false,
            desc: None,
            done: true,
            dead_seen: None,
        })
    }
}

/// A read, write, send or receive in flight over a buffer the endpoint
/// owns ([`Endpoint::read_start`], [`Endpoint::write_start`],
/// [`Endpoint::send_start`], [`Endpoint::recv_start`]) or the caller gave
/// it ([`Endpoint::read_start_into`], [`Endpoint::write_start_from`]).
/// Dropped before it completes, it hands its buffer to the endpoint until
/// the provider is done with it (a receive is cancelled first).
pub struct Transfer {
    ep: Endpoint,
    op: Operation,
    rank: u32,
    token: u64,
    /// Taken when the transfer is given up (or returned to the pool).
    buffer: Option<RawBuffer>,
    /// Bytes of `buffer` the transfer moves (for a receive: at most, then
    /// as received).
    len: usize,
    /// A posted receive (cancelled when dropped early).
    receive: bool,
    /// The temporary registration (verbs-style providers), closed on
    /// completion.
    desc: Option<LocalDesc>,
    done: bool,
    /// When the peer was first seen reported dead (by
    /// [`Transfer::test_alive`]).
    dead_seen: Option<std::time::Instant>,
}

impl Transfer {
    /// As [`Transfer::test`], for callers that test without waiting here:
    /// once the peer has been reported dead for longer than a short grace
    /// period (in which the provider may still complete the transfer),
    /// [`Error::PeerDead`].
    ///
    /// # Errors
    /// As [`Transfer::test`]; [`Error::PeerDead`].
    pub fn test_alive(&mut self) -> Result<bool> {
        if self.test()? {
            return Ok(true);
        }
        if self.ep.inner.shared.is_dead(self.rank) {
            let seen = *self.dead_seen.get_or_insert_with(std::time::Instant::now);
            if seen.elapsed() > DEAD_PEER_GRACE {
                return Err(Error::PeerDead {
                    op: self.op.name(),
                    rank: self.rank,
                });
            }
        }
        Ok(false)
    }

    /// Makes progress; whether the transfer has completed.
    ///
    /// # Errors
    /// The transfer's completion error ([`Error::Completion`]); it counts as
    /// completed.
    pub fn test(&mut self) -> Result<bool> {
        if self.done {
            return Ok(true);
        }
        let mut core = self.ep.inner.shared.lock();
        core.poll();
        // The application polls: the background thread stays out of its
        // way (see Endpoint::progress).
        self.ep.inner.shared.note_app_progress();
        let Some(outcome) = core.slots.take_done(self.token) else {
            return Ok(false);
        };
        self.done = true;
        if let Some(desc) = self.desc.take() {
            desc.close();
        }
        drop(core);
        let capacity = self.len;
        let finished = match self.ep.outcome(self.op.name(), self.rank, outcome) {
            Ok(finished) => finished,
            Err(e) => {
                // A failed transfer holds no data.
                self.len = 0;
                return Err(match e {
                    Error::Truncated { rank, tag, len, .. } => Error::Truncated {
                        rank,
                        tag,
                        len: len + capacity,
                        capacity,
                    },
                    other => other,
                });
            }
        };
        if self.receive {
            self.len = finished.len.min(self.len);
        }
        Ok(true)
    }

    /// Waits for the transfer, backing off between tests.
    ///
    /// # Errors
    /// As [`Transfer::test`]; [`Error::PeerDead`] when the peer dies,
    /// [`Error::Timeout`] after the endpoint's timeout (the transfer stays
    /// in flight; dropping it leaves its buffer to the endpoint).
    pub fn wait(&mut self) -> Result<()> {
        let mut backoff = self.ep.inner.shared.backoff();
        let mut limit = self.ep.inner.shared.timeout;
        let mut dead_seen = false;
        while !self.test()? {
            self.ep.inner.shared.note_app_progress();
            let waited = backoff.pause();
            if !dead_seen && self.ep.inner.shared.is_dead(self.rank) {
                dead_seen = true;
                limit = waited + DEAD_PEER_GRACE;
            }
            if waited > limit {
                return Err(if dead_seen {
                    Error::PeerDead {
                        op: self.op.name(),
                        rank: self.rank,
                    }
                } else {
                    Error::Timeout {
                        op: self.op.name(),
                        rank: self.rank,
                        after: self.ep.inner.shared.timeout,
                    }
                });
            }
        }
        Ok(())
    }

    /// The peer's rank.
    pub fn rank(&self) -> u32 {
        self.rank
    }

    /// Whether the transfer has completed (as last tested).
    pub fn is_done(&self) -> bool {
        self.done
    }

    /// The transfer's buffer once it has completed (`None` before, and
    /// once taken): a buffer given to [`Endpoint::read_start_into`] or
    /// [`Endpoint::write_start_from`] comes back so, whole, for the next.
    pub fn take_buffer(&mut self) -> Option<Box<[u8]>> {
        match self.done {
            true => self.buffer.take().and_then(RawBuffer::into_box),
            false => None,
        }
    }

    /// Bytes the transfer moved, once complete (for a receive: as
    /// received).
    pub fn len(&self) -> usize {
        self.len
    }

    /// Whether it moved no bytes.
    pub fn is_empty(&self) -> bool {
        self.len == 0
    }

    /// The transfer's bytes once it has completed: what a read or a receive
    /// brought into a buffer of the endpoint's (empty before completion,
    /// and for the caller's memory).
    pub fn data(&self) -> &[u8] {
        match (&self.buffer, self.done) {
            (Some(buffer), true) if !buffer.owned => &[],
            // SAFETY: the transfer has completed, so the provider no longer
            // writes the buffer; it holds at least `len` initialised bytes
            // and lives as long as self.
            (Some(buffer), true) => unsafe { buffer.slice(self.len) },
            _ => &[],
        }
    }
}

impl Drop for Transfer {
    fn drop(&mut self) {
        let Some(buffer) = self.buffer.take() else {
            return;
        };
        if !self.done {
            let mut core = self.ep.inner.shared.lock();
            core.poll();
            if core.slots.take_done(self.token).is_some() {
                // Completed, just not tested.
                self.done = true;
                if let Some(desc) = self.desc.take() {
                    desc.close();
                }
            } else {
                if self.receive {
                    // SAFETY: the endpoint is open; token is the context of
                    // a receive this endpoint posted. Its buffer stays with
                    // the endpoint until the (cancellation) completion.
                    unsafe { sys::fi_cancel(core.handles.ep_fid(), self.token as *mut c_void) };
                }
                if !buffer.owned {
                    // The caller's memory: the provider must be done with
                    // it before this returns.
                    drop(core);
                    self.settle();
                    return;
                }
                core.forget(self.token, OnTimeout::Release(Box::new(buffer)));
                // A temporary registration stays open: the provider may hold
                // it.
                return;
            }
        }
        if let Some(owned) = buffer.into_box() {
            self.ep.inner.shared.give_buffer(owned);
        }
    }
}

impl Transfer {
    /// Waits, up to the endpoint's timeout, for the completion (or
    /// cancellation) of a dropped transfer over the caller's memory; past
    /// it the operation is forgotten.
    fn settle(&mut self) {
        let mut backoff = self.ep.inner.shared.backoff();
        let mut waited = std::time::Duration::ZERO;
        loop {
            let mut core = self.ep.inner.shared.lock();
            core.poll();
            if core.slots.take_done(self.token).is_some() {
                if let Some(desc) = self.desc.take() {
                    desc.close();
                }
                return;
            }
            if waited > self.ep.inner.shared.timeout {
                core.forget(self.token, OnTimeout::Wait);
                return;
            }
            drop(core);
            waited = backoff.pause();
        }
    }
}

/// A transfer buffer held as a raw allocation: the provider writes it
/// through a pointer while the transfer is in flight, so no `Box` (which
/// asserts unique access wherever it moves) holds it meanwhile. Or the
/// caller's memory, borrowed (not owned: never freed here).
pub(super) struct RawBuffer {
    bytes: NonNull<[u8]>,
    owned: bool,
}

// SAFETY: it owns its allocation, as the Box<[u8]> it came from did, or
// borrows memory whose owner promised it to the transfer (the contract of
// the `_borrowed` starts).
unsafe impl Send for RawBuffer {}

impl RawBuffer {
    pub(super) fn new(buffer: Box<[u8]>) -> RawBuffer {
        RawBuffer {
            bytes: NonNull::from(Box::leak(buffer)),
            owned: true,
        }
    }

    /// `len` bytes of the caller's at `ptr` (null only when `len` is 0).
    fn borrowed(ptr: *mut u8, len: usize) -> RawBuffer {
        let ptr = NonNull::new(ptr).unwrap_or(NonNull::dangling());
        RawBuffer {
            bytes: NonNull::slice_from_raw_parts(ptr, len),
            owned: false,
        }
    }

    pub(super) fn ptr(&self) -> *mut u8 {
        self.bytes.as_ptr().cast()
    }

    /// The first `len` bytes (at most the whole buffer).
    ///
    /// # Safety
    /// Nothing may write the buffer meanwhile (no transfer in flight).
    pub(super) unsafe fn slice(&self, len: usize) -> &[u8] {
        // SAFETY: the allocation holds self.bytes.len() initialised bytes;
        // the caller promises no concurrent writer.
        unsafe { std::slice::from_raw_parts(self.ptr(), len.min(self.bytes.len())) }
    }

    /// The allocation, when owned.
    pub(super) fn into_box(self) -> Option<Box<[u8]>> {
        let (raw, owned) = (self.bytes.as_ptr(), self.owned);
        std::mem::forget(self);
        // SAFETY: an owned raw came from Box::leak in RawBuffer::new and is
        // owned here alone.
        owned.then(|| unsafe { Box::from_raw(raw) })
    }
}

impl Drop for RawBuffer {
    fn drop(&mut self) {
        if self.owned {
            // SAFETY: as in into_box; dropped only once no operation uses
            // it (completed, or the endpoint closed).
            drop(unsafe { Box::from_raw(self.bytes.as_ptr()) });
        }
    }
}
