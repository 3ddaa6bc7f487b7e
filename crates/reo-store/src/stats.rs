//! Store counters: what was written for users, for the cleaner and for metadata, and what reads
//! found. Atomics on the hot path; [`StoreStats`] is the snapshot callers see.

use std::sync::atomic::{AtomicU64, Ordering::Relaxed};

/// One live counter of [`Counters`] (each is a field of [`StoreStats`]).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Stat {
    Puts,
    PutBytes,
    PutDeviceBytes,
    Frees,
    Reads,
    ReadBytes,
    DegradedReads,
    ReconstructedChunks,
    ChecksumErrors,
    ReadErrors,
    SlowReads,
    WriteErrors,
    GcRuns,
    GcRelocatedBlobs,
    GcRelocatedBytes,
    GcDeviceBytes,
    GcDroppedBlobs,
    JournalBatches,
    JournalDeviceBytes,
    Checkpoints,
    Ejections,
    RebuiltBlobs,
    RebuildDeviceBytes,
}

/// How many counters there are.
const COUNT: usize = Stat::RebuildDeviceBytes as usize + 1;

/// Live counters, one per [`Stat`].
pub struct Counters {
    counts: [AtomicU64; COUNT],
}

/// A snapshot of the store's counters. Device bytes include redundancy (copies, parity, padding)
/// and count every device written.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct StoreStats {
    /// Blobs put by users (relocations by the cleaner excluded).
    pub puts: u64,
    /// User bytes put (blob lengths).
    pub put_bytes: u64,
    /// Device bytes written by puts.
    pub put_device_bytes: u64,
    /// Blobs freed (by users, and by the cleaner when it drops or loses one).
    pub frees: u64,
    /// Blob reads (a whole blob or a byte range), the cleaner's and the open's checks included.
    pub reads: u64,
    /// User bytes those reads asked for (the ranges' lengths).
    pub read_bytes: u64,
    /// Reads that needed a copy or a reconstruction.
    pub degraded_reads: u64,
    /// Chunks rebuilt from copies or parity in place of missing, bad or slow ones.
    pub reconstructed_chunks: u64,
    /// Chunks whose checksum (or identity) did not match.
    pub checksum_errors: u64,
    /// Device reads that failed with an I/O error (charged to their device).
    pub read_errors: u64,
    /// Device reads a reader stopped waiting for (the device's read in service past
    /// `slow_read_after`), their chunks rebuilt from the other devices.
    pub slow_reads: u64,
    /// Device writes or syncs that failed (puts, metadata, rebuilds, scrub repairs).
    pub write_errors: u64,
    /// Cleaning passes (one band each).
    pub gc_runs: u64,
    /// Blobs the cleaner moved to another band.
    pub gc_relocated_blobs: u64,
    /// User bytes the cleaner moved (apart from user writes: flash-layer write amplification).
    pub gc_relocated_bytes: u64,
    /// Device bytes the cleaner wrote.
    pub gc_device_bytes: u64,
    /// Blobs the cleaner freed because its handler said drop.
    pub gc_dropped_blobs: u64,
    /// Metadata journal batches written.
    pub journal_batches: u64,
    /// Device bytes of metadata written: journal batches and checkpoints, every device counted.
    pub journal_device_bytes: u64,
    /// Metadata checkpoints written.
    pub checkpoints: u64,
    /// Devices ejected by the error budget.
    pub ejections: u64,
    /// Blobs whose chunks on a replaced device were rebuilt.
    pub rebuilt_blobs: u64,
    /// Device bytes the rebuild wrote to replaced devices.
    pub rebuild_device_bytes: u64,
}

impl Default for Counters {
    #[inline]
    fn default() -> Self {
        Counters { counts: std::array::from_fn(|_| AtomicU64::new(0)) }
    }
}

impl Counters {
    /// Adds `v` to counter `s`.
    #[inline]
    pub fn add(&self, s: Stat, v: u64) {
        self.counts[s as usize].fetch_add(v, Relaxed);
    }

    pub fn snapshot(&self) -> StoreStats {
        let g = |s: Stat| self.counts[s as usize].load(Relaxed);
        StoreStats {
            puts: g(Stat::Puts),
            put_bytes: g(Stat::PutBytes),
            put_device_bytes: g(Stat::PutDeviceBytes),
            frees: g(Stat::Frees),
            reads: g(Stat::Reads),
            read_bytes: g(Stat::ReadBytes),
            degraded_reads: g(Stat::DegradedReads),
            reconstructed_chunks: g(Stat::ReconstructedChunks),
            checksum_errors: g(Stat::ChecksumErrors),
            read_errors: g(Stat::ReadErrors),
            slow_reads: g(Stat::SlowReads),
            write_errors: g(Stat::WriteErrors),
            gc_runs: g(Stat::GcRuns),
            gc_relocated_blobs: g(Stat::GcRelocatedBlobs),
            gc_relocated_bytes: g(Stat::GcRelocatedBytes),
            gc_device_bytes: g(Stat::GcDeviceBytes),
            gc_dropped_blobs: g(Stat::GcDroppedBlobs),
            journal_batches: g(Stat::JournalBatches),
            journal_device_bytes: g(Stat::JournalDeviceBytes),
            checkpoints: g(Stat::Checkpoints),
            ejections: g(Stat::Ejections),
            rebuilt_blobs: g(Stat::RebuiltBlobs),
            rebuild_device_bytes: g(Stat::RebuildDeviceBytes),
        }
    }
}
