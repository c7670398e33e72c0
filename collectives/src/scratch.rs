//! A call's scratch memory ([`Scratch`]) and the buffers a Comm keeps of
//! finished calls for the next ones ([`Spare`]): fresh memory costs a
//! page fault per page (a 2 MiB buffer, about as long as moving it).
//!
//! Scratch is 16-byte words viewed as elements of the call's type, so one
//! pool serves calls of every element type without knowing it (no type
//! erasure): a buffer a call of bytes left serves the next call of `f64`.
//! Elements aligned to more than 16 bytes (or of no size) get no scratch:
//! the call is refused ([`Error::BadCall`]).

use std::cell::RefCell;

use crate::Error;

/// The most an element may be aligned to: a word's alignment.
const ALIGN: usize = align_of::<u128>();

/// Scratch memory: whole words, of which the first `bytes` are in use.
#[derive(Default)]
pub(crate) struct Scratch {
    words: Vec<u128>,
    bytes: usize,
}

impl Scratch {
    /// Its bytes in use as elements of `T` (checked when it was made for
    /// `T`: a whole number of them, aligned).
    pub(crate) fn elements<T: bytemuck::Pod>(&self) -> &[T] {
        match self.bytes {
            0 => &[],
            n => bytemuck::cast_slice(&bytemuck::cast_slice::<u128, u8>(&self.words)[..n]),
        }
    }

    /// As [`Scratch::elements`], to write.
    pub(crate) fn elements_mut<T: bytemuck::Pod>(&mut self) -> &mut [T] {
        match self.bytes {
            0 => &mut [],
            n => bytemuck::cast_slice_mut(
                &mut bytemuck::cast_slice_mut::<u128, u8>(&mut self.words)[..n],
            ),
        }
    }

    /// Its capacity in bytes.
    fn capacity(&self) -> usize {
        self.words.capacity() * ALIGN
    }
}

/// Buffers of finished calls, kept for the next ones.
#[derive(Default)]
pub(crate) struct Spare {
    buffers: RefCell<Vec<Scratch>>,
}

impl Spare {
    /// Buffers kept at most.
    pub(crate) const KEEP: usize = 8;

    /// `len` zeroed elements of `T`, in the largest buffer kept (else a
    /// new one).
    ///
    /// # Errors
    /// [`Error::BadCall`] when `len` elements of `T` are wanted and `T` is
    /// aligned to more than 16 bytes or has no size.
    pub(crate) fn zeroed<T: bytemuck::Pod>(&self, len: usize) -> Result<Scratch, Error> {
        if len == 0 {
            return Ok(Scratch::default());
        }
        if align_of::<T>() > ALIGN || size_of::<T>() == 0 {
            return Err(Error::BadCall(format!(
                "elements of {} bytes aligned to {} (scratch holds sizes from 1, aligned to at most {ALIGN})",
                size_of::<T>(),
                align_of::<T>()
            )));
        }
        let bytes = len
            .checked_mul(size_of::<T>())
            .ok_or_else(|| Error::BadCall(format!("{len} elements of scratch")))?;
        let mut buffers = self.buffers.borrow_mut();
        let largest = (buffers.iter().enumerate())
            .max_by_key(|(_, b)| b.capacity())
            .map(|(i, _)| i);
        let mut scratch = largest.map_or_else(Scratch::default, |i| buffers.swap_remove(i));
        scratch.words.clear();
        scratch.words.resize(bytes.div_ceil(ALIGN), 0);
        scratch.bytes = bytes;
        Ok(scratch)
    }

    /// Keeps `scratch` for a later call (unless enough are kept).
    pub(crate) fn give(&self, scratch: Scratch) {
        let mut buffers = self.buffers.borrow_mut();
        if scratch.words.capacity() > 0 && buffers.len() < Self::KEEP {
            buffers.push(scratch);
        }
    }

    /// Keeps the buffers of `returned` (nonblocking runs finished with
    /// them, maybe on other threads), as many as there is room for.
    pub(crate) fn reclaim(&self, returned: impl Iterator<Item = Scratch>) {
        let mut buffers = self.buffers.borrow_mut();
        let room = Self::KEEP.saturating_sub(buffers.len());
        buffers.extend(returned.take(room));
    }
}

/// Whether `scratch` is worth handing back across threads: a page or
/// more (a smaller one costs less to allocate afresh than to hand back
/// under a lock).
pub(crate) fn worth_returning(scratch: &Scratch) -> bool {
    scratch.capacity() >= 4096
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn one_buffer_serves_calls_of_every_element_type() {
        let spare = Spare::default();
        let mut s = spare.zeroed::<u8>(4096).unwrap();
        s.elements_mut::<u8>().fill(7);
        let words = s.words.as_ptr();
        spare.give(s);
        let mut s = spare.zeroed::<f64>(100).unwrap();
        assert_eq!(s.words.as_ptr(), words, "the kept buffer");
        assert_eq!(s.elements::<f64>(), &[0.0; 100], "zeroed");
        s.elements_mut::<f64>()[99] = 1.5;
        assert_eq!(s.elements::<f64>().len(), 100);
        let odd = spare.zeroed::<[u8; 3]>(5).unwrap();
        assert_eq!(odd.elements::<[u8; 3]>().len(), 5);
        assert!(spare.zeroed::<u64>(0).unwrap().elements::<u64>().is_empty());
    }

    #[test]
    fn elements_scratch_cannot_hold_are_refused() {
        let spare = Spare::default();
        #[cfg(target_arch = "x86_64")]
        {
            use std::arch::x86_64::__m256;
            assert!(matches!(spare.zeroed::<__m256>(1), Err(Error::BadCall(_))));
            assert!(spare.zeroed::<__m256>(0).is_ok());
        }
        assert!(matches!(spare.zeroed::<()>(1), Err(Error::BadCall(_))));
        assert!(matches!(
            spare.zeroed::<u64>(usize::MAX),
            Err(Error::BadCall(_))
        ));
    }

    #[test]
    fn it_keeps_a_bounded_number_the_largest_first() {
        let spare = Spare::default();
        let made: Vec<Scratch> = (1..=10)
            .map(|k| spare.zeroed::<u8>(k * 64).unwrap())
            .collect();
        spare.reclaim(made.into_iter());
        assert_eq!(spare.buffers.borrow().len(), Spare::KEEP);
        let s = spare.zeroed::<u8>(1).unwrap();
        assert_eq!(s.capacity(), 8 * 64, "the largest kept");
        assert!(!worth_returning(&s));
    }
}
