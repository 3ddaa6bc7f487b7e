//! [`AlignedBuf`]: a heap buffer aligned to [`ALIGN`] bytes, as O_DIRECT requires.

use std::alloc::{alloc, alloc_zeroed, dealloc, Layout};
use std::ops::{Deref, DerefMut};
use std::ptr::NonNull;

/// Alignment of I/O buffers and of every offset and length the store issues (4 KiB covers both
/// 512 B and 4 KiB logical sector devices).
pub const ALIGN: usize = 4096;

/// A zero-initialised byte buffer whose start is aligned to [`ALIGN`].
pub struct AlignedBuf {
    ptr: NonNull<u8>,
    len: usize,
    cap: usize,
}

// SAFETY: AlignedBuf owns its allocation exclusively, like Vec<u8>.
unsafe impl Send for AlignedBuf {}
// SAFETY: shared access only hands out &[u8].
unsafe impl Sync for AlignedBuf {}

/// Buffers of at least this many bytes are backed by transparent huge pages where the kernel
/// allows it (see [`AlignedBuf::zeroed`]).
pub const HUGE_FROM: usize = 1 << 20;
/// Size and alignment of a huge page on x86-64 and most arm64 kernels.
const HUGE_PAGE: usize = 2 << 20;

/// The allocation layout of a buffer of capacity `cap`.
fn layout_for(cap: usize) -> Layout {
    let align = if cap >= HUGE_FROM { HUGE_PAGE } else { ALIGN };
    Layout::from_size_align(cap, align).expect("buffer layout")
}

impl AlignedBuf {
    /// A zeroed buffer of `len` bytes (capacity rounded up to a multiple of [`ALIGN`]).
    ///
    /// A buffer of `HUGE_FROM` (1 MiB) or more is aligned to, and sized in, 2 MiB and asked to be
    /// backed by huge pages (`MADV_HUGEPAGE`) before it is first touched. Why: O_DIRECT hands the
    /// device one segment per physically contiguous run of the buffer, and a request holds a
    /// limited number of segments (254 on a virtio disk), so a 1 MiB write from 4 KiB pages was
    /// split into two requests; from a huge page it is one. The store's I/O buffers are pooled
    /// and reused, so the larger footprint and the zeroing are paid once.
    pub fn zeroed(len: usize) -> Self {
        let (ptr, cap) = allocate(len, true);
        AlignedBuf { ptr, len, cap }
    }

    /// An empty buffer with room for at least `cap` bytes, not zeroed (bytes past the length are
    /// never exposed), to be filled by [`AlignedBuf::extend_from_slice`], which writes each byte
    /// once: a zeroed buffer would cost a pass over memory first.
    pub fn with_capacity(cap: usize) -> Self {
        let (ptr, cap) = allocate(cap, false);
        AlignedBuf { ptr, len: 0, cap }
    }

    /// Appends `src`, moving to a larger allocation (at least twice the capacity) when full.
    pub fn extend_from_slice(&mut self, src: &[u8]) {
        let len = self.len + src.len();
        if len > self.cap {
            let mut bigger = AlignedBuf::with_capacity(len.max(2 * self.cap));
            bigger.extend_from_slice(self);
            *self = bigger;
        }
        // SAFETY: [self.len, len) is within the allocation, which `src` (borrowed separately)
        // cannot overlap.
        unsafe { std::ptr::copy_nonoverlapping(src.as_ptr(), self.ptr.as_ptr().add(self.len), src.len()) };
        self.len = len;
    }

    /// Length in bytes.
    pub fn len(&self) -> usize {
        self.len
    }

    /// Bytes allocated (at least the length; huge-page buffers round up to 2 MiB).
    pub fn capacity(&self) -> usize {
        self.cap
    }

    /// True when the buffer holds no bytes.
    pub fn is_empty(&self) -> bool {
        self.len == 0
    }

    /// Changes the length, zeroing bytes that become visible (moving to a larger allocation when
    /// the capacity is exceeded).
    pub fn resize(&mut self, len: usize) {
        if len > self.cap {
            let mut bigger = AlignedBuf::zeroed(len);
            bigger[..self.len].copy_from_slice(self);
            *self = bigger;
            return;
        }
        if len > self.len {
            // SAFETY: [self.len, len) is within the allocation.
            unsafe { std::ptr::write_bytes(self.ptr.as_ptr().add(self.len), 0, len - self.len) };
        }
        self.len = len;
    }
}

/// Allocates a buffer of at least `len` bytes (see [`AlignedBuf::zeroed`] for the rounding and
/// huge pages), zeroed if asked; returns it and its capacity.
fn allocate(len: usize, zero: bool) -> (NonNull<u8>, usize) {
    let mut cap = len.div_ceil(ALIGN).max(1) * ALIGN;
    if cap >= HUGE_FROM {
        cap = cap.div_ceil(HUGE_PAGE) * HUGE_PAGE;
    }
    let layout = layout_for(cap);
    let raw = if cap >= HUGE_FROM {
        // SAFETY: layout has non-zero size.
        let raw = unsafe { alloc(layout) };
        if !raw.is_null() {
            // SAFETY: [raw, raw + cap) is the allocation just made. Advice only: a kernel
            // without transparent huge pages refuses it, and the buffer works as it is.
            unsafe {
                let _ = libc::madvise(raw.cast(), cap, libc::MADV_HUGEPAGE);
                if zero {
                    std::ptr::write_bytes(raw, 0, cap);
                }
            }
        }
        raw
    } else if zero {
        // SAFETY: layout has non-zero size.
        unsafe { alloc_zeroed(layout) }
    } else {
        // SAFETY: layout has non-zero size.
        unsafe { alloc(layout) }
    };
    (NonNull::new(raw).unwrap_or_else(|| std::alloc::handle_alloc_error(layout)), cap)
}

impl Deref for AlignedBuf {
    type Target = [u8];
    fn deref(&self) -> &[u8] {
        // SAFETY: ptr is valid for cap >= len initialised bytes.
        unsafe { std::slice::from_raw_parts(self.ptr.as_ptr(), self.len) }
    }
}

impl DerefMut for AlignedBuf {
    fn deref_mut(&mut self) -> &mut [u8] {
        // SAFETY: as above, and we hold &mut self.
        unsafe { std::slice::from_raw_parts_mut(self.ptr.as_ptr(), self.len) }
    }
}

impl Drop for AlignedBuf {
    fn drop(&mut self) {
        let layout = layout_for(self.cap);
        // SAFETY: allocated in `zeroed` with this layout.
        unsafe { dealloc(self.ptr.as_ptr(), layout) };
    }
}

impl Clone for AlignedBuf {
    fn clone(&self) -> Self {
        let mut b = AlignedBuf::zeroed(self.len);
        b.copy_from_slice(self);
        b
    }
}

impl std::fmt::Debug for AlignedBuf {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "AlignedBuf({} bytes)", self.len)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn aligned_and_zeroed() {
        for len in [0, 1, 4095, 4096, 10_000, HUGE_FROM - 1, HUGE_FROM, (3 << 20) + 5] {
            let mut b = AlignedBuf::zeroed(len);
            assert_eq!(b.as_ptr() as usize % ALIGN, 0);
            assert_eq!(b.len(), len);
            assert!(b.capacity() >= len);
            assert!(b.iter().all(|&x| x == 0));
            if len >= HUGE_FROM {
                assert_eq!(b.as_ptr() as usize % HUGE_PAGE, 0, "huge-page buffers start on a huge page");
                assert_eq!(b.capacity() % HUGE_PAGE, 0);
            }
            b.fill(0xAB);
            let c = b.clone();
            assert!(c.iter().all(|&x| x == 0xAB));
        }
    }

    #[test]
    fn resize_keeps_prefix_and_zeroes_growth() {
        let mut b = AlignedBuf::zeroed(10);
        b.fill(7);
        b.resize(5);
        b.resize(9000);
        assert!(b[..5].iter().all(|&x| x == 7));
        assert!(b[5..].iter().all(|&x| x == 0));
        assert_eq!(b.as_ptr() as usize % ALIGN, 0);
    }

    #[test]
    fn extend_from_slice_appends_across_growth() {
        let mut b = AlignedBuf::with_capacity(100);
        assert!(b.is_empty() && b.capacity() >= 100);
        let src: Vec<u8> = (0..4 << 20).map(|i| (i * 13) as u8).collect();
        let mut at = 0;
        for n in [1, 99, 4000, 5000, 1 << 20, 2 << 20] {
            b.extend_from_slice(&src[at..at + n]);
            at += n;
            assert_eq!(b.len(), at);
            assert_eq!(&b[..], &src[..at], "after {at} bytes");
            assert_eq!(b.as_ptr() as usize % ALIGN, 0);
        }
        // Growth past a truncation zeroes what becomes visible, as resize always did.
        b.resize(10);
        b.resize(20);
        assert_eq!(&b[..10], &src[..10]);
        assert!(b[10..].iter().all(|&x| x == 0));
    }
}
