//! Helpers shared by the manager's integration tests: stores on in-memory devices, content, and a
//! read-through loop that plays the backend.
#![allow(dead_code)]

use std::sync::Arc;

use reo_cache::{Cache, CacheConfig, ObjectMeta};
use reo_media::{Media, MemMedia};
use reo_store::{Store, StoreConfig};

pub const FRAG: u64 = 64 << 10;

pub fn devices(n: usize, mib: u64) -> Vec<Arc<dyn Media>> {
    (0..n).map(|_| Arc::new(MemMedia::new(mib << 20)) as Arc<dyn Media>).collect()
}

pub fn store_cfg() -> StoreConfig {
    StoreConfig {
        chunk_size: 16 << 10,
        zone_size: Some(1 << 20),
        journal_size: Some(1 << 20),
        checkpoint_size: Some(2 << 20),
        io_threads: Some(4),
        create: true,
        ..Default::default()
    }
}

pub fn open(devs: &[Arc<dyn Media>], cfg: CacheConfig) -> Cache {
    let (store, _) = Store::open(devs.to_vec(), &store_cfg()).unwrap();
    Cache::open(Arc::new(store), cfg).unwrap()
}

pub fn cfg(capacity: u64) -> CacheConfig {
    let mut c = CacheConfig::new(capacity);
    c.fragment_size = FRAG;
    c.policy = reo_cache::PolicyKind::Lru;
    c
}

pub fn content(seed: u64, len: usize) -> Vec<u8> {
    let mut x = seed.wrapping_mul(0x9E37_79B9_7F4A_7C15) | 1;
    (0..len)
        .map(|_| {
            x ^= x << 13;
            x ^= x >> 7;
            x ^= x << 17;
            x as u8
        })
        .collect()
}

pub fn meta() -> ObjectMeta {
    ObjectMeta {
        etag: "\"e\"".into(),
        content_type: "application/octet-stream".into(),
        mtime_ns: 1,
        ..Default::default()
    }
}

/// Fetches every missing piece "from the backend" (`data`) and fills it; returns the whole range.
pub fn read_through(c: &Cache, key: &[u8], data: &[u8], start: u64, end: u64, now: u64) -> Vec<u8> {
    let r = c.get(key, start, end, now).unwrap();
    let mut out = Vec::new();
    for p in &r.pieces {
        match &p.data {
            Some(d) => out.extend_from_slice(d),
            None => {
                let end = p.end.min(data.len() as u64);
                out.extend_from_slice(&data[p.start as usize..end as usize]);
                let (f0, f1) = (p.start / FRAG, (end - 1) / FRAG);
                for f in f0..=f1 {
                    let a = (f * FRAG) as usize;
                    let b = ((f + 1) * FRAG).min(data.len() as u64) as usize;
                    c.fill(key, data.len() as u64, f as u32, &data[a..b], &meta(), r.token, now).unwrap();
                }
            }
        }
    }
    out
}
