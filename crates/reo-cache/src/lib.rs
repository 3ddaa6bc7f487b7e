//! Reo's cache manager: replacement policies behind one byte-size-aware [`Policy`] trait, and flash
//! admission control.
//!
//! * [`admission`]: flash admission control (admit-all, SEQR, SSEQR, touch count, SDCC's watchlist,
//!   a write budget), chained cheap → expensive, every rejection counted by reason.
//! * [`policy`]: the trait and its contract (admission-agnostic; pinned/dirty objects are protected
//!   through an `evictable` callback), and LRU, ARC, S3-FIFO, SIEVE and SDCC's generalized CLOCK.
//! * [`sim`]: a miss-ratio simulator and a deterministic Zipf trace generator.
//! * [`mod@bench`]: single-thread throughput and per-object memory of a policy.
//! * [`hash`]: the fast key hash used by the policies' index.
//!
//! Every policy stores its entries (ghosts included) as 24-byte nodes in a slab (`Vec`, `u32`
//! links, free list) indexed by a `hashbrown::HashTable<u32>` of slot numbers.

pub mod admission;
pub mod bench;
pub mod hash;
pub mod policy;
pub mod sim;
mod slab;

pub use admission::{Admission, AdmissionConfig, AdmissionKind, AdmissionStats, Admitter, Decision};
pub use bench::bench_policy;
pub use policy::{new_policy, InsertError, Key, Policy, PolicyKind};
pub use sim::{miss_ratio, zipf_trace};
