//! Regression tests of the gateway's check-then-act races and failure orderings, each made
//! deterministic with the gates of the counting backend double ([`super::counting`]): one side
//! is held at a gate while the other runs to completion, then the first goes on. No sleeps.

use s3s::S3ErrorCode;

use super::handle::Gateway;
use super::policy::PolicyRule;
use super::tests::Rig;
use crate::backend::{Backend, ListQuery, ObjectInfo};

fn info() -> ObjectInfo {
    ObjectInfo { content_type: "text/plain".into(), ..Default::default() }
}

fn body(gw: &Gateway, key: &str) -> Vec<u8> {
    let _r = gw.read_lock("bkt", key);
    let i = gw.head("bkt", key).unwrap();
    gw.read("bkt", key, &i, 0, i.size).unwrap()
}

#[test]
fn a_failed_write_around_keeps_the_unflushed_version() {
    let rig = Rig::new();
    let (gw, _, counting) = rig.open_counting();
    gw.put("bkt", "k", b"acknowledged", info()).unwrap();
    // The next write of k is larger than the dirty budget (write-around), and the backend fails it.
    gw.set_dirty_limit(100);
    counting.fail_writes.store(true, std::sync::atomic::Ordering::SeqCst);
    let err = gw.put("bkt", "k", &[9u8; 1000], info()).unwrap_err();
    assert_eq!(*err.code(), S3ErrorCode::SlowDown);
    // Regression: the pending record and the cached bytes were dropped before the backend write,
    // so the failed write took the acknowledged one with it.
    assert_eq!(gw.dirty().0, 1, "the acknowledged write is still to be flushed");
    assert_eq!(body(&gw, "k"), b"acknowledged");
}

#[test]
fn a_failed_write_through_delete_keeps_the_unflushed_version() {
    let rig = Rig::new();
    let (gw, _, counting) = rig.open_counting();
    gw.put("bkt", "k", b"acknowledged", info()).unwrap();
    gw.set_policies(vec!["bkt=write-through".parse::<PolicyRule>().unwrap()]);
    counting.fail_writes.store(true, std::sync::atomic::Ordering::SeqCst);
    assert_eq!(*gw.delete("bkt", "k").unwrap_err().code(), S3ErrorCode::SlowDown);
    assert_eq!(*gw.put("bkt", "k", b"refused", info()).unwrap_err().code(), S3ErrorCode::SlowDown);
    // Regression: both dropped the unflushed version before the backend refused them.
    assert_eq!(gw.dirty().0, 1);
    assert_eq!(body(&gw, "k"), b"acknowledged");
}

#[test]
fn a_bucket_is_not_deleted_while_a_write_into_it_lands() {
    let rig = Rig::new();
    let (gw, backend, counting) = rig.open_counting();
    backend.create_bucket("bkt2").unwrap();
    // The write has seen the bucket exist and waits before recording the object.
    counting.after_head_bucket.set(false);
    let writer = {
        let gw = gw.clone();
        std::thread::spawn(move || gw.put("bkt2", "x", b"landing", info()))
    };
    counting.after_head_bucket.wait_reached(1);
    // Regression: the pending map held nothing of b2 yet, so the bucket was deleted, and the
    // write was acknowledged into a bucket that no longer existed (never flushable).
    let err = gw.delete_bucket("bkt2").unwrap_err();
    assert_eq!(*err.code(), S3ErrorCode::BucketNotEmpty);
    counting.after_head_bucket.set(true);
    writer.join().unwrap().unwrap();
    assert!(backend.head_bucket("bkt2").is_ok());
    assert_eq!(gw.head("bkt2", "x").unwrap().size, 7);
}

#[test]
fn a_write_into_a_bucket_being_deleted_is_refused() {
    let rig = Rig::new();
    let (gw, backend, counting) = rig.open_counting();
    backend.create_bucket("bkt2").unwrap();
    // The deletion has found the bucket empty and waits before the backend deletes it.
    counting.before_delete_bucket.set(false);
    let deleter = {
        let gw = gw.clone();
        std::thread::spawn(move || gw.delete_bucket("bkt2"))
    };
    counting.before_delete_bucket.wait_reached(1);
    // Regression: the bucket still existed, so the write was acknowledged; then it was deleted.
    assert_eq!(*gw.put("bkt2", "x", b"late", info()).unwrap_err().code(), S3ErrorCode::OperationAborted);
    assert_eq!(*gw.delete("bkt2", "y").unwrap_err().code(), S3ErrorCode::OperationAborted);
    counting.before_delete_bucket.set(true);
    deleter.join().unwrap().unwrap();
    assert_eq!(gw.dirty().0, 0, "nothing is pending for the deleted bucket");
}

#[test]
fn pending_deletes_do_not_end_a_listing_early() {
    let rig = Rig::new();
    let (gw, backend) = rig.open();
    for k in ["a", "b", "c"] {
        backend.put("bkt", k, b"x", &ObjectInfo { size: 1, etag: "e".into(), ..info() }).unwrap();
    }
    gw.delete("bkt", "b").unwrap(); // pending: no flusher runs here
    let mut q = ListQuery { max_keys: 1, ..Default::default() };
    let mut seen = Vec::new();
    loop {
        let page = gw.list("bkt", &q).unwrap();
        seen.extend(page.contents.iter().map(|e| e.key.clone()));
        if !page.truncated {
            break;
        }
        q.after = page.contents.last().expect("a truncated page has keys").key.clone();
    }
    // Regression: the backend was asked for max-keys + 1 keys (a, b); b's pending delete took
    // one away, and the page of [a] read as the end of the listing.
    assert_eq!(seen, ["a", "c"]);
}

#[test]
fn a_conditional_put_checks_and_writes_under_the_key_lock() {
    let rig = Rig::new();
    let (gw, _, counting) = rig.open_counting();
    // The condition's lookup reaches the backend (k is nowhere) and is held there.
    counting.after_head.set(false);
    let writer = {
        let gw = gw.clone();
        std::thread::spawn(move || {
            let absent = |cur: Option<&ObjectInfo>| match cur {
                None => Ok(()),
                Some(_) => Err(s3s::s3_error!(PreconditionFailed, "exists")),
            };
            gw.put_if("bkt", "k", b"first", info(), Some(absent))
        })
    };
    counting.after_head.wait_reached(1);
    // Regression: the S3 layer looked the object up with no lock and wrote it afterwards, so
    // another write could land in between (If-None-Match: * overwrote it), and the lookup's
    // revalidation could drop the cached copy of a write that landed meanwhile.
    let stripe = gw.stripe_of(&super::pending::cache_key("bkt", "k"));
    assert!(stripe.try_write().is_none() && stripe.try_read().is_none(), "the check runs under k's stripe");
    counting.after_head.set(true);
    writer.join().unwrap().unwrap();
    let again = gw.put_if(
        "bkt",
        "k",
        b"second",
        info(),
        Some(|cur: Option<&ObjectInfo>| match cur {
            None => Ok(()),
            Some(_) => Err(s3s::s3_error!(PreconditionFailed, "exists")),
        }),
    );
    assert_eq!(*again.unwrap_err().code(), S3ErrorCode::PreconditionFailed);
    assert_eq!(body(&gw, "k"), b"first");
}

#[test]
fn a_pending_delete_in_a_bucket_deleted_behind_the_gateway_is_done() {
    let rig = Rig::new();
    let (gw, backend) = rig.open();
    backend.create_bucket("bkt2").unwrap();
    gw.delete("bkt2", "x").unwrap(); // a tombstone, not yet applied
    backend.delete_bucket("bkt2").unwrap(); // by another client of the backend
                                            // Regression: the flusher's delete failed with NoSuchBucket, retried for ever and marked the
                                            // backend down (writes then got SlowDown).
    assert!(!super::flusher::round(&gw), "the round had no failure");
    assert_eq!(gw.dirty().0, 0);
    assert!(gw.health.report().up);
}

#[test]
fn a_write_fsyncs_its_record_before_answering_and_not_under_the_pending_map() {
    let rig = Rig::new();
    let (gw, _) = rig.open();
    gw.put("bkt", "before", b"flushed or not", info()).unwrap();
    let synced = gw.records.before_sync.reached();
    // The next write is held at the fsync of its pending record.
    gw.records.before_sync.set(false);
    let writer = {
        let gw = gw.clone();
        std::thread::spawn(move || gw.put("bkt", "k", b"landing", info()))
    };
    gw.records.before_sync.wait_reached(synced + 1);
    // Regression: the record was written and fsync'ed under the pending map's mutex, so every
    // HEAD, GET and listing waited for a concurrent PUT's fsync.
    assert!(gw.pending.try_lock().is_some(), "the pending map is free during the fsync");
    assert_eq!(gw.head("bkt", "before").unwrap().size, 14);
    assert_eq!(gw.dirty().0, 1);
    // Not acknowledged (nor visible) before its record is durable.
    assert!(!writer.is_finished());
    assert_eq!(*gw.head("bkt", "k").unwrap_err().code(), S3ErrorCode::NoSuchKey);
    gw.records.before_sync.set(true);
    writer.join().unwrap().unwrap();
    let on_disk = super::pending::Pending::open(&rig.dir.join("state").join("pending")).unwrap();
    assert_eq!(on_disk.map["bkt/k"].info.size, 7, "the acknowledged write's record is on disk");
}
