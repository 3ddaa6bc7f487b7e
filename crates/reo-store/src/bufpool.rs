//! [`BufPool`]: aligned I/O buffers reused across puts and reads.
//!
//! A put lays each device's column out in an aligned buffer and a read fetches its chunk runs
//! into them. Allocating those per operation (megabytes per blob, zero-filled, often freshly
//! mapped pages that fault in and are unmapped again on free) costs CPU on the order of the
//! device I/O itself; measured, it cut put bandwidth sharply. The pool keeps the buffers of
//! finished operations for the next ones, up to a byte budget.
//!
//! The pool is process-wide ([`BufPool::shared`]): stores opened one after another (a restart, a
//! benchmark formatting a fresh store per round, tests) reuse warm buffers instead of each
//! starting cold, where every first put faults in megabytes of fresh pages.
//!
//! A buffer from [`BufPool::take`] may be longer than asked and holds stale bytes of an earlier
//! operation: callers use a prefix and must write every byte of it that reaches a device or a
//! caller (the write path zeroes padding and unused columns explicitly).

use parking_lot::Mutex;
use reo_media::AlignedBuf;
use std::sync::OnceLock;

/// Idle bytes the process-wide pool keeps.
const SHARED_BYTES: usize = 128 << 20;

/// Pooled buffers and their total length.
#[derive(Default)]
struct Free {
    bufs: Vec<AlignedBuf>,
    bytes: usize,
}

/// A pool of reusable aligned buffers.
pub(crate) struct BufPool {
    free: Mutex<Free>,
    /// Most bytes kept; a single buffer larger than a quarter of it is never kept.
    max_bytes: usize,
}

/// Pooled buffers up to this size serve any smaller request.
const SMALL: usize = 64 << 10;

/// Whether pooled buffer `b` may serve a request of `len` bytes: long enough, and holding at most
/// twice `len` (or [`SMALL`]). Why the bound: a read's buffers stay with the caller for as long
/// as it holds the slices ([`crate::ReadBytes`]), and a small read handed a 2 MiB buffer would
/// keep all of it from the pool for a few KiB; a new buffer of the right size costs a page fault
/// per page once, then is pooled like the others. Twice, not more: buffers from 1 MiB up come in
/// 2 MiB steps (a 1 MiB run takes a 2 MiB buffer), and a read that uses a quarter of a buffer or
/// less copies its bytes out (`read_bytes.rs::compact`) — a run read in full must never do that.
fn fits(b: &AlignedBuf, len: usize) -> bool {
    b.len() >= len && b.capacity() <= len.saturating_mul(2).max(SMALL)
}

impl BufPool {
    /// The process-wide pool (at most 128 MiB idle; buffers over 32 MiB are never kept).
    pub fn shared() -> &'static BufPool {
        static POOL: OnceLock<BufPool> = OnceLock::new();
        POOL.get_or_init(|| BufPool::new(SHARED_BYTES))
    }

    /// A pool keeping at most `max_bytes` of idle buffers.
    pub fn new(max_bytes: usize) -> Self {
        BufPool { free: Mutex::new(Free::default()), max_bytes }
    }

    /// A buffer of at least `len` bytes with arbitrary contents: the smallest pooled one that
    /// fits and is not oversized (see [`fits`]), the most recently returned of those (its pages
    /// are the likeliest to be in the TLB and the cache), else a new zeroed one.
    pub fn take(&self, len: usize) -> AlignedBuf {
        if len == 0 {
            return AlignedBuf::zeroed(0);
        }
        let mut f = self.free.lock();
        let best =
            f.bufs.iter().enumerate().rev().filter(|(_, b)| fits(b, len)).min_by_key(|(_, b)| b.len()).map(|(i, _)| i);
        if let Some(i) = best {
            // `remove`, not `swap_remove`: the order of `bufs` is the order of return, which
            // both this choice and the eviction of the oldest in `give` rely on.
            let b = f.bufs.remove(i);
            f.bytes -= b.capacity();
            return b;
        }
        drop(f);
        AlignedBuf::zeroed(len)
    }

    /// Returns a buffer to the pool, evicting the oldest ones if over budget.
    pub fn give(&self, buf: AlignedBuf) {
        // The budget counts what is allocated: a huge-page buffer holds up to 2 MiB more than its
        // length.
        if buf.is_empty() || buf.capacity() > self.max_bytes / 4 {
            return;
        }
        let mut f = self.free.lock();
        while f.bytes + buf.capacity() > self.max_bytes && !f.bufs.is_empty() {
            let old = f.bufs.remove(0);
            f.bytes -= old.capacity();
        }
        f.bytes += buf.capacity();
        f.bufs.push(buf);
    }

    /// Bytes held idle (for tests).
    #[cfg(test)]
    pub fn idle_bytes(&self) -> usize {
        self.free.lock().bytes
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn reuses_the_smallest_fit_and_respects_the_budget() {
        let p = BufPool::new(1 << 20);
        let a = p.take(100_000);
        let ptr = a.as_ptr();
        assert!(a.len() >= 100_000 && (a.as_ptr() as usize).is_multiple_of(reo_media::ALIGN));
        p.give(a);
        p.give(AlignedBuf::zeroed(200_000));
        let b = p.take(60_000);
        assert_eq!(b.as_ptr(), ptr, "smallest fitting buffer reused");
        let c = p.take(150_000);
        assert_eq!(c.len(), 200_000);
        assert_eq!(p.idle_bytes(), 0);
        // An oversized pooled buffer is not handed to a small request.
        p.give(AlignedBuf::zeroed(200_000));
        let d = p.take(20_000);
        assert_eq!((d.len(), p.idle_bytes() >= 200_000), (20_000, true), "a new buffer, the big one kept");
        assert_eq!(p.take(120_000).len(), 200_000, "within twice the request");
        p.give(AlignedBuf::zeroed(300_000)); // more than a quarter of the budget: dropped
        assert_eq!(p.idle_bytes(), 0);
        for _ in 0..8 {
            p.give(AlignedBuf::zeroed(200_000));
        }
        assert!(p.idle_bytes() <= 1 << 20);
        assert_eq!(p.take(0).len(), 0);
    }
}
