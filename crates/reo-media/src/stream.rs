//! [`copy_streaming`]: copying bytes into an I/O buffer that the CPU will not read again.
//!
//! A put copies every byte of a blob into the column buffers that go to the devices, and the
//! devices read those buffers by DMA. An ordinary copy first reads each destination cache line
//! from memory (to own it), then writes it back when it is evicted: three memory transfers per
//! byte besides the device's own read, and the copy evicts the cache lines the layout is still
//! working on. Streaming (non-temporal) stores write whole lines to memory without reading them.
//! It matters because memory bandwidth is what the store shares with the device on a virtual
//! machine: a memory-bound copy loop on one core measurably lowered the raw write bandwidth of
//! the same disk in `reo bench store`, while a loop that only computed did not (see
//! docs/BENCHMARKS.md).
//!
//! The destination is not in the cache afterwards, so callers compute what they need from the
//! bytes (checksums, parity) on the source, while it is in the cache.

/// Copies `src` into `dst` (same length) with streaming stores where the CPU has them (x86-64:
/// SSE2, always present), else an ordinary copy. The stores are fenced before returning, so the
/// bytes are visible to whichever thread or device reads `dst` next.
pub fn copy_streaming(dst: &mut [u8], src: &[u8]) {
    assert_eq!(dst.len(), src.len(), "copy_streaming: lengths differ");
    #[cfg(target_arch = "x86_64")]
    {
        // Streaming pays only for whole cache lines; a short copy goes the ordinary way.
        if dst.len() >= 4096 {
            // SAFETY: both slices are valid for their (equal) lengths; SSE2 is part of the x86-64
            // baseline.
            unsafe { copy_streaming_sse2(dst, src) };
            return;
        }
    }
    dst.copy_from_slice(src);
}

/// The x86-64 body of [`copy_streaming`]: an ordinary copy up to the first 16-byte boundary of
/// `dst`, streaming 64-byte blocks, an ordinary copy of the tail, then `sfence`.
#[cfg(target_arch = "x86_64")]
#[target_feature(enable = "sse2")]
unsafe fn copy_streaming_sse2(dst: &mut [u8], src: &[u8]) {
    use std::arch::x86_64::{__m128i, _mm_loadu_si128, _mm_sfence, _mm_stream_si128};
    let head = dst.as_ptr().align_offset(16).min(dst.len());
    dst[..head].copy_from_slice(&src[..head]);
    let blocks = (dst.len() - head) / 64;
    let (d, s) = (dst[head..].as_mut_ptr(), src[head..].as_ptr());
    for b in 0..blocks {
        // SAFETY: block b lies within [head, head + 64 * blocks) ⊆ both slices; `d + 64b` is
        // 16-byte aligned (head aligned it), loads are unaligned.
        unsafe {
            let (d, s) = (d.add(64 * b) as *mut __m128i, s.add(64 * b) as *const __m128i);
            let (x0, x1, x2, x3) =
                (_mm_loadu_si128(s), _mm_loadu_si128(s.add(1)), _mm_loadu_si128(s.add(2)), _mm_loadu_si128(s.add(3)));
            _mm_stream_si128(d, x0);
            _mm_stream_si128(d.add(1), x1);
            _mm_stream_si128(d.add(2), x2);
            _mm_stream_si128(d.add(3), x3);
        }
    }
    let done = head + 64 * blocks;
    dst[done..].copy_from_slice(&src[done..]);
    _mm_sfence();
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn copies_every_length_and_alignment_exactly() {
        let src: Vec<u8> = (0..20_000u32).map(|i| (i * 31 + 7) as u8).collect();
        let mut dst = vec![0u8; 20_100];
        for (len, d_off, s_off) in [(0, 0, 0), (5, 1, 3), (4095, 0, 0), (4096, 0, 1), (4097, 3, 0), (12_345, 7, 11)] {
            dst.fill(0xEE);
            copy_streaming(&mut dst[d_off..d_off + len], &src[s_off..s_off + len]);
            assert_eq!(&dst[d_off..d_off + len], &src[s_off..s_off + len], "len {len} at {d_off}/{s_off}");
            assert!(dst[..d_off].iter().all(|&b| b == 0xEE), "wrote before the destination");
            assert!(dst[d_off + len..].iter().all(|&b| b == 0xEE), "wrote past the destination");
        }
    }
}
