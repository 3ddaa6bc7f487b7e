//! The replica area ([`ReplicaStore`]): copies of peers' unflushed writes this node keeps until
//! their owner reports them written back, bounded in bytes. One file per (owner, bucket, key)
//! under `<state>/replicas/<owner>/`, holding only the newest version received: a header (the
//! key, the owner's version, the object's info, the body's SHA-256) and the body. A file is
//! written to a temporary name, fdatasync'ed, renamed and its directory fsync'ed before the
//! replica is acknowledged, so an acknowledged replica survives a crash of this node too.
//! An older version than the one held is acknowledged without being stored (the newer one
//! already protects the key).

use std::collections::BTreeMap;
use std::fs;
use std::io::Write;
use std::path::{Path, PathBuf};

use parking_lot::Mutex;
use reo_gateway::backend::ObjectInfo;
use serde::{Deserialize, Serialize};

/// A replica's header.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct ReplicaHeader {
    /// The node whose unflushed write this is.
    pub owner: String,
    /// The object's bucket.
    pub bucket: String,
    /// The object's key.
    pub key: String,
    /// The owner's version of the key (monotonic per key).
    pub version: u64,
    /// A write-back delete (no body).
    pub deleted: bool,
    /// The object's info (size, ETag, content type, metadata).
    pub info: ObjectInfo,
    /// Hex SHA-256 of the body.
    pub sha256: String,
}

/// What became of a replica sent here.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Stored {
    /// Durably stored.
    Stored,
    /// A newer (or the same) version is held already.
    Superseded,
    /// The replica area is full.
    Full,
}

#[derive(Debug, Clone)]
struct Entry {
    version: u64,
    deleted: bool,
    bytes: u64,
    path: PathBuf,
}

type Id = (String, String, String);

/// The replica area (see the module doc).
pub struct ReplicaStore {
    dir: PathBuf,
    limit: u64,
    inner: Mutex<(BTreeMap<Id, Entry>, u64)>,
}

fn file_name(bucket: &str, key: &str) -> String {
    crate::auth::sha256_hex(format!("{}\0{key}", bucket).as_bytes())
}

fn fsync_dir(d: &Path) -> std::io::Result<()> {
    fs::File::open(d)?.sync_all()
}

fn read_file(path: &Path) -> std::io::Result<(ReplicaHeader, Vec<u8>)> {
    let raw = fs::read(path)?;
    let bad = || std::io::Error::new(std::io::ErrorKind::InvalidData, format!("{}: not a replica", path.display()));
    if raw.len() < 4 {
        return Err(bad());
    }
    let n = u32::from_le_bytes(raw[..4].try_into().expect("4 bytes")) as usize;
    let h: ReplicaHeader = serde_json::from_slice(raw.get(4..4 + n).ok_or_else(bad)?).map_err(|_| bad())?;
    let body = raw[4 + n..].to_vec();
    if crate::auth::sha256_hex(&body) != h.sha256 {
        return Err(bad());
    }
    Ok((h, body))
}

impl ReplicaStore {
    /// Opens the area under `dir`, at most `limit` bytes; replicas of a previous run are kept
    /// (torn or corrupt files, and temporary ones, are removed).
    pub fn open(dir: &Path, limit: u64) -> std::io::Result<ReplicaStore> {
        fs::create_dir_all(dir)?;
        let mut map = BTreeMap::new();
        let mut used = 0;
        for owner in fs::read_dir(dir)? {
            let owner = owner?.path();
            if !owner.is_dir() {
                continue;
            }
            for f in fs::read_dir(&owner)? {
                let p = f?.path();
                match read_file(&p) {
                    Ok((h, body)) if p.extension().is_none() => {
                        used += body.len() as u64;
                        let e = Entry { version: h.version, deleted: h.deleted, bytes: body.len() as u64, path: p };
                        map.insert((h.owner, h.bucket, h.key), e);
                    }
                    _ => {
                        let _ = fs::remove_file(&p);
                    }
                }
            }
        }
        Ok(ReplicaStore { dir: dir.to_path_buf(), limit, inner: Mutex::new((map, used)) })
    }

    /// Stores a replica (see [`Stored`]).
    pub fn put(&self, h: &ReplicaHeader, body: &[u8]) -> std::io::Result<Stored> {
        let id = (h.owner.clone(), h.bucket.clone(), h.key.clone());
        {
            let g = self.inner.lock();
            let old = g.0.get(&id);
            if old.is_some_and(|e| e.version >= h.version) {
                return Ok(Stored::Superseded);
            }
            let freed = old.map_or(0, |e| e.bytes);
            if g.1 - freed + body.len() as u64 > self.limit {
                return Ok(Stored::Full);
            }
        }
        let odir = self.dir.join(&h.owner);
        fs::create_dir_all(&odir)?;
        let path = odir.join(file_name(&h.bucket, &h.key));
        let tmp = path.with_extension(format!("tmp{}", h.version));
        let head = serde_json::to_vec(h).map_err(std::io::Error::other)?;
        let mut f = fs::File::create(&tmp)?;
        f.write_all(&(head.len() as u32).to_le_bytes())?;
        f.write_all(&head)?;
        f.write_all(body)?;
        f.sync_data()?;
        drop(f);
        let mut g = self.inner.lock();
        // A newer version may have landed meanwhile (two puts of one key race only on a
        // retry): keep the newest.
        if g.0.get(&id).is_some_and(|e| e.version >= h.version) {
            drop(g);
            let _ = fs::remove_file(&tmp);
            return Ok(Stored::Superseded);
        }
        fs::rename(&tmp, &path)?;
        fsync_dir(&odir)?;
        // What the key holds *now* is replaced (a drop may have removed it meanwhile).
        let freed = g.0.get(&id).map_or(0, |e| e.bytes);
        g.1 = g.1 - freed + body.len() as u64;
        g.0.insert(id, Entry { version: h.version, deleted: h.deleted, bytes: body.len() as u64, path });
        Ok(Stored::Stored)
    }

    /// Removes the replica of `owner`'s key if its version is at most `upto` (written back by its
    /// owner, or superseded).
    pub fn drop_upto(&self, owner: &str, bucket: &str, key: &str, upto: u64) -> std::io::Result<bool> {
        let id = (owner.to_string(), bucket.to_string(), key.to_string());
        let mut g = self.inner.lock();
        let Some(e) = g.0.get(&id).filter(|e| e.version <= upto).cloned() else { return Ok(false) };
        fs::remove_file(&e.path).or_else(|e| if e.kind() == std::io::ErrorKind::NotFound { Ok(()) } else { Err(e) })?;
        g.0.remove(&id);
        g.1 -= e.bytes;
        Ok(true)
    }

    /// Removes every replica of `owner`; how many.
    pub fn drop_owner(&self, owner: &str) -> std::io::Result<usize> {
        let mut g = self.inner.lock();
        let ids: Vec<Id> = g.0.keys().filter(|(o, _, _)| o == owner).cloned().collect();
        for id in &ids {
            if let Some(e) = g.0.remove(id) {
                g.1 -= e.bytes;
            }
        }
        drop(g);
        match fs::remove_dir_all(self.dir.join(owner)) {
            Err(e) if e.kind() != std::io::ErrorKind::NotFound => return Err(e),
            _ => {}
        }
        Ok(ids.len())
    }

    /// Removes every replica (this node was failed over: its replicas may be stale).
    pub fn clear(&self) -> std::io::Result<()> {
        let owners: Vec<String> = self.inner.lock().0.keys().map(|(o, _, _)| o.clone()).collect();
        for o in owners {
            self.drop_owner(&o)?;
        }
        Ok(())
    }

    /// `owner`'s replicas held here: `(bucket, key, version, deleted)`.
    pub fn inventory(&self, owner: &str) -> Vec<(String, String, u64, bool)> {
        let g = self.inner.lock();
        g.0.iter()
            .filter(|((o, _, _), _)| o == owner)
            .map(|((_, b, k), e)| (b.clone(), k.clone(), e.version, e.deleted))
            .collect()
    }

    /// The replica of `owner`'s key, if held.
    pub fn get(&self, owner: &str, bucket: &str, key: &str) -> std::io::Result<Option<(ReplicaHeader, Vec<u8>)>> {
        let path = {
            let g = self.inner.lock();
            match g.0.get(&(owner.to_string(), bucket.to_string(), key.to_string())) {
                Some(e) => e.path.clone(),
                None => return Ok(None),
            }
        };
        match read_file(&path) {
            Ok(r) => Ok(Some(r)),
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => Ok(None),
            Err(e) => Err(e),
        }
    }

    /// `(replicas, bytes)` held, and the bytes still free.
    pub fn usage(&self) -> (u64, u64, u64) {
        let g = self.inner.lock();
        (g.0.len() as u64, g.1, self.limit.saturating_sub(g.1))
    }

    /// The owners this node holds replicas of.
    pub fn owners(&self) -> Vec<String> {
        let g = self.inner.lock();
        let mut v: Vec<String> = g.0.keys().map(|(o, _, _)| o.clone()).collect();
        v.dedup();
        v
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn header(version: u64, body: &[u8]) -> ReplicaHeader {
        ReplicaHeader {
            owner: "n1".into(),
            bucket: "b".into(),
            key: "k/1".into(),
            version,
            deleted: false,
            info: ObjectInfo { size: body.len() as u64, ..Default::default() },
            sha256: crate::auth::sha256_hex(body),
        }
    }

    #[test]
    fn keeps_the_newest_version_across_a_reopen_and_drops_up_to_a_version() {
        let d = tempfile::tempdir().unwrap();
        let s = ReplicaStore::open(d.path(), 100).unwrap();
        assert_eq!(s.put(&header(2, b"two"), b"two").unwrap(), Stored::Stored);
        assert_eq!(s.put(&header(1, b"one"), b"one").unwrap(), Stored::Superseded);
        assert_eq!(s.put(&header(3, b"three"), b"three").unwrap(), Stored::Stored);
        assert_eq!(s.put(&header(4, &[0; 200]), &[0; 200]).unwrap(), Stored::Full);
        drop(s);
        let s = ReplicaStore::open(d.path(), 100).unwrap();
        let (h, body) = s.get("n1", "b", "k/1").unwrap().unwrap();
        assert_eq!((h.version, body.as_slice()), (3, &b"three"[..]));
        assert_eq!(s.inventory("n1"), vec![("b".into(), "k/1".into(), 3, false)]);
        assert!(!s.drop_upto("n1", "b", "k/1", 2).unwrap(), "an older flush must not drop a newer replica");
        assert!(s.drop_upto("n1", "b", "k/1", 3).unwrap());
        assert_eq!(s.usage(), (0, 0, 100));
    }

    /// Regression: a replica dropped while a newer one was being written was subtracted twice
    /// from the bytes held (an overflow).
    #[test]
    fn racing_puts_and_drops_keep_the_byte_count() {
        let d = tempfile::tempdir().unwrap();
        let s = std::sync::Arc::new(ReplicaStore::open(d.path(), 1 << 30).unwrap());
        std::thread::scope(|sc| {
            for t in 0..4u64 {
                let s = s.clone();
                sc.spawn(move || {
                    for v in 0..200u64 {
                        let body = vec![t as u8; (v % 7 + 1) as usize];
                        let _ = s.put(&header(v * 4 + t, &body), &body).unwrap();
                        if v % 3 == t % 3 {
                            s.drop_upto("n1", "b", "k/1", v * 4 + t).unwrap();
                        }
                    }
                });
            }
        });
        let (n, bytes, _) = s.usage();
        let held = s.get("n1", "b", "k/1").unwrap().map_or(0, |(_, b)| b.len() as u64);
        assert_eq!((n, bytes), (u64::from(held > 0), held));
    }

    #[test]
    fn a_corrupt_file_is_not_served() {
        let d = tempfile::tempdir().unwrap();
        let s = ReplicaStore::open(d.path(), 1 << 20).unwrap();
        s.put(&header(1, b"data"), b"data").unwrap();
        let f = d.path().join("n1").join(file_name("b", "k/1"));
        let mut raw = fs::read(&f).unwrap();
        *raw.last_mut().unwrap() ^= 1;
        fs::write(&f, raw).unwrap();
        assert!(s.get("n1", "b", "k/1").is_err());
        drop(s);
        let s = ReplicaStore::open(d.path(), 1 << 20).unwrap();
        assert!(s.get("n1", "b", "k/1").unwrap().is_none(), "removed at open");
    }
}
