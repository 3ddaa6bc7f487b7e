//! Hints for the backend (`target: backend`): what an application tells the store behind the
//! cache, forwarded by the hint engine through [`super::Backend::advise`]. An [`Address`] (key,
//! prefix or byte range of a key) and an [`Advice`] go in; an [`AdviceReport`] (what was done, to
//! how many objects and bytes) comes out. What each advice does is the backend's to say:
//!
//! | advice | local directory | S3 |
//! |---|---|---|
//! | `WillNeed` (prefetch, open) | `posix_fadvise(WILLNEED)`: the kernel reads the range into the page cache | HEAD: the object exists (objects and bytes reported); S3 has no read-ahead to ask for |
//! | `Pin` | `WILLNEED` once at the lease start; the page cache has no pins (nothing is locked) | HEAD, as `WillNeed` |
//! | `Unpin` | nothing to undo (reported) | HEAD only (validates the address) |
//! | `DontNeed` (evict, close) | `posix_fadvise(DONTNEED)`: the file's clean pages leave the page cache | HEAD only; S3 keeps no cache to drop |

use serde::{Deserialize, Serialize};

use super::{BResult, Backend, BackendError};

/// Most keys one prefix address covers.
pub const PREFIX_LIMIT: usize = 10_000;

/// What a backend hint addresses within a bucket.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Address {
    /// One key.
    Key(String),
    /// Every key starting with it (at most [`PREFIX_LIMIT`]).
    Prefix(String),
    /// Bytes `[start, end)` of a key.
    Range {
        /// The key.
        key: String,
        /// First byte.
        start: u64,
        /// One past the last byte (above `start`).
        end: u64,
    },
}

/// What a backend hint asks for.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Advice {
    /// The data will be read soon (prefetch, open).
    WillNeed,
    /// The data should stay readable fast during the lease.
    Pin,
    /// The pin's end.
    Unpin,
    /// The data will not be read again soon (evict, close).
    DontNeed,
}

/// What a backend did with a hint.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct AdviceReport {
    /// What was done, e.g. `posix_fadvise(WILLNEED)` or `HEAD (exists)`.
    pub action: String,
    /// Objects it was applied to.
    pub objects: u64,
    /// Bytes of those objects (or ranges).
    pub bytes: u64,
}

impl std::fmt::Display for AdviceReport {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "{} on {} objects, {} bytes", self.action, self.objects, self.bytes)
    }
}

/// One object an address covers: its key, byte range (clamped to the object) and size.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Target {
    /// The object's key.
    pub key: String,
    /// First byte of the range.
    pub start: u64,
    /// One past the last byte, at most the object's size.
    pub end: u64,
}

/// The objects `address` covers in `bucket`: a key or range must exist (`NoSuchKey` otherwise);
/// a prefix covers what the listing finds (possibly nothing).
pub fn resolve(b: &dyn Backend, bucket: &str, address: &Address) -> BResult<Vec<Target>> {
    match address {
        Address::Key(k) => {
            let i = b.head(bucket, k)?;
            Ok(vec![Target { key: k.clone(), start: 0, end: i.size }])
        }
        Address::Range { key, start, end } => {
            if start >= end {
                return Err(BackendError::Invalid(format!("range: start {start} must be below end {end}")));
            }
            let i = b.head(bucket, key)?;
            Ok(vec![Target { key: key.clone(), start: (*start).min(i.size), end: (*end).min(i.size) }])
        }
        Address::Prefix(p) => Ok(b
            .list(bucket, p, "", PREFIX_LIMIT)?
            .into_iter()
            .map(|e| Target { key: e.key, start: 0, end: e.info.size })
            .collect()),
    }
}

/// A report of `action` over `targets`.
pub fn report(action: &str, targets: &[Target]) -> AdviceReport {
    AdviceReport {
        action: action.into(),
        objects: targets.len() as u64,
        bytes: targets.iter().map(|t| t.end - t.start).sum(),
    }
}
