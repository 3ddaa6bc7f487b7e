//! The S3 backend's trait operations against a real S3 emulator: a `moto_server` started on a free
//! loopback port (installed by `scripts/test.sh`: `python3 -m pip install "moto[server]"`). Bucket
//! pass-through, attributes and the gateway's ETag, ranges (clamped, past the end), listing
//! semantics (byte prefixes, start-after, limits, odd keys), multipart uploads, deletes, errors,
//! backend hints, the conformance suite every backend runs (streamed writes included), and an unreachable
//! store answering `Io` within the retry budget.

use std::net::TcpStream;
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

use super::writer::STREAM_PART;
use super::{S3Backend, S3Settings};
use crate::backend::conformance::info;
use crate::backend::{Address, Advice, Backend, BackendError};

/// A moto_server child, killed on drop.
struct Moto {
    child: Child,
    port: u16,
}

impl Moto {
    fn start() -> Moto {
        let port = std::net::TcpListener::bind("127.0.0.1:0").unwrap().local_addr().unwrap().port();
        let child = Command::new("moto_server")
            .args(["-H", "127.0.0.1", "-p", &port.to_string()])
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .spawn()
            .expect("moto_server not found; install it with: python3 -m pip install \"moto[server]\"");
        let deadline = Instant::now() + Duration::from_secs(60);
        while TcpStream::connect(("127.0.0.1", port)).is_err() {
            assert!(Instant::now() < deadline, "moto_server did not listen within 60 s");
            std::thread::sleep(Duration::from_millis(100));
        }
        Moto { child, port }
    }
}

impl Drop for Moto {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

fn backend(port: u16) -> S3Backend {
    let s = S3Settings {
        endpoint: Some(format!("http://127.0.0.1:{port}")),
        allow_http: true,
        access_key_id: Some("k".into()),
        secret_access_key: Some("s".into()),
        ..Default::default()
    };
    S3Backend::open_with_env(&s, &|_| None).unwrap()
}

fn keys(b: &S3Backend, prefix: &str, after: &str, limit: usize) -> Vec<String> {
    b.list("bkt", prefix, after, limit).unwrap().into_iter().map(|e| e.key).collect()
}

#[test]
fn the_backend_trait_against_moto() {
    let moto = Moto::start();
    let b = backend(moto.port);
    b.create_bucket("bkt").unwrap();
    assert!(b.list_buckets().unwrap().iter().any(|x| x.name == "bkt" && x.created_ns > 0));
    b.head_bucket("bkt").unwrap();
    assert!(matches!(b.head_bucket("nobkt"), Err(BackendError::NoSuchBucket(_))));
    assert!(matches!(b.head("nobkt", "k"), Err(BackendError::NoSuchBucket(_))));

    let data: Vec<u8> = (0..100_000u32).map(|i| i as u8).collect();
    b.put("bkt", "obj", &data, &info(&data, "0123abcd-3")).unwrap();
    let i = b.head("bkt", "obj").unwrap();
    assert_eq!((i.size, i.etag.as_str(), i.content_type.as_str()), (100_000, "0123abcd-3", "text/x-t"));
    assert_eq!(i.user_meta.get("colour").map(String::as_str), Some("blue"));
    assert!(!i.user_meta.contains_key("reo-etag"), "the ETag's metadata leaked: {:?}", i.user_meta);
    assert_eq!(b.get_range("bkt", "obj", 10, 20).unwrap().0, &data[10..20]);
    assert_eq!(b.get_range("bkt", "obj", 99_990, u64::MAX).unwrap().0, &data[99_990..]);
    assert!(b.get_range("bkt", "obj", 200_000, 200_010).unwrap().0.is_empty());
    assert!(b.get_range("bkt", "obj", 5, 5).unwrap().0.is_empty());
    b.put("bkt", "empty", b"", &info(b"", "d41d8cd98f00b204e9800998ecf8427e")).unwrap();
    assert_eq!(b.get_range("bkt", "empty", 0, u64::MAX).unwrap().1.size, 0);
    assert!(matches!(b.head("bkt", "missing"), Err(BackendError::NoSuchKey(_))));
    assert!(matches!(b.put("bkt", "a//b", b"x", &info(b"x", "e")), Err(BackendError::Invalid(_))));

    for k in ["a", "a/b", "a/c/d", "b", "photos/cat", "photos/cow", "photos/dog", "sp ace+%41é"] {
        b.put("bkt", k, k.as_bytes(), &info(k.as_bytes(), "e")).unwrap();
    }
    assert_eq!(keys(&b, "photos/c", "", 100), ["photos/cat", "photos/cow"]);
    assert_eq!(keys(&b, "pho", "photos/cat", 100), ["photos/cow", "photos/dog"]);
    assert_eq!(keys(&b, "a", "", 100), ["a", "a/b", "a/c/d"]);
    assert_eq!(keys(&b, "", "a/b", 3), ["a/c/d", "b", "empty"]);
    assert_eq!(keys(&b, "", "a/", 1), ["a/b"]);
    assert_eq!(keys(&b, "sp", "", 100), ["sp ace+%41é"]);
    let listed = b.list("bkt", "obj", "", 10).unwrap();
    assert_eq!((listed.len(), listed[0].info.size), (1, 100_000));

    // Above the threshold: a multipart upload; the gateway's ETag still comes back.
    let big: Vec<u8> = (0..STREAM_PART + 1000).map(|i| (i % 251) as u8).collect();
    b.put("bkt", "big", &big, &info(&big, "feedface-5")).unwrap();
    assert_eq!(b.head("bkt", "big").unwrap().etag, "feedface-5");
    let end = big.len() as u64;
    assert_eq!(b.get_range("bkt", "big", end - 2000, end).unwrap().0, &big[big.len() - 2000..]);

    let r = b.advise("bkt", &Address::Prefix("photos/".into()), Advice::WillNeed).unwrap();
    assert_eq!((r.objects, r.bytes), (3, 30));
    assert!(matches!(b.advise("bkt", &Address::Key("nope".into()), Advice::Pin), Err(BackendError::NoSuchKey(_))));

    assert!(matches!(b.delete_bucket("bkt"), Err(BackendError::BucketNotEmpty(_))));
    for k in keys(&b, "", "", 100) {
        b.delete("bkt", &k).unwrap();
    }
    b.delete("bkt", "never-was").unwrap();
    assert!(matches!(b.head("bkt", "obj"), Err(BackendError::NoSuchKey(_))));
    b.delete_bucket("bkt").unwrap();
    assert!(matches!(b.head_bucket("bkt"), Err(BackendError::NoSuchBucket(_))));
    assert!(matches!(b.delete_bucket("bkt"), Err(BackendError::NoSuchBucket(_))));
}

/// The suite every backend runs ([`crate::backend::conformance`]), streamed writes included.
#[test]
fn the_s3_backend_conforms_against_moto() {
    let moto = Moto::start();
    crate::backend::conformance::run(std::sync::Arc::new(backend(moto.port)));
}

#[test]
fn an_unreachable_store_is_io_within_the_retry_budget() {
    let port = std::net::TcpListener::bind("127.0.0.1:0").unwrap().local_addr().unwrap().port();
    let b = backend(port); // nothing listens there
    let t = Instant::now();
    let e = b.head("bkt", "k").unwrap_err();
    assert!(matches!(&e, BackendError::Io(m) if m.to_lowercase().contains("connection refused")), "{e}");
    assert!(matches!(b.put("bkt", "k", b"x", &info(b"x", "e")), Err(BackendError::Io(_))));
    let e = b.list_buckets().unwrap_err().to_string();
    assert!(e.contains("unreachable") && e.to_lowercase().contains("connection refused"), "{e}");
    assert!(t.elapsed() < Duration::from_secs(30), "took {:?}", t.elapsed());
}
