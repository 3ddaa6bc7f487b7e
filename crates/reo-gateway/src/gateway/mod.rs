//! [`Gateway`]: the data path between the S3 layer and the backend, with the flash cache in it.
//!
//! * Writes follow the key's [`policy`] (write-back by default). Write-back: the object goes to the cache as dirty (durable on flash before the
//!   200) with its metadata in [`pending`]; the [`flusher`] writes it to the backend and marks it
//!   clean. Writes get `503 SlowDown` when the dirty budget is exhausted (`WriteError::Full`
//!   too) or the backend has been down too long ([`outage`]); an object too large for the cache
//!   goes straight to the backend (write-around).
//! * Reads: metadata from the pending map (unflushed writes), the cache (optionally revalidated
//!   against the backend: [`fresh`]) or the backend; bytes from flash. GET streams ([`stream`]):
//!   missing fragments come from single-flight backend fetches ([`flight`], [`fetch`]) that reach
//!   the client as they arrive and are offered to the cache when complete. [`Gateway::read`] (copy,
//!   range prefetch) is the buffered form: missing fragments fetched and offered back with `fill`.
//! * Deletes go to the pending map, the cache and the backend, under the key's stripe lock, which
//!   also serializes them with the flusher (a flush never resurrects a deleted object). Reads hold
//!   the stripe shared ([`Gateway::read_lock`]): metadata and bytes are of one version.
//! * Listings merge the backend's keys with the unflushed ones.
//!
//! Every method blocks (device and backend I/O); the S3 layer runs them on tokio's blocking pool.
//!
//! Locks, in the order they are taken (a thread holding one takes only those below it):
//!
//! 0. a multipart upload's lock ([`multipart::Uploads::lock`]): one completion or abort of an
//!    upload at a time, held across the completed object's whole write (everything below).
//! 1. a key's stripe (`stripes`): one at a time, or two in key order ([`crate::hints::reorganize`],
//!    which skips the second when both keys share it). Held across backend calls and device I/O.
//! 2. the hint engine's hint store: under it only the cache's lock (unpin) and the engine's
//!    counters; never taken under a stripe, nor a stripe under it.
//! 3. the flights registry, then a flight's state (the streaming miss path, under a stripe).
//! 4. leaves, each released before any other lock is taken: the pending map (never across I/O
//!    but the unlink of a record: records are written and fsync'ed outside it, under the key's
//!    stripe, so a HEAD does not wait for a PUT's fsync; see [`pending`]), the counters, the backend's health, the flusher's wake
//!    mutex (kicked under a stripe; the flusher waits on it holding nothing), the policy rules,
//!    the revalidation ages, the bucket guards ([`buckets`]), the missing buckets ([`stuck`]), and the cache's own lock (every
//!    `reo_cache` call; the cache calls nothing back).
//!
//! A guard must not outlive its statement into code that locks again: `for`, `match`, `if let` and
//! `while let` keep their scrutinee's temporaries (a `self.pending()` guard) to the end of the
//! construct, `else` included (edition 2021). Take what is needed into a local first.

mod buckets;
mod complete;
#[cfg(test)]
mod complete_tests;
#[cfg(test)]
pub(crate) mod counting;
pub mod errors;
mod fetch;
pub(crate) mod flight;
pub mod flusher;
pub mod fresh;
pub mod multipart;
pub mod outage;
pub mod pending;
pub mod policy;
#[cfg(test)]
mod race_tests;
mod read;
mod recover;
pub mod stream;
#[cfg(test)]
mod stream_tests;
pub mod stuck;
#[cfg(test)]
mod stuck_tests;
#[cfg(test)]
pub(crate) mod tests;

use std::path::Path;
use std::sync::{Arc, Condvar, Mutex, MutexGuard, RwLock, RwLockReadGuard, RwLockWriteGuard};

use md5::{Digest, Md5};
use reo_cache::{Cache, ObjectMeta, WriteError};
use s3s::{s3_error, S3Result};

use crate::backend::{Backend, ListEntry, ListPage, ListQuery, ObjectInfo};
use errors::backend_err;
use pending::{cache_key, Pending, PendingPut};
use policy::{PolicyRule, WritePolicy};

const STRIPES: usize = 256;

/// Counters for `/metrics`.
#[derive(Debug, Default, Clone, Copy, serde::Serialize)]
pub struct GatewayCounters {
    pub flushed_objects: u64,
    pub flushed_bytes: u64,
    pub flush_errors: u64,
    pub write_around: u64,
    /// Write-back deletes applied in the backend by the flusher.
    pub flushed_deletes: u64,
    pub slowdowns: u64,
    pub backend_reads: u64,
}

/// The gateway's data path.
pub struct Gateway {
    pub backend: Arc<dyn Backend>,
    pub cache: Arc<Cache>,
    pub(crate) pending: Mutex<Pending>,
    /// The pending map's record files, written outside its mutex ([`pending::Records`]).
    pub(crate) records: pending::Records,
    /// Per-key ordering: writers (put, delete, the flusher) hold a stripe exclusively, readers
    /// (metadata + bytes of one GET) shared, so a read never mixes two versions.
    stripes: Vec<RwLock<()>>,
    /// Wakes the flusher (a write arrived) / signals shutdown.
    pub(crate) wake: (Mutex<bool>, Condvar),
    pub(crate) counters: Mutex<GatewayCounters>,
    pub(crate) uploads: multipart::Uploads,
    pub(crate) stopping: std::sync::atomic::AtomicBool,
    /// Minimum age (ns) of an unflushed object before the flusher writes it (coalesces rewrites).
    pub(crate) flush_delay_ns: std::sync::atomic::AtomicU64,
    /// Objects written up to this time (ns) are flushed regardless of the delay ([`Gateway::flush_now`]).
    pub(crate) flush_before_ns: std::sync::atomic::AtomicU64,
    /// Unflushed bytes beyond which writes get 503 SlowDown (the high watermark).
    pub(crate) dirty_limit: std::sync::atomic::AtomicU64,
    rules: RwLock<Vec<PolicyRule>>,
    /// Whether the backend is down (the flusher decides) and the buckets known to exist.
    pub health: outage::BackendHealth,
    /// The streaming miss path's shared state (flights, revalidation ages).
    pub(crate) fetch: fetch::FetchCtx,
    /// Orders bucket deletions with the object writes into the bucket ([`buckets`]).
    buckets: buckets::BucketGuards,
    /// Buckets found missing in the backend by the flusher, their objects stuck ([`stuck`]).
    pub(crate) gone: stuck::GoneBuckets,
    /// Fetches of at most this many bytes are collected for the cache ([`Gateway::max_fill`]).
    max_fill: std::sync::atomic::AtomicU64,
}

pub(crate) fn now_ns() -> u64 {
    crate::backend::local::now_ns()
}

/// The cache's metadata of an object.
fn meta_of(info: &ObjectInfo) -> ObjectMeta {
    ObjectMeta {
        etag: info.etag.clone(),
        content_type: info.content_type.clone(),
        mtime_ns: info.mtime_ns,
        user: info.user_meta.clone().into_iter().collect(),
    }
}

impl Gateway {
    /// A gateway over `cache` and `backend`, its unflushed state in `state_dir` (pending
    /// metadata, multipart staging). Unflushed objects of a previous run are picked up.
    pub fn open(backend: Arc<dyn Backend>, cache: Arc<Cache>, state_dir: &Path) -> Result<Arc<Gateway>, String> {
        let mut pending =
            Pending::open(&state_dir.join("pending")).map_err(|e| format!("{}: {e}", state_dir.display()))?;
        let uploads = multipart::Uploads::open(&state_dir.join("uploads"))
            .map_err(|e| format!("{}: {e}", state_dir.display()))?;
        recover::reconcile(&mut pending, &cache);
        let dirty_limit = cache.config().capacity_bytes / 2;
        let max_fill = (cache.config().capacity_bytes / 4).min(256 << 20);
        let fetch = fetch::FetchCtx {
            backend: backend.clone(),
            cache: cache.clone(),
            flights: Default::default(),
            fresh: Default::default(),
        };
        let records = pending.records.clone();
        Ok(Arc::new(Gateway {
            backend,
            cache,
            records,
            pending: Mutex::new(pending),
            stripes: (0..STRIPES).map(|_| RwLock::new(())).collect(),
            wake: (Mutex::new(false), Condvar::new()),
            counters: Mutex::new(GatewayCounters::default()),
            uploads,
            stopping: Default::default(),
            flush_delay_ns: Default::default(),
            flush_before_ns: Default::default(),
            // Half the cache: room is left for cleaning (rewriting flushed objects clean).
            dirty_limit: std::sync::atomic::AtomicU64::new(dirty_limit),
            rules: RwLock::new(Vec::new()),
            health: Default::default(),
            fetch,
            buckets: Default::default(),
            gone: Default::default(),
            max_fill: std::sync::atomic::AtomicU64::new(max_fill),
        }))
    }

    fn stripe_of(&self, ckey: &str) -> &RwLock<()> {
        let h = Md5::digest(ckey.as_bytes());
        &self.stripes[h[0] as usize % STRIPES]
    }

    /// Whether two keys share a stripe lock (taking both would deadlock).
    pub(crate) fn same_stripe(&self, a: &str, b: &str) -> bool {
        std::ptr::eq(self.stripe_of(a), self.stripe_of(b))
    }

    pub(crate) fn stripe(&self, ckey: &str) -> RwLockWriteGuard<'_, ()> {
        self.stripe_of(ckey).write().unwrap_or_else(|e| e.into_inner())
    }

    /// Hold while reading an object's metadata and bytes: no write of the key lands meanwhile.
    pub fn read_lock(&self, bucket: &str, key: &str) -> RwLockReadGuard<'_, ()> {
        self.stripe_of(&cache_key(bucket, key)).read().unwrap_or_else(|e| e.into_inner())
    }

    pub(crate) fn pending(&self) -> MutexGuard<'_, Pending> {
        self.pending.lock().unwrap_or_else(|e| e.into_inner())
    }

    /// Unflushed objects wait at least `d` before the flusher writes them (default 0).
    pub fn set_flush_delay(&self, d: std::time::Duration) {
        self.flush_delay_ns.store(d.as_nanos() as u64, std::sync::atomic::Ordering::Relaxed);
    }

    /// Replaces the write-policy rules (see [`policy`]).
    pub fn set_policies(&self, rules: Vec<PolicyRule>) {
        *self.rules.write().unwrap_or_else(|e| e.into_inner()) = rules;
    }

    /// The write policy of a key about to be written or deleted; read-only scopes are refused.
    pub fn policy(&self, bucket: &str, key: &str) -> S3Result<WritePolicy> {
        let p = policy::policy_of(&self.rules.read().unwrap_or_else(|e| e.into_inner()), bucket, key);
        if p == WritePolicy::ReadOnly {
            return Err(s3_error!(AccessDenied, "{bucket}/{key} is read-only by this gateway's write policy"));
        }
        Ok(p)
    }

    /// Unflushed bytes beyond which writes get `503 SlowDown`.
    pub fn set_dirty_limit(&self, bytes: u64) {
        self.dirty_limit.store(bytes, std::sync::atomic::Ordering::Relaxed);
    }

    pub fn counters(&self) -> GatewayCounters {
        let mut c = *self.counters.lock().unwrap_or_else(|e| e.into_inner());
        c.backend_reads += self.fetch.flights.fetches.load(std::sync::atomic::Ordering::Relaxed);
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
        *m.lock().unwrap_or_else(|e| e.into_inner()) = true;
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
                let cached = ObjectInfo {
                    size: i.size,
                    etag: m.etag,
                    content_type: m.content_type,
                    user_meta: m.user.into_iter().collect(),
                    mtime_ns: m.mtime_ns,
                };
                return if i.dirty { Ok(cached) } else { self.revalidate(bucket, key, &ck, cached) };
            }
        }
        self.backend.head(bucket, key).map_err(backend_err)
    }

    /// Stores a whole object (write-back; write-around if the cache cannot hold it).
    pub fn put(&self, bucket: &str, key: &str, data: &[u8], info: ObjectInfo) -> S3Result<ObjectInfo> {
        self.put_if(bucket, key, data, info, None::<fn(Option<&ObjectInfo>) -> S3Result<()>>)
    }

    /// [`Gateway::put`], but only if `check` accepts the object's current info (`None`: there is
    /// no such object), looked up under the key's stripe lock, which the write then holds: no
    /// other write of the key lands between the check and the write (a conditional PUT is
    /// atomic), and the lookup's revalidation ([`Gateway::head`]) cannot drop a copy written
    /// meanwhile.
    pub fn put_if<F>(
        &self,
        bucket: &str,
        key: &str,
        data: &[u8],
        mut info: ObjectInfo,
        check: Option<F>,
    ) -> S3Result<ObjectInfo>
    where
        F: FnOnce(Option<&ObjectInfo>) -> S3Result<()>,
    {
        crate::keys::validate_key(key).map_err(|m| {
            use s3s::S3ErrorCode::{InvalidArgument, KeyTooLongError};
            s3s::S3Error::with_message(
                if key.len() > crate::keys::MAX_KEY_LEN { KeyTooLongError } else { InvalidArgument },
                m,
            )
        })?;
        // Refused now rather than acknowledged and then never flushable.
        self.backend.check_key(key).map_err(backend_err)?;
        // Held from the bucket check until the write is recorded ([`buckets`]).
        let _writing = self.buckets.begin_write(bucket)?;
        self.check_bucket(bucket)?;
        info.size = data.len() as u64;
        info.mtime_ns = now_ns();
        if info.etag.is_empty() {
            info.etag = crate::keys::md5_hex(data);
        }
        let ck = cache_key(bucket, key);
        // policy() refuses read-only scopes.
        let policy = self.policy(bucket, key)?;
        let _g = self.stripe(&ck);
        if let Some(check) = check {
            match self.head(bucket, key) {
                Ok(cur) => check(Some(&cur))?,
                Err(e) if *e.code() == s3s::S3ErrorCode::NoSuchKey => check(None)?,
                Err(e) => return Err(e),
            }
        }
        let limit = self.dirty_limit.load(std::sync::atomic::Ordering::Relaxed);
        match policy {
            WritePolicy::WriteAround => return self.write_around(bucket, key, &ck, data, info),
            WritePolicy::WriteThrough => return self.write_through(bucket, key, &ck, data, info),
            WritePolicy::WriteBack | WritePolicy::ReadOnly if info.size > limit => {
                return self.write_around(bucket, key, &ck, data, info)
            }
            WritePolicy::WriteBack | WritePolicy::ReadOnly => {}
        }
        if let Some(why) = self.health.slowdown_reason() {
            self.counters.lock().unwrap_or_else(|e| e.into_inner()).slowdowns += 1;
            return Err(s3_error!(SlowDown, "{why}"));
        }
        if self.dirty().1 + info.size > limit {
            self.counters.lock().unwrap_or_else(|e| e.into_inner()).slowdowns += 1;
            return Err(s3_error!(
                SlowDown,
                "{limit} bytes of writes are waiting for the backend (the dirty budget); retry later"
            ));
        }
        let mut pp =
            PendingPut { bucket: bucket.into(), key: key.into(), info: info.clone(), version: 0, deleted: false };
        // Durable before the cache put, so before the 200; not under the pending mutex (an
        // fsync would hold up every HEAD and GET), the key's stripe orders it.
        self.records.persist(&pp).map_err(|e| s3_error!(InternalError, "cannot record the write: {e}"))?;
        match self.cache.put(ck.as_bytes(), data, &meta_of(&info), true, now_ns()) {
            Ok(r) => {
                pp.version = r.version;
                self.pending().map.insert(ck, pp);
                self.kick_flusher();
                Ok(info)
            }
            Err(WriteError::Full(m)) => {
                self.forget_pending(&ck);
                self.counters.lock().unwrap_or_else(|e| e.into_inner()).slowdowns += 1;
                Err(s3_error!(SlowDown, "the cache has no room for more unflushed writes ({m}); retry later"))
            }
            Err(WriteError::TooLarge(_)) => {
                self.forget_pending(&ck);
                self.write_around(bucket, key, &ck, data, info)
            }
            Err(e) => {
                self.forget_pending(&ck);
                Err(s3_error!(ServiceUnavailable, "flash write failed: {e}"))
            }
        }
    }

    /// Write-through: the backend first, then a clean copy on flash. The caller holds the key's
    /// stripe lock. The backend goes first so that a failed write leaves everything as it was,
    /// an unflushed earlier version included (it was acknowledged; it must not be dropped).
    fn write_through(&self, bucket: &str, key: &str, ck: &str, data: &[u8], info: ObjectInfo) -> S3Result<ObjectInfo> {
        self.backend.put(bucket, key, data, &info).map_err(backend_err)?;
        self.pending().remove(ck);
        if self.cache.put(ck.as_bytes(), data, &meta_of(&info), false, now_ns()).is_err() {
            self.cache.delete(ck.as_bytes()); // no stale copy stays behind
        }
        Ok(info)
    }

    /// Write-around (objects larger than the dirty budget or the cache): the backend gets it now;
    /// the cache drops any older copy. The caller holds the key's stripe lock. As in
    /// [`Gateway::write_through`], the backend goes first: a failed write drops nothing.
    fn write_around(&self, bucket: &str, key: &str, ck: &str, data: &[u8], info: ObjectInfo) -> S3Result<ObjectInfo> {
        self.backend.put(bucket, key, data, &info).map_err(backend_err)?;
        self.pending().remove(ck);
        self.cache.delete(ck.as_bytes());
        self.counters.lock().unwrap_or_else(|e| e.into_inner()).write_around += 1;
        Ok(info)
    }

    /// Removes the pending record of `ck` (its file too) unless a newer write holds it.
    /// The caller holds the key's stripe lock.
    fn forget_pending(&self, ck: &str) {
        let mut p = self.pending();
        match p.map.get(ck).cloned() {
            Some(old) => {
                // An older acknowledged write is still pending: rewrite its record (outside the
                // pending mutex, as every record write).
                drop(p);
                let _ = self.records.persist(&old);
            }
            None => p.remove(ck),
        }
    }

    /// Deletes an object (missing objects are fine, as in S3). Under write-back the delete is
    /// recorded durably (a tombstone in the pending map) and the flusher deletes it in the
    /// backend, so deletes work while the backend is down; otherwise the backend deletes now.
    pub fn delete(&self, bucket: &str, key: &str) -> S3Result<()> {
        let policy = self.policy(bucket, key)?;
        let ck = cache_key(bucket, key);
        // Held from the bucket check until the delete is recorded ([`buckets`]).
        let _writing = self.buckets.begin_write(bucket)?;
        if policy != WritePolicy::WriteBack {
            self.backend.head_bucket(bucket).map_err(backend_err)?;
            let _g = self.stripe(&ck);
            // The backend first: a failed delete leaves an unflushed (acknowledged) version alone.
            self.backend.delete(bucket, key).map_err(backend_err)?;
            self.pending().remove(&ck);
            self.cache.delete(ck.as_bytes());
            return Ok(());
        }
        self.check_bucket(bucket)?;
        let _g = self.stripe(&ck);
        let info = ObjectInfo { mtime_ns: now_ns(), ..Default::default() };
        let tomb = PendingPut { bucket: bucket.into(), key: key.into(), info, version: now_ns(), deleted: true };
        self.records.persist(&tomb).map_err(|e| s3_error!(InternalError, "cannot record the delete: {e}"))?;
        self.cache.delete(ck.as_bytes());
        self.pending().map.insert(ck, tomb);
        self.kick_flusher();
        Ok(())
    }

    /// A listing page: the backend's keys merged with unflushed writes.
    pub fn list(&self, bucket: &str, q: &ListQuery) -> S3Result<ListPage> {
        // Pending writes are taken before the backend is listed: one the flusher writes meanwhile
        // is then in both (the pending copy wins), never in neither.
        let (pending, deleted) = {
            let p = self.pending();
            (p.in_bucket(bucket, &q.prefix), p.deleted_in_bucket(bucket, &q.prefix))
        };
        // Without grouping, max-keys + 1 backend entries fill a page (pending writes only add),
        // plus one for each pending delete (each may take one of them away: a page cut short would
        // read as the listing's end); with a delimiter, a page may stand for any number of keys.
        let grouped = q.delimiter.as_deref().is_some_and(|d| !d.is_empty());
        let limit = if grouped { usize::MAX } else { q.max_keys.saturating_add(1).saturating_add(deleted.len()) };
        let mut backend = self.backend.list(bucket, &q.prefix, &q.after, limit).map_err(backend_err)?;
        if !deleted.is_empty() {
            let gone: std::collections::BTreeSet<String> = deleted.into_iter().collect();
            backend.retain(|e| !gone.contains(&e.key));
        }
        if !pending.is_empty() {
            let over: std::collections::BTreeMap<String, ObjectInfo> = pending.into_iter().collect();
            backend.retain(|e| !over.contains_key(&e.key));
            backend.extend(over.into_iter().map(|(key, info)| ListEntry { key, info }));
            backend.sort_by(|a, b| a.key.cmp(&b.key));
        }
        Ok(crate::backend::list::page(backend, q))
    }
}
