//! Objects the gateway's store keeps for a layer above it and never writes back
//! ([`Gateway::put_held`]): `reo-cluster` keeps its replicas of peers' unflushed writes here.
//!
//! They are class-1 (dirty) data of the store: on every device the dirty scheme needs and
//! fdatasync'ed before [`Gateway::put_held`] returns, never evicted, scrubbed and rebuilt like
//! the gateway's own unflushed objects, and their removal is durable. They belong to no bucket:
//! their cache keys start with a byte no bucket name has ([`HELD_PREFIX`]), so no S3 request
//! reaches them, the flusher never sees them and restart recovery leaves them alone. Each
//! carries a short index string in its blob header, so the layer above lists them after a
//! restart ([`Gateway::held`]) without reading their bytes.

use reo_cache::{ObjectMeta, WriteError};

use super::clock::now_ns;
use super::handle::Gateway;
use super::pending::{is_held, HELD_PREFIX};

/// The blob-header entry holding a held object's index string.
const INDEX_META: &str = "x-reo-held-index";

fn held_key(name: &str) -> String {
    format!("{HELD_PREFIX}{name}")
}

fn io_error(e: WriteError) -> std::io::Error {
    match e {
        WriteError::Full(m) => std::io::Error::new(std::io::ErrorKind::StorageFull, m),
        other => std::io::Error::other(other.to_string()),
    }
}

impl Gateway {
    /// Stores `data` under `name` (replacing what it held), durably as class-1 data, with
    /// `index` in its blob header (see the module doc). A full cache is
    /// [`std::io::ErrorKind::StorageFull`].
    pub fn put_held(&self, name: &str, data: &[u8], index: &str) -> std::io::Result<()> {
        let meta = ObjectMeta {
            mtime_ns: now_ns(),
            system: vec![(INDEX_META.to_string(), index.to_string())],
            ..Default::default()
        };
        self.cache.put(held_key(name).as_bytes(), data, &meta, true, now_ns()).map(|_| ()).map_err(io_error)
    }

    /// The bytes held under `name`, `None` if nothing is. An error if they cannot be read back
    /// (beyond their redundancy): never a partial object.
    pub fn read_held(&self, name: &str) -> std::io::Result<Option<Vec<u8>>> {
        let key = held_key(name);
        let r = self.cache.get(key.as_bytes(), 0, u64::MAX, now_ns()).map_err(io_error)?;
        let Some(size) = r.size else { return Ok(None) };
        let mut out = Vec::with_capacity(usize::try_from(size).unwrap_or(0));
        for p in r.pieces {
            match p.data {
                Some(d) => out.extend_from_slice(&d),
                // Removed between the lookup and the read.
                None if self.cache.info(key.as_bytes()).is_none() => return Ok(None),
                None => return Err(std::io::Error::other(format!("held object {name:?}: bytes missing"))),
            }
        }
        Ok(Some(out))
    }

    /// Removes what `name` holds, durably (an error if that cannot be made durable: the bytes
    /// could come back after a crash); whether it held anything.
    pub fn remove_held(&self, name: &str) -> std::io::Result<bool> {
        self.cache.discard(held_key(name).as_bytes()).map_err(|e| std::io::Error::other(e.to_string()))
    }

    /// Every held object: its name and index string.
    pub fn held(&self) -> Vec<(String, String)> {
        let keys = self.cache.dirty_keys();
        keys.into_iter()
            .filter(|(k, _)| is_held(k))
            .filter_map(|(k, _)| {
                let meta = self.cache.meta(&k)?;
                let index = meta.system.into_iter().find(|(n, _)| n == INDEX_META).map(|(_, v)| v).unwrap_or_default();
                let name = String::from_utf8_lossy(&k[HELD_PREFIX.len()..]).into_owned();
                Some((name, index))
            })
            .collect()
    }
}

#[cfg(test)]
mod tests {
    use crate::backend::{Backend, ObjectInfo};
    use crate::gateway::tests::Rig;

    #[test]
    fn held_objects_survive_a_crash_and_are_never_the_gateways_own() {
        let rig = Rig::new();
        let (gw, backend) = rig.open();
        let big: Vec<u8> = (0..300_000u32).map(|i| (i * 7) as u8).collect();
        gw.put_held("n1/a", b"first", "i1").unwrap();
        gw.put_held("n1/a", &big, "i2").unwrap();
        gw.put_held("n2/b", b"other", "i3").unwrap();
        gw.put("bkt", "own", b"mine", ObjectInfo::default()).unwrap();
        rig.kill(gw);

        let (gw, _) = rig.open();
        let mut held = gw.held();
        held.sort();
        assert_eq!(held, vec![("n1/a".into(), "i2".into()), ("n2/b".into(), "i3".into())]);
        assert_eq!(gw.read_held("n1/a").unwrap().unwrap(), big, "the newest bytes put");
        assert_eq!(gw.dirty().0, 1, "recovery adopted only the gateway's own unflushed object");
        assert!(gw.dirty_state("bkt", "own").is_some());
        assert!(gw.read_held("nothing").unwrap().is_none());
        let flusher = crate::gateway::flusher::Flusher::start(gw.clone());
        gw.flush_now();
        let t = std::time::Instant::now();
        while gw.dirty().0 > 0 {
            assert!(t.elapsed() < std::time::Duration::from_secs(20), "flusher stuck");
            std::thread::sleep(std::time::Duration::from_millis(10));
        }
        flusher.stop();
        let listed = backend.list("bkt", "", "", 100).unwrap();
        assert_eq!(listed.len(), 1, "only the gateway's object reached the backend: {listed:?}");
        assert_eq!(gw.held().len(), 2, "held objects stay after a flush");

        assert!(gw.remove_held("n1/a").unwrap());
        assert!(!gw.remove_held("n1/a").unwrap());
        rig.kill(gw);
        let (gw, _) = rig.open();
        assert_eq!(gw.held(), vec![("n2/b".into(), "i3".into())], "a removal survives a crash");
        assert_eq!(gw.read_held("n2/b").unwrap().unwrap(), b"other");
    }
}
