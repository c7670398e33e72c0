//! Copies whose stores bypass the cache (non-temporal stores), for large
//! copies into memory that is not read again soon: a plain store first
//! reads the line it writes (a read for ownership), a non-temporal one
//! does not, and it leaves the cache to the data that is read. A large
//! allgather whose ranks copy their own blocks this way, between
//! cross-memory reads of their peers', ran faster than with `memcpy`
//! (figures: docs/measurements.md, "Copies that bypass the cache").

/// Copies the first `dst.len().min(src.len())` bytes of `src` into `dst`
/// with non-temporal stores where the CPU has them (x86-64: SSE2's
/// `movntdq`, every such CPU), else with a plain copy, and orders them
/// before this thread's later stores (`sfence`): a flag stored after the
/// copy is seen after the data.
pub fn copy(dst: &mut [u8], src: &[u8]) {
    let n = dst.len().min(src.len());
    let (dst, src) = (&mut dst[..n], &src[..n]);
    #[cfg(target_arch = "x86_64")]
    {
        use std::arch::x86_64::{__m128i, _mm_loadu_si128, _mm_sfence, _mm_stream_si128};
        // Non-temporal stores of 16 bytes must be 16-byte aligned: the
        // bytes before the first such boundary, and those after the last
        // whole line, go plain.
        let head = ((16 - dst.as_ptr() as usize % 16) % 16).min(n);
        let body = (n - head) / 64 * 64;
        dst[..head].copy_from_slice(&src[..head]);
        // SAFETY: SSE2 is part of every x86-64 CPU. Every access below is
        // within `dst[head..head + body]` and `src[head..head + body]`
        // (`head + body <= n`, both slices `n` long, `i + 48 + 16 <= body`),
        // which do not overlap (`dst` is a unique borrow); the stores' target
        // `dst + head + i` is 16-byte aligned (`head` aligns `dst`, `i` is a
        // multiple of 64); the loads are unaligned loads.
        unsafe {
            let (d, s) = (dst.as_mut_ptr().add(head), src.as_ptr().add(head));
            for i in (0..body).step_by(64) {
                for k in (0..64).step_by(16) {
                    let v = _mm_loadu_si128(s.add(i + k).cast::<__m128i>());
                    _mm_stream_si128(d.add(i + k).cast::<__m128i>(), v);
                }
            }
            _mm_sfence();
        }
        dst[head + body..].copy_from_slice(&src[head + body..]);
    }
    #[cfg(not(target_arch = "x86_64"))]
    dst.copy_from_slice(src);
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn copies_every_byte_at_every_alignment_and_length() {
        let src: Vec<u8> = (0..1000u32).map(|i| (i * 7 + 3) as u8).collect();
        for offset in 0..17 {
            for len in [0, 1, 15, 16, 17, 63, 64, 65, 200, 983] {
                let mut dst = vec![0u8; 1000];
                let (from, to) = (&src[offset..offset + len], &mut dst[offset..]);
                copy(to, from);
                assert_eq!(
                    &dst[offset..offset + len],
                    from,
                    "offset {offset} len {len}"
                );
                assert!(dst[..offset].iter().all(|&b| b == 0));
                assert!(dst[offset + len..].iter().all(|&b| b == 0));
            }
        }
    }

    #[test]
    fn copies_the_shorter_length() {
        let mut dst = [0u8; 4];
        copy(&mut dst, &[1, 2, 3, 4, 5, 6]);
        assert_eq!(dst, [1, 2, 3, 4]);
        let mut dst = [9u8; 4];
        copy(&mut dst, &[1, 2]);
        assert_eq!(dst, [1, 2, 9, 9]);
    }
}
