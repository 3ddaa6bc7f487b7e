//! The backend object store behind the gateway: one trait, [`Backend`], in the spirit of
//! `object_store` (whole-object put/get/head/delete/list plus bucket operations), and its
//! implementations as modules: [`local`] (a directory; the embedded default) and [`s3`] (an
//! S3-compatible store through the `object_store` crate).
//!
//! Every method is blocking: the gateway calls backends from tokio's blocking pool and from the
//! flusher thread. Keys reaching a backend have been validated by [`crate::keys::validate_key`].
//!
//! Reads come in two forms: [`Backend::get_range`] (the bytes in one buffer) and
//! [`Backend::get_stream`] (the object's info at once, then the bytes as a blocking iterator of
//! chunks, which the gateway's miss path forwards to clients as they arrive). `get_stream` has a
//! default implementation over `get_range` (one chunk), so a backend only overrides it when it can
//! do better (the local backend reads its file in [`local::STREAM_CHUNK`] pieces).
//!
//! Writes come in two forms too: [`Backend::put`] (a whole object) and [`Backend::put_stream`]
//! (an [`ObjectWriter`] taking the object a piece at a time, visible whole at its commit).

pub mod advice;
#[cfg(test)]
pub(crate) mod conformance;
pub mod deadline;
mod key_index;
pub mod list;
pub mod local;
mod object;
pub mod s3;
#[cfg(test)]
mod tests;
mod workers;
pub mod writer;

use std::sync::Arc;

pub use advice::{Address, Advice, AdviceReport};
use bytes::{Bytes, BytesMut};

pub use list::{ListPage, ListQuery};
pub use local::LocalBackend;
pub use object::{BResult, BackendError, BucketInfo, ChunkIter, ListEntry, ObjectInfo, SYSTEM_HEADERS};
pub use s3::S3Backend;
pub use writer::ObjectWriter;

/// An object store the gateway caches.
pub trait Backend: Send + Sync + 'static {
    /// Every bucket.
    fn list_buckets(&self) -> BResult<Vec<BucketInfo>>;
    /// Creates a bucket; `BucketExists` if it does.
    fn create_bucket(&self, bucket: &str) -> BResult<()>;
    /// The bucket's info; `NoSuchBucket` if it does not exist.
    fn head_bucket(&self, bucket: &str) -> BResult<BucketInfo>;
    /// Fails with `BucketNotEmpty` if it holds objects.
    fn delete_bucket(&self, bucket: &str) -> BResult<()>;
    /// Writes the whole object atomically (readers see the old or the new object, never a mix)
    /// and durably. `info.size` and `info.etag` describe `data`.
    fn put(&self, bucket: &str, key: &str, data: &[u8], info: &ObjectInfo) -> BResult<()>;
    /// [`Backend::put`] of bytes the caller hands over: a backend (or wrapper) that moves the
    /// call to another thread or task takes them without a copy. Default: [`Backend::put`].
    fn put_owned(&self, bucket: &str, key: &str, data: Bytes, info: &ObjectInfo) -> BResult<()> {
        self.put(bucket, key, &data, info)
    }
    /// Opens a writer of `key` ([`writer`]): the object is written a piece at a time and
    /// appears whole at the commit. `info` holds what is known before the body (content type,
    /// user and system metadata; `etag` empty if not known yet). The bucket is checked here.
    ///
    /// Default: [`Buffered`] (the pieces collected, then [`Backend::put_owned`]).
    fn put_stream(self: Arc<Self>, bucket: &str, key: &str, info: &ObjectInfo) -> BResult<Box<dyn ObjectWriter>> {
        let _ = info;
        self.head_bucket(bucket)?;
        Ok(Box::new(Buffered::new(self, bucket, key)))
    }
    /// The object's info without its bytes.
    fn head(&self, bucket: &str, key: &str) -> BResult<ObjectInfo>;
    /// Bytes `[start, end)` (clamped to the object) and the object's info.
    fn get_range(&self, bucket: &str, key: &str, start: u64, end: u64) -> BResult<(Vec<u8>, ObjectInfo)>;
    /// Bytes `[start, end)` (clamped to the object) as a stream of chunks, and the object's info,
    /// known before the first chunk (a missing object or bucket fails here, not in the stream).
    /// The chunks are of the version `info` describes; together they are exactly the range.
    ///
    /// Default: [`Backend::get_range`] as one chunk. Override to stream (bounded memory, the first
    /// bytes reach the client before the last are read).
    fn get_stream(&self, bucket: &str, key: &str, start: u64, end: u64) -> BResult<(ObjectInfo, ChunkIter)> {
        let (data, info) = self.get_range(bucket, key, start, end)?;
        Ok((info, Box::new(std::iter::once(Ok(Bytes::from(data))))))
    }
    /// Deleting a missing key succeeds (S3 semantics).
    fn delete(&self, bucket: &str, key: &str) -> BResult<()>;
    /// Every key of `bucket` starting with `prefix`, sorted by key bytes, strictly after `after`.
    /// At most `limit` entries.
    fn list(&self, bucket: &str, prefix: &str, after: &str, limit: usize) -> BResult<Vec<ListEntry>>;
    /// Whether this backend can store `key` (any key [`crate::keys::validate_key`] accepts unless
    /// the backend says otherwise). Checked before a write is acknowledged, so write-back never
    /// accepts an object the flusher could not write.
    fn check_key(&self, _key: &str) -> BResult<()> {
        Ok(())
    }
    /// Whether the backend answers at all (the prober's question while it is down): `Io` if it
    /// cannot be reached. Default: a bucket listing.
    fn probe(&self) -> BResult<()> {
        self.list_buckets().map(|_| ())
    }
    /// Applies a backend hint (`target: backend`) to the objects `address` covers; what each
    /// [`Advice`] does is the backend's (see [`advice`]). A missing key is `NoSuchKey`.
    fn advise(&self, bucket: &str, address: &Address, advice: Advice) -> BResult<AdviceReport>;
}

/// A writer for a backend that only takes whole objects (see the module doc).
pub struct Buffered<S: Backend + ?Sized> {
    backend: Arc<S>,
    bucket: String,
    key: String,
    data: BytesMut,
}

impl<S: Backend + ?Sized> Buffered<S> {
    /// A writer of `bucket/key` that collects the pieces, then puts them whole.
    pub fn new(backend: Arc<S>, bucket: &str, key: &str) -> Buffered<S> {
        Buffered { backend, bucket: bucket.into(), key: key.into(), data: BytesMut::new() }
    }
}

impl<S: Backend + ?Sized> ObjectWriter for Buffered<S> {
    fn write(&mut self, piece: Bytes) -> BResult<()> {
        self.data.extend_from_slice(&piece);
        Ok(())
    }

    fn commit(self: Box<Self>, info: &ObjectInfo) -> BResult<String> {
        writer::check_size(info, self.data.len() as u64)?;
        let Buffered { backend, bucket, key, data } = *self;
        backend.put_owned(&bucket, &key, data.freeze(), info)?;
        Ok(info.etag.clone())
    }

    fn buffer_limit(&self) -> usize {
        usize::MAX
    }
}
