//! Dedup inside the cache manager, over a real store: shared content is written once and serves
//! every key, an overwrite never corrupts a key that shared the old content, CD-ARC stores fewer
//! bytes and still reads back exactly, dirty data stays out of dedup until flushed.

mod common;

use common::*;
use reo_cache::{CacheConfig, DedupKind, EvictionMode};

fn dedup_cfg(kind: DedupKind, capacity: u64) -> CacheConfig {
    let mut c = cfg(capacity);
    c.dedup = kind;
    c
}

fn whole(c: &reo_cache::Cache, key: &[u8]) -> Option<Vec<u8>> {
    let r = c.get(key, 0, u64::MAX, 1).unwrap();
    r.is_hit().then(|| r.pieces.into_iter().flat_map(|p| p.data.unwrap()).collect())
}

#[test]
fn same_content_is_written_once_and_both_keys_hit() {
    for kind in [DedupKind::DLru, DedupKind::DArc, DedupKind::CdArc] {
        let c = open(&devices(4, 64), dedup_cfg(kind, 64 * FRAG));
        let shared = content(1, (2 * FRAG + 100) as usize);
        read_through(&c, b"a", &shared, 0, u64::MAX, 1);
        let writes = c.stats().cache_writes;
        assert_eq!(writes, 3, "{kind}: three fragments, three content blobs");
        read_through(&c, b"b", &shared, 0, u64::MAX, 2);
        let s = c.stats();
        assert_eq!(s.cache_writes, writes, "{kind}: the copy costs no flash write");
        assert_eq!(s.dedup_saved_writes, 3, "{kind}");
        assert_eq!(whole(&c, b"a").as_deref(), Some(&shared[..]), "{kind}");
        assert_eq!(whole(&c, b"b").as_deref(), Some(&shared[..]), "{kind}");
        // Overwrite "a" (write-through, clean): "b" still reads the old content, exactly.
        let other = content(2, (2 * FRAG + 100) as usize);
        c.put(b"a", &other, &meta(), false, 3).unwrap();
        assert_eq!(whole(&c, b"a").as_deref(), Some(&other[..]), "{kind}");
        assert_eq!(whole(&c, b"b").as_deref(), Some(&shared[..]), "{kind}: shared content intact");
        // Delete "b": "a" is unaffected.
        assert!(c.delete(b"b"));
        assert_eq!(whole(&c, b"a").as_deref(), Some(&other[..]), "{kind}");
        assert!(whole(&c, b"b").is_none());
    }
}

#[test]
fn cd_arc_stores_compressible_content_in_fewer_bytes() {
    let text: Vec<u8> =
        b"the quick brown fox jumps over the lazy dog. ".iter().copied().cycle().take((4 * FRAG) as usize).collect();
    let mut written = Vec::new();
    for kind in [DedupKind::DArc, DedupKind::CdArc] {
        let c = open(&devices(4, 64), dedup_cfg(kind, 64 * FRAG));
        read_through(&c, b"log.txt", &text, 0, u64::MAX, 1);
        assert_eq!(whole(&c, b"log.txt").as_deref(), Some(&text[..]), "{kind}");
        let r = c.get(b"log.txt", FRAG - 5, FRAG + 5, 2).unwrap();
        assert_eq!(
            r.pieces.iter().flat_map(|p| p.data.clone().unwrap()).collect::<Vec<_>>(),
            &text[(FRAG - 5) as usize..(FRAG + 5) as usize]
        );
        written.push(c.stats().cache_write_bytes);
    }
    assert!(written[1] * 4 < written[0], "cd-arc wrote {} bytes vs d-arc {}", written[1], written[0]);
}

#[test]
fn dirty_data_bypasses_dedup_until_flushed() {
    let c = open(&devices(4, 64), dedup_cfg(DedupKind::DArc, 16 * FRAG));
    let d = content(3, (3 * FRAG) as usize);
    let v = c.put(b"dirty", &d, &meta(), true, 1).unwrap();
    read_through(&c, b"copy", &d, 0, u64::MAX, 2);
    // Churn the dedup cache with unique content: the dirty object stays.
    for i in 0..40u64 {
        read_through(&c, format!("x{i}").as_bytes(), &content(100 + i, FRAG as usize), 0, u64::MAX, 10 + i);
    }
    assert_eq!(whole(&c, b"dirty").as_deref(), Some(&d[..]));
    assert!(c.mark_clean(b"dirty", v.version).unwrap());
    let info = c.info(b"dirty").unwrap();
    assert!(!info.dirty && info.cached_fragments == 3);
    assert_eq!(whole(&c, b"dirty").as_deref(), Some(&d[..]));
}

#[test]
fn dedup_with_gc_eviction_is_refused_with_a_reason() {
    let mut cf = dedup_cfg(DedupKind::DArc, 16 * FRAG);
    cf.eviction = EvictionMode::GcBased;
    let err = cf.validate(4).unwrap_err().to_string();
    assert!(err.contains("cache-eviction"), "{err}");
}

#[test]
fn churn_with_dedup_never_serves_wrong_bytes() {
    let c = open(&devices(4, 24), dedup_cfg(DedupKind::DArc, 48 * FRAG));
    let mut rng = reo_media::rng::Xoshiro256pp::new(3);
    // 300 keys over 60 distinct contents; keys are rewritten now and then.
    let mut version = vec![0u64; 300];
    for i in 0..4000u64 {
        let k = (rng.next_u64() % 300) as usize;
        if rng.next_u64().is_multiple_of(10) {
            version[k] += 1;
            let d = content(((k as u64 * 7 + version[k]) % 60) + 1, FRAG as usize);
            c.put(format!("k{k}").as_bytes(), &d, &meta(), false, i).unwrap();
        }
        let d = content(((k as u64 * 7 + version[k]) % 60) + 1, FRAG as usize);
        assert_eq!(read_through(&c, format!("k{k}").as_bytes(), &d, 0, u64::MAX, i), d, "key {k} at {i}");
        c.maintain();
    }
    let s = c.stats();
    assert!(s.dedup_saved_writes > 100 && s.dedup_hits > 1000, "{s:?}");
}
