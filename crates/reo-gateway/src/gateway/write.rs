//! The write paths: PUT (write-back, write-through, write-around) and DELETE, each a state
//! transition that is durable before it is acknowledged and that a crash at any point leaves
//! either undone or done (docs/RELIABILITY.md, "Write-back state", lists the records each writes
//! and in what order).
//!
//! * **Write-back PUT**: the record (with the pending state it replaces as `prev`) is written
//!   and fsync'ed, then the bytes go to the cache as dirty (durable on every device their class
//!   needs), then the map entry. A refused cache write puts the previous record back.
//! * **Write-back DELETE**: the tombstone is written and fsync'ed, then the map entry, then the
//!   cached copy is discarded durably ([`reo_cache::Cache::discard`]: nor may a copy dropped
//!   earlier come back). The flusher applies it in the backend later, and discards the key's
//!   cached copy durably again before it retires the tombstone.
//! * **Write-through / write-around PUT, DELETE outside write-back**: a clean cached copy is
//!   discarded durably *first* (one that outlived the backend's change through a crash would be
//!   served in place of it), then the backend is written; pending state of the key (an unflushed
//!   older write or delete) is retired only after the backend write succeeded
//!   ([`Gateway::write_backend`]).
//!
//! Every path holds the key's stripe lock exclusively; the ones that write the backend also wait
//! for a flush of the key in progress ([`super::flushing`]).

use reo_cache::WriteError;
use s3s::{s3_error, S3Result};

use super::clock::now_ns;
use super::errors::backend_err;
use super::handle::Gateway;
use super::object_meta::meta_of;
use super::pending::{cache_key, PendingPut};
use super::policy::WritePolicy;
use crate::backend::{ObjectInfo, ObjectWriter};

/// A body on its way into the backend, and into a clean copy on flash if write-through
/// ([`super::incoming`] streams it, the write path here commits it).
pub struct BackendPut {
    pub(crate) writer: Box<dyn ObjectWriter>,
    pub(crate) copy: Option<reo_cache::StreamedPut>,
    pub(crate) written: u64,
}

/// The bytes of a write: in memory, staged in the cache as they arrived, or written to the
/// backend as they arrived and not yet committed ([`super::incoming`]).
pub(crate) enum Payload<'a> {
    Bytes(&'a [u8]),
    Staged(reo_cache::StreamedPut, super::dirty_claims::DirtyClaim),
    Streamed(BackendPut),
}

impl Gateway {
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
        info: ObjectInfo,
        check: Option<F>,
    ) -> S3Result<ObjectInfo>
    where
        F: FnOnce(Option<&ObjectInfo>) -> S3Result<()>,
    {
        self.store_if(bucket, key, Payload::Bytes(data), info, check)
    }

    /// Refuses a key the gateway cannot store or its backend cannot take (checked before a body
    /// is read, and again when it is stored).
    pub(crate) fn check_target(&self, key: &str) -> S3Result<()> {
        crate::keys::validate_key(key).map_err(|m| {
            use s3s::S3ErrorCode::{InvalidArgument, KeyTooLongError};
            s3s::S3Error::with_message(
                if key.len() > crate::keys::MAX_KEY_LEN { KeyTooLongError } else { InvalidArgument },
                m.to_string(),
            )
        })?;
        // Refused now rather than acknowledged and then never flushable.
        self.backend.check_key(key).map_err(backend_err)
    }

    /// Refuses a write-back write of `size` more bytes while writes must slow down (the backend
    /// is failing, or the dirty budget is spent: unflushed bytes, and the room claimed by bodies
    /// still arriving, `own` of them by this write's own claim).
    pub(crate) fn check_dirty_room(&self, size: u64, own: u64) -> S3Result<()> {
        if let Some(why) = self.health.slowdown_reason() {
            self.count_slowdown();
            return Err(s3_error!(SlowDown, "{why}"));
        }
        let limit = self.dirty_limit.load(std::sync::atomic::Ordering::Relaxed);
        let claimed = self.dirty_claims.total().saturating_sub(own);
        if self.dirty().1 + claimed + size > limit {
            self.count_slowdown();
            return Err(s3_error!(
                SlowDown,
                "{limit} bytes of writes are waiting for the backend (the dirty budget); retry later"
            ));
        }
        Ok(())
    }

    /// The write of `payload` behind [`Gateway::put_if`] and [`Gateway::put_incoming`]. A body
    /// staged in the cache ([`Payload::Staged`]) can only be stored write-back.
    pub(crate) fn store_if<F>(
        &self,
        bucket: &str,
        key: &str,
        payload: Payload<'_>,
        mut info: ObjectInfo,
        check: Option<F>,
    ) -> S3Result<ObjectInfo>
    where
        F: FnOnce(Option<&ObjectInfo>) -> S3Result<()>,
    {
        self.check_target(key)?;
        // Held from the bucket check until the write is recorded ([`super::buckets`]).
        let _writing = self.buckets.begin_write(bucket)?;
        self.check_bucket(bucket)?;
        let data = match &payload {
            Payload::Bytes(d) => Some(*d),
            Payload::Staged(p, _) => {
                info.size = p.size();
                None
            }
            Payload::Streamed(b) => {
                info.size = b.written;
                None
            }
        };
        if let Some(d) = data {
            info.size = d.len() as u64;
            if info.etag.is_empty() {
                info.etag = crate::keys::md5_hex(d);
            }
        }
        info.mtime_ns = now_ns();
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
        // Written to the backend as it arrived: committed whatever the policy is now (the
        // backend is where every policy's data ends up).
        let payload = match payload {
            Payload::Streamed(b) => return self.commit_streamed(&ck, b, info, policy),
            p => p,
        };
        // A staged body is in the cache only: if the policy changed while it arrived, the client
        // sends it again.
        let whole = || {
            data.ok_or_else(|| s3_error!(SlowDown, "the bucket's write policy changed while the body arrived; retry"))
        };
        let limit = self.dirty_limit.load(std::sync::atomic::Ordering::Relaxed);
        match policy {
            WritePolicy::WriteAround => return self.write_around(bucket, key, &ck, whole()?, info),
            WritePolicy::WriteThrough => return self.write_through(bucket, key, &ck, whole()?, info),
            WritePolicy::WriteBack | WritePolicy::ReadOnly if info.size > limit => {
                return self.write_around(bucket, key, &ck, whole()?, info)
            }
            WritePolicy::WriteBack | WritePolicy::ReadOnly => {}
        }
        let own = match &payload {
            Payload::Staged(_, claim) => claim.bytes(),
            _ => 0,
        };
        self.check_dirty_room(info.size, own)?;
        let (mut pp, prev) = self.record_write(bucket, key, &info)?;
        // A staged body's claim is released at the end, once its bytes count as unflushed.
        let (written, _claim) = match payload {
            Payload::Bytes(d) => (self.cache.put(ck.as_bytes(), d, &meta_of(&info), true, now_ns()), None),
            Payload::Staged(p, claim) => (p.finish(&meta_of(&info), now_ns()), Some(claim)),
            Payload::Streamed(_) => unreachable!("committed above"),
        };
        match written {
            Ok(r) => {
                pp.version = r.version;
                self.pending().map.insert(ck, pp);
                self.kick_flusher();
                Ok(info)
            }
            Err(WriteError::Full(m)) => {
                self.undo_record(&ck, prev);
                self.count_slowdown();
                Err(s3_error!(SlowDown, "the cache has no room for more unflushed writes ({m}); retry later"))
            }
            Err(WriteError::TooLarge(m)) => {
                self.undo_record(&ck, prev);
                match data {
                    Some(d) => self.write_around(bucket, key, &ck, d, info),
                    None => Err(s3_error!(EntityTooLarge, "{m}")),
                }
            }
            Err(e) => {
                self.undo_record(&ck, prev);
                Err(s3_error!(ServiceUnavailable, "flash write failed: {e}"))
            }
        }
    }

    /// The first step of a write-back PUT of `info` (the caller holds the key's stripe): its
    /// record, over the key's current pending state (returned too), written durably. Not under
    /// the pending mutex (an fsync would hold up every HEAD and GET); the stripe orders it.
    pub(crate) fn record_write(
        &self,
        bucket: &str,
        key: &str,
        info: &ObjectInfo,
    ) -> S3Result<(PendingPut, Option<PendingPut>)> {
        let prev = self.pending().map.get(&cache_key(bucket, key)).cloned();
        let pp = PendingPut::write(bucket, key, info.clone(), prev.as_ref());
        self.records.persist(&pp).map_err(|e| s3_error!(InternalError, "cannot record the write: {e}"))?;
        Ok((pp, prev))
    }

    fn count_slowdown(&self) {
        self.counters.lock().slowdowns += 1;
    }

    /// Write-through: the backend first, then a clean copy on flash. The caller holds the key's
    /// stripe lock. The backend goes first so that a failed write leaves everything as it was,
    /// an unflushed earlier version included (it was acknowledged; it must not be dropped).
    fn write_through(&self, bucket: &str, key: &str, ck: &str, data: &[u8], info: ObjectInfo) -> S3Result<ObjectInfo> {
        self.write_backend(ck, || self.backend.put(bucket, key, data, &info))?;
        // A clean copy lost in a crash is only a miss.
        if self.cache.put(ck.as_bytes(), data, &meta_of(&info), false, now_ns()).is_err() {
            self.cache.delete(ck.as_bytes());
        }
        Ok(info)
    }

    /// Commits a body written to the backend as it arrived (write-through or write-around),
    /// then finishes its clean copy on flash, if it has one: the backend first, as for
    /// [`Gateway::write_through`]. The caller holds the key's stripe lock. The ETag is the one
    /// the backend reports from now on ([`crate::backend::ObjectWriter::commit`]).
    fn commit_streamed(
        &self,
        ck: &str,
        put: BackendPut,
        mut info: ObjectInfo,
        policy: WritePolicy,
    ) -> S3Result<ObjectInfo> {
        let BackendPut { writer, copy, .. } = put;
        let mut etag = None;
        self.write_backend(ck, || {
            etag = Some(writer.commit(&info)?);
            Ok(())
        })?;
        info.etag = etag.expect("set by the commit");
        let cached = copy.map(|c| c.finish(&meta_of(&info), now_ns()).is_ok());
        // A clean copy lost in a crash is only a miss; one that failed is dropped.
        if cached == Some(false) {
            self.cache.delete(ck.as_bytes());
        }
        if cached.is_none() && policy != WritePolicy::WriteThrough {
            self.counters.lock().write_around += 1;
        }
        Ok(info)
    }

    /// Write-around (objects larger than the dirty budget or the cache): the backend gets it now;
    /// the cache keeps no copy. The caller holds the key's stripe lock.
    fn write_around(&self, bucket: &str, key: &str, ck: &str, data: &[u8], info: ObjectInfo) -> S3Result<ObjectInfo> {
        self.write_backend(ck, || self.backend.put(bucket, key, data, &info))?;
        self.counters.lock().write_around += 1;
        Ok(info)
    }

    /// A change `call` makes in the backend itself (write-through, write-around, a delete outside
    /// write-back), with the key's stripe held. Without pending state, the cached (clean) copy is
    /// discarded durably first: one that outlived the backend's change through a crash would be
    /// served in its place. With pending state (an unflushed write or delete), the flusher's call
    /// on the key, if any, is waited for, and the pending state is retired — bytes, then record —
    /// only once `call` succeeded: a failure leaves it as it was, and a crash in between leaves
    /// it to be flushed over the change, as if the change (not acknowledged) had not happened.
    pub(crate) fn write_backend(&self, ck: &str, call: impl FnOnce() -> crate::backend::BResult<()>) -> S3Result<()> {
        let discard = || {
            self.cache
                .discard(ck.as_bytes())
                .map_err(|e| s3_error!(ServiceUnavailable, "cannot drop the cached copy durably: {e}"))
        };
        // Refused at once while the backend is down (not after waiting for a flush that will
        // fail too, holding the stripe).
        if let Some(e) = self.health.refusal() {
            return Err(backend_err(e));
        }
        let pending = self.pending().map.contains_key(ck);
        if !pending {
            discard()?;
        }
        self.flushing.wait(ck);
        call().map_err(backend_err)?;
        if pending {
            // The bytes first: a crash before the record's removal leaves a record without bytes
            // (its `prev`, or nothing: the change in flight, or not), never bytes without a
            // record (flushed again with their blob header's cut metadata).
            discard()?;
            self.retire(ck)?;
        }
        Ok(())
    }

    /// Puts the pending state `prev` of `ck` back after a write-back PUT whose bytes were refused
    /// (its record was written). Recovery would restore `prev` from the refused write's record
    /// anyway (its bytes never landed), so a failure here loses nothing; it is logged.
    fn undo_record(&self, ck: &str, prev: Option<PendingPut>) {
        let r = match &prev {
            Some(p) => self.records.persist(p),
            None => self.records.remove(ck),
        };
        if let Err(e) = r {
            tracing::warn!(key = ck, "cannot put the record of the previous state back (restart restores it): {e}");
        }
    }

    /// Forgets the pending state of `ck` (in the backend now, or superseded there): the map entry,
    /// then the record, durably. The caller holds the key's stripe lock.
    pub(crate) fn retire(&self, ck: &str) -> S3Result<()> {
        self.pending().map.remove(ck);
        self.records.remove(ck).map_err(|e| s3_error!(InternalError, "cannot remove the pending record of {ck:?}: {e}"))
    }

    /// Deletes an object (missing objects are fine, as in S3). Under write-back the delete is
    /// recorded durably (a tombstone in the pending map) and the flusher deletes it in the
    /// backend, so deletes work while the backend is down; otherwise the backend deletes now.
    pub fn delete(&self, bucket: &str, key: &str) -> S3Result<()> {
        let policy = self.policy(bucket, key)?;
        let ck = cache_key(bucket, key);
        // Held from the bucket check until the delete is recorded ([`super::buckets`]).
        let _writing = self.buckets.begin_write(bucket)?;
        if policy != WritePolicy::WriteBack {
            self.backend.head_bucket(bucket).map_err(backend_err)?;
            let _g = self.stripe(&ck);
            return self.write_backend(&ck, || self.backend.delete(bucket, key));
        }
        self.check_bucket(bucket)?;
        let _g = self.stripe(&ck);
        let tomb = PendingPut::tombstone(bucket, key, now_ns());
        self.records.persist(&tomb).map_err(|e| s3_error!(InternalError, "cannot record the delete: {e}"))?;
        // The tombstone is durable: from here the key reads as deleted, across crashes too
        // (recovery drops whatever the cache holds of a tombstoned key).
        self.pending().map.insert(ck.clone(), tomb);
        if let Err(e) = self.cache.discard(ck.as_bytes()) {
            // The flusher discards again before it retires the tombstone, and fails until this
            // can be made durable.
            tracing::warn!(key = ck, "cannot drop the deleted object's cached copy durably yet: {e}");
        }
        self.kick_flusher();
        Ok(())
    }
}
