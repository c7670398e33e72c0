//! Atomics on peers' registered memory, split into operations of the
//! size the provider allows, or sent to the target's atomics service
//! ([`Atomics::Software`], see `atomic_service`).

use super::*;
use crate::atomic_service::{decode_reply, max_elements, Action, Refusal, Request, ATOMIC};

impl Endpoint {
    /// Under [`Atomics::Software`], before the first region peers may
    /// write (`access`), answers peers' atomics from then on: a process
    /// that registers none keeps no receives for them.
    pub(super) fn serve_atomics(&self, access: Access) -> Result<()> {
        let software = self.inner.shared.granted.atomics == Atomics::Software;
        if !software || !access.contains(Access::REMOTE_WRITE) {
            return Ok(());
        }
        let regions = self.inner.shared.atomic_regions.clone();
        match self.serve(ATOMIC, move |_, body, _| regions.serve(body)) {
            Err(Error::ServiceTaken { .. }) => Ok(()),
            served => served,
        }
    }

    /// Has `at`'s atomics service apply `action` with `operand` (and
    /// `compare`) to the elements at `address` of its region `key`, in
    /// requests of at most [`max_elements`]; the previous values land in
    /// `fetch` when given.
    #[allow(clippy::too_many_arguments)]
    fn atomic_by_target(
        &self,
        operation: Operation,
        at: u32,
        key: u64,
        address: u64,
        datatype: Datatype,
        action: Action,
        operand: &[u8],
        compare: &[u8],
        mut fetch: Option<&mut [u8]>,
    ) -> Result<()> {
        let size = datatype.size();
        let per = max_elements(size, action) * size;
        let mut reply = vec![0u8; 8 + per.min(operand.len())];
        for (i, chunk) in operand.chunks(per).enumerate() {
            let done = i * per;
            let request = Request {
                action,
                datatype,
                key,
                address: address + done as u64,
                operand: chunk,
                compare: compare.get(done..done + chunk.len()).unwrap_or_default(),
            };
            let len = self.call_as(operation.name(), at, ATOMIC, &request.encode(), &mut reply)?;
            let previous = match decode_reply(&reply[..len], chunk.len()) {
                Some(Ok(previous)) => previous,
                refused => return Err(refusal(operation, at, refused.map(|r| r.err()))),
            };
            if let Some(f) = fetch.as_deref_mut() {
                f[done..done + chunk.len()].copy_from_slice(previous);
            }
        }
        Ok(())
    }

    pub(super) fn atomic_target(
        remote: &RemoteMemory,
        offset: u64,
        len: usize,
        size: usize,
        op: &'static str,
        rank: u32,
    ) -> Result<u64> {
        remote.permits(Access::REMOTE_READ | Access::REMOTE_WRITE, op, rank)?;
        if !offset.is_multiple_of(size as u64) || !len.is_multiple_of(size) {
            return Err(Error::Misaligned { what: op, offset });
        }
        remote.address_of(offset, len as u64, op)
    }

    /// Atomically adds `value` to the u64 at `offset` of `at`'s region
    /// `remote`; returns the previous value.
    ///
    /// # Errors
    /// As [`Endpoint::atomic`].
    pub fn fetch_add(
        &self,
        at: u32,
        remote: &RemoteMemory,
        offset: u64,
        value: u64,
    ) -> Result<u64> {
        let mut previous = [0u8; 8];
        self.atomic(
            at,
            remote,
            offset,
            Datatype::U64,
            AtomicOp::Sum,
            &value.to_le_bytes(),
            Some(&mut previous),
        )?;
        Ok(u64::from_le_bytes(previous))
    }

    /// Atomically replaces the u64 at `offset` of `at`'s region `remote` with
    /// `new` if it equals `expected`; returns the previous value either way.
    ///
    /// # Errors
    /// As [`Endpoint::atomic`].
    pub fn compare_swap(
        &self,
        at: u32,
        remote: &RemoteMemory,
        offset: u64,
        expected: u64,
        new: u64,
    ) -> Result<u64> {
        let mut previous = [0u8; 8];
        self.compare_swap_element(
            at,
            remote,
            offset,
            Datatype::U64,
            &expected.to_le_bytes(),
            &new.to_le_bytes(),
            &mut previous,
        )?;
        Ok(u64::from_le_bytes(previous))
    }

    /// Applies `op` with `operand` (whole elements of `datatype`,
    /// little-endian) to the elements at `offset` of `at`'s region `remote`,
    /// each element atomically; with `fetch` (as long as `operand`), the
    /// elements' previous values are returned in it. Returns once the
    /// operation is applied at the target (libfabric's fetching form is
    /// used either way: a plain atomic's completion only means "sent").
    /// Runs as several operations when the provider limits the elements per
    /// atomic.
    ///
    /// # Errors
    /// [`Error::Misaligned`] for an offset or length that is not a multiple
    /// of the element size; [`Error::NotSupported`] when the provider does
    /// not offer `op` on `datatype`; otherwise as [`Endpoint::read`].
    #[allow(clippy::too_many_arguments)]
    pub fn atomic(
        &self,
        at: u32,
        remote: &RemoteMemory,
        offset: u64,
        datatype: Datatype,
        op: AtomicOp,
        operand: &[u8],
        mut fetch: Option<&mut [u8]>,
    ) -> Result<()> {
        let operation = match fetch {
            Some(_) => Operation::FetchAtomic,
            None => Operation::Atomic,
        };
        let name = operation.name();
        let size = datatype.size();
        Self::atomic_target(remote, offset, operand.len(), size, name, at)?;
        if fetch.as_ref().is_some_and(|f| f.len() != operand.len()) {
            return Err(Error::OutOfRange {
                what: "atomic fetch buffer",
                offset: 0,
                len: fetch.as_ref().map_or(0, |f| f.len() as u64),
                size: operand.len() as u64,
            });
        }
        if self.inner.shared.granted.atomics == Atomics::Software {
            let address = remote.address_of(offset, operand.len() as u64, name)?;
            let action = Action::Apply(op);
            return self.atomic_by_target(
                operation,
                at,
                remote.key,
                address,
                datatype,
                action,
                operand,
                &[],
                fetch,
            );
        }
        // Always the fetching form, its result dropped when not wanted:
        // its completion means "applied at the target", which a plain
        // atomic's (transmit) completion does not.
        let per_op = self
            .atomic_count(datatype, Some(op), true)?
            .saturating_mul(size)
            .min(operand.len().max(size));
        for (i, chunk) in operand.chunks(per_op).enumerate() {
            let at_offset = offset + (i * per_op) as u64;
            let count = chunk.len() / size;
            let out = fetch
                .as_deref_mut()
                .map(|f| &mut f[i * per_op..i * per_op + chunk.len()]);
            // Buffers: [operand, result].
            self.post_atomic(
                operation,
                at,
                remote,
                at_offset,
                &[chunk],
                out,
                |ep, bufs, desc, target| {
                    // SAFETY: the endpoint is open; bufs point into storage that
                    // Endpoint::post_atomic keeps alive until the completion
                    // arrives, each with room for `count` elements, and desc
                    // covers them.
                    unsafe {
                        sys::fi_fetch_atomic(
                            ep,
                            bufs[0],
                            count,
                            desc,
                            bufs[1],
                            desc,
                            target.addr,
                            target.address,
                            target.key,
                            datatype.fi(),
                            op.fi(),
                            target.ctx,
                        )
                    }
                },
            )?;
        }
        Ok(())
    }

    /// Atomically replaces the element of `datatype` at `offset` of `at`'s
    /// region `remote` with `new` if it equals `compare` (bitwise, both one
    /// element, little-endian); returns its previous value in `previous`.
    ///
    /// # Errors
    /// As [`Endpoint::atomic`]; [`Error::OutOfRange`] when the buffers are
    /// not one element each.
    #[allow(clippy::too_many_arguments)]
    pub fn compare_swap_element(
        &self,
        at: u32,
        remote: &RemoteMemory,
        offset: u64,
        datatype: Datatype,
        compare: &[u8],
        new: &[u8],
        previous: &mut [u8],
    ) -> Result<()> {
        let operation = Operation::CompareSwap;
        let op = operation.name();
        let size = datatype.size();
        for (what, buf) in [
            ("compare value", compare),
            ("new value", new),
            ("previous value", &*previous),
        ] {
            if buf.len() != size {
                return Err(Error::OutOfRange {
                    what,
                    offset: 0,
                    len: buf.len() as u64,
                    size: size as u64,
                });
            }
        }
        let address = Self::atomic_target(remote, offset, size, size, op, at)?;
        if self.inner.shared.granted.atomics == Atomics::Software {
            let (key, action) = (remote.key, Action::CompareSwap);
            return self.atomic_by_target(
                operation,
                at,
                key,
                address,
                datatype,
                action,
                new,
                compare,
                Some(previous),
            );
        }
        self.atomic_count(datatype, None, false)?;
        // Buffers: [new value, compare value, result].
        self.post_atomic(
            operation,
            at,
            remote,
            offset,
            &[new, compare],
            Some(previous),
            |ep, bufs, desc, target| {
                // SAFETY: the endpoint is open; bufs point into storage that
                // Endpoint::post_atomic keeps alive until the completion arrives,
                // one element each, and desc covers them.
                unsafe {
                    sys::fi_compare_atomic(
                        ep,
                        bufs[0],
                        1,
                        desc,
                        bufs[1],
                        desc,
                        bufs[2],
                        desc,
                        target.addr,
                        target.address,
                        target.key,
                        datatype.fi(),
                        sys::FI_CSWAP,
                        target.ctx,
                    )
                }
            },
        )
    }

    /// How many elements one atomic may carry for `op` on `datatype`, with
    /// or without `fetch` (`None`: compare-and-swap).
    pub(super) fn atomic_count(
        &self,
        datatype: Datatype,
        op: Option<AtomicOp>,
        fetch: bool,
    ) -> Result<usize> {
        let kind = match op {
            None => 0,
            Some(_) if fetch => 1,
            Some(_) => 2,
        };
        let slot = &self.inner.shared.atomic_counts
            [(kind * 10 + datatype as usize) * 5 + op.map_or(0, |o| o as usize)];
        let known = slot.load(Ordering::Relaxed);
        if known > 0 {
            return Ok(known);
        }
        let mut count = 0usize;
        let core = self.inner.shared.lock();
        let ep = core.handles.ep;
        // SAFETY: the endpoint is open; count is a valid out-pointer.
        let ret = unsafe {
            match op {
                None => sys::fi_compare_atomicvalid(ep, datatype.fi(), sys::FI_CSWAP, &mut count),
                Some(op) if fetch => {
                    sys::fi_fetch_atomicvalid(ep, datatype.fi(), op.fi(), &mut count)
                }
                Some(op) => sys::fi_atomicvalid(ep, datatype.fi(), op.fi(), &mut count),
            }
        };
        drop(core);
        if ret != 0 || count == 0 {
            return Err(Error::NotSupported {
                what: "atomic operation on this element type",
                provider: self.inner.shared.granted.provider.name(),
            });
        }
        slot.store(count, Ordering::Relaxed);
        Ok(count)
    }

    /// Posts an atomic at `offset` of `at`'s region and waits for it: the
    /// `inputs`, then a result buffer as long as the first input, are copied
    /// into storage shared with the endpoint so that a timed-out operation
    /// can leave them to it; `post` receives pointers to those buffers
    /// (valid until the completion arrives), their descriptor and the
    /// target. The result is copied into `result`.
    #[allow(clippy::too_many_arguments)]
    fn post_atomic(
        &self,
        operation: Operation,
        at: u32,
        remote: &RemoteMemory,
        offset: u64,
        inputs: &[&[u8]],
        result: Option<&mut [u8]>,
        post: impl Fn(*mut sys::fid_ep, [*mut c_void; 3], *mut c_void, AtomicTarget) -> isize,
    ) -> Result<()> {
        let op = operation.name();
        let address = remote.address_of(offset, inputs[0].len() as u64, op)?;
        let words_each = inputs[0].len().div_ceil(8);
        let words: Arc<[AtomicU64]> = (0..words_each * (inputs.len() + 1))
            .map(|_| AtomicU64::new(0))
            .collect();
        // AtomicU64 has the layout of u64; the storage is only shared with
        // the provider until the completion, and copied in and out here
        // while no operation uses it.
        let base = words.as_ptr().cast::<u8>().cast_mut();
        let buffer = |i: usize| base.wrapping_add(i * words_each * 8);
        for (i, input) in inputs.iter().enumerate() {
            for (w, bytes) in input.chunks(8).enumerate() {
                let mut word = [0u8; 8];
                word[..bytes.len()].copy_from_slice(bytes);
                words[i * words_each + w].store(u64::from_ne_bytes(word), Ordering::Relaxed);
            }
        }
        let bufs = [buffer(0).cast(), buffer(1).cast(), buffer(2).cast()];
        let posted = self.post(
            operation,
            at,
            (base, 8 * words.len()),
            true,
            |core, addr, ctx, desc| {
                let target = AtomicTarget {
                    addr,
                    address,
                    key: remote.key,
                    ctx,
                };
                post(core.handles.ep, bufs, desc, target)
            },
        )?;
        self.wait(
            op,
            at,
            posted,
            OnTimeout::Release(Box::new(Arc::clone(&words))),
        )?;
        if let Some(result) = result {
            let first = inputs.len() * words_each;
            for (w, bytes) in result.chunks_mut(8).enumerate() {
                let word = words[first + w].load(Ordering::Acquire).to_ne_bytes();
                bytes.copy_from_slice(&word[..bytes.len()]);
            }
        }
        Ok(())
    }
}

/// The error of an atomic `at` refused (`Some(Some(_))`) or answered with a
/// malformed reply.
fn refusal(operation: Operation, at: u32, refused: Option<Option<Refusal>>) -> Error {
    let (code, text) = match refused {
        Some(Some(Refusal::UnknownRegion | Refusal::NotPermitted)) => (
            sys::FI_EACCES,
            "the target refused the atomic: no such region, or not writable",
        ),
        Some(Some(Refusal::OutOfRange)) => (
            sys::FI_EINVAL,
            "the target refused the atomic: outside its region",
        ),
        _ => (sys::FI_EINVAL, "malformed atomic request or reply"),
    };
    Error::Completion {
        op: operation.name(),
        rank: at,
        code: code as i32,
        provider_code: 0,
        text,
    }
}
