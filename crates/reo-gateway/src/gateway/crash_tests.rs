//! Write-back state across a kill -9 ([`super::tests::Rig::kill`]: the store loses what it had
//! not made durable, the fsync'ed records stay): each test stops a transition at the point where
//! a crash used to undo an acknowledged operation, and checks that the restarted gateway serves
//! the last acknowledged state and flushes exactly it.

use std::sync::Arc;

use s3s::S3ErrorCode;

use super::flusher;
use super::handle::Gateway;
use super::policy::PolicyRule;
use super::tests::Rig;
use crate::backend::{Backend, LocalBackend, ObjectInfo};

fn info() -> ObjectInfo {
    ObjectInfo { content_type: "text/plain".into(), ..Default::default() }
}

fn deleted(gw: &super::Gateway, key: &str) -> bool {
    match gw.head("bkt", key) {
        Err(e) => *e.code() == S3ErrorCode::NoSuchKey,
        Ok(i) => panic!("{key} reads as {i:?}, expected deleted"),
    }
}

/// The put of `v1`, flushed: in the backend and clean in the cache.
fn flushed_v1(rig: &Rig) -> std::sync::Arc<super::Gateway> {
    let (gw, backend) = rig.open();
    gw.put("bkt", "k", b"version one", info()).unwrap();
    assert!(!flusher::round(&gw));
    assert_eq!(backend.get_range("bkt", "k", 0, u64::MAX).unwrap().0, b"version one");
    assert!(!gw.cache.info(b"bkt/k").unwrap().dirty, "cached clean");
    gw
}

#[test]
fn a_put_interrupted_after_a_delete_leaves_the_key_deleted() {
    let rig = Rig::new();
    let gw = flushed_v1(&rig);
    gw.delete("bkt", "k").unwrap();
    // The next PUT of the key dies after its record is durable, before its bytes land.
    {
        let _g = gw.stripe("bkt/k");
        gw.record_write("bkt", "k", &ObjectInfo { size: 3, etag: "e2".into(), mtime_ns: 7, ..info() }).unwrap();
    }
    rig.kill(gw);
    let (gw, backend) = rig.open();
    // Regression: the PUT's record had replaced the tombstone, and with no bytes behind it the
    // record was dropped at restart: the backend's version one came back.
    assert!(deleted(&gw, "k"));
    assert!(!flusher::round(&gw));
    assert!(deleted(&gw, "k"));
    assert!(backend.head("bkt", "k").is_err(), "the delete reached the backend");
    assert_eq!(gw.dirty().0, 0);
}

#[test]
fn a_put_interrupted_over_an_unflushed_write_keeps_that_write_exactly() {
    let rig = Rig::new();
    let (gw, backend) = rig.open();
    let long_type = "x/".to_string() + &"t".repeat(300);
    let acked = gw.put("bkt", "k", b"acknowledged", ObjectInfo { content_type: long_type.clone(), ..info() }).unwrap();
    {
        let _g = gw.stripe("bkt/k");
        gw.record_write("bkt", "k", &ObjectInfo { size: 5, etag: "e2".into(), mtime_ns: 7, ..info() }).unwrap();
    }
    rig.kill(gw);
    let (gw, _) = rig.open();
    let i = gw.head("bkt", "k").unwrap();
    // The record of the acknowledged write comes back whole (a blob header cuts a content type
    // at 255 bytes).
    assert_eq!((i.etag.as_str(), i.content_type.as_str()), (acked.etag.as_str(), long_type.as_str()));
    assert!(!flusher::round(&gw));
    let (bytes, binfo) = backend.get_range("bkt", "k", 0, u64::MAX).unwrap();
    assert_eq!((bytes.as_slice(), binfo.etag, binfo.content_type), (&b"acknowledged"[..], acked.etag, long_type));
}

#[test]
fn a_flushed_delete_of_a_clean_copy_survives_a_crash() {
    let rig = Rig::new();
    let gw = flushed_v1(&rig);
    gw.delete("bkt", "k").unwrap();
    assert!(!flusher::round(&gw), "the delete is applied and its tombstone retired");
    assert_eq!(gw.dirty().0, 0);
    rig.kill(gw);
    let (gw, _) = rig.open();
    // Regression: dropping the clean copy was not durable; the crash brought it back, and with
    // the tombstone retired it was served again.
    assert!(deleted(&gw, "k"));
    assert!(gw.cache.info(b"bkt/k").is_none());
}

#[test]
fn a_copy_dropped_before_a_delete_does_not_come_back() {
    let rig = Rig::new();
    let gw = flushed_v1(&rig);
    // Evicted (a hint, a revalidation): a drop that need not be durable by itself.
    gw.cache.delete(b"bkt/k");
    gw.delete("bkt", "k").unwrap();
    assert!(!flusher::round(&gw));
    rig.kill(gw);
    let (gw, _) = rig.open();
    assert!(deleted(&gw, "k"));
}

#[test]
fn a_put_after_a_flushed_delete_is_flushed_without_its_prev() {
    let rig = Rig::new();
    let gw = flushed_v1(&rig);
    gw.delete("bkt", "k").unwrap();
    let v2 = gw.put("bkt", "k", b"version two", info()).unwrap();
    assert!(gw.pending().map["bkt/k"].prev.as_ref().is_some_and(|p| p.deleted), "v2's record keeps the tombstone");
    // The flush dies after v2 is in the backend and clean in the cache, before its record goes.
    gw.flushing.crash_before_retire.store(true, std::sync::atomic::Ordering::SeqCst);
    assert!(flusher::round(&gw));
    assert!(!gw.cache.info(b"bkt/k").unwrap().dirty);
    rig.kill(gw);
    let (gw, backend) = rig.open();
    // Once flushed, the write's record no longer falls back to the delete.
    assert_eq!(gw.head("bkt", "k").unwrap().etag, v2.etag);
    assert_eq!(gw.dirty().0, 0, "the leftover record is dropped: nothing left to flush");
    assert_eq!(backend.get_range("bkt", "k", 0, u64::MAX).unwrap().0, b"version two");
}

/// A flush that marked its object clean but did not retire its record (the clean mark's
/// durability failed, or here a stop before the retirement) is retired by the next round, with
/// no restart: before, the object was no longer dirty, the round's clean mark returned false,
/// and the record stayed for ever, the object written to the backend again every round.
#[test]
fn a_clean_object_whose_record_was_left_is_retired_by_the_next_round() {
    let rig = Rig::new();
    let (gw, backend) = rig.open();
    gw.put("bkt", "k", b"version one", info()).unwrap();
    gw.flushing.crash_before_retire.store(true, std::sync::atomic::Ordering::SeqCst);
    assert!(flusher::round(&gw));
    assert!(!gw.cache.info(b"bkt/k").unwrap().dirty);
    assert_eq!(gw.dirty().0, 1, "the record is left");
    gw.flushing.crash_before_retire.store(false, std::sync::atomic::Ordering::SeqCst);
    assert!(!flusher::round(&gw));
    assert_eq!(gw.dirty().0, 0, "retired");
    assert_eq!(backend.get_range("bkt", "k", 0, u64::MAX).unwrap().0, b"version one");
    let i = gw.head("bkt", "k").unwrap();
    assert_eq!(gw.read("bkt", "k", &i, 0, i.size).unwrap(), b"version one");
}

#[test]
fn a_write_through_overwrite_does_not_bring_the_old_copy_back() {
    let rig = Rig::new();
    let (gw, backend) = rig.open();
    gw.set_policies(vec!["bkt=write-through".parse::<PolicyRule>().unwrap()]);
    gw.put("bkt", "k", b"version one", info()).unwrap();
    gw.cache.store().flush().unwrap(); // the clean copy of v1 is durable
    let v2 = gw.put("bkt", "k", b"version two", info()).unwrap();
    rig.kill(gw);
    let (gw, _) = rig.open();
    // Regression: v1's clean copy was dropped without durability; the crash brought it back and
    // it was served though the backend holds v2.
    assert_eq!(gw.head("bkt", "k").unwrap().etag, v2.etag);
    assert_eq!(backend.get_range("bkt", "k", 0, u64::MAX).unwrap().0, b"version two");
}

#[test]
fn a_delete_outside_write_back_does_not_bring_the_copy_back() {
    let rig = Rig::new();
    let (gw, _) = rig.open();
    gw.set_policies(vec!["bkt=write-through".parse::<PolicyRule>().unwrap()]);
    gw.put("bkt", "k", b"version one", info()).unwrap();
    gw.cache.store().flush().unwrap();
    gw.delete("bkt", "k").unwrap();
    rig.kill(gw);
    let (gw, _) = rig.open();
    assert!(deleted(&gw, "k"));
}

#[test]
fn the_flusher_holds_no_lock_while_the_backend_writes() {
    let rig = Rig::new();
    let (gw, backend, counting) = rig.open_counting();
    let v1 = gw.put("bkt", "k", b"version one", info()).unwrap();
    counting.before_write.set(false);
    let round = {
        let gw = gw.clone();
        std::thread::spawn(move || flusher::round(&gw))
    };
    counting.before_write.wait_reached(1);
    assert!(gw.stripe_of("bkt/k").try_write().is_some(), "the flush holds no lock during its backend call");
    // The backend holds the flush; the key is answered from the cache, and written.
    assert_eq!(gw.head("bkt", "k").unwrap().etag, v1.etag);
    let v2 = gw.put("bkt", "k", b"version two", info()).unwrap();
    counting.before_write.set(true);
    assert!(!round.join().unwrap());
    // The flush of v1 did not retire v2's pending state; the next round flushes v2.
    assert_eq!(gw.head("bkt", "k").unwrap().etag, v2.etag);
    assert!(gw.cache.info(b"bkt/k").unwrap().dirty);
    assert!(!flusher::round(&gw));
    assert_eq!(backend.get_range("bkt", "k", 0, u64::MAX).unwrap().0, b"version two");
    assert_eq!(gw.dirty().0, 0);
}

/// A write-back object of several flush windows (of one fragment each: the flusher reads them
/// one at a time, after its first, without a lock), whose flush is held in its backend call
/// while `change` rewrites or deletes it. Returns the gateway and the backend under it, the
/// round over (it reports no failure).
fn flush_held_while(change: impl FnOnce(&Gateway)) -> (Rig, Arc<Gateway>, Arc<LocalBackend>) {
    let rig = Rig::new();
    let (gw, backend, counting) = rig.open_counting();
    gw.flush_window.store(1, std::sync::atomic::Ordering::Relaxed);
    let v1: Vec<u8> = (0..300_000u32).map(|i| i as u8).collect();
    gw.put("bkt", "k", &v1, info()).unwrap();
    counting.before_write.set(false);
    let round = {
        let gw = gw.clone();
        std::thread::spawn(move || flusher::round(&gw))
    };
    counting.before_write.wait_reached(1);
    change(&gw);
    counting.before_write.set(true);
    assert!(!round.join().unwrap(), "not a failure: the object changed");
    // Neither version half and half, nor a failure: the flush of v1 was abandoned uncommitted.
    assert!(matches!(backend.head("bkt", "k"), Err(crate::backend::BackendError::NoSuchKey(_))));
    assert_eq!((gw.counters().flushes_abandoned, gw.counters().flush_errors), (1, 0));
    assert!(!flusher::round(&gw));
    assert_eq!(gw.dirty().0, 0);
    (rig, gw, backend)
}

#[test]
fn a_flush_is_abandoned_when_its_object_is_rewritten_while_it_is_read() {
    let v2: Vec<u8> = (0..300_000u32).map(|i| (i * 5 + 1) as u8).collect();
    let (_rig, _gw, backend) = flush_held_while(|gw| {
        gw.put("bkt", "k", &v2, info()).unwrap();
    });
    assert_eq!(backend.get_range("bkt", "k", 0, u64::MAX).unwrap().0, v2, "the next round flushed v2");
}

#[test]
fn a_flush_is_abandoned_when_its_object_is_deleted_while_it_is_read() {
    let (_rig, _gw, backend) = flush_held_while(|gw| gw.delete("bkt", "k").unwrap());
    assert!(matches!(backend.head("bkt", "k"), Err(crate::backend::BackendError::NoSuchKey(_))));
}

#[test]
fn a_write_through_waits_for_the_flush_of_its_key() {
    let rig = Rig::new();
    let (gw, backend, counting) = rig.open_counting();
    gw.put("bkt", "k", b"older, unflushed", info()).unwrap();
    counting.before_write.set(false);
    let round = {
        let gw = gw.clone();
        std::thread::spawn(move || flusher::round(&gw))
    };
    counting.before_write.wait_reached(1);
    gw.set_policies(vec!["bkt=write-through".parse::<PolicyRule>().unwrap()]);
    let writer = {
        let gw = gw.clone();
        std::thread::spawn(move || gw.put("bkt", "k", b"newer, written through", info()))
    };
    // The write-through does not overtake the flush in progress (its older bytes would land
    // last): it waits for it, before its own backend write.
    gw.flushing.wait_for_waiters(1);
    assert_eq!(counting.before_write.reached(), 1, "only the flush reached the backend");
    counting.before_write.set(true);
    assert!(!round.join().unwrap());
    writer.join().unwrap().unwrap();
    assert_eq!(backend.get_range("bkt", "k", 0, u64::MAX).unwrap().0, b"newer, written through");
    assert_eq!(gw.dirty().0, 0);
}
