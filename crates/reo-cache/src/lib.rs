//! Reo's cache manager: replacement policies behind one byte-size-aware [`Policy`] trait.
//!
//! * [`policy`]: the trait and its contract (admission-agnostic; pinned/dirty objects are protected
//!   through an `evictable` callback), and LRU, ARC, S3-FIFO, SIEVE and SDCC's generalized CLOCK.
//! * [`sim`]: a miss-ratio simulator and a deterministic Zipf trace generator.
//! * [`mod@bench`]: single-thread throughput and per-object memory of a policy.
//! * [`hash`]: the fast key hash used by the policies' index.
//! * [`dedup`]: dedup-aware caching (CacheDedup's D-LRU, D-ARC, CD-ARC) over a metadata cache of
//!   address → fingerprint and a data cache of fingerprints, with a dedup trace simulator.
//!
//! Every policy stores its entries (ghosts included) as 24-byte nodes in a slab (`Vec`, `u32`
//! links, free list) indexed by a `hashbrown::HashTable<u32>` of slot numbers.

pub mod bench;
pub mod dedup;
pub mod hash;
pub mod policy;
pub mod sim;
mod slab;

pub use bench::bench_policy;
pub use dedup::{new_dedup, Chunk, DedupKind, DedupOutcome, DedupPolicy, Fingerprint};
pub use policy::{new_policy, InsertError, Key, Policy, PolicyKind};
pub use sim::{miss_ratio, zipf_trace};
