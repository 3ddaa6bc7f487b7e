//! [`Guarded`]: the backend as the request path sees it. Every call's answer goes into the
//! backend's health ([`super::outage`]); while the backend is down, calls fail at once instead
//! of each waiting out the backend's deadline — a hung backend must not turn every miss,
//! listing and bucket check into a stalled request and a blocked thread. The flusher and the
//! prober call the backend itself (they are how the gateway learns it is back).

use std::sync::Arc;

use super::backend_calls::BackendCalls;
use super::outage::BackendHealth;
use crate::backend::{
    Address, Advice, AdviceReport, BResult, Backend, BackendError, BucketInfo, ChunkIter, ListEntry, ObjectInfo,
    ObjectWriter,
};

/// See the module doc.
pub(crate) struct Guarded {
    inner: Arc<dyn Backend>,
    health: Arc<BackendHealth>,
    calls: BackendCalls,
}

impl Guarded {
    pub fn new(inner: Arc<dyn Backend>, health: Arc<BackendHealth>, calls: BackendCalls) -> Guarded {
        Guarded { inner, health, calls }
    }

    /// Calls operation `op` unless the backend is down, timing it and recording its answer.
    fn call<T>(&self, op: &'static str, f: impl FnOnce(&dyn Backend) -> BResult<T>) -> BResult<T> {
        if let Some(e) = self.health.refusal() {
            return Err(e);
        }
        let r = self.calls.time(op, || f(self.inner.as_ref()));
        record(&self.health, &r);
        r
    }
}

/// Records a call's answer in the backend's health.
fn record<T>(health: &BackendHealth, r: &BResult<T>) {
    match r {
        Err(BackendError::Io(m)) => health.record_failure(m),
        // Refused before anything was sent (a name the backend cannot hold), or by a layer
        // over the backend: no answer of the backend's.
        Err(BackendError::Invalid(_) | BackendError::Busy(_)) => {}
        _ => health.record_success(),
    }
}

/// A streamed write whose calls' answers go into the backend's health, as every call's do.
struct GuardedWriter {
    inner: Box<dyn ObjectWriter>,
    health: Arc<BackendHealth>,
}

impl ObjectWriter for GuardedWriter {
    /// A piece may only be buffered (no answer from the backend): only its failure counts.
    fn write(&mut self, piece: bytes::Bytes) -> BResult<()> {
        let r = self.inner.write(piece);
        if r.is_err() {
            record(&self.health, &r);
        }
        r
    }
    fn commit(self: Box<Self>, info: &ObjectInfo) -> BResult<String> {
        let r = self.inner.commit(info);
        record(&self.health, &r);
        r
    }
    fn buffer_limit(&self) -> usize {
        self.inner.buffer_limit()
    }
}

impl Backend for Guarded {
    fn list_buckets(&self) -> BResult<Vec<BucketInfo>> {
        self.call("list_buckets", |b| b.list_buckets())
    }
    fn create_bucket(&self, bucket: &str) -> BResult<()> {
        self.call("create_bucket", |b| b.create_bucket(bucket))
    }
    fn head_bucket(&self, bucket: &str) -> BResult<BucketInfo> {
        self.call("head_bucket", |b| b.head_bucket(bucket))
    }
    fn delete_bucket(&self, bucket: &str) -> BResult<()> {
        self.call("delete_bucket", |b| b.delete_bucket(bucket))
    }
    fn put(&self, bucket: &str, key: &str, data: &[u8], info: &ObjectInfo) -> BResult<()> {
        self.call("put", |b| b.put(bucket, key, data, info))
    }
    fn put_owned(&self, bucket: &str, key: &str, data: bytes::Bytes, info: &ObjectInfo) -> BResult<()> {
        self.call("put", |b| b.put_owned(bucket, key, data, info))
    }
    fn put_stream(self: Arc<Self>, bucket: &str, key: &str, info: &ObjectInfo) -> BResult<Box<dyn ObjectWriter>> {
        let inner = self.call("put", |_| self.inner.clone().put_stream(bucket, key, info))?;
        Ok(Box::new(GuardedWriter { inner, health: self.health.clone() }))
    }
    fn head(&self, bucket: &str, key: &str) -> BResult<ObjectInfo> {
        self.call("head", |b| b.head(bucket, key))
    }
    fn get_range(&self, bucket: &str, key: &str, start: u64, end: u64) -> BResult<(Vec<u8>, ObjectInfo)> {
        self.call("get", |b| b.get_range(bucket, key, start, end))
    }
    fn get_stream(&self, bucket: &str, key: &str, start: u64, end: u64) -> BResult<(ObjectInfo, ChunkIter)> {
        self.call("get", |b| b.get_stream(bucket, key, start, end))
    }
    fn delete(&self, bucket: &str, key: &str) -> BResult<()> {
        self.call("delete", |b| b.delete(bucket, key))
    }
    fn list(&self, bucket: &str, prefix: &str, after: &str, limit: usize) -> BResult<Vec<ListEntry>> {
        self.call("list", |b| b.list(bucket, prefix, after, limit))
    }
    fn check_key(&self, key: &str) -> BResult<()> {
        self.inner.check_key(key)
    }
    fn advise(&self, bucket: &str, address: &Address, advice: Advice) -> BResult<AdviceReport> {
        self.call("advise", |b| b.advise(bucket, address, advice))
    }
    fn probe(&self) -> BResult<()> {
        self.inner.probe()
    }
}
