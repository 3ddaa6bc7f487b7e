//! [`IncomingPut`]: where a PUT's body goes while it arrives. A write-back PUT of a declared
//! size streams into the cache ([`reo_cache::StreamedPut`]: its fragments land on flash as they
//! arrive, the object appears whole once its digests are checked and it is recorded), unless it
//! is no larger than what streaming holds anyway ([`STREAM_HOLD`] fragments). A
//! write-through or write-around PUT streams into the backend ([`crate::backend::ObjectWriter`],
//! committed once its digests are checked) and, if write-through, into a clean copy on flash
//! finished after the backend's commit. A small write-back body, and one of undeclared size
//! (chunked without a decoded length), is collected, counted in the memory budget
//! ([`crate::body::Collected`]).
//!
//! Everything a PUT can be refused for without its body — the key, the bucket's policy and
//! scope, the dirty budget, the backend failing — is checked by [`Gateway::incoming_put`]
//! before the first byte is read, and again when the write is stored.

use std::sync::Arc;

use reo_cache::{StreamedPut, WriteError};
use s3s::{s3_error, S3Result};

use super::clock::now_ns;
use super::dirty_claims::DirtyClaim;
use super::errors::backend_err;
use super::handle::Gateway;
use super::pending::cache_key;
use super::policy::WritePolicy;
use super::write::Payload;
use crate::backend::ObjectInfo;
use crate::body::{BodySink, Collected};
use crate::budget::MemoryBudget;

pub use super::write::BackendPut;

/// See the module doc.
pub enum IncomingPut {
    /// Write-back: in the cache as it arrives, its size claimed in the dirty budget.
    Staged(StreamedPut, DirtyClaim),
    /// Write-through or write-around: in the backend as it arrives.
    Streamed(BackendPut),
    /// Collected whole.
    Collected(Collected),
}

/// Pieces of a body streamed to the backend without a copy on flash.
const BACKEND_PIECE: usize = 1 << 20;

/// Cache fragments a write-back body streamed into the cache holds in memory (the piece read,
/// the piece written, a spare one, the first fragment kept for last). A body no larger is
/// collected instead and written in one go ([`reo_cache::Cache::put`]): the same memory, and
/// no hand-off per fragment while the body arrives, which costs throughput of PUTs of a few MiB
/// when the clients share the gateway's cores (figures in docs/BENCHMARKS.md).
pub const STREAM_HOLD: u64 = 4;

impl BodySink for IncomingPut {
    fn piece_len(&self) -> usize {
        match self {
            IncomingPut::Staged(p, _) => p.fragment_len(),
            IncomingPut::Streamed(b) => b.copy.as_ref().map_or(BACKEND_PIECE, StreamedPut::fragment_len),
            IncomingPut::Collected(c) => c.piece_len(),
        }
    }

    fn next_in_memory(&self) -> bool {
        match self {
            IncomingPut::Staged(p, _) => p.next_is_kept(),
            IncomingPut::Streamed(_) => false,
            IncomingPut::Collected(_) => true,
        }
    }

    fn kept(&self) -> usize {
        match self {
            // The first fragment, written last ([`StreamedPut`]).
            IncomingPut::Staged(p, _) => p.fragment_len(),
            // The copy's first fragment and what the backend's writer gathers (a part).
            IncomingPut::Streamed(b) => {
                b.copy.as_ref().map_or(0, StreamedPut::fragment_len).saturating_add(b.writer.buffer_limit())
            }
            IncomingPut::Collected(_) => 0,
        }
    }

    fn write(&mut self, piece: &[u8]) -> S3Result<()> {
        let flash = |e: WriteError| match e {
            WriteError::TooLarge(m) => s3_error!(IncompleteBody, "the body is not the size it declared: {m}"),
            WriteError::Full(m) => s3_error!(SlowDown, "the cache has no room for more unflushed writes ({m})"),
            e => s3_error!(ServiceUnavailable, "flash write failed: {e}"),
        };
        match self {
            IncomingPut::Staged(p, _) => p.push(piece).map_err(flash),
            IncomingPut::Streamed(b) => {
                b.writer.write(bytes::Bytes::copy_from_slice(piece)).map_err(backend_err)?;
                b.written += piece.len() as u64;
                // A clean copy that fails is only not cached.
                if b.copy.as_mut().is_some_and(|c| c.push(piece).is_err()) {
                    b.copy = None;
                }
                Ok(())
            }
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
        let ck = cache_key(bucket, key);
        if policy == WritePolicy::WriteBack {
            let Some(size) = size else {
                return Collected::new(budget.reserve(), 0, limit).map(IncomingPut::Collected);
            };
            if size <= dirty_limit.min(limit) && fits_blob_header(meta) {
                // No larger than what streaming it would hold: collected, then written at once.
                if size <= STREAM_HOLD * self.cache.config().fragment_size {
                    self.check_dirty_room(size, 0)?;
                    return Collected::new(budget.reserve(), size, limit).map(IncomingPut::Collected);
                }
                let claim = self.dirty_claims.claim(size);
                self.check_dirty_room(size, size)?;
                match self.cache.start_put(ck.as_bytes(), size, now_ns()) {
                    Ok(p) => return Ok(IncomingPut::Staged(p, claim)),
                    // Larger than the cache: write-around.
                    Err(WriteError::TooLarge(_)) => {}
                    Err(e) => return Err(s3_error!(ServiceUnavailable, "flash write failed: {e}")),
                }
            }
        }
        if size.is_some_and(|n| n > limit) {
            return Err(s3_error!(EntityTooLarge, "the body exceeds this gateway's limit of {limit} bytes"));
        }
        let opened = ObjectInfo { size: size.unwrap_or(0), ..meta.clone() };
        let writer = self.backend.clone().put_stream(bucket, key, &opened).map_err(backend_err)?;
        let copy = match (policy, size) {
            (WritePolicy::WriteThrough, Some(size)) if fits_blob_header(meta) => {
                self.cache.start_clean_put(ck.as_bytes(), size, now_ns())
            }
            _ => None,
        };
        Ok(IncomingPut::Streamed(BackendPut { writer, copy, written: 0 }))
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
            IncomingPut::Staged(p, c) => self.store_if(bucket, key, Payload::Staged(p, c), info, check),
            IncomingPut::Streamed(b) => self.store_if(bucket, key, Payload::Streamed(b), info, check),
            IncomingPut::Collected(c) => self.store_if(bucket, key, Payload::Bytes(c.bytes()), info, check),
        }
    }
}
