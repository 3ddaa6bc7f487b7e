//! Races between the cache's writers and the store's cleaner, made deterministic.
//!
//! A write puts its blobs with the cache's lock dropped and installs them afterwards; between the
//! two the blob is live in the store but unknown to the index. The cleaner must not take such a
//! blob for a leftover and free it under the writer. The interleaving is forced without threads:
//! a multi-fragment write whose second fragment finds the flash full runs the cleaner itself
//! (`make_room`), between writing its first fragment and installing it.

mod common;

use common::*;
use reo_cache::{CacheConfig, ClassSchemes, EvictionMode};
use reo_store::{Durability, PutOptions, Scheme, Store, VictimPolicy};

/// Fills the dirty scheme's bands until exactly `GC_RESERVE` (2) bands are free and the open
/// band has room for one more fragment but not two, with nothing live in it: the next two-fragment
/// write puts its first fragment there, finds no room for the second, and the greedy cleaner
/// picks that band (it holds only the first fragment).
fn cornered(c: &reo_cache::Cache, scheme: Scheme) {
    let store: &Store = c.store();
    let one = store.footprint(FRAG, scheme);
    let mut n = 0u64;
    let mut in_open = Vec::new();
    loop {
        let key = format!("filler-{n}");
        n += 1;
        let before = store.free_bands();
        c.put(key.as_bytes(), &content(n, FRAG as usize), &meta(), true, n).unwrap();
        if store.free_bands() != before {
            in_open.clear(); // a new band opened: earlier fillers are in sealed bands
        }
        in_open.push(key);
        if store.free_bands() > 2 {
            continue;
        }
        let open = store.bands().into_iter().find(|b| b.state == "open").expect("an open band");
        if open.free_device_bytes < 2 * one {
            assert!(open.free_device_bytes >= one, "geometry: the open band must keep room for one fragment");
            break;
        }
    }
    // Nothing live in the open band: the cleaner's greedy choice.
    for key in &in_open {
        assert!(c.delete(key.as_bytes()));
    }
}

fn cache(eviction: EvictionMode) -> reo_cache::Cache {
    let devs = devices(4, 12);
    let mut cfg: CacheConfig = cfg(1 << 30);
    cfg.eviction = eviction;
    cfg.gc_victim = VictimPolicy::Greedy;
    cfg.class_schemes = Some(ClassSchemes::reo_default(4));
    open(&devs, cfg)
}

/// A write-back put whose first fragment the cleaner met before the put installed it: the object
/// must read back whole (before the fix the cleaner freed the fragment as a leftover, and the
/// dirty object — the only copy of the client's bytes — had a hole).
#[test]
fn cleaner_run_by_a_put_keeps_the_puts_own_first_fragment() {
    for eviction in [EvictionMode::CacheBased, EvictionMode::GcBased] {
        let c = cache(eviction);
        let dirty = ClassSchemes::reo_default(4).of(reo_cache::Class::Dirty);
        cornered(&c, dirty);
        let data = content(7, 2 * FRAG as usize);
        c.put(b"victim", &data, &meta(), true, 1_000).expect("the put succeeds");
        let r = c.get(b"victim", 0, data.len() as u64, 1_001).expect("readable");
        let got: Vec<u8> = r.pieces.iter().flat_map(|p| p.data.clone().expect("every piece cached")).collect();
        assert!(got == data, "{eviction:?}: the dirty object reads back whole");
        assert!(c.dirty_keys().iter().any(|(k, _)| k == b"victim"));
    }
}

/// A store blob nobody installed (a crash leftover) is still dropped by the cleaner.
#[test]
fn cleaner_still_drops_real_leftovers() {
    let c = cache(EvictionMode::CacheBased);
    let store = c.store();
    let header = reo_cache::header::BlobHeader {
        kind: reo_cache::header::BlobKind::Fragment,
        dirty: false,
        class: reo_cache::Class::Cold,
        object_size: 10,
        fragment: 0,
        mtime_ns: 0,
        key: b"ghost".to_vec(),
        etag: String::new(),
        content_type: String::new(),
        user: Vec::new(),
        system: Vec::new(),
        write: 0,
    }
    .encode();
    let loc = store.put(&header, &[1; 10], &PutOptions::new(Scheme::Replicate(2))).unwrap();
    store.flush().unwrap();
    store.seal_open_bands();
    while c.clean_once() {}
    assert!(store.header(&loc).is_none(), "the leftover was freed");
    let _ = store.free(&loc, Durability::None);
}
