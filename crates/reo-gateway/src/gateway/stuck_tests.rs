//! Tests of objects stuck because their bucket was deleted in the backend behind the gateway
//! ([`super::stuck`]): kept, readable and reported, the backend not declared down, flushed once
//! the bucket exists again. Flush rounds are run by the test (no flusher thread, no sleeps).

use std::time::Duration;

use super::flusher::round;
use super::handle::Gateway;
use super::tests::Rig;
use crate::backend::{Backend, ObjectInfo};

fn info() -> ObjectInfo {
    ObjectInfo { content_type: "text/plain".into(), ..Default::default() }
}

fn body(gw: &Gateway, bucket: &str, key: &str) -> Vec<u8> {
    let _r = gw.read_lock(bucket, key);
    let i = gw.head(bucket, key).unwrap();
    gw.read(bucket, key, &i, 0, i.size).unwrap()
}

/// A gateway with two acknowledged, unflushed objects in bucket `gone`, which is then deleted in
/// the backend behind it (its directory removed), and one in `bkt`.
fn stuck_rig(rig: &Rig) -> (std::sync::Arc<Gateway>, std::sync::Arc<crate::backend::LocalBackend>) {
    let (gw, backend) = rig.open();
    backend.create_bucket("gone").unwrap();
    // Were the backend declared down, writes would be refused at once.
    gw.health.set_slowdown_after(Duration::ZERO);
    gw.put("gone", "a", b"acknowledged", info()).unwrap();
    gw.put("gone", "b", b"also", info()).unwrap();
    gw.put("bkt", "other", b"fine", info()).unwrap();
    std::fs::remove_dir_all(rig.dir.join("backend").join("gone")).unwrap();
    (gw, backend)
}

#[test]
fn objects_of_a_bucket_deleted_behind_the_gateway_are_kept_reported_and_not_an_outage() {
    let rig = Rig::new();
    let (gw, backend) = stuck_rig(&rig);
    // Regression: the flush failed with NoSuchBucket, counted as a backend failure: the backend
    // was marked down (writes to every bucket then got SlowDown) and the round backed off.
    assert!(!round(&gw), "a missing bucket is not a failed round");
    let h = gw.health.report();
    assert!(h.up && !h.slowing_down, "{h:?}");
    gw.put("bkt", "later", b"accepted", info()).unwrap();
    assert_eq!(backend.get_range("bkt", "other", 0, 99).unwrap().0, b"fine", "other buckets flush");
    // Nothing acknowledged is dropped: still dirty, readable, and reported.
    assert_eq!(body(&gw, "gone", "a"), b"acknowledged");
    let s = gw.stuck();
    assert_eq!((s.objects, s.bytes, s.buckets.len()), (2, 16, 1), "{s:?}");
    let b = &s.buckets[0];
    assert_eq!((b.bucket.as_str(), b.objects, b.bytes), ("gone", 2, 16));
    assert!(b.reason.contains("NoSuchBucket") && (b.key == "a" || b.key == "b"), "{b:?}");
    assert!(gw.counters().flush_errors >= 1);
    // Whether or not its retry is due yet (the schedule is the unit test's in `stuck`), another
    // round keeps them and flushes the rest.
    assert!(!round(&gw));
    assert_eq!(gw.stuck().objects, 2);
    assert_eq!(gw.dirty().0, 2, "bkt's objects are flushed, gone's kept");
}

#[test]
fn stuck_objects_flush_once_the_bucket_is_recreated_in_the_backend() {
    let rig = Rig::new();
    let (gw, backend) = stuck_rig(&rig);
    assert!(!round(&gw));
    assert_eq!(gw.stuck().objects, 2);
    // Recreated in the backend (not through the gateway): an explicit flush (`reo admin flush`)
    // retries at once instead of after the backoff.
    backend.create_bucket("gone").unwrap();
    gw.flush_now();
    assert!(!round(&gw));
    assert_eq!(backend.get_range("gone", "a", 0, 99).unwrap().0, b"acknowledged");
    assert_eq!(backend.get_range("gone", "b", 0, 99).unwrap().0, b"also");
    assert_eq!((gw.stuck().objects, gw.dirty().0), (0, 0));
}

#[test]
fn a_bucket_seen_to_exist_again_flushes_its_stuck_objects_without_waiting() {
    let rig = Rig::new();
    let (gw, backend) = stuck_rig(&rig);
    assert!(!round(&gw));
    backend.create_bucket("gone").unwrap();
    // A write into the bucket checks that it exists: its stuck objects are due at once.
    gw.put("gone", "c", b"new", info()).unwrap();
    assert!(!round(&gw));
    assert_eq!(backend.get_range("gone", "a", 0, 99).unwrap().0, b"acknowledged");
    assert_eq!((gw.stuck().objects, gw.dirty().0), (0, 0));
}
