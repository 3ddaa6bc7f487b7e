//! Tests of the streaming miss path, single-flight and revalidation, with a counting backend at
//! the trait seam ([`Counting`]) over the real local backend: concurrent misses share one fetch,
//! errors reach every waiter and the next request retries, bytes reach the reader before the
//! backend finished, a disconnect caches nothing, revalidation follows another writer.

use std::sync::atomic::Ordering;
use std::sync::{Arc, Barrier};
use std::time::Duration;

use super::flight::FlightKey;
use super::handle::Gateway;
use super::stream::ReadPlan;
use super::tests::Rig;
use crate::backend::{Backend, LocalBackend, ObjectInfo};

fn object(len: usize, seed: u8) -> Vec<u8> {
    (0..len).map(|i| (i as u8).wrapping_mul(31).wrapping_add(seed) ^ (i >> 11) as u8).collect()
}

fn put_backend(b: &LocalBackend, key: &str, data: &[u8]) -> ObjectInfo {
    let info = ObjectInfo { size: data.len() as u64, etag: crate::keys::md5_hex(data), ..Default::default() };
    b.put("bkt", key, data, &info).unwrap();
    info
}

/// A whole-object GET's plan, as the S3 layer makes it (blocking part).
fn plan(gw: &Arc<Gateway>, key: &str) -> s3s::S3Result<ReadPlan> {
    let _r = gw.read_lock("bkt", key);
    let info = gw.head("bkt", key)?;
    gw.read_plan("bkt", key, &info, 0, info.size)
}

async fn body(p: ReadPlan) -> Result<Vec<u8>, String> {
    p.opened().await.map_err(|e| format!("{:?}", e.code()))?;
    p.collect().await.map_err(|e| e.to_string())
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn concurrent_misses_share_one_backend_fetch() {
    const N: usize = 8;
    let rig = Rig::new();
    let (gw, local, counting) = rig.open_counting();
    let data = object((2 << 20) + 12_345, 1);
    put_backend(&local, "k", &data);
    // Held at the gate, the first fetch cannot finish before every request has joined it.
    counting.before.set(false);
    let barrier = Arc::new(Barrier::new(N));
    let threads: Vec<_> = (0..N)
        .map(|_| {
            let (gw, barrier) = (gw.clone(), barrier.clone());
            std::thread::spawn(move || {
                barrier.wait();
                plan(&gw, "k").unwrap()
            })
        })
        .collect();
    let plans: Vec<ReadPlan> = threads.into_iter().map(|t| t.join().unwrap()).collect();
    let fkey = FlightKey { ck: "bkt/k".into(), etag: crate::keys::md5_hex(&data), start: 0, end: data.len() as u64 };
    assert_eq!(gw.fetch.flights.readers(&fkey), N);
    counting.before.set(true);
    let bodies = futures::future::join_all(plans.into_iter().map(body)).await;
    for b in bodies {
        assert!(b.unwrap() == data, "every body byte-exact");
    }
    assert_eq!(counting.gets(), 1, "one backend read for {N} concurrent misses");
    gw.fetch.flights.wait_idle();
    // The fill happened in the background: the next GET is a hit.
    let p = plan(&gw, "k").unwrap();
    assert!(p.is_hit());
    assert!(body(p).await.unwrap() == data);
    assert_eq!(counting.gets(), 1);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn errors_reach_every_waiter_and_the_next_request_retries() {
    let rig = Rig::new();
    let (gw, local, counting) = rig.open_counting();
    let data = object(300_000, 2);
    put_backend(&local, "k", &data);
    counting.before.set(false);
    counting.fail_open.store(true, Ordering::SeqCst);
    let plans: Vec<ReadPlan> = (0..4).map(|_| plan(&gw, "k").unwrap()).collect();
    counting.before.set(true);
    for b in futures::future::join_all(plans.into_iter().map(body)).await {
        assert_eq!(b.unwrap_err(), "SlowDown");
    }
    assert_eq!(counting.gets(), 1);
    gw.fetch.flights.wait_idle();
    assert!(gw.cache.info(b"bkt/k").is_none(), "nothing cached from a failed fetch");
    // The failure marked the backend down: requests fail at once until it answers a probe.
    assert!(gw.health.is_down());
    assert_eq!(*plan(&gw, "k").err().unwrap().code(), s3s::S3ErrorCode::SlowDown);
    assert_eq!(counting.gets(), 1, "not asked while down");
    assert!(super::outage::probe_once(gw.raw_backend.as_ref(), &gw.health));

    // Failing after the first chunk: the bodies are cut off, nothing is cached.
    let big = object((2 << 20) + 5, 3);
    put_backend(&local, "big", &big);
    counting.fail_midway.store(true, Ordering::SeqCst);
    counting.after_first.set(false);
    let plans: Vec<ReadPlan> = (0..3).map(|_| plan(&gw, "big").unwrap()).collect();
    for p in &plans {
        p.opened().await.unwrap(); // the first chunk is there; the failure comes after it
    }
    counting.after_first.set(true);
    for b in futures::future::join_all(plans.into_iter().map(|p| p.collect())).await {
        let b = b.map_err(|e| e.to_string());
        let e = b.unwrap_err();
        assert!(e.contains("mid-body"), "{e}");
    }
    gw.fetch.flights.wait_idle();
    assert!(gw.cache.info(b"bkt/big").is_none());

    // The next requests start new fetches, which succeed.
    assert!(body(plan(&gw, "k").unwrap()).await.unwrap() == data);
    assert!(body(plan(&gw, "big").unwrap()).await.unwrap() == big);
    assert_eq!(counting.gets(), 4);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn bytes_stream_before_the_fetch_ends_and_a_disconnect_caches_nothing() {
    use futures::StreamExt;
    let rig = Rig::new();
    let (gw, local, counting) = rig.open_counting();
    let data = object((2 << 20) + 777, 4);
    put_backend(&local, "k", &data);
    counting.after_first.set(false);
    let p = plan(&gw, "k").unwrap();
    p.opened().await.unwrap();
    let mut s = p.into_stream();
    // The backend is held after its first chunk, and the client already has it.
    let first = s.next().await.unwrap().unwrap();
    assert!(first[..] == data[..first.len()] && !first.is_empty());
    drop(s); // the client goes away
    counting.after_first.set(true);
    gw.fetch.flights.wait_idle();
    assert!(gw.cache.info(b"bkt/k").is_none(), "a cancelled fetch fills nothing");
    assert!(body(plan(&gw, "k").unwrap()).await.unwrap() == data);
    assert_eq!(counting.gets(), 2);
    gw.fetch.flights.wait_idle();
    assert!(plan(&gw, "k").unwrap().is_hit());
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn range_misses_stream_their_bytes_and_cache_their_fragments() {
    let rig = Rig::new();
    let (gw, local, counting) = rig.open_counting();
    let data = object(1_000_000, 5);
    put_backend(&local, "k", &data);
    let info = gw.head("bkt", "k").unwrap();
    let p = gw.read_plan("bkt", "k", &info, 70_000, 200_000).unwrap();
    assert!(body(p).await.unwrap() == data[70_000..200_000]);
    gw.fetch.flights.wait_idle();
    // Fragments 1..=3 (64 KiB each) are cached; a GET of the whole object fetches only the rest.
    assert_eq!(gw.cache.info(b"bkt/k").unwrap().cached_fragments, 3);
    assert!(body(plan(&gw, "k").unwrap()).await.unwrap() == data);
    assert_eq!(counting.gets(), 3, "one fetch for the range, one per missing run around it");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn revalidation_follows_another_writer_and_survives_a_down_backend() {
    let rig = Rig::new();
    let (gw, local, counting) = rig.open_counting();
    let old = object(100_000, 6);
    put_backend(&local, "k", &old);
    gw.set_revalidate_after(Some(Duration::from_secs(3600)));
    assert!(body(plan(&gw, "k").unwrap()).await.unwrap() == old);
    gw.fetch.flights.wait_idle();
    // Another writer changes the backend behind the gateway's back.
    let new = object(90_000, 7);
    put_backend(&local, "k", &new);
    // Younger than the age: served from flash.
    let p = plan(&gw, "k").unwrap();
    assert!(p.is_hit());
    assert!(body(p).await.unwrap() == old);
    assert_eq!(counting.gets(), 1);
    // Older than the age (0: every hit): the ETag differs, the new object is fetched.
    gw.set_revalidate_after(Some(Duration::ZERO));
    assert!(body(plan(&gw, "k").unwrap()).await.unwrap() == new);
    assert_eq!(counting.gets(), 2);
    gw.fetch.flights.wait_idle();
    // Same ETag: a hit, no fetch.
    let p = plan(&gw, "k").unwrap();
    assert!(p.is_hit());
    assert!(body(p).await.unwrap() == new);
    // Backend down: the cached copy is served.
    counting.down.store(true, Ordering::SeqCst);
    assert!(body(plan(&gw, "k").unwrap()).await.unwrap() == new);
    assert!(gw.health.is_down());
    counting.down.store(false, Ordering::SeqCst);
    assert!(super::outage::probe_once(gw.raw_backend.as_ref(), &gw.health));
    // Deleted by the other writer: gone here too.
    local.delete("bkt", "k").unwrap();
    assert_eq!(*plan(&gw, "k").err().unwrap().code(), s3s::S3ErrorCode::NoSuchKey);
    assert!(gw.cache.info(b"bkt/k").is_none());
    // A dirty object is never revalidated: the cache holds the newest version.
    gw.put("bkt", "d", b"dirty bytes", ObjectInfo::default()).unwrap();
    local.put("bkt", "d", b"other", &ObjectInfo { size: 5, etag: "x".into(), ..Default::default() }).unwrap();
    assert!(body(plan(&gw, "d").unwrap()).await.unwrap() == b"dirty bytes");
    assert_eq!(counting.gets(), 2);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn cached_ranges_stream_window_by_window_and_a_write_between_windows_cuts_the_body() {
    use futures::StreamExt;
    let rig = Rig::new();
    let (gw, local, counting) = rig.open_counting();
    let data = object((2 << 20) + 999, 8); // 33 fragments of 64 KiB
    put_backend(&local, "k", &data);
    assert!(body(plan(&gw, "k").unwrap()).await.unwrap() == data);
    gw.fetch.flights.wait_idle();
    let p = plan(&gw, "k").unwrap();
    assert!(p.is_hit());
    assert!(body(p).await.unwrap() == data, "every window, in order");
    let info = gw.head("bkt", "k").unwrap();
    let p = gw.read_plan("bkt", "k", &info, 100_000, 1_500_000).unwrap();
    assert!(body(p).await.unwrap() == data[100_000..1_500_000]);
    assert_eq!(counting.gets(), 1, "hits only");
    // A write lands after the first window was sent: a later window notices, the body is cut off
    // rather than mixing two versions.
    let mut s = plan(&gw, "k").unwrap().into_stream();
    let first = s.next().await.unwrap().unwrap();
    assert!(first[..] == data[..first.len()]);
    gw.put("bkt", "k", b"a new version", ObjectInfo::default()).unwrap();
    let mut got = first.len();
    let err = loop {
        match s.next().await {
            Some(Ok(c)) => got += c.len(),
            Some(Err(e)) => break e.to_string(),
            None => panic!("the whole old body came through a write"),
        }
    };
    assert!(err.contains("written while it was read"), "{err}");
    assert!(got < data.len());
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_miss_beyond_the_producer_limit_is_slow_down() {
    let rig = Rig::new();
    let (gw, local, counting) = rig.open_counting();
    let (a, b) = (object(5000, 1), object(5000, 2));
    put_backend(&local, "a", &a);
    put_backend(&local, "b", &b);
    *gw.fetch.flights.max_producers.lock() = Some(1);
    // The first miss's producer is held at the gate: the second finds the limit reached.
    counting.before.set(false);
    let held = plan(&gw, "a").unwrap();
    let refused = plan(&gw, "b").unwrap();
    // (Without the limit its producer would wait at the gate too: fail rather than hang.)
    let opened = tokio::time::timeout(Duration::from_secs(30), refused.opened()).await;
    let e = opened.expect("refused at once, not queued behind the gate").unwrap_err();
    assert_eq!(*e.code(), s3s::S3ErrorCode::SlowDown);
    counting.before.set(true);
    assert_eq!(body(held).await.unwrap(), a);
    gw.fetch.flights.wait_idle();
    // Below the limit again, the refused object is read.
    assert_eq!(body(plan(&gw, "b").unwrap()).await.unwrap(), b);
}

/// A fill that replaces a cached version (the backend changed behind the cache) waits for the
/// readers between an object's metadata and its bytes: they never see the version change, so
/// never send one version's bytes under the other's checksum.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_fill_replacing_a_version_waits_for_the_keys_readers() {
    let rig = Rig::new();
    let (gw, local, _counting) = rig.open_counting();
    let old = object(3000, 8);
    put_backend(&local, "k", &old);
    assert!(body(plan(&gw, "k").unwrap()).await.unwrap() == old);
    gw.fetch.flights.wait_idle();
    let old_etag = gw.cache.meta(b"bkt/k").unwrap().etag;
    // Another writer changes the backend, and a fetch of its version begins with a token from
    // after the copy was cached (as one whose metadata came from the backend would).
    let new = object(2500, 9);
    let info = put_backend(&local, "k", &new);
    let new_etag = info.etag.clone();
    let reader = gw.read_lock("bkt", "k");
    let fkey = FlightKey { ck: "bkt/k".into(), etag: info.etag.clone(), start: 0, end: new.len() as u64 };
    let (waiter, first) = gw.fetch.flights.join(fkey, true, 0, new.len() as u64);
    assert!(first);
    let job = super::fetch::Job { bucket: "bkt".into(), key: "k".into(), info, token: gw.cache.token() };
    super::fetch::start(gw.fetch.clone(), waiter.flight().clone(), job);
    // Its fill waits for the reader (a writer waiting shuts new readers out: nothing to wait on
    // but that state).
    let t = std::time::Instant::now();
    while gw.stripes.try_shared("bkt/k").is_some() {
        assert!(t.elapsed() < Duration::from_secs(30), "the fill replaced the version under a reader");
        std::thread::sleep(Duration::from_millis(1));
    }
    assert_eq!(gw.cache.meta(b"bkt/k").unwrap().etag, old_etag);
    drop(reader);
    gw.fetch.flights.wait_idle();
    assert_eq!(gw.cache.meta(b"bkt/k").unwrap().etag, new_etag);
    drop(waiter);
}
