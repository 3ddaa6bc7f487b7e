//! Unflushed (dirty) objects: what the gateway knows about a write-back object until the flusher
//! has written it to the backend. The bytes live in the cache (dirty, so never evicted); the
//! S3 metadata (ETag, content type, user metadata, mtime) lives here, in memory and in one small
//! fsync'ed file per object under `<data-dir>/pending/`, written *before* the cache put is
//! acknowledged, so a restart (even after SIGKILL) can flush with the right metadata.
//!
//! A record also keeps the pending state it replaced ([`PendingPut::prev`]): a write's record is
//! durable before its bytes, and if the process dies in between, restart recovery falls back to
//! the state before the write, which the record is then the only place to find (a write-back
//! delete has no bytes: without it, a PUT interrupted after a DELETE would let the backend's older
//! version come back). See [`super::recover`] and docs/RELIABILITY.md ("Write-back state").
//!
//! The files are written and removed by [`Records`], outside the map's mutex: an fsync takes
//! milliseconds, and every HEAD, GET and listing consults the map. Writes of one key's record are
//! ordered by the key's stripe lock (every caller holds it), not by the map. Removals are durable
//! too (the directory is fsync'ed): a tombstone or a record with a `prev` that came back after a
//! power cut would undo a later write.

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
    /// The object's bucket.
    pub bucket: String,
    /// The object's key.
    pub key: String,
    /// What the backend is to keep about it.
    pub info: ObjectInfo,
    /// The cache version to pass to `mark_clean` (0 until the cache put returned).
    #[serde(skip)]
    pub version: u64,
    /// A write-back delete (a tombstone): the key reads as absent until the flusher has deleted
    /// it in the backend. No bytes in the cache; `info` holds only its time.
    #[serde(default)]
    pub deleted: bool,
    /// The pending state this write replaced (a tombstone or an earlier unflushed write, itself
    /// without a `prev`), kept until the write is in the backend: if the write's bytes never
    /// landed, recovery restores it (see the module doc).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub prev: Option<Box<PendingPut>>,
}

impl PendingPut {
    /// The record of a write-back PUT of `info` over the pending state `prev` (if any).
    pub fn write(bucket: &str, key: &str, info: ObjectInfo, prev: Option<&PendingPut>) -> PendingPut {
        let prev = prev.map(|p| Box::new(PendingPut { prev: None, ..p.clone() }));
        PendingPut { bucket: bucket.into(), key: key.into(), info, version: 0, deleted: false, prev }
    }

    /// The record of a write-back DELETE at `now_ns` (its version too: unique per delete).
    pub fn tombstone(bucket: &str, key: &str, now_ns: u64) -> PendingPut {
        let info = ObjectInfo { mtime_ns: now_ns, ..Default::default() };
        PendingPut { bucket: bucket.into(), key: key.into(), info, version: now_ns, deleted: true, prev: None }
    }
}

/// The pending map, keyed by cache key (`bucket/key`), sorted so a bucket's prefix is a range.
pub struct Pending {
    /// The record files behind the map.
    pub records: Records,
    /// The unflushed objects and tombstones by cache key.
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

/// The cache key of an object: `bucket/key`.
pub fn cache_key(bucket: &str, key: &str) -> String {
    format!("{bucket}/{key}")
}

/// The start of the cache key of every object a layer above keeps in the cache (`held.rs`): no
/// bucket name starts with a NUL byte, so no [`cache_key`] does.
pub const HELD_PREFIX: &str = "\0held/";

/// Whether a cache key is a held object's.
pub(crate) fn is_held(cache_key: &[u8]) -> bool {
    cache_key.starts_with(HELD_PREFIX.as_bytes())
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

    /// Forgets `ckey` and durably removes its record (recovery at start-up, which owns the map;
    /// at run time the map entry and the record are removed separately, the record outside the
    /// map's mutex: [`Records::remove`]).
    pub fn remove(&mut self, ckey: &str) -> std::io::Result<()> {
        self.map.remove(ckey);
        self.records.remove(ckey)
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

    /// The first `limit` pending states of `bucket` under `prefix` that sort after key `after`,
    /// in key order: `(key, Some(info))` for an unflushed write, `(key, None)` for a tombstone.
    pub fn after(&self, bucket: &str, prefix: &str, after: &str, limit: usize) -> Vec<(String, Option<ObjectInfo>)> {
        use std::ops::Bound;
        let scope = cache_key(bucket, prefix);
        let start =
            if after >= prefix { Bound::Excluded(cache_key(bucket, after)) } else { Bound::Included(scope.clone()) };
        self.map
            .range((start, Bound::Unbounded))
            .take_while(|(k, _)| k.starts_with(&scope))
            .take(limit)
            .map(|(_, p)| (p.key.clone(), (!p.deleted).then(|| p.info.clone())))
            .collect()
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

    /// Durably removes the record of `ckey` (flushed, or never acknowledged): unlinked and the
    /// directory fsync'ed before it returns. Called under the key's stripe lock, never under the
    /// pending map's mutex. A missing record is fine.
    pub fn remove(&self, ckey: &str) -> std::io::Result<()> {
        match fs::remove_file(self.file(ckey)) {
            Ok(()) => fs::File::open(&self.dir)?.sync_all(),
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => Ok(()),
            Err(e) => Err(e),
        }
    }
}
