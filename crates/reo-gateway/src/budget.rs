//! [`MemoryBudget`]: the bytes of request bodies held in memory at once. A PUT's or a part's
//! body is collected whole before it is verified and stored, and a completion assembles its
//! object: without a bound, a few signed clients sending large bodies at once could exhaust the
//! server's memory. Each collection reserves its bytes as they arrive; past the budget the
//! request is refused with `503 SlowDown` (S3's "reduce your request rate"), which SDKs retry
//! with backoff, and what it held is released at once. A [`Reservation`] releases its bytes
//! when dropped, after the object is stored.

use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;

use s3s::{s3_error, S3Result};

/// See the module doc.
#[derive(Debug)]
pub struct MemoryBudget {
    limit: u64,
    used: AtomicU64,
    refused: AtomicU64,
}

/// Bytes of a [`MemoryBudget`] held until dropped.
#[derive(Debug)]
pub struct Reservation {
    budget: Arc<MemoryBudget>,
    bytes: u64,
}

impl MemoryBudget {
    /// A budget of `limit` bytes, none held.
    pub fn new(limit: u64) -> Arc<MemoryBudget> {
        Arc::new(MemoryBudget { limit, used: AtomicU64::new(0), refused: AtomicU64::new(0) })
    }

    /// An empty reservation, grown by [`Reservation::grow`].
    pub fn reserve(self: &Arc<Self>) -> Reservation {
        Reservation { budget: self.clone(), bytes: 0 }
    }

    /// Bytes held now.
    pub fn used(&self) -> u64 {
        self.used.load(Ordering::Relaxed)
    }

    /// Requests refused for want of budget.
    pub fn refused(&self) -> u64 {
        self.refused.load(Ordering::Relaxed)
    }

    /// The most bytes held at once.
    pub fn limit(&self) -> u64 {
        self.limit
    }
}

impl Reservation {
    /// Reserves `n` more bytes, or refuses (the reservation keeps what it had; dropping it
    /// releases that).
    pub fn grow(&mut self, n: u64) -> S3Result<()> {
        let b = &self.budget;
        let mut cur = b.used.load(Ordering::Relaxed);
        loop {
            let next = cur.saturating_add(n);
            if next > b.limit {
                b.refused.fetch_add(1, Ordering::Relaxed);
                return Err(s3_error!(
                    SlowDown,
                    "this gateway holds {} MiB of request bodies already (its memory budget is {} MiB); retry later",
                    cur >> 20,
                    b.limit >> 20
                ));
            }
            match b.used.compare_exchange_weak(cur, next, Ordering::AcqRel, Ordering::Relaxed) {
                Ok(_) => {
                    self.bytes += n;
                    return Ok(());
                }
                Err(now) => cur = now,
            }
        }
    }
}

impl Drop for Reservation {
    fn drop(&mut self) {
        self.budget.used.fetch_sub(self.bytes, Ordering::AcqRel);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn reservations_are_bounded_and_released() {
        let b = MemoryBudget::new(100);
        let mut r1 = b.reserve();
        r1.grow(60).unwrap();
        let mut r2 = b.reserve();
        r2.grow(30).unwrap();
        assert_eq!(*r2.grow(20).unwrap_err().code(), s3s::S3ErrorCode::SlowDown);
        assert_eq!((b.used(), b.refused()), (90, 1));
        drop(r2);
        assert_eq!(b.used(), 60);
        r1.grow(40).unwrap();
        drop(r1);
        assert_eq!(b.used(), 0);
    }
}
