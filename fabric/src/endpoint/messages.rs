//! Tagged messages (`send`, `recv`) and the control plane's calls
//! (`serve`, `call`, `notify`).

use super::*;

impl Endpoint {
    /// Sends `data` to `to` with `tag` (at most [`MAX_TAG`]); returns when
    /// `data` may be reused. The sender's rank travels as remote CQ data.
    ///
    /// # Errors
    /// [`Error::InvalidRank`], [`Error::OutOfRange`] for a tag above
    /// [`MAX_TAG`], [`Error::PeerDead`], [`Error::Timeout`], or
    /// [`Error::Completion`] naming the peer and libfabric's error.
    pub fn send(&self, to: u32, tag: u64, data: &[u8]) -> Result<()> {
        check_tag(tag)?;
        self.send_tagged(Operation::Send, to, tag, data)
    }

    /// [`Endpoint::send`] of any tag the wire carries (control tags too),
    /// counted as `operation`.
    pub(super) fn send_tagged(
        &self,
        operation: Operation,
        to: u32,
        tag: u64,
        data: &[u8],
    ) -> Result<()> {
        let me = u64::from(self.inner.rank);
        let tag = SourceMatch::wire_tag(tag, self.inner.rank);
        let inject = data.len() <= self.inner.shared.granted.inject_size;
        let posted = self.post(
            operation,
            to,
            (data.as_ptr(), data.len()),
            !inject,
            |core, addr, ctx, desc| {
                if inject {
                    // SAFETY: the endpoint is open; data is valid for its length
                    // and copied by the provider before fi_tinject returns.
                    unsafe {
                        sys::fi_tinjectdata(
                            core.handles.ep,
                            data.as_ptr().cast(),
                            data.len(),
                            me,
                            addr,
                            tag,
                        )
                    }
                } else {
                    // SAFETY: data stays borrowed until the completion is waited
                    // for below; desc is its descriptor or null.
                    unsafe {
                        sys::fi_tsenddata(
                            core.handles.ep,
                            data.as_ptr().cast(),
                            data.len(),
                            desc,
                            me,
                            addr,
                            tag,
                            ctx,
                        )
                    }
                }
            },
        )?;
        if inject {
            posted.desc.close();
            return Ok(());
        }
        self.wait(operation.name(), to, posted, OnTimeout::Wait)
            .map(drop)
    }

    /// Answers requests for `service` with `handler(from_rank, request,
    /// outbox) -> reply`, from the progress engine: requests are served
    /// while the application computes (with the background progress
    /// thread) and whenever it waits in the library. The handler runs
    /// under the endpoint's lock and must not call the endpoint; notices it
    /// leaves in the [`control::Outbox`] are sent once it returns. Requests
    /// that arrive before `serve` wait, queued by the provider. Call after
    /// [`Endpoint::connect`].
    ///
    /// # Errors
    /// [`Error::ServiceTaken`] when `service` is served already.
    pub fn serve(
        &self,
        service: u16,
        handler: impl FnMut(u32, &[u8], &mut control::Outbox) -> Vec<u8> + Send + 'static,
    ) -> Result<()> {
        let mut core = self.inner.shared.lock();
        if core.control.handlers.contains_key(&service) {
            return Err(Error::ServiceTaken { service });
        }
        core.control.handlers.insert(service, Box::new(handler));
        core.post_request_receives(service, 0..self.size());
        Ok(())
    }

    /// Stops answering `service`: requests for it get no reply from now on
    /// (its posted receives stay, and serve again if it is served again).
    pub fn unserve(&self, service: u16) {
        self.inner.shared.lock().control.handlers.remove(&service);
    }

    /// Sends `request` to `to`'s `service` and waits for the reply, which
    /// lands in `reply`; returns its length. The target answers from its
    /// progress engine (see [`Endpoint::serve`]).
    ///
    /// # Errors
    /// [`Error::OutOfRange`] for a request over
    /// [`control::MAX_REQUEST`] bytes, [`Error::Truncated`] for a reply
    /// larger than `reply`, and as [`Endpoint::recv`].
    pub fn call(&self, to: u32, service: u16, request: &[u8], reply: &mut [u8]) -> Result<usize> {
        self.call_as("call", to, service, request, reply)
    }

    /// [`Endpoint::call`], its waits' errors naming `what`.
    pub(super) fn call_as(
        &self,
        what: &'static str,
        to: u32,
        service: u16,
        request: &[u8],
        reply: &mut [u8],
    ) -> Result<usize> {
        control::check_request("control request", request)?;
        let tag = control::reply_tag(self.inner.shared.next_call.fetch_add(1, Ordering::Relaxed));
        let capacity = reply.len();
        // The reply's receive is posted before the request leaves.
        let Posted { token, desc, core } =
            self.post_recv(to, SourceMatch::wire_tag(tag, to), 0, reply)?;
        drop(core);
        let sent = self.send_tagged(
            Operation::Control(service),
            to,
            control::request_tag(service),
            &control::frame(tag, request),
        );
        let mut core = self.inner.shared.lock();
        if let Err(e) = sent {
            // No request left, so no reply can come: take the receive back.
            // SAFETY: the endpoint is open; token is the context of the
            // receive just posted.
            let cancelled =
                unsafe { sys::fi_cancel(core.handles.ep_fid(), token as *mut c_void) } == 0;
            if cancelled {
                core.slots.remove(token);
                desc.close();
                return Err(e);
            }
            let _ = self.wait(what, to, Posted { token, desc, core }, OnTimeout::Cancel);
            return Err(e);
        }
        let done = self.wait(what, to, Posted { token, desc, core }, OnTimeout::Cancel);
        match done {
            Ok(done) => Ok(done.len),
            Err(Error::Truncated {
                rank,
                tag,
                len: overflow,
                ..
            }) => Err(Error::Truncated {
                rank,
                tag,
                len: capacity + overflow,
                capacity,
            }),
            Err(e) => Err(e),
        }
    }

    /// Sends `body` to `to`'s `service` without waiting for an answer (the
    /// handler's reply is dropped); returns when `body` may be reused.
    ///
    /// # Errors
    /// [`Error::OutOfRange`] for a body over [`control::MAX_REQUEST`]
    /// bytes, and as [`Endpoint::send`].
    pub fn notify(&self, to: u32, service: u16, body: &[u8]) -> Result<()> {
        control::check_request("control notice", body)?;
        self.send_tagged(
            Operation::Control(service),
            to,
            control::request_tag(service),
            &control::frame(control::NO_REPLY, body),
        )
    }

    /// The start-up's exchange of `round` (see [`crate::bootstrap`]):
    /// posts the receive of `from`'s message into `buf`, sends `data` to
    /// `to`, then waits for the receive (posted first, so that no two
    /// processes wait on each other's large sends); returns its length.
    pub(crate) fn exchange_bootstrap(
        &self,
        (to, data): (u32, &[u8]),
        (from, buf): (u32, &mut [u8]),
        round: u32,
    ) -> Result<usize> {
        let tag = control::bootstrap_tag(round);
        let capacity = buf.len();
        let Posted { token, desc, core } =
            self.post_recv(from, SourceMatch::wire_tag(tag, from), 0, buf)?;
        drop(core);
        let sent = self.send_tagged(Operation::Send, to, tag, data);
        let core = self.inner.shared.lock();
        let done = self.wait(
            "recv",
            from,
            Posted { token, desc, core },
            OnTimeout::Cancel,
        );
        sent?;
        Ok(done.map_err(|e| truncated(e, capacity))?.len)
    }

    /// Receives one message with `tag` from `from` (any rank when `None`)
    /// into `buf`.
    ///
    /// # Errors
    /// [`Error::Truncated`] when the message is larger than `buf`;
    /// [`Error::InvalidRank`], [`Error::PeerDead`], [`Error::Timeout`] (the
    /// receive is cancelled), [`Error::Completion`].
    pub fn recv(&self, from: Option<u32>, tag: u64, buf: &mut [u8]) -> Result<Received> {
        check_tag(tag)?;
        let capacity = buf.len();
        let done = match from {
            None if self.inner.shared.granted.source_match.poll_any_source => {
                self.recv_polling(tag, buf)
            }
            _ => {
                let (wire, ignore) = SourceMatch::receive(tag, from);
                // A receive from any rank is attributed to this rank itself
                // for liveness.
                let peer = from.unwrap_or(self.inner.rank);
                let posted = self.post_recv(peer, wire, ignore, buf)?;
                self.wait("recv", peer, posted, OnTimeout::Cancel)
            }
        };
        let done = done.map_err(|e| truncated(e, capacity))?;
        Ok(Received {
            from: done.data as u32,
            tag: SourceMatch::user_tag(done.tag),
            len: done.len,
        })
    }

    /// Posts one receive of `wire` (with `ignore` bits) into `buf`.
    #[inline(always)]
    pub(super) fn post_recv(
        &self,
        peer: u32,
        wire: u64,
        ignore: u64,
        buf: &mut [u8],
    ) -> Result<Posted<'_>> {
        // SAFETY: buf stays mutably borrowed until the completion is waited
        // for (or the receive is cancelled and its cancellation completed)
        // by the caller.
        unsafe { self.post_recv_raw(peer, wire, ignore, (buf.as_mut_ptr(), buf.len())) }
    }

    /// [`Endpoint::post_recv`] into `len` bytes at `ptr`.
    ///
    /// # Safety
    /// The bytes stay valid, and are not otherwise accessed, until the
    /// receive completes or its cancellation does (or the endpoint closes).
    #[inline(always)]
    pub(super) unsafe fn post_recv_raw(
        &self,
        peer: u32,
        wire: u64,
        ignore: u64,
        (ptr, len): (*mut u8, usize),
    ) -> Result<Posted<'_>> {
        self.post(
            Operation::Recv,
            peer,
            (ptr, len),
            true,
            |core, _addr, ctx, desc| {
                // SAFETY: the caller keeps the bytes for the receive;
                // desc is their descriptor or null.
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

    /// A receive from any rank without ignore bits (see
    /// [`crate::matching`]): posts an exact receive for one rank after
    /// another, cancelling each that finds nothing, until one matches.
    fn recv_polling(&self, tag: u64, buf: &mut [u8]) -> Result<Finished> {
        let mut backoff = self.inner.shared.backoff();
        let first = self
            .inner
            .shared
            .next_any_source
            .fetch_add(1, Ordering::Relaxed);
        loop {
            let size = self.size();
            for i in 0..size {
                let rank = (first + i) % size;
                if self.inner.shared.is_dead(rank) {
                    continue;
                }
                let Posted {
                    token,
                    desc,
                    mut core,
                } = self.post_recv(rank, SourceMatch::wire_tag(tag, rank), 0, buf)?;
                for _ in 0..POLLS_PER_LOCK {
                    if core.poll() > 0 {
                        break;
                    }
                }
                let outcome = core.slots.take_done(token);
                if outcome.is_none() {
                    // SAFETY: the endpoint is open; token is the context of
                    // the receive just posted.
                    let cancelled =
                        unsafe { sys::fi_cancel(core.handles.ep_fid(), token as *mut c_void) } == 0;
                    if cancelled {
                        // Found and removed before it matched: the buffer is
                        // free again. (shm 1.17 writes no completion for it;
                        // one that other providers write finds no slot.)
                        core.slots.remove(token);
                        desc.close();
                        continue;
                    }
                }
                // It matched (or completed): wait for it like any receive.
                let result = match outcome {
                    Some(outcome) => {
                        drop(core);
                        self.outcome("recv", rank, outcome)
                    }
                    None => self.wait_token("recv", rank, token, core, OnTimeout::Wait),
                };
                if !desc.temporary.is_null() {
                    let _core = self.inner.shared.lock();
                    desc.close();
                }
                match result {
                    // Cancelled after all (providers that report it so).
                    Err(Error::Completion { code, .. }) if code == sys::FI_ECANCELED as i32 => {}
                    result => return result,
                }
            }
            self.pause_within_timeout(&mut backoff, "recv")?;
        }
    }
}
