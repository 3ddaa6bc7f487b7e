//! Streamed PUTs ([`super::incoming`]): a write-back body goes to the cache as it arrives and the
//! object changes only when the write is stored; an abandoned body (a digest mismatch, a client
//! gone) or a crash mid-body leaves the previous version; a write-around or write-through body
//! streams into the backend, visible at its commit, and a write-through one leaves a clean copy.

use super::incoming::IncomingPut;
use super::tests::Rig;
use crate::backend::{Backend, ObjectInfo};
use crate::body::{BodySink, Digests};
use crate::budget::MemoryBudget;

fn info() -> ObjectInfo {
    ObjectInfo { content_type: "text/plain".into(), ..Default::default() }
}

/// Writes `data` into `sink` in its pieces; returns its MD5 (hex).
fn feed(sink: &mut IncomingPut, data: &[u8]) -> String {
    let mut d = Digests::new(None);
    let n = sink.piece_len();
    let mut pieces = data.chunks(n).peekable();
    if pieces.peek().is_none() {
        sink.write(&[]).unwrap();
    }
    for p in pieces {
        d.update(p);
        sink.write(p).unwrap();
    }
    d.finish().md5_hex()
}

/// An unconditional write's (absent) check.
type NoCheck = fn(Option<&ObjectInfo>) -> s3s::S3Result<()>;

fn none() -> Option<NoCheck> {
    None
}

#[test]
fn a_streamed_put_replaces_the_object_only_when_stored() {
    let rig = Rig::new();
    let (gw, _) = rig.open();
    let budget = MemoryBudget::new(u64::MAX);
    let old = gw.put("bkt", "k", b"old bytes", info()).unwrap();
    let data: Vec<u8> = (0..300_000u32).map(|i| (i * 13) as u8).collect();
    let mut sink = gw.incoming_put("bkt", "k", &info(), Some(data.len() as u64), &budget, 1 << 30).unwrap();
    assert!(matches!(sink, IncomingPut::Staged(..)), "write-back streams into the cache");
    let etag = feed(&mut sink, &data);
    assert_eq!(gw.head("bkt", "k").unwrap().etag, old.etag, "not visible before it is stored");
    let got = gw.put_incoming("bkt", "k", sink, ObjectInfo { etag: etag.clone(), ..info() }, none()).unwrap();
    assert_eq!(got.etag, etag);
    let head = gw.head("bkt", "k").unwrap();
    assert_eq!((head.etag.as_str(), head.size), (etag.as_str(), data.len() as u64));
    assert_eq!(gw.read("bkt", "k", &head, 0, head.size).unwrap(), data);
    // An empty object streams too.
    let mut sink = gw.incoming_put("bkt", "empty", &info(), Some(0), &budget, 1 << 30).unwrap();
    let etag = feed(&mut sink, &[]);
    gw.put_incoming("bkt", "empty", sink, ObjectInfo { etag, ..info() }, none()).unwrap();
    assert_eq!(gw.head("bkt", "empty").unwrap().size, 0);
}

#[test]
fn an_abandoned_or_crashed_body_leaves_the_previous_version() {
    let rig = Rig::new();
    let (gw, _) = rig.open();
    let budget = MemoryBudget::new(u64::MAX);
    let old: Vec<u8> = (0..100_000u32).map(|i| (i * 3) as u8).collect();
    let v1 = gw.put("bkt", "k", &old, info()).unwrap();
    let blobs = gw.cache.store().blob_count();
    let data = vec![7u8; 400_000]; // more than a streamed body holds: streamed
    let mut sink = gw.incoming_put("bkt", "k", &info(), Some(data.len() as u64), &budget, 1 << 30).unwrap();
    feed(&mut sink, &data);
    // The digests did not match: the request is refused and the sink dropped.
    drop(sink);
    assert_eq!(gw.cache.store().blob_count(), blobs, "the staged fragments are freed");
    assert_eq!(gw.head("bkt", "k").unwrap().etag, v1.etag);
    // A body shorter than declared never completes.
    let mut sink = gw.incoming_put("bkt", "k", &info(), Some(data.len() as u64), &budget, 1 << 30).unwrap();
    let e = sink.write(&data[..10]).unwrap_err();
    assert_eq!(e.code().as_str(), "IncompleteBody");
    drop(sink);
    // The process dies with a body half-way in the cache: its staged fragments are on flash
    // (made durable here, the worst case), the write never stored. (The forgotten sink keeps
    // the old store alive, idle: the devices are reopened under it.)
    let mut sink = gw.incoming_put("bkt", "k", &info(), Some(data.len() as u64), &budget, 1 << 30).unwrap();
    feed(&mut sink, &data);
    std::mem::forget(sink);
    let store = gw.cache.store().clone();
    drop(gw);
    store.flush().unwrap();
    let (gw, _) = rig.open();
    let head = gw.head("bkt", "k").unwrap();
    assert_eq!(head.etag, v1.etag);
    assert_eq!(gw.read("bkt", "k", &head, 0, head.size).unwrap(), old);
}

#[test]
fn bodies_around_the_cache_stream_to_the_backend_and_refusals_come_first() {
    let rig = Rig::new();
    let (gw, _) = rig.open();
    let budget = MemoryBudget::new(u64::MAX);
    // Size unknown under write-back: collected (where it goes depends on its size).
    let sink = gw.incoming_put("bkt", "k", &info(), None, &budget, 1 << 30).unwrap();
    assert!(matches!(sink, IncomingPut::Collected(_)));
    // No larger than the fragments a streamed body holds: collected, then written at once.
    let fragment = gw.cache.config().fragment_size;
    let small = super::incoming::STREAM_HOLD * fragment;
    let sink = gw.incoming_put("bkt", "k", &info(), Some(small), &budget, 1 << 30).unwrap();
    assert!(matches!(sink, IncomingPut::Collected(_)));
    let sink = gw.incoming_put("bkt", "k", &info(), Some(small + 1), &budget, 1 << 30).unwrap();
    assert!(matches!(sink, IncomingPut::Staged(..)));
    // Larger than the dirty budget: written around the cache, streamed to the backend.
    let sink = gw.incoming_put("bkt", "k", &info(), Some(1 << 29), &budget, 1 << 30).unwrap();
    assert!(matches!(&sink, IncomingPut::Streamed(b) if b.copy.is_none()));
    // Over the body limit, or a key the gateway cannot store: refused before the body.
    let e = gw.incoming_put("bkt", "k", &info(), Some(2 << 30), &budget, 1 << 30).err().unwrap();
    assert_eq!(e.code().as_str(), "EntityTooLarge");
    let e = gw.incoming_put("bkt", &"x".repeat(1025), &info(), Some(1), &budget, 1 << 30).err().unwrap();
    assert_eq!(e.code().as_str(), "KeyTooLongError");
    // A missing bucket, when the body would go to the backend.
    let e = gw.incoming_put("nobucket", "k", &info(), Some(1 << 29), &budget, 1 << 30).err().unwrap();
    assert_eq!(e.code().as_str(), "NoSuchBucket");
    // Metadata too large for a blob header: written around the cache.
    let big = ObjectInfo { system: [("content-disposition".to_string(), "x".repeat(9000))].into(), ..info() };
    let sink = gw.incoming_put("bkt", "k", &big, Some(10), &budget, 1 << 30).unwrap();
    assert!(matches!(&sink, IncomingPut::Streamed(b) if b.copy.is_none()));
}

/// The temporary files of unfinished writes under `dir` (in `t.writing`, or named `t.*`).
fn temp_files(dir: &std::path::Path) -> usize {
    let mut n = 0;
    for e in std::fs::read_dir(dir).unwrap().flatten() {
        let temp = e.file_name().to_string_lossy().starts_with("t.");
        if e.file_type().unwrap().is_dir() {
            n += if temp { std::fs::read_dir(e.path()).unwrap().count() } else { temp_files(&e.path()) };
        } else if temp {
            n += 1;
        }
    }
    n
}

#[test]
fn a_write_around_body_reaches_the_backend_whole_at_its_commit() {
    let rig = Rig::new();
    let (gw, backend) = rig.open();
    gw.set_policies(vec!["bkt=write-around".parse().unwrap()]);
    let budget = MemoryBudget::new(u64::MAX);
    gw.put("bkt", "k", b"old bytes", info()).unwrap();
    let data: Vec<u8> = (0..3_000_000u32).map(|i| (i * 7) as u8).collect();
    let mut sink = gw.incoming_put("bkt", "k", &info(), Some(data.len() as u64), &budget, 1 << 30).unwrap();
    assert!(matches!(&sink, IncomingPut::Streamed(b) if b.copy.is_none()));
    let etag = feed(&mut sink, &data);
    assert_eq!(backend.get_range("bkt", "k", 0, u64::MAX).unwrap().0, b"old bytes", "invisible before the commit");
    assert_eq!(temp_files(&rig.dir.join("backend")), 1, "the body is in the backend's temporary file");
    let got = gw.put_incoming("bkt", "k", sink, ObjectInfo { etag: etag.clone(), ..info() }, none()).unwrap();
    assert_eq!((got.etag.as_str(), got.size), (etag.as_str(), data.len() as u64));
    let (bytes, binfo) = backend.get_range("bkt", "k", 0, u64::MAX).unwrap();
    assert_eq!((bytes == data, binfo.etag, binfo.content_type.as_str()), (true, etag, "text/plain"));
    assert!(gw.cache.info(b"bkt/k").is_none(), "written around the cache");
    // Abandoned (a digest mismatch, a client gone): the backend keeps the object it had.
    let mut sink = gw.incoming_put("bkt", "k", &info(), Some(5), &budget, 1 << 30).unwrap();
    feed(&mut sink, b"other");
    drop(sink);
    assert_eq!(backend.get_range("bkt", "k", 0, u64::MAX).unwrap().0, data);
    assert_eq!(temp_files(&rig.dir.join("backend")), 0, "and no temporary file");
}

#[test]
fn a_write_through_body_leaves_a_clean_copy_once_the_backend_has_it() {
    let rig = Rig::new();
    let (gw, backend) = rig.open();
    gw.set_policies(vec!["bkt=write-through".parse().unwrap()]);
    let budget = MemoryBudget::new(u64::MAX);
    let data: Vec<u8> = (0..300_000u32).map(|i| (i * 11) as u8).collect();
    let mut sink = gw.incoming_put("bkt", "k", &info(), Some(data.len() as u64), &budget, 1 << 30).unwrap();
    assert!(matches!(&sink, IncomingPut::Streamed(b) if b.copy.is_some()));
    let etag = feed(&mut sink, &data);
    assert!(gw.cache.info(b"bkt/k").is_none(), "no copy before the backend has the object");
    gw.put_incoming("bkt", "k", sink, ObjectInfo { etag: etag.clone(), ..info() }, none()).unwrap();
    assert_eq!(backend.get_range("bkt", "k", 0, u64::MAX).unwrap().0, data);
    let cached = gw.cache.info(b"bkt/k").expect("a clean copy on flash");
    assert!(!cached.dirty);
    let r = gw.cache.get(b"bkt/k", 0, u64::MAX, super::now_ns()).unwrap();
    assert!(r.is_hit(), "served from flash");
    let head = gw.head("bkt", "k").unwrap();
    assert_eq!(head.etag, etag);
    assert_eq!(gw.read("bkt", "k", &head, 0, head.size).unwrap(), data);
}

#[test]
fn bodies_still_arriving_hold_their_room_in_the_dirty_budget() {
    let rig = Rig::new();
    let (gw, _) = rig.open();
    gw.dirty_limit.store(1 << 20, std::sync::atomic::Ordering::Relaxed);
    let budget = MemoryBudget::new(u64::MAX);
    let size = 600_000u64;
    let first = gw.incoming_put("bkt", "a", &info(), Some(size), &budget, 1 << 30).unwrap();
    // Together the two would overrun the budget once stored: the second is refused up front.
    let e = gw.incoming_put("bkt", "b", &info(), Some(size), &budget, 1 << 30).err().unwrap();
    assert_eq!(e.code().as_str(), "SlowDown");
    drop(first);
    let mut second = gw.incoming_put("bkt", "b", &info(), Some(size), &budget, 1 << 30).unwrap();
    let data = vec![3u8; size as usize];
    let etag = feed(&mut second, &data);
    // Its own claim does not count against it when it is stored.
    gw.put_incoming("bkt", "b", second, ObjectInfo { etag, ..info() }, none()).unwrap();
    assert_eq!(gw.dirty_claims.total(), 0);
    assert_eq!(gw.dirty().1, size);
}
