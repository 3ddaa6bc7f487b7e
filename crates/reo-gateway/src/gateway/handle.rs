//! [`Gateway`], the handle of the data path: its state (the components of the other files of
//! `gateway/`, each owning its data: the pending map, the multipart uploads, the backend's
//! health, the bucket guards, the flights, ...), opening it over a cache, a backend and a state
//! directory, and the accessors the operations (`read.rs`, `write.rs`, `flusher.rs`, ...) use.
//! The lock order is in the module doc of `gateway`.

use std::path::Path;
use std::sync::Arc;

use parking_lot::{Condvar, Mutex, MutexGuard, RwLock, RwLockReadGuard, RwLockWriteGuard};
use reo_cache::Cache;
use s3s::{s3_error, S3Result};

use super::clock::now_ns;
use super::errors::backend_err;
use super::pending::{self, cache_key, Pending};
use super::policy::{PolicyRule, WritePolicy};
use super::{
    buckets, caller_reads, dirty_claims, fetch, flushing, guard, multipart, outage, part_table, policy, recover,
    stripes, stuck,
};
use crate::backend::{Backend, ObjectInfo};

/// Counters for `/metrics`.
#[derive(Debug, Default, Clone, Copy, serde::Serialize)]
pub struct GatewayCounters {
    /// Objects written back to the backend by the flusher.
    pub flushed_objects: u64,
    /// Bytes of those objects.
    pub flushed_bytes: u64,
    /// Flush attempts that failed (the object stays dirty and is retried).
    pub flush_errors: u64,
    /// Streamed flushes given up because their object was rewritten or deleted meanwhile.
    pub flushes_abandoned: u64,
    /// Writes that went to the backend without a copy kept on flash.
    pub write_around: u64,
    /// Write-back deletes applied in the backend by the flusher.
    pub flushed_deletes: u64,
    /// Writes refused with `503 SlowDown` (the dirty budget spent, the cache full, or the backend
    /// down).
    pub slowdowns: u64,
    /// Object reads sent to the backend (cache misses).
    pub backend_reads: u64,
    /// GETs whose flash reads the async worker that received them made itself (`gateway/hot.rs`).
    pub worker_flash_reads: u64,
}

/// The gateway's data path.
pub struct Gateway {
    /// The backend as requests call it: while it is down, calls fail at once ([`guard`]).
    pub backend: Arc<dyn Backend>,
    /// The backend itself: the flusher's, whose calls are also how the gateway learns it is back.
    pub(crate) raw_backend: Arc<dyn Backend>,
    /// Latency and errors of backend calls, by operation (`/metrics`).
    pub backend_calls: super::backend_calls::BackendCalls,
    /// The flash cache.
    pub cache: Arc<Cache>,
    pub(crate) pending: Mutex<Pending>,
    /// The pending map's record files, written outside its mutex ([`pending::Records`]).
    pub(crate) records: pending::Records,
    /// Per-key ordering ([`stripes`]).
    pub(super) stripes: Arc<stripes::Stripes>,
    /// Wakes the flusher (a write arrived) / signals shutdown.
    pub(crate) wake: (Mutex<bool>, Condvar),
    pub(crate) counters: Mutex<GatewayCounters>,
    pub(crate) uploads: multipart::Uploads,
    /// Part boundaries of objects completed from multipart uploads.
    pub(crate) part_tables: part_table::PartTables,
    pub(crate) stopping: std::sync::atomic::AtomicBool,
    /// Minimum age (ns) of an unflushed object before the flusher writes it (coalesces rewrites).
    pub(crate) flush_delay_ns: std::sync::atomic::AtomicU64,
    /// Bytes the flusher reads from flash at a time ([`flusher`]).
    pub(crate) flush_window: std::sync::atomic::AtomicU64,
    /// Open multipart uploads older than this are removed ([`Gateway::expire_uploads`]).
    pub(super) multipart_expiry_ns: std::sync::atomic::AtomicU64,
    /// Objects written up to this time (ns) are flushed regardless of the delay ([`Gateway::flush_now`]).
    pub(crate) flush_before_ns: std::sync::atomic::AtomicU64,
    /// Unflushed bytes beyond which writes get 503 SlowDown (the high watermark).
    pub(crate) dirty_limit: std::sync::atomic::AtomicU64,
    /// Dirty room promised to write-back bodies still arriving.
    pub(crate) dirty_claims: dirty_claims::DirtyClaims,
    pub(super) rules: RwLock<Vec<PolicyRule>>,
    /// Whether the backend is down (from its answers) and the buckets known to exist.
    pub health: Arc<outage::BackendHealth>,
    /// The streaming miss path's shared state (flights, revalidation ages).
    pub(crate) fetch: fetch::FetchCtx,
    /// Orders bucket deletions with the object writes into the bucket ([`buckets`]).
    pub(super) buckets: buckets::BucketGuards,
    /// Buckets found missing in the backend by the flusher, their objects stuck ([`stuck`]).
    pub(crate) gone: stuck::GoneBuckets,
    /// The key the flusher is writing to the backend, holding no lock ([`flushing`]).
    pub(crate) flushing: flushing::Flushing,
    /// Fetches of at most this many bytes are collected for the cache ([`Gateway::max_fill`]).
    pub(super) max_fill: std::sync::atomic::AtomicU64,
    /// Small flash reads in progress on the runtime's workers ([`caller_reads`]).
    pub(super) caller_reads: caller_reads::CallerReads,
}

/// How long an open multipart upload may stay before it is removed (S3 leaves that to a
/// lifecycle rule; a cache must not keep abandoned parts on disk for ever).
pub const DEFAULT_MULTIPART_EXPIRY: std::time::Duration = std::time::Duration::from_secs(7 * 86_400);

/// Why a gateway could not open its state directory or pick up a previous run's unflushed
/// writes.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum OpenError {
    /// The pending records, multipart staging or part tables of the state directory.
    #[error("{}: {source}", dir.display())]
    State {
        /// The state directory.
        dir: std::path::PathBuf,
        /// Why.
        source: std::io::Error,
    },
    /// A previous run's unflushed writes could not be picked up.
    #[error("recovering the unflushed writes: {0}")]
    Recover(#[from] recover::RecoverError),
}

impl Gateway {
    /// A gateway over `cache` and `backend`, its unflushed state in `state_dir` (pending
    /// metadata, multipart staging). Unflushed objects of a previous run are picked up.
    pub fn open(backend: Arc<dyn Backend>, cache: Arc<Cache>, state_dir: &Path) -> Result<Arc<Gateway>, OpenError> {
        let state = |source| OpenError::State { dir: state_dir.to_path_buf(), source };
        let mut pending = Pending::open(&state_dir.join("pending")).map_err(state)?;
        let uploads = multipart::Uploads::open(&state_dir.join("uploads")).map_err(state)?;
        let part_tables = part_table::PartTables::open(&state_dir.join("parts")).map_err(state)?;
        recover::reconcile(&mut pending, &cache)?;
        let health = Arc::new(outage::BackendHealth::default());
        let raw_backend = backend;
        let backend_calls = super::backend_calls::BackendCalls::default();
        let backend: Arc<dyn Backend> =
            Arc::new(guard::Guarded::new(raw_backend.clone(), health.clone(), backend_calls.clone()));
        let dirty_limit = cache.config().capacity_bytes / 2;
        let max_fill = (cache.config().capacity_bytes / 4).min(256 << 20);
        let stripes = Arc::new(stripes::Stripes::default());
        let fetch = fetch::FetchCtx {
            stripes: stripes.clone(),
            backend: backend.clone(),
            cache: cache.clone(),
            flights: Default::default(),
            fresh: Default::default(),
        };
        let records = pending.records.clone();
        Ok(Arc::new(Gateway {
            backend,
            raw_backend,
            backend_calls,
            cache,
            records,
            pending: Mutex::new(pending),
            stripes,
            wake: (Mutex::new(false), Condvar::new()),
            counters: Mutex::new(GatewayCounters::default()),
            uploads,
            part_tables,
            stopping: Default::default(),
            flush_delay_ns: Default::default(),
            flush_window: std::sync::atomic::AtomicU64::new(flushing::WINDOW),
            multipart_expiry_ns: std::sync::atomic::AtomicU64::new(DEFAULT_MULTIPART_EXPIRY.as_nanos() as u64),
            flush_before_ns: Default::default(),
            // Half the cache: room is left for cleaning (rewriting flushed objects clean).
            dirty_limit: std::sync::atomic::AtomicU64::new(dirty_limit),
            dirty_claims: Default::default(),
            caller_reads: Default::default(),
            rules: RwLock::new(Vec::new()),
            health,
            fetch,
            buckets: Default::default(),
            gone: Default::default(),
            flushing: Default::default(),
            max_fill: std::sync::atomic::AtomicU64::new(max_fill),
        }))
    }

    #[cfg(test)]
    pub(super) fn stripe_of(&self, ckey: &str) -> &RwLock<()> {
        self.stripes.of(ckey)
    }

    /// Whether two keys share a stripe lock (taking both would deadlock).
    pub(crate) fn same_stripe(&self, a: &str, b: &str) -> bool {
        self.stripes.same(a, b)
    }

    pub(crate) fn stripe(&self, ckey: &str) -> RwLockWriteGuard<'_, ()> {
        self.stripes.exclusive(ckey)
    }

    /// Hold while reading an object's metadata and bytes: no write of the key lands meanwhile.
    pub fn read_lock(&self, bucket: &str, key: &str) -> RwLockReadGuard<'_, ()> {
        self.stripe_shared(&cache_key(bucket, key))
    }

    pub(crate) fn stripe_shared(&self, ckey: &str) -> RwLockReadGuard<'_, ()> {
        self.stripes.shared(ckey)
    }

    pub(crate) fn pending(&self) -> MutexGuard<'_, Pending> {
        self.pending.lock()
    }

    /// Unflushed objects wait at least `d` before the flusher writes them (default 0).
    pub fn set_flush_delay(&self, d: std::time::Duration) {
        self.flush_delay_ns.store(d.as_nanos() as u64, std::sync::atomic::Ordering::Relaxed);
    }

    /// Open multipart uploads older than `d` are removed by the next sweep (default
    /// [`DEFAULT_MULTIPART_EXPIRY`]).
    pub fn set_multipart_expiry(&self, d: std::time::Duration) {
        self.multipart_expiry_ns.store(d.as_nanos() as u64, std::sync::atomic::Ordering::Relaxed);
    }

    /// Removes the open multipart uploads older than the expiry, and part tables of objects
    /// replaced since (the flusher's thread calls it at start and hourly); returns how many
    /// uploads went.
    pub fn expire_uploads(&self) -> usize {
        let age = std::time::Duration::from_nanos(self.multipart_expiry_ns.load(std::sync::atomic::Ordering::Relaxed));
        let n = self.uploads.expire(age, now_ns());
        if n > 0 {
            tracing::info!("removed {n} multipart uploads abandoned for over {age:?}");
        }
        // Tables of objects overwritten or deleted since (a backend that cannot answer keeps
        // them: a table is only used while its ETag matches anyway).
        let stale = self.part_tables.sweep(|bucket, key, etag| match self.head(bucket, key) {
            Ok(info) => info.etag == etag,
            Err(e) => *e.code() != s3s::S3ErrorCode::NoSuchKey,
        });
        if stale > 0 {
            tracing::debug!("removed {stale} part tables of replaced objects");
        }
        n
    }

    /// Replaces the write-policy rules (see [`policy`]).
    pub fn set_policies(&self, rules: Vec<PolicyRule>) {
        *self.rules.write() = rules;
    }

    /// The write policy of a key about to be written or deleted; read-only scopes are refused.
    pub fn policy(&self, bucket: &str, key: &str) -> S3Result<WritePolicy> {
        let p = policy::policy_of(&self.rules.read(), bucket, key);
        if p == WritePolicy::ReadOnly {
            return Err(s3_error!(AccessDenied, "{bucket}/{key} is read-only by this gateway's write policy"));
        }
        Ok(p)
    }

    /// Unflushed bytes beyond which writes get `503 SlowDown`.
    pub fn set_dirty_limit(&self, bytes: u64) {
        self.dirty_limit.store(bytes, std::sync::atomic::Ordering::Relaxed);
    }

    /// A snapshot of the counters.
    pub fn counters(&self) -> GatewayCounters {
        let mut c = *self.counters.lock();
        c.backend_reads += self.fetch.flights.fetches.load(std::sync::atomic::Ordering::Relaxed);
        c.worker_flash_reads = self.caller_reads.done();
        c
    }

    /// Revalidate cache hits older than `after` against the backend's ETag (`None`: never, the
    /// default); see [`fresh`].
    pub fn set_revalidate_after(&self, after: Option<std::time::Duration>) {
        self.fetch.fresh.set(after);
    }

    /// Unflushed objects and their bytes.
    pub fn dirty(&self) -> (usize, u64) {
        let p = self.pending();
        (p.map.len(), p.map.values().map(|p| p.info.size).sum())
    }

    /// Age in seconds of the oldest unflushed write (the flush lag; 0 when nothing is dirty).
    pub fn flush_lag_secs(&self) -> f64 {
        let oldest = self.pending().map.values().map(|p| p.info.mtime_ns).min();
        oldest.map_or(0.0, |t| now_ns().saturating_sub(t) as f64 / 1e9)
    }

    /// An explicit flush (`reo admin flush`): everything written so far is flushed now, the flush
    /// delay notwithstanding, and the flusher retries at once.
    pub fn flush_now(&self) {
        self.flush_before_ns.fetch_max(now_ns(), std::sync::atomic::Ordering::Relaxed);
        self.gone.retry_now();
        self.kick_flusher();
    }

    pub(crate) fn kick_flusher(&self) {
        let (m, c) = &self.wake;
        *m.lock() = true;
        c.notify_all();
    }

    /// The current info of an object: unflushed write, else the backend's. Call it holding the
    /// key's stripe, shared ([`Gateway::read_lock`]) or exclusive: a revalidation that finds
    /// another version in the backend drops the cached copy, which must still be the one checked
    /// (unlocked, a write could land in between, and its unflushed copy would be dropped).
    pub fn head(&self, bucket: &str, key: &str) -> S3Result<ObjectInfo> {
        let ck = cache_key(bucket, key);
        if let Some(p) = self.pending().map.get(&ck) {
            if p.deleted {
                return Err(s3_error!(NoSuchKey, "{key} was deleted"));
            }
            return Ok(p.info.clone());
        }
        // A cached object's metadata is in its blob header (DRAM): no backend round trip, unless
        // revalidation is due (clean objects only: a dirty one is newer than the backend's).
        if let (Some(m), Some(i)) = (self.cache.meta(ck.as_bytes()), self.cache.info(ck.as_bytes())) {
            if !m.etag.is_empty() {
                let cached = super::object_meta::info_of(i.size, m);
                return if i.dirty { Ok(cached) } else { self.revalidate(bucket, key, &ck, cached) };
            }
        }
        self.backend.head(bucket, key).map_err(backend_err)
    }
}
