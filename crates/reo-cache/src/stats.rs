//! [`CacheStats`]: the one accounting structure of the cache manager, as the Fusion-io study's
//! tables count (docs/REFERENCES.md §P4).
//!
//! * **Original writes**: bytes clients wrote (PUTs), whatever the cache did with them.
//! * **Cache writes**: user bytes written to flash *for the cache*: admitted read-miss fills plus
//!   admitted client writes (with dedup, only new content is written).
//! * **GC writes**: user bytes the store's cleaner relocated.
//! * CLWA = cache writes / original writes (undefined — `None` — with no original writes),
//!   FLWA = (cache writes + GC writes) / cache writes, multiplier = CLWA × FLWA.
//!
//! Device bytes (with copies, parity and padding) are counted apart: they are the redundancy's
//! cost, not the cache's. The same structure feeds the gateway's metrics and `reo replay`.

use serde::Serialize;

use crate::admission::AdmissionStats;
use crate::object::Class;

/// Counters since the cache opened. Plain integers: the manager updates them under its lock.
#[derive(Debug, Clone, Default, PartialEq, Serialize)]
pub struct CacheStats {
    /// Read requests (GET of a byte range).
    pub requests: u64,
    /// Requests served wholly from the cache (the memory tier or flash).
    pub hits: u64,
    /// Bytes requested by reads.
    pub request_bytes: u64,
    /// Requested bytes served from the cache, memory tier or flash (partial hits included).
    pub hit_bytes: u64,
    /// Of `hits`, the requests the memory tier served (no device read).
    pub memory_hits: u64,
    /// Of `hit_bytes`, the bytes the memory tier served.
    pub memory_hit_bytes: u64,
    /// Copies of objects the memory tier took (from a whole-object read flash served, or a write).
    pub memory_admissions: u64,
    /// Copies the memory tier's SIEVE pushed out to make room (not those dropped because their
    /// object changed or left flash).
    pub memory_evictions: u64,
    /// Bytes fetched from the backend on misses.
    pub backend_read_bytes: u64,
    /// Client writes (PUT bytes) — the Fusion-io study's "original writes".
    pub original_write_bytes: u64,
    /// User bytes written to flash for the cache (fills + admitted writes).
    pub cache_write_bytes: u64,
    /// Blobs written for the cache.
    pub cache_writes: u64,
    /// User bytes the cleaner relocated (including re-encodes).
    pub gc_write_bytes: u64,
    /// Device bytes written by the store for cache and GC writes (with redundancy).
    pub device_write_bytes: u64,
    /// Admission: fragments offered, admitted, rejected by reason, throttled.
    pub admission: AdmissionStats,
    /// Fragments evicted by the replacement policy.
    pub evictions: u64,
    /// Fragments the cleaner dropped under GC-based eviction.
    pub gc_evictions: u64,
    /// Fragments served from flash through the dedup cache.
    pub dedup_hits: u64,
    /// Writes whose content was already on flash (dedup): no flash write.
    pub dedup_saved_writes: u64,
    /// Inserts that found everything pinned or dirty (cache full, 0x64).
    pub full_rejections: u64,
    /// Objects whose class changed when H_hot was recomputed (hot ↔ cold).
    pub class_changes: u64,
    /// User bytes the re-encoder moved to their class's scheme (also in GC writes).
    pub reencoded_bytes: u64,
    /// User bytes written to flash and freed without being installed (a fill or write that lost a
    /// race, a flush rewrite that found the object moved). Included in device bytes, not in cache
    /// writes.
    pub wasted_write_bytes: u64,
    /// Flushed dirty objects dropped from the cache because their clean copy found no room (the
    /// flash full of dirty or pinned data); the backend holds them.
    pub flushed_dropped: u64,
    /// User bytes of flushed objects made clean in place: their dirty replicas' first copy kept
    /// as the isolated clean copy, no rewrite (`Store::shed_copies`).
    pub cleaned_in_place_bytes: u64,
    /// Clean fragments dropped because their devices failed (refetched on demand).
    pub lost_clean_fragments: u64,
    /// Dirty fragments found unreadable beyond their redundancy: data-loss events.
    pub dirty_lost: u64,
    /// Reads whose blob vanished under them (evicted or relocated concurrently) and were retried.
    pub raced_reads: u64,
    /// `hits` by the class of the object read.
    pub hits_by_class: PerClass,
    /// `hit_bytes` by the class of the object read.
    pub hit_bytes_by_class: PerClass,
}

/// A counter per class (docs/ARCHITECTURE.md: the classes and their schemes).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize)]
pub struct PerClass {
    /// Class 0, system metadata.
    pub metadata: u64,
    /// Class 1, dirty data.
    pub dirty: u64,
    /// Class 2, hot clean data.
    pub hot: u64,
    /// Class 3, cold clean data.
    pub cold: u64,
}

impl PerClass {
    /// The counter of `class`.
    pub fn get_mut(&mut self, class: Class) -> &mut u64 {
        match class {
            Class::Metadata => &mut self.metadata,
            Class::Dirty => &mut self.dirty,
            Class::Hot => &mut self.hot,
            Class::Cold => &mut self.cold,
        }
    }

    /// The counter of `class`.
    pub fn get(&self, class: Class) -> u64 {
        match class {
            Class::Metadata => self.metadata,
            Class::Dirty => self.dirty,
            Class::Hot => self.hot,
            Class::Cold => self.cold,
        }
    }
}

/// Derived ratios, serialized next to the counters.
#[derive(Debug, Clone, Copy, PartialEq, Serialize)]
pub struct Ratios {
    /// `hits / requests`; 0 with no request.
    pub hit_ratio: f64,
    /// `hit_bytes / request_bytes`; 0 with no requested byte.
    pub byte_hit_ratio: f64,
    /// Cache-layer write amplification, `cache_write_bytes / original_write_bytes`; `None` with no
    /// original write.
    pub clwa: Option<f64>,
    /// Flash-layer write amplification, `(cache_write_bytes + gc_write_bytes) / cache_write_bytes`;
    /// `None` with no cache write.
    pub flwa: Option<f64>,
    /// `clwa × flwa`; `None` when either is.
    pub multiplier: Option<f64>,
}

impl CacheStats {
    /// The ratios of the counters (see the module documentation).
    pub fn ratios(&self) -> Ratios {
        let div = |a: u64, b: u64| if b == 0 { None } else { Some(a as f64 / b as f64) };
        let clwa = div(self.cache_write_bytes, self.original_write_bytes);
        let flwa = div(self.cache_write_bytes + self.gc_write_bytes, self.cache_write_bytes);
        Ratios {
            hit_ratio: div(self.hits, self.requests).unwrap_or(0.0),
            byte_hit_ratio: div(self.hit_bytes, self.request_bytes).unwrap_or(0.0),
            clwa,
            flwa,
            multiplier: clwa.zip(flwa).map(|(c, f)| c * f),
        }
    }

    /// Counters and ratios as one JSON object.
    pub fn to_json(&self) -> serde_json::Value {
        let mut v = serde_json::to_value(self).expect("plain data serializes");
        let r = serde_json::to_value(self.ratios()).expect("plain data serializes");
        if let (Some(o), serde_json::Value::Object(r)) = (v.as_object_mut(), r) {
            o.extend(r);
        }
        v
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The Fusion-io study's TPC-Backup row at 120 GiB: 36.8 original, 275.83 cache, 1352.01 GC
    /// writes.
    #[test]
    fn ratios_match_the_fusion_io_study_table() {
        let gib = |x: f64| (x * 1024.0 * 1024.0 * 1024.0) as u64;
        let s = CacheStats {
            original_write_bytes: gib(36.8),
            cache_write_bytes: gib(275.83),
            gc_write_bytes: gib(1352.01),
            ..Default::default()
        };
        let r = s.ratios();
        assert!((r.clwa.unwrap() - 7.5).abs() < 0.01, "{r:?}");
        assert!((r.flwa.unwrap() - 5.9).abs() < 0.01, "{r:?}");
        assert!((r.multiplier.unwrap() - 44.25).abs() < 0.05, "{r:?}");
        assert_eq!(CacheStats::default().ratios().clwa, None);
        let j = s.to_json();
        assert!(j["clwa"].as_f64().is_some() && j["cache_write_bytes"].as_u64() == Some(gib(275.83)));
    }
}
