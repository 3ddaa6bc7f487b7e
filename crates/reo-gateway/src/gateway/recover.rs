//! Restart recovery: the pending map of a previous run (its files) reconciled with the cache's
//! dirty objects, which are what must still be flushed.
//!
//! A write-back PUT records its metadata durably, then writes the bytes (dirty), then answers; a
//! write-back DELETE records its tombstone durably, then drops the cached bytes, then answers. A
//! crash can fall between the two steps of either, and the record is then ahead of the bytes:
//!
//! * a record with no dirty bytes (not a tombstone): the write never landed (or was flushed and
//!   the record's removal was lost) — the record goes;
//! * a PUT's record over the dirty bytes of the previous write of the key: that write was
//!   acknowledged and the recorded one was not — the bytes' own blob header says which version
//!   they are, and the record is rewritten from it (else they would be served and flushed under
//!   the other version's ETag, size and metadata);
//! * a tombstone over dirty bytes: the delete is finished, the bytes dropped (else, once the
//!   flusher has applied the delete, they would be read as the object again, and never flushed);
//! * dirty bytes with no record (should not happen: the record is written first): a record is
//!   derived from the bytes.

use std::collections::HashSet;

use reo_cache::Cache;

use super::now_ns;
use super::pending::{Pending, PendingPut};
use crate::backend::ObjectInfo;

/// Brings `pending` (just loaded) in line with `cache`'s dirty objects; see the module doc.
pub(super) fn reconcile(pending: &mut Pending, cache: &Cache) {
    let dirty = cache.dirty_keys();
    let dirty_keys: HashSet<Vec<u8>> = dirty.iter().map(|(k, _)| k.clone()).collect();
    // Tombstones (write-back deletes) have no bytes in the cache: they stay.
    let stale: Vec<String> = pending
        .map
        .iter()
        .filter(|(k, p)| !p.deleted && !dirty_keys.contains(k.as_bytes()))
        .map(|(k, _)| k.clone())
        .collect();
    for k in stale {
        pending.remove(&k);
    }
    for (k, version) in dirty {
        let ck = String::from_utf8_lossy(&k).into_owned();
        match pending.map.get_mut(&ck) {
            Some(p) if p.deleted => {
                cache.delete(&k);
            }
            Some(p) => {
                p.version = version;
                let (Some(m), Some(i)) = (cache.meta(&k), cache.info(&k)) else { continue };
                if (m.etag.as_str(), m.mtime_ns) != (p.info.etag.as_str(), p.info.mtime_ns) {
                    tracing::warn!("{ck:?}: the last write was recorded but not stored; keeping the one before it");
                    p.info = ObjectInfo {
                        size: i.size,
                        etag: m.etag,
                        content_type: m.content_type,
                        user_meta: m.user.into_iter().collect(),
                        mtime_ns: m.mtime_ns,
                    };
                    if let Err(e) = pending.persist(&pending.map[&ck]) {
                        tracing::warn!("{ck:?}: cannot rewrite its pending record: {e}");
                    }
                }
            }
            None => {
                if let Some(p) = derive(cache, &ck, &k, version) {
                    pending.map.insert(ck, p);
                }
            }
        }
    }
}

/// A record for dirty bytes that have none, derived from the bytes.
fn derive(cache: &Cache, ck: &str, k: &[u8], version: u64) -> Option<PendingPut> {
    let (bucket, key) = ck.split_once('/')?;
    let r = cache.get(k, 0, u64::MAX, now_ns()).ok().filter(|r| r.is_hit())?;
    let data: Vec<u8> = r.pieces.into_iter().flat_map(|p| p.data.unwrap_or_default()).collect();
    let info = ObjectInfo {
        size: data.len() as u64,
        etag: crate::keys::md5_hex(&data),
        content_type: "binary/octet-stream".into(),
        user_meta: Default::default(),
        mtime_ns: now_ns(),
    };
    Some(PendingPut { bucket: bucket.into(), key: key.into(), info, version, deleted: false })
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
        let info = ObjectInfo { mtime_ns: now_ns(), ..Default::default() };
        let tomb = PendingPut { bucket: "bkt".into(), key: "k".into(), info, version: now_ns(), deleted: true };
        crash_after_recording(&rig, b"deleted", tomb);
        let (gw, backend) = rig.open();
        assert_eq!(*gw.head("bkt", "k").unwrap_err().code(), S3ErrorCode::NoSuchKey);
        assert!(!flusher::round(&gw));
        // Regression: the bytes stayed dirty in the cache; with the tombstone applied and gone,
        // the deleted object was served again (and never flushed).
        assert_eq!(*gw.head("bkt", "k").unwrap_err().code(), S3ErrorCode::NoSuchKey);
        assert!(gw.cache.info(b"bkt/k").is_none());
        assert!(backend.head("bkt", "k").is_err());
    }

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
        };
        let p = PendingPut { bucket: "bkt".into(), key: "k".into(), info, version: 0, deleted: false };
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
