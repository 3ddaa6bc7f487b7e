//! Tests of the local backend: round trips, atomic overwrite, keys that look like paths, listing.

use super::*;

/// A local backend rooted in a subdirectory of a temporary directory (removed when the
/// returned guard drops), so that its root's parent is the test's too.
fn backend() -> (LocalBackend, std::path::PathBuf, tempfile::TempDir) {
    let tmp = tempfile::tempdir().unwrap();
    let dir = tmp.path().join("root");
    (LocalBackend::open(&dir).unwrap(), dir, tmp)
}

fn info(data: &[u8]) -> ObjectInfo {
    ObjectInfo { size: data.len() as u64, etag: "e".into(), content_type: "text/plain".into(), ..Default::default() }
}

#[test]
fn buckets_and_objects_round_trip() {
    let (b, dir, _tmp) = backend();
    assert!(matches!(b.head("no", "k"), Err(BackendError::Invalid(_))));
    assert!(matches!(b.head("nobucket", "k"), Err(BackendError::NoSuchBucket(_))));
    b.create_bucket("bkt").unwrap();
    assert!(matches!(b.create_bucket("bkt"), Err(BackendError::BucketExists(_))));
    assert_eq!(b.list_buckets().unwrap().len(), 1);
    for k in ["a", "a/b", "a/b/c", "../../escape", "/abs", "sp ace+%41é", "a//b/"] {
        b.put("bkt", k, k.as_bytes(), &info(k.as_bytes())).unwrap();
    }
    for k in ["a", "a/b", "a/b/c", "../../escape", "/abs", "sp ace+%41é", "a//b/"] {
        let (data, i) = b.get_range("bkt", k, 0, u64::MAX).unwrap();
        assert_eq!(data, k.as_bytes());
        assert_eq!(i.content_type, "text/plain");
    }
    assert!(!dir.parent().unwrap().join("escape").exists());
    let (part, _) = b.get_range("bkt", "a/b/c", 2, 4).unwrap();
    assert_eq!(part, b"b/");
    b.put("bkt", "a", b"new", &info(b"new")).unwrap();
    assert_eq!(b.get_range("bkt", "a", 0, u64::MAX).unwrap().0, b"new");
    let keys: Vec<String> = b.list("bkt", "", "", usize::MAX).unwrap().into_iter().map(|e| e.key).collect();
    assert_eq!(keys, ["../../escape", "/abs", "a", "a//b/", "a/b", "a/b/c", "sp ace+%41é"]);
    let keys: Vec<String> = b.list("bkt", "a/", "a/b", usize::MAX).unwrap().into_iter().map(|e| e.key).collect();
    assert_eq!(keys, ["a/b/c"]);
    assert!(matches!(b.delete_bucket("bkt"), Err(BackendError::BucketNotEmpty(_))));
    for k in ["a", "a/b", "a/b/c", "../../escape", "/abs", "sp ace+%41é", "a//b/"] {
        b.delete("bkt", k).unwrap();
    }
    b.delete("bkt", "never-existed").unwrap();
    assert!(matches!(b.head("bkt", "a"), Err(BackendError::NoSuchKey(_))));
    b.delete_bucket("bkt").unwrap();
    assert!(b.list_buckets().unwrap().is_empty());
}

#[test]
fn long_keys_and_missing_sidecar() {
    let (b, dir, _tmp) = backend();
    b.create_bucket("bkt").unwrap();
    let long = format!("{}/{}", "é".repeat(300), "x".repeat(300));
    assert_eq!(long.len(), 901);
    b.put("bkt", &long, b"L", &info(b"L")).unwrap();
    assert_eq!(b.list("bkt", "é", "", 10).unwrap()[0].key, long);
    assert_eq!(b.get_range("bkt", &long, 0, 1).unwrap().0, b"L");
    // A crash between the data and sidecar renames: the info comes from the data file.
    b.put("bkt", "k", b"hello", &info(b"hello")).unwrap();
    std::fs::remove_file(dir.join("bkt").join("m.k")).unwrap();
    assert_eq!(b.head("bkt", "k").unwrap().etag, "5d41402abc4b2a76b9719d911017c592");
}

#[test]
fn a_vanished_root_is_an_outage_not_an_empty_store() {
    let (b, dir, _tmp) = backend();
    b.create_bucket("bkt").unwrap();
    b.put("bkt", "a/b", b"x", &info(b"x")).unwrap();
    let away = dir.with_extension("away");
    std::fs::rename(&dir, &away).unwrap();
    assert!(matches!(b.head_bucket("bkt"), Err(BackendError::Io(_))));
    assert!(matches!(b.put("bkt", "a/c", b"y", &info(b"y")), Err(BackendError::Io(_))));
    assert!(matches!(b.create_bucket("new"), Err(BackendError::Io(_))));
    assert!(matches!(b.list_buckets(), Err(BackendError::Io(_))));
    assert!(!dir.exists(), "the root was recreated");
    std::fs::rename(&away, &dir).unwrap();
    b.put("bkt", "a/c", b"y", &info(b"y")).unwrap();
    assert_eq!(b.get_range("bkt", "a/b", 0, 1).unwrap().0, b"x");
}

#[test]
fn streamed_reads_come_in_chunks_and_keep_the_opened_version() {
    let (b, _dir, _tmp) = backend();
    b.create_bucket("bkt").unwrap();
    let data: Vec<u8> = (0..(2 * local::STREAM_CHUNK + 777)).map(|i| (i % 251) as u8).collect();
    b.put("bkt", "big", &data, &info(&data)).unwrap();
    let (i, chunks) = b.get_stream("bkt", "big", 5, u64::MAX).unwrap();
    assert_eq!(i.size, data.len() as u64);
    // Overwritten after the open: the stream still yields the version it opened.
    b.put("bkt", "big", b"new", &info(b"new")).unwrap();
    let chunks: Vec<bytes::Bytes> = chunks.map(Result::unwrap).collect();
    assert_eq!(chunks.len(), 3);
    assert!(chunks.iter().all(|c| c.len() <= local::STREAM_CHUNK));
    assert_eq!(chunks.concat(), &data[5..]);
    let (_, chunks) = b.get_stream("bkt", "big", 1, 2).unwrap();
    assert_eq!(chunks.map(Result::unwrap).collect::<Vec<_>>().concat(), b"e");
    assert!(matches!(b.get_stream("bkt", "nope", 0, 1), Err(BackendError::NoSuchKey(_))));
}

#[test]
fn a_key_removed_behind_the_index_does_not_cut_a_page_short() {
    let (b, dir, _tmp) = backend();
    b.create_bucket("bkt").unwrap();
    for k in ["a", "b", "c", "d"] {
        b.put("bkt", k, k.as_bytes(), &info(k.as_bytes())).unwrap();
    }
    assert_eq!(b.list("bkt", "", "", 10).unwrap().len(), 4, "the index is built");
    // Another process removes "b" under the gateway: a page of two is still two keys long (a
    // short page reads as the end of the listing), and "b" is gone from the index.
    let (data, meta) = (dir.join("bkt").join("o.b"), dir.join("bkt").join("m.b"));
    std::fs::remove_file(data).unwrap();
    let _ = std::fs::remove_file(meta);
    let keys = |v: Vec<crate::backend::ListEntry>| v.into_iter().map(|e| e.key).collect::<Vec<_>>();
    assert_eq!(keys(b.list("bkt", "", "", 2).unwrap()), ["a", "c"]);
    assert_eq!(keys(b.list("bkt", "", "a", 10).unwrap()), ["c", "d"]);
    // Not empty: its bucket cannot be deleted.
    assert!(matches!(b.delete_bucket("bkt"), Err(BackendError::BucketNotEmpty(_))));
}

/// The suite every backend runs ([`conformance`]), streamed writes included.
#[test]
fn the_local_backend_conforms() {
    let (b, _dir, _tmp) = backend();
    conformance::run(std::sync::Arc::new(b));
}

#[test]
fn writes_cut_short_by_a_crash_leave_nothing_after_a_restart() {
    let (b, dir, _tmp) = backend();
    b.create_bucket("bkt").unwrap();
    let b = std::sync::Arc::new(b);
    let mut w = b.clone().put_stream("bkt", "k", &info(b"")).unwrap();
    w.write(bytes::Bytes::from_static(b"half of a body")).unwrap();
    std::mem::forget(w); // the process dies mid-body
    let writing = dir.join("bkt").join("t.writing");
    assert_eq!(std::fs::read_dir(&writing).unwrap().count(), 1, "its temporary file is there");
    assert!(b.list("bkt", "", "", 10).unwrap().is_empty(), "and is not an object");
    drop(b);
    let b = LocalBackend::open(&dir).unwrap();
    assert!(!writing.exists() || std::fs::read_dir(&writing).unwrap().count() == 0, "the restart removed it");
    assert!(matches!(b.head("bkt", "k"), Err(BackendError::NoSuchKey(_))));
    b.delete_bucket("bkt").unwrap();
}

#[test]
fn a_shared_directory_lists_what_other_processes_wrote() {
    let (own, dir, _tmp) = backend();
    own.create_bucket("bkt").unwrap();
    let keys = |b: &LocalBackend| b.list("bkt", "", "", 100).unwrap().into_iter().map(|e| e.key).collect::<Vec<_>>();
    let shared = LocalBackend::open_shared(&dir).unwrap();
    let private = LocalBackend::open(&dir).unwrap();
    own.put("bkt", "a", b"1", &info(b"1")).unwrap();
    assert_eq!(keys(&shared), ["a"]);
    assert_eq!(keys(&private), ["a"]);
    // Another process writes and deletes: only the shared backend's listing sees it.
    own.put("bkt", "b", b"2", &info(b"2")).unwrap();
    own.delete("bkt", "a").unwrap();
    assert_eq!(keys(&shared), ["b"]);
    assert_eq!(keys(&private), Vec::<String>::new(), "a private index misses the other writer's key");
}
