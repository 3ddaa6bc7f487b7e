//! Reo's cache manager: what is worth keeping on flash, and what it costs the flash to keep it.
//!
//! * [`Cache`] (`manager`): the engine — object index, fragments, replacement, admission, classes,
//!   write-back state, pins, cache- or GC-based eviction, warm restart — over a `reo_store::Store`.
//! * [`index`], [`object`], [`thinkey`]: the object index and its 32-byte packed entries.
//! * [`header`]: the blob header format the cache writes to flash.
//! * [`stats`]: hit ratios, CLWA / FLWA accounting.
//! * [`config`], [`redundancy`]: tunables with documented defaults; Reo-x% or uniform baselines.
//! * [`admission`]: flash admission control (admit-all, SEQR, SSEQR, touch count, SDCC's watchlist,
//!   a write budget), chained cheap → expensive, every rejection counted by reason.
//! * [`policy`]: the trait and its contract (admission-agnostic; pinned/dirty objects are protected
//!   through an `evictable` callback), and LRU, ARC, S3-FIFO, SIEVE and SDCC's generalized CLOCK.
//! * [`hash`]: the fast key hash used by the policies' index.
//! * [`dedup`]: dedup-aware caching (CacheDedup's D-LRU, D-ARC, CD-ARC) over a metadata cache of
//!   address → fingerprint and a data cache of fingerprints.
//!
//! Every policy stores its entries (ghosts included) as 24-byte nodes in a slab (`Vec`, `u32`
//! links, free list) indexed by a `hashbrown::HashTable<u32>` of slot numbers.

pub mod admission;
pub mod config;
pub mod dedup;
pub mod hash;
pub mod header;
pub mod index;
mod manager;
pub mod object;
pub mod policy;
pub mod redundancy;
pub mod stats;
pub mod thinkey;
pub mod units;

pub use admission::{Admission, AdmissionConfig, AdmissionKind, AdmissionStats, Admitter, Decision};
pub use config::{CacheConfig, ConfigError, EvictionMode};
pub use dedup::{new_dedup, Chunk, DedupKind, DedupOutcome, DedupPolicy, Fingerprint};
pub use manager::{
    object_version, Access, AccessHistory, Cache, CacheError, ControlReply, FillOutcome, GetResult, MemCopy,
    ObjectInfo, ObjectMeta, ObjectStatus, Peeked, Piece, Pieces, PutReceipt, SenseCode, StreamedPut, SweepReport,
    WriteError, MAX_CONTROL_MESSAGE, MAX_KEY_LEN, MAX_MEMORY_OBJECT, MEMORY_ENTRY_OVERHEAD,
};
pub use object::Class;
pub use policy::{new_policy, InsertError, Key, Policy, PolicyKind};
pub use redundancy::{ClassSchemes, Redundancy, RedundancyError, SchemeError};
pub use stats::CacheStats;
