//! [`Cache`]: the cache manager — object index, replacement, admission, classes and accounting
//! over the flash array store.
//!
//! # Components
//!
//! The metadata is [`State`](state::State), behind the cache's one mutex: a plain aggregate of
//! components, each in its own file, each owning its data behind private fields and changed only
//! through its methods —
//!
//! * `Objects` (`objects.rs`): the object index and its entries, where each fragment's blob is
//!   (packed locations and their scheme table), the leases of pinned objects and the lease clock;
//! * `Replacement` (`replacement.rs`): the replacement policy (its slab lives in
//!   `crate::policy::slab`) and the buffer its evictions are reported in;
//! * `DedupCache` (`dedup_cache.rs`): the dedup policy and the content blobs by fingerprint;
//! * `Invalidations` (`invalidation.rs`): the epoch and the recent writes and deletes;
//! * `MemoryTier` (`memory.rs`): the DRAM tier, copies of whole small objects flash holds;
//! * `InFlight` (`inflight.rs`): orphans the cleaner freed and staged streamed writes;
//! * `Classes` (`classes.rs`): H_hot, the redundancy-budget flag, the re-encoder's cursor;
//! * `Recovery` (`recovery.rs`): device failures as last seen (sweeps, sense codes 0x65/0x66);
//! * `Counters` (`counters.rs`): the [`CacheStats`](crate::CacheStats) accounting;
//! * the admission chain ([`Admitter`](crate::Admitter), `crate::admission`).
//!
//! An update that spans components (forget a fragment: policy, then index; apply evictions:
//! admission, index, counters) is a method of `State` (`state.rs`), which owns them; the files
//! implementing [`Cache`] (`read.rs`, `write.rs`, `evict.rs`, …) call `State`'s and the
//! components' methods, never their fields. Dependencies point one way: the components depend on
//! no other manager file but the leaves (`placement.rs`, `sense.rs`, `objects.rs`'s geometry),
//! `state.rs` on the components, `cache.rs` on `state.rs`, and the operations on all of these.
//!
//! # Locking
//!
//! One mutex guards the whole `State`; it is held for lookups and updates only, never during
//! device I/O, and the components have no locks of their own (so no order among them). A read
//! copies the blob locations under the lock and reads the store after releasing it; if the blob is
//! evicted or relocated meanwhile the store answers `NotFound` and that fragment is reported as a
//! miss. A write puts its blob first and installs it under the lock; whichever install loses a
//! race frees its own blob, and a blob the cleaner freed as an orphan before its install (counted
//! by `InFlight`) is written again.
//!
//! Lock order: the store's cleaner lock (the cleaner calls [`GcHandler`](reo_store::GcHandler)
//! with it held) → this mutex → the store's metadata locks (gate, bands, journal queue, resync
//! state). Under the mutex the cache only calls store functions that take those (`free` without
//! a durability wait, `header`, `contains`, `health`, `failed_devices`, `rebuild_progress`);
//! never `put`, `read`, `gc`, `scrub`, `replace_device` or a `Sync` free, which do I/O, wait, or
//! take the cleaner's lock.
//!
//! # Files
//!
//! Besides the components: `cache.rs` (the handle, open, counters), `state.rs` (the locked
//! metadata and the updates spanning components), `error.rs` ([`CacheError`]), `placement.rs`
//! (key and version hashes), `sense.rs` ([`SenseCode`]), `query.rs` (per-object queries,
//! leases), `read.rs` (get), `write.rs` (fill, put, mark clean, delete), `streamed.rs` (a put
//! whose body arrives in pieces), `dedup.rs` (dedup's reads and writes), `evict.rs` (freeing
//! space: policy evictions, the cleaner's handler for both eviction modes), `classify.rs` (H_hot,
//! the re-encoder), `health.rs` (failures, sweeps, object status), `control.rs` (control
//! messages), `history.rs` (access history), `rebuild.rs` (device replacement), `restart.rs`
//! (rebuilding the index from the store after a restart).

mod cache;
mod classes;
mod classify;
mod control;
mod counters;
mod dedup;
mod dedup_cache;
mod error;
mod evict;
mod health;
mod history;
mod inflight;
mod invalidation;
mod memory;
mod memory_read;
mod objects;
mod pieces;
mod placement;
mod query;
mod read;
mod rebuild;
mod recovery;
mod replacement;
mod restart;
mod sense;
mod state;
mod streamed;
mod write;

pub use cache::Cache;
pub use control::{ControlReply, MAX_CONTROL_MESSAGE};
pub use error::CacheError;
pub use health::{Access, ObjectStatus, SweepReport};
pub use history::AccessHistory;
pub use memory::{MemCopy, ENTRY_OVERHEAD as MEMORY_ENTRY_OVERHEAD, MAX_MEMORY_OBJECT};
pub use memory_read::Peeked;
pub use pieces::{GetResult, Piece, Pieces};
pub use placement::object_version;
pub use query::ObjectInfo;
pub use sense::SenseCode;
pub use streamed::StreamedPut;
pub use write::{FillOutcome, ObjectMeta, PutReceipt, WriteError, MAX_KEY_LEN};
