//! The five-minute tour of Reo as a library: a flash array store over four device files, the
//! cache manager on top of it, one object written back (dirty), read, flushed, and read again
//! after a restart.
//!
//! ```sh
//! cargo run -p reo-cache --example quickstart
//! ```
//!
//! `reo serve` is this plus an S3 front end and a backend to flush to; `reo replay` is this over
//! simulated devices.

use std::path::Path;
use std::sync::Arc;

use reo_cache::{Cache, CacheConfig, ObjectMeta};
use reo_media::{FileMedia, FileOptions, Media};
use reo_store::{Store, StoreConfig};

type Error = Box<dyn std::error::Error>;

/// Four device files of 64 MiB in `dir` (created on first use). Real deployments give whole
/// SSDs or partitions; files are what tests and benchmarks use.
fn devices(dir: &Path) -> Result<Vec<Arc<dyn Media>>, Error> {
    (0..4)
        .map(|i| {
            let opts = FileOptions { direct: false, create_len: Some(64 << 20) };
            let file = FileMedia::open(&dir.join(format!("dev{i}.img")), &opts)?;
            Ok(Arc::new(file) as Arc<dyn Media>)
        })
        .collect()
}

/// Opens (or, the first time, formats) the store and opens the cache over it: the cache finds
/// what it held in the store's blobs.
fn open(dir: &Path) -> Result<Cache, Error> {
    let store_cfg = StoreConfig { create: true, zone_size: Some(1 << 20), ..Default::default() };
    let (store, _recovery) = Store::open(devices(dir)?, &store_cfg)?;
    // 32 MiB of cache; each object class gets its default redundancy over the four devices
    // (dirty data replicated on all four, hot data Reed-Solomon, cold data unprotected).
    Ok(Cache::open(Arc::new(store), CacheConfig::new(32 << 20))?)
}

/// Closes the cache's store cleanly (a crash instead is what the recovery tests exercise).
fn close(cache: Cache) -> Result<(), Error> {
    let store = cache.store().clone();
    drop(cache);
    Arc::into_inner(store).ok_or("the store is still shared")?.close()?;
    Ok(())
}

fn main() -> Result<(), Error> {
    let dir = tempfile::tempdir()?;
    let key = b"photos/cat.jpg";
    let body = b"not really a cat".repeat(10_000);
    let meta = ObjectMeta { etag: "\"1\"".into(), content_type: "image/jpeg".into(), ..Default::default() };
    let now_ns = 1;

    let cache = open(dir.path())?;
    // A write-back put: on stable storage on every device its class needs when `put` returns.
    let receipt = cache.put(key, &body, &meta, true, now_ns)?;
    // A read: every piece of the range comes from flash (a miss would name the pieces to fetch).
    let got = cache.get(key, 0, u64::MAX, now_ns)?;
    assert!(got.is_hit());
    let bytes: Vec<u8> = got.pieces.into_iter().flat_map(|p| p.data.unwrap_or_default()).collect();
    assert_eq!(bytes, body);
    println!("put and read {} bytes; dirty keys: {}", bytes.len(), cache.dirty_keys().len());
    // Once a flusher has written this version to the backend, it becomes clean (evictable).
    cache.mark_clean(key, receipt.version)?;
    close(cache)?;

    // Restart: the object is still cached, and still clean.
    let cache = open(dir.path())?;
    let info = cache.info(key).ok_or("the object did not survive the restart")?;
    println!("after a restart: {} bytes cached, dirty: {}", info.size, info.dirty);
    assert!(!info.dirty && cache.get(key, 0, u64::MAX, now_ns)?.is_hit());
    close(cache)
}
