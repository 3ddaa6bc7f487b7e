//! Hints with `target: backend` on the gateway's test rig, through the recording test double at
//! the backend trait seam: each intent is forwarded to `Backend::advise` with the hint's address and
//! advice, the local backend's report is listed with the hint (and survives a reload), nothing
//! goes to the cache, a missing key is reported as the hint's error, and bad addresses are refused
//! at submission with the field named.

use parking_lot::Mutex;

use super::engine::HintEngine;
use super::{unix_now, HintSpec, Intent, Lease, Move, Target};
use crate::backend::{Address, Advice, Backend, LocalBackend, ObjectInfo};
use crate::gateway::counting::Counting;
use crate::gateway::tests::Rig;

fn spec(key: Option<&str>, prefix: Option<&str>, intent: Intent, now: u64) -> HintSpec {
    HintSpec {
        app_id: "t".into(),
        bucket: "bkt".into(),
        key: key.map(Into::into),
        prefix: prefix.map(Into::into),
        range: None,
        target: Target::Backend,
        intent,
        priority: 0,
        lease: Lease { start: now, end: now + 100 },
        reorganize: None,
    }
}

fn put(b: &LocalBackend, key: &str, len: usize) {
    let data = vec![3u8; len];
    let info = ObjectInfo { size: len as u64, etag: crate::keys::md5_hex(&data), ..Default::default() };
    b.put("bkt", key, &data, &info).unwrap();
}

#[test]
fn backend_hints_are_forwarded_with_their_address_and_advice() {
    let rig = Rig::new();
    let rec = Mutex::new(None);
    let (gw, backend) = rig.open_with(|inner| {
        let r = Counting::new(inner);
        *rec.lock() = Some(r.clone());
        r
    });
    let rec = rec.into_inner().unwrap();
    put(&backend, "obj", 100_000);
    put(&backend, "p/a", 10);
    put(&backend, "p/b", 20);
    let state = rig.dir.join("state");
    let e = HintEngine::open(gw.clone(), &state, 0).unwrap();
    let now = unix_now();
    let mut ranged = spec(Some("obj"), None, Intent::Open, now);
    ranged.range = Some((10, 30));
    let hints = [
        spec(Some("obj"), None, Intent::Prefetch, now),
        ranged,
        spec(None, Some("p/"), Intent::Close, now),
        spec(Some("obj"), None, Intent::Pin, now),
        spec(Some("obj"), None, Intent::Unpin, now),
    ];
    let ids: Vec<String> = hints.iter().map(|h| e.submit(h.clone()).unwrap()).collect();
    e.tick(now + 1);
    let calls = rec.advised.lock().clone();
    let want = [
        Address::Key("obj".into()),
        Address::Range { key: "obj".into(), start: 10, end: 30 },
        Address::Prefix("p/".into()),
        Address::Key("obj".into()),
        Address::Key("obj".into()),
    ];
    let advice = [Advice::WillNeed, Advice::WillNeed, Advice::DontNeed, Advice::Pin, Advice::Unpin];
    assert_eq!(calls.len(), 5, "{calls:?}");
    for (i, c) in calls.iter().enumerate() {
        assert_eq!((c.0.as_str(), &c.1, c.2), ("bkt", &want[i], advice[i]), "call {i}");
    }
    assert!(gw.cache.info(b"bkt/obj").is_none(), "a backend hint put the object on flash");
    let listed = |id: &str| e.list().into_iter().find(|h| h.request_id == id).unwrap();
    assert_eq!(listed(&ids[0]).backend_result.as_deref(), Some("posix_fadvise(WILLNEED) on 1 objects, 100000 bytes"));
    assert_eq!(listed(&ids[1]).backend_result.as_deref(), Some("posix_fadvise(WILLNEED) on 1 objects, 20 bytes"));
    assert_eq!(listed(&ids[2]).backend_result.as_deref(), Some("posix_fadvise(DONTNEED) on 2 objects, 30 bytes"));
    assert!(listed(&ids[4]).backend_result.unwrap().starts_with("nothing"));
    assert_eq!(e.counters().backend_advised, 6);
    // Persisted like cache hints: a reload lists them with their target and result.
    let again = HintEngine::open(gw.clone(), &state, 0).unwrap();
    let h = again.list().into_iter().find(|h| h.request_id == ids[2]).unwrap();
    assert_eq!((h.spec.target, h.backend_result.is_some()), (Target::Backend, true));
}

#[test]
fn bad_backend_addresses_get_clear_errors() {
    let rig = Rig::new();
    let (gw, _backend) = rig.open();
    let e = HintEngine::open(gw, &rig.dir.join("state"), 0).unwrap();
    let now = unix_now();
    // Refused at submission, the field named.
    let nul = spec(Some("a\0b"), None, Intent::Prefetch, now);
    assert!(e.submit(nul).unwrap_err().to_string().starts_with("key: the object key contains a NUL"));
    let mut bad_bucket = spec(Some("k"), None, Intent::Prefetch, now);
    bad_bucket.bucket = "Bad_Bucket".into();
    assert!(e.submit(bad_bucket).unwrap_err().to_string().starts_with("bucket: invalid bucket name"));
    let mut reorg = spec(None, None, Intent::Reorganize, now);
    reorg.reorganize = Some(Move { from: "a/".into(), to: "b/".into() });
    assert!(e.submit(reorg).unwrap_err().to_string().starts_with("target:"));
    // A key that does not exist: the hint is applied and lists the backend's error.
    let id = e.submit(spec(Some("missing"), None, Intent::Prefetch, now)).unwrap();
    e.tick(now + 1);
    let h = e.list().into_iter().find(|h| h.request_id == id).unwrap();
    assert_eq!(h.backend_result.as_deref(), Some("error: key \"missing\" does not exist"));
    assert_eq!(e.counters().errors, 1);
}
