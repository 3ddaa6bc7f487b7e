//! Reads made on the caller's thread (`Store::read_bytes_on_caller`): the same verified bytes as
//! a read through the device lanes, degraded reads included, and no wait behind a lane.

mod common;

use common::*;
use reo_media::Media;
use reo_store::{PutOptions, Scheme, Store, StoreConfig};
use std::sync::mpsc;
use std::sync::Arc;
use std::time::Duration;

const DEV: u64 = 16 << 20;

/// Every scheme and size, whole and in part, healthy and with a device failed: the bytes put.
#[test]
fn reads_on_the_caller_return_the_bytes_put_healthy_and_degraded() {
    let devs = devices(4, DEV);
    let store = open(&devs, &small_config());
    let blobs = put_every_scheme_and_size(&store);
    for (loc, data, _) in &blobs {
        assert!(store.read_bytes_on_caller(loc, 0, loc.len).unwrap() == data[..], "{loc:?}");
        let (a, b) = (loc.len / 3, loc.len - loc.len / 4);
        let got = store.read_bytes_on_caller(loc, a, b).unwrap();
        assert!(got == data[a as usize..b as usize], "{loc:?} [{a}, {b})");
    }
    devs[1].fail_stop();
    let before = store.stats().degraded_reads;
    for (loc, data, scheme) in &blobs {
        if matches!(scheme, Scheme::None(_)) {
            continue; // no redundancy: a read of device 1 fails, as through the lanes
        }
        assert!(store.read_bytes_on_caller(loc, 0, loc.len).unwrap() == data[..], "degraded {loc:?}");
    }
    assert!(store.stats().degraded_reads > before, "some reads were rebuilt from the others");
}

/// With device 0's only lane thread held at a gate, a read of device 0 on the caller completes:
/// it never queued behind the lane.
#[test]
fn a_read_on_the_caller_does_not_wait_behind_a_held_lane() {
    let cfg = StoreConfig { read_depth: 1, ..small_config() };
    let faulty = devices(4, DEV);
    let gates: Vec<Arc<Gated>> = faulty.iter().map(|f| Arc::new(Gated::new(f.clone() as Arc<dyn Media>))).collect();
    let store = Store::open(gates.iter().map(|g| g.clone() as Arc<dyn Media>).collect(), &cfg).unwrap().0;
    let opts = PutOptions::new(Scheme::None(reo_store::Placement::Isolated));
    // Isolated blobs never hedge: each is read from its one device, whatever that device does.
    let on_0: Vec<_> = (0..64u64)
        .map(|i| {
            let data = content(i, 10_000);
            (store.put(b"c", &data, &opts).unwrap(), data)
        })
        .filter(|(loc, _)| {
            let before = gates[0].reads();
            store.read_all(loc).unwrap();
            gates[0].reads() > before
        })
        .take(2)
        .collect();
    assert_eq!(on_0.len(), 2, "two blobs on device 0");
    gates[0].arm();
    let held = store.begin_read_bytes(&on_0[0].0, 0, on_0[0].0.len).unwrap();
    gates[0].wait_held();
    let (tx, rx) = mpsc::channel();
    std::thread::scope(|s| {
        s.spawn(|| {
            let (loc, data) = &on_0[1];
            tx.send(store.read_bytes_on_caller(loc, 0, loc.len).unwrap() == data[..]).unwrap();
        });
        let done = rx.recv_timeout(Duration::from_secs(30));
        gates[0].open();
        assert_eq!(done, Ok(true), "the caller's read completed with its bytes while the lane was held");
    });
    assert!(held.finish().unwrap() == on_0[0].1[..]);
}

/// A device with a read held in service past `slow_read_after`, on its lane or on a caller,
/// makes the store report a slow device (reads on the caller, which cannot hedge, then go
/// elsewhere); once the read is let go, it no longer does.
#[test]
fn a_read_held_in_service_shows_as_a_slow_device() {
    let cfg = StoreConfig { read_depth: 1, slow_read_after: Some(Duration::from_millis(20)), ..small_config() };
    let faulty = devices(4, DEV);
    let gates: Vec<Arc<Gated>> = faulty.iter().map(|f| Arc::new(Gated::new(f.clone() as Arc<dyn Media>))).collect();
    let store = Store::open(gates.iter().map(|g| g.clone() as Arc<dyn Media>).collect(), &cfg).unwrap().0;
    let data = content(1, 10_000);
    let loc = store.put(b"c", &data, &PutOptions::new(Scheme::None(reo_store::Placement::Isolated))).unwrap();
    let d = (0..4).find(|&d| {
        let before = gates[d].reads();
        store.read_all(&loc).unwrap();
        gates[d].reads() > before
    });
    let d = d.expect("the blob is on one device");
    assert!(!store.has_slow_device(), "no read in service");
    gates[d].arm();
    let held = store.begin_read_bytes(&loc, 0, loc.len).unwrap();
    gates[d].wait_held();
    let deadline = std::time::Instant::now() + Duration::from_secs(30);
    while !store.has_slow_device() {
        assert!(std::time::Instant::now() < deadline, "a read held for 30 s never counted as slow");
        std::thread::sleep(Duration::from_millis(5));
    }
    gates[d].open();
    assert!(held.finish().unwrap() == data[..]);
    assert!(!store.has_slow_device(), "the read is out of service");
    gates[d].arm();
    std::thread::scope(|s| {
        let reader = s.spawn(|| store.read_bytes_on_caller(&loc, 0, loc.len).unwrap() == data[..]);
        gates[d].wait_held();
        while !store.has_slow_device() {
            assert!(std::time::Instant::now() < deadline, "a caller's read held for 30 s never counted as slow");
            std::thread::sleep(Duration::from_millis(5));
        }
        gates[d].open();
        assert!(reader.join().unwrap(), "the caller's read has its bytes");
    });
    assert!(!store.has_slow_device(), "the caller's read is out of service");
}
