//! The cache manager end to end over a real store on in-memory devices: hits are byte-exact,
//! dirty and pinned data survive pressure, accounting matches a hand count, both eviction modes
//! keep every cached byte intact, a restart keeps the cache warm, and a dead device costs only
//! clean data.

use std::sync::Arc;

use reo_cache::{CacheConfig, Class, EvictionMode, FillOutcome, ObjectMeta, WriteError};
use reo_store::{Placement, Scheme};

mod common;

use common::*;

#[test]
fn hits_are_byte_exact_and_ranges_cache_only_their_fragments() {
    let devs = devices(4, 64);
    let c = open(&devs, cfg(8 << 20));
    let big = content(1, (10 * FRAG + 123) as usize);
    // A range in the middle of a large object: only fragments 3 and 4 are fetched and cached.
    let (a, b) = (3 * FRAG + 10, 4 * FRAG + 99);
    assert_eq!(read_through(&c, b"b/big", &big, a, b, 1), &big[a as usize..b as usize]);
    let info = c.info(b"b/big").unwrap();
    assert_eq!((info.fragments, info.cached_fragments), (11, 2));
    let r = c.get(b"b/big", a, b, 2).unwrap();
    assert!(r.is_hit());
    assert_eq!(r.pieces.iter().flat_map(|p| p.data.clone().unwrap()).collect::<Vec<_>>(), &big[a as usize..b as usize]);
    // The whole object: misses for the rest, then a full hit, byte-exact.
    assert_eq!(read_through(&c, b"b/big", &big, 0, u64::MAX, 3), big);
    let r = c.get(b"b/big", 0, u64::MAX, 4).unwrap();
    assert!(r.is_hit() && r.size == Some(big.len() as u64));
    assert_eq!(r.pieces.into_iter().flat_map(|p| p.data.unwrap()).collect::<Vec<_>>(), big);
    // Small objects, and an empty one.
    let small = content(2, 1000);
    read_through(&c, b"b/small", &small, 0, u64::MAX, 5);
    assert_eq!(c.get(b"b/small", 10, 20, 6).unwrap().pieces[0].data.as_deref(), Some(&small[10..20]));
    assert_eq!(c.fill(b"b/small", 1000, 0, &small, &meta(), c.token(), 7).unwrap(), FillOutcome::AlreadyCached);
    assert!(c.fill(b"b/small", 1000, 1, &small, &meta(), c.token(), 7).is_err(), "fragment out of range");
    let info = c.info(b"b/small").unwrap();
    assert_eq!(
        (info.class, info.dirty, info.schemes.clone()),
        (Class::Cold, false, vec![Scheme::None(Placement::Isolated)])
    );
    assert_eq!(info.freq, 1, "one read since it entered the cache");
    let s = c.stats();
    assert_eq!(s.requests, 6);
    assert_eq!(s.hits, 3);
}

#[test]
fn dirty_and_pinned_data_survive_pressure_and_full_is_reported() {
    let devs = devices(4, 64);
    let c = open(&devs, cfg(8 * FRAG));
    let d1 = content(10, (2 * FRAG) as usize);
    let v1 = c.put(b"b/dirty1", &d1, &meta(), true, 1).unwrap();
    let info = c.info(b"b/dirty1").unwrap();
    assert!(info.dirty && info.class == Class::Dirty);
    assert_eq!(info.schemes, vec![Scheme::Replicate(4)], "dirty data on every device");
    c.put(b"b/dirty2", &content(11, FRAG as usize), &meta(), true, 1).unwrap();
    let pinned = content(12, FRAG as usize);
    read_through(&c, b"b/pinned", &pinned, 0, u64::MAX, 2);
    assert!(c.pin(b"b/pinned", 1_000));
    // Far more clean data than fits: dirty and pinned objects must stay.
    for i in 0..50u64 {
        read_through(&c, format!("b/clean{i}").as_bytes(), &content(100 + i, FRAG as usize), 0, u64::MAX, 10 + i);
    }
    assert!(c.stats().evictions > 30);
    for (k, d) in [(&b"b/dirty1"[..], &d1), (b"b/pinned", &pinned)] {
        let r = c.get(k, 0, u64::MAX, 100).unwrap();
        assert!(r.is_hit(), "{}", String::from_utf8_lossy(k));
        assert_eq!(&r.pieces.into_iter().flat_map(|p| p.data.unwrap()).collect::<Vec<_>>(), d);
    }
    // Fill the rest with dirty data: the cache says full instead of losing anything.
    let mut full = None;
    for i in 0..10u64 {
        match c.put(format!("b/d{i}").as_bytes(), &content(200 + i, FRAG as usize), &meta(), true, 200) {
            Ok(_) => {}
            Err(e) => {
                full = Some(e);
                break;
            }
        }
    }
    assert!(matches!(full, Some(WriteError::Full(_))), "{full:?}");
    assert!(c.info(b"b/dirty1").unwrap().dirty, "nothing dirty was evicted to make room");
    // Lease over: the pinned object may go.
    for i in 0..20u64 {
        let _ = c.delete(format!("b/d{i}").as_bytes());
    }
    for i in 0..20u64 {
        read_through(&c, format!("b/late{i}").as_bytes(), &content(300 + i, FRAG as usize), 0, u64::MAX, 2_000 + i);
    }
    assert!(c.info(b"b/pinned").is_none(), "expired lease: evicted");
    // Flushed: clean, re-encoded to the cold scheme, evictable.
    assert!(!c.mark_clean(b"b/dirty1", v1.version + 12345).unwrap(), "wrong version");
    assert!(c.mark_clean(b"b/dirty1", v1.version).unwrap());
    let info = c.info(b"b/dirty1").unwrap();
    assert!(!info.dirty && info.class == Class::Cold);
    assert_eq!(info.schemes, vec![Scheme::None(Placement::Isolated)]);
    assert_eq!(read_through(&c, b"b/dirty1", &d1, 0, u64::MAX, 3_000), d1);
    assert_eq!(c.dirty_keys().into_iter().map(|(k, _)| k).collect::<Vec<_>>(), vec![b"b/dirty2".to_vec()]);
}

/// CLWA and FLWA against a count made by hand.
#[test]
fn write_amplification_matches_a_hand_count() {
    let devs = devices(4, 64);
    let c = open(&devs, cfg(64 * FRAG));
    let f = FRAG as usize;
    // 2 client writes of 1 and 2 fragments (write-through, clean): original 3 fragments, cache 3.
    c.put(b"w1", &content(1, f), &meta(), false, 1).unwrap();
    c.put(b"w2", &content(2, 2 * f), &meta(), false, 2).unwrap();
    // 4 read misses filled (4 fragments) and 3 hits.
    for i in 0..4u64 {
        read_through(&c, format!("r{i}").as_bytes(), &content(10 + i, f), 0, u64::MAX, 10 + i);
    }
    for i in 0..3u64 {
        assert!(c.get(format!("r{i}").as_bytes(), 0, u64::MAX, 20).unwrap().is_hit());
    }
    let s = c.stats();
    assert_eq!(s.original_write_bytes, 3 * FRAG);
    assert_eq!(s.cache_write_bytes, 7 * FRAG);
    assert_eq!(s.cache_writes, 7);
    assert_eq!(s.gc_write_bytes, 0);
    assert_eq!(s.backend_read_bytes, 4 * FRAG);
    let r = s.ratios();
    assert_eq!(r.clwa, Some(7.0 / 3.0));
    assert_eq!(r.flwa, Some(1.0));
    assert_eq!((s.requests, s.hits), (7, 3));
}

/// Cache-based eviction leaves holes the cleaner compacts (GC writes counted); GC-based eviction
/// drops cold blobs instead. Either way every cached byte reads back exactly.
#[test]
fn both_eviction_modes_keep_cached_bytes_exact_under_churn() {
    for mode in [EvictionMode::CacheBased, EvictionMode::GcBased] {
        // 4 × 16 MiB devices: ~11 one-MiB bands each, 44 MiB for a 75 MiB working set.
        let devs = devices(4, 16);
        let mut cf = cfg(24 << 20);
        cf.eviction = mode;
        cf.policy = reo_cache::PolicyKind::S3Fifo;
        let c = open(&devs, cf);
        let objects = 2000u64;
        let mut rng = reo_media::rng::Xoshiro256pp::new(7);
        let zipf = reo_trace::generate::Zipf::new(objects, 0.9, 0.0);
        for i in 0..10_000u64 {
            let k = zipf.sample(&mut rng) + 1;
            let data = content(k, (FRAG / 2 + (k % 7) * 4096) as usize);
            let got = read_through(&c, format!("o{k}").as_bytes(), &data, 0, u64::MAX, i);
            assert_eq!(got, data, "{mode}: object {k}");
            c.maintain();
        }
        let s = c.stats();
        eprintln!(
            "{mode}: hit ratio {:.3}, cache writes {} MiB, gc writes {} MiB, evictions {}, gc evictions {}, flwa {:?}",
            s.ratios().hit_ratio,
            s.cache_write_bytes >> 20,
            s.gc_write_bytes >> 20,
            s.evictions,
            s.gc_evictions,
            s.ratios().flwa
        );
        assert!(s.ratios().hit_ratio > 0.2, "{mode}");
        match mode {
            EvictionMode::CacheBased => assert!(s.gc_write_bytes > 0 && s.evictions > 0, "{mode}: holes compacted"),
            EvictionMode::GcBased => assert!(s.gc_evictions > 0 && s.evictions == 0, "{mode}: GC drops"),
        }
    }
}

#[test]
fn restart_keeps_the_cache_warm_and_dirty_state() {
    let devs = devices(4, 64);
    let d = content(5, (3 * FRAG + 7) as usize);
    let clean = content(6, 999);
    let last;
    {
        let c = open(&devs, cfg(8 << 20));
        c.put(b"b/dirty", &d, &meta(), true, 1).unwrap();
        read_through(&c, b"b/clean", &clean, 0, u64::MAX, 2);
        // Overwrite: the old version must not come back.
        c.put(b"b/dirty", &d[..100], &meta(), true, 3).unwrap();
        let m3 = ObjectMeta { etag: "\"v3\"".into(), user: vec![("owner".into(), "ana".into())], ..meta() };
        last = c.put(b"b/dirty", &d, &m3, true, 4).unwrap();
        let store = c.store().clone();
        drop(c);
        Arc::try_unwrap(store).ok().expect("sole owner").close().unwrap();
    }
    let c = open(&devs, cfg(8 << 20));
    let info = c.info(b"b/dirty").unwrap();
    assert!(info.dirty && info.size == d.len() as u64 && info.cached_fragments == 4);
    let r = c.get(b"b/dirty", 0, u64::MAX, 10).unwrap();
    assert_eq!(r.pieces.into_iter().flat_map(|p| p.data.unwrap()).collect::<Vec<_>>(), d);
    assert!(c.get(b"b/clean", 0, u64::MAX, 11).unwrap().is_hit());
    let m = c.meta(b"b/dirty").unwrap();
    assert_eq!((m.etag.as_str(), m.user.clone()), ("\"v3\"", vec![("owner".to_string(), "ana".to_string())]));
    // The flusher resumes with the version the last write's receipt named.
    let dirty = c.dirty_keys();
    assert_eq!(dirty.len(), 1);
    assert_eq!(dirty[0].0, b"b/dirty".to_vec());
    assert_eq!(dirty[0].1, last.version);
    assert!(c.mark_clean(b"b/dirty", dirty[0].1).unwrap());
    assert_eq!(c.store().blob_count(), 5, "older versions freed");
}

/// A flushed one-blob object turns clean in place: the first of its dirty copies stays as the
/// isolated clean copy, nothing is rewritten, and a reopening finds it clean; a larger object is
/// rewritten as before.
#[test]
fn a_flushed_small_object_turns_clean_without_a_rewrite() {
    let devs = devices(4, 64);
    let small = content(7, 3000);
    let big = content(8, (FRAG + 5) as usize);
    {
        let c = open(&devs, cfg(8 << 20));
        let vs = c.put(b"b/small", &small, &meta(), true, 1).unwrap();
        let vb = c.put(b"b/big", &big, &meta(), true, 1).unwrap();
        let (blobs, written) = (c.store().blob_count(), c.store().stats().put_device_bytes);
        assert!(c.mark_clean(b"b/small", vs.version).unwrap());
        assert_eq!(c.store().stats().put_device_bytes, written, "nothing rewritten");
        assert_eq!(c.store().blob_count(), blobs);
        let info = c.info(b"b/small").unwrap();
        assert!(!info.dirty && info.class == Class::Cold);
        assert_eq!(info.schemes, vec![Scheme::None(Placement::Isolated)]);
        assert_eq!(c.stats().cleaned_in_place_bytes, 3000);
        assert!(c.mark_clean(b"b/big", vb.version).unwrap());
        assert!(c.store().stats().put_device_bytes > written, "two fragments: rewritten");
        assert_eq!(c.stats().cleaned_in_place_bytes, 3000);
        assert!(c.dirty_keys().is_empty());
        let r = c.get(b"b/small", 0, u64::MAX, 2).unwrap();
        assert!(r.is_hit());
        assert_eq!(r.pieces.into_iter().flat_map(|p| p.data.unwrap()).collect::<Vec<_>>(), small);
    } // dropped without a close: the journal is replayed
    let c = open(&devs, cfg(8 << 20));
    assert!(c.dirty_keys().is_empty(), "the transition was durable");
    let info = c.info(b"b/small").unwrap();
    assert!(!info.dirty);
    assert_eq!(info.schemes, vec![Scheme::None(Placement::Isolated)]);
    let r = c.get(b"b/small", 0, u64::MAX, 3).unwrap();
    assert_eq!(r.pieces.into_iter().flat_map(|p| p.data.unwrap()).collect::<Vec<_>>(), small);
}

/// A cache kept full of small objects by its byte bound would hold more blobs than a checkpoint
/// slot can record: the store refuses the put past its metadata room, and the cache evicts clean
/// objects instead of failing write-back PUTs. With only dirty objects left, a put fails with
/// `Full` (the gateway's 503 SlowDown) and loses nothing; once they are flushed, puts go on.
#[test]
fn small_objects_past_the_metadata_room_evict_instead_of_failing() {
    let devs = devices(4, 64);
    let store_cfg = reo_store::StoreConfig { checkpoint_size: Some(64 << 10), ..store_cfg() };
    let open = || {
        let (store, _) = reo_store::Store::open(devs.to_vec(), &store_cfg).unwrap();
        reo_cache::Cache::open(Arc::new(store), cfg(48 << 20)).unwrap()
    };
    let key = |i: usize| format!("bkt/small-{i:05}").into_bytes();
    let c = open();
    for i in 0..2000 {
        let v = c.put(&key(i), &content(i as u64, 1024), &meta(), true, i as u64).unwrap();
        assert!(c.mark_clean(&key(i), v.version).unwrap());
    }
    let room = c.store().metadata_room();
    assert!(room.used <= room.limit, "{room:?}");
    assert!(c.stats().evictions > 0);
    assert!(c.store().blob_count() < 1000, "{} blobs: not bounded by the room", c.store().blob_count());
    assert!(!c.get(&key(0), 0, u64::MAX, 1).unwrap().is_hit(), "the oldest was evicted");
    let r = c.get(&key(1999), 0, u64::MAX, 2).unwrap();
    assert_eq!(r.pieces.into_iter().flat_map(|p| p.data.unwrap()).collect::<Vec<_>>(), content(1999, 1024));
    // A record larger than the batch a 64th of the slot frees still finds its room.
    let mut big = meta();
    big.user = vec![("note".into(), "x".repeat(6000))];
    let v = c.put(b"bkt/big-metadata", &content(3, 1024), &big, true, 3).unwrap();
    assert!(c.mark_clean(b"bkt/big-metadata", v.version).unwrap());

    // Dirty objects cannot be evicted: the room fills with them, and the put that does not fit
    // is refused.
    let mut dirty = Vec::new();
    let refused = loop {
        let i = 10_000 + dirty.len();
        match c.put(&key(i), &content(i as u64, 1024), &meta(), true, i as u64) {
            Ok(v) => dirty.push((i, v.version)),
            Err(e) => break e,
        }
        assert!(dirty.len() < 2000, "never refused");
    };
    assert!(matches!(&refused, WriteError::Full(m) if m.contains("metadata")), "{refused}");
    let (i, _) = dirty[dirty.len() - 1];
    let r = c.get(&key(i), 0, u64::MAX, 3).unwrap();
    assert_eq!(r.pieces.into_iter().flat_map(|p| p.data.unwrap()).collect::<Vec<_>>(), content(i as u64, 1024));
    for (i, version) in &dirty[..dirty.len() / 2] {
        assert!(c.mark_clean(&key(*i), *version).unwrap());
    }
    c.put(b"bkt/after-flush", &content(1, 1024), &meta(), true, 4).unwrap();
    drop(c); // a crash: every acknowledged dirty object comes back
    let c = open();
    assert_eq!(c.dirty_keys().len(), dirty.len() - dirty.len() / 2 + 1);
    for (i, _) in &dirty[dirty.len() / 2..] {
        let r = c.get(&key(*i), 0, u64::MAX, 5).unwrap();
        assert_eq!(r.pieces.into_iter().flat_map(|p| p.data.unwrap()).collect::<Vec<_>>(), content(*i as u64, 1024));
    }
}

/// A clean blob of another version, newer on flash than an acknowledged dirty write, whose free a
/// crash undid (what a fill that lost a race with the write leaves): the dirty write wins.
#[test]
fn an_undone_free_of_a_newer_clean_blob_does_not_beat_a_dirty_write() {
    use reo_cache::header::{BlobKind, HeaderRef};
    use reo_store::{Durability, PutOptions};
    let devs = devices(5, 64);
    let (key, x, z) = (b"bkt/k", content(1, 1000), content(2, 1000));
    let mx = ObjectMeta { etag: "x".into(), content_type: "t".into(), mtime_ns: 2, ..Default::default() };
    {
        let c = open(&devs, cfg(32 << 20));
        let receipt = c.put(key, &x, &mx, true, 10).unwrap();
        assert_ne!(receipt.version, 0);
        // The stale fill's blob: written after the dirty one, its put record made durable by
        // another request's flush, its free not.
        let header = HeaderRef {
            kind: BlobKind::Fragment,
            dirty: false,
            class: Class::Cold,
            object_size: z.len() as u64,
            fragment: 0,
            mtime_ns: 1,
            key,
            etag: "z",
            content_type: "t",
            user: &[],
            system: &[],
            write: 0,
        }
        .encode();
        let store = c.store().clone();
        let loc = store.put(&header, &z, &PutOptions::new(Scheme::Replicate(1)).placement(1)).unwrap();
        store.flush().unwrap();
        store.free(&loc, Durability::None).unwrap();
        drop(c);
        Arc::try_unwrap(store).ok().expect("sole owner").kill();
    }
    let (store, _) =
        reo_store::Store::open(devs.to_vec(), &reo_store::StoreConfig { create: false, ..store_cfg() }).unwrap();
    let c = reo_cache::Cache::open(Arc::new(store), cfg(32 << 20)).unwrap();
    // Regression: the newest blob's version won, the acknowledged dirty write was freed.
    assert_eq!(c.dirty_keys().len(), 1, "the dirty write is still there to flush");
    assert_eq!(c.meta(key).unwrap().etag, "x");
    let r = c.get(key, 0, u64::MAX, 20).unwrap();
    assert_eq!(r.pieces.into_iter().flat_map(|p| p.data.unwrap()).collect::<Vec<_>>(), x);
}

#[test]
fn a_dead_device_costs_only_clean_data() {
    let devs = devices(4, 64);
    let c = open(&devs, cfg(8 << 20));
    let dirty = content(7, (2 * FRAG) as usize);
    c.put(b"b/dirty", &dirty, &meta(), true, 1).unwrap();
    let mut cold = Vec::new();
    for i in 0..16u64 {
        let d = content(50 + i, 5000);
        read_through(&c, format!("b/c{i}").as_bytes(), &d, 0, u64::MAX, 2);
        cold.push(d);
    }
    c.store().fail_device(1).unwrap();
    let r = c.get(b"b/dirty", 0, u64::MAX, 3).unwrap();
    assert_eq!(r.pieces.into_iter().flat_map(|p| p.data.unwrap()).collect::<Vec<_>>(), dirty);
    let mut lost = 0;
    for (i, d) in cold.iter().enumerate() {
        let key = format!("b/c{i}");
        let r = c.get(key.as_bytes(), 0, u64::MAX, 4).unwrap();
        if !r.is_hit() {
            lost += 1;
        }
        // A lost object is refetched; what is served is exact either way.
        let got = read_through(&c, key.as_bytes(), d, 0, u64::MAX, 5);
        assert_eq!(&got, d, "never wrong bytes");
    }
    // Isolated placement: about a quarter of the cold objects lived on the dead device.
    assert!((1..16).contains(&lost), "lost {lost} of 16");
}

/// A sequential scan through the cache does not flush the hot set under SEQR or TC (it does under
/// admit-all); rejections are counted by reason; a write budget caps flash writes.
#[test]
fn admission_keeps_the_hot_set_through_a_scan_and_budgets_writes() {
    for (name, kept) in [("aa", false), ("seqr", true), ("tc", true), ("seqr+tc", true)] {
        let mut cf = cfg(32 * FRAG);
        cf.admission = name.parse().unwrap();
        let c = open(&devices(4, 64), cf);
        let hot: Vec<Vec<u8>> = (0..16).map(|i| content(i, FRAG as usize)).collect();
        for round in 0..3 {
            for (i, d) in hot.iter().enumerate() {
                read_through(&c, format!("hot{i}").as_bytes(), d, 0, u64::MAX, round * 100 + i as u64);
            }
        }
        let scan = content(99, (200 * FRAG) as usize);
        for f in 0..200u64 {
            read_through(&c, b"backup.tar", &scan, f * FRAG, (f + 1) * FRAG, 1_000 + f);
        }
        let hits =
            (0..16).filter(|i| c.get(format!("hot{i}").as_bytes(), 0, u64::MAX, 5_000).unwrap().is_hit()).count();
        let st = c.stats();
        eprintln!("{name}: {hits}/16 hot objects still cached, admission {:?}", st.admission);
        if kept {
            assert!(hits >= 15, "{name}: the scan flushed the hot set ({hits}/16 left)");
            assert!(st.admission.rejected >= 190, "{name}: scan fragments rejected and counted");
        } else {
            assert!(hits <= 2, "{name}: admit-all should have been flushed ({hits}/16 left)");
        }
        assert_eq!(st.admission.requests, st.admission.admitted + st.admission.rejected + st.admission.throttled);
    }
    // A budget of 10 fragments a day (no burst beyond it) over one simulated hour: at most the
    // budget's share plus the burst reaches flash.
    let mut cf = cfg(64 * FRAG);
    cf.admission = format!("aa,budget={},burst={}", 10 * FRAG, 4 * FRAG).parse().unwrap();
    let c = open(&devices(4, 64), cf);
    let hour = 3_600_000_000_000u64;
    for i in 0..100u64 {
        read_through(&c, format!("o{i}").as_bytes(), &content(i, FRAG as usize), 0, u64::MAX, i * hour / 100);
    }
    let st = c.stats();
    assert!(st.cache_write_bytes <= 4 * FRAG + 10 * FRAG / 24, "{} bytes written", st.cache_write_bytes);
    assert!(st.admission.throttled > 90, "{:?}", st.admission);
}

/// The backend changed an object (same size, new ETag) between two partial reads: fragments of the
/// two versions must never be served together.
#[test]
fn fragments_of_two_versions_never_mix() {
    let c = open(&devices(4, 64), cfg(64 * FRAG));
    let (v1, v2) = (content(1, (3 * FRAG) as usize), content(2, (3 * FRAG) as usize));
    let m1 = ObjectMeta { etag: "\"v1\"".into(), ..meta() };
    let m2 = ObjectMeta { etag: "\"v2\"".into(), ..meta() };
    let f = FRAG as usize;
    assert_eq!(c.fill(b"o", 3 * FRAG, 0, &v1[..f], &m1, c.token(), 1).unwrap(), FillOutcome::Admitted);
    // The fill that must not change a version under readers leaves v1 whole.
    let other = c.fill_same_version(b"o", 3 * FRAG, 1, &v2[f..2 * f], &m2, c.token(), 2).unwrap();
    assert_eq!(other, FillOutcome::OtherVersion);
    assert_eq!(c.meta(b"o").unwrap().etag, m1.etag);
    assert_eq!(c.info(b"o").unwrap().cached_fragments, 1);
    assert_eq!(
        c.fill_same_version(b"o", 3 * FRAG, 1, &v1[f..2 * f], &m1, c.token(), 2).unwrap(),
        FillOutcome::Admitted
    );
    assert_eq!(c.fill(b"o", 3 * FRAG, 1, &v2[f..2 * f], &m2, c.token(), 2).unwrap(), FillOutcome::Admitted);
    let r = c.get(b"o", 0, u64::MAX, 3).unwrap();
    assert!(r.pieces[0].data.is_none(), "fragment 0 of v1 was dropped when v2 arrived");
    assert_eq!(r.pieces[1].data.as_deref(), Some(&v2[f..2 * f]));
    // A dirty version is newer than anything the backend returns: its fill is refused as stale.
    c.put(b"o", &v1, &m1, true, 4).unwrap();
    assert_eq!(c.fill(b"o", 3 * FRAG, 2, &v2[2 * f..], &m2, c.token(), 5).unwrap(), FillOutcome::Stale);
    let r = c.get(b"o", 0, u64::MAX, 6).unwrap();
    assert_eq!(r.pieces.into_iter().flat_map(|p| p.data.unwrap()).collect::<Vec<_>>(), v1);
}

/// A get of one version never reads another: a caller holding the metadata of v1 (its
/// checksum and length) is told v2's bytes are a miss, for a one-fragment object (its blob
/// header's ETag) as for a larger one (its version tag), from flash as from memory.
#[test]
fn a_get_of_one_version_never_reads_another() {
    let c = open(&devices(4, 64), CacheConfig { memory_bytes: 16 << 20, ..cfg(64 * FRAG) });
    let m1 = ObjectMeta { etag: "\"v1\"".into(), ..meta() };
    let m2 = ObjectMeta { etag: "\"v2\"".into(), ..meta() };
    for (key, len) in [(&b"small"[..], 3000usize), (&b"large"[..], (2 * FRAG + 5) as usize)] {
        let v2 = content(2, len);
        c.put(key, &v2, &m2, false, 1).unwrap();
        let r = c.get_version(key, &m1.etag, (0, len as u64), 2, true).unwrap();
        assert!(r.pieces.iter().all(|p| p.data.is_none()), "{:?}: another version read as v1", key);
        assert_eq!(r.missing().map(|(a, b)| b - a).sum::<u64>(), len as u64);
        assert!(c.get_memory(key, &m1.etag, (0, len as u64), 3).is_none());
        let r = c.get_version(key, &m2.etag, (0, len as u64), 4, true).unwrap();
        assert!(r.is_hit());
        let bytes: Vec<u8> = r.pieces.into_iter().flat_map(|p| p.data.unwrap().into_vec()).collect();
        assert!(bytes == v2);
        if len < FRAG as usize {
            // The read left a copy in memory, served for v2 only.
            assert!(c.get_memory(key, &m2.etag, (0, len as u64), 5).is_some());
            assert!(c.get_memory(key, &m1.etag, (0, len as u64), 6).is_none());
        }
    }
    // A fill of another version of a one-fragment object is told so (it was taken for cached
    // before: the copy would have stayed, a miss for every get of the other version), and
    // replaces it when asked.
    let v1 = content(1, 3000);
    assert_eq!(c.fill_same_version(b"small", 3000, 0, &v1, &m1, c.token(), 7).unwrap(), FillOutcome::OtherVersion);
    assert_eq!(c.fill(b"small", 3000, 0, &v1, &m1, c.token(), 8).unwrap(), FillOutcome::Admitted);
    assert!(c.get_version(b"small", &m1.etag, (0, 3000), 9, true).unwrap().is_hit());
    assert!(c.get_version(b"small", &m2.etag, (0, 3000), 10, true).unwrap().missing().count() == 1);
}

/// A fill of bytes fetched before a write (or delete) of the key is refused: the backend may
/// already hold newer bytes.
#[test]
fn a_fill_fetched_before_a_write_is_stale() {
    let c = open(&devices(4, 64), cfg(64 * FRAG));
    let (old, new) = (content(1, 5000), content(2, 5000));
    let miss = c.get(b"k", 0, u64::MAX, 1).unwrap();
    // Meanwhile a client overwrites the key (write-through), and the cache later evicts it.
    c.put(b"k", &new, &meta(), false, 2).unwrap();
    assert!(c.delete(b"k"));
    assert_eq!(c.fill(b"k", 5000, 0, &old, &meta(), miss.token, 3).unwrap(), FillOutcome::Stale);
    assert!(c.info(b"k").is_none());
    // A fresh miss can fill.
    let miss = c.get(b"k", 0, u64::MAX, 4).unwrap();
    assert_eq!(c.fill(b"k", 5000, 0, &new, &meta(), miss.token, 5).unwrap(), FillOutcome::Admitted);
    // A change learnt of elsewhere (another node's write) refuses older fills, and keeps the copy
    // until its owner drops it.
    let miss = c.get(b"j", 0, u64::MAX, 6).unwrap();
    c.invalidate(b"j");
    c.invalidate(b"k");
    assert_eq!(c.fill(b"j", 5000, 0, &old, &meta(), miss.token, 7).unwrap(), FillOutcome::Stale);
    assert!(c.info(b"j").is_none());
    assert!(c.get(b"k", 0, u64::MAX, 8).unwrap().is_hit());
}

/// The cleaner moving a dirty object's blobs does not change its version: the flusher's
/// mark_clean still applies. A dirty fragment lost beyond its redundancy is reported as data loss,
/// never replaced by the backend's older bytes.
#[test]
fn relocated_dirty_data_still_flushes_and_lost_dirty_data_is_reported() {
    let c = open(&devices(4, 64), cfg(64 * FRAG));
    let d = content(9, (2 * FRAG) as usize);
    let r = c.put(b"d", &d, &meta(), true, 1).unwrap();
    c.store().seal_open_bands();
    let mut passes = 0;
    while c.stats().gc_write_bytes < d.len() as u64 {
        assert!(c.clean_once() && passes < 16, "the cleaner moves the dirty blobs");
        passes += 1;
    }
    assert!(c.mark_clean(b"d", r.version).unwrap(), "version survives relocation");
    let info = c.info(b"d").unwrap();
    assert!(!info.dirty && info.cached_fragments == 2);
    let got = c.get(b"d", 0, u64::MAX, 2).unwrap();
    assert_eq!(got.pieces.into_iter().flat_map(|p| p.data.unwrap()).collect::<Vec<_>>(), d);

    // Lose a dirty fragment: every copy's device fails.
    let c = open(&devices(2, 64), {
        let mut cf = cfg(64 * FRAG);
        cf.class_schemes = Some(reo_cache::ClassSchemes::reo_default(2));
        cf
    });
    c.put(b"d", &d, &meta(), true, 1).unwrap();
    c.store().fail_device(0).unwrap();
    c.store().fail_device(1).unwrap();
    match c.get(b"d", 0, u64::MAX, 2) {
        Err(WriteError::DirtyLost(m)) => assert!(m.contains("dirty fragment"), "{m}"),
        other => panic!("expected DirtyLost, got {other:?}"),
    }
    assert_eq!(
        c.fill(b"d", d.len() as u64, 0, &d[..FRAG as usize], &meta(), c.token(), 3).unwrap(),
        FillOutcome::Stale
    );
    assert!(c.info(b"d").unwrap().dirty, "still dirty: the loss stays visible");
}

/// A flash full of dirty data still drains: a flush whose clean copy finds no room drops the
/// object (the backend holds it) instead of failing forever, and writes are accepted again.
#[test]
fn flushing_a_flash_full_of_dirty_data_frees_it() {
    let devs = devices(4, 24);
    let c = open(&devs, cfg(64 << 20));
    let d = content(3, FRAG as usize);
    let mut acked = Vec::new();
    for i in 0..10_000u64 {
        match c.put(format!("b/d{i}").as_bytes(), &d, &meta(), true, i) {
            Ok(r) => acked.push((format!("b/d{i}"), r.version)),
            Err(reo_cache::WriteError::Full(_)) => break,
            Err(e) => panic!("put {i}: {e}"),
        }
    }
    assert!(acked.len() > 10 && acked.len() < 10_000, "the flash filled with dirty data ({} puts)", acked.len());
    assert!(c.put(b"b/late", &d, &meta(), true, 20_000).is_err(), "full of dirty data: refused");
    let mut dropped = 0;
    for (k, v) in &acked {
        assert!(c.mark_clean(k.as_bytes(), *v).unwrap(), "{k}: flushed objects leave the dirty set");
        if c.info(k.as_bytes()).is_none() {
            dropped += 1;
        }
    }
    assert!(dropped > 0, "the first flushes had no room for a clean copy");
    assert_eq!(c.stats().flushed_dropped, dropped);
    assert!(c.dirty_keys().is_empty());
    c.put(b"b/late", &d, &meta(), true, 20_001).expect("room again after the flush");
}
