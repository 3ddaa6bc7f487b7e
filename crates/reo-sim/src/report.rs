//! [`ReplayReport`]: the figures of one replay — the JSON object `reo replay --json` prints on its
//! last line, the rows of `reo eval`'s results, and a human-readable summary table.

use std::fmt;

use serde::Serialize;

/// Figures over a window of requests (a point of the time series).
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Window {
    /// Requests replayed up to the end of this window.
    pub end_request: u64,
    /// Requests in this window.
    pub requests: u64,
    /// Get hits / requests of the window (all operations, puts and deletes included).
    pub hit_ratio: f64,
    /// Get bytes served from the cache / get bytes requested in the window.
    pub byte_hit_ratio: f64,
    /// Mean modelled latency per request of the window served, milliseconds (a read of lost
    /// dirty data fails: it has no latency).
    pub mean_latency_ms: f64,
    /// Get bytes / modelled latency of all the window's requests, MiB/s.
    pub bandwidth_mibps: f64,
    /// Devices failed (and not yet replaced) at the end of the window.
    pub failed_devices: usize,
    /// Flash bytes written by the cache in this window (data and redundancy, incl. GC).
    pub flash_write_bytes: u64,
}

/// The figures of a replay.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct ReplayReport {
    /// Name of the configuration ([`crate::ReplayConfig::name`]).
    pub config: String,
    /// Requests replayed (gets, puts and deletes).
    pub requests: u64,
    /// Get requests.
    pub gets: u64,
    /// Put requests.
    pub puts: u64,
    /// Delete requests.
    pub deletes: u64,
    /// Gets served wholly from the cache.
    pub hits: u64,
    /// `hits / gets` (0 without gets).
    pub hit_ratio: f64,
    /// Get bytes served from the cache / get bytes requested.
    pub byte_hit_ratio: f64,
    /// The DRAM tier's capacity in bytes (0: off).
    pub memory_bytes: u64,
    /// Of `hits`, the gets the DRAM tier served (no device read).
    pub memory_hits: u64,
    /// `memory_hits / gets`: the share of gets served from memory (the rest of `hit_ratio` came
    /// from flash; the tier is inclusive, so it does not change `hit_ratio`).
    pub memory_hit_ratio: f64,
    /// Get bytes the DRAM tier served / get bytes requested.
    pub memory_byte_hit_ratio: f64,
    /// Cache-level write amplification: user bytes written into the cache (admitted fills and
    /// client writes) / bytes of client writes (the Fusion-io study, docs/REFERENCES.md §P4),
    /// `null` without client writes.
    pub clwa: Option<f64>,
    /// Flash-level write amplification: (cache writes + GC relocations) / cache writes, `null`
    /// when the cache wrote nothing.
    pub flwa: Option<f64>,
    /// User bytes cached / device bytes they occupy with redundancy, at the end.
    pub space_efficiency: f64,
    /// Device bytes written for cached data (all devices, redundancy and GC included, metadata
    /// journal excluded).
    pub flash_write_bytes: u64,
    /// Device bytes read.
    pub flash_read_bytes: u64,
    /// Bytes fetched from the backend for get misses.
    pub backend_read_bytes: u64,
    /// Bytes written to the backend: dirty data flushed (a version a rewrite replaced before its
    /// flush is not written), and write-back puts refused (written around). Write-through puts'
    /// own backend writes are not counted.
    pub backend_write_bytes: u64,
    /// Mean modelled latency per request served, milliseconds (a read of lost dirty data fails:
    /// it is counted in `dirty_lost_reads`, not here).
    pub mean_latency_ms: f64,
    /// 99th percentile of the modelled request latency, milliseconds.
    pub p99_latency_ms: f64,
    /// Get bytes / modelled latency of all requests, MiB/s (one outstanding request).
    pub bandwidth_mibps: f64,
    /// Replay speed (wall clock).
    pub requests_per_s: f64,
    /// Wall-clock time of the replay, seconds.
    pub elapsed_s: f64,
    /// Devices failed (and not yet replaced) at the end.
    pub failed_devices: usize,
    /// Dirty fragments lost beyond their redundancy (data-loss events).
    pub dirty_lost: u64,
    /// Gets that hit a lost dirty fragment: failed reads.
    pub dirty_lost_reads: u64,
    /// Puts refused (`503 SlowDown` in the gateway): past the dirty limit (the backend flush
    /// pace), or the cache could not take them (flash full of dirty data, too few devices to
    /// protect them). Modelled as written to the backend around the cache.
    pub refused_puts: u64,
    /// Of `refused_puts`, those past the dirty limit.
    pub refused_at_limit: u64,
    /// Flash the cache was given for data and redundancy (`--cache` under `--capacity flash`;
    /// the generous flash under the policy under `--capacity logical`).
    pub flash_bytes: u64,
    /// User bytes the replacement policy may hold.
    pub policy_capacity_bytes: u64,
    /// Objects the cache held at the end (indexed with at least one fragment, or dirty).
    pub held_objects: u64,
    /// User bytes the replacement policy held at the end.
    pub held_user_bytes: u64,
    /// Device bytes the held blobs occupy at the end: data, redundancy, chunk trailers, padding.
    pub held_flash_bytes: u64,
    /// `held_flash_bytes / held_objects`: the flash one cached object costs (0 when empty).
    pub flash_bytes_per_object: f64,
    /// Cache counters (admission rejections by reason, GC, dedup…).
    pub cache: serde_json::Value,
    /// The time series, one point per `ReplayConfig::window` requests (empty when 0).
    pub windows: Vec<Window>,
}

impl fmt::Display for ReplayReport {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let gib = |b: u64| b as f64 / (1u64 << 30) as f64;
        let mib = |b: u64| b as f64 / (1u64 << 20) as f64;
        let opt = |x: Option<f64>| x.map_or("-".to_string(), |v| format!("{v:.3}"));
        writeln!(f, "config              {}", self.config)?;
        writeln!(
            f,
            "requests            {} ({} get, {} put, {} delete)",
            self.requests, self.gets, self.puts, self.deletes
        )?;
        writeln!(f, "hit ratio           {:.4} (bytes {:.4})", self.hit_ratio, self.byte_hit_ratio)?;
        if self.memory_bytes > 0 {
            writeln!(
                f,
                "memory tier         {:.1} MiB: {:.4} of gets (bytes {:.4}) served from memory",
                mib(self.memory_bytes),
                self.memory_hit_ratio,
                self.memory_byte_hit_ratio
            )?;
        }
        writeln!(f, "CLWA / FLWA         {} / {}", opt(self.clwa), opt(self.flwa))?;
        writeln!(f, "space efficiency    {:.3}", self.space_efficiency)?;
        writeln!(
            f,
            "held at the end     {} objects, {:.1} MiB user ({:.1} MiB policy capacity), {:.1} MiB flash ({:.1} MiB given), {:.0} B flash per object",
            self.held_objects,
            mib(self.held_user_bytes),
            mib(self.policy_capacity_bytes),
            mib(self.held_flash_bytes),
            mib(self.flash_bytes),
            self.flash_bytes_per_object
        )?;
        writeln!(f, "flash written/read  {:.3} / {:.3} GiB", gib(self.flash_write_bytes), gib(self.flash_read_bytes))?;
        writeln!(
            f,
            "backend read/write  {:.3} / {:.3} GiB",
            gib(self.backend_read_bytes),
            gib(self.backend_write_bytes)
        )?;
        writeln!(f, "latency mean / p99  {:.3} / {:.3} ms", self.mean_latency_ms, self.p99_latency_ms)?;
        writeln!(f, "bandwidth           {:.1} MiB/s", self.bandwidth_mibps)?;
        writeln!(f, "failed devices      {}", self.failed_devices)?;
        writeln!(f, "dirty lost          {} fragments, {} reads", self.dirty_lost, self.dirty_lost_reads)?;
        write!(f, "replay speed        {:.0} requests/s ({:.2} s)", self.requests_per_s, self.elapsed_s)
    }
}
