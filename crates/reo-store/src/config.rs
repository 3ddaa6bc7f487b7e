//! [`StoreConfig`]: the store's tunables, with documented defaults, validated before use.
//!
//! Layout values (chunk, zone, journal and checkpoint sizes) matter only when a store is formatted;
//! an existing store keeps the values recorded in its superblock.

use crate::error::{Error, Result};

/// Smallest and largest chunk size.
pub const MIN_CHUNK: u32 = 4 << 10;
/// Largest chunk size.
pub const MAX_CHUNK: u32 = 4 << 20;
/// Longest blob header (the layer above keeps keys and object metadata there).
pub const MAX_HEADER_LEN: usize = 16 << 10;

/// Store configuration. `StoreConfig::default()` gives the documented defaults.
#[derive(Debug, Clone)]
pub struct StoreConfig {
    /// Bytes per chunk on one device, a multiple of 4 KiB in 4 KiB–4 MiB. Default 64 KiB:
    /// large enough for sequential device I/O, small enough for cheap degraded reads.
    pub chunk_size: u32,
    /// Bytes per zone on each device (a band is one zone on every device). `None`: 64 MiB, shrunk
    /// to give each device at least 16 zones so the cleaner has room to work.
    pub zone_size: Option<u64>,
    /// Bytes of the metadata journal on each device. `None`: 1/32 of the device, within 1–256 MiB.
    pub journal_size: Option<u64>,
    /// Bytes of each of the two checkpoint slots on each device. `None`: 1/32 of the device,
    /// within 1 MiB–1 GiB.
    pub checkpoint_size: Option<u64>,
    /// I/O threads for writes, syncs and metadata scans (chunk reads have their own threads:
    /// `read_depth`). `None`: four per device (so that concurrent puts each keep every device
    /// busy), at least 4 and at most 32.
    pub io_threads: Option<usize>,
    /// Reads in flight per device: each device has its own queue of reads served by this many
    /// threads (`reo_media::ReadLanes`). Default 1, the queue depth of a sequential `fio` read
    /// and the best measured on the reference machine's virtual disks (`reo bench store`, get
    /// against raw read: depth 2 was clearly worse; docs/BENCHMARKS.md). Raise it for devices
    /// that need deeper queues for their bandwidth (many NVMe drives want 4 or more for small
    /// reads).
    pub read_depth: usize,
    /// Format blank devices into a new store. Off, opening blank devices is an error.
    pub create: bool,
    /// Automatic ejection: a device whose decaying count of read errors and checksum mismatches
    /// exceeds this many is marked failed (as bcache's `io_error_limit`). Each error adds 1; the
    /// count halves every `io_error_halflife`. Default 32: a few bad sectors or flipped bits are
    /// repaired and tolerated, a device that keeps failing reads is ejected within a few dozen
    /// errors. 0 disables ejection by error budget (write and sync errors always fail a device).
    pub io_error_limit: u32,
    /// Half-life of the error count (as bcache's `io_error_halflife`). Default 60 s.
    pub io_error_halflife: std::time::Duration,
    /// Group commit of operations with durability `None`: the longest the metadata record of such a
    /// put or free waits in memory for more records to share its journal batch (one write and one
    /// fdatasync of every device). A batch is written at once when a `Sync` operation or a flush
    /// waits for it, or 32 KiB of records (about 800) are queued. Default 1 s rather than 50 ms:
    /// every batch ends in an fdatasync of every device, which on a disk with a volatile write
    /// cache is a cache flush that stalls the data streams — in `reo bench store` on the reference
    /// machine a batch per put cost a clear share of the write bandwidth, and a batch every 50 ms
    /// still a measurable share of `None` puts (docs/BENCHMARKS.md), while a crash may lose at most
    /// about this window of `None` operations — which is what `None` allows (the cache's clean
    /// fills: refetched; the cleaner waits for its records before reusing a band, and `Sync`
    /// operations never wait for the delay). Zero: a batch per wake-up of the journal writer.
    pub journal_delay: std::time::Duration,
    /// Hedged reads: a read of a blob with redundancy that waits on a device whose current read
    /// has been in service this long stops waiting for it and rebuilds those chunks from the
    /// other devices (copies or parity), as for a failed device; while a device stays that slow,
    /// later reads plan around it from the start. Only time in service counts, not time queued
    /// behind other reads, so a busy device is not taken for a stuck one; and when no other
    /// device is free of such a read (the whole array stalls), reads keep waiting. A read that
    /// cannot be rebuilt without the slow device waits for it. Scrub always waits. Default
    /// 100 ms: an SSD serves a 1 MiB read in a few ms, so this is a stall (firmware garbage
    /// collection, a failing drive retrying, a hung path), not load. `None`: always wait.
    pub slow_read_after: Option<std::time::Duration>,
    /// A device with one read in service this long is marked failed (it is stuck; like the
    /// kernel's 30 s SCSI command timeout), found by a reader waiting on it. The stuck read's
    /// thread stays blocked in the kernel; reads queued behind it are abandoned. Default 30 s.
    /// `None`: never.
    pub stuck_read_fail_after: Option<std::time::Duration>,
}

impl Default for StoreConfig {
    fn default() -> Self {
        StoreConfig {
            chunk_size: 64 << 10,
            zone_size: None,
            journal_size: None,
            checkpoint_size: None,
            io_threads: None,
            read_depth: 1,
            create: true,
            io_error_limit: 32,
            io_error_halflife: std::time::Duration::from_secs(60),
            journal_delay: std::time::Duration::from_secs(1),
            slow_read_after: Some(std::time::Duration::from_millis(100)),
            stuck_read_fail_after: Some(std::time::Duration::from_secs(30)),
        }
    }
}

impl StoreConfig {
    /// Checks the values that do not depend on the devices.
    pub fn validate(&self) -> Result<()> {
        let c = self.chunk_size;
        if !(MIN_CHUNK..=MAX_CHUNK).contains(&c) || !c.is_multiple_of(MIN_CHUNK) {
            return Err(Error::Config(format!("chunk_size {c} must be a multiple of 4096 between 4 KiB and 4 MiB")));
        }
        if let Some(z) = self.zone_size {
            if z < 2 * u64::from(c) || !z.is_multiple_of(u64::from(c)) {
                return Err(Error::Config(format!(
                    "zone_size {z} must be a multiple of chunk_size {c} and hold at least 2 chunks"
                )));
            }
        }
        for (name, v) in [("journal_size", self.journal_size), ("checkpoint_size", self.checkpoint_size)] {
            if let Some(v) = v {
                if v < 64 << 10 || !v.is_multiple_of(4096) {
                    return Err(Error::Config(format!("{name} {v} must be a multiple of 4096 and at least 64 KiB")));
                }
            }
        }
        if self.io_error_halflife.is_zero() {
            return Err(Error::Config(
                "io_error_halflife must be positive (set io_error_limit 0 to disable ejection)".into(),
            ));
        }
        if self.read_depth == 0 || self.read_depth > 64 {
            return Err(Error::Config(format!("read_depth {} must be between 1 and 64", self.read_depth)));
        }
        for (name, v) in
            [("slow_read_after", self.slow_read_after), ("stuck_read_fail_after", self.stuck_read_fail_after)]
        {
            if v.is_some_and(|v| v.is_zero()) {
                return Err(Error::Config(format!("{name} must be positive (None turns it off)")));
            }
        }
        if let (Some(slow), Some(stuck)) = (self.slow_read_after, self.stuck_read_fail_after) {
            if stuck < slow {
                return Err(Error::Config(format!(
                    "stuck_read_fail_after {stuck:?} must not be shorter than slow_read_after {slow:?}"
                )));
            }
        }
        if self.io_threads == Some(0) {
            return Err(Error::Config("io_threads must be at least 1".into()));
        }
        Ok(())
    }

    /// I/O threads for `devices` devices.
    pub fn io_threads_for(&self, devices: usize) -> usize {
        self.io_threads.unwrap_or((4 * devices).clamp(4, 32))
    }
}

/// The limits an open store applies to its devices' reads, from its configuration: automatic
/// ejection (`eject.rs`) and hedged and stuck reads (`hedge.rs`).
#[derive(Debug, Clone, Copy)]
pub(crate) struct Tunables {
    io_error_limit: u32,
    io_error_halflife: std::time::Duration,
    slow_read_after: Option<std::time::Duration>,
    stuck_read_fail_after: Option<std::time::Duration>,
}

impl Tunables {
    pub fn of(cfg: &StoreConfig) -> Tunables {
        Tunables {
            io_error_limit: cfg.io_error_limit,
            io_error_halflife: cfg.io_error_halflife,
            slow_read_after: cfg.slow_read_after,
            stuck_read_fail_after: cfg.stuck_read_fail_after,
        }
    }

    /// (`io_error_limit`, `io_error_halflife`); a limit of 0 ejects nothing.
    pub fn error_limit(&self) -> (u32, std::time::Duration) {
        (self.io_error_limit, self.io_error_halflife)
    }

    /// After how long in service a device's read is left behind when others can rebuild it.
    pub fn slow_read_after(&self) -> Option<std::time::Duration> {
        self.slow_read_after
    }

    /// After how long in service one read fails its device as stuck.
    pub fn stuck_read_fail_after(&self) -> Option<std::time::Duration> {
        self.stuck_read_fail_after
    }

    /// How often a reader waiting on the lanes looks for slow and stuck devices; `None`: it
    /// never does (both limits off).
    pub fn hedge_poll(&self) -> Option<std::time::Duration> {
        let every = match (self.slow_read_after, self.stuck_read_fail_after) {
            (Some(s), _) => s / 2,
            (None, Some(s)) => s / 8,
            (None, None) => return None,
        };
        Some(every.max(std::time::Duration::from_millis(1)))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn defaults_are_valid_and_bad_values_rejected() {
        assert!(StoreConfig::default().validate().is_ok());
        for c in [0, 1000, 4097, 8 << 20] {
            let cfg = StoreConfig { chunk_size: c, ..Default::default() };
            let e = cfg.validate().unwrap_err().to_string();
            assert!(e.contains("chunk_size"), "{e}");
        }
        let cfg = StoreConfig { zone_size: Some(100_000), ..Default::default() };
        assert!(cfg.validate().is_err());
        let cfg = StoreConfig { io_threads: Some(0), ..Default::default() };
        assert!(cfg.validate().is_err());
        let cfg = StoreConfig { slow_read_after: Some(std::time::Duration::ZERO), ..Default::default() };
        assert!(cfg.validate().unwrap_err().to_string().contains("slow_read_after"));
        let cfg =
            StoreConfig { stuck_read_fail_after: Some(std::time::Duration::from_millis(10)), ..Default::default() };
        assert!(cfg.validate().unwrap_err().to_string().contains("stuck_read_fail_after"));
        let cfg = StoreConfig { slow_read_after: None, stuck_read_fail_after: None, ..Default::default() };
        assert!(cfg.validate().is_ok());
    }
}
