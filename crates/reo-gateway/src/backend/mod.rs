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
pub mod s3;
#[cfg(test)]
mod tests;
mod workers;
pub mod writer;

use std::collections::BTreeMap;
use std::fmt;
use std::sync::Arc;

pub use advice::{Address, Advice, AdviceReport};
use bytes::Bytes;

pub use list::{ListPage, ListQuery};
pub use local::LocalBackend;
pub use s3::S3Backend;
pub use writer::ObjectWriter;

/// What a backend keeps about an object besides its bytes.
#[derive(Debug, Clone, Default, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
pub struct ObjectInfo {
    /// The object's size in bytes.
    pub size: u64,
    /// The S3 ETag without quotes: hex MD5, or `hex-N` for multipart uploads.
    pub etag: String,
    /// The `Content-Type` it was stored with.
    pub content_type: String,
    /// `x-amz-meta-*` user metadata (names without the prefix, lower case).
    pub user_meta: BTreeMap<String, String>,
    /// Last modification, nanoseconds since the Unix epoch.
    pub mtime_ns: u64,
    /// Standard headers and the checksum the client sent, by lower-case header name
    /// ([`SYSTEM_HEADERS`], `x-amz-checksum-*`). Absent in records written before they were kept.
    #[serde(default, skip_serializing_if = "BTreeMap::is_empty")]
    pub system: BTreeMap<String, String>,
}

/// The standard object headers an object keeps and returns as it got them (besides
/// `Content-Type`, which has its own field).
pub const SYSTEM_HEADERS: [&str; 7] = [
    "cache-control",
    "content-disposition",
    "content-encoding",
    "content-language",
    "expires",
    "x-amz-website-redirect-location",
    "x-amz-storage-class",
];

/// One entry of a listing.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ListEntry {
    /// The object's key.
    pub key: String,
    /// What the backend keeps about it.
    pub info: ObjectInfo,
}

/// A bucket and its creation time (ns since the epoch).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct BucketInfo {
    /// The bucket's name.
    pub name: String,
    /// When it was created, nanoseconds since the Unix epoch.
    pub created_ns: u64,
}

/// Why a backend operation failed.
#[derive(Debug)]
#[non_exhaustive]
pub enum BackendError {
    /// The bucket (named) does not exist.
    NoSuchBucket(String),
    /// The key (named) does not exist.
    NoSuchKey(String),
    /// The bucket (named) already exists.
    BucketExists(String),
    /// The bucket (named) still holds objects.
    BucketNotEmpty(String),
    /// A key or bucket name the backend cannot hold (the message says why).
    Invalid(String),
    /// A conditional request's condition failed (the message says which).
    Precondition(String),
    /// The backend's own I/O failed, or the backend is unreachable (retryable).
    Io(String),
}

impl fmt::Display for BackendError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            BackendError::NoSuchBucket(b) => write!(f, "bucket {b:?} does not exist"),
            BackendError::NoSuchKey(k) => write!(f, "key {k:?} does not exist"),
            BackendError::BucketExists(b) => write!(f, "bucket {b:?} already exists"),
            BackendError::BucketNotEmpty(b) => write!(f, "bucket {b:?} is not empty"),
            BackendError::Invalid(m) | BackendError::Precondition(m) => write!(f, "{m}"),
            BackendError::Io(m) => write!(f, "backend I/O error: {m}"),
        }
    }
}

impl std::error::Error for BackendError {}

impl From<crate::keys::NameError> for BackendError {
    fn from(e: crate::keys::NameError) -> Self {
        BackendError::Invalid(e.to_string())
    }
}

/// The result of a backend call.
pub type BResult<T> = Result<T, BackendError>;

/// The bytes of a streamed read, in order. Each item is one chunk; an `Err` ends the stream (the
/// read failed part-way). Consumed on a blocking thread: `next` may block on I/O.
pub type ChunkIter = Box<dyn Iterator<Item = BResult<Bytes>> + Send>;

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
    /// Default: [`writer::Buffered`] (the pieces collected, then [`Backend::put_owned`]).
    fn put_stream(self: Arc<Self>, bucket: &str, key: &str, info: &ObjectInfo) -> BResult<Box<dyn ObjectWriter>> {
        let _ = info;
        self.head_bucket(bucket)?;
        Ok(Box::new(writer::Buffered::new(self, bucket, key)))
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
