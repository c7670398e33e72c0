//! Registered memory: regions this process exposes, and descriptors of the
//! regions of peers.

use std::ffi::c_void;
use std::ptr;
use std::sync::atomic::AtomicU64;
use std::sync::Arc;

use bitflags::bitflags;
use fabric_sys as sys;

use crate::atomic_service::Region;
use crate::endpoint::{Core, EndpointState};
use crate::error::{check, Error, Result};
use crate::mapping::Mapping;
use crate::provider::{Atomics, MrMode};

bitflags! {
    /// What peers may do with a [`MemoryRegion`]. Register for the least a
    /// region needs: a region only read remotely is registered with
    /// `REMOTE_READ` alone, and a remote write to it fails.
    #[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
    pub struct Access: u64 {
        /// Peers may read (`read`, and the read half of atomics).
        const REMOTE_READ = fabric_sys::FI_REMOTE_READ;
        /// Peers may write (`write`, atomics).
        const REMOTE_WRITE = fabric_sys::FI_REMOTE_WRITE;
    }
}

/// How a peer addresses one of this process's regions: base address (a
/// virtual address or 0, per the provider's `FI_MR_VIRT_ADDR`), key, length
/// and what the region allows. Small, plain and exchanged once per peer.
///
/// The endpoint checks every access against the descriptor before posting
/// it: providers do not fail a forbidden access cleanly (on libfabric 1.17
/// `shm` never completes a write to a read-only region, and `tcp` drops the
/// connection to the peer).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub struct RemoteMemory {
    /// The address of byte 0 of the region, in the provider's addressing.
    pub base: u64,
    /// The registration key.
    pub key: u64,
    /// Length in bytes.
    pub len: u64,
    /// What the region's owner allows.
    pub access: Access,
}

impl RemoteMemory {
    /// Size of [`RemoteMemory::to_bytes`]' output.
    pub const ENCODED_LEN: usize = 32;

    /// Encodes as 32 little-endian bytes (base, key, length, access bits).
    pub fn to_bytes(&self) -> [u8; Self::ENCODED_LEN] {
        let mut out = [0u8; Self::ENCODED_LEN];
        out[..8].copy_from_slice(&self.base.to_le_bytes());
        out[8..16].copy_from_slice(&self.key.to_le_bytes());
        out[16..24].copy_from_slice(&self.len.to_le_bytes());
        out[24..].copy_from_slice(&self.access.bits().to_le_bytes());
        out
    }

    /// Decodes [`RemoteMemory::to_bytes`]' output.
    ///
    /// # Errors
    /// [`Error::BadDescriptor`] when `bytes` is not 32 bytes long or holds
    /// unknown access bits.
    pub fn from_bytes(bytes: &[u8]) -> Result<RemoteMemory> {
        if bytes.len() != Self::ENCODED_LEN {
            return Err(Error::BadDescriptor(format!(
                "{} bytes, expected {}",
                bytes.len(),
                Self::ENCODED_LEN
            )));
        }
        let word = |i: usize| {
            let mut w = [0u8; 8];
            w.copy_from_slice(&bytes[i * 8..i * 8 + 8]);
            u64::from_le_bytes(w)
        };
        let access = Access::from_bits(word(3))
            .ok_or_else(|| Error::BadDescriptor(format!("unknown access bits {:#x}", word(3))))?;
        Ok(RemoteMemory {
            base: word(0),
            key: word(1),
            len: word(2),
            access,
        })
    }

    /// Checks that the region allows `needed`.
    ///
    /// # Errors
    /// [`Error::NotPermitted`] naming the operation and the rank.
    pub fn permits(&self, needed: Access, op: &'static str, rank: u32) -> Result<()> {
        if self.access.contains(needed) {
            return Ok(());
        }
        Err(Error::NotPermitted {
            op,
            rank,
            allowed: self.access,
        })
    }

    /// The remote address of `len` bytes at `offset`, after checking that
    /// they lie inside the region.
    ///
    /// # Errors
    /// [`Error::OutOfRange`] when they do not.
    pub fn address_of(&self, offset: u64, len: u64, what: &'static str) -> Result<u64> {
        match offset.checked_add(len) {
            Some(end) if end <= self.len => Ok(self.base + offset),
            _ => Err(Error::OutOfRange {
                what,
                offset,
                len,
                size: self.len,
            }),
        }
    }
}

/// Page-aligned, zero-initialised memory (anonymous pages, faulted in on
/// first touch) registered with the endpoint's domain for remote access. The
/// registration lasts as long as the value; dropping it deregisters and
/// unmaps the memory.
///
/// Peers write into the region at any time, so it hands out no Rust
/// references to its bytes: read and write it by copying
/// ([`MemoryRegion::read_bytes`], [`MemoryRegion::write_bytes`]) or through
/// atomics ([`MemoryRegion::atomic_u64`]). Threads may share it as
/// processes do.
pub struct MemoryRegion {
    // Declared first: the registration is closed before the pages go.
    mr: *mut sys::fid_mr,
    /// Shared with the atomics service while a peer's atomic is applied.
    memory: Arc<Mapping>,
    len: usize,
    remote: RemoteMemory,
    access: Access,
    shared: Arc<EndpointState>,
}

// SAFETY: the region owns its mapping (Send) and its registration handle,
// which is used only in register() and Drop, both under the endpoint's lock,
// so the region may move to another thread.
unsafe impl Send for MemoryRegion {}
// SAFETY: `&self` methods only read the plain fields or go through the
// mapping's copies and atomics (Sync, see Mapping); the registration
// handle is not touched through `&self`.
unsafe impl Sync for MemoryRegion {}

impl MemoryRegion {
    pub(crate) fn register(
        shared: Arc<EndpointState>,
        memory: Mapping,
        access: Access,
    ) -> Result<MemoryRegion> {
        let len = memory.len();
        let mode = shared.granted.mr_mode;
        let mut flags = access.bits();
        if mode.contains(MrMode::LOCAL) {
            flags |= sys::FI_READ | sys::FI_WRITE;
        }
        let requested_key = shared.next_key();
        let core = shared.lock();
        // SAFETY: the mapping lives until this region is dropped, after the
        // registration is closed.
        let registered =
            unsafe { register_memory(&core, memory.as_ptr(), len, flags, requested_key, mode) };
        drop(core);
        let mr = registered?;
        let key = if mode.contains(MrMode::PROV_KEY) {
            // SAFETY: mr is an open registration.
            unsafe { sys::fi_mr_key(mr) }
        } else {
            requested_key
        };
        let base = if mode.contains(MrMode::VIRT_ADDR) {
            memory.as_ptr() as u64
        } else {
            0
        };
        // SAFETY: mr is an open registration.
        let desc = unsafe { sys::fi_mr_desc(mr) } as usize;
        let memory = Arc::new(memory);
        if shared.granted.atomics == Atomics::Software && access.contains(Access::REMOTE_WRITE) {
            let region = Region {
                memory: Arc::clone(&memory),
                base,
                access,
            };
            shared.atomic_regions.insert(key, region);
        }
        shared
            .local_regions
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .push(LocalRegion {
                start: memory.as_ptr() as usize,
                len,
                desc,
            });
        Ok(MemoryRegion {
            mr,
            memory,
            len,
            remote: RemoteMemory {
                base,
                key,
                len: len as u64,
                access,
            },
            access,
            shared,
        })
    }

    /// How peers address this region: hand it to them once.
    pub fn remote(&self) -> RemoteMemory {
        self.remote
    }

    /// Length in bytes.
    pub fn len(&self) -> usize {
        self.len
    }

    /// Whether the region is empty.
    pub fn is_empty(&self) -> bool {
        self.len == 0
    }

    /// What peers may do with the region.
    pub fn access(&self) -> Access {
        self.access
    }

    /// The region's first byte, for code that shares the memory with C (an
    /// MPI window's base): loads and stores through it race with peers'
    /// RMA as MPI's unified memory model allows, ordered by the epochs
    /// that synchronize them. Valid while the region lives.
    pub fn as_ptr(&self) -> *mut u8 {
        self.memory.as_ptr()
    }

    /// The shared-memory name of a region made by
    /// [`crate::Endpoint::register_shared`], which peers on this host can map
    /// ([`Mapping::open_shared`]).
    pub fn shared_name(&self) -> Option<&str> {
        self.memory.name()
    }

    /// Copies `out.len()` bytes at `offset` out of the region.
    ///
    /// # Errors
    /// [`Error::OutOfRange`] when the bytes lie outside the region.
    pub fn read_bytes(&self, offset: usize, out: &mut [u8]) -> Result<()> {
        self.memory.read_bytes(offset, out)
    }

    /// Copies `data` into the region at `offset`.
    ///
    /// # Errors
    /// [`Error::OutOfRange`] when the bytes lie outside the region.
    pub fn write_bytes(&self, offset: usize, data: &[u8]) -> Result<()> {
        self.memory.write_bytes(offset, data)
    }

    /// The 8 bytes at `offset` as an atomic word (the target of remote
    /// fetch-add and compare-swap).
    ///
    /// # Errors
    /// [`Error::OutOfRange`] or [`Error::Misaligned`].
    pub fn atomic_u64(&self, offset: usize) -> Result<&AtomicU64> {
        self.memory.atomic_u64(offset)
    }
}

impl Drop for MemoryRegion {
    fn drop(&mut self) {
        self.shared.atomic_regions.remove(self.remote.key);
        let start = self.memory.as_ptr() as usize;
        self.shared
            .local_regions
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .retain(|r| r.start != start);
        let core = self.shared.lock();
        // SAFETY: the registration was opened in register() and is closed
        // once, under the endpoint lock so no operation is being posted; the
        // mapping is dropped after this, when the provider no longer uses it.
        unsafe { sys::fi_close(self.mr.cast()) };
        drop(core);
    }
}

/// Registers `len` bytes at `ptr` with `flags` and `key`, binding and
/// enabling the registration where `mode` has `FI_MR_ENDPOINT`; nothing is
/// left open on failure.
///
/// # Safety
/// `ptr..ptr + len` must stay allocated until the returned registration is
/// closed, and the caller holds the endpoint lock (`core`).
pub(crate) unsafe fn register_memory(
    core: &Core,
    ptr: *const u8,
    len: usize,
    flags: u64,
    key: u64,
    mode: MrMode,
) -> Result<*mut sys::fid_mr> {
    let mut mr: *mut sys::fid_mr = ptr::null_mut();
    // SAFETY: the domain is open; the caller guarantees the buffer.
    check("fi_mr_reg", unsafe {
        sys::fi_mr_reg(
            core.handles.domain,
            ptr.cast::<c_void>(),
            len.max(1),
            flags,
            0,
            key,
            0,
            &mut mr,
            ptr::null_mut(),
        )
    })?;
    if mode.contains(MrMode::ENDPOINT) {
        // SAFETY: mr and the endpoint are open.
        let bound = check("fi_mr_bind", unsafe {
            sys::fi_mr_bind(mr, core.handles.ep_fid(), 0)
        })
        // SAFETY: mr is open and bound.
        .and_then(|()| check("fi_mr_enable", unsafe { sys::fi_mr_enable(mr) }));
        if let Err(e) = bound {
            // SAFETY: mr was opened above and is closed once.
            unsafe { sys::fi_close(mr.cast()) };
            return Err(e);
        }
    }
    Ok(mr)
}

/// A region of this process, for finding local descriptors (`FI_MR_LOCAL`).
#[derive(Debug, Clone, Copy)]
pub(crate) struct LocalRegion {
    pub start: usize,
    pub len: usize,
    pub desc: usize,
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn descriptor_round_trips_and_checks_ranges() {
        let r = RemoteMemory {
            base: 0x7f00_0000_1000,
            key: 42,
            len: 100,
            access: Access::REMOTE_READ,
        };
        assert_eq!(RemoteMemory::from_bytes(&r.to_bytes()).unwrap(), r);
        assert!(RemoteMemory::from_bytes(&[0u8; 23]).is_err());
        let mut bad = r.to_bytes();
        bad[31] = 0x80;
        assert!(RemoteMemory::from_bytes(&bad).is_err());
        assert!(r.permits(Access::REMOTE_READ, "read", 1).is_ok());
        let e = r.permits(Access::REMOTE_WRITE, "write", 1).unwrap_err();
        assert_eq!(
            e.to_string(),
            "write to rank 1 refused: the region allows only REMOTE_READ"
        );
        assert_eq!(r.address_of(10, 90, "t").unwrap(), 0x7f00_0000_1000 + 10);
        let err = r.address_of(10, 91, "read").unwrap_err();
        assert_eq!(err.to_string(), "read: bytes 10..101 are outside 0..100");
        assert!(r.address_of(u64::MAX, 2, "t").is_err());
    }
}
