//! Reo's S3 gateway: S3 clients talk to it (s3s, SigV4), it keeps objects on the flash cache
//! (`reo-cache`) and writes them back to a backend object store.
//!
//! * [`backend`]: the [`backend::Backend`] trait and the local-directory backend; S3 listing logic.
//! * [`keys`]: key and bucket-name validation, the local backend's file-name encoding.
//! * [`gateway`]: the data path — write-back puts, the flusher, reads through the cache,
//!   deletes, merged listings, multipart staging.
//! * [`s3`]: the S3 operations over s3s.
//! * [`launch`]: `reo serve` — data directory, devices, store, cache, backend, flusher, signals.
//! * [`server`]: the HTTP server (SigV4 auth, graceful shutdown, `/metrics` text).
//! * [`users`]: users, roles and scopes; who may do what.
//! * [`api`]: Reo's API on the S3 port — health, metrics, hints, query, admin.
//! * [`hints`]: application hints (prefetch, pin, evict over leases), persisted and throttled.
//! * [`metrics`]: request latency histograms; [`device_io`]: per-device I/O counters.

mod accept;
pub mod api;
pub mod backend;
pub mod body;
pub mod budget;
pub mod checksum;
pub mod console;
pub mod denials;
pub mod device_files;
pub mod device_io;
mod form_post;
pub mod gateway;
pub mod hex;
pub mod hints;
pub mod intercept;
pub mod keys;
pub mod launch;
pub mod metrics;
mod presign;
mod request_id;
pub mod s3;
pub mod scrape;
pub mod server;
mod sigv2;
pub mod slow_body;
pub mod tls;
pub mod users;
