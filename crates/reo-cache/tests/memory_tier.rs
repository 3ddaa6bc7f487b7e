//! The DRAM tier through the cache's API: what it serves, that it never serves a version a write
//! or delete replaced, that it stays a subset of flash and within its byte bound.

mod common;

use std::sync::{Arc, Condvar, Mutex};

use common::{cfg, content, devices, meta, open, read_through};
use reo_cache::{Cache, MEMORY_ENTRY_OVERHEAD};
use reo_media::{Media, MemMedia};

fn with_memory(capacity: u64, memory: u64) -> Cache {
    let mut c = cfg(capacity);
    c.memory_bytes = memory;
    open(&devices(4, 64), c)
}

fn store_reads(c: &Cache) -> u64 {
    c.store().stats().reads
}

#[test]
fn a_flash_hit_is_copied_and_the_next_read_costs_no_device_read() {
    let c = with_memory(8 << 20, 1 << 20);
    let data = content(1, 5000);
    assert_eq!(read_through(&c, b"k", &data, 0, u64::MAX, 1), data); // miss, filled
    assert_eq!(c.get(b"k", 0, u64::MAX, 2).unwrap().pieces[0].data.as_deref(), Some(&data[..])); // flash
    assert_eq!(c.memory_occupancy().0, 1);
    let before = store_reads(&c);
    let r = c.get(b"k", 0, u64::MAX, 3).unwrap();
    assert!(r.is_hit());
    assert_eq!(r.pieces[0].data.as_deref(), Some(&data[..]));
    // A range, and the zero-copy pieces the gateway streams.
    let r = c.get(b"k", 100, 4000, 4).unwrap();
    assert_eq!(r.pieces[0].data.as_deref(), Some(&data[100..4000]));
    let r = c.get_shared(b"k", 10, 20, 5, true).unwrap();
    assert!(*r.pieces[0].data.as_ref().unwrap() == data[10..20]);
    assert_eq!(store_reads(&c), before, "a memory hit read a device");
    let st = c.stats();
    assert_eq!((st.memory_hits, st.memory_hit_bytes), (3, 5000 + 3900 + 10));
    assert_eq!(st.hits, 4, "memory hits count as hits");
}

#[test]
fn writes_and_deletes_replace_or_drop_the_copy() {
    let c = with_memory(8 << 20, 1 << 20);
    let (v1, v2) = (content(1, 3000), content(2, 3000));
    c.put(b"k", &v1, &meta(), true, 1).unwrap();
    assert_eq!(c.memory_occupancy().0, 1, "a write leaves a copy");
    assert_eq!(c.get(b"k", 0, u64::MAX, 2).unwrap().pieces[0].data.as_deref(), Some(&v1[..]));
    c.put(b"k", &v2, &meta(), true, 3).unwrap();
    let r = c.get(b"k", 0, u64::MAX, 4).unwrap();
    assert_eq!(r.pieces[0].data.as_deref(), Some(&v2[..]), "the older version was served");
    assert_eq!(c.stats().memory_hits, 2);
    c.delete(b"k");
    assert_eq!(c.memory_occupancy().0, 0);
    let r = c.get(b"k", 0, u64::MAX, 5).unwrap();
    assert!(!r.is_hit(), "a deleted object was served");
}

#[test]
fn a_fill_of_another_version_drops_the_copy() {
    let c = with_memory(8 << 20, 1 << 20);
    let v1 = content(1, 3000);
    read_through(&c, b"k", &v1, 0, u64::MAX, 1);
    c.get(b"k", 0, u64::MAX, 2).unwrap();
    assert_eq!(c.memory_occupancy().0, 1);
    // The backend changed behind the cache: a fill of another size replaces the object.
    let v2 = content(2, 2000);
    let t = c.token();
    c.fill(b"k", 2000, 0, &v2, &meta(), t, 3).unwrap();
    assert_eq!(c.memory_occupancy().0, 0);
    assert_eq!(c.get(b"k", 0, u64::MAX, 4).unwrap().pieces[0].data.as_deref(), Some(&v2[..]));
}

#[test]
fn copies_stay_a_subset_of_flash_and_within_the_bound() {
    // Flash holds 40 objects of 2 KB; memory 20.
    let memory = 20 * (2_000 + MEMORY_ENTRY_OVERHEAD);
    let c = with_memory(80_000, memory);
    for n in 0..600u64 {
        // Skewed: some keys come back often (copied, then served from memory), others rarely.
        let k = (n * n + n / 7) % 60;
        let d = content(k, 2_000);
        assert_eq!(read_through(&c, format!("k{k}").as_bytes(), &d, 0, u64::MAX, n), d);
        let (copies, used, cap) = c.memory_occupancy();
        assert!(used <= cap, "{used} > {cap}");
        assert!(copies <= c.occupancy().0, "{copies} copies of {} cached objects", c.occupancy().0);
    }
    let st = c.stats();
    assert!(st.memory_hits > 0 && st.memory_evictions > 0 && st.evictions > 0, "{st:?}");
}

/// The devices' shared switch: (armed, a read is held, open).
type Switch = Arc<(Mutex<(bool, bool, bool)>, Condvar)>;

/// A device whose reads, once armed, wait until opened: a get's flash read held between the
/// cache's two locks.
struct Gate {
    inner: MemMedia,
    switch: Switch,
}

impl Media for Gate {
    fn len(&self) -> u64 {
        self.inner.len()
    }
    fn read_at(&self, buf: &mut [u8], offset: u64) -> std::io::Result<()> {
        let (lock, cv) = &*self.switch;
        let mut st = lock.lock().unwrap();
        if st.0 {
            st.1 = true;
            cv.notify_all();
            st = cv.wait_while(st, |st| !st.2).unwrap();
        }
        drop(st);
        self.inner.read_at(buf, offset)
    }
    fn write_at(&self, buf: &[u8], offset: u64) -> std::io::Result<()> {
        self.inner.write_at(buf, offset)
    }
    fn sync(&self) -> std::io::Result<()> {
        self.inner.sync()
    }
    fn describe(&self) -> String {
        "gate".into()
    }
}

/// A get reads version 1 from flash; before it copies what it read into memory, the object is
/// evicted and the key filled again with version 2 of the same size (the backend changed), whose
/// new entry takes the slot the eviction freed. No write or delete happened, so the key's
/// invalidation token did not move: the copy of version 1 must still not be taken.
#[test]
fn a_copy_read_before_the_object_was_replaced_is_not_kept() {
    let switch: Switch = Arc::new((Mutex::new((false, false, false)), Condvar::new()));
    let devs: Vec<Arc<dyn Media>> = (0..4)
        .map(|_| Arc::new(Gate { inner: MemMedia::new(64 << 20), switch: switch.clone() }) as Arc<dyn Media>)
        .collect();
    // Room for eight objects of 3,000 bytes.
    let mut config = cfg(24_000);
    config.memory_bytes = 1 << 20;
    let c = Arc::new(open(&devs, config));
    let (v1, v2) = (content(1, 3000), content(2, 3000));
    read_through(&c, b"k", &v1, 0, u64::MAX, 1);
    let (lock, cv) = &*switch;
    lock.lock().unwrap().0 = true;
    let reader = {
        let c = c.clone();
        std::thread::spawn(move || c.get(b"k", 0, u64::MAX, 2).unwrap().pieces[0].data.clone())
    };
    // The reader's flash read is held.
    drop(cv.wait_while(lock.lock().unwrap(), |st| !st.1).unwrap());
    let mut n = 0u64;
    while c.status(b"k").is_some() {
        n += 1;
        assert!(n < 100, "k was never evicted");
        let t = c.token();
        c.fill(format!("x{n}").as_bytes(), 3000, 0, &content(100 + n, 3000), &meta(), t, 3).unwrap();
    }
    let t = c.token();
    c.fill(b"k", 3000, 0, &v2, &meta(), t, 4).unwrap();
    *lock.lock().unwrap() = (false, true, true);
    cv.notify_all();
    assert_eq!(reader.join().unwrap().as_deref(), Some(&v1[..]), "the concurrent get read version 1");
    let r = c.get(b"k", 0, u64::MAX, 5).unwrap();
    assert_eq!(r.pieces[0].data.as_deref(), Some(&v2[..]), "an older version was served from memory");
}

/// Two caches given the same writes and reads, one reading through `get_shared`, the other
/// through `get_memory` where it answers: every statistic and the object's read count agree.
#[test]
fn get_memory_counts_what_the_full_get_counts() {
    let (a, b) = (with_memory(8 << 20, 1 << 20), with_memory(8 << 20, 1 << 20));
    let data = content(3, 9000);
    for c in [&a, &b] {
        c.put(b"k", &data, &meta(), true, 1).unwrap();
    }
    for (t, (s, e)) in [(0, u64::MAX), (100, 200), (8999, 9000), (0, 9000)].into_iter().enumerate() {
        let now = 2 + t as u64;
        let full = a.get_shared(b"k", s, e, now, true).unwrap();
        let hot = b.get_memory(b"k", &meta().etag, (s, e), now).expect("a memory hit");
        let bytes = |r: &reo_cache::GetResult<reo_store::ReadBytes>| {
            r.pieces.iter().flat_map(|p| p.data.as_ref().unwrap().slices().flatten().copied()).collect::<Vec<u8>>()
        };
        assert_eq!(bytes(&hot), bytes(&full));
        assert_eq!(bytes(&hot), data[s as usize..e.min(9000) as usize]);
    }
    assert_eq!(a.stats(), b.stats());
    assert_eq!(a.info(b"k").unwrap().freq, b.info(b"k").unwrap().freq);
}

#[test]
fn get_memory_counts_nothing_when_it_gives_way() {
    let mut cfg = cfg(8 << 20);
    cfg.memory_bytes = 1 << 20;
    cfg.hot_recompute_every = 3;
    let c = open(&devices(4, 64), cfg);
    let data = content(4, 2000);
    assert!(c.get_memory(b"k", &meta().etag, (0, u64::MAX), 1).is_none(), "nothing cached");
    assert_eq!(c.stats().requests, 0);
    c.put(b"k", &data, &meta(), true, 1).unwrap();
    assert!(c.get_memory(b"k", &meta().etag, (0, 0), 2).is_none(), "an empty range is left to the full get");
    assert!(c.get_memory(b"k", &meta().etag, (0, u64::MAX), 3).is_some());
    assert!(c.get_memory(b"k", &meta().etag, (0, u64::MAX), 4).is_some());
    // The third request is due to recompute the hot threshold (a pass over the index): the hot
    // path leaves it to the full get, which does it.
    let before = c.stats();
    assert!(c.get_memory(b"k", &meta().etag, (0, u64::MAX), 5).is_none());
    assert_eq!(c.stats(), before);
    assert!(c.get_shared(b"k", 0, u64::MAX, 5, true).unwrap().is_hit());
    assert!(c.get_memory(b"k", &meta().etag, (0, u64::MAX), 6).is_some());
    assert_eq!(c.stats().memory_hits, 4);
}
