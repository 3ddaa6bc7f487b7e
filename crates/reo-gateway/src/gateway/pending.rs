//! Unflushed (dirty) objects: what the gateway knows about a write-back object until the flusher
//! has written it to the backend. The bytes live in the cache (dirty, so never evicted); the
//! S3 metadata (ETag, content type, user metadata, mtime) lives here, in memory and in one small
//! fsync'ed file per object under `<data-dir>/pending/`, written *before* the cache put is
//! acknowledged, so a restart (even after SIGKILL) can flush with the right metadata.
//!
//! The files are written by [`Records`], outside the map's mutex: an fsync takes milliseconds,
//! and every HEAD, GET and listing consults the map. Writes of one key's record are ordered by
//! the key's stripe lock (every caller holds it), not by the map.

use std::collections::BTreeMap;
use std::fs;
use std::path::{Path, PathBuf};
#[cfg(test)]
use std::sync::Arc;

use serde::{Deserialize, Serialize};

use crate::backend::ObjectInfo;

/// One unflushed object.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct PendingPut {
    pub bucket: String,
    pub key: String,
    pub info: ObjectInfo,
    /// The cache version to pass to `mark_clean` (0 until the cache put returned).
    #[serde(skip)]
    pub version: u64,
    /// A write-back delete (a tombstone): the key reads as absent until the flusher has deleted
    /// it in the backend. No bytes in the cache; `info` holds only its time.
    #[serde(default)]
    pub deleted: bool,
}

/// The pending map, keyed by cache key (`bucket/key`), sorted so a bucket's prefix is a range.
pub struct Pending {
    pub records: Records,
    pub map: BTreeMap<String, PendingPut>,
}

/// The record files of the pending map (see the module doc). Cheap to clone; the caller of
/// [`Records::persist`] holds the key's stripe lock and *not* the pending map's mutex.
#[derive(Clone)]
pub struct Records {
    dir: PathBuf,
    /// Record writes wait here before their fsync (tests of what is locked meanwhile).
    #[cfg(test)]
    pub(crate) before_sync: Arc<super::counting::Gate>,
}

pub fn cache_key(bucket: &str, key: &str) -> String {
    format!("{bucket}/{key}")
}

impl Pending {
    /// Loads the pending files of a previous run.
    pub fn open(dir: &Path) -> std::io::Result<Pending> {
        fs::create_dir_all(dir)?;
        let mut map = BTreeMap::new();
        for ent in fs::read_dir(dir)? {
            let p = ent?.path();
            if p.extension().is_some_and(|e| e == "json") {
                if let Ok(pp) = serde_json::from_slice::<PendingPut>(&fs::read(&p)?) {
                    map.insert(cache_key(&pp.bucket, &pp.key), pp);
                }
            } else {
                let _ = fs::remove_file(&p); // a temp file of an interrupted write
            }
        }
        #[cfg(test)]
        let before_sync = {
            let g = Arc::new(super::counting::Gate::default());
            g.set(true);
            g
        };
        let records = Records {
            dir: dir.to_path_buf(),
            #[cfg(test)]
            before_sync,
        };
        Ok(Pending { records, map })
    }

    /// Durably records `p` (recovery at start-up, which owns the map).
    pub fn persist(&self, p: &PendingPut) -> std::io::Result<()> {
        self.records.persist(p)
    }

    /// Forgets `ckey` (flushed, deleted or never acknowledged). Unlinking the record is not made
    /// durable (no fsync, so it is cheap under the mutex): a record that comes back after a crash
    /// has no dirty bytes and is dropped at start-up ([`super::recover`]).
    pub fn remove(&mut self, ckey: &str) {
        self.map.remove(ckey);
        let _ = fs::remove_file(self.records.file(ckey));
    }

    /// Whether `bucket` holds any unflushed object.
    pub fn any_in_bucket(&self, bucket: &str) -> bool {
        let start = cache_key(bucket, "");
        self.map.range(start.clone()..).next().is_some_and(|(k, _)| k.starts_with(&start))
    }

    /// Unflushed writes of `bucket` whose key starts with `prefix`, sorted by key (tombstones
    /// excluded: see [`Pending::deleted_in_bucket`]).
    pub fn in_bucket(&self, bucket: &str, prefix: &str) -> Vec<(String, ObjectInfo)> {
        self.range(bucket, prefix).filter(|p| !p.deleted).map(|p| (p.key.clone(), p.info.clone())).collect()
    }

    /// Keys of `bucket` under `prefix` deleted but not yet deleted in the backend.
    pub fn deleted_in_bucket(&self, bucket: &str, prefix: &str) -> Vec<String> {
        self.range(bucket, prefix).filter(|p| p.deleted).map(|p| p.key.clone()).collect()
    }

    fn range<'a>(&'a self, bucket: &str, prefix: &str) -> impl Iterator<Item = &'a PendingPut> + 'a {
        let start = cache_key(bucket, prefix);
        self.map.range(start.clone()..).take_while(move |(k, _)| k.starts_with(&start)).map(|(_, p)| p)
    }
}

impl Records {
    fn file(&self, ckey: &str) -> PathBuf {
        self.dir.join(format!("{}.json", crate::keys::md5_hex(ckey.as_bytes())))
    }

    /// Durably records `p`: written to a temporary file, fsync'ed, renamed over the record and the
    /// directory fsync'ed, all before it returns (so before the write is acknowledged). Called
    /// under the key's stripe lock (two writers of one key would share the temporary file) and
    /// never under the pending map's mutex (see the module doc).
    pub fn persist(&self, p: &PendingPut) -> std::io::Result<()> {
        let ck = cache_key(&p.bucket, &p.key);
        let f = self.file(&ck);
        let tmp = f.with_extension("tmp");
        let bytes = serde_json::to_vec(p).expect("serializable");
        {
            use std::io::Write;
            let mut t = fs::File::create(&tmp)?;
            t.write_all(&bytes)?;
            #[cfg(test)]
            self.before_sync.pass();
            t.sync_all()?;
        }
        fs::rename(&tmp, &f)?;
        fs::File::open(&self.dir)?.sync_all()
    }
}
