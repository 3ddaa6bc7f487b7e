//! [`CacheConfig`]: the cache manager's tunables, with documented defaults (the class →
//! redundancy-scheme map, [`ClassSchemes`], is [`crate::redundancy`]'s).

use std::fmt;
use std::str::FromStr;

use reo_store::VictimPolicy;

use crate::admission::{AdmissionConfig, AdmissionKind};
use crate::dedup::DedupKind;
use crate::policy::PolicyKind;
use crate::redundancy::{ClassSchemes, Redundancy, SchemeError};

/// Who frees flash space.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum EvictionMode {
    /// The replacement policy picks victims to stay within `capacity_bytes`; their space becomes
    /// holes the store's cleaner compacts, relocating the live blobs (GC writes).
    CacheBased,
    /// The store's cleaner picks the victim band (cost-benefit) and the cache decides per blob:
    /// keep (relocate) what was referenced since it was written, is dirty or pinned; drop the rest.
    /// The cache then holds as much as the flash does; `capacity_bytes` is not enforced by the policy.
    GcBased,
}

impl EvictionMode {
    /// Stable name (`cache-eviction`, `gc-eviction`), accepted by [`FromStr`] along with the aliases
    /// `cache`, `cache-based`, `gc` and `gc-based`.
    pub fn as_str(self) -> &'static str {
        match self {
            EvictionMode::CacheBased => "cache-eviction",
            EvictionMode::GcBased => "gc-eviction",
        }
    }
}

impl fmt::Display for EvictionMode {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.pad(self.as_str())
    }
}

impl FromStr for EvictionMode {
    type Err = ConfigError;
    fn from_str(s: &str) -> Result<Self, ConfigError> {
        match s {
            "cache" | "cache-eviction" | "cache-based" => Ok(EvictionMode::CacheBased),
            "gc" | "gc-eviction" | "gc-based" => Ok(EvictionMode::GcBased),
            _ => Err(ConfigError::UnknownEvictionMode(s.to_string())),
        }
    }
}

/// Why a cache configuration is refused.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum ConfigError {
    /// `capacity_bytes` is 0.
    #[error("cache capacity must be > 0 bytes")]
    ZeroCapacity,
    /// `fragment_size` (bytes) is outside 4 KiB–64 MiB.
    #[error("fragment size {0} must be within 4 KiB–64 MiB")]
    FragmentSize(u64),
    /// The array has more devices than an object's location can name.
    #[error("{devices} devices: at most {max} are supported")]
    TooManyDevices {
        /// Devices in the array.
        devices: usize,
        /// Most devices supported ([`crate::object::MAX_DEVICES`]).
        max: usize,
    },
    /// Dedup with GC-based eviction: a content blob may back many objects, so only the dedup
    /// policy, not the cleaner, may drop it.
    #[error(
        "dedup {0} with gc-eviction: the dedup policy decides which content leaves the cache \
         (a content blob may back many objects), so the cleaner cannot drop it; use cache-eviction"
    )]
    DedupWithGcEviction(DedupKind),
    /// The class → scheme map does not suit the array.
    #[error(transparent)]
    Schemes(#[from] SchemeError),
    /// An eviction mode name [`EvictionMode::from_str`] does not know.
    #[error("unknown eviction mode {0:?} (expected cache-eviction or gc-eviction)")]
    UnknownEvictionMode(String),
}

/// Cache manager configuration. `CacheConfig::new(capacity)` gives the documented defaults.
#[derive(Debug, Clone)]
pub struct CacheConfig {
    /// User bytes the cache may hold (cache-based eviction). The store must be larger: redundancy
    /// and the cleaner's headroom come on top.
    pub capacity_bytes: u64,
    /// Objects are cut into fragments of this many bytes (default 1 MiB, as SDCC), so a range of a
    /// huge object is cached without the rest.
    pub fragment_size: u64,
    /// Replacement policy (default S3-FIFO: the best mean miss ratio of the reference policies,
    /// and scan resistant).
    pub policy: PolicyKind,
    /// Flash admission (default admit-all); see [`crate::admission`].
    pub admission: AdmissionConfig,
    /// Inline dedup of clean fragments (default off: the replacement policy runs on fragments).
    pub dedup: DedupKind,
    /// Entries of the dedup metadata cache (address → fingerprint). `None`: twice the fragments
    /// the data cache holds (CacheDedup sizes the metadata cache larger than the data cache so
    /// that duplicate addresses can hit).
    pub dedup_meta_entries: Option<usize>,
    /// Default cache-based.
    pub eviction: EvictionMode,
    /// Reo-x% (default Reo-20%) or a uniform baseline; gives the class → scheme map and the hot
    /// class's redundancy budget.
    pub redundancy: Redundancy,
    /// Overrides the class → scheme map of `redundancy`.
    pub class_schemes: Option<ClassSchemes>,
    /// A clean fill whose class scheme and cold scheme cannot be written (more devices failed
    /// than they tolerate) is cached on one surviving device instead of refused (default on: a
    /// cache keeps serving while one device works). Off models a cache that stops caching what
    /// it cannot stripe (the Reo paper's uniform baselines).
    pub degraded_fills: bool,
    /// The hot threshold H_hot is recomputed every this many requests (default 10,000), and on
    /// demand ([`crate::Cache::recompute_hot_threshold`]).
    pub hot_recompute_every: u64,
    /// Bytes the re-encoder may move per [`crate::Cache::maintain`] call (default 4 MiB; 0: only
    /// the cleaner moves blobs whose class changed). With `maintain` called every 100 ms this
    /// paces re-encoding at 40 MiB/s, a small share of the devices.
    pub reencode_per_maintain: u64,
    /// The cleaner's victim selection (default cost-benefit).
    pub gc_victim: VictimPolicy,
    /// The cleaner runs when fewer free bands than this remain (default 2: one band in flight for
    /// each of two schemes).
    pub gc_free_bands: usize,
    /// Keys are 8-byte little-endian numbers whose order means something (block numbers of a
    /// volume, as the simulator's block traces use): admission policies see the number, so
    /// SEQR's adjacent-key detection finds sequential runs. Default off (keys are hashed).
    pub numeric_keys: bool,
    /// Bytes of DRAM for the memory tier in front of flash (default 0: off). It keeps copies of
    /// whole objects up to [`crate::MAX_MEMORY_OBJECT`] (and a sixteenth of its size) that flash
    /// holds, SIEVE-replaced, each counted with [`crate::MEMORY_ENTRY_OVERHEAD`] bytes of
    /// bookkeeping, so the tier never holds more than this. Off with dedup (deduplicated
    /// fragments leave the dedup cache on its own terms, which would break inclusion).
    pub memory_bytes: u64,
}

impl CacheConfig {
    /// The documented defaults for a cache of `capacity_bytes`: 1 MiB fragments, S3-FIFO, admit-all,
    /// no dedup, cache-based eviction, Reo-20%.
    pub fn new(capacity_bytes: u64) -> CacheConfig {
        CacheConfig {
            capacity_bytes,
            fragment_size: 1 << 20,
            policy: PolicyKind::S3Fifo,
            admission: AdmissionConfig::new(AdmissionKind::AdmitAll),
            dedup: DedupKind::Off,
            dedup_meta_entries: None,
            eviction: EvictionMode::CacheBased,
            redundancy: Redundancy::default(),
            class_schemes: None,
            degraded_fills: true,
            hot_recompute_every: 10_000,
            reencode_per_maintain: 4 << 20,
            gc_victim: VictimPolicy::CostBenefit,
            gc_free_bands: 2,
            numeric_keys: false,
            memory_bytes: 0,
        }
    }

    /// Entries of the dedup metadata cache.
    pub fn meta_entries(&self) -> usize {
        self.dedup_meta_entries.unwrap_or((2 * self.capacity_bytes / self.fragment_size).max(16) as usize)
    }

    /// Checks the configuration against an array of `devices` devices: capacity, fragment size,
    /// device count, dedup × eviction mode, and that the class → scheme map fits the array (with
    /// dirty data protected, except for a uniform baseline).
    pub fn validate(&self, devices: usize) -> Result<(), ConfigError> {
        if self.capacity_bytes == 0 {
            return Err(ConfigError::ZeroCapacity);
        }
        if !(4096..=(64 << 20)).contains(&self.fragment_size) {
            return Err(ConfigError::FragmentSize(self.fragment_size));
        }
        if devices > crate::object::MAX_DEVICES {
            return Err(ConfigError::TooManyDevices { devices, max: crate::object::MAX_DEVICES });
        }
        if self.dedup != DedupKind::Off && self.eviction == EvictionMode::GcBased {
            return Err(ConfigError::DedupWithGcEviction(self.dedup));
        }
        let schemes = self.class_schemes.unwrap_or_else(|| self.redundancy.class_schemes(devices));
        if self.redundancy.is_baseline() && self.class_schemes.is_none() {
            // Baselines measure what uniform protection does, unprotected dirty data included.
            schemes.validate_fit(devices)?;
        } else {
            schemes.validate(devices)?;
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::object::Class;
    use reo_store::{Placement, Scheme};

    #[test]
    fn defaults_fit_the_array_and_protect_dirty_data() {
        for n in 1..=8 {
            let s = ClassSchemes::reo_default(n);
            s.validate(n).unwrap();
            if n >= 2 {
                assert!(s.of(Class::Dirty).tolerance() >= 1, "{n} devices");
            }
            assert!(s.of(Class::Cold).is_isolated());
        }
        assert_eq!(ClassSchemes::reo_default(4).of(Class::Hot), Scheme::Rs { k: 2, p: 2 });
        let bad = ClassSchemes::uniform(Scheme::None(Placement::Striped));
        assert!(bad.validate(4).unwrap_err().to_string().contains("loses acknowledged writes"));
        assert!(CacheConfig::new(0).validate(4).is_err());
        assert_eq!("gc".parse::<EvictionMode>().ok(), Some(EvictionMode::GcBased));
        assert!("lfu".parse::<EvictionMode>().is_err());
    }
}
