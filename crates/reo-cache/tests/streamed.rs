//! Streamed write-back writes ([`reo_cache::StreamedPut`]): the object appears whole only when
//! finished, an abandoned or crashed write leaves the previous version, and the cleaner moves a
//! write's staged blobs instead of freeing them.

use std::sync::Arc;

use reo_cache::{Cache, ObjectMeta, StreamedPut};

mod common;

use common::*;

fn whole(c: &Cache, key: &[u8]) -> Vec<u8> {
    let r = c.get(key, 0, u64::MAX, 100).unwrap();
    assert!(r.is_hit());
    r.pieces.into_iter().flat_map(|p| p.data.unwrap()).collect()
}

/// Pushes `data` into `w` fragment by fragment.
fn push_all(w: &mut StreamedPut, data: &[u8]) {
    let mut at = 0;
    while w.next_len() > 0 {
        let n = w.next_len();
        w.push(&data[at..at + n]).unwrap();
        at += n;
    }
    assert_eq!(at, data.len());
}

fn close(c: Cache) {
    let store = c.store().clone();
    drop(c);
    Arc::try_unwrap(store).ok().expect("sole owner").close().unwrap();
}

#[test]
fn a_streamed_write_appears_whole_when_finished_and_survives_a_restart() {
    let devs = devices(4, 64);
    let d = content(1, (3 * FRAG + 99) as usize);
    let m = ObjectMeta { etag: "\"s1\"".into(), user: vec![("k".into(), "v".into())], ..meta() };
    let receipt;
    {
        let c = Arc::new(open(&devs, cfg(8 << 20)));
        let old = content(2, 500);
        c.put(b"b/o", &old, &meta(), true, 1).unwrap();
        let mut w = c.start_put(b"b/o", d.len() as u64, 2).unwrap();
        push_all(&mut w, &d);
        // Everything but the first fragment is on flash, and still the old version is served.
        assert_eq!(whole(&c, b"b/o"), old);
        receipt = w.finish(&m, 3).unwrap();
        assert_eq!(whole(&c, b"b/o"), d);
        assert_eq!(c.meta(b"b/o").unwrap().etag, "\"s1\"");
        assert_eq!(c.dirty_version_of(b"b/o"), Some(receipt.version));
        assert_eq!(c.store().blob_count(), 4, "the old version was freed");
        close(Arc::try_unwrap(c).ok().unwrap());
    }
    let c = open(&devs, cfg(8 << 20));
    assert_eq!(whole(&c, b"b/o"), d);
    let got = c.meta(b"b/o").unwrap();
    assert_eq!((got.etag.as_str(), got.user), ("\"s1\"", vec![("k".to_string(), "v".to_string())]));
    assert_eq!(c.dirty_keys(), vec![(b"b/o".to_vec(), receipt.version)]);
    // Flushed, it is rewritten clean and still comes back whole after another restart.
    assert!(c.mark_clean(b"b/o", receipt.version).unwrap());
    close(c);
    let c = open(&devs, cfg(8 << 20));
    assert_eq!(whole(&c, b"b/o"), d);
    assert!(!c.info(b"b/o").unwrap().dirty);
}

#[test]
fn an_abandoned_or_crashed_write_leaves_the_previous_version() {
    let devs = devices(4, 64);
    let old = content(3, (FRAG + 5) as usize);
    let d = content(4, (4 * FRAG) as usize);
    {
        let c = Arc::new(open(&devs, cfg(8 << 20)));
        let v = c.put(b"b/o", &old, &meta(), true, 1).unwrap();
        let before = c.store().blob_count();
        // Abandoned (a digest mismatch, a client gone): its blobs are freed.
        let mut w = c.start_put(b"b/o", d.len() as u64, 2).unwrap();
        push_all(&mut w, &d);
        assert_eq!(c.store().blob_count(), before + 3);
        drop(w);
        assert_eq!(c.store().blob_count(), before);
        // Pushing the wrong amount is refused, and so is finishing early.
        let mut w = c.start_put(b"b/o", d.len() as u64, 3).unwrap();
        assert!(w.push(&d[..10]).is_err());
        w.push(&d[..FRAG as usize]).unwrap();
        assert!(w.finish(&meta(), 4).is_err());
        assert_eq!(c.store().blob_count(), before);
        // A crash half-way: the process dies with the write's blobs on flash.
        let mut w = c.start_put(b"b/o", d.len() as u64, 5).unwrap();
        push_all(&mut w, &d);
        std::mem::forget(w);
        assert_eq!(c.dirty_version_of(b"b/o"), Some(v.version));
        let store = c.store().clone();
        drop(c);
        store.flush().unwrap();
    }
    let c = open(&devs, cfg(8 << 20));
    assert_eq!(whole(&c, b"b/o"), old, "the incomplete version is dropped");
    assert_eq!(c.store().blob_count(), 2, "and its blobs freed");
}

#[test]
fn the_cleaner_moves_staged_blobs_instead_of_freeing_them() {
    let c = Arc::new(open(&devices(4, 64), cfg(64 * FRAG)));
    let d = content(5, (3 * FRAG) as usize);
    let mut w = c.start_put(b"b/s", d.len() as u64, 1).unwrap();
    push_all(&mut w, &d);
    c.store().seal_open_bands();
    let mut passes = 0;
    while c.stats().gc_write_bytes < 2 * FRAG {
        assert!(c.clean_once() && passes < 16, "the cleaner moves the staged blobs");
        passes += 1;
    }
    let r = w.finish(&meta(), 2).unwrap();
    assert_eq!(whole(&c, b"b/s"), d);
    assert!(c.mark_clean(b"b/s", r.version).unwrap(), "the relocated version flushes");
    assert_eq!(whole(&c, b"b/s"), d);
}

#[test]
fn a_clean_streamed_copy_is_clean_and_a_crashed_one_never_comes_back() {
    let devs = devices(4, 64);
    let old = content(6, (2 * FRAG) as usize);
    let d = content(7, (3 * FRAG + 7) as usize);
    {
        let c = Arc::new(open(&devs, cfg(8 << 20)));
        c.put(b"b/o", &old, &meta(), false, 1).unwrap();
        let mut w = c.start_clean_put(b"b/o", d.len() as u64, 2).expect("admitted");
        push_all(&mut w, &d);
        assert_eq!(whole(&c, b"b/o"), old, "invisible until finished");
        let m = ObjectMeta { etag: "\"c1\"".into(), ..meta() };
        w.finish(&m, 3).unwrap();
        assert_eq!(whole(&c, b"b/o"), d);
        assert!(!c.info(b"b/o").unwrap().dirty, "a write-through copy is clean");
        assert_eq!(c.dirty_version_of(b"b/o"), None);
        // A second copy cut short by a crash (the backend never got it: no first fragment).
        let mut w = c.start_clean_put(b"b/p", d.len() as u64, 4).expect("admitted");
        push_all(&mut w, &d);
        std::mem::forget(w);
        let store = c.store().clone();
        drop(c);
        store.flush().unwrap();
    }
    let c = open(&devs, cfg(8 << 20));
    assert_eq!(whole(&c, b"b/o"), d);
    let r = c.get(b"b/p", 0, u64::MAX, 100).unwrap();
    assert!(r.size.is_none(), "the unfinished copy is dropped at restart, not served in part: {:?}", r.size);
}
