//! [`PartTables`]: the part boundaries (and part checksums) of objects completed from multipart
//! uploads, so that `partNumber` reads and GetObjectAttributes can answer per part. An object's
//! data and metadata travel through the cache and the backend, whose metadata cannot hold up to
//! 10,000 parts (an S3 backend keeps 2 KiB of it), so the table is the gateway's own:
//! `<state>/parts/<md5 of bucket and key>.json`, written durably before the completion is
//! answered and valid only while the object's ETag is the one it names. A table whose object was
//! overwritten or deleted is ignored and removed by [`PartTables::sweep`].

use std::fs;
use std::io::Write;
use std::path::{Path, PathBuf};

use serde::{Deserialize, Serialize};

/// One part of a completed object.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct PartEntry {
    /// The part's size in bytes.
    pub size: u64,
    /// Its checksum (base64) in the upload's algorithm, if the upload had one.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub checksum: Option<String>,
}

/// The parts of one object, in order (part numbers 1..=N of the object, whatever the upload
/// numbered them).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct PartTable {
    /// The object's bucket.
    pub bucket: String,
    /// The object's key.
    pub key: String,
    /// The ETag of the object the table describes.
    pub etag: String,
    /// `COMPOSITE` or `FULL_OBJECT` when the upload had a checksum.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub checksum_type: Option<String>,
    /// The parts, in object order.
    pub parts: Vec<PartEntry>,
}

impl PartTable {
    /// Bytes `[start, end)` of part `n` (1-based).
    pub fn range(&self, n: usize) -> Option<(u64, u64)> {
        let start: u64 = self.parts.get(..n.checked_sub(1)?)?.iter().map(|p| p.size).sum();
        Some((start, start + self.parts.get(n - 1)?.size))
    }
}

/// The part tables of the completed multipart objects, one file each in a directory.
pub struct PartTables {
    dir: PathBuf,
}

impl PartTables {
    /// The tables in `dir`, created if missing.
    pub fn open(dir: &Path) -> std::io::Result<PartTables> {
        fs::create_dir_all(dir)?;
        Ok(PartTables { dir: dir.to_path_buf() })
    }

    fn path(&self, bucket: &str, key: &str) -> PathBuf {
        let name = crate::keys::md5_hex(format!("{bucket}\0{key}").as_bytes());
        self.dir.join(format!("{name}.json"))
    }

    /// Writes `t` (a temporary file fsynced, renamed, the directory fsynced).
    pub fn save(&self, t: &PartTable) -> std::io::Result<()> {
        let path = self.path(&t.bucket, &t.key);
        let tmp = path.with_extension(format!("tmp{}", std::process::id()));
        let mut f = fs::File::create(&tmp)?;
        f.write_all(&serde_json::to_vec(t).map_err(std::io::Error::other)?)?;
        f.sync_all()?;
        fs::rename(&tmp, &path)?;
        fs::File::open(&self.dir)?.sync_all()
    }

    /// The table of `bucket/key` if it describes the object with ETag `etag`.
    pub fn get(&self, bucket: &str, key: &str, etag: &str) -> Option<PartTable> {
        let t: PartTable = serde_json::from_slice(&fs::read(self.path(bucket, key)).ok()?).ok()?;
        (t.bucket == bucket && t.key == key && t.etag == etag).then_some(t)
    }

    /// Removes the tables `current` says are stale (given bucket, key and ETag: whether the
    /// object is still that one), and leftover temporary files; returns how many went.
    pub fn sweep(&self, current: impl Fn(&str, &str, &str) -> bool) -> usize {
        let mut removed = 0;
        for ent in fs::read_dir(&self.dir).into_iter().flatten().flatten() {
            let path = ent.path();
            let stale = match path.extension().and_then(|e| e.to_str()) {
                Some("json") => fs::read(&path)
                    .ok()
                    .and_then(|b| serde_json::from_slice::<PartTable>(&b).ok())
                    .is_none_or(|t| !current(&t.bucket, &t.key, &t.etag)),
                _ => true,
            };
            if stale && fs::remove_file(&path).is_ok() {
                removed += 1;
            }
        }
        removed
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn tables_answer_for_their_etag_only_and_stale_ones_are_swept() {
        let dir = tempfile::tempdir().unwrap();
        let tables = PartTables::open(&dir.path().join("parts")).unwrap();
        let part = |size| PartEntry { size, checksum: None };
        let t = PartTable {
            bucket: "bkt".into(),
            key: "k".into(),
            etag: "e-2".into(),
            checksum_type: None,
            parts: vec![part(5), part(3)],
        };
        tables.save(&t).unwrap();
        assert_eq!(tables.get("bkt", "k", "e-2").unwrap().range(2), Some((5, 8)));
        assert_eq!(t.range(1), Some((0, 5)));
        assert_eq!((t.range(0), t.range(3)), (None, None));
        assert!(tables.get("bkt", "k", "other").is_none(), "the object was overwritten");
        assert_eq!(tables.sweep(|_, _, etag| etag == "e-2"), 0);
        assert_eq!(tables.sweep(|_, _, _| false), 1);
        assert!(tables.get("bkt", "k", "e-2").is_none());
    }
}
