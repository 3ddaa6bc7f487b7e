//! What a layer above the gateway that coordinates several gateways (`reo-cluster`) asks of one:
//! the unflushed state of a key or of a listing's range, the bytes of an unflushed object,
//! dropping a clean cached copy another node's write made stale, and discarding every unflushed
//! write of a node whose dirty data the cluster has already written back from its replicas (the
//! node was failed over while it was away; its copies are older than the backend's).

use s3s::S3Result;

use super::handle::Gateway;
use super::pending::cache_key;
use crate::backend::ObjectInfo;

/// The unflushed state of one key.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum DirtyState {
    /// A write-back PUT not yet in the backend.
    Written(ObjectInfo),
    /// A write-back DELETE not yet applied in the backend.
    Deleted,
}

impl Gateway {
    /// The key's unflushed state, `None` if the backend holds its newest version.
    pub fn dirty_state(&self, bucket: &str, key: &str) -> Option<DirtyState> {
        let p = self.pending();
        let e = p.map.get(&cache_key(bucket, key))?;
        Some(if e.deleted { DirtyState::Deleted } else { DirtyState::Written(e.info.clone()) })
    }

    /// Every unflushed key, as `(bucket, key)`.
    pub fn dirty_objects(&self) -> Vec<(String, String)> {
        self.pending().map.values().map(|p| (p.bucket.clone(), p.key.clone())).collect()
    }

    /// Up to `limit` unflushed keys of `bucket` after `after` under `prefix`, in key order, with
    /// their info (`None`: a delete): what a listing through another node merges in.
    pub fn unflushed_after(
        &self,
        bucket: &str,
        prefix: &str,
        after: &str,
        limit: usize,
    ) -> Vec<(String, Option<ObjectInfo>)> {
        self.pending().after(bucket, prefix, after, limit)
    }

    /// The whole unflushed object `key` and its info (`None`: not unflushed, or a delete),
    /// read under the key's read lock so the bytes are of the info's version.
    pub fn read_dirty(&self, bucket: &str, key: &str) -> S3Result<Option<(ObjectInfo, Vec<u8>)>> {
        let _g = self.read_lock(bucket, key);
        let Some(DirtyState::Written(info)) = self.dirty_state(bucket, key) else { return Ok(None) };
        let data = self.read(bucket, key, &info, 0, info.size)?;
        Ok(Some((info, data)))
    }

    /// Drops the cached copy of `key` unless it is unflushed (which is the newest version):
    /// another node's write made it stale. A fill already under way for it is refused by the
    /// cache (the delete invalidates the key).
    pub fn drop_clean(&self, bucket: &str, key: &str) {
        let ck = cache_key(bucket, key);
        let _g = self.stripe(&ck);
        if !self.pending().map.contains_key(&ck) {
            self.cache.delete(ck.as_bytes());
        }
    }

    /// Refuses every fill of `key` fetched before now, at once, without waiting for its stripe
    /// (as [`Gateway::drop_clean`] does): another node's write made those bytes stale, and one
    /// landing before the copy is dropped would be served under a later permission.
    pub fn refuse_older_fills(&self, bucket: &str, key: &str) {
        self.cache.invalidate(cache_key(bucket, key).as_bytes());
    }

    /// Discards every unflushed write and delete, their records and bytes, without writing
    /// them back; returns how many. Only for a node the cluster failed over: the newest version
    /// of each of those keys is in the backend already (or superseded), and flushing these
    /// older copies would undo later writes. Call before the flusher starts.
    pub fn discard_dirty(&self) -> std::io::Result<usize> {
        let keys: Vec<String> = self.pending().map.keys().cloned().collect();
        for ck in &keys {
            let _g = self.stripe(ck);
            self.pending().map.remove(ck);
            self.records.remove(ck)?;
            self.cache.delete(ck.as_bytes());
        }
        Ok(keys.len())
    }
}
