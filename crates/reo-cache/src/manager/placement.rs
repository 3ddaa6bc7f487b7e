//! Hashes of keys and versions: the isolated placement of an object (every fragment of it on one
//! device), the version names the flusher uses, and the ETag tags the index keeps.

use std::hash::{BuildHasher, BuildHasherDefault};

use crate::hash::KeyHasher;

/// The version of an object as the flusher names it: its ETag, size and modification time (what
/// [`PutReceipt::version`](crate::PutReceipt::version) and
/// [`Cache::dirty_keys`](crate::Cache::dirty_keys) give).
pub fn object_version(etag: &str, size: u64, mtime_ns: u64) -> u64 {
    let mut b = Vec::with_capacity(etag.len() + 16);
    b.extend_from_slice(etag.as_bytes());
    b.extend_from_slice(&size.to_le_bytes());
    b.extend_from_slice(&mtime_ns.to_le_bytes());
    placement_of(&b)
}

/// Version tag of an object: a hash of its ETag (S3 ETags change with the content), as blob
/// headers keep it (cut to 255 bytes), so that a tag made from a header after a restart, or from
/// metadata read back from one, is the tag the write made.
pub(crate) fn version_tag(etag: &str) -> u32 {
    placement_of(crate::header::clip(etag.as_bytes())) as u32
}

/// Isolated placement key: all fragments of one object on one device.
pub(crate) fn placement_of(key: &[u8]) -> u64 {
    BuildHasherDefault::<KeyHasher>::default().hash_one(key)
}
