//! The hint engine on the gateway's in-memory test rig: a pin hint prefetches and pins at its
//! lease start and is undone at its end; evict removes; hints reload with their state;
//! reorganize moves cached bytes and their access history to the new prefix; neither a prefetch
//! nor a reorganize caches bytes of a version the backend no longer holds when an object is
//! rewritten while they run.

use super::engine::HintEngine;
use super::{unix_now, HintSpec, HintState, Intent, Lease, Target};
use crate::backend::{Backend, ObjectInfo};
use crate::gateway::tests::Rig;

fn spec(key: &str, intent: Intent, start: u64, end: u64) -> HintSpec {
    HintSpec {
        app_id: "t".into(),
        bucket: "bkt".into(),
        key: Some(key.into()),
        prefix: None,
        range: None,
        target: Target::Cache,
        intent,
        priority: 0,
        lease: Lease { start, end },
        reorganize: None,
    }
}

fn info(data: &[u8]) -> ObjectInfo {
    ObjectInfo {
        size: data.len() as u64,
        etag: crate::keys::md5_hex(data),
        content_type: "x/y".into(),
        user_meta: Default::default(),
        mtime_ns: 1,
        system: Default::default(),
    }
}

#[test]
fn pin_lease_applies_at_start_and_ends_at_end() {
    let rig = Rig::new();
    let (gw, backend) = rig.open();
    let data = vec![7u8; 200_000];
    backend.put("bkt", "obj", &data, &info(&data)).unwrap();
    let state = rig.dir.join("state");
    let e = HintEngine::open(gw.clone(), &state, 0).unwrap();
    let (start, end) = (unix_now() + 100, unix_now() + 200);
    let id = e.submit(spec("obj", Intent::Pin, start, end)).unwrap();
    e.tick(start - 1);
    assert!(gw.cache.info(b"bkt/obj").is_none(), "applied before its lease");
    e.tick(start);
    let i = gw.cache.info(b"bkt/obj").expect("prefetched");
    assert_eq!((i.cached_fragments, i.pinned), (i.fragments, true));
    assert_eq!(e.list()[0].state, HintState::Active);
    assert_eq!(e.list()[0].pinned, vec!["obj".to_string()]);
    assert_eq!(e.counters().prefetched_bytes, data.len() as u64);

    // Reloaded (a restart): the hint and its state are back.
    let again = HintEngine::open(gw.clone(), &state, 0).unwrap();
    assert_eq!(again.list()[0].request_id, id);
    assert_eq!(again.list()[0].state, HintState::Active);

    e.tick(end);
    assert!(e.list().is_empty());
    assert!(!gw.cache.info(b"bkt/obj").unwrap().pinned, "the pin outlived its lease");
    assert_eq!(e.counters().expired, 1);
}

#[test]
fn evict_and_cancel() {
    let rig = Rig::new();
    let (gw, backend) = rig.open();
    let data = vec![1u8; 10_000];
    backend.put("bkt", "e", &data, &info(&data)).unwrap();
    let e = HintEngine::open(gw.clone(), &rig.dir.join("state"), 0).unwrap();
    let now = unix_now();
    e.submit(spec("e", Intent::Open, now, now + 50)).unwrap();
    e.tick(now);
    assert!(gw.cache.info(b"bkt/e").is_some());
    e.submit(spec("e", Intent::Evict, now, now + 50)).unwrap();
    e.tick(now);
    assert!(gw.cache.info(b"bkt/e").is_none());
    let later = e.submit(spec("e", Intent::Pin, now + 10, now + 50)).unwrap();
    assert!(e.cancel(&later).unwrap());
    assert!(!e.cancel(&later).unwrap());
    assert!(e.submit(spec("e", Intent::Pin, now + 10, now)).is_err());
}

#[test]
fn reorganize_moves_cached_bytes_to_the_new_prefix() {
    let rig = Rig::new();
    let (gw, backend) = rig.open();
    let data = vec![9u8; 100_000];
    backend.put("bkt", "old/a", &data, &info(&data)).unwrap();
    let e = HintEngine::open(gw.clone(), &rig.dir.join("state"), 0).unwrap();
    let now = unix_now();
    e.submit(spec("old/a", Intent::Prefetch, now, now + 50)).unwrap();
    e.tick(now);
    assert!(gw.cache.info(b"bkt/old/a").is_some());
    for _ in 0..5 {
        gw.cache.get(b"bkt/old/a", 0, 10, 1).unwrap();
    }
    let before = gw.cache.info(b"bkt/old/a").unwrap();
    assert!(before.freq >= 5);
    // The application renames old/ to new/ in the backend, then says so.
    backend.put("bkt", "new/a", &data, &info(&data)).unwrap();
    backend.delete("bkt", "old/a").unwrap();
    let mut r = spec("x", Intent::Reorganize, now, now + 50);
    r.key = None;
    r.reorganize = Some(super::Move { from: "old/".into(), to: "new/".into() });
    e.submit(r).unwrap();
    e.tick(now);
    assert!(gw.cache.info(b"bkt/old/a").is_none());
    let i = gw.cache.info(b"bkt/new/a").expect("moved");
    assert_eq!(i.cached_fragments, i.fragments);
    assert_eq!((i.freq, i.hotness), (before.freq, before.hotness), "the access history moved too");
    assert_eq!(e.counters().reorganized_bytes, data.len() as u64);
}

#[test]
fn a_prefetch_of_an_object_rewritten_meanwhile_caches_no_cut_version() {
    let rig = Rig::new();
    let (gw, backend, counting) = rig.open_counting();
    let (v1, v2) = (vec![1u8; 100_000], vec![2u8; 200_000]);
    backend.put("bkt", "obj", &v1, &info(&v1)).unwrap();
    let e = HintEngine::open(gw.clone(), &rig.dir.join("state"), 0).unwrap();
    let now = unix_now();
    e.submit(spec("obj", Intent::Prefetch, now, now + 50)).unwrap();
    // The prefetch has learnt v1's size and waits; another client writes a longer v2.
    counting.after_head.set(false);
    let ticker = {
        let e = e.clone();
        std::thread::spawn(move || e.tick(now))
    };
    counting.after_head.wait_reached(1);
    backend.put("bkt", "obj", &v2, &info(&v2)).unwrap();
    counting.after_head.set(true);
    ticker.join().unwrap();
    // Regression: v2's first 100 000 bytes were cached as the whole object, under v2's ETag.
    let _r = gw.read_lock("bkt", "obj");
    let i = gw.head("bkt", "obj").unwrap();
    assert_eq!(i.size, v2.len() as u64);
    assert_eq!(gw.read("bkt", "obj", &i, 0, i.size).unwrap(), v2);
}

#[test]
fn reorganize_does_not_move_bytes_onto_a_key_rewritten_since_the_listing() {
    let rig = Rig::new();
    let (gw, backend, counting) = rig.open_counting();
    let (old, new) = (vec![9u8; 100_000], vec![5u8; 50_000]);
    backend.put("bkt", "old/a", &old, &info(&old)).unwrap();
    let e = HintEngine::open(gw.clone(), &rig.dir.join("state"), 0).unwrap();
    let now = unix_now();
    e.submit(spec("old/a", Intent::Prefetch, now, now + 50)).unwrap();
    e.tick(now);
    assert!(gw.cache.info(b"bkt/old/a").is_some());
    backend.put("bkt", "new/a", &old, &info(&old)).unwrap(); // the application's rename
    let mut r = spec("x", Intent::Reorganize, now, now + 50);
    r.key = None;
    r.reorganize = Some(super::Move { from: "old/".into(), to: "new/".into() });
    e.submit(r).unwrap();
    // The reorganize has listed new/ and waits; new/a is rewritten through the gateway (the
    // backend only: write-around) before it goes on.
    counting.after_list.set(false);
    let ticker = {
        let e = e.clone();
        std::thread::spawn(move || e.tick(now))
    };
    counting.after_list.wait_reached(1);
    gw.set_policies(vec!["bkt=write-around".parse().unwrap()]);
    gw.put("bkt", "new/a", &new, ObjectInfo::default()).unwrap();
    counting.after_list.set(true);
    ticker.join().unwrap();
    // Regression: old/a's bytes were cached as new/a (the listing's ETag matched them).
    let _r = gw.read_lock("bkt", "new/a");
    let i = gw.head("bkt", "new/a").unwrap();
    assert_eq!(gw.read("bkt", "new/a", &i, 0, i.size).unwrap(), new);
}

#[test]
fn a_users_pins_stay_within_its_pin_limit() {
    let rig = Rig::new();
    let (gw, backend) = rig.open();
    for k in ["a", "b", "c"] {
        let data = vec![3u8; 100_000];
        backend.put("bkt", k, &data, &info(&data)).unwrap();
    }
    let e = HintEngine::open(gw.clone(), &rig.dir.join("state"), 0).unwrap();
    let now = unix_now();
    // 250,000 bytes for the user: two objects of 100,000, not three.
    e.submit_for(spec("a", Intent::Pin, now, now + 100), Some("app"), 10, Some(250_000)).unwrap();
    e.submit_for(spec("b", Intent::Pin, now, now + 100), Some("app"), 10, Some(250_000)).unwrap();
    e.submit_for(spec("c", Intent::Pin, now, now + 100), Some("app"), 10, Some(250_000)).unwrap();
    // Another user's pins count against its own limit only.
    let mut other = spec("c", Intent::Pin, now, now + 100);
    other.app_id = "other".into();
    e.submit_for(other, Some("other"), 10, Some(250_000)).unwrap();
    e.tick(now);
    let hints = e.list();
    let app: Vec<_> = hints.iter().filter(|h| h.owner.as_deref() == Some("app")).collect();
    let pinned: usize = app.iter().map(|h| h.pinned.len()).sum();
    let refused: Vec<&String> = app.iter().flat_map(|h| h.pins_refused.iter()).collect();
    assert_eq!((pinned, refused.len()), (2, 1), "{hints:?}");
    let theirs = hints.iter().find(|h| h.owner.as_deref() == Some("other")).unwrap();
    assert_eq!(theirs.pinned, vec!["c".to_string()]);
}
