//! Tests of the data path on in-memory devices and a temporary local backend: write-back and
//! flush, reads after writes, misses filled then hit, deletes ordered with the flusher, merged
//! listings, restart with unflushed objects, multipart ETags.

use std::sync::Arc;
use std::time::{Duration, Instant};

use reo_cache::{Cache, CacheConfig};
use reo_media::{Media, MemMedia};
use reo_store::{Store, StoreConfig};

use super::flusher::Flusher;
use super::Gateway;
use crate::backend::{Backend, ListQuery, LocalBackend, ObjectInfo};

pub(crate) struct Rig {
    devs: Vec<Arc<dyn Media>>,
    pub(crate) dir: std::path::PathBuf,
}

impl Rig {
    pub(crate) fn new() -> Rig {
        let dir = std::env::temp_dir().join(format!("reo-gw-{}-{}", std::process::id(), super::now_ns()));
        let devs = (0..3).map(|_| Arc::new(MemMedia::new(32 << 20)) as Arc<dyn Media>).collect();
        Rig { devs, dir }
    }

    pub(crate) fn open(&self) -> (Arc<Gateway>, Arc<LocalBackend>) {
        self.open_with(|b| b)
    }

    /// A gateway over `wrap(the local backend)` (a test double at the trait seam).
    pub(crate) fn open_with(
        &self,
        wrap: impl FnOnce(Arc<dyn Backend>) -> Arc<dyn Backend>,
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
        let cache = Arc::new(Cache::open(Arc::new(store), cc).unwrap());
        let backend = Arc::new(LocalBackend::open(&self.dir.join("backend")).unwrap());
        let _ = backend.create_bucket("bkt");
        let seam = wrap(backend.clone());
        (Gateway::open(seam, cache, &self.dir.join("state")).unwrap(), backend)
    }
}

impl Drop for Rig {
    fn drop(&mut self) {
        let _ = std::fs::remove_dir_all(&self.dir);
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
        assert_eq!(gw.dirty().0, 1);
        gw.cache.store().flush().unwrap();
        // Dropped without flushing: a crash as far as the backend is concerned.
    }
    let (gw, backend) = rig.open();
    assert_eq!(gw.dirty().0, 1);
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
    let id = gw.uploads.create("bkt", "mp", "a/b".into(), Default::default()).unwrap();
    let u = gw.uploads.get("bkt", "mp", &id).unwrap();
    let p1 = vec![1u8; 5 << 20];
    let e1 = gw.uploads.put_part(&u, 1, &p1).unwrap();
    let e2 = gw.uploads.put_part(&u, 2, b"tail").unwrap();
    let too_small = gw.uploads.put_part(&u, 3, b"x").unwrap();
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
