//! Tests of the data path on in-memory devices and a temporary local backend: write-back and
//! flush, reads after writes, misses filled then hit, deletes ordered with the flusher, merged
//! listings, restart with unflushed objects, multipart ETags, a backend outage.

use std::sync::Arc;
use std::time::{Duration, Instant};

use reo_cache::{Cache, CacheConfig};
use reo_media::{Media, MemMedia};
use reo_store::{Store, StoreConfig};

use super::flusher::Flusher;
use super::handle::Gateway;
use crate::backend::{Backend, BackendError, ListQuery, LocalBackend, ObjectInfo};

pub(crate) struct Rig {
    devs: Vec<Arc<dyn Media>>,
    pub(crate) dir: std::path::PathBuf,
    /// Bytes of the cache's memory tier (default 0: off).
    pub(crate) memory_bytes: u64,
    /// Removes `dir` when the rig drops.
    _tmp: tempfile::TempDir,
}

impl Rig {
    pub(crate) fn new() -> Rig {
        let tmp = tempfile::tempdir().unwrap();
        let dir = tmp.path().join("rig");
        let devs = (0..3).map(|_| Arc::new(MemMedia::new(32 << 20)) as Arc<dyn Media>).collect();
        Rig { devs, dir, memory_bytes: 0, _tmp: tmp }
    }

    pub(crate) fn open(&self) -> (Arc<Gateway>, Arc<LocalBackend>) {
        self.open_with(|b| b)
    }

    /// [`Rig::open`] over the counting double ([`super::counting::Counting`]: gates and failure
    /// switches at the backend seam); returns it with the real backend under it.
    pub(crate) fn open_counting(&self) -> (Arc<Gateway>, Arc<LocalBackend>, Arc<super::counting::Counting>) {
        let mut counting = None;
        let (gw, backend) = self.open_with(|b| {
            let c = super::counting::Counting::new(b);
            counting = Some(c.clone());
            c
        });
        (gw, backend, counting.expect("wrapped"))
    }

    /// [`Rig::open`] with the gateway's backend wrapped by `wrap` (e.g. a recorder at the trait seam).
    pub(crate) fn open_with<B: Backend>(
        &self,
        wrap: impl FnOnce(Arc<LocalBackend>) -> Arc<B>,
    ) -> (Arc<Gateway>, Arc<LocalBackend>) {
        let cfg = StoreConfig {
            chunk_size: 16 << 10,
            zone_size: Some(1 << 20),
            journal_size: Some(1 << 20),
            checkpoint_size: Some(2 << 20),
            io_threads: Some(2),
            create: true,
            ..Default::default()
        };
        let (store, _) = Store::open(self.devs.clone(), &cfg).unwrap();
        let mut cc = CacheConfig::new(16 << 20);
        cc.fragment_size = 64 << 10;
        cc.memory_bytes = self.memory_bytes;
        let cache = Arc::new(Cache::open(Arc::new(store), cc).unwrap());
        let backend = Arc::new(LocalBackend::open(&self.dir.join("backend")).unwrap());
        let _ = backend.create_bucket("bkt");
        (Gateway::open(wrap(backend.clone()), cache, &self.dir.join("state")).unwrap(), backend)
    }
}

impl Rig {
    /// `kill -9` of the gateway's process: the store stops without writing what it has queued
    /// (journal records not yet durable are lost, as the process's memory is); what reached the
    /// devices and the fsync'ed pending records stay. No flusher may be running.
    pub(crate) fn kill(&self, gw: Arc<Gateway>) {
        gw.fetch.flights.wait_idle();
        let store = gw.cache.store().clone();
        drop(gw);
        match Arc::try_unwrap(store) {
            Ok(s) => s.kill(),
            Err(_) => panic!("the store is still shared after the gateway was dropped"),
        }
    }
}

fn info() -> ObjectInfo {
    ObjectInfo { content_type: "text/plain".into(), ..Default::default() }
}

fn wait_flushed(gw: &Gateway) {
    let t = Instant::now();
    while gw.dirty().0 > 0 {
        assert!(t.elapsed() < Duration::from_secs(20), "flusher stuck");
        std::thread::sleep(Duration::from_millis(10));
    }
}

#[test]
fn write_back_then_flush_then_hits() {
    let rig = Rig::new();
    let (gw, backend) = rig.open();
    let data: Vec<u8> = (0..200_000u32).map(|i| i as u8).collect();
    let i = gw.put("bkt", "k", &data, info()).unwrap();
    assert!(backend.head("bkt", "k").is_err(), "not flushed yet");
    assert_eq!(gw.head("bkt", "k").unwrap().etag, i.etag);
    assert_eq!(gw.read("bkt", "k", &i, 70_000, 140_000).unwrap(), &data[70_000..140_000]);
    let page = gw.list("bkt", &ListQuery { max_keys: 10, ..Default::default() }).unwrap();
    assert_eq!(page.contents.len(), 1);
    let f = Flusher::start(gw.clone());
    wait_flushed(&gw);
    f.stop();
    let (bytes, binfo) = backend.get_range("bkt", "k", 0, u64::MAX).unwrap();
    assert_eq!((bytes, binfo.etag, binfo.content_type), (data.clone(), i.etag.clone(), "text/plain".to_string()));
    assert!(!gw.cache.info(b"bkt/k").unwrap().dirty);
    assert_eq!(gw.counters().backend_reads, 0);
}

#[test]
fn misses_fetch_fill_and_then_hit() {
    let rig = Rig::new();
    let (gw, backend) = rig.open();
    let data: Vec<u8> = (0..150_000u32).map(|i| (i * 7) as u8).collect();
    let i = ObjectInfo { size: data.len() as u64, etag: "e1".into(), ..info() };
    backend.put("bkt", "cold", &data, &i).unwrap();
    let got = gw.head("bkt", "cold").unwrap();
    assert_eq!(gw.read("bkt", "cold", &got, 100, 100_000).unwrap(), &data[100..100_000]);
    let fetched = gw.counters().backend_reads;
    assert_eq!(fetched, 2, "two 64 KiB fragments");
    assert_eq!(gw.read("bkt", "cold", &got, 0, 128 << 10).unwrap(), &data[..128 << 10]);
    assert_eq!(gw.counters().backend_reads, fetched, "second read is a hit");
}

#[test]
fn head_of_a_cached_object_answers_from_its_blob_header() {
    let rig = Rig::new();
    let (gw, backend) = rig.open();
    let data: Vec<u8> = (0..70_000u32).map(|i| (i * 3) as u8).collect();
    let mut i = ObjectInfo { size: data.len() as u64, etag: "e7".into(), mtime_ns: 42, ..info() };
    i.user_meta.insert("owner".into(), "ana".into());
    backend.put("bkt", "m", &data, &i).unwrap();
    let got = gw.head("bkt", "m").unwrap();
    gw.read("bkt", "m", &got, 0, 10).unwrap(); // caches fragment 0 with the metadata
                                               // The backend loses the object behind the gateway's back: HEAD is still answered, from flash.
    backend.delete("bkt", "m").unwrap();
    let cached = gw.head("bkt", "m").unwrap();
    assert_eq!(
        (cached.size, cached.etag.as_str(), cached.content_type.as_str()),
        (data.len() as u64, "e7", "text/plain")
    );
    assert_eq!(cached.user_meta.get("owner").map(String::as_str), Some("ana"));
}

#[test]
fn deletes_win_over_pending_writes_and_restart_resumes() {
    let rig = Rig::new();
    {
        let (gw, _) = rig.open();
        gw.put("bkt", "a", b"one", info()).unwrap();
        gw.put("bkt", "b", b"two", info()).unwrap();
        gw.delete("bkt", "a").unwrap();
        assert!(gw.head("bkt", "a").is_err());
        assert_eq!(gw.dirty().0, 2, "b's write and a's delete are pending");
        gw.cache.store().flush().unwrap();
        // Dropped without flushing: a crash as far as the backend is concerned.
    }
    let (gw, backend) = rig.open();
    assert_eq!(gw.dirty().0, 2);
    assert!(gw.head("bkt", "a").is_err(), "the delete survives the restart");
    let f = Flusher::start(gw.clone());
    wait_flushed(&gw);
    f.stop();
    assert_eq!(backend.get_range("bkt", "b", 0, 9).unwrap().0, b"two");
    assert!(backend.head("bkt", "a").is_err());
    assert!(gw.delete_bucket("bkt").is_err());
}

#[test]
fn multipart_etag_is_md5_of_md5s() {
    const MAX: u64 = 1 << 30;
    let rig = Rig::new();
    let (gw, _) = rig.open();
    let id =
        gw.uploads.create("bkt", "mp", ObjectInfo { content_type: "a/b".into(), ..Default::default() }, None).unwrap();
    let u = gw.uploads.get("bkt", "mp", &id).unwrap();
    let p1 = vec![1u8; 5 << 20];
    let e1 = gw.uploads.put_part(&u, 1, &p1).unwrap().0;
    let e2 = gw.uploads.put_part(&u, 2, b"tail").unwrap().0;
    let too_small = gw.uploads.put_part(&u, 3, b"x").unwrap().0;
    let err = gw.complete_upload("bkt", "mp", &id, &[(1, e1.clone()), (2, e2.clone())], 1 << 20).unwrap_err();
    assert_eq!(*err.code(), s3s::S3ErrorCode::EntityTooLarge);
    let err = gw.complete_upload("bkt", "mp", &id, &[(2, e2.clone()), (3, too_small)], MAX).unwrap_err();
    assert_eq!(*err.code(), s3s::S3ErrorCode::EntityTooSmall);
    let info = gw.complete_upload("bkt", "mp", &id, &[(1, e1.clone()), (2, e2.clone())], MAX).unwrap();
    assert!(info.etag.ends_with("-2"));
    let again = gw.complete_upload("bkt", "mp", &id, &[(1, e1), (2, e2)], MAX).unwrap();
    assert_eq!(again.etag, info.etag);
    assert_eq!(gw.head("bkt", "mp").unwrap().size, (5 << 20) + 4);
}

#[test]
fn a_backend_outage_keeps_writes_then_slows_them_down_and_loses_nothing() {
    use s3s::S3ErrorCode;
    let rig = Rig::new();
    let (gw, backend) = rig.open();
    gw.put("bkt", "before", b"known bucket", info()).unwrap();
    gw.health.set_slowdown_after(Duration::from_millis(300));
    let (root, away) = (rig.dir.join("backend"), rig.dir.join("backend.away"));
    std::fs::rename(&root, &away).unwrap();
    let f = Flusher::start(gw.clone());
    // Accepted while the backend is down (the bucket is known), and readable.
    let a = gw.put("bkt", "a", b"during", info()).unwrap();
    assert_eq!(gw.read("bkt", "a", &a, 0, 6).unwrap(), b"during");
    // A bucket never seen cannot be assumed to exist.
    assert_eq!(*gw.put("other", "k", b"x", info()).unwrap_err().code(), S3ErrorCode::SlowDown);
    // The flusher's failures mark the backend down; past 300 ms writes get SlowDown.
    let t = Instant::now();
    while gw.health.down_for().is_none_or(|d| d < Duration::from_millis(300)) {
        assert!(t.elapsed() < Duration::from_secs(20), "the backend was never marked down");
        std::thread::sleep(Duration::from_millis(10));
    }
    let e = gw.put("bkt", "b", b"refused", info()).unwrap_err();
    assert_eq!(*e.code(), S3ErrorCode::SlowDown);
    assert!(e.message().unwrap_or_default().contains("down"), "{e:?}");
    let r = gw.health.report();
    assert!(!r.up && r.slowing_down && r.failures > 0 && r.last_error.is_some(), "{r:?}");
    assert_eq!(gw.dirty().0, 2);
    // Restored: the first successful flush clears it and everything acknowledged is written.
    std::fs::rename(&away, &root).unwrap();
    gw.kick_flusher();
    wait_flushed(&gw);
    assert!(gw.health.report().up);
    assert_eq!(backend.get_range("bkt", "a", 0, 99).unwrap().0, b"during");
    assert_eq!(backend.get_range("bkt", "before", 0, 99).unwrap().0, b"known bucket");
    assert!(backend.head("bkt", "b").is_err(), "a refused write was not stored");
    gw.put("bkt", "b", b"accepted", info()).unwrap();
    f.stop();
}

#[test]
fn a_bucket_created_through_the_gateway_takes_writes_while_the_backend_is_down() {
    let rig = Rig::new();
    let (gw, backend) = rig.open();
    gw.create_bucket("fresh", true).unwrap();
    // The backend goes away and a call (a probe) fails before any write checked the bucket.
    let (root, away) = (rig.dir.join("backend"), rig.dir.join("backend.away"));
    std::fs::rename(&root, &away).unwrap();
    gw.health.record_failure("probe: connection refused");
    let a = gw.put("fresh", "k", b"kept", info()).unwrap();
    assert_eq!(gw.read("fresh", "k", &a, 0, 4).unwrap(), b"kept");
    assert_eq!(gw.dirty().0, 1);
    std::fs::rename(&away, &root).unwrap();
    let f = Flusher::start(gw.clone());
    wait_flushed(&gw);
    f.stop();
    assert_eq!(backend.get_range("fresh", "k", 0, 9).unwrap().0, b"kept");
}

#[test]
fn write_back_deletes_work_while_the_backend_is_down_and_reach_it_later() {
    use s3s::S3ErrorCode;
    let rig = Rig::new();
    let (root, away) = (rig.dir.join("backend"), rig.dir.join("backend.away"));
    {
        let (gw, backend) = rig.open();
        backend.put("bkt", "x", b"old", &ObjectInfo { size: 3, etag: "e".into(), ..info() }).unwrap();
        backend.put("bkt", "y", b"old", &ObjectInfo { size: 3, etag: "e".into(), ..info() }).unwrap();
        assert!(gw.head("bkt", "x").is_ok());
        gw.put("bkt", "z", b"zz", info()).unwrap(); // the gateway has seen the bucket exist
        std::fs::rename(&root, &away).unwrap();
        // Acknowledged with the backend down.
        gw.delete("bkt", "x").unwrap();
        gw.delete("bkt", "y").unwrap();
        assert_eq!(*gw.head("bkt", "x").unwrap_err().code(), S3ErrorCode::NoSuchKey);
        // A write after the delete wins over it.
        gw.put("bkt", "y", b"new", info()).unwrap();
        assert_eq!(gw.head("bkt", "y").unwrap().size, 3);
        gw.cache.store().flush().unwrap();
        // Dropped with the backend still down: the deletes are durable, not lost.
    }
    let (gw, backend) = rig.open();
    assert_eq!(*gw.head("bkt", "x").unwrap_err().code(), S3ErrorCode::NoSuchKey);
    // (The test rig's reopen made a new empty root; the real one comes back in its place.)
    std::fs::remove_dir_all(&root).unwrap();
    std::fs::rename(&away, &root).unwrap();
    let page = gw.list("bkt", &ListQuery { max_keys: 10, ..Default::default() }).unwrap();
    let keys: Vec<&str> = page.contents.iter().map(|e| e.key.as_str()).collect();
    assert_eq!(keys, vec!["y", "z"], "a pending delete hides the backend's object");
    assert!(backend.head("bkt", "x").is_ok(), "not applied yet");
    let f = Flusher::start(gw.clone());
    wait_flushed(&gw);
    f.stop();
    assert!(matches!(backend.head("bkt", "x"), Err(BackendError::NoSuchKey(_))));
    assert_eq!(backend.get_range("bkt", "y", 0, 9).unwrap().0, b"new");
    assert_eq!(gw.counters().flushed_deletes, 1, "y's delete was replaced by its rewrite");
}

#[test]
fn deleting_a_bucket_applies_its_pending_deletes_first() {
    let rig = Rig::new();
    let (gw, backend) = rig.open();
    backend.create_bucket("gone").unwrap();
    gw.put("gone", "x", b"1", info()).unwrap();
    gw.delete("gone", "x").unwrap();
    assert_eq!(gw.dirty().0, 1, "x's delete waits for the flusher (none runs here)");
    // Regression: the pending lock was held across this loop, so the delete deadlocked on itself
    // whenever a tombstone was still pending.
    gw.delete_bucket("gone").unwrap();
    assert_eq!(gw.dirty().0, 0, "the tombstone was applied and dropped");
    assert!(backend.head_bucket("gone").is_err(), "the bucket is gone from the backend");
}

#[test]
fn a_write_flushed_while_a_listing_runs_is_listed() {
    let rig = Rig::new();
    let (gw, _, counting) = rig.open_counting();
    gw.put("bkt", "l/a", b"1", info()).unwrap();
    counting.after_list.set(false);
    let lister = {
        let gw = gw.clone();
        std::thread::spawn(move || {
            gw.list("bkt", &ListQuery { prefix: "l/".into(), max_keys: 10, ..Default::default() })
        })
    };
    // The backend has answered the listing (without l/a); now l/a is flushed and leaves the
    // pending map before the listing goes on.
    counting.after_list.wait_reached(1);
    let f = Flusher::start(gw.clone());
    wait_flushed(&gw);
    f.stop();
    counting.after_list.set(true);
    let page = lister.join().unwrap().unwrap();
    let keys: Vec<&str> = page.contents.iter().map(|e| e.key.as_str()).collect();
    assert_eq!(keys, vec!["l/a"]);
}
