//! The behaviour every [`Backend`] guarantees, as one suite run against each of them (in the
//! spirit of `object_store`'s `integration.rs`): the local directory backend and the deadline
//! wrapper in `backend::tests`, the S3 backend against moto_server in `backend::s3::moto_tests`.
//!
//! The suite asserts the shared contract only. Where backends legitimately differ it checks what
//! they have in common: `head` and reads report the ETag the object was written with, whatever
//! its form, but a listing's entries may carry the store's own (S3 lists its ETags, not the
//! gateway's); an object's modification time is the backend's to keep; a re-created bucket is
//! not checked (S3's us-east-1 accepts it); key shapes one backend refuses (`a//b` on S3) are
//! not written; backend hints are each backend's own.
//!
//! Each part works in a bucket of its own that it creates and deletes, so the suite can run on a
//! backend that already holds other buckets.

use std::sync::Arc;

use bytes::Bytes;

use super::list::{self, ListQuery};
use super::{Backend, BackendError, ObjectInfo};

/// Runs every part of the suite against `b`.
pub(crate) fn run(b: Arc<dyn Backend>) {
    buckets(&*b);
    objects(&*b);
    listing(&*b);
    with_bucket(&*b, "reo-conformance-stream", || streamed_writes(b.clone(), "reo-conformance-stream"));
}

/// Creates `bucket`, runs `f`, then empties and deletes it.
fn with_bucket(b: &dyn Backend, bucket: &str, f: impl FnOnce()) {
    b.create_bucket(bucket).unwrap();
    f();
    for e in b.list(bucket, "", "", usize::MAX).unwrap() {
        b.delete(bucket, &e.key).unwrap();
    }
    b.delete_bucket(bucket).unwrap();
}

/// An object's info as the gateway writes it: content type, user metadata, and system metadata
/// both ways (headers object_store sends, and ones it carries as metadata).
pub(crate) fn info(data: &[u8], etag: &str) -> ObjectInfo {
    let system = [
        ("cache-control", "max-age=60"),
        ("content-language", "fr"),
        ("expires", "Thu, 01 Dec 2033 16:00:00 GMT"),
        ("x-amz-checksum-crc32", "AAAAAA=="),
    ]
    .into_iter()
    .map(|(k, v)| (k.to_string(), v.to_string()))
    .collect();
    ObjectInfo {
        size: data.len() as u64,
        etag: etag.into(),
        content_type: "text/x-t".into(),
        user_meta: [("colour".to_string(), "blue".to_string())].into(),
        mtime_ns: 0,
        system,
    }
}

fn keys(b: &dyn Backend, bucket: &str, prefix: &str, after: &str, limit: usize) -> Vec<String> {
    b.list(bucket, prefix, after, limit).unwrap().into_iter().map(|e| e.key).collect()
}

/// Creating, finding, listing and deleting buckets; a missing bucket is `NoSuchBucket`
/// everywhere, a bucket with objects cannot be deleted.
fn buckets(b: &dyn Backend) {
    let (bucket, missing) = ("reo-conformance-buckets", "reo-conformance-missing");
    b.create_bucket(bucket).unwrap();
    let head = b.head_bucket(bucket).unwrap();
    assert_eq!(head.name, bucket);
    assert!(head.created_ns > 0, "a bucket has a creation time");
    assert!(b.list_buckets().unwrap().iter().any(|x| x.name == bucket && x.created_ns > 0));
    assert!(matches!(b.head_bucket(missing), Err(BackendError::NoSuchBucket(_))));
    assert!(matches!(b.head(missing, "k"), Err(BackendError::NoSuchBucket(_))));
    assert!(matches!(b.get_range(missing, "k", 0, 1), Err(BackendError::NoSuchBucket(_))));
    assert!(matches!(b.delete_bucket(missing), Err(BackendError::NoSuchBucket(_))));
    b.put(bucket, "k", b"x", &info(b"x", "e")).unwrap();
    assert!(matches!(b.delete_bucket(bucket), Err(BackendError::BucketNotEmpty(_))));
    b.delete(bucket, "k").unwrap();
    b.delete_bucket(bucket).unwrap();
    assert!(matches!(b.head_bucket(bucket), Err(BackendError::NoSuchBucket(_))));
    assert!(!b.list_buckets().unwrap().iter().any(|x| x.name == bucket));
    assert!(matches!(b.delete_bucket(bucket), Err(BackendError::NoSuchBucket(_))));
}

/// Whole objects: put and get, ranges (clamped, empty, past the end), streamed reads, the info
/// (size, the ETag written, content type, user and system metadata), overwrite, delete, missing
/// keys.
fn objects(b: &dyn Backend) {
    let bucket = "reo-conformance-objects";
    with_bucket(b, bucket, || {
        let data: Vec<u8> = (0..100_000u32).map(|i| (i % 253) as u8).collect();
        b.put(bucket, "obj", &data, &info(&data, "0123abcd-3")).unwrap();
        let i = b.head(bucket, "obj").unwrap();
        assert_eq!((i.size, i.etag.as_str(), i.content_type.as_str()), (100_000, "0123abcd-3", "text/x-t"));
        assert_eq!(i.user_meta, info(&data, "").user_meta);
        for (k, v) in &info(&data, "").system {
            assert_eq!(i.system.get(k), Some(v), "system header {k} kept: {:?}", i.system);
        }

        // Ranges: the info with them is the object's.
        let (part, with) = b.get_range(bucket, "obj", 10, 20).unwrap();
        assert_eq!(part, &data[10..20]);
        assert_eq!((with.size, with.etag.as_str()), (i.size, i.etag.as_str()));
        assert_eq!(b.get_range(bucket, "obj", 0, u64::MAX).unwrap().0, data);
        assert_eq!(b.get_range(bucket, "obj", 99_990, u64::MAX).unwrap().0, &data[99_990..]);
        assert!(b.get_range(bucket, "obj", 200_000, 200_010).unwrap().0.is_empty());
        assert!(b.get_range(bucket, "obj", 5, 5).unwrap().0.is_empty());

        // Streamed reads: exactly the range, the info before the first chunk.
        let (si, chunks) = b.get_stream(bucket, "obj", 7, 99_000).unwrap();
        assert_eq!((si.size, si.etag.as_str()), (i.size, i.etag.as_str()));
        assert_eq!(chunks.map(Result::unwrap).collect::<Vec<_>>().concat(), &data[7..99_000]);
        let (_, chunks) = b.get_stream(bucket, "obj", 0, u64::MAX).unwrap();
        assert_eq!(chunks.map(Result::unwrap).collect::<Vec<_>>().concat(), data);

        // An empty object, and bytes handed over.
        b.put(bucket, "empty", b"", &info(b"", "d41d8cd98f00b204e9800998ecf8427e")).unwrap();
        let (got, ei) = b.get_range(bucket, "empty", 0, u64::MAX).unwrap();
        assert_eq!((got.len(), ei.size), (0, 0));
        b.put_owned(bucket, "owned", Bytes::from_static(b"owned bytes"), &info(b"owned bytes", "e1")).unwrap();
        assert_eq!(b.get_range(bucket, "owned", 0, u64::MAX).unwrap().0, b"owned bytes");

        // Overwrite: the new object whole, with its own info.
        b.put(bucket, "obj", b"new", &info(b"new", "e2")).unwrap();
        let (got, ni) = b.get_range(bucket, "obj", 0, u64::MAX).unwrap();
        assert_eq!((got.as_slice(), ni.size, ni.etag.as_str()), (&b"new"[..], 3, "e2"));
        assert_eq!(b.head(bucket, "obj").unwrap().etag, "e2");

        // Missing keys, and deletes (of a missing key too).
        assert!(matches!(b.head(bucket, "missing"), Err(BackendError::NoSuchKey(_))));
        assert!(matches!(b.get_range(bucket, "missing", 0, 1), Err(BackendError::NoSuchKey(_))));
        assert!(matches!(b.get_stream(bucket, "missing", 0, 1), Err(BackendError::NoSuchKey(_))));
        b.delete(bucket, "obj").unwrap();
        assert!(matches!(b.head(bucket, "obj"), Err(BackendError::NoSuchKey(_))));
        assert!(matches!(b.get_range(bucket, "obj", 0, 1), Err(BackendError::NoSuchKey(_))));
        b.delete(bucket, "never-was").unwrap();
        assert_eq!(keys(b, bucket, "", "", 100), ["empty", "owned"]);
    });
}

/// Listings: every key sorted by bytes, byte prefixes, start-after, limits, paging to the end,
/// the size of each entry, and S3's delimiter grouping ([`list::page`]) over them.
fn listing(b: &dyn Backend) {
    let bucket = "reo-conformance-list";
    with_bucket(b, bucket, || {
        let all = ["a", "a/b", "a/c/d", "b", "photos/cat", "photos/cow", "photos/dog", "sp ace+%41é", "z~"];
        // Written out of order: the listing sorts.
        for k in all.iter().rev() {
            b.put(bucket, k, k.as_bytes(), &info(k.as_bytes(), "e")).unwrap();
        }
        assert_eq!(keys(b, bucket, "", "", usize::MAX), all);
        assert_eq!(keys(b, bucket, "photos/c", "", 100), ["photos/cat", "photos/cow"]);
        assert_eq!(keys(b, bucket, "pho", "photos/cat", 100), ["photos/cow", "photos/dog"]);
        assert_eq!(keys(b, bucket, "a", "", 100), ["a", "a/b", "a/c/d"]);
        assert_eq!(keys(b, bucket, "", "a/b", 3), ["a/c/d", "b", "photos/cat"]);
        assert_eq!(keys(b, bucket, "", "a/", 1), ["a/b"]);
        assert_eq!(keys(b, bucket, "sp", "", 100), ["sp ace+%41é"]);
        assert!(keys(b, bucket, "nothing", "", 100).is_empty());
        assert!(keys(b, bucket, "", "z~", 100).is_empty());
        let listed = b.list(bucket, "photos/dog", "", 10).unwrap();
        assert_eq!(listed.len(), 1);
        assert_eq!(listed[0].info.size, 10);

        // Paging two at a time, each page after the last key of the one before: every key once.
        let (mut paged, mut after) = (Vec::new(), String::new());
        loop {
            let page = keys(b, bucket, "", &after, 2);
            assert!(page.len() <= 2);
            let Some(last) = page.last() else { break };
            after = last.clone();
            paged.extend(page);
        }
        assert_eq!(paged, all);

        // Grouped by "/" (ListObjects with a delimiter), one key per page.
        let q = |after: &str, max_keys| ListQuery {
            prefix: String::new(),
            delimiter: Some("/".into()),
            after: after.into(),
            max_keys,
        };
        let whole = list::page(b.list(bucket, "", "", usize::MAX).unwrap(), &q("", 1000));
        let top: Vec<&str> = whole.contents.iter().map(|e| e.key.as_str()).collect();
        assert_eq!(top, ["a", "b", "sp ace+%41é", "z~"]);
        assert_eq!(whole.common_prefixes, ["a/", "photos/"]);
        assert!(!whole.truncated);
        let first = list::page(b.list(bucket, "", "", usize::MAX).unwrap(), &q("a", 1));
        assert_eq!((first.common_prefixes.as_slice(), first.truncated), (&["a/".to_string()][..], true));
        assert_eq!(first.next_after.as_deref(), Some("a/"));
    });
}

/// Streamed writes ([`super::writer`]): invisible until the commit, then whole, with the ETag
/// the commit returns; abandoned ones leave the previous object; a misstated size is refused;
/// a missing bucket is refused when the writer is opened.
pub(crate) fn streamed_writes(b: Arc<dyn Backend>, bucket: &str) {
    let info = |data: &[u8], etag: &str| ObjectInfo {
        size: data.len() as u64,
        etag: etag.into(),
        content_type: "text/x-streamed".into(),
        user_meta: [("colour".to_string(), "green".to_string())].into(),
        ..Default::default()
    };
    let stream = |key: &str, data: &[u8], opened: &ObjectInfo, piece: usize| {
        let mut w = b.clone().put_stream(bucket, key, opened).unwrap();
        for p in data.chunks(piece) {
            w.write(Bytes::copy_from_slice(p)).unwrap();
        }
        w
    };
    // Small, ETag unknown when opened: the ETag given at the commit.
    let small: Vec<u8> = (0..100_000u32).map(|i| (i % 241) as u8).collect();
    let md5 = crate::keys::md5_hex(&small);
    let w = stream("small", &small, &info(&[], ""), 30_000);
    assert_eq!(w.commit(&info(&small, &md5)).unwrap(), md5);
    let (got, i) = b.get_range(bucket, "small", 0, u64::MAX).unwrap();
    assert_eq!((got == small, i.etag.as_str(), i.content_type.as_str()), (true, md5.as_str(), "text/x-streamed"));
    assert_eq!(i.user_meta.get("colour").map(String::as_str), Some("green"));
    // Large (several S3 parts), ETag unknown when opened: the ETag the commit returns is the
    // one the backend reports.
    let large: Vec<u8> = (0..(17 << 20) + 12_345u32).map(|i| (i % 251) as u8).collect();
    let md5 = crate::keys::md5_hex(&large);
    let w = stream("large", &large, &info(&large, ""), 1 << 20);
    let etag = w.commit(&info(&large, &md5)).unwrap();
    assert_eq!(b.head(bucket, "large").unwrap().etag, etag);
    assert_eq!(
        b.get_range(bucket, "large", (16 << 20) - 5, (16 << 20) + 5).unwrap().0,
        &large[(16 << 20) - 5..(16 << 20) + 5]
    );
    // Large, ETag known when opened (the flusher's writes): that ETag.
    let w = stream("large", &large, &info(&large, "0123abcd-3"), 3 << 20);
    assert_eq!(w.commit(&info(&large, "0123abcd-3")).unwrap(), "0123abcd-3");
    assert_eq!(b.head(bucket, "large").unwrap().etag, "0123abcd-3");
    // Abandoned, small or large: the previous object stays whole.
    drop(stream("small", b"not committed", &info(&[], ""), 4));
    drop(stream("large", &small.repeat(100), &info(&[], ""), 1 << 20));
    assert_eq!(b.get_range(bucket, "small", 0, u64::MAX).unwrap().0, small);
    assert_eq!(b.head(bucket, "large").unwrap().size, large.len() as u64);
    // A commit that misstates the size is refused.
    let w = stream("small", b"four", &info(&[], ""), 4);
    assert!(matches!(w.commit(&info(b"five!", "e")), Err(BackendError::Invalid(_))));
    assert_eq!(b.get_range(bucket, "small", 0, u64::MAX).unwrap().0, small);
    // A missing bucket is refused when the writer is opened.
    assert!(matches!(b.clone().put_stream("nobucket", "k", &info(&[], "")), Err(BackendError::NoSuchBucket(_))));
    for k in ["small", "large"] {
        b.delete(bucket, k).unwrap();
    }
}
