//! The hint engine on the gateway's in-memory test rig: a pin hint prefetches and pins at its
//! lease start and is undone at its end; evict removes; hints reload with their state;
//! reorganize moves cached bytes and their access history to the new prefix.

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
