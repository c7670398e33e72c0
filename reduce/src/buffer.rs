//! Memory a reduction works in: working copies of lines (the root's in
//! the caller's element type, the others as aligned bytes) and the pool
//! that keeps ended reductions' copies and registered lines for the next.

use std::sync::{Arc, Mutex};

use onesided_fabric::{pages, MemoryRegion};

/// Lines and copies kept, of each kind.
const POOLED: usize = 16;

/// Memory of ended reductions kept for the next ones: its pages are
/// faulted in and (lines) registered already, which at 32 MiB costs more
/// than the reduction's own copies.
#[derive(Default)]
pub(crate) struct Pool {
    /// Lines, by length.
    pub(crate) regions: Vec<(usize, Arc<MemoryRegion>)>,
    copies: Vec<Aligned>,
}

impl Pool {
    pub(crate) fn region(&mut self, len: usize) -> Option<Arc<MemoryRegion>> {
        let i = self.regions.iter().position(|(l, _)| *l == len)?;
        Some(self.regions.swap_remove(i).1)
    }

    /// Gives back a line; returns the one it no longer keeps, to be
    /// dropped outside the lock (dropping a region takes the endpoint's).
    #[must_use]
    pub(crate) fn put_region(
        &mut self,
        len: usize,
        region: Arc<MemoryRegion>,
    ) -> Option<Arc<MemoryRegion>> {
        self.regions.push((len, region));
        (self.regions.len() > POOLED).then(|| self.regions.remove(0).1)
    }

    pub(crate) fn copy(&mut self, len: usize) -> Option<Aligned> {
        let i = self.copies.iter().position(|c| c.len == len)?;
        Some(self.copies.swap_remove(i))
    }

    /// Keeps a copy, or gives the root's copy to its future.
    pub(crate) fn put_copy(&mut self, copy: Box<dyn Buffer>) {
        if let Some(copy) = copy.release() {
            self.copies.push(copy);
            if self.copies.len() > POOLED {
                self.copies.remove(0);
            }
        }
    }
}

/// A working copy of a line.
pub(crate) trait Buffer: Send {
    fn bytes(&self) -> &[u8];
    fn bytes_mut(&mut self) -> &mut [u8];
    /// Gives the copy up: the root's to its future (`None`), aligned
    /// bytes back (for the pool, or for the future to convert).
    fn release(self: Box<Self>) -> Option<Aligned>;
}

/// The root's copy, in the caller's element type: the result grows in
/// it, and it goes to the reduction's future ([`RootCopy::result`])
/// without a copy.
pub(crate) struct RootCopy<T> {
    pub(crate) data: Vec<T>,
    /// Where the future finds it ([`Buffer::release`]).
    pub(crate) result: Arc<Mutex<Option<Vec<T>>>>,
}

impl<T: bytemuck::Pod + Send> Buffer for RootCopy<T> {
    fn bytes(&self) -> &[u8] {
        bytemuck::cast_slice(&self.data)
    }

    fn bytes_mut(&mut self) -> &mut [u8] {
        bytemuck::cast_slice_mut(&mut self.data)
    }

    fn release(self: Box<Self>) -> Option<Aligned> {
        *self.result.lock().unwrap_or_else(|p| p.into_inner()) = Some(self.data);
        None
    }
}

impl Buffer for Aligned {
    fn bytes(&self) -> &[u8] {
        &bytemuck::cast_slice(&self.words)[..self.len]
    }

    fn bytes_mut(&mut self) -> &mut [u8] {
        &mut bytemuck::cast_slice_mut(&mut self.words)[..self.len]
    }

    fn release(self: Box<Self>) -> Option<Aligned> {
        Some(*self)
    }
}

/// Bytes aligned for any element type of alignment 16 or less.
pub(crate) struct Aligned {
    words: Vec<u128>,
    len: usize,
}

impl Aligned {
    pub(crate) fn zeroed(len: usize) -> Aligned {
        let mut words = Vec::new();
        pages::resize(&mut words, len.div_ceil(16), 0);
        Aligned { words, len }
    }
}

/// `bytes` as elements.
pub(crate) fn elements<T: bytemuck::Pod>(bytes: &[u8]) -> Vec<T> {
    let mut out = vec![T::zeroed(); bytes.len().checked_div(size_of::<T>()).unwrap_or(0)];
    bytemuck::cast_slice_mut(&mut out).copy_from_slice(bytes);
    out
}
