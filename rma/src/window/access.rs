//! The data path: where a target's bytes are, and get, put, their
//! request forms and the atomics, reached through an open [`Epoch`].

use super::*;

/// The largest [`Epoch::put`] through the provider posted from a copy
/// instead of waited for (a copy of more would cost more than the round
/// trip it saves).
pub(crate) const POSTED_PUT: usize = 64 * 1024;

/// Posted puts running at once, at most (their copies are held).
const POSTED_AT_ONCE: usize = 64;

impl Window {
    /// Where `len` bytes at `offset` of `target`'s part are, after checking
    /// the window, the epoch, the peer and the bounds (in that order).
    fn place(
        &self,
        target: u32,
        offset: u64,
        len: usize,
        what: &'static str,
    ) -> Result<Place<'_>, Error> {
        let rank = self.group().job_rank(target)?;
        self.alive()?;
        self.epochs.borrow().check_access(target)?;
        if self.rma().ep.ranks().is_dead(rank) {
            // Its mapped memory would still answer: say it is gone.
            return Err(onesided_fabric::Error::PeerDead { op: what, rank }.into());
        }
        self.lock_lazily(target)?;
        let out_of_range = |size: u64| -> Error {
            Error::OutOfRange {
                what,
                target,
                window: self.id,
                offset,
                len: len as u64,
                size,
            }
        };
        let end = offset
            .checked_add(len as u64)
            .ok_or_else(|| out_of_range(0))?;
        if self.attached.is_some() {
            let fits = |a: &Attached| offset >= a.disp && end <= a.disp + a.remote.len;
            let mut list = self.rma().attached(self.group(), rank, self.id, false)?;
            if !list.iter().any(fits) {
                // Attached since last asked?
                list = self.rma().attached(self.group(), rank, self.id, true)?;
            }
            let a = list
                .iter()
                .find(|a| fits(a))
                .ok_or_else(|| out_of_range(0))?;
            // On this host, memory from `register_shared` is mapped.
            let map = (self.rma().same_host(rank) && !a.name.is_empty())
                .then(|| self.rma().map(&a.name, a.remote.len as usize))
                .flatten()
                .map(Mapped::Held);
            return Ok(Place {
                rank,
                remote: a.remote,
                map,
                at: offset - a.disp,
            });
        }
        let peer = self.part(target, rank)?;
        if end > peer.data.len {
            return Err(out_of_range(peer.data.len));
        }
        Ok(Place {
            rank,
            remote: peer.data,
            map: peer
                .maps
                .as_ref()
                .and_then(|(_, d)| d.as_deref())
                .map(Mapped::Lent),
            at: offset,
        })
    }

    /// Tracks `transfer` until the next completion of its target. A
    /// transfer no request holds (a posted put) is tested here: it goes
    /// once it succeeded, stays once it failed (for the completion to
    /// report), and at most [`POSTED_AT_ONCE`] run (the oldest is waited
    /// for), so that an epoch of many puts holds bounded memory.
    fn track(&self, target: u32, transfer: onesided_fabric::Transfer) -> Arc<Inflight> {
        let inflight = Arc::new(Inflight::new(target, transfer));
        let mut list = self.inflight.borrow_mut();
        list.retain(|i| {
            let posted = Arc::strong_count(i) == 1;
            if posted {
                i.test();
            }
            !i.is_done() || (posted && i.failed())
        });
        let running = |i: &&Arc<Inflight>| Arc::strong_count(i) == 1 && !i.is_done();
        if list.iter().filter(running).count() >= POSTED_AT_ONCE {
            if let Some(oldest) = list.iter().find(running) {
                oldest.finish();
            }
        }
        list.push(Arc::clone(&inflight));
        inflight
    }

    /// Whether a put of `len` bytes to `target` through the provider is
    /// injected: at most the inject size, where a later delivered write
    /// completes it (see [`Window::complete`]), and not the first put to
    /// `target` since its last completion. An injected put waits for no
    /// acknowledgement of its own; the first is posted for delivery, so
    /// that a put and a flush cost one round trip, and puts in a row one
    /// round trip more than their injections.
    fn injects(&self, target: u32, len: usize) -> bool {
        let ep = &self.rma().ep;
        len <= ep.granted().inject_size()
            && ep.granted().orders_write_after_write()
            && self.written.borrow().contains_key(&target)
    }

    /// Injects `data` at `p` (group rank `target`), to be completed by the
    /// next flush of `target` or the epoch's end.
    fn inject(&self, target: u32, p: &Place<'_>, data: &[u8]) -> Result<(), Error> {
        self.through(self.rma().ep.write_injected(p.rank, &p.remote, p.at, data))?;
        self.written.borrow_mut().insert(target, Written::Injected);
        Ok(())
    }

    /// Posts a copy of `data` at `p` (group rank `target`) for delivery
    /// (see [`Window::track_put`]).
    fn post_put(&self, target: u32, p: &Place<'_>, data: &[u8]) -> Result<Arc<Inflight>, Error> {
        let transfer = self.rma().ep.write_start(p.rank, &p.remote, p.at, data)?;
        Ok(self.track_put(target, transfer))
    }

    /// Tracks `transfer`, a put to group rank `target` posted for
    /// delivery, until the next completion of `target`.
    fn track_put(&self, target: u32, transfer: onesided_fabric::Transfer) -> Arc<Inflight> {
        (self.written.borrow_mut())
            .entry(target)
            .or_insert(Written::Posted);
        self.track(target, transfer)
    }

    fn atomic<T: Element>(
        &self,
        target: u32,
        offset: u64,
        values: &[T],
        op: &Op<T>,
        fetch: Option<&mut [T]>,
        what: &'static str,
    ) -> Result<(), Error> {
        let op = crate::element::atomic(op, what)?;
        let size = size_of::<T>();
        let p = self.place(target, offset, size_of_val(values), what)?;
        if !offset.is_multiple_of(size as u64) {
            return Err(onesided_fabric::Error::Misaligned { what, offset }.into());
        }
        match (&p.map, self.local_atomics) {
            (Some(map), true) => {
                p.remote
                    .permits(Access::REMOTE_READ | Access::REMOTE_WRITE, what, p.rank)?;
                let mut fetch = fetch;
                for (i, v) in values.iter().enumerate() {
                    let x = bits(*v);
                    let at = p.at as usize + i * size;
                    let previous = map.update(at, size, |t| {
                        Some(onesided_fabric::atomic::apply(T::DATATYPE, op, t, x))
                    })?;
                    if let Some(f) = fetch.as_deref_mut() {
                        f[i] = from_bits(previous);
                    }
                }
                Ok(())
            }
            _ => self.through(self.rma().ep.atomic(
                p.rank,
                &p.remote,
                p.at,
                T::DATATYPE,
                op,
                bytemuck::cast_slice(values),
                fetch.map(bytemuck::cast_slice_mut),
            )),
        }
    }
}

/// The accesses: methods of the epoch guard, so that an access outside an
/// epoch does not compile. Offsets are bytes into the target's part.
impl<'w, K: EpochKind> Epoch<'w, K> {
    /// Checks that `target` lies in this epoch: its target for a `lock`
    /// epoch, any member otherwise.
    fn covers(&self, target: u32) -> Result<&'w Window, Error> {
        match self.target {
            Some(t) if t != target => Err(Error::NoEpoch { target }),
            _ => Ok(self.window),
        }
    }

    /// Reads elements at byte `offset` of group rank `target`'s part into
    /// `buf` (`MPI_Get`, complete when it returns).
    ///
    /// # Errors
    /// [`Error::NotInGroup`]; [`Error::NoEpoch`] for a target this epoch
    /// does not cover; [`Error::OutOfRange`] outside its part;
    /// [`Error::Fabric`] (a dead peer, forbidden access, ...). Nothing is
    /// posted on a checked error.
    pub fn get<T: bytemuck::Pod>(
        &self,
        target: u32,
        offset: u64,
        buf: &mut [T],
    ) -> Result<(), Error> {
        let w = self.covers(target)?;
        let buf: &mut [u8] = bytemuck::cast_slice_mut(buf);
        let p = w.place(target, offset, buf.len(), "window get")?;
        match &p.map {
            Some(map) => {
                p.remote
                    .permits(Access::REMOTE_READ, "window get", p.rank)?;
                Ok(map.read_bytes(p.at as usize, buf)?)
            }
            None => w.through(w.rma().ep.read(p.rank, &p.remote, p.at, buf)),
        }
    }

    /// Writes `data` at byte `offset` of group rank `target`'s part
    /// (`MPI_Put`). `data` may be reused when it returns. Through shared
    /// memory, or above 64 KiB, the bytes are at the target
    /// by then; a smaller put through the provider is posted from a copy
    /// (puts after the first since the last flush, up to the provider's
    /// inject size: the provider's copy) and completes at the target by the next
    /// [`Epoch::flush`] or the epoch's end (as `MPI_Put`), so that puts in
    /// a row do not each wait a round trip.
    ///
    /// # Errors
    /// As [`Epoch::get`] (checked before anything is posted); a posted
    /// put's failure is [`Error::TransferFailed`] from the flush or the
    /// epoch's end.
    pub fn put<T: bytemuck::Pod>(&self, target: u32, offset: u64, data: &[T]) -> Result<(), Error> {
        let w = self.covers(target)?;
        let data: &[u8] = bytemuck::cast_slice(data);
        let p = w.place(target, offset, data.len(), "window put")?;
        match &p.map {
            Some(map) => {
                p.remote
                    .permits(Access::REMOTE_WRITE, "window put", p.rank)?;
                Ok(map.write_bytes(p.at as usize, data)?)
            }
            None if w.injects(target, data.len()) => w.inject(target, &p, data),
            None if data.len() <= POSTED_PUT => w.post_put(target, &p, data).map(drop),
            None => w.through(w.rma().ep.write_delivered(p.rank, &p.remote, p.at, data)),
        }
    }

    /// Starts reading `buf.len()` elements at byte `offset` of `target`'s
    /// part (`MPI_Rget`); the bytes reach `buf` when the request completes
    /// ([`crate::Request::test`] / [`crate::Request::wait`]; after a flush
    /// or the epoch's end it completes at once).
    ///
    /// # Errors
    /// As [`Epoch::get`] (checked before anything is posted).
    pub fn rget<'b, T: bytemuck::Pod>(
        &self,
        target: u32,
        offset: u64,
        buf: &'b mut [T],
    ) -> Result<Rget<'w, 'b>, Error> {
        let w = self.covers(target)?;
        let bytes: &mut [u8] = bytemuck::cast_slice_mut(buf);
        let p = w.place(target, offset, bytes.len(), "window rget")?;
        if let Some(map) = &p.map {
            p.remote
                .permits(Access::REMOTE_READ, "window rget", p.rank)?;
            map.read_bytes(p.at as usize, bytes)?;
            return Ok(Rget::new(&w.rma().ep, None, bytes));
        }
        let transfer = w
            .rma()
            .ep
            .read_start(p.rank, &p.remote, p.at, bytes.len())?;
        let inflight = w.track(target, transfer);
        Ok(Rget::new(&w.rma().ep, Some(inflight), bytes))
    }

    /// Starts writing `data` at byte `offset` of `target`'s part
    /// (`MPI_Rput`; `data` is copied, the caller may reuse it at once);
    /// the request completes when the bytes are in the target's memory,
    /// or at once for a put [`Epoch::put`] injects (those are at the target
    /// by the next flush or the epoch's end, which is all `MPI_Rput`
    /// promises).
    ///
    /// # Errors
    /// As [`Epoch::get`].
    pub fn rput<T: bytemuck::Pod>(
        &self,
        target: u32,
        offset: u64,
        data: &[T],
    ) -> Result<Rput<'w>, Error> {
        let w = self.covers(target)?;
        let data: &[u8] = bytemuck::cast_slice(data);
        let p = w.place(target, offset, data.len(), "window rput")?;
        if let Some(map) = &p.map {
            p.remote
                .permits(Access::REMOTE_WRITE, "window rput", p.rank)?;
            map.write_bytes(p.at as usize, data)?;
            return Ok(Rput::new(&w.rma().ep, None));
        }
        if w.injects(target, data.len()) {
            w.inject(target, &p, data)?;
            return Ok(Rput::new(&w.rma().ep, None));
        }
        Ok(Rput::new(&w.rma().ep, Some(w.post_put(target, &p, data)?)))
    }

    /// Starts reading `buf.len()` bytes at byte `offset` of `target`'s
    /// part straight into `buf`, which the request owns until it completes
    /// ([`Owned::take_buffer`]): no copy on the provider path, the form for
    /// large reads (`MPI_Rget`).
    ///
    /// # Errors
    /// As [`Epoch::get`] (checked before `buf` is taken; a failed post
    /// loses it).
    pub fn rget_owned(
        &self,
        target: u32,
        offset: u64,
        mut buf: Box<[u8]>,
    ) -> Result<Owned<'w>, Error> {
        let w = self.covers(target)?;
        let p = w.place(target, offset, buf.len(), "window rget")?;
        let ep = &w.rma().ep;
        if let Some(map) = &p.map {
            p.remote
                .permits(Access::REMOTE_READ, "window rget", p.rank)?;
            map.read_bytes(p.at as usize, &mut buf)?;
            return Ok(Owned::done(ep, buf));
        }
        let transfer = ep.read_start_into(p.rank, &p.remote, p.at, buf)?;
        Ok(Owned::running(ep, w.track(target, transfer)))
    }

    /// Starts writing `data` at byte `offset` of `target`'s part straight
    /// from `data`, which the request owns until it completes, when the
    /// bytes are in the target's memory ([`Owned::take_buffer`] hands it
    /// back): no copy on the provider path (`MPI_Rput`). A put that
    /// [`Epoch::put`] would inject is injected, and completes at once, as
    /// in [`Epoch::rput`].
    ///
    /// # Errors
    /// As [`Epoch::rget_owned`].
    pub fn rput_owned(
        &self,
        target: u32,
        offset: u64,
        data: Box<[u8]>,
    ) -> Result<Owned<'w>, Error> {
        let w = self.covers(target)?;
        let p = w.place(target, offset, data.len(), "window rput")?;
        let ep = &w.rma().ep;
        if let Some(map) = &p.map {
            p.remote
                .permits(Access::REMOTE_WRITE, "window rput", p.rank)?;
            map.write_bytes(p.at as usize, &data)?;
            return Ok(Owned::done(ep, data));
        }
        if w.injects(target, data.len()) {
            w.inject(target, &p, &data)?;
            return Ok(Owned::done(ep, data));
        }
        let transfer = ep.write_start_from(p.rank, &p.remote, p.at, data)?;
        Ok(Owned::running(ep, w.track_put(target, transfer)))
    }

    /// Applies `op` with `values` to the elements at byte `offset` of
    /// `target`'s part, each element atomically (`MPI_Accumulate`).
    ///
    /// # Errors
    /// As [`Epoch::get`]; `Misaligned` for an offset that is not a
    /// multiple of the element size; [`Error::UnsupportedOp`] for an
    /// operation atomics do not take.
    pub fn accumulate<T: Element>(
        &self,
        target: u32,
        offset: u64,
        values: &[T],
        op: Op<T>,
    ) -> Result<(), Error> {
        let w = self.covers(target)?;
        w.atomic(target, offset, values, &op, None, "window accumulate")
    }

    /// Applies `op` with `value` to the element at byte `offset` of
    /// `target`'s part atomically; returns its previous value
    /// (`MPI_Fetch_and_op`; with [`Op::NO_OP`], an atomic read).
    ///
    /// # Errors
    /// As [`Epoch::accumulate`].
    pub fn fetch_and_op<T: Element>(
        &self,
        target: u32,
        offset: u64,
        value: T,
        op: Op<T>,
    ) -> Result<T, Error> {
        let w = self.covers(target)?;
        let mut previous = [T::zeroed()];
        w.atomic(
            target,
            offset,
            &[value],
            &op,
            Some(&mut previous),
            "window fetch_and_op",
        )?;
        Ok(previous[0])
    }

    /// Replaces the element at byte `offset` of `target`'s part with `new`
    /// if it equals `compare` (bitwise), atomically; returns its previous
    /// value (`MPI_Compare_and_swap`).
    ///
    /// # Errors
    /// As [`Epoch::accumulate`].
    pub fn compare_and_swap<T: Element>(
        &self,
        target: u32,
        offset: u64,
        compare: T,
        new: T,
    ) -> Result<T, Error> {
        let w = self.covers(target)?;
        let what = "window compare_and_swap";
        let size = size_of::<T>();
        let p = w.place(target, offset, size, what)?;
        if !offset.is_multiple_of(size as u64) {
            return Err(onesided_fabric::Error::Misaligned { what, offset }.into());
        }
        if let (Some(map), true) = (&p.map, w.local_atomics) {
            p.remote
                .permits(Access::REMOTE_READ | Access::REMOTE_WRITE, what, p.rank)?;
            let (c, n) = (bits(compare), bits(new));
            let previous = map.update(p.at as usize, size, |t| (t == c).then_some(n))?;
            return Ok(from_bits(previous));
        }
        let mut previous = T::zeroed();
        w.through(w.rma().ep.compare_swap_element(
            p.rank,
            &p.remote,
            p.at,
            T::DATATYPE,
            bytemuck::bytes_of(&compare),
            bytemuck::bytes_of(&new),
            bytemuck::bytes_of_mut(&mut previous),
        ))?;
        Ok(previous)
    }

    /// Completes this process's operations to `target` at the target
    /// (`MPI_Win_flush`): blocking ones are complete already; posted
    /// puts and request-based ones are waited for.
    ///
    /// # Errors
    /// [`Error::NotInGroup`]; [`Error::NoEpoch`] for a target this epoch
    /// does not cover; [`Error::TransferFailed`] when a posted put or a
    /// request-based operation failed (its request holds the error).
    pub fn flush(&self, target: u32) -> Result<(), Error> {
        let window = self.covers(target)?;
        window.group().job_rank(target)?;
        window.complete(Some(target))
    }

    /// [`Epoch::flush`] for every target (`MPI_Win_flush_all`).
    ///
    /// # Errors
    /// [`Error::TransferFailed`] as [`Epoch::flush`].
    pub fn flush_all(&self) -> Result<(), Error> {
        self.window.complete(self.target)
    }

    /// Completes this process's operations to `target` locally
    /// (`MPI_Win_flush_local`): the origin buffers may be reused. Every
    /// operation here copies or waits for its origin buffer before it
    /// returns, so this only checks the target.
    ///
    /// # Errors
    /// As [`Epoch::flush`], without the transfer errors.
    pub fn flush_local(&self, target: u32) -> Result<(), Error> {
        self.covers(target)?.group().job_rank(target).map(drop)
    }

    /// The window this epoch is open on.
    pub fn window(&self) -> &'w Window {
        self.window
    }
}
