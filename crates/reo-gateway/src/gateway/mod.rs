//! [`Gateway`]: the data path between the S3 layer and the backend, with the flash cache in it.
//!
//! * Writes follow the key's [`policy`] (write-back by default; the paths are in `write.rs`).
//!   Write-back: the object goes to the cache as dirty (durable on flash before the 200) with its
//!   metadata in [`pending`]; the [`flusher`] writes it to the backend and marks it clean. Writes
//!   get `503 SlowDown` when the dirty budget is exhausted (`WriteError::Full` too) or the
//!   backend has been down too long ([`outage`]); an object too large for the cache goes straight
//!   to the backend (write-around).
//! * Reads: metadata from the pending map (unflushed writes), the cache (optionally revalidated
//!   against the backend: [`fresh`]) or the backend; bytes from flash. GET streams ([`stream`]):
//!   missing fragments come from single-flight backend fetches ([`flight`], [`fetch`]) that reach
//!   the client as they arrive and are offered to the cache when complete. [`Gateway::read`] (copy,
//!   range prefetch) is the buffered form: missing fragments fetched and offered back with `fill`.
//! * Deletes under write-back are tombstones in the pending map, applied in the backend by the
//!   flusher; writes and deletes of a key hold its stripe lock exclusively, reads shared
//!   ([`Gateway::read_lock`]): metadata and bytes are of one version. The flusher calls the
//!   backend holding no lock and retires a pending state only if it is still the one it flushed.
//! * Listings merge the backend's keys with the unflushed ones.
//! * A layer above (the cluster) keeps its own durable objects in the cache, outside every
//!   bucket and never written back: [`held`].
//!
//! Every method blocks (device and backend I/O); the S3 layer runs them on tokio's blocking pool.
//!
//! Locks, in the order they are taken (a thread holding one takes only those below it):
//!
//! 0. a multipart upload's lock ([`multipart::Uploads::lock`]): one completion or abort of an
//!    upload at a time, held across the completed object's whole write (everything below).
//! 1. a key's stripe (`stripes`): one at a time, or two in key order ([`crate::hints::reorganize`],
//!    which skips the second when both keys share it). Held across device I/O, and across the
//!    backend calls of the paths that write the backend themselves (write-through, write-around,
//!    deletes outside write-back, bucket deletion); never across the flusher's.
//! 2. the hint engine's hint store: under it only the cache's lock (unpin) and the engine's
//!    counters; never taken under a stripe, nor a stripe under it.
//! 3. the flights registry, then a flight's state (the streaming miss path, under a stripe).
//! 4. leaves, each released before any other lock is taken: the pending map (never across I/O:
//!    records are written, fsync'ed and removed outside it, under the key's stripe, so a HEAD
//!    does not wait for a PUT's fsync; see [`pending`]), the keys being flushed (`flushing.rs`:
//!    waited on under a stripe, never taken with one by the flusher), the counters, the backend's
//!    health, the flusher's wake mutex (kicked under a stripe; the flusher waits on it holding
//!    nothing), the policy rules, the revalidation ages, the bucket guards ([`buckets`]), the
//!    missing buckets ([`stuck`]), and the cache's own lock (every `reo_cache` call; the cache
//!    calls nothing back).
//!
//! A guard must not outlive its statement into code that locks again: `for`, `match`, `if let` and
//! `while let` keep their scrutinee's temporaries (a `self.pending()` guard) to the end of the
//! construct, `else` included (edition 2021). Take what is needed into a local first.

pub mod backend_calls;
mod bucket_ops;
mod buckets;
mod caller_reads;
mod clock;
pub mod complete;
#[cfg(test)]
mod complete_tests;
#[cfg(test)]
pub(crate) mod counting;
#[cfg(test)]
mod crash_tests;
mod dirty_claims;
pub mod errors;
mod fetch;
pub(crate) mod flight;
pub mod flusher;
mod flushing;
pub mod fresh;
mod guard;
mod handle;
pub mod held;
mod hot;
#[cfg(test)]
mod hot_tests;
pub mod incoming;
#[cfg(test)]
mod incoming_tests;
mod listing;
#[cfg(test)]
mod listing_tests;
pub mod multipart;
mod object_meta;
pub mod outage;
pub mod part_table;
pub mod part_writer;
pub mod peers;
pub mod pending;
pub mod policy;
#[cfg(test)]
mod race_tests;
mod read;
mod recover;
mod staging;
pub mod stream;
#[cfg(test)]
mod stream_tests;
mod stripes;
pub mod stuck;
#[cfg(test)]
mod stuck_tests;
#[cfg(test)]
pub(crate) mod tests;
mod window_budget;
mod write;

pub(crate) use clock::now_ns;
pub use handle::{Gateway, GatewayCounters, OpenError, DEFAULT_MULTIPART_EXPIRY};
pub(crate) use object_meta::meta_of;
pub use recover::RecoverError;
