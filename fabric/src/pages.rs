//! Faulting in fresh memory at once, before a large copy fills it.
//!
//! Memory a program has just allocated (a zeroed `Vec` of megabytes is a
//! fresh anonymous mapping) is faulted in page by page as a copy first
//! writes it: one exception per 4 KiB page. `madvise(MADV_POPULATE_WRITE)`
//! (Linux 5.14) faults the whole range in one call, which makes a large
//! copy into fresh memory markedly faster; into memory already faulted in
//! the call only costs. So it is for memory known to be fresh (figures in
//! docs/measurements.md, "Fresh columns, paced rounds"). A range of
//! several huge pages is first marked for them (`MADV_HUGEPAGE`: the
//! kernel's transparent huge pages are often on request only): one fault
//! per 2 MiB rather than per 4 KiB, faster again for large ranges (figures:
//! docs/measurements.md, "Huge pages for fresh memory").

/// Ranges from this length on are marked for huge pages.
const HUGE: usize = 2 << 20;

/// The kernel's `MADV_POPULATE_WRITE` (not in every libc crate release).
const MADV_POPULATE_WRITE: libc::c_int = 23;

/// Faults in the pages under `buf` for writing, at once. Its contents do
/// not change. Where the kernel lacks the call (before Linux 5.14) or
/// refuses, nothing happens: the pages fault in on first write as usual.
pub fn populate(buf: &mut [u8]) {
    populate_range(buf.as_mut_ptr() as usize, buf.len());
}

/// Resizes `v` to `len` elements, as [`Vec::resize`] with `value`, but
/// faulting in the memory it grows into at once ([`populate`]) and
/// giving back what it no longer needs when it shrinks. A large `Vec`
/// grows and shrinks in place or by remapping its pages (glibc's
/// `realloc` of a mapped chunk), without copying what it holds.
pub fn resize<T: Copy>(v: &mut Vec<T>, len: usize, value: T) {
    if len > v.len() {
        v.reserve_exact(len - v.len());
        let spare = v.spare_capacity_mut();
        populate_range(spare.as_mut_ptr() as usize, size_of_val(spare));
    }
    v.resize(len, value);
    v.shrink_to_fit();
}

/// A copy of `data` in memory faulted in at once ([`populate`]) rather
/// than page by page as the copy goes.
pub fn to_vec<T: Copy>(data: &[T]) -> Vec<T> {
    let mut v = Vec::with_capacity(data.len());
    let spare = v.spare_capacity_mut();
    populate_range(spare.as_mut_ptr() as usize, size_of_val(spare));
    v.extend_from_slice(data);
    v
}

/// [`populate`] on the `len` bytes from address `start`, which this
/// process holds writable (initialized or not).
fn populate_range(start: usize, len: usize) {
    if len == 0 {
        return;
    }
    let page = crate::mapping::PAGE;
    let first = start - start % page;
    let end = start + len;
    prefer_huge(first, end - first);
    // SAFETY: madvise on whole pages that hold bytes of the range, which
    // this process maps writable (its callers hold `&mut` to them).
    // MADV_POPULATE_WRITE faults pages in as a write would, without
    // changing any byte, so the bytes of other objects sharing the first
    // or last page stay as they are. The result is ignored on purpose: a
    // failure leaves the pages to fault in on use.
    unsafe {
        libc::madvise(first as *mut libc::c_void, end - first, MADV_POPULATE_WRITE);
    }
}

/// Asks for huge pages under the `len` bytes of whole pages from `start`
/// (this process's own mapping) when they span [`HUGE`] or more.
pub(crate) fn prefer_huge(start: usize, len: usize) {
    if len < HUGE {
        return;
    }
    // SAFETY: advice on pages this process maps (the callers' own memory);
    // MADV_HUGEPAGE changes how they are backed, not what they hold.
    // Ignored when refused: they stay in small pages.
    unsafe {
        libc::madvise(start as *mut libc::c_void, len, libc::MADV_HUGEPAGE);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn populating_keeps_every_byte() {
        // Bytes outside the slice on its first page, and inside it.
        let mut fresh = vec![0u8; 3 << 20];
        fresh[1] = 9;
        fresh[5] = 7;
        populate(&mut fresh[3..]);
        let expected = |i: usize| match i {
            1 => 9,
            5 => 7,
            _ => 0,
        };
        assert!(fresh.iter().enumerate().all(|(i, &b)| b == expected(i)));
        populate(&mut []);
    }

    #[test]
    fn resizing_keeps_what_stays_and_fills_what_grows() {
        let mut v: Vec<u32> = (0..1000).collect();
        resize(&mut v, 300_000, 7);
        assert_eq!(v.len(), 300_000);
        assert!((0..1000).all(|i| v[i] == i as u32));
        assert!(v[1000..].iter().all(|&x| x == 7));
        resize(&mut v, 10, 0);
        assert_eq!(v, (0..10).collect::<Vec<u32>>());
        assert_eq!(v.capacity(), 10);
        resize(&mut v, 0, 0);
        assert!(v.is_empty());
    }

    #[test]
    fn a_copy_is_exact() {
        let data: Vec<u64> = (0..400_000).collect();
        assert_eq!(to_vec(&data), data);
        assert!(to_vec::<u8>(&[]).is_empty());
    }
}
