//! [`IncomingPut`]: where a PUT's body goes while it arrives. A write-back PUT of a declared
//! size streams into the cache ([`reo_cache::StreamedPut`]: its fragments land on flash as they
//! arrive, the object appears whole once its digests are checked and it is recorded); the other
//! paths hand the backend a whole object, so their body is collected, counted in the memory
//! budget ([`crate::body::Collected`]).
//!
//! Everything a PUT can be refused for without its body — the key, the bucket's policy and
//! scope, the dirty budget, the backend failing — is checked by [`Gateway::incoming_put`]
//! before the first byte is read, and again when the write is stored.

use std::sync::Arc;

use reo_cache::{StreamedPut, WriteError};
use s3s::{s3_error, S3Result};

use super::pending::cache_key;
use super::policy::WritePolicy;
use super::write::Payload;
use super::{now_ns, Gateway};
use crate::backend::ObjectInfo;
use crate::body::{BodySink, Collected};
use crate::budget::MemoryBudget;

/// See the module doc.
pub enum IncomingPut {
    /// Write-back: in the cache as it arrives.
    Staged(StreamedPut),
    /// Collected for the backend.
    Collected(Collected),
}

impl BodySink for IncomingPut {
    fn piece_len(&self) -> usize {
        match self {
            IncomingPut::Staged(p) => p.fragment_len(),
            IncomingPut::Collected(c) => c.piece_len(),
        }
    }

    fn next_in_memory(&self) -> bool {
        match self {
            IncomingPut::Staged(p) => p.next_is_kept(),
            IncomingPut::Collected(_) => true,
        }
    }

    fn kept(&self) -> usize {
        match self {
            // The first fragment, written last ([`StreamedPut`]).
            IncomingPut::Staged(p) => p.fragment_len(),
            IncomingPut::Collected(_) => 0,
        }
    }

    fn write(&mut self, piece: &[u8]) -> S3Result<()> {
        match self {
            IncomingPut::Staged(p) => p.push(piece).map_err(|e| match e {
                WriteError::TooLarge(m) => s3_error!(IncompleteBody, "the body is not the size it declared: {m}"),
                WriteError::Full(m) => s3_error!(SlowDown, "the cache has no room for more unflushed writes ({m})"),
                e => s3_error!(ServiceUnavailable, "flash write failed: {e}"),
            }),
            IncomingPut::Collected(c) => c.write(piece),
        }
    }
}

/// Room left in a blob header's metadata for the checksum a body adds once it is verified.
const CHECKSUM_ROOM: usize = 128;

/// Whether `meta`'s metadata fit a blob header (else the cache refuses the object, which is then
/// written around it: known before the body, so it is not streamed into the cache first).
fn fits_blob_header(meta: &ObjectInfo) -> bool {
    let bytes =
        |m: &std::collections::BTreeMap<String, String>| m.iter().map(|(k, v)| k.len() + v.len()).sum::<usize>();
    let (user, system) = (bytes(&meta.user_meta), bytes(&meta.system) + CHECKSUM_ROOM);
    let max = reo_cache::header::MAX_USER_META;
    user <= max && system <= max && meta.user_meta.len() < 255 && meta.system.len() < 250
}

impl Gateway {
    /// Where the body of a PUT of `key` (of `size` bytes, if declared, with the metadata of
    /// `meta`) goes; see the module doc. A collected body may hold at most `limit` bytes.
    pub fn incoming_put(
        &self,
        bucket: &str,
        key: &str,
        meta: &ObjectInfo,
        size: Option<u64>,
        budget: &Arc<MemoryBudget>,
        limit: u64,
    ) -> S3Result<IncomingPut> {
        self.check_target(key)?;
        let dirty_limit = self.dirty_limit.load(std::sync::atomic::Ordering::Relaxed);
        let policy = self.policy(bucket, key)?;
        if let (WritePolicy::WriteBack, Some(size)) = (policy, size) {
            if size <= dirty_limit.min(limit) && fits_blob_header(meta) {
                self.check_dirty_room(size)?;
                match self.cache.start_put(cache_key(bucket, key).as_bytes(), size, now_ns()) {
                    Ok(p) => return Ok(IncomingPut::Staged(p)),
                    // Larger than the cache: write-around, collected.
                    Err(WriteError::TooLarge(_)) => {}
                    Err(e) => return Err(s3_error!(ServiceUnavailable, "flash write failed: {e}")),
                }
            }
        }
        Collected::new(budget.reserve(), size.unwrap_or(0), limit).map(IncomingPut::Collected)
    }

    /// Stores a PUT whose body `incoming` received (and whose digests the caller checked), if
    /// `check` accepts the key's current object (see [`Gateway::put_if`]); `info.etag` is the
    /// body's MD5.
    pub fn put_incoming<F>(
        &self,
        bucket: &str,
        key: &str,
        incoming: IncomingPut,
        info: ObjectInfo,
        check: Option<F>,
    ) -> S3Result<ObjectInfo>
    where
        F: FnOnce(Option<&ObjectInfo>) -> S3Result<()>,
    {
        match incoming {
            IncomingPut::Staged(p) => self.store_if(bucket, key, Payload::Staged(p), info, check),
            IncomingPut::Collected(c) => self.store_if(bucket, key, Payload::Bytes(c.bytes()), info, check),
        }
    }
}
