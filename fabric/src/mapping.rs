//! Mapped memory: anonymous pages for memory regions, and named shared
//! memory (`/dev/shm/onesided-PID-N`) that processes on one host map to
//! reach each other's windows with plain copies instead of the provider.
//!
//! A mapping hands out no Rust references to its bytes (peers and the
//! provider write into it at any time): it copies in and out, bounds
//! checked, and gives atomics on aligned words.

use std::ffi::CString;
use std::ptr::{self, NonNull};
use std::sync::atomic::{AtomicU64, Ordering};

use crate::error::{Error, Result};

pub(crate) const PAGE: usize = 4096;

/// Numbers the shared mappings this process creates.
static NEXT_SHARED: AtomicU64 = AtomicU64::new(0);

/// Mapped memory of `len` bytes (whole pages underneath).
pub struct Mapping {
    memory: NonNull<u8>,
    /// Bytes mapped.
    size: usize,
    len: usize,
    /// The shared-memory name, for a named mapping.
    name: Option<String>,
    /// Whether this process created the name (and removes it on drop).
    owner: bool,
}

// SAFETY: the mapping owns its pages; moving it to another thread moves
// that ownership.
unsafe impl Send for Mapping {}
// SAFETY: no method hands out a reference to the bytes: `&self` methods
// copy through raw pointers (bounds checked) or use atomics, exactly as
// other processes mapping the same pages do. Threads of this process
// copying into overlapping bytes at once mix old and new bytes, as
// conflicting RMA accesses from other processes already may (MPI leaves
// their result undefined); nothing else is shared.
unsafe impl Sync for Mapping {}

fn page_size(len: usize) -> Result<usize> {
    len.max(1)
        .checked_next_multiple_of(PAGE)
        .filter(|&s| s <= isize::MAX as usize)
        .ok_or(Error::OutOfRange {
            what: "mapping size",
            offset: 0,
            len: len as u64,
            size: isize::MAX as u64,
        })
}

impl Mapping {
    /// `len` bytes of private anonymous memory, zero, faulted in on first
    /// touch. (Zeroing a heap allocation touched every page; figures:
    /// docs/measurements.md, "Anonymous mappings".)
    ///
    /// # Errors
    /// [`Error::OutOfRange`] for an impossible size, [`Error::Io`] when the
    /// kernel refuses.
    pub fn anonymous(len: usize) -> Result<Mapping> {
        let size = page_size(len)?;
        let memory = map(size, libc::MAP_PRIVATE | libc::MAP_ANONYMOUS, -1)
            .map_err(|e| Error::io(format!("mapping {len} bytes"), e))?;
        crate::pages::prefer_huge(memory.as_ptr() as usize, size);
        Ok(Mapping {
            memory,
            size,
            len,
            name: None,
            owner: false,
        })
    }

    /// `len` bytes of zero shared memory under a fresh name, removed when
    /// this mapping is dropped (peers that mapped it keep their mapping).
    ///
    /// # Errors
    /// As [`Mapping::anonymous`].
    pub fn create_shared(len: usize) -> Result<Mapping> {
        let size = page_size(len)?;
        let name = format!(
            "/onesided-{}-{}",
            std::process::id(),
            NEXT_SHARED.fetch_add(1, Ordering::Relaxed)
        );
        let memory = open_and_map(&name, size, true)
            .map_err(|e| Error::io(format!("creating shared memory {name}"), e))?;
        Ok(Mapping {
            memory,
            size,
            len,
            name: Some(name),
            owner: true,
        })
    }

    /// Maps the shared memory another process created under `name`, which
    /// must hold at least `len` bytes.
    ///
    /// # Errors
    /// [`Error::BadDescriptor`] for a name that is not one of onesided's;
    /// [`Error::Io`] when it cannot be opened or is too small.
    pub fn open_shared(name: &str, len: usize) -> Result<Mapping> {
        let valid = name.strip_prefix("/onesided-").is_some_and(|rest| {
            !rest.is_empty() && rest.bytes().all(|b| b.is_ascii_digit() || b == b'-')
        });
        if !valid {
            return Err(Error::BadDescriptor(format!("shared memory name {name:?}")));
        }
        let size = page_size(len)?;
        let memory = open_and_map(name, size, false)
            .map_err(|e| Error::io(format!("opening shared memory {name}"), e))?;
        Ok(Mapping {
            memory,
            size,
            len,
            name: Some(name.to_string()),
            owner: false,
        })
    }

    /// `len` bytes of the caller's at `ptr` (null only when `len` is 0),
    /// not mapped here and not unmapped on drop: memory a program hands
    /// over to peers' RMA (an MPI window made over the program's memory).
    ///
    /// # Safety
    /// The bytes stay valid until the mapping, and every region
    /// registered over it, is dropped; they are read and written through
    /// raw pointers meanwhile (by copies here and by the provider).
    pub unsafe fn external(ptr: *mut u8, len: usize) -> Mapping {
        Mapping {
            memory: NonNull::new(ptr).unwrap_or(NonNull::dangling()),
            size: 0,
            len,
            name: None,
            owner: false,
        }
    }

    /// The shared-memory name, for a named mapping.
    pub fn name(&self) -> Option<&str> {
        self.name.as_deref()
    }

    /// Length in bytes.
    pub fn len(&self) -> usize {
        self.len
    }

    /// Whether the mapping is empty.
    pub fn is_empty(&self) -> bool {
        self.len == 0
    }

    /// The first byte, for code that shares the memory with C (an MPI
    /// shared-memory window's base): loads and stores through it race
    /// with other processes' as MPI's unified model allows. Valid while
    /// the mapping lives.
    pub fn as_ptr(&self) -> *mut u8 {
        self.memory.as_ptr()
    }

    fn check(&self, offset: usize, len: usize, what: &'static str) -> Result<()> {
        match offset.checked_add(len) {
            Some(end) if end <= self.len => Ok(()),
            _ => Err(Error::OutOfRange {
                what,
                offset: offset as u64,
                len: len as u64,
                size: self.len as u64,
            }),
        }
    }

    /// Copies `out.len()` bytes at `offset` out of the mapping.
    ///
    /// # Errors
    /// [`Error::OutOfRange`] when the bytes lie outside it.
    pub fn read_bytes(&self, offset: usize, out: &mut [u8]) -> Result<()> {
        self.check(offset, out.len(), "memory read")?;
        // SAFETY: offset..offset+len lies inside the mapping (checked); `out`
        // is a distinct Rust buffer. Concurrent writes by other processes or
        // the provider may mix old and new bytes, as RMA semantics allow.
        unsafe {
            copy(
                self.memory.as_ptr().add(offset),
                out.as_mut_ptr(),
                out.len(),
            )
        };
        Ok(())
    }

    /// Copies `data` into the mapping at `offset`.
    ///
    /// # Errors
    /// [`Error::OutOfRange`] when the bytes lie outside it.
    pub fn write_bytes(&self, offset: usize, data: &[u8]) -> Result<()> {
        self.check(offset, data.len(), "memory write")?;
        // SAFETY: as in read_bytes, with the copy going the other way.
        unsafe { copy(data.as_ptr(), self.memory.as_ptr().add(offset), data.len()) };
        Ok(())
    }

    /// Atomically replaces the `size`-byte element (1, 2, 4 or 8 bytes,
    /// naturally aligned) at `offset` with `f(current)` for as long as `f`
    /// returns a value (a compare-and-swap loop); returns the element's
    /// previous bits. Values are little-endian bit patterns in a `u64`.
    ///
    /// # Errors
    /// [`Error::OutOfRange`], or [`Error::Misaligned`] for an offset not a
    /// multiple of `size` or a size that is not 1, 2, 4 or 8.
    pub fn update(
        &self,
        offset: usize,
        size: usize,
        mut f: impl FnMut(u64) -> Option<u64>,
    ) -> Result<u64> {
        self.check(offset, size, "memory atomic")?;
        if !matches!(size, 1 | 2 | 4 | 8) || !offset.is_multiple_of(size) {
            return Err(Error::Misaligned {
                what: "memory atomic",
                offset: offset as u64,
            });
        }
        // SAFETY: the element lies inside the page-aligned mapping and is
        // aligned to its size (checked); the mapping lives as long as &self;
        // the atomic types have the layout of the integers and tolerate
        // concurrent access by other processes.
        let at = unsafe { self.memory.as_ptr().add(offset) };
        macro_rules! cas_loop {
            ($atomic:ty, $int:ty) => {{
                // SAFETY: see above.
                let a = unsafe { <$atomic>::from_ptr(at.cast::<$int>()) };
                let g = |v: $int| f(v as u64).map(|n| n as $int);
                Ok(
                    match a.fetch_update(Ordering::AcqRel, Ordering::Acquire, g) {
                        Ok(v) | Err(v) => v as u64,
                    },
                )
            }};
        }
        match size {
            1 => cas_loop!(std::sync::atomic::AtomicU8, u8),
            2 => cas_loop!(std::sync::atomic::AtomicU16, u16),
            4 => cas_loop!(std::sync::atomic::AtomicU32, u32),
            _ => cas_loop!(AtomicU64, u64),
        }
    }

    /// The 8 bytes at `offset` as an atomic word.
    ///
    /// # Errors
    /// [`Error::OutOfRange`] or [`Error::Misaligned`].
    pub fn atomic_u64(&self, offset: usize) -> Result<&AtomicU64> {
        self.check(offset, 8, "memory atomic")?;
        if !offset.is_multiple_of(8) {
            return Err(Error::Misaligned {
                what: "memory atomic",
                offset: offset as u64,
            });
        }
        // SAFETY: the word lies inside the page-aligned mapping and is
        // 8-byte aligned (checked); the mapping lives as long as &self.
        // AtomicU64 has the layout of u64 and tolerates concurrent access.
        Ok(unsafe { AtomicU64::from_ptr(self.memory.as_ptr().add(offset).cast::<u64>()) })
    }
}

impl Drop for Mapping {
    fn drop(&mut self) {
        if self.size == 0 {
            // The caller's memory (Mapping::external): not ours to unmap.
            return;
        }
        // SAFETY: the pages were mapped with this size by this value and
        // nothing uses them after it is dropped.
        unsafe { libc::munmap(self.memory.as_ptr().cast(), self.size) };
        if let (true, Some(name)) = (self.owner, &self.name) {
            if let Ok(c) = CString::new(name.as_str()) {
                // SAFETY: shm_unlink with a valid C string; it only removes
                // the name.
                unsafe { libc::shm_unlink(c.as_ptr()) };
            }
        }
    }
}

/// mmap of `size` bytes with `flags` over `fd` (-1 for anonymous).
fn map(size: usize, flags: i32, fd: i32) -> std::io::Result<NonNull<u8>> {
    // SAFETY: a new mapping with no address hint; the kernel picks the
    // place, and the result is checked below.
    let ptr = unsafe {
        libc::mmap(
            ptr::null_mut(),
            size,
            libc::PROT_READ | libc::PROT_WRITE,
            flags,
            fd,
            0,
        )
    };
    if ptr == libc::MAP_FAILED {
        return Err(std::io::Error::last_os_error());
    }
    NonNull::new(ptr.cast::<u8>())
        .ok_or_else(|| std::io::Error::from(std::io::ErrorKind::OutOfMemory))
}

/// Opens (or creates, with `create`) the shared memory `name` and maps
/// `size` bytes of it.
fn open_and_map(name: &str, size: usize, create: bool) -> std::io::Result<NonNull<u8>> {
    let c =
        CString::new(name).map_err(|_| std::io::Error::from(std::io::ErrorKind::InvalidInput))?;
    let flags = if create {
        libc::O_RDWR | libc::O_CREAT | libc::O_EXCL | libc::O_CLOEXEC
    } else {
        libc::O_RDWR | libc::O_CLOEXEC
    };
    // SAFETY: shm_open with a valid C string; the result is checked.
    let fd = unsafe { libc::shm_open(c.as_ptr(), flags, 0o600) };
    if fd < 0 {
        return Err(std::io::Error::last_os_error());
    }
    let result = (|| {
        if create {
            // SAFETY: ftruncate on the descriptor just opened.
            if unsafe { libc::ftruncate(fd, size as libc::off_t) } != 0 {
                return Err(std::io::Error::last_os_error());
            }
        } else {
            let mut stat = std::mem::MaybeUninit::<libc::stat>::zeroed();
            // SAFETY: fstat writes one stat into the zeroed buffer.
            if unsafe { libc::fstat(fd, stat.as_mut_ptr()) } != 0 {
                return Err(std::io::Error::last_os_error());
            }
            // SAFETY: zeroed, then filled by fstat.
            if (unsafe { stat.assume_init() }.st_size as u64) < size as u64 {
                return Err(std::io::Error::from(std::io::ErrorKind::UnexpectedEof));
            }
        }
        map(size, libc::MAP_SHARED, fd)
    })();
    // SAFETY: closing the descriptor opened above; the mapping stays valid.
    unsafe { libc::close(fd) };
    if result.is_err() && create {
        // SAFETY: removes the name this call created.
        unsafe { libc::shm_unlink(c.as_ptr()) };
    }
    result
}

/// Copies `len` bytes. glibc 2.36's `rep movsb` on this machine's AMD EPYC
/// copies 4 KiB-1 MiB many times slower when the destination lies 1-15
/// bytes past the source's alignment modulo 64 (measured at every offset);
/// copies of 2 KiB stay below its `rep movsb` threshold and run its vector
/// loop, much faster, so such copies go in 2 KiB pieces (figures:
/// docs/measurements.md, "Misaligned copies"). Other copies are one
/// `memcpy`.
///
/// # Safety
/// As `ptr::copy_nonoverlapping`.
unsafe fn copy(src: *const u8, dst: *mut u8, len: usize) {
    const CHUNK: usize = 2048;
    let skew = (dst as usize).wrapping_sub(src as usize) % 64;
    if !(4096..1 << 20).contains(&len) || !(1..16).contains(&skew) {
        // SAFETY: the caller's contract.
        unsafe { ptr::copy_nonoverlapping(src, dst, len) };
        return;
    }
    let mut done = 0;
    while done < len {
        let n = CHUNK.min(len - done);
        // SAFETY: done + n <= len, inside both buffers.
        unsafe { ptr::copy_nonoverlapping(src.add(done), dst.add(done), n) };
        done += n;
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn copies_are_exact_at_every_skew_and_size() {
        let src: Vec<u8> = (0..(1 << 20) + 200).map(|i| (i * 7 % 251) as u8).collect();
        let mut dst = vec![0u8; (1 << 20) + 200];
        for (s, d, len) in [
            (0, 1, 8192),
            (3, 10, 70_001),
            (64, 64, 4096),
            (5, 70, 1 << 20),
            (1, 0, 100),
        ] {
            dst.fill(0);
            // SAFETY: both ranges lie inside their buffers.
            unsafe { copy(src.as_ptr().add(s), dst.as_mut_ptr().add(d), len) };
            assert_eq!(
                &dst[d..d + len],
                &src[s..s + len],
                "skew {s}->{d}, {len} bytes"
            );
            assert!(dst[..d].iter().all(|&b| b == 0) && dst[d + len..].iter().all(|&b| b == 0));
        }
    }

    #[test]
    fn shared_memory_is_seen_through_a_second_mapping() {
        let owner = Mapping::create_shared(100).unwrap();
        let name = owner.name().unwrap().to_string();
        let peer = Mapping::open_shared(&name, 100).unwrap();
        owner.write_bytes(10, b"hello").unwrap();
        let mut out = [0u8; 5];
        peer.read_bytes(10, &mut out).unwrap();
        assert_eq!(&out, b"hello");
        peer.atomic_u64(24).unwrap().fetch_add(5, Ordering::SeqCst);
        assert_eq!(owner.atomic_u64(24).unwrap().load(Ordering::SeqCst), 5);
        assert!(matches!(
            peer.read_bytes(96, &mut out),
            Err(Error::OutOfRange { .. })
        ));
        assert!(matches!(
            Mapping::open_shared(&name, 1 << 20),
            Err(Error::Io { .. })
        ));
        drop(owner);
        assert!(
            Mapping::open_shared(&name, 100).is_err(),
            "the name goes with its owner"
        );
        assert!(matches!(
            Mapping::open_shared("/etc/passwd", 10),
            Err(Error::BadDescriptor(_))
        ));
    }

    #[test]
    fn anonymous_memory_is_zero_and_checked() {
        let m = Mapping::anonymous(10_000).unwrap();
        let mut out = [1u8; 16];
        m.read_bytes(9_984, &mut out).unwrap();
        assert_eq!(out, [0u8; 16]);
        assert!(matches!(m.atomic_u64(3), Err(Error::Misaligned { .. })));
        assert!(Mapping::anonymous(usize::MAX - 10).is_err());
    }
}
