//! Tests of the hot path (`hot.rs`): a memory hit is answered without the blocking path and
//! counted once, like the blocking path's; so is a small flash hit on a runtime of several
//! workers, while one of a single worker, a large or multi-fragment object, or all the workers'
//! read shares taken give way; whatever needs a wait (a writer on the stripe, a revalidation
//! due, nothing cached) gives way with nothing counted; a rewrite replaces what it serves, and a
//! deleted unflushed key answers `NoSuchKey`.

use std::sync::Arc;

use super::handle::Gateway;
use super::stream::ReadPlan;
use super::tests::Rig;
use crate::backend::{Backend, ObjectInfo};

fn object(len: usize, seed: u8) -> Vec<u8> {
    (0..len).map(|i| (i as u8).wrapping_mul(29).wrapping_add(seed) ^ (i >> 9) as u8).collect()
}

fn open(memory: u64) -> (Rig, Arc<Gateway>, Arc<crate::backend::LocalBackend>) {
    let mut rig = Rig::new();
    rig.memory_bytes = memory;
    let (gw, backend) = rig.open();
    (rig, gw, backend)
}

fn info(data: &[u8]) -> ObjectInfo {
    ObjectInfo { size: data.len() as u64, etag: crate::keys::md5_hex(data), ..Default::default() }
}

/// The hot path's plan, as the S3 layer makes it: `None` when it gave way.
fn plan_now(gw: &Gateway, key: &str, start: u64, end: u64) -> Option<(ObjectInfo, ReadPlan)> {
    let hot = gw.try_hot("bkt", key)?;
    let info = hot.head()?.unwrap();
    let plan = hot.read_plan(&info, start, end.min(info.size))?.unwrap();
    Some((info, plan))
}

/// The hot path's answer: `None` when it gave way, else the info and bytes `[start, end)`.
async fn now(gw: &Gateway, key: &str, start: u64, end: u64) -> Option<(ObjectInfo, Vec<u8>)> {
    let (info, plan) = plan_now(gw, key, start, end)?;
    assert!(plan.is_hit());
    Some((info, plan.collect().await.unwrap()))
}

/// The hot path answers `k`'s HEAD by itself, with `NoSuchKey`.
fn assert_no_such_key(gw: &Gateway) {
    let hot = gw.try_hot("bkt", "k").expect("the stripe is free");
    let e = hot.head().expect("answered").unwrap_err();
    assert_eq!(*e.code(), s3s::S3ErrorCode::NoSuchKey);
}

/// The blocking path's whole-object read (as the S3 layer makes it, on this thread).
async fn blocking_read(gw: &Arc<Gateway>, key: &str) -> Vec<u8> {
    let plan = {
        let _r = gw.read_lock("bkt", key);
        let info = gw.head("bkt", key).unwrap();
        gw.read_plan("bkt", key, &info, 0, info.size).unwrap()
    };
    plan.opened().await.unwrap();
    plan.collect().await.unwrap()
}

/// `data` put in the backend as `k` and read once through the gateway: a miss that fills flash.
async fn filled(gw: &Arc<Gateway>, backend: &crate::backend::LocalBackend, data: &[u8]) {
    backend.put("bkt", "k", data, &info(data)).unwrap();
    assert_eq!(blocking_read(gw, "k").await, data);
    gw.fetch.flights.wait_idle();
}

#[tokio::test]
async fn a_written_object_is_served_from_memory_and_counted_once() {
    let (_rig, gw, _) = open(4 << 20);
    let data = object(150_000, 1);
    gw.put("bkt", "k", &data, info(&data)).unwrap();
    let before = gw.cache.stats();
    let (i, got) = now(&gw, "k", 0, u64::MAX).await.expect("a memory hit");
    assert_eq!((i.size, i.etag.as_str()), (data.len() as u64, crate::keys::md5_hex(&data).as_str()));
    assert_eq!(got, data);
    let (_, part) = now(&gw, "k", 70_000, 140_001).await.expect("a range of a memory hit");
    assert_eq!(part, &data[70_000..140_001]);
    let after = gw.cache.stats();
    assert_eq!(after.requests - before.requests, 2);
    assert_eq!(after.memory_hits - before.memory_hits, 2);
    assert_eq!(after.hits - before.hits, 2);
}

/// (`#[tokio::test]` runs one worker thread: it never reads flash itself.)
#[tokio::test]
async fn bytes_only_on_flash_give_way_and_count_nothing() {
    let (_rig, gw, backend) = open(0);
    let data = object(20_000, 2);
    backend.put("bkt", "k", &data, &info(&data)).unwrap();
    // Nothing cached: no metadata in DRAM.
    let hot = gw.try_hot("bkt", "k").unwrap();
    assert!(hot.head().is_none());
    drop(hot);
    assert_eq!(blocking_read(&gw, "k").await, data);
    gw.fetch.flights.wait_idle();
    // Cached on flash now, but without a memory tier the bytes need a device read.
    let before = gw.cache.stats();
    assert!(now(&gw, "k", 0, u64::MAX).await.is_none());
    assert_eq!(gw.cache.stats().requests, before.requests);
    assert_eq!(blocking_read(&gw, "k").await, data);
    assert_eq!(gw.cache.stats().hits - before.hits, 1);
}

#[tokio::test]
async fn a_clean_object_read_from_flash_is_then_served_from_memory() {
    let (_rig, gw, backend) = open(4 << 20);
    let data = object(60_000, 3);
    filled(&gw, &backend, &data).await;
    assert!(now(&gw, "k", 0, u64::MAX).await.is_none(), "not in memory before a flash hit");
    assert_eq!(blocking_read(&gw, "k").await, data); // a flash hit: copied into memory
    assert_eq!(now(&gw, "k", 0, u64::MAX).await.expect("a memory hit").1, data);
}

#[tokio::test]
async fn a_writer_on_the_stripe_makes_it_give_way() {
    let (_rig, gw, _) = open(4 << 20);
    let data = object(4096, 4);
    gw.put("bkt", "k", &data, info(&data)).unwrap();
    let w = gw.stripe("bkt/k");
    assert!(plan_now(&gw, "k", 0, u64::MAX).is_none());
    drop(w);
    assert_eq!(now(&gw, "k", 0, u64::MAX).await.expect("a memory hit").1, data);
}

#[tokio::test]
async fn a_clean_copy_rewritten_or_deleted_is_never_served_again() {
    let (_rig, gw, backend) = open(4 << 20);
    let (v1, v2) = (object(30_000, 7), object(30_000, 8));
    filled(&gw, &backend, &v1).await;
    assert_eq!(blocking_read(&gw, "k").await, v1);
    assert_eq!(now(&gw, "k", 0, u64::MAX).await.expect("a memory hit of the clean copy").1, v1);
    gw.put("bkt", "k", &v2, info(&v2)).unwrap();
    let (i, got) = now(&gw, "k", 0, u64::MAX).await.expect("the write's copy");
    assert_eq!((got, i.etag), (v2.clone(), crate::keys::md5_hex(&v2)));
    gw.delete("bkt", "k").unwrap();
    assert_no_such_key(&gw);
}

#[tokio::test]
async fn a_revalidation_due_gives_way_to_the_backend() {
    let (_rig, gw, backend) = open(4 << 20);
    let data = object(4096, 5);
    filled(&gw, &backend, &data).await;
    assert_eq!(blocking_read(&gw, "k").await, data);
    assert!(now(&gw, "k", 0, u64::MAX).await.is_some());
    gw.set_revalidate_after(Some(std::time::Duration::ZERO));
    // (The backend answered: it is known up, so a due revalidation must ask it.)
    assert!(gw.health.is_known_up());
    let hot = gw.try_hot("bkt", "k").unwrap();
    assert!(hot.head().is_none());
}

#[tokio::test]
async fn a_deleted_unflushed_key_is_no_such_key() {
    let (_rig, gw, _) = open(4 << 20);
    let data = object(4096, 6);
    gw.put("bkt", "k", &data, info(&data)).unwrap();
    gw.delete("bkt", "k").unwrap();
    assert_no_such_key(&gw);
}

#[tokio::test]
async fn an_object_of_several_fragments_read_from_flash_is_then_served_from_memory() {
    let (_rig, gw, backend) = open(4 << 20);
    // Three fragments of 64 KiB: without a memory tier, its flash hits are read window by window.
    let data = object(150_000, 9);
    filled(&gw, &backend, &data).await;
    assert!(gw.cache.info(b"bkt/k").is_some_and(|i| i.fragments == 3 && i.cached_fragments == 3));
    assert!(now(&gw, "k", 0, u64::MAX).await.is_none());
    assert_eq!(blocking_read(&gw, "k").await, data); // a flash hit, read whole: copied
    let reads = gw.cache.store().stats().reads;
    assert_eq!(now(&gw, "k", 0, u64::MAX).await.expect("a memory hit").1, data);
    assert_eq!(gw.cache.store().stats().reads, reads, "a memory hit read a device");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_small_flash_hit_is_read_on_the_worker_and_counted_once() {
    let (_rig, gw, backend) = open(0);
    let data = object(20_000, 10);
    filled(&gw, &backend, &data).await;
    let (before, reads) = (gw.cache.stats(), gw.cache.store().stats().reads);
    let (i, got) = now(&gw, "k", 0, u64::MAX).await.expect("a flash hit read here");
    assert_eq!((i.size, got), (data.len() as u64, data.clone()));
    let (_, part) = now(&gw, "k", 5_000, 12_345).await.expect("a range of it");
    assert_eq!(part, &data[5_000..12_345]);
    let after = gw.cache.stats();
    assert_eq!((after.requests - before.requests, after.hits - before.hits), (2, 2));
    assert_eq!(after.memory_hits, before.memory_hits, "no memory tier");
    assert!(gw.cache.store().stats().reads > reads, "read from the devices");
    assert_eq!(gw.caller_reads.in_flight(), 0, "the read's share was given back");
    assert_eq!(gw.counters().worker_flash_reads, 2, "both read by the worker");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_flash_hit_gives_way_when_large_or_when_the_workers_shares_are_taken() {
    let (_rig, gw, backend) = open(0);
    // Three fragments of 64 KiB: streamed window by window on the blocking path.
    let data = object(150_000, 11);
    filled(&gw, &backend, &data).await;
    let before = gw.cache.stats();
    assert!(now(&gw, "k", 0, u64::MAX).await.is_none(), "several fragments");
    assert!(now(&gw, "k", 0, 70_000).await.is_none(), "a range across two fragments");
    assert_eq!(now(&gw, "k", 0, 60_000).await.expect("a range in one fragment").1, &data[..60_000]);
    let share = gw.caller_reads.try_take_here().expect("one share of two workers");
    assert!(now(&gw, "k", 0, 60_000).await.is_none(), "the only share is taken");
    drop(share);
    let after = gw.cache.stats();
    assert_eq!(after.requests - before.requests, 1, "what gave way counted nothing");
    assert_eq!(gw.counters().worker_flash_reads, 1);
}
