//! One-sided reads and writes of peers' registered memory, blocking or
//! as transfers.

use super::*;

impl Endpoint {
    /// Reads `buf.len()` bytes at `offset` of `from`'s region `remote` into
    /// `buf`.
    ///
    /// # Errors
    /// [`Error::OutOfRange`] when the bytes lie outside the region and
    /// [`Error::NotPermitted`] when the region does not allow the access (in
    /// both cases nothing is posted); [`Error::InvalidRank`],
    /// [`Error::PeerDead`], [`Error::Timeout`], [`Error::Completion`].
    pub fn read(
        &self,
        from: u32,
        remote: &RemoteMemory,
        offset: u64,
        buf: &mut [u8],
    ) -> Result<()> {
        remote.permits(Access::REMOTE_READ, "read", from)?;
        let address = remote.address_of(offset, buf.len() as u64, "read")?;
        let key = remote.key;
        let len = buf.len();
        let ptr = buf.as_mut_ptr();
        let posted = self.post(
            Operation::Read,
            from,
            (ptr, len),
            true,
            |core, addr, ctx, desc| {
                // SAFETY: buf stays mutably borrowed until the completion is
                // waited for below; address..address+len lies in the peer's
                // registration (checked against its descriptor).
                unsafe {
                    sys::fi_read(
                        core.handles.ep,
                        ptr.cast(),
                        len,
                        desc,
                        addr,
                        address,
                        key,
                        ctx,
                    )
                }
            },
        )?;
        self.wait("read", from, posted, OnTimeout::Wait).map(drop)
    }

    /// Writes `data` at `offset` of `to`'s region `remote`; returns when
    /// `data` may be reused (not necessarily in the target's memory yet: see
    /// [`Endpoint::write_delivered`]).
    ///
    /// # Errors
    /// As [`Endpoint::read`].
    pub fn write(&self, to: u32, remote: &RemoteMemory, offset: u64, data: &[u8]) -> Result<()> {
        self.write_with(Operation::Write, to, remote, offset, data, 0)
    }

    /// Writes `data` at `offset` of `to`'s region `remote`; returns when the
    /// bytes are in the target's memory (`FI_DELIVERY_COMPLETE`).
    ///
    /// # Errors
    /// As [`Endpoint::read`].
    pub fn write_delivered(
        &self,
        to: u32,
        remote: &RemoteMemory,
        offset: u64,
        data: &[u8],
    ) -> Result<()> {
        self.write_with(
            Operation::WriteDelivered,
            to,
            remote,
            offset,
            data,
            sys::FI_DELIVERY_COMPLETE,
        )
    }

    fn write_with(
        &self,
        operation: Operation,
        to: u32,
        remote: &RemoteMemory,
        offset: u64,
        data: &[u8],
        flags: u64,
    ) -> Result<()> {
        let op = operation.name();
        remote.permits(Access::REMOTE_WRITE, op, to)?;
        let address = remote.address_of(offset, data.len() as u64, op)?;
        let key = remote.key;
        let posted = self.post(
            operation,
            to,
            (data.as_ptr(), data.len()),
            true,
            |core, addr, ctx, desc| {
                let (ptr, len) = (data.as_ptr(), data.len());
                // SAFETY: data stays borrowed until the completion is waited
                // for below; the range lies in the peer's registration.
                unsafe { post_write(core, (ptr, len), desc, addr, (address, key), ctx, flags) }
            },
        )?;
        self.wait(op, to, posted, OnTimeout::Wait).map(drop)
    }

    /// Writes `data`, at most [`Granted::inject_size`] bytes, at `offset`
    /// of `to`'s region `remote`; the provider copies it before this
    /// returns, and no completion is waited for or reported. Where the
    /// provider processes writes in order
    /// ([`Granted::orders_write_after_write`]), the bytes are in the
    /// target's memory once a later [`Endpoint::write_delivered`] to `to`
    /// completes, and a failure shows there.
    ///
    /// # Errors
    /// [`Error::OutOfRange`] for more than the inject size; otherwise as
    /// [`Endpoint::read`] for the checks and the post.
    pub fn write_injected(
        &self,
        to: u32,
        remote: &RemoteMemory,
        offset: u64,
        data: &[u8],
    ) -> Result<()> {
        let operation = Operation::Write;
        let op = operation.name();
        let limit = self.inner.shared.granted.inject_size;
        if data.len() > limit {
            return Err(Error::OutOfRange {
                what: "injected write",
                offset: 0,
                len: data.len() as u64,
                size: limit as u64,
            });
        }
        remote.permits(Access::REMOTE_WRITE, op, to)?;
        let address = remote.address_of(offset, data.len() as u64, op)?;
        let (ptr, len, key) = (data.as_ptr(), data.len(), remote.key);
        let posted = self.post(operation, to, (ptr, len), false, |core, addr, _, _| {
            // SAFETY: the endpoint is open; data is valid for its length and
            // copied by the provider before fi_inject_write returns; the
            // range lies in the peer's registration (checked).
            unsafe { sys::fi_inject_write(core.handles.ep, ptr.cast(), len, addr, address, key) }
        })?;
        posted.desc.close();
        Ok(())
    }

    /// Starts reading `len` bytes at `offset` of `from`'s region `remote`
    /// into a buffer the endpoint owns; complete it with
    /// [`Transfer::test`] or [`Transfer::wait`], then take the bytes with
    /// [`Transfer::data`].
    ///
    /// # Errors
    /// As [`Endpoint::read`] (checked before anything is posted).
    pub fn read_start(
        &self,
        from: u32,
        remote: &RemoteMemory,
        offset: u64,
        len: usize,
    ) -> Result<Transfer> {
        remote.permits(Access::REMOTE_READ, "read", from)?;
        let address = remote.address_of(offset, len as u64, "read")?;
        let buffer = self.inner.shared.take_buffer(len);
        self.read_into(from, remote, address, buffer, len)
    }

    /// Starts reading `buffer.len()` bytes at `offset` of `from`'s region
    /// `remote` straight into `buffer`, which the transfer owns until
    /// [`Transfer::take_buffer`] hands it back (no copy: the request form
    /// for large reads).
    ///
    /// # Errors
    /// As [`Endpoint::read`] (checked before `buffer` is taken; a failed
    /// post loses it).
    pub fn read_start_into(
        &self,
        from: u32,
        remote: &RemoteMemory,
        offset: u64,
        buffer: Box<[u8]>,
    ) -> Result<Transfer> {
        let len = buffer.len();
        remote.permits(Access::REMOTE_READ, "read", from)?;
        let address = remote.address_of(offset, len as u64, "read")?;
        self.read_into(from, remote, address, buffer, len)
    }

    /// Posts a read of `len` bytes at `address` of `remote` into the start
    /// of `buffer`.
    fn read_into(
        &self,
        from: u32,
        remote: &RemoteMemory,
        address: u64,
        buffer: Box<[u8]>,
        len: usize,
    ) -> Result<Transfer> {
        let buffer = RawBuffer::new(buffer);
        let ptr = buffer.ptr();
        self.start(
            Operation::Read,
            from,
            buffer,
            len,
            |core, addr, ctx, desc| {
                // SAFETY: the buffer is owned by the Transfer (or, once given up,
                // by the endpoint) until the completion arrives; the remote range
                // lies in the peer's registration (checked).
                unsafe {
                    sys::fi_read(
                        core.handles.ep,
                        ptr.cast(),
                        len,
                        desc,
                        addr,
                        address,
                        remote.key,
                        ctx,
                    )
                }
            },
        )
    }

    /// Starts writing a copy of `data` at `offset` of `to`'s region
    /// `remote`; the transfer completes when the bytes are in the target's
    /// memory (`FI_DELIVERY_COMPLETE`).
    ///
    /// # Errors
    /// As [`Endpoint::read`].
    pub fn write_start(
        &self,
        to: u32,
        remote: &RemoteMemory,
        offset: u64,
        data: &[u8],
    ) -> Result<Transfer> {
        let op = Operation::WriteDelivered.name();
        remote.permits(Access::REMOTE_WRITE, op, to)?;
        let address = remote.address_of(offset, data.len() as u64, op)?;
        let mut filled = self.inner.shared.take_buffer(data.len());
        filled[..data.len()].copy_from_slice(data);
        self.write_from(to, remote, address, filled, data.len())
    }

    /// Starts writing `buffer` at `offset` of `to`'s region `remote`
    /// straight from `buffer`, which the transfer owns until
    /// [`Transfer::take_buffer`] hands it back (no copy); it completes when
    /// the bytes are in the target's memory.
    ///
    /// # Errors
    /// As [`Endpoint::read`] (checked before `buffer` is taken; a failed
    /// post loses it).
    pub fn write_start_from(
        &self,
        to: u32,
        remote: &RemoteMemory,
        offset: u64,
        buffer: Box<[u8]>,
    ) -> Result<Transfer> {
        let op = Operation::WriteDelivered.name();
        let len = buffer.len();
        remote.permits(Access::REMOTE_WRITE, op, to)?;
        let address = remote.address_of(offset, len as u64, op)?;
        self.write_from(to, remote, address, buffer, len)
    }

    /// Posts a delivered write of the first `len` bytes of `buffer` at
    /// `address` of `remote`.
    fn write_from(
        &self,
        to: u32,
        remote: &RemoteMemory,
        address: u64,
        buffer: Box<[u8]>,
        len: usize,
    ) -> Result<Transfer> {
        let operation = Operation::WriteDelivered;
        let buffer = RawBuffer::new(buffer);
        let ptr = buffer.ptr();
        let key = remote.key;
        self.start(operation, to, buffer, len, |core, addr, ctx, desc| {
            // SAFETY: the buffer is owned by the Transfer (or the endpoint)
            // until the completion arrives; the range lies in the peer's
            // registration.
            unsafe {
                post_write(
                    core,
                    (ptr, len),
                    desc,
                    addr,
                    (address, key),
                    ctx,
                    sys::FI_DELIVERY_COMPLETE,
                )
            }
        })
    }
}

/// Posts an RMA write of `data` (pointer, length) to `remote` (address, key)
/// at `addr` with `flags` (plus `FI_COMPLETION`); libfabric's return code.
///
/// # Safety
/// The endpoint in `core` is open; `data` stays valid and unmodified until
/// the operation's completion arrives; `desc` is its descriptor or null.
unsafe fn post_write(
    core: &Core,
    data: (*const u8, usize),
    desc: *mut c_void,
    addr: sys::fi_addr_t,
    remote: (u64, u64),
    ctx: *mut c_void,
    flags: u64,
) -> isize {
    let mut iov = libc::iovec {
        iov_base: data.0 as *mut c_void,
        iov_len: data.1,
    };
    let mut desc = desc;
    let rma_iov = sys::fi_rma_iov {
        addr: remote.0,
        len: data.1,
        key: remote.1,
    };
    let msg = sys::fi_msg_rma {
        msg_iov: (&mut iov as *mut libc::iovec).cast(),
        desc: &mut desc,
        iov_count: 1,
        addr,
        rma_iov: &rma_iov,
        rma_iov_count: 1,
        context: ctx,
        data: 0,
    };
    // SAFETY: msg and what it points to live across the call (the provider
    // copies the description); the caller keeps the data valid until the
    // completion.
    unsafe { sys::fi_writemsg(core.handles.ep, &msg, flags | sys::FI_COMPLETION) }
}
