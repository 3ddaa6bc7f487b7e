//! [`Cache`]: the cache manager — object index, replacement, admission, classes and accounting
//! over the flash array store.
//!
//! Locking: one mutex guards the metadata ([`State`]: index, policy, pins, counters); it is held
//! for lookups and updates only, never during device I/O. A read copies the blob locations under
//! the lock and reads the store after releasing it; if the blob is evicted or relocated meanwhile
//! the store answers `NotFound` and that fragment is reported as a miss. A write puts its blob
//! first and installs it under the lock; whichever install loses a race frees its own blob, and
//! a blob the cleaner freed as an orphan before its install (`orphans_freed`) is written again.
//!
//! Lock order: the store's cleaner lock (the cleaner calls [`GcHandler`](reo_store::GcHandler)
//! with it held) → this mutex → the store's metadata locks (gate, bands, journal queue, resync
//! state). Under the mutex the cache only calls store functions that take those (`free` without
//! a durability wait, `header`, `contains`, `health`, `failed_devices`, `rebuild_progress`);
//! never `put`, `read`, `gc`, `scrub`, `replace_device` or a `Sync` free, which do I/O, wait, or
//! take the cleaner's lock.
//!
//! Files: `cache.rs` (the handle, open, counters), `state.rs` (the locked metadata and the updates
//! spanning several of its parts), `objects.rs` (fragment geometry), `placement.rs` (key and
//! version hashes), `dedup_cache.rs` (the dedup cache's data), `query.rs` (per-object queries,
//! leases), `read.rs` (get), `write.rs` (fill, put, mark clean, delete), `streamed.rs` (a put whose
//! body arrives in pieces), `dedup.rs` (dedup's reads and writes), `evict.rs` (freeing space:
//! policy evictions, the cleaner's handler for both eviction modes), `classify.rs` (H_hot, the
//! re-encoder), `health.rs` (failures, sweeps, sense codes), `control.rs` (control messages),
//! `history.rs` (access history), `rebuild.rs` (device replacement), `restart.rs` (rebuilding the
//! index from the store after a restart).

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
mod objects;
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
pub use placement::object_version;
pub use query::ObjectInfo;
pub use read::{GetResult, Piece, Pieces};
pub use sense::SenseCode;
pub use streamed::StreamedPut;
pub use write::{FillOutcome, ObjectMeta, PutReceipt, WriteError, MAX_KEY_LEN};
