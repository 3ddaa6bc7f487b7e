//! Reads begun before they are finished (`Store::begin_read_bytes`): many queued on the device
//! lanes at once, finished in any order, around a device that fails in between, or dropped.

mod common;

use common::*;
use reo_media::{FaultyMedia, Media, MemMedia};
use reo_store::{Durability, Location, PutOptions, RebuildOptions, RebuildState, Scheme, Store, StoreConfig};
use std::sync::Arc;

const DEV: u64 = 16 << 20;

/// Four faulty devices, each behind a gate, and a store on the gates.
fn gated_store(cfg: &StoreConfig) -> (Vec<Arc<FaultyMedia>>, Vec<Arc<Gated>>, Store) {
    let faulty = devices(4, DEV);
    let gates: Vec<Arc<Gated>> = faulty.iter().map(|f| Arc::new(Gated::new(f.clone() as Arc<dyn Media>))).collect();
    let store = Store::open(gates.iter().map(|g| g.clone() as Arc<dyn Media>).collect(), cfg).unwrap().0;
    (faulty, gates, store)
}

/// Puts 40,000-byte blobs until `count` of them have data on device 0 (a read of the blob reads
/// device 0, counted by its gate); returns those blobs and their bytes.
fn blobs_with_data_on_device_0(
    store: &Store,
    gate0: &Gated,
    opts: &PutOptions,
    count: usize,
) -> Vec<(Location, Vec<u8>)> {
    let found: Vec<_> = (0..200u64)
        .map(|i| {
            let data = content(i, 40_000);
            (store.put(b"r", &data, opts).unwrap(), data)
        })
        .filter(|(loc, _)| {
            let before = gate0.reads();
            store.read_all(loc).unwrap();
            gate0.reads() > before
        })
        .take(count)
        .collect();
    assert_eq!(found.len(), count, "blobs with data on device 0");
    found
}

/// Reads of blobs of every scheme and size, all begun before the first is finished, finish in
/// reverse order with their own bytes (whole blobs and inner ranges).
#[test]
fn reads_begun_together_finish_in_any_order_with_their_bytes() {
    let devs = devices(4, DEV);
    let store = open(&devs, &small_config());
    let blobs: Vec<_> = put_every_scheme_and_size(&store).into_iter().map(|(loc, data, _)| (loc, data)).collect();
    let ranges: Vec<(usize, u64, u64)> = blobs
        .iter()
        .enumerate()
        .flat_map(|(b, (loc, _))| [(b, 0, loc.len), (b, loc.len / 3, loc.len - loc.len / 4)])
        .collect();
    let pending: Vec<_> = ranges.iter().map(|&(b, x, y)| store.begin_read_bytes(&blobs[b].0, x, y).unwrap()).collect();
    for (p, &(b, x, y)) in pending.into_iter().zip(&ranges).rev() {
        let got = p.finish().unwrap();
        assert!(got == blobs[b].1[x as usize..y as usize], "blob {b} bytes {x}..{y}");
    }
    assert_eq!(store.stats().checksum_errors + store.stats().read_errors, 0);
}

/// A device that fails after a read was begun, with the read's I/O to it still queued: the
/// finish reads around it (rebuilds the chunks from the other devices) and returns the right
/// bytes; blobs that had nothing on it read as before.
#[test]
fn a_device_failing_between_begin_and_finish_is_read_around() {
    let (faulty, gates, store) = gated_store(&small_config());
    let opts = PutOptions::new(Scheme::Rs { k: 2, p: 2 }).durability(Durability::Sync);
    // Blobs with data on device 0 (its reads counted during a read of the blob) and without.
    let (mut on0, mut off0) = (Vec::new(), Vec::new());
    for i in 0..200u64 {
        let data = content(i, 40_000);
        let loc = store.put(b"t", &data, &opts).unwrap();
        let before = gates[0].reads();
        store.read_all(&loc).unwrap();
        let side = if gates[0].reads() > before { &mut on0 } else { &mut off0 };
        if side.len() < 3 {
            side.push((loc, data));
        }
        if on0.len() == 3 && off0.len() == 3 {
            break;
        }
    }
    assert!(on0.len() == 3 && off0.len() == 3, "blobs on and off device 0");
    let stats = store.stats();
    // The first read to reach device 0 holds there, the others queue behind it on its lane.
    gates[0].arm();
    let blobs: Vec<_> = on0.iter().chain(&off0).collect();
    let pending: Vec<_> = blobs.iter().map(|(loc, _)| store.begin_read_bytes(loc, 0, loc.len).unwrap()).collect();
    gates[0].wait_held();
    faulty[0].fail_stop();
    gates[0].open();
    for (p, (loc, data)) in pending.into_iter().zip(&blobs) {
        assert!(p.finish().unwrap() == data[..], "blob {}", loc.seq);
    }
    let after = store.stats();
    assert_eq!(after.degraded_reads - stats.degraded_reads, 3, "each blob with data on device 0 was rebuilt");
    assert!(after.read_errors > stats.read_errors, "the failed device's reads were errors");
    assert_eq!(after.checksum_errors, stats.checksum_errors);
}

/// Reads begun and dropped unfinished leave nothing behind: their I/O completes on its own, and
/// the blobs read again and the store closes.
#[test]
fn dropped_unfinished_reads_leave_the_store_usable() {
    let devs: Vec<Arc<dyn Media>> = (0..4).map(|_| Arc::new(MemMedia::new(DEV)) as Arc<dyn Media>).collect();
    let store = Store::open(devs.clone(), &small_config()).unwrap().0;
    let blobs: Vec<_> = (0..16u64)
        .map(|i| {
            let data = content(i, 150_000);
            (store.put(b"d", &data, &PutOptions::new(Scheme::Rs { k: 3, p: 1 })).unwrap(), data)
        })
        .collect();
    for round in 0..3 {
        let pending: Vec<_> = blobs.iter().map(|(loc, _)| store.begin_read_bytes(loc, 0, loc.len).unwrap()).collect();
        drop(pending);
        for (loc, data) in &blobs {
            assert!(store.read_bytes(loc, 0, loc.len).unwrap() == data[..], "round {round}");
        }
    }
    store.close().unwrap();
    let (store, report) = Store::open(devs, &small_config()).unwrap();
    assert!(report.clean && report.live_blobs == blobs.len(), "{report:?}");
    assert!(store.read_all(&blobs[5].0).unwrap() == blobs[5].1);
}

/// A read dropped unfinished still charges its device's errors: the failure of a device that
/// fails while the read is queued is counted (towards ejecting the device), not lost with it.
#[test]
fn a_dropped_read_still_charges_its_device_errors() {
    let (faulty, gates, store) = gated_store(&small_config());
    let opts = PutOptions::new(Scheme::Rs { k: 2, p: 2 });
    let loc = blobs_with_data_on_device_0(&store, &gates[0], &opts, 1).remove(0).0;
    let before = store.stats().read_errors;
    gates[0].arm();
    let pending: Vec<_> = (0..4).map(|_| store.begin_read_bytes(&loc, 0, loc.len).unwrap()).collect();
    gates[0].wait_held();
    faulty[0].fail_stop();
    gates[0].open();
    drop(pending);
    assert!(store.stats().read_errors > before, "the failed reads were counted when dropped");
}

/// A read that straddled the replacement of its device — queued on the old media, failing there
/// after the new device was installed and rebuilt — is not charged to the new device: with an
/// error budget of one, two such failures charged to it would eject the healthy replacement
/// (they did before the slot generations of `slot.rs`).
#[test]
fn a_read_straddling_a_replacement_is_not_charged_to_the_new_device() {
    let cfg = StoreConfig { io_error_limit: 1, read_depth: 2, ..small_config() };
    let (faulty, gates, store) = gated_store(&cfg);
    let opts = PutOptions::new(Scheme::Rs { k: 2, p: 2 }).durability(Durability::Sync);
    let blobs = blobs_with_data_on_device_0(&store, &gates[0], &opts, 2);
    // Both reads of device 0 (one per lane thread) hang on the old device, as on a dying disk.
    gates[0].arm_for(2);
    let pending: Vec<_> = blobs.iter().map(|(loc, _)| store.begin_read_bytes(loc, 0, loc.len).unwrap()).collect();
    gates[0].wait_held_for(2);
    faulty[0].fail_stop();
    store.fail_device(0).unwrap();
    let fresh = Arc::new(MemMedia::new(DEV));
    let rebuilt = store.replace_device(0, fresh, RebuildOptions::default()).unwrap().wait();
    assert_eq!(rebuilt.state, RebuildState::Done, "{rebuilt:?}");
    let errors = store.stats().read_errors;
    gates[0].open();
    for (p, (loc, data)) in pending.into_iter().zip(&blobs) {
        assert!(p.finish().unwrap() == data[..], "blob {} read around its failed reads", loc.seq);
    }
    assert_eq!(store.stats().read_errors, errors + 2, "the old device's failures are still counted");
    assert!(store.failed_devices().is_empty(), "the new device was ejected for the old one's errors");
    assert!(store.read_all(&blobs[0].0).unwrap() == blobs[0].1);
}
