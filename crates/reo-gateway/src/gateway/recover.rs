//! Restart recovery: the pending map of a previous run (its records) reconciled with the cache's
//! dirty objects, which are what must still be flushed.
//!
//! A write-back PUT records its metadata durably (with the pending state it replaces, `prev`),
//! then writes the bytes (dirty), then answers; a write-back DELETE records its tombstone durably,
//! then drops the cached bytes durably, then answers. A crash can fall between the two steps of
//! either, and the record is then ahead of the bytes. Per key, with the record `R` (if any) and
//! the version `u` of the dirty bytes on flash (if any):
//!
//! * `R` a tombstone: the delete stands; dirty bytes or a clean copy of the key are dropped
//!   (else, once the flusher has applied the delete, they would be read as the object again);
//! * `R` a write whose version is `u`: the write landed; it stays pending as recorded;
//! * `R` a write that did not land (`u` is another version, or none): the state before it,
//!   `R.prev`, is restored — a tombstone (the key stays deleted: without it, the backend's older
//!   version would come back), or the previous unflushed write if its bytes are the ones on flash
//!   (with its exact metadata); with no `prev`, nothing of the key was pending and the record goes;
//! * dirty bytes no record explains (not expected: the record is written first, and a refused
//!   dirty write's blobs are freed durably): kept and flushed, with the metadata of their blob
//!   header (an acknowledged write is never dropped).
//!
//! Every change is durable before the gateway serves (records rewritten or removed with fsync,
//! the cache's drops followed by a store flush), so a crash during recovery repeats it.

use std::collections::HashMap;

use reo_cache::Cache;

use super::clock::now_ns;
use super::pending::{Pending, PendingPut};
use crate::backend::ObjectInfo;

/// What a key's pending state is after a crash.
enum Outcome {
    /// The recorded state stands, with this dirty version (a tombstone: none).
    Keep(Option<u64>),
    /// Restore this state (the record's `prev`) as the record.
    Restore(PendingPut, Option<u64>),
    /// Nothing is pending: the record goes.
    Drop,
    /// Dirty bytes no record explains: a record from their blob header.
    Derive(u64),
}

/// Decides the state of one key from its record and the version of its dirty bytes on flash.
fn resolve(record: Option<&PendingPut>, dirty: Option<u64>) -> Outcome {
    let version_of = |p: &PendingPut| reo_cache::object_version(&p.info.etag, p.info.size, p.info.mtime_ns);
    let Some(r) = record else { return dirty.map_or(Outcome::Drop, Outcome::Derive) };
    if r.deleted {
        return Outcome::Keep(None);
    }
    if dirty == Some(version_of(r)) {
        return Outcome::Keep(dirty);
    }
    match r.prev.as_deref() {
        Some(p) if p.deleted => Outcome::Restore(p.clone(), None),
        Some(p) if dirty == Some(version_of(p)) => Outcome::Restore(p.clone(), dirty),
        _ => dirty.map_or(Outcome::Drop, Outcome::Derive),
    }
}

/// Why the unflushed writes of a previous run could not be brought in line with the cache.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum RecoverError {
    /// A pending record could not be rewritten, removed or written (`action` says which).
    #[error("{key:?}: cannot {action} its pending record: {source}")]
    Record {
        /// The object's cache key (`bucket/key`).
        key: String,
        /// What was done to the record.
        action: &'static str,
        /// Why it failed.
        source: std::io::Error,
    },
    /// The store could not make the drops of deleted objects' bytes durable.
    #[error("making the drops of {dropped} deleted objects durable: {source}")]
    Flush {
        /// How many deleted objects' bytes were dropped.
        dropped: usize,
        /// Why the store's flush failed.
        source: Box<dyn std::error::Error + Send + Sync>,
    },
}

/// The error of `action` on `key`'s pending record.
fn record<'k>(key: &'k str, action: &'static str) -> impl FnOnce(std::io::Error) -> RecoverError + 'k {
    move |source| RecoverError::Record { key: key.to_string(), action, source }
}

/// Brings `pending` (just loaded) in line with `cache`'s dirty objects; see the module doc.
pub(super) fn reconcile(pending: &mut Pending, cache: &Cache) -> Result<(), RecoverError> {
    let dirty: HashMap<String, u64> =
        // Held objects (`held.rs`) are dirty data of the layer above, never this gateway's.
        cache
            .dirty_keys()
            .into_iter()
            .filter(|(k, _)| !super::pending::is_held(k))
            .map(|(k, v)| (String::from_utf8_lossy(&k).into_owned(), v))
            .collect();
    let mut keys: Vec<String> = pending.map.keys().cloned().collect();
    keys.extend(dirty.keys().filter(|k| !pending.map.contains_key(*k)).cloned());
    let mut dropped = 0;
    for ck in keys {
        let u = dirty.get(&ck).copied();
        match resolve(pending.map.get(&ck), u) {
            Outcome::Keep(v) => {
                let p = pending.map.get_mut(&ck).expect("kept records exist");
                p.version = if p.deleted { p.info.mtime_ns } else { v.unwrap_or(0) };
                if p.deleted && cache.delete(ck.as_bytes()) {
                    dropped += 1;
                }
            }
            Outcome::Restore(mut p, v) => {
                tracing::warn!(key = ck, "the last write was recorded but not stored; restoring the state before it");
                p.version = if p.deleted { p.info.mtime_ns } else { v.unwrap_or(0) };
                if p.deleted && cache.delete(ck.as_bytes()) {
                    dropped += 1;
                }
                pending.persist(&p).map_err(record(&ck, "rewrite"))?;
                pending.map.insert(ck, p);
            }
            Outcome::Drop => {
                pending.remove(&ck).map_err(record(&ck, "remove"))?;
            }
            Outcome::Derive(v) => {
                tracing::warn!(key = ck, "unflushed bytes without a record; flushing them with their blob's metadata");
                let Some(p) = derive(cache, &ck, v) else { continue };
                pending.persist(&p).map_err(record(&ck, "write"))?;
                pending.map.insert(ck, p);
            }
        }
    }
    if dropped > 0 {
        // The drops of deleted keys' bytes are durable before anything is served.
        cache.store().flush().map_err(|e| RecoverError::Flush { dropped, source: e.into() })?;
    }
    Ok(())
}

/// A record for dirty bytes that have none, from their blob header (the bytes' MD5 if the header
/// has no ETag).
fn derive(cache: &Cache, ck: &str, version: u64) -> Option<PendingPut> {
    let (bucket, key) = ck.split_once('/')?;
    let i = cache.info(ck.as_bytes())?;
    let m = cache.meta(ck.as_bytes()).unwrap_or_default();
    let etag = if m.etag.is_empty() {
        let r = cache.get(ck.as_bytes(), 0, u64::MAX, now_ns()).ok().filter(|r| r.is_hit())?;
        let data: Vec<u8> = r.pieces.into_iter().flat_map(|p| p.data.unwrap_or_default()).collect();
        crate::keys::md5_hex(&data)
    } else {
        m.etag
    };
    let info = ObjectInfo {
        size: i.size,
        etag,
        content_type: if m.content_type.is_empty() { "binary/octet-stream".into() } else { m.content_type },
        user_meta: m.user.into_iter().collect(),
        mtime_ns: if m.mtime_ns == 0 { now_ns() } else { m.mtime_ns },
        system: m.system.into_iter().collect(),
    };
    let mut p = PendingPut::write(bucket, key, info, None);
    p.version = version;
    Some(p)
}

#[cfg(test)]
mod tests {
    use s3s::S3ErrorCode;

    use super::super::pending::PendingPut;
    use super::super::tests::Rig;
    use super::super::{flusher, now_ns};
    use crate::backend::{Backend, ObjectInfo};

    fn info() -> ObjectInfo {
        ObjectInfo { content_type: "text/plain".into(), ..Default::default() }
    }

    /// The record `p` written, as the first step of a write or delete, and then a crash.
    fn crash_after_recording(rig: &Rig, before: &[u8], p: PendingPut) {
        let (gw, _) = rig.open();
        gw.put("bkt", "k", before, info()).unwrap();
        gw.records.persist(&p).unwrap();
        gw.cache.store().flush().unwrap();
    }

    #[test]
    fn a_delete_recorded_before_a_crash_is_finished_at_restart() {
        let rig = Rig::new();
        crash_after_recording(&rig, b"deleted", PendingPut::tombstone("bkt", "k", now_ns()));
        let (gw, backend) = rig.open();
        assert_eq!(*gw.head("bkt", "k").unwrap_err().code(), S3ErrorCode::NoSuchKey);
        assert!(!flusher::round(&gw));
        // Regression: the bytes stayed dirty in the cache; with the tombstone applied and gone,
        // the deleted object was served again (and never flushed).
        assert_eq!(*gw.head("bkt", "k").unwrap_err().code(), S3ErrorCode::NoSuchKey);
        assert!(gw.cache.info(b"bkt/k").is_none());
        assert!(backend.head("bkt", "k").is_err());
    }

    /// A record that explains nothing on flash (written without its `prev`, as before records had
    /// one): the bytes are kept, with their own metadata.
    #[test]
    fn a_write_recorded_before_a_crash_does_not_relabel_the_previous_bytes() {
        let rig = Rig::new();
        let next = b"never stored";
        let info = ObjectInfo {
            size: next.len() as u64,
            etag: crate::keys::md5_hex(next),
            content_type: "x/next".into(),
            user_meta: Default::default(),
            mtime_ns: now_ns(),
            system: Default::default(),
        };
        let p = PendingPut::write("bkt", "k", info, None);
        crash_after_recording(&rig, b"acknowledged", p);
        let (gw, backend) = rig.open();
        // Regression: the record of the write that never landed described the previous bytes.
        let i = gw.head("bkt", "k").unwrap();
        assert_eq!((i.size, i.etag.as_str()), (12, crate::keys::md5_hex(b"acknowledged").as_str()));
        assert_eq!(i.content_type, "text/plain");
        assert!(!flusher::round(&gw));
        let (bytes, binfo) = backend.get_range("bkt", "k", 0, u64::MAX).unwrap();
        assert_eq!((bytes.as_slice(), binfo.etag), (&b"acknowledged"[..], i.etag));
    }
}
