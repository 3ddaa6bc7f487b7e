//! Injected faults: power cuts (dropped, torn, reordered unsynced writes), I/O errors at every Nth
//! operation, and silent bit flips. No acknowledged blob is lost; no wrong byte is returned.

mod common;
use common::*;
use reo_media::{Media, OpKind, PowerCut};
use reo_store::{
    Durability, Error, Location, Placement, PutOptions, RebuildOptions, RebuildState, Scheme, StoreConfig,
};
use std::collections::HashMap;
use std::sync::Arc;

fn cut_modes() -> Vec<PowerCut> {
    vec![
        PowerCut::DropAll,
        PowerCut::Reorder,
        PowerCut::Torn { granularity: 512 },
        PowerCut::Torn { granularity: 4096 },
    ]
}

/// Puts a mix of synced and unsynced blobs, crashes with a power cut, and checks that every
/// synced blob is intact and every other surviving blob is exact.
#[test]
fn power_cuts_never_lose_acknowledged_blobs() {
    let cfg = small_config();
    for (mi, mode) in cut_modes().into_iter().enumerate() {
        for seed in 0..6u64 {
            let devs = devices(4, 16 << 20);
            let store = open(&devs, &cfg);
            let mut acked: HashMap<Vec<u8>, (Location, Vec<u8>)> = HashMap::new();
            let mut maybe: HashMap<Vec<u8>, Vec<u8>> = HashMap::new();
            let schemes = [Scheme::Replicate(4), Scheme::Rs { k: 2, p: 2 }, Scheme::None(Placement::Isolated)];
            for i in 0..30u64 {
                let id = seed * 1000 + i;
                let key = format!("b{id}").into_bytes();
                let data = content(id, (id as usize * 7919) % 70_000);
                let sync = i % 3 != 0;
                let d = if sync { Durability::Sync } else { Durability::None };
                let opts = PutOptions::new(schemes[i as usize % 3]).durability(d).placement(i);
                let loc = store.put(&key, &data, &opts).unwrap();
                if sync {
                    acked.insert(key, (loc, data));
                } else {
                    maybe.insert(key, data);
                }
                if i % 7 == 6 {
                    // A synced free of an earlier acked blob.
                    let k = format!("b{}", id - 3).into_bytes();
                    if let Some((l, _)) = acked.remove(&k) {
                        store.free(&l, Durability::Sync).unwrap();
                    }
                }
            }
            for d in &devs {
                d.fail_stop(); // the power goes: nothing more reaches the devices
            }
            store.kill();
            for (i, d) in devs.iter().enumerate() {
                d.revive();
                d.power_cut(mode, seed * 31 + i as u64 + mi as u64).unwrap();
            }
            let (store, report) = reo_store::Store::open(as_media(&devs), &cfg).unwrap();
            let found: HashMap<Vec<u8>, Location> = store.blobs().into_iter().map(|(l, h)| (h, l)).collect();
            for (k, (_, data)) in &acked {
                let loc = found.get(k).unwrap_or_else(|| panic!("{mode:?} seed {seed}: acked {k:?} lost ({report:?})"));
                assert_eq!(&store.read_all(loc).unwrap(), data, "{mode:?} seed {seed}");
            }
            for (k, loc) in &found {
                if let Some(data) = maybe.get(k) {
                    assert_eq!(&store.read_all(loc).unwrap(), data, "{mode:?}: surviving unsynced blob is exact");
                } else {
                    assert!(acked.contains_key(k), "{mode:?}: a freed or unknown blob came back: {k:?}");
                }
            }
        }
    }
}

/// A lying sync (the device acknowledges a flush it did not do) can lose data, but never makes
/// the store return wrong bytes.
#[test]
fn lying_sync_never_yields_wrong_bytes() {
    let cfg = small_config();
    let devs = devices(4, 16 << 20);
    let store = open(&devs, &cfg);
    devs[0].set_lying_sync(true);
    let mut put = HashMap::new();
    for i in 0..20u64 {
        let data = content(i, 30_000);
        let loc = store
            .put(
                format!("{i}").as_bytes(),
                &data,
                &PutOptions::new(Scheme::Rs { k: 2, p: 2 }).durability(Durability::Sync),
            )
            .unwrap();
        put.insert(format!("{i}").into_bytes(), (loc, data));
    }
    store.kill();
    devs[0].power_cut(PowerCut::DropAll, 1).unwrap();
    let store = open(&devs, &cfg);
    for (h, (_, data)) in &put {
        let (loc, _) = store.blobs().into_iter().find(|(_, x)| x == h).expect("replicated metadata survives one liar");
        assert_eq!(&store.read_all(&loc).unwrap(), data, "one lying device is within rs(2,2) tolerance");
    }
}

/// An I/O error at the Nth operation, for every N over a short workload, once and persistent:
/// a put either fails or is readable; nothing read is ever wrong.
#[test]
fn io_error_at_every_nth_operation() {
    let cfg = small_config();
    for kind in [OpKind::Write, OpKind::Sync, OpKind::Read] {
        for persistent in [false, true] {
            for nth in 1..40u64 {
                let devs = devices(3, 12 << 20);
                let store = open(&devs, &cfg);
                devs[(nth % 3) as usize].fail_at(nth, kind, persistent);
                let mut ok = Vec::new();
                for i in 0..8u64 {
                    let data = content(nth * 100 + i, 20_000 + i as usize * 3000);
                    let scheme = if i % 2 == 0 { Scheme::Replicate(3) } else { Scheme::Rs { k: 2, p: 1 } };
                    let opts = PutOptions::new(scheme).durability(Durability::Sync);
                    if let Ok(loc) = store.put(b"h", &data, &opts) {
                        ok.push((loc, data));
                    }
                }
                for (loc, data) in &ok {
                    match store.read_all(loc) {
                        Ok(b) => assert_eq!(&b, data, "{kind:?} nth={nth}"),
                        Err(e) => panic!("{kind:?} persistent={persistent} nth={nth}: acked blob unreadable: {e}"),
                    }
                }
                drop(store);
                for d in &devs {
                    d.clear_faults();
                }
                let store = open(&devs, &cfg);
                let live = store.blobs();
                for (loc, data) in &ok {
                    let (l, _) = live.iter().find(|(l, _)| l.seq == loc.seq).expect("acked blob survives reopen");
                    assert_eq!(&store.read_all(l).unwrap(), data);
                }
            }
        }
    }
}

/// Bit flips in stored chunks: repaired from redundancy when possible, reported otherwise. The
/// small blobs are one short last row, whose chunks have no trailer (their checksums are in the
/// blob's record): a flip there is caught as well.
#[test]
fn bit_flips_are_detected_and_repaired() {
    let cfg = small_config();
    let devs = devices(4, 16 << 20);
    let store = open(&devs, &cfg);
    let layout = store.layout();
    let mut blobs = Vec::new();
    for (i, scheme) in schemes(4).into_iter().enumerate() {
        for (j, len) in [50_000, 4096, 3_000].into_iter().enumerate() {
            let data = content((i * 3 + j) as u64, len);
            let loc = store.put(b"h", &data, &PutOptions::new(scheme).placement(i as u64)).unwrap();
            blobs.push((loc, data));
        }
    }
    // Flip one bit in the first sector of one of each blob's columns (small blobs share rows:
    // each blob's flip is on a device holding its own chunks).
    let mut flipped = 0;
    for (loc, _) in &blobs {
        let off = layout.data_off + u64::from(loc.band) * layout.zone + u64::from(loc.start) * 4096 + 123;
        let holders = store.devices_of(loc);
        let d = holders[loc.seq as usize % holders.len()];
        devs[d].flip_bit(off, 3).unwrap();
        flipped += 1;
    }
    assert_eq!(flipped, blobs.len());
    for (loc, data) in &blobs {
        match store.read_all(loc) {
            Ok(b) => assert_eq!(&b, data, "{}", loc.scheme),
            Err(Error::Corrupt { .. }) => assert_eq!(loc.scheme.tolerance(), 0, "{} should have repaired", loc.scheme),
            Err(e) => panic!("{e}"),
        }
        // The zero-copy read verifies and repairs alike.
        match store.read_bytes(loc, 0, loc.len) {
            Ok(b) => assert!(b == data[..], "{}: read_bytes", loc.scheme),
            Err(Error::Corrupt { .. }) => assert_eq!(loc.scheme.tolerance(), 0, "{}: read_bytes", loc.scheme),
            Err(e) => panic!("{e}"),
        }
    }
    assert!(store.stats().checksum_errors >= 1);
    // Random flips anywhere in the data area never produce wrong bytes.
    let mut x = 7u64;
    for _ in 0..400 {
        x = x.wrapping_mul(6364136223846793005).wrapping_add(1442695040888963407);
        let d = (x >> 60) as usize % 4;
        let span = 2 * layout.zone;
        let off = layout.data_off + (x >> 8) % span;
        devs[d].flip_bit(off, (x % 8) as u8).unwrap();
    }
    for (loc, data) in &blobs {
        if let Ok(b) = store.read_all(loc) {
            assert_eq!(&b, data, "{}: wrong bytes after random flips", loc.scheme);
        }
        if let Ok(b) = store.read_bytes(loc, 0, loc.len) {
            assert!(b == data[..], "{}: read_bytes: wrong bytes after random flips", loc.scheme);
        }
    }
    let _ = devs[0].len();
}

/// A `Sync` put whose fdatasync fails on more devices than its scheme tolerates is not
/// acknowledged: the batch reached one device (so the journal carried on), but the blob's bytes
/// are not on stable storage where its scheme needs them. Its record is undone, and the store
/// goes on with what is left (a `none` put on the surviving device). Before, the put returned
/// `Ok` for a blob that already read as lost.
#[test]
fn a_sync_put_whose_devices_fail_the_sync_is_not_acknowledged() {
    let devs = devices(3, 16 << 20);
    let store = open(&devs, &small_config());
    let opts = PutOptions::new(Scheme::Rs { k: 2, p: 1 }).durability(Durability::Sync);
    let before = store.put(b"a", &content(1, 50_000), &opts).unwrap();
    let live = store.blob_count();
    for d in &devs[..2] {
        d.fail_at(1, OpKind::Sync, false);
    }
    let err = store.put(b"b", &content(2, 50_000), &opts).unwrap_err();
    assert!(matches!(err, Error::InsufficientDevices { .. }), "{err}");
    assert_eq!(store.failed_devices(), vec![0, 1], "the devices whose sync failed");
    assert_eq!(store.blob_count(), live, "no blob left behind for the refused put");
    // Nothing acknowledged before is touched: the earlier blob is lost with two of three
    // devices gone (rs(2,1)), and reported so rather than read wrong.
    assert!(matches!(store.read_all(&before), Err(Error::Corrupt { .. })));
    let kept = PutOptions::new(Scheme::None(Placement::Isolated)).durability(Durability::Sync).placement(2);
    let loc = store.put(b"c", &content(3, 10_000), &kept).unwrap();
    assert_eq!(store.read_all(&loc).unwrap(), content(3, 10_000));
}

/// Records where the cleaner moved each blob.
#[derive(Default)]
struct Moves(Vec<(Location, Location)>);

impl reo_store::GcHandler for Moves {
    fn decide(&mut self, _: &Location, _: &[u8]) -> reo_store::GcDecision {
        reo_store::GcDecision::Relocate
    }
    fn relocated(&mut self, old: &Location, new: &Location) {
        self.0.push((*old, *new));
    }
}

/// The cleaner's copies are on stable storage before the journal records that move them: the
/// first journal write after the copies (held at a gate on device 0, which holds a chunk of the
/// copy) finds no unsynced write on the device. Before, `Put(copy) + Free(original)` could be
/// written while the copy's data was not synced, and a power cut during that batch's fdatasync
/// could keep the batch and lose the copy: the replay dropped the copy (it fails verification)
/// and freed the original — an acknowledged `Sync` put gone.
#[test]
fn the_cleaners_copies_are_durable_before_their_moves_are_journaled() {
    let faulty = devices(4, 16 << 20);
    let gates: Vec<Arc<Gated>> = faulty.iter().map(|f| Arc::new(Gated::new(f.clone() as Arc<dyn Media>))).collect();
    let media: Vec<Arc<dyn Media>> = gates.iter().map(|g| g.clone() as Arc<dyn Media>).collect();
    let store = Arc::new(reo_store::Store::open(media, &small_config()).unwrap().0);
    let opts = PutOptions::new(Scheme::Rs { k: 2, p: 2 }).durability(Durability::Sync);
    let keep = store.put(b"keep", &content(1, 30_000), &opts).unwrap();
    for i in 2..6 {
        let gone = store.put(b"gone", &content(i, 30_000), &opts).unwrap();
        store.free(&gone, Durability::Sync).unwrap();
    }
    store.seal_open_bands();
    store.flush().unwrap();
    let layout = store.layout();
    gates[0].arm_write_in(layout.journal_off..layout.journal_off + layout.journal_len);
    let cleaner = {
        let store = store.clone();
        std::thread::spawn(move || {
            let mut moves = Moves::default();
            store.gc(reo_store::VictimPolicy::Greedy, &mut moves).map(|r| (r, moves.0))
        })
    };
    gates[0].wait_held();
    assert_eq!(faulty[0].unsynced_writes(), 0, "the copy's chunk on device 0 was synced before its move record");
    gates[0].open();
    let (report, moves) = cleaner.join().unwrap().unwrap();
    assert_eq!(report.map(|r| r.relocated), Some(1), "the live blob was moved");
    assert_eq!(moves.len(), 1);
    assert_eq!(moves[0].0, keep);
    assert_eq!(store.read_all(&moves[0].1).unwrap(), content(1, 30_000));
}

/// A crash, then a reopen without the device holding a blob of the last journal batch: the blob
/// cannot be verified, and it is kept (its put may have been acknowledged), not dropped as a
/// torn write; once the device is back it reads exact. Before, recovery dropped it, and the
/// checkpoint after the replay made the loss permanent.
#[test]
fn a_blob_of_the_last_batch_on_a_missing_device_is_kept() {
    let devs = devices(3, 16 << 20);
    let cfg = small_config();
    let store = open(&devs, &cfg);
    let opts = PutOptions::new(Scheme::None(Placement::Isolated)).durability(Durability::Sync).placement(1);
    let data = content(7, 20_000);
    let loc = store.put(b"x", &data, &opts).unwrap();
    store.kill();
    devs[loc.device as usize].fail_stop();
    let (store, report) = reo_store::Store::open(as_media(&devs), &cfg).unwrap();
    assert_eq!((report.dropped_unverified, report.failed_devices.len()), (0, 1), "{report:?}");
    assert!(store.contains(&loc), "kept while its device is missing");
    assert!(matches!(store.read_all(&loc), Err(Error::Corrupt { .. })), "unreadable, never wrong");
    store.close().unwrap();
    devs[loc.device as usize].revive();
    let store = open(&devs, &cfg);
    assert_eq!(store.read_all(&loc).unwrap(), data);
}

/// A batch that does not fit in the journal and whose checkpoint fails (the state outgrew its
/// slot) is in no journal; no later batch may be appended behind it, though a small one would
/// fit. Before, a small `Sync` put after it was journaled and acknowledged: after a crash it
/// was back while the older, acknowledged `None` put was lost.
#[test]
fn no_batch_is_journaled_behind_one_that_a_failed_checkpoint_left_out() {
    // 64 KiB journal: three 20 KiB batches of one record with a 16 KiB header, then 4 KiB free.
    let cfg = StoreConfig { journal_size: Some(64 << 10), checkpoint_size: Some(64 << 10), ..small_config() };
    let devs = devices(4, 16 << 20);
    let store = open(&devs, &cfg);
    let rs = PutOptions::new(Scheme::Rs { k: 2, p: 2 });
    let mut header = vec![7u8; reo_store::MAX_HEADER_LEN];
    for i in 0..3u8 {
        header[0] = i;
        store.put(&header, &content(u64::from(i), 1000), &rs.durability(Durability::Sync)).unwrap();
    }
    // The fourth does not fit; its checkpoint (four such records) exceeds the slot.
    header[0] = 3;
    let four = store.put(&header, &content(3, 1000), &rs.durability(Durability::None)).unwrap();
    let e = store.flush().unwrap_err().to_string();
    assert!(e.contains("exceeds its slot"), "{e}");
    // A small record would fit in the 4 KiB left.
    let five = store.put(b"five", &content(5, 1000), &rs.durability(Durability::Sync));
    assert!(five.is_err(), "a batch was journaled behind the one left out");
    store.kill();
    let store = open(&devs, &cfg);
    let headers: Vec<Vec<u8>> = store.blobs().into_iter().map(|(_, h)| h.to_vec()).collect();
    assert!(!headers.iter().any(|h| h == b"five"));
    assert_eq!(headers.len(), 3, "the three journaled blobs, not {four:?}");
}

/// A device failed while blobs were written without it is stale: a restart with it attached,
/// after a clean close or a power cut, opens it failed (no read goes to it, none of its old
/// chunks is charged), until it is replaced — the same device given back and rebuilt — after
/// which it holds its share again. Before the mark, it came back as a member that missed those
/// blobs. A device the store failed itself (a write error) is stale at once.
#[test]
fn a_device_that_missed_writes_stays_failed_until_replaced() {
    let cfg = small_config();
    let rs = PutOptions::new(Scheme::Rs { k: 2, p: 2 }).durability(Durability::Sync);
    for crash in [false, true] {
        let devs = devices(4, 16 << 20);
        let store = open(&devs, &cfg);
        let mut blobs: Vec<(Location, Vec<u8>)> = Vec::new();
        let mut put = |store: &reo_store::Store, i: u64| {
            let data = content(i, 50_000);
            blobs.push((store.put(b"b", &data, &rs).unwrap(), data));
        };
        (0..4).for_each(|i| put(&store, i));
        store.fail_device(1).unwrap();
        (4..8).for_each(|i| put(&store, i)); // written without device 1
        devs[3].fail_at(1, OpKind::Write, true);
        put(&store, 8); // device 3 fails its write: failed by the store, stale at once
        devs[3].clear_faults();
        assert_eq!(store.failed_devices(), vec![1, 3]);
        if crash {
            store.kill();
            for d in &devs {
                d.power_cut(PowerCut::DropAll, 3).unwrap();
            }
        } else {
            store.close().unwrap();
        }
        let (store, report) = reo_store::Store::open(as_media(&devs), &cfg).unwrap();
        assert_eq!(report.stale_devices, vec![1, 3], "crash {crash}");
        assert_eq!(report.failed_devices, vec![1, 3], "crash {crash}");
        for (loc, data) in &blobs {
            assert_eq!(&store.read_all(loc).unwrap(), data, "crash {crash}");
        }
        assert_eq!(store.stats().checksum_errors, 0, "crash {crash}: a stale device was read");
        for d in [1, 3] {
            let h = store.replace_device(d, devs[d].clone(), RebuildOptions::default()).unwrap();
            assert_eq!(h.wait().state, RebuildState::Done);
        }
        store.close().unwrap();
        let (store, report) = reo_store::Store::open(as_media(&devs), &cfg).unwrap();
        assert!(report.failed_devices.is_empty() && report.stale_devices.is_empty(), "{report:?}");
        // Devices 1 and 3 alone hold every blob again.
        store.fail_device(0).unwrap();
        store.fail_device(2).unwrap();
        for (loc, data) in &blobs {
            assert_eq!(&store.read_all(loc).unwrap(), data, "crash {crash}: after the replacements");
        }
    }
}

/// A device that fails a journal write is failed by the journal's writer itself, which cannot
/// wait for the batch that records the stale mark: that batch must go out at once, not after
/// the group-commit delay (an hour here). Before, the mark waited in the queue, and a crash
/// within the delay let the device — which missed that batch — back in at the next open.
#[test]
fn a_device_failing_a_journal_write_is_stale_without_waiting_for_the_next_batch() {
    let cfg = StoreConfig { journal_delay: std::time::Duration::from_secs(3600), ..small_config() };
    let devs = devices(4, 16 << 20);
    let store = open(&devs, &cfg);
    let rs = PutOptions::new(Scheme::Rs { k: 2, p: 2 }).durability(Durability::Sync);
    let blobs: Vec<(Location, Vec<u8>)> = (0..4)
        .map(|i| {
            let data = content(i, 30_000);
            (store.put(b"j", &data, &rs).unwrap(), data)
        })
        .collect();
    let batches = store.stats().journal_batches;
    devs[3].fail_at(1, OpKind::Write, true);
    // A free writes nothing but its journal record: device 3's failing write is the journal's.
    store.free(&blobs[0].0, Durability::Sync).unwrap();
    assert_eq!(store.failed_devices(), vec![3]);
    // The free's batch, then the one holding the mark: waited for, with a bound far below the
    // delay, since the store offers no event for a batch nobody waits for.
    let deadline = std::time::Instant::now() + std::time::Duration::from_secs(30);
    while store.stats().journal_batches < batches + 2 && std::time::Instant::now() < deadline {
        std::thread::sleep(std::time::Duration::from_millis(1));
    }
    assert_eq!(store.stats().journal_batches, batches + 2, "the stale mark waited for the group-commit delay");
    devs[3].clear_faults();
    store.kill();
    for d in &devs {
        d.power_cut(PowerCut::DropAll, 7).unwrap();
    }
    let (store, report) = reo_store::Store::open(as_media(&devs), &cfg).unwrap();
    assert_eq!(report.stale_devices, vec![3]);
    assert!(store.read_all(&blobs[0].0).is_err(), "the freed blob came back");
    for (loc, data) in &blobs[1..] {
        assert_eq!(&store.read_all(loc).unwrap(), data);
    }
}

/// Opens a gate when dropped (a panicking test must not leave a thread parked at it).
struct OpenOnDrop(Arc<Gated>);

impl Drop for OpenOnDrop {
    fn drop(&mut self) {
        self.0.open();
    }
}

/// An open after a crash serves before the checkpoint that starts its new journal generation is
/// written: the journal writer takes it in the background (held at a gate here, on device 0).
/// Reads are exact meanwhile; a crash before the checkpoint lands finds the same blobs again; and
/// a `Sync` put made meanwhile is acknowledged only after it, and survives the next crash.
#[test]
fn an_open_after_a_crash_serves_before_its_checkpoint_is_written() {
    let cfg = small_config();
    let devs = devices(4, 16 << 20);
    let store = open(&devs, &cfg);
    let rs = PutOptions::new(Scheme::Rs { k: 2, p: 2 }).durability(Durability::Sync);
    let mut blobs: Vec<(Location, Vec<u8>)> = (0..6)
        .map(|i| {
            let data = content(i, 30_000);
            (store.put(b"c", &data, &rs).unwrap(), data)
        })
        .collect();
    let layout = store.layout();
    let slots = layout.ckpt_slot(0)..layout.ckpt_slot(1) + layout.ckpt_len;
    store.kill();
    for crash_before_checkpoint in [true, false] {
        let gates: Vec<Arc<Gated>> = devs.iter().map(|f| Arc::new(Gated::new(f.clone() as Arc<dyn Media>))).collect();
        gates[0].arm_write_in(slots.clone());
        let media: Vec<Arc<dyn Media>> = gates.iter().map(|g| g.clone() as Arc<dyn Media>).collect();
        let (tx, rx) = std::sync::mpsc::channel();
        let opening = cfg.clone();
        std::thread::spawn(move || {
            let _ = tx.send(reo_store::Store::open(media, &opening));
        });
        gates[0].wait_held(); // the checkpoint's write on device 0
        let unblock = OpenOnDrop(gates[0].clone()); // a failing assertion must not hang the test
                                                    // Bounded so that an open that waits for its checkpoint fails here instead of hanging.
        let opened = rx.recv_timeout(std::time::Duration::from_secs(30));
        let (store, report) = opened.expect("the open returned while its checkpoint was held").unwrap();
        let unblock = unblock; // bound after the store, so dropped before it on a panic
        assert!(!report.clean, "{report:?}");
        for (loc, data) in &blobs {
            assert_eq!(&store.read_all(loc).unwrap(), data, "served while the checkpoint is held");
        }
        if crash_before_checkpoint {
            // Its writer stays parked at the gate: the checkpoint never reaches device 0.
            std::mem::forget(unblock);
            std::mem::forget(store);
        } else {
            let data = content(99, 20_000);
            let put = std::thread::spawn({
                let (store, data) = (Arc::new(store), data.clone());
                move || (store.put(b"n", &data, &rs).unwrap(), store)
            });
            gates[0].open();
            let (loc, store) = put.join().unwrap();
            blobs.push((loc, data));
            Arc::into_inner(store).unwrap().kill();
        }
        for d in &devs {
            d.power_cut(PowerCut::DropAll, 13).unwrap();
        }
        let store = open(&devs, &cfg);
        for (loc, data) in &blobs {
            assert_eq!(
                &store.read_all(loc).unwrap(),
                data,
                "after a crash (before the checkpoint: {crash_before_checkpoint})"
            );
        }
        store.kill();
    }
}

/// A device failed by command and given back before anything was written without it holds
/// every blob: the next open takes it back (what `reo bench store`'s degraded reads rely on).
#[test]
fn a_device_failed_only_for_reads_comes_back() {
    let cfg = small_config();
    let devs = devices(4, 16 << 20);
    let store = open(&devs, &cfg);
    let rs = PutOptions::new(Scheme::Rs { k: 2, p: 2 }).durability(Durability::Sync);
    let blobs: Vec<(Location, Vec<u8>)> = (0..6)
        .map(|i| {
            let data = content(i, 40_000);
            (store.put(b"r", &data, &rs).unwrap(), data)
        })
        .collect();
    store.fail_device(2).unwrap();
    for (loc, data) in &blobs {
        assert_eq!(&store.read_all(loc).unwrap(), data);
    }
    store.close().unwrap();
    let (store, report) = reo_store::Store::open(as_media(&devs), &cfg).unwrap();
    assert!(report.failed_devices.is_empty() && report.stale_devices.is_empty(), "{report:?}");
    store.fail_device(0).unwrap();
    store.fail_device(1).unwrap();
    for (loc, data) in &blobs {
        assert_eq!(&store.read_all(loc).unwrap(), data, "device 2 holds its share");
    }
}

/// A device the store ejects for its read errors is stale at once, though nothing was written
/// without it: reads alone failed it, and the next open keeps it out until it is replaced.
#[test]
fn a_device_ejected_for_read_errors_is_stale() {
    let cfg = StoreConfig { io_error_limit: 2, ..small_config() };
    let devs = devices(4, 16 << 20);
    let store = open(&devs, &cfg);
    let rs = PutOptions::new(Scheme::Rs { k: 2, p: 2 }).durability(Durability::Sync);
    let blobs: Vec<(Location, Vec<u8>)> = (0..8)
        .map(|i| {
            let data = content(i, 40_000);
            (store.put(b"e", &data, &rs).unwrap(), data)
        })
        .collect();
    devs[2].fail_at(1, OpKind::Read, true);
    for (loc, data) in &blobs {
        assert_eq!(&store.read_all(loc).unwrap(), data);
    }
    assert_eq!(store.failed_devices(), vec![2], "ejected by its error budget");
    devs[2].clear_faults();
    store.close().unwrap();
    let (store, report) = reo_store::Store::open(as_media(&devs), &cfg).unwrap();
    assert_eq!(report.stale_devices, vec![2]);
    assert_eq!(store.failed_devices(), vec![2]);
    for (loc, data) in &blobs {
        assert_eq!(&store.read_all(loc).unwrap(), data);
    }
}
