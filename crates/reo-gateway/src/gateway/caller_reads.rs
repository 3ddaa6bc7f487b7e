//! [`CallerReads`]: how many small flash reads the runtime's worker threads make themselves at
//! once (the hot path's flash hits, `gateway/hot.rs`).
//!
//! Why a bound: a read on the worker that received the request saves the hand-offs to the
//! blocking pool and to the device's read lane (about five thread wake-ups per hit), but the
//! worker blocks in the device for the read's time, and a device that stalls in service (a
//! drive retrying a bad sector, a hung path) holds it for as long. At most one fewer than the
//! runtime's workers read at once, so at least one worker always answers the other requests
//! (memory hits, HEADs, misses, the metrics and admin pages) and hands the rest of the reads to
//! the blocking path, whose reads hedge around a slow device. A runtime of one worker reads
//! nothing itself.

use std::sync::atomic::{AtomicU64, AtomicUsize, Ordering};

/// The count of flash reads in progress on the runtime's worker threads.
#[derive(Default)]
pub(crate) struct CallerReads {
    in_flight: AtomicUsize,
    /// Reads made under a share since the start (`reo_gateway_worker_flash_reads`).
    made: AtomicU64,
}

/// One read's share of [`CallerReads`], given back when dropped.
pub(crate) struct CallerRead<'a>(&'a CallerReads);

impl CallerReads {
    /// A share for a read on the calling worker, if fewer than `workers - 1` are in progress.
    pub(crate) fn try_take(&self, workers: usize) -> Option<CallerRead<'_>> {
        let limit = workers.saturating_sub(1);
        self.in_flight
            .fetch_update(Ordering::AcqRel, Ordering::Acquire, |n| (n < limit).then_some(n + 1))
            .ok()
            .map(|_| CallerRead(self))
    }

    /// Reads made under a share since the start ([`CallerRead::made`]).
    pub(crate) fn done(&self) -> u64 {
        self.made.load(Ordering::Relaxed)
    }

    /// The share of the worker threads of the runtime the caller runs on (none outside one).
    pub(crate) fn try_take_here(&self) -> Option<CallerRead<'_>> {
        let workers = tokio::runtime::Handle::try_current().ok()?.metrics().num_workers();
        self.try_take(workers)
    }

    /// Reads in progress.
    #[cfg(test)]
    pub(crate) fn in_flight(&self) -> usize {
        self.in_flight.load(Ordering::Acquire)
    }
}

impl CallerRead<'_> {
    /// Counts a read made under this share (a share may be given back unused).
    pub(crate) fn made(&self) {
        self.0.made.fetch_add(1, Ordering::Relaxed);
    }
}

impl Drop for CallerRead<'_> {
    fn drop(&mut self) {
        self.0.in_flight.fetch_sub(1, Ordering::AcqRel);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn one_worker_is_always_left_to_answer_the_others() {
        let reads = CallerReads::default();
        assert!(reads.try_take(1).is_none(), "a single worker never blocks in a device");
        let a = reads.try_take(3).expect("first of two");
        let b = reads.try_take(3).expect("second of two");
        assert!(reads.try_take(3).is_none(), "a third would leave no worker free");
        drop(a);
        let c = reads.try_take(3).expect("a share given back is taken again");
        assert_eq!(reads.in_flight(), 2);
        b.made();
        c.made();
        drop((b, c));
        assert_eq!(reads.in_flight(), 0);
        assert_eq!(reads.done(), 2, "the reads made are counted, not the shares");
        assert!(reads.try_take_here().is_none(), "outside a runtime, nothing is read here");
    }
}
