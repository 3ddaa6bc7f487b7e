//! What every backend speaks: an object's info ([`ObjectInfo`]), listing and bucket entries,
//! and the errors of backend operations ([`BackendError`], [`BResult`]).

use std::collections::BTreeMap;
use std::fmt;

use bytes::Bytes;

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
    /// A layer over the backend (the cluster) cannot take the call now — this node is fenced, a
    /// failover or hand-over is under way, a peer does not answer (retryable; the message says
    /// why). It says nothing of the backend's own health.
    Busy(String),
}

impl fmt::Display for BackendError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            BackendError::NoSuchBucket(b) => write!(f, "bucket {b:?} does not exist"),
            BackendError::NoSuchKey(k) => write!(f, "key {k:?} does not exist"),
            BackendError::BucketExists(b) => write!(f, "bucket {b:?} already exists"),
            BackendError::BucketNotEmpty(b) => write!(f, "bucket {b:?} is not empty"),
            BackendError::Invalid(m) | BackendError::Precondition(m) | BackendError::Busy(m) => write!(f, "{m}"),
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
