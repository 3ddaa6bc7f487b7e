//! The replica area ([`ReplicaStore`]): copies of peers' unflushed writes this node keeps until
//! their owner reports them written back, bounded in bytes (`replica_share` of the flash). They
//! live in the node's own flash store as class-1 data outside every bucket
//! ([`crate::replica_medium`]), one object per (owner, bucket, key) holding only the newest
//! version received: a header (the key, the owner's version, the object's info, the body's
//! SHA-256) and the body, verified on every read. A put is durable before the replica is
//! acknowledged, so an acknowledged replica survives a crash of this node too; its index (owner,
//! key, version, size) is in the object's blob header, from which the area is listed at start.
//! An older version than the one held is acknowledged without being stored (the newer one
//! already protects the key).

use std::collections::BTreeMap;
use std::sync::Arc;

use parking_lot::Mutex;
use reo_gateway::backend::ObjectInfo;
use serde::{Deserialize, Serialize};

use crate::replica_medium::ReplicaMedium;

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

/// A replica's index: what the area knows of it without reading it (kept in its blob header).
#[derive(Debug, Clone, Serialize, Deserialize)]
struct Index {
    owner: String,
    bucket: String,
    key: String,
    version: u64,
    deleted: bool,
    bytes: u64,
}

#[derive(Debug, Clone, Copy)]
struct Entry {
    version: u64,
    deleted: bool,
    bytes: u64,
}

type Id = (String, String, String);

/// Operations on one key are serialized by one of these locks (held across the medium's I/O),
/// so a check and the put or removal it decides are one step.
const STRIPES: usize = 64;

/// The replica area (see the module doc).
pub struct ReplicaStore {
    medium: Arc<dyn ReplicaMedium>,
    limit: u64,
    /// The replicas held and the bytes they (and the puts under way) take.
    inner: Mutex<(BTreeMap<Id, Entry>, u64)>,
    stripes: Vec<Mutex<()>>,
}

/// The name of a replica in the medium.
fn name_of(owner: &str, bucket: &str, key: &str) -> String {
    crate::auth::sha256_hex(format!("{owner}\0{bucket}\0{key}").as_bytes())
}

fn bad(what: &str) -> std::io::Error {
    std::io::Error::new(std::io::ErrorKind::InvalidData, format!("replica {what}: corrupt"))
}

fn encode(h: &ReplicaHeader, body: &[u8]) -> std::io::Result<Vec<u8>> {
    let head = serde_json::to_vec(h).map_err(std::io::Error::other)?;
    let mut out = Vec::with_capacity(4 + head.len() + body.len());
    out.extend_from_slice(&(head.len() as u32).to_le_bytes());
    out.extend_from_slice(&head);
    out.extend_from_slice(body);
    Ok(out)
}

fn decode(raw: &[u8], id: &Id) -> std::io::Result<(ReplicaHeader, Vec<u8>)> {
    let what = format!("of {}/{} from {}", id.1, id.2, id.0);
    let n = raw.get(..4).ok_or_else(|| bad(&what))?;
    let n = u32::from_le_bytes(n.try_into().expect("4 bytes")) as usize;
    let h: ReplicaHeader =
        serde_json::from_slice(raw.get(4..4 + n).ok_or_else(|| bad(&what))?).map_err(|_| bad(&what))?;
    let body = raw[4 + n..].to_vec();
    if crate::auth::sha256_hex(&body) != h.sha256 || (&h.owner, &h.bucket, &h.key) != (&id.0, &id.1, &id.2) {
        return Err(bad(&what));
    }
    Ok((h, body))
}

impl ReplicaStore {
    /// The area in `medium`, at most `limit` bytes; replicas of a previous run are kept (any
    /// whose index cannot be read is removed).
    pub fn open(medium: Arc<dyn ReplicaMedium>, limit: u64) -> std::io::Result<ReplicaStore> {
        let mut map = BTreeMap::new();
        let mut used = 0;
        for (name, index) in medium.list()? {
            match serde_json::from_str::<Index>(&index) {
                Ok(i) if name == name_of(&i.owner, &i.bucket, &i.key) => {
                    used += i.bytes;
                    map.insert(
                        (i.owner, i.bucket, i.key),
                        Entry { version: i.version, deleted: i.deleted, bytes: i.bytes },
                    );
                }
                _ => medium.remove(&name)?,
            }
        }
        let stripes = (0..STRIPES).map(|_| Mutex::new(())).collect();
        Ok(ReplicaStore { medium, limit, inner: Mutex::new((map, used)), stripes })
    }

    fn stripe(&self, name: &str) -> parking_lot::MutexGuard<'_, ()> {
        let i = u64::from_str_radix(&name[..8], 16).unwrap_or(0) as usize % STRIPES;
        self.stripes[i].lock()
    }

    /// Stores a replica (see [`Stored`]).
    pub fn put(&self, h: &ReplicaHeader, body: &[u8]) -> std::io::Result<Stored> {
        let id = (h.owner.clone(), h.bucket.clone(), h.key.clone());
        let name = name_of(&h.owner, &h.bucket, &h.key);
        let _key = self.stripe(&name);
        let len = body.len() as u64;
        {
            let mut g = self.inner.lock();
            let old = g.0.get(&id);
            if old.is_some_and(|e| e.version >= h.version) {
                return Ok(Stored::Superseded);
            }
            let freed = old.map_or(0, |e| e.bytes);
            if g.1 - freed + len > self.limit {
                return Ok(Stored::Full);
            }
            // Reserved while it is written: puts of other keys see the room it takes.
            g.1 += len;
        }
        let index = Index {
            owner: h.owner.clone(),
            bucket: h.bucket.clone(),
            key: h.key.clone(),
            version: h.version,
            deleted: h.deleted,
            bytes: len,
        };
        let r = encode(h, body).and_then(|data| {
            self.medium.put(&name, &data, &serde_json::to_string(&index).map_err(std::io::Error::other)?)
        });
        let mut g = self.inner.lock();
        match r {
            Ok(()) => {
                let freed =
                    g.0.insert(id, Entry { version: h.version, deleted: h.deleted, bytes: len }).map_or(0, |e| e.bytes);
                g.1 -= freed;
                Ok(Stored::Stored)
            }
            Err(e) => {
                g.1 -= len;
                if e.kind() == std::io::ErrorKind::StorageFull {
                    return Ok(Stored::Full);
                }
                Err(e)
            }
        }
    }

    /// Removes the replica of `owner`'s key if its version is at most `upto` (written back by its
    /// owner, or superseded).
    pub fn drop_upto(&self, owner: &str, bucket: &str, key: &str, upto: u64) -> std::io::Result<bool> {
        let id = (owner.to_string(), bucket.to_string(), key.to_string());
        let name = name_of(owner, bucket, key);
        let _key = self.stripe(&name);
        if self.inner.lock().0.get(&id).is_none_or(|e| e.version > upto) {
            return Ok(false);
        }
        self.forget(&id, &name)?;
        Ok(true)
    }

    /// Removes the replica `id` (under its stripe).
    fn forget(&self, id: &Id, name: &str) -> std::io::Result<()> {
        self.medium.remove(name)?;
        let mut g = self.inner.lock();
        if let Some(e) = g.0.remove(id) {
            g.1 -= e.bytes;
        }
        Ok(())
    }

    /// Removes every replica of `owner`; how many.
    pub fn drop_owner(&self, owner: &str) -> std::io::Result<usize> {
        let ids: Vec<Id> = self.inner.lock().0.keys().filter(|(o, _, _)| o == owner).cloned().collect();
        for id in &ids {
            let name = name_of(&id.0, &id.1, &id.2);
            let _key = self.stripe(&name);
            self.forget(id, &name)?;
        }
        Ok(ids.len())
    }

    /// Removes `owner`'s replicas of versions below `before` (versions are times in ns): those
    /// it made before it restarted, which it no longer tracks (see `handoff.rs`); how many.
    pub fn drop_older(&self, owner: &str, before: u64) -> std::io::Result<usize> {
        let mut n = 0;
        for (b, k, v, _) in self.inventory(owner) {
            // `drop_upto` re-checks the version under the key's stripe: a newer copy put since
            // the inventory stays.
            if v < before && self.drop_upto(owner, &b, &k, v)? {
                n += 1;
            }
        }
        Ok(n)
    }

    /// Removes every replica (this node was failed over: its replicas may be stale).
    pub fn clear(&self) -> std::io::Result<()> {
        for o in self.owners() {
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

    /// The replica of `owner`'s key, if held. An error if its bytes cannot be read or fail
    /// their check: the replica is then dropped, so the inventory no longer offers it (a
    /// failover retried picks the next-newest copy on another member instead of failing on
    /// this one for ever).
    pub fn get(&self, owner: &str, bucket: &str, key: &str) -> std::io::Result<Option<(ReplicaHeader, Vec<u8>)>> {
        let id = (owner.to_string(), bucket.to_string(), key.to_string());
        if !self.inner.lock().0.contains_key(&id) {
            return Ok(None);
        }
        let name = name_of(owner, bucket, key);
        let read = self.medium.get(&name).and_then(|raw| raw.map(|raw| decode(&raw, &id)).transpose());
        if let Err(e) = &read {
            tracing::error!(owner, bucket, key, "a replica held here is unreadable; dropping it: {e}");
            let _key = self.stripe(&name);
            self.forget(&id, &name)?;
        }
        read
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
    use crate::replica_medium::MemMedium;

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
        let m = Arc::new(MemMedium::default());
        let s = ReplicaStore::open(m.clone(), 100).unwrap();
        assert_eq!(s.put(&header(2, b"two"), b"two").unwrap(), Stored::Stored);
        assert_eq!(s.put(&header(1, b"one"), b"one").unwrap(), Stored::Superseded);
        assert_eq!(s.put(&header(3, b"three"), b"three").unwrap(), Stored::Stored);
        assert_eq!(s.put(&header(4, &[0; 200]), &[0; 200]).unwrap(), Stored::Full);
        drop(s);
        let s = ReplicaStore::open(m, 100).unwrap();
        let (h, body) = s.get("n1", "b", "k/1").unwrap().unwrap();
        assert_eq!((h.version, body.as_slice()), (3, &b"three"[..]));
        assert_eq!(s.inventory("n1"), vec![("b".into(), "k/1".into(), 3, false)]);
        assert_eq!(s.usage(), (1, 5, 95));
        assert!(!s.drop_upto("n1", "b", "k/1", 2).unwrap(), "an older flush must not drop a newer replica");
        assert!(s.drop_upto("n1", "b", "k/1", 3).unwrap());
        assert_eq!(s.usage(), (0, 0, 100));
        // What an owner made before its restart goes; what it made since stays.
        s.put(&header(5, b"five"), b"five").unwrap();
        let other = ReplicaHeader { key: "k/2".into(), ..header(9, b"nine") };
        s.put(&other, b"nine").unwrap();
        assert_eq!(s.drop_older("n1", 9).unwrap(), 1);
        assert_eq!(s.inventory("n1"), vec![("b".into(), "k/2".into(), 9, false)]);
    }

    /// A replica dropped while a newer one is being written must not be subtracted twice from
    /// the bytes held (an overflow).
    #[test]
    fn racing_puts_and_drops_keep_the_byte_count() {
        let m = Arc::new(MemMedium::default());
        let s = Arc::new(ReplicaStore::open(m.clone(), 1 << 30).unwrap());
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
        assert_eq!(m.0.lock().len() as u64, n, "the medium holds what the area counts");
    }

    #[test]
    fn corrupt_bytes_are_not_served_and_an_unreadable_index_is_removed() {
        let m = Arc::new(MemMedium::default());
        let s = ReplicaStore::open(m.clone(), 1 << 20).unwrap();
        s.put(&header(1, b"data"), b"data").unwrap();
        for (d, _) in m.0.lock().values_mut() {
            *d.last_mut().unwrap() ^= 1;
        }
        assert!(s.get("n1", "b", "k/1").is_err());
        assert_eq!(s.inventory("n1"), vec![], "an unreadable replica is no longer offered");
        assert!(s.get("n1", "b", "k/1").unwrap().is_none());
        assert!(m.0.lock().is_empty(), "and is dropped from the medium");
        s.put(&header(2, b"data"), b"data").unwrap();
        m.put("junk", b"x", "not an index").unwrap();
        drop(s);
        let s = ReplicaStore::open(m.clone(), 1 << 20).unwrap();
        assert_eq!(s.usage().0, 1);
        assert!(m.get("junk").unwrap().is_none(), "removed at open");
        s.drop_owner("n1").unwrap();
        assert!(m.0.lock().is_empty());
    }
}
