//! The cleaner under churn, and many threads at once: every live blob stays intact.

mod common;
use common::*;
use parking_lot::Mutex;
use reo_store::{
    Durability, Error, GcDecision, GcHandler, Location, Placement, PutOptions, Scheme, Store, VictimPolicy,
};
use std::collections::HashMap;
use std::sync::Arc;

/// Live blobs by id: (location, content seed, length).
type Blobs = Arc<Mutex<HashMap<u64, (Location, u64, usize)>>>;

/// Follows relocations in a shared map keyed by blob id (the header).
struct Follow(Blobs);

impl GcHandler for Follow {
    fn decide(&mut self, _: &Location, _: &[u8]) -> GcDecision {
        GcDecision::Relocate
    }
    fn relocated(&mut self, old: &Location, new: &Location) {
        let mut m = self.0.lock();
        for v in m.values_mut() {
            if v.0 == *old {
                v.0 = *new;
            }
        }
    }
}

fn id(h: &[u8]) -> u64 {
    u64::from_le_bytes(h.try_into().unwrap())
}

#[test]
fn gc_under_churn_keeps_every_live_blob() {
    let cfg = small_config();
    let devs = devices(4, 8 << 20);
    let store = open(&devs, &cfg);
    let map = Arc::new(Mutex::new(HashMap::new()));
    let schemes = [Scheme::Rs { k: 2, p: 2 }, Scheme::Replicate(2), Scheme::None(Placement::Isolated)];
    let mut x = 1u64;
    let mut cleaned = 0;
    for i in 0..3000u64 {
        x = x.wrapping_mul(6364136223846793005).wrapping_add(1442695040888963407);
        let len = (x >> 40) as usize % 40_000;
        let opts = PutOptions::new(schemes[i as usize % 3]).placement(i);
        let loc = loop {
            match store.put(&i.to_le_bytes(), &content(i, len), &opts) {
                Ok(l) => break l,
                Err(Error::OutOfSpace { .. }) => {
                    let r = store.gc(VictimPolicy::CostBenefit, &mut Follow(map.clone())).unwrap();
                    assert!(r.is_some(), "full with nothing to clean");
                    cleaned += 1;
                }
                Err(e) => panic!("{e}"),
            }
        };
        let mut m = map.lock();
        m.insert(i, (loc, i, len));
        // Keep about 400 blobs live: free a random older one.
        if m.len() > 400 {
            let victim = *m.keys().nth((x >> 20) as usize % m.len()).unwrap();
            let (l, _, _) = m.remove(&victim).unwrap();
            drop(m);
            store.free(&l, Durability::None).unwrap();
        }
    }
    assert!(cleaned > 10, "the workload must make the cleaner work ({cleaned} passes)");
    let stats = store.stats();
    assert!(stats.gc_relocated_bytes > 0 && stats.gc_device_bytes > 0);
    let m = map.lock().clone();
    for (k, (loc, seed, len)) in &m {
        assert_eq!(store.read_all(loc).unwrap(), content(*seed, *len), "blob {k}");
    }
    // Space accounting agrees with the live set, per scheme and per band.
    let live: u64 = m.values().map(|v| v.2 as u64).sum();
    let space = store.space();
    assert_eq!(space.per_scheme.iter().map(|(_, s)| s.live_bytes).sum::<u64>(), live);
    let bands = store.bands();
    assert_eq!(bands.iter().map(|b| b.live_bytes).sum::<u64>(), live);
    assert_eq!(bands.iter().map(|b| b.live_blobs).sum::<usize>(), m.len());
    assert_eq!(bands.iter().filter(|b| b.state == "free").count(), space.free_bands);
    for b in &bands {
        assert!(b.live_device_bytes <= b.used_device_bytes, "band {}: live beyond used", b.band);
    }
    store.close().unwrap();
    let store = open(&devs, &cfg);
    let found: HashMap<u64, Location> = store.blobs().into_iter().map(|(l, h)| (id(&h), l)).collect();
    assert_eq!(found.len(), m.len());
    for (k, (_, seed, len)) in &m {
        assert_eq!(store.read_all(&found[k]).unwrap(), content(*seed, *len));
    }
}

#[test]
fn concurrent_writers_readers_and_cleaner() {
    let cfg = small_config();
    let devs = devices(4, 16 << 20);
    let store = Arc::new(open(&devs, &cfg));
    let map: Blobs = Arc::new(Mutex::new(HashMap::new()));
    let stop = Arc::new(std::sync::atomic::AtomicBool::new(false));
    let mut handles = Vec::new();
    for t in 0..4u64 {
        let (store, map) = (store.clone(), map.clone());
        handles.push(std::thread::spawn(move || {
            let schemes = [Scheme::Rs { k: 2, p: 2 }, Scheme::Replicate(4), Scheme::None(Placement::Isolated)];
            for i in 0..300u64 {
                let bid = t * 1_000_000 + i;
                let len = (bid as usize * 7919) % 50_000;
                let d = if i % 4 == 0 { Durability::Sync } else { Durability::None };
                let opts = PutOptions::new(schemes[(i % 3) as usize]).durability(d).placement(bid);
                match store.put(&bid.to_le_bytes(), &content(bid, len), &opts) {
                    Ok(loc) => {
                        map.lock().insert(bid, (loc, bid, len));
                    }
                    Err(Error::OutOfSpace { .. }) => {}
                    Err(e) => panic!("{e}"),
                }
                if i % 2 == 1 {
                    let old = t * 1_000_000 + i - 1;
                    let entry = map.lock().remove(&old);
                    if let Some((l, _, _)) = entry {
                        // A concurrent relocation may have moved it: retry with the new location.
                        let mut l = l;
                        loop {
                            match store.free(&l, Durability::None) {
                                Ok(()) => break,
                                Err(Error::NotFound { .. }) => {
                                    std::thread::yield_now();
                                    match store.blobs().into_iter().find(|(_, h)| id(h) == old) {
                                        Some((nl, _)) => l = nl,
                                        None => break,
                                    }
                                }
                                Err(e) => panic!("{e}"),
                            }
                        }
                    }
                }
            }
        }));
    }
    for _ in 0..2 {
        let (store, map, stop) = (store.clone(), map.clone(), stop.clone());
        handles.push(std::thread::spawn(move || {
            let mut n = 0u64;
            while !stop.load(std::sync::atomic::Ordering::Relaxed) {
                n += 1;
                let pick = {
                    let m = map.lock();
                    if m.is_empty() {
                        continue;
                    }
                    m.values().nth(n as usize % m.len()).copied()
                };
                let Some((loc, seed, len)) = pick else { continue };
                match store.read_all(&loc) {
                    Ok(b) => assert_eq!(b, content(seed, len), "concurrent read returned wrong bytes"),
                    Err(Error::NotFound { .. }) => {} // freed or relocated meanwhile
                    Err(e) => panic!("{e}"),
                }
            }
        }));
    }
    {
        let (store, map, stop) = (store.clone(), map.clone(), stop.clone());
        handles.push(std::thread::spawn(move || {
            while !stop.load(std::sync::atomic::Ordering::Relaxed) {
                match store.gc(VictimPolicy::Greedy, &mut Follow(map.clone())) {
                    Ok(Some(_)) => {}
                    Ok(None) => std::thread::yield_now(),
                    // The writers keep the store saturated; a pass that finds no room to move
                    // into stops cleanly (what it moved is committed, the rest stays where it
                    // was) — the checks below prove nothing was lost.
                    Err(Error::OutOfSpace { .. }) => std::thread::yield_now(),
                    Err(e) => panic!("cleaner: {e}"),
                }
            }
        }));
    }
    let gc_and_readers = handles.split_off(4);
    for h in handles {
        h.join().unwrap();
    }
    stop.store(true, std::sync::atomic::Ordering::Relaxed);
    for h in gc_and_readers {
        h.join().unwrap();
    }
    let m = map.lock().clone();
    for (k, (loc, seed, len)) in &m {
        assert_eq!(store.read_all(loc).unwrap(), content(*seed, *len), "blob {k}");
    }
    assert_eq!(store.blob_count(), m.len(), "no leaked or lost blobs");
    let store = Arc::into_inner(store).unwrap();
    store.close().unwrap();
    let store: Store = open(&devs, &cfg);
    assert_eq!(store.blob_count(), m.len());
}
