//! Store counters: what was written for users, for the cleaner and for metadata, and what reads
//! found. Atomics on the hot path; [`StoreStats`] is the snapshot callers see.

use std::sync::atomic::{AtomicU64, Ordering::Relaxed};

/// Live counters.
#[derive(Default)]
pub struct Counters {
    pub puts: AtomicU64,
    pub put_bytes: AtomicU64,
    pub put_device_bytes: AtomicU64,
    pub frees: AtomicU64,
    pub reads: AtomicU64,
    pub read_bytes: AtomicU64,
    pub degraded_reads: AtomicU64,
    pub reconstructed_chunks: AtomicU64,
    pub checksum_errors: AtomicU64,
    pub read_errors: AtomicU64,
    pub slow_reads: AtomicU64,
    pub write_errors: AtomicU64,
    pub gc_runs: AtomicU64,
    pub gc_relocated_blobs: AtomicU64,
    pub gc_relocated_bytes: AtomicU64,
    pub gc_device_bytes: AtomicU64,
    pub gc_dropped_blobs: AtomicU64,
    pub journal_batches: AtomicU64,
    pub journal_device_bytes: AtomicU64,
    pub checkpoints: AtomicU64,
    pub ejections: AtomicU64,
    pub rebuilt_blobs: AtomicU64,
    pub rebuild_device_bytes: AtomicU64,
}

/// A snapshot of the store's counters. Device bytes include redundancy (copies, parity, padding)
/// and count every device written.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct StoreStats {
    pub puts: u64,
    /// User bytes put (blob lengths).
    pub put_bytes: u64,
    /// Device bytes written by puts.
    pub put_device_bytes: u64,
    pub frees: u64,
    pub reads: u64,
    pub read_bytes: u64,
    /// Reads that needed a copy or a reconstruction.
    pub degraded_reads: u64,
    pub reconstructed_chunks: u64,
    /// Chunks whose checksum (or identity) did not match.
    pub checksum_errors: u64,
    pub read_errors: u64,
    /// Device reads a reader stopped waiting for (the device's read in service past
    /// `slow_read_after`), their chunks rebuilt from the other devices.
    pub slow_reads: u64,
    pub write_errors: u64,
    pub gc_runs: u64,
    pub gc_relocated_blobs: u64,
    /// User bytes the cleaner moved (apart from user writes: flash-layer write amplification).
    pub gc_relocated_bytes: u64,
    /// Device bytes the cleaner wrote.
    pub gc_device_bytes: u64,
    pub gc_dropped_blobs: u64,
    pub journal_batches: u64,
    pub journal_device_bytes: u64,
    pub checkpoints: u64,
    /// Devices ejected by the error budget.
    pub ejections: u64,
    /// Blobs whose chunks on a replaced device were rebuilt.
    pub rebuilt_blobs: u64,
    /// Device bytes the rebuild wrote to replaced devices.
    pub rebuild_device_bytes: u64,
}

impl Counters {
    pub fn add(c: &AtomicU64, v: u64) {
        c.fetch_add(v, Relaxed);
    }

    pub fn snapshot(&self) -> StoreStats {
        let g = |c: &AtomicU64| c.load(Relaxed);
        StoreStats {
            puts: g(&self.puts),
            put_bytes: g(&self.put_bytes),
            put_device_bytes: g(&self.put_device_bytes),
            frees: g(&self.frees),
            reads: g(&self.reads),
            read_bytes: g(&self.read_bytes),
            degraded_reads: g(&self.degraded_reads),
            reconstructed_chunks: g(&self.reconstructed_chunks),
            checksum_errors: g(&self.checksum_errors),
            read_errors: g(&self.read_errors),
            slow_reads: g(&self.slow_reads),
            write_errors: g(&self.write_errors),
            gc_runs: g(&self.gc_runs),
            gc_relocated_blobs: g(&self.gc_relocated_blobs),
            gc_relocated_bytes: g(&self.gc_relocated_bytes),
            gc_device_bytes: g(&self.gc_device_bytes),
            gc_dropped_blobs: g(&self.gc_dropped_blobs),
            journal_batches: g(&self.journal_batches),
            journal_device_bytes: g(&self.journal_device_bytes),
            checkpoints: g(&self.checkpoints),
            ejections: g(&self.ejections),
            rebuilt_blobs: g(&self.rebuilt_blobs),
            rebuild_device_bytes: g(&self.rebuild_device_bytes),
        }
    }
}
