//! Streamed PUTs ([`super::incoming`]): a write-back body goes to the cache as it arrives and the
//! object changes only when the write is stored; an abandoned body (a digest mismatch, a client
//! gone) or a crash mid-body leaves the previous version; the paths whose backend needs a whole
//! object collect the body.

use super::incoming::IncomingPut;
use super::tests::Rig;
use crate::backend::ObjectInfo;
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
    assert!(matches!(sink, IncomingPut::Staged(_)), "write-back streams into the cache");
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
    let data = vec![7u8; 250_000];
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
fn bodies_the_backend_takes_whole_are_collected_and_refusals_come_first() {
    let rig = Rig::new();
    let (gw, _) = rig.open();
    let budget = MemoryBudget::new(u64::MAX);
    // Size unknown, or larger than the dirty budget (written around the cache).
    let sink = gw.incoming_put("bkt", "k", &info(), None, &budget, 1 << 30).unwrap();
    assert!(matches!(sink, IncomingPut::Collected(_)));
    let sink = gw.incoming_put("bkt", "k", &info(), Some(1 << 29), &budget, 1 << 30).unwrap();
    assert!(matches!(sink, IncomingPut::Collected(_)));
    // Over the body limit, or a key the gateway cannot store: refused before the body.
    let e = gw.incoming_put("bkt", "k", &info(), Some(2 << 30), &budget, 1 << 30).err().unwrap();
    assert_eq!(e.code().as_str(), "EntityTooLarge");
    let e = gw.incoming_put("bkt", &"x".repeat(1025), &info(), Some(1), &budget, 1 << 30).err().unwrap();
    assert_eq!(e.code().as_str(), "KeyTooLongError");
    // Metadata too large for a blob header: written around the cache, as before streaming.
    let big = ObjectInfo { system: [("content-disposition".to_string(), "x".repeat(9000))].into(), ..info() };
    let sink = gw.incoming_put("bkt", "k", &big, Some(10), &budget, 1 << 30).unwrap();
    assert!(matches!(sink, IncomingPut::Collected(_)));
}
