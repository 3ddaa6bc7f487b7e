//! Device replacement and rebuild (B4), second failures and crashes during a rebuild (A5),
//! automatic ejection by error budget, and scrub (B3): every test checks bytes, not only counters.

mod common;

use common::{as_media, content, devices, open, schemes, small_config, Gated};
use parking_lot::Mutex;
use reo_media::{FaultyMedia, Media, MemMedia, OpKind, PowerCut};
use reo_store::{
    Durability, Error, Location, Placement, PutOptions, RebuildOptions, RebuildState, Scheme, ScrubOptions, Store,
    StoreConfig,
};
use std::collections::HashSet;
use std::io;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;

const DEV: u64 = 16 << 20;

fn fresh() -> Arc<FaultyMedia> {
    Arc::new(FaultyMedia::new(Arc::new(MemMedia::new(DEV))))
}

/// Puts blobs of several sizes (one chunk, many rows, a tail) with `scheme`; header byte 0 = class.
fn fill(store: &Store, scheme: Scheme, count: usize, seed: u64) -> Vec<(Location, Vec<u8>)> {
    let sizes = [1usize, 5_000, 16 << 10, 70_000, 200_000];
    (0..count)
        .map(|i| {
            let data = content(seed * 1000 + i as u64, sizes[i % sizes.len()]);
            let header = [(i % 4) as u8, 7];
            let opts = PutOptions::new(scheme).placement(i as u64).durability(Durability::Sync);
            (store.put(&header, &data, &opts).unwrap(), data)
        })
        .collect()
}

fn by_class() -> RebuildOptions {
    RebuildOptions { priority: Arc::new(|_, h: &[u8]| h[0]), record_order: true, ..Default::default() }
}

fn subsets(n: usize, size: usize) -> Vec<Vec<usize>> {
    (0u32..1 << n)
        .filter(|m| m.count_ones() as usize == size)
        .map(|m| (0..n).filter(|d| m >> d & 1 == 1).collect())
        .collect()
}

/// Every blob reads back exact with each set of `t` devices failed (after a clean reopen each).
fn survives_any(devs: &[Arc<FaultyMedia>], cfg: &StoreConfig, blobs: &[(Location, Vec<u8>)], t: usize, what: &str) {
    for g in subsets(devs.len(), t) {
        let store = open(devs, cfg);
        for &d in &g {
            store.fail_device(d).unwrap();
        }
        for (loc, data) in blobs {
            let got = store.read_all(loc).unwrap_or_else(|e| panic!("{what}: devices {g:?} failed: {e}"));
            assert_eq!(&got, data, "{what}: devices {g:?} failed");
        }
        store.close().unwrap();
    }
}

#[test]
fn replace_restores_full_redundancy_for_every_scheme_and_failure_set() {
    let cfg = small_config();
    let n = 4;
    for scheme in schemes(n).into_iter().filter(|s| s.tolerance() > 0) {
        let t = scheme.tolerance();
        for size in 1..=t {
            for failed in subsets(n, size) {
                let what = format!("{scheme}, failed {failed:?}");
                let mut devs = devices(n, DEV);
                let store = open(&devs, &cfg);
                let mut blobs = fill(&store, scheme, 6, 1);
                for &d in &failed {
                    store.fail_device(d).unwrap();
                }
                // Degraded writes: blobs written while the devices are failed.
                blobs.extend(fill(&store, scheme, 4, 2));
                for &d in &failed {
                    let m = fresh();
                    let h = store.replace_device(d, m.clone(), by_class()).unwrap();
                    let p = h.wait();
                    assert_eq!(p.state, RebuildState::Done, "{what}");
                    assert!(p.lost.is_empty(), "{what}: lost {:?}", p.lost);
                    devs[d] = m;
                }
                assert!(store.failed_devices().is_empty(), "{what}");
                for (loc, data) in &blobs {
                    assert_eq!(store.health(loc), reo_store::BlobHealth::Healthy, "{what}");
                    assert_eq!(&store.read_all(loc).unwrap(), data, "{what}");
                }
                store.close().unwrap();
                survives_any(&devs, &cfg, &blobs, t, &what);
            }
        }
    }
}

#[test]
fn isolated_blobs_of_the_dead_device_are_reported_lost_and_the_rest_kept() {
    let cfg = small_config();
    let devs = devices(4, DEV);
    let store = open(&devs, &cfg);
    let blobs = fill(&store, Scheme::None(Placement::Isolated), 12, 3);
    let rs = fill(&store, Scheme::Rs { k: 2, p: 2 }, 4, 4);
    store.fail_device(1).unwrap();
    let seen = Arc::new(Mutex::new(Vec::new()));
    let s2 = seen.clone();
    let opts = RebuildOptions { on_lost: Some(Arc::new(move |l: &Location| s2.lock().push(l.seq))), ..by_class() };
    let p = store.replace_device(1, fresh(), opts).unwrap().wait();
    let expect: HashSet<u64> = blobs.iter().filter(|(l, _)| l.device == 1).map(|(l, _)| l.seq).collect();
    assert!(!expect.is_empty());
    assert_eq!(p.lost.iter().map(|l| l.seq).collect::<HashSet<_>>(), expect);
    assert_eq!(seen.lock().iter().copied().collect::<HashSet<_>>(), expect);
    assert_eq!(p.classes.values().map(|c| c.blobs_lost).sum::<u64>(), expect.len() as u64);
    for (loc, data) in blobs.iter().chain(&rs) {
        if expect.contains(&loc.seq) {
            assert!(matches!(store.read_all(loc), Err(Error::Corrupt { .. })));
        } else {
            assert_eq!(&store.read_all(loc).unwrap(), data);
        }
    }
}

/// Blobs a rebuild could not restore are never read from the new device, which does not hold
/// them: reading them again and again answers `Corrupt` without a checksum error charged to the
/// healthy replacement. Before, each read of such a blob read the replacement's blank space,
/// counted a checksum mismatch against it, and a few of them ejected it.
#[test]
fn reads_of_blobs_the_rebuild_lost_do_not_charge_the_new_device() {
    let cfg = StoreConfig { io_error_limit: 2, ..small_config() };
    let devs = devices(4, DEV);
    let store = open(&devs, &cfg);
    let blobs = fill(&store, Scheme::None(Placement::Isolated), 12, 3);
    store.fail_device(1).unwrap();
    let p = store.replace_device(1, fresh(), by_class()).unwrap().wait();
    assert_eq!(p.state, RebuildState::Done);
    assert!(!p.lost.is_empty(), "the isolated blobs of device 1 are lost");
    let before = store.stats();
    for _ in 0..5 {
        for loc in &p.lost {
            assert!(matches!(store.read_all(loc), Err(Error::Corrupt { .. })));
            assert_eq!(store.health(loc), reo_store::BlobHealth::Lost, "health agrees with the read");
        }
    }
    let after = store.stats();
    assert_eq!(after.checksum_errors, before.checksum_errors, "no mismatch charged for chunks never restored");
    assert!(store.failed_devices().is_empty(), "the healthy replacement was ejected");
    for (loc, data) in blobs.iter().filter(|(l, _)| l.device != 1) {
        assert_eq!(&store.read_all(loc).unwrap(), data);
    }
    // New blobs on the replacement read as usual.
    let opts = PutOptions::new(Scheme::None(Placement::Isolated)).placement(1);
    let on1 =
        (0..64).map(|i| store.put(b"n", &content(500 + i, 9000), &opts.placement(i)).unwrap()).find(|l| l.device == 1);
    let on1 = on1.expect("a new blob on device 1");
    assert!(store.read_all(&on1).is_ok());
}

/// The blobs a rebuild lost stay down on the new device across restarts — a clean one (the
/// checkpoint carries them) and a power cut right after the rebuild (the journal does: they are
/// recorded durably before the rebuild retires). Before they were kept in memory only, and the
/// reads after a restart charged the healthy device again until it was ejected.
#[test]
fn blobs_the_rebuild_lost_stay_down_on_the_new_device_after_a_restart() {
    for crash in [false, true] {
        let cfg = StoreConfig { io_error_limit: 2, ..small_config() };
        let devs = devices(4, DEV);
        let store = open(&devs, &cfg);
        let blobs = fill(&store, Scheme::None(Placement::Isolated), 12, 3);
        store.fail_device(1).unwrap();
        let new = fresh();
        let p = store.replace_device(1, new.clone(), by_class()).unwrap().wait();
        assert_eq!(p.state, RebuildState::Done);
        assert!(!p.lost.is_empty(), "the isolated blobs of device 1 are lost");
        let devs = vec![devs[0].clone(), new, devs[2].clone(), devs[3].clone()];
        if crash {
            store.kill();
            for d in &devs {
                d.power_cut(PowerCut::DropAll, 7).unwrap();
            }
        } else {
            store.close().unwrap();
        }
        let store = open(&devs, &cfg);
        for _ in 0..5 {
            for loc in &p.lost {
                assert!(matches!(store.read_all(loc), Err(Error::Corrupt { .. })), "crash {crash}");
                assert_eq!(store.health(loc), reo_store::BlobHealth::Lost, "crash {crash}");
            }
        }
        assert_eq!(store.stats().checksum_errors, 0, "crash {crash}: no mismatch charged after the restart");
        assert!(store.failed_devices().is_empty(), "crash {crash}: the healthy replacement was ejected");
        for (loc, data) in blobs.iter().filter(|(l, _)| l.device != 1) {
            assert_eq!(&store.read_all(loc).unwrap(), data, "crash {crash}");
        }
        // Freed, they leave the set: a checkpoint after the frees and a reopen still read the rest.
        for loc in &p.lost {
            store.free(loc, Durability::Sync).unwrap();
        }
        store.close().unwrap();
        let store = open(&devs, &cfg);
        assert_eq!(store.blobs().len(), blobs.len() - p.lost.len());
        store.close().unwrap();
    }
}

#[test]
fn rebuild_follows_priority_order_and_reports_per_class_progress() {
    let cfg = small_config();
    let devs = devices(4, DEV);
    let store = open(&devs, &cfg);
    let mut blobs = fill(&store, Scheme::Replicate(4), 16, 5);
    blobs.extend(fill(&store, Scheme::Rs { k: 2, p: 2 }, 16, 6));
    store.fail_device(2).unwrap();
    let p = store.replace_device(2, fresh(), by_class()).unwrap().wait();
    assert_eq!(p.state, RebuildState::Done);
    assert_eq!(p.order.len(), blobs.len());
    let prios: Vec<u8> = p.order.iter().map(|r| r.priority).collect();
    let mut sorted = prios.clone();
    sorted.sort_unstable();
    assert_eq!(prios, sorted, "restored in priority order");
    let first3 = prios.iter().position(|&x| x == 3).unwrap();
    assert!(
        prios[..first3].iter().filter(|&&x| x <= 1).count()
            == blobs.iter().filter(|(l, _)| store.header(l).unwrap()[0] <= 1).count()
    );
    let at: Vec<_> = (0..4u8).map(|c| p.classes[&c].restored_at.unwrap()).collect();
    assert!(at.windows(2).all(|w| w[0] <= w[1]), "{at:?}");
    for c in p.classes.values() {
        assert_eq!((c.blobs_done, c.bytes_done), (c.blobs_total, c.bytes_total));
    }
    for (loc, data) in &blobs {
        assert_eq!(&store.read_all(loc).unwrap(), data);
    }
}

#[test]
fn an_on_demand_read_is_served_and_repaired_before_queued_work() {
    let cfg = small_config();
    let devs = devices(4, DEV);
    let store = open(&devs, &cfg);
    let blobs = fill(&store, Scheme::Rs { k: 2, p: 2 }, 20, 7);
    store.fail_device(0).unwrap();
    let h = store.replace_device(0, fresh(), RebuildOptions { start_paused: true, ..by_class() }).unwrap();
    // A cold (class 3) blob, last in the queue, is read while the rebuild has not started.
    let (cold, data) = blobs.iter().rev().find(|(l, _)| store.header(l).unwrap()[0] == 3).unwrap();
    assert_eq!(store.health(cold), reo_store::BlobHealth::Degraded);
    assert_eq!(&store.read_all(cold).unwrap(), data, "served at once, reconstructed");
    h.resume();
    let p = h.wait();
    assert_eq!(p.order[0].seq, cold.seq);
    assert!(p.order[0].on_demand);
    assert_eq!(p.on_demand, 1);
    assert_eq!(p.order.iter().filter(|r| r.seq == cold.seq).count(), 1, "not restored twice");
    for (loc, data) in &blobs {
        assert_eq!(&store.read_all(loc).unwrap(), data);
    }
}

/// Counts bytes written into the data area (zones), where the rebuild writes.
struct Counting {
    inner: MemMedia,
    data_off: AtomicU64,
    written: AtomicU64,
}

impl Media for Counting {
    fn len(&self) -> u64 {
        self.inner.len()
    }
    fn read_at(&self, buf: &mut [u8], offset: u64) -> io::Result<()> {
        self.inner.read_at(buf, offset)
    }
    fn write_at(&self, buf: &[u8], offset: u64) -> io::Result<()> {
        if offset >= self.data_off.load(Ordering::Relaxed) {
            self.written.fetch_add(buf.len() as u64, Ordering::Relaxed);
        }
        self.inner.write_at(buf, offset)
    }
    fn sync(&self) -> io::Result<()> {
        self.inner.sync()
    }
    fn describe(&self) -> String {
        "counting".into()
    }
}

#[test]
fn rebuild_writes_exactly_the_live_recoverable_bytes() {
    let cfg = small_config();
    let devs = devices(4, DEV);
    let store = open(&devs, &cfg);
    let mut blobs = Vec::new();
    for (i, s) in
        [Scheme::Rs { k: 2, p: 2 }, Scheme::Replicate(2), Scheme::None(Placement::Isolated), Scheme::Rs { k: 3, p: 1 }]
            .into_iter()
            .enumerate()
    {
        blobs.extend(fill(&store, s, 10, 10 + i as u64));
    }
    // Free every other blob: their space must not be copied.
    let (kept, freed): (Vec<_>, Vec<_>) = blobs.into_iter().enumerate().partition(|(i, _)| i % 2 == 0);
    for (_, (loc, _)) in &freed {
        store.free(loc, Durability::Sync).unwrap();
    }
    let kept: Vec<_> = kept.into_iter().map(|(_, b)| b).collect();
    store.fail_device(3).unwrap();
    let layout = store.layout();
    // A blob's column on one device (what its put wrote there), for the blobs with chunks on
    // device 3 that survive its loss (small blobs share rows, on some of the devices only).
    let column = |l: &Location| reo_store::column_bytes(l, 4, layout.chunk as usize);
    let on_3 = |l: &Location| !l.scheme.is_isolated() && store.devices_of(l).contains(&3);
    let expect: u64 = kept.iter().filter(|(l, _)| on_3(l)).map(|(l, _)| column(l)).sum();
    let m = Arc::new(Counting {
        inner: MemMedia::new(DEV),
        data_off: AtomicU64::new(layout.data_off),
        written: AtomicU64::new(0),
    });
    let p = store.replace_device(3, m.clone(), by_class()).unwrap().wait();
    assert_eq!(p.state, RebuildState::Done);
    assert_eq!(p.bytes_done, expect, "progress counts the columns written");
    assert_eq!(m.written.load(Ordering::Relaxed), expect, "device writes = live recoverable bytes");
    assert_eq!(store.stats().rebuild_device_bytes, expect);
    let lost: HashSet<u64> = p.lost.iter().map(|l| l.seq).collect();
    for (loc, data) in &kept {
        if lost.contains(&loc.seq) {
            assert!(loc.scheme.is_isolated() && loc.device == 3);
        } else {
            assert_eq!(&store.read_all(loc).unwrap(), data);
        }
    }
}

#[test]
fn a_crash_during_rebuild_resumes_after_reopen() {
    let cfg = small_config();
    let mut devs = devices(4, DEV);
    let store = open(&devs, &cfg);
    let mut blobs = fill(&store, Scheme::Rs { k: 2, p: 2 }, 12, 20);
    blobs.extend(fill(&store, Scheme::Replicate(2), 12, 21));
    store.fail_device(1).unwrap();
    let m = fresh();
    devs[1] = m.clone();
    let h = store.replace_device(1, m, RebuildOptions { pause_after_blobs: Some(8), ..by_class() }).unwrap();
    let p = h.wait_until(|p| p.state == RebuildState::Paused);
    assert_eq!(p.blobs_done, 8);
    store.kill();
    for (i, d) in devs.iter().enumerate() {
        d.power_cut(PowerCut::DropAll, i as u64).unwrap();
    }
    let (store, report) = Store::open(as_media(&devs), &cfg).unwrap();
    assert_eq!(report.rebuilding_device, Some(1));
    for (loc, data) in &blobs {
        assert_eq!(&store.read_all(loc).unwrap(), data, "readable while the rebuild waits");
    }
    let p = store.resume_rebuild(by_class()).unwrap().expect("a rebuild to resume").wait();
    assert_eq!(p.state, RebuildState::Done);
    assert!(p.lost.is_empty());
    // Every blob with chunks on device 1: small blobs share rows, some not holding device 1.
    let on_1 = blobs.iter().filter(|(l, _)| store.devices_of(l).contains(&1)).count();
    assert!(on_1 < blobs.len() && on_1 >= blobs.len() * 3 / 4, "{on_1} of {}", blobs.len());
    assert_eq!(p.blobs_done, on_1 as u64);
    assert!(store.resume_rebuild(by_class()).unwrap().is_none());
    store.close().unwrap();
    let (store, report) = Store::open(as_media(&devs), &cfg).unwrap();
    assert_eq!(report.rebuilding_device, None, "the flag is cleared when done");
    store.close().unwrap();
    // Device 1 now holds its share: each other device may fail.
    for other in [0, 2, 3] {
        let store = open(&devs, &cfg);
        store.fail_device(other).unwrap();
        for (loc, data) in &blobs {
            assert_eq!(&store.read_all(loc).unwrap(), data, "device {other} failed after the resumed rebuild");
        }
        store.close().unwrap();
    }
}

#[test]
fn a_second_failure_during_rebuild_loses_only_what_is_beyond_tolerance() {
    let cfg = small_config();
    let devs = devices(4, DEV);
    let store = open(&devs, &cfg);
    let rs = fill(&store, Scheme::Rs { k: 2, p: 2 }, 10, 30);
    let r3 = fill(&store, Scheme::Replicate(3), 10, 31);
    let r2 = fill(&store, Scheme::Replicate(2), 20, 32);
    store.fail_device(0).unwrap();
    let h = store.replace_device(0, fresh(), RebuildOptions { pause_after_blobs: Some(10), ..by_class() }).unwrap();
    let before = h.wait_until(|p| p.state == RebuildState::Paused);
    let restored: HashSet<u64> = before.order.iter().map(|r| r.seq).collect();
    store.fail_device(1).unwrap();
    h.resume();
    let p = h.wait();
    assert_eq!(p.state, RebuildState::Done);
    let lost: HashSet<u64> = p.lost.iter().map(|l| l.seq).collect();
    for (loc, data) in rs.iter().chain(&r3) {
        assert!(!lost.contains(&loc.seq), "{} is within tolerance", loc.scheme);
        assert_eq!(&store.read_all(loc).unwrap(), data);
    }
    for (loc, data) in &r2 {
        match store.read_all(loc) {
            Ok(b) => {
                assert_eq!(&b, data);
                assert!(!lost.contains(&loc.seq));
            }
            Err(Error::Corrupt { .. }) => {
                assert!(lost.contains(&loc.seq), "an unreadable blob is reported lost");
                assert!(!restored.contains(&loc.seq), "a blob restored before the second failure is kept");
            }
            Err(e) => panic!("{e}"),
        }
    }
}

#[test]
fn a_device_exceeding_its_error_budget_is_ejected() {
    let cfg = StoreConfig { io_error_limit: 4, ..small_config() };
    let devs = devices(4, DEV);
    let store = open(&devs, &cfg);
    let blobs = fill(&store, Scheme::Rs { k: 2, p: 2 }, 10, 40);
    // A few errors stay within the budget.
    devs[2].fail_at(1, OpKind::Read, false);
    for (loc, data) in &blobs {
        assert_eq!(&store.read_all(loc).unwrap(), data);
    }
    assert!(store.failed_devices().is_empty());
    // Persistent read errors eject the device after the budget; reads stay exact.
    devs[2].fail_at(1, OpKind::Read, true);
    for _ in 0..3 {
        for (loc, data) in &blobs {
            assert_eq!(&store.read_all(loc).unwrap(), data);
        }
    }
    assert_eq!(store.failed_devices(), vec![2]);
    assert_eq!(store.stats().ejections, 1);
    // Disabled budget: never ejected.
    let cfg = StoreConfig { io_error_limit: 0, ..small_config() };
    let devs = devices(4, DEV);
    let store = open(&devs, &cfg);
    let blobs = fill(&store, Scheme::Rs { k: 2, p: 2 }, 10, 41);
    devs[3].fail_at(1, OpKind::Read, true);
    for (loc, data) in &blobs {
        assert_eq!(&store.read_all(loc).unwrap(), data);
    }
    assert!(store.failed_devices().is_empty());
}

#[test]
fn scrub_repairs_bit_flips_and_reports_the_unrecoverable() {
    let cfg = small_config();
    let devs = devices(4, DEV);
    let store = open(&devs, &cfg);
    let layout = store.layout();
    let mut blobs = Vec::new();
    for s in [Scheme::Rs { k: 2, p: 2 }, Scheme::Replicate(2), Scheme::None(Placement::Isolated)] {
        blobs.extend(fill(&store, s, 3, 50));
    }
    let clean = store.scrub(&ScrubOptions::default());
    assert_eq!((clean.chunks_bad, clean.unrecoverable.len()), (0, 0));
    assert!(clean.chunks_verified > 0);
    // One flipped bit in the first chunk of each blob on its first device (parity and copies too;
    // small blobs share rows, each on devices of its own).
    let mut flips = 0;
    for (loc, _) in &blobs {
        let off = layout.offset(loc.band, u64::from(loc.start)) + 100;
        let d = store.devices_of(loc)[0];
        devs[d].flip_bit(off, 1).unwrap();
        flips += 1;
    }
    let rep = store.scrub(&ScrubOptions { rate_limit: Some(1 << 30) });
    let isolated: HashSet<u64> = blobs.iter().filter(|(l, _)| l.scheme.is_isolated()).map(|(l, _)| l.seq).collect();
    assert_eq!(rep.chunks_bad, flips);
    assert_eq!(rep.chunks_repaired, flips - isolated.len() as u64);
    assert_eq!(rep.unrecoverable.iter().map(|l| l.seq).collect::<HashSet<_>>(), isolated);
    // Repaired in place: a second pass finds only the unrecoverable ones, and with any one
    // device failed the redundant blobs read exact.
    let again = store.scrub(&ScrubOptions::default());
    assert_eq!(again.chunks_bad, isolated.len() as u64);
    store.close().unwrap();
    for d in 0..4 {
        let store = open(&devs, &cfg);
        store.fail_device(d).unwrap();
        for (loc, data) in blobs.iter().filter(|(l, _)| !l.scheme.is_isolated()) {
            assert_eq!(&store.read_all(loc).unwrap(), data, "device {d} failed after scrub");
        }
        store.close().unwrap();
    }
}

/// A rebuild that could not restore some blobs (two peers' reads failing while it ran) leaves
/// them off the new device; once the peers read again, a scrub restores them onto it, and the
/// smaller set holds across a power cut: the new device then serves them with two others failed.
/// Before, they stayed off the device until freed, one failure short of their redundancy.
#[test]
fn scrub_restores_blobs_a_rebuild_left_off_once_they_read_again() {
    // No ejection: the peers' read errors are transient.
    let cfg = StoreConfig { io_error_limit: 0, ..small_config() };
    let devs = devices(4, DEV);
    let store = open(&devs, &cfg);
    let rs = fill(&store, Scheme::Rs { k: 2, p: 2 }, 6, 70);
    store.fail_device(1).unwrap();
    devs[0].fail_at(1, OpKind::Read, true);
    devs[2].fail_at(1, OpKind::Read, true);
    let new = fresh();
    let p = store.replace_device(1, new.clone(), by_class()).unwrap().wait();
    assert_eq!(p.state, RebuildState::Done);
    // With devices 0 and 2 unreadable, only blobs needing device 3 alone (a one-chunk row)
    // could be rebuilt.
    assert!(p.lost.len() >= rs.len() - 1, "{} of {} lost", p.lost.len(), rs.len());
    devs[0].clear_faults();
    devs[2].clear_faults();
    let rep = store.scrub(&ScrubOptions::default());
    assert_eq!(rep.blobs_restored, p.lost.len() as u64);
    assert_eq!((rep.chunks_bad, rep.unrecoverable.len()), (0, 0));
    assert_eq!(store.scrub(&ScrubOptions::default()).blobs_restored, 0, "restored once");
    let devs = vec![devs[0].clone(), new, devs[2].clone(), devs[3].clone()];
    store.kill();
    for d in &devs {
        d.power_cut(PowerCut::DropAll, 11).unwrap();
    }
    let store = open(&devs, &cfg);
    store.fail_device(0).unwrap();
    store.fail_device(2).unwrap();
    for (loc, data) in &rs {
        assert_eq!(&store.read_all(loc).unwrap(), data, "from devices 1 and 3 after the scrub and a power cut");
    }
    assert_eq!(store.stats().checksum_errors, 0);
}

#[test]
fn replace_refuses_bad_requests_with_clear_errors() {
    let cfg = small_config();
    let devs = devices(4, DEV);
    let store = open(&devs, &cfg);
    let e = store.replace_device(1, fresh(), RebuildOptions::default()).unwrap_err().to_string();
    assert!(e.contains("healthy"), "{e}");
    let e = store.replace_device(9, fresh(), RebuildOptions::default()).unwrap_err().to_string();
    assert!(e.contains("no device 9"), "{e}");
    store.fail_device(1).unwrap();
    let small: Arc<dyn Media> = Arc::new(MemMedia::new(1 << 20));
    let e = store.replace_device(1, small, RebuildOptions::default()).unwrap_err().to_string();
    assert!(e.contains("bytes"), "{e}");
    let h = store.replace_device(1, fresh(), RebuildOptions { start_paused: true, ..Default::default() }).unwrap();
    store.fail_device(2).unwrap();
    let e = store.replace_device(2, fresh(), RebuildOptions::default()).unwrap_err().to_string();
    assert!(e.contains("being rebuilt"), "{e}");
    h.resume();
    assert_eq!(h.wait().state, RebuildState::Done);
}

/// A read queued on device 0's lane behind a hung read, and run only after device 0 was failed
/// and replaced, reads the blank replacement: its chunk fails verification, but that is not the
/// new device's fault (charging it could eject the device being rebuilt). The read is served
/// from the other devices, and no checksum error is counted.
#[test]
fn a_read_queued_before_a_replacement_is_not_charged_to_the_new_device() {
    let gates: Vec<Arc<Gated>> = (0..4).map(|_| Arc::new(Gated::new(Arc::new(MemMedia::new(DEV))))).collect();
    let store = Store::open(gates.iter().map(|g| g.clone() as Arc<dyn Media>).collect(), &small_config()).unwrap().0;
    // Reads each device began during `f`.
    let reads = |f: &dyn Fn()| {
        let before: Vec<usize> = gates.iter().map(|g| g.reads()).collect();
        f();
        gates.iter().zip(before).map(|(g, b)| g.reads() - b).collect::<Vec<_>>()
    };
    // One-row rs(2,2) blobs: two data chunks, on two devices. A: one whose first or second
    // chunk is on device 0 (`at` = a byte in it); B: one with device 0 and device `x` as its
    // data devices.
    let body = 16_384 - 512;
    let opts = PutOptions::new(Scheme::Rs { k: 2, p: 2 }).durability(Durability::Sync);
    let (mut a, mut b) = (None, None);
    for i in 0..64u64 {
        let data = content(i, 2 * body);
        let loc = store.put(b"t", &data, &opts).unwrap();
        for at in [0, body as u64] {
            if a.is_none() && reads(&|| drop(store.read(&loc, at, at + 1).unwrap()))[0] == 1 {
                a = Some((loc, at));
            }
        }
        let got = reads(&|| drop(store.read_all(&loc).unwrap()));
        if a.is_some_and(|(l, _)| l != loc) && got[0] == 1 {
            b = Some((loc, data, (1..4).find(|&d| got[d] == 1).unwrap()));
            break;
        }
    }
    let ((a, at), (b, b_data, x)) = (a.unwrap(), b.unwrap());
    std::thread::scope(|s| {
        // The hung read: A's byte on device 0.
        gates[0].arm();
        let hung = s.spawn(|| store.read(&a, at, at + 1).unwrap());
        gates[0].wait_held();
        // B's read queues its device 0 chunk first (runs go out in device order), then its chunk
        // on device x, whose read tells that the first is queued.
        let before = gates[x].reads();
        let queued = s.spawn(|| store.read_all(&b).unwrap());
        gates[x].wait_reads_above(before);
        store.fail_device(0).unwrap();
        let blank = Arc::new(MemMedia::new(DEV));
        let _rebuild =
            store.replace_device(0, blank, RebuildOptions { start_paused: true, ..Default::default() }).unwrap();
        gates[0].open();
        hung.join().unwrap();
        assert_eq!(queued.join().unwrap(), b_data, "served from the other devices");
    });
    assert_eq!(store.stats().checksum_errors, 0, "the blank replacement's chunk is not a device error");
    assert!(store.failed_devices().is_empty(), "the replacement is not ejected");
}

/// A replacement whose first checkpoint cannot be taken (the state outgrew its slot) is
/// abandoned with the device failed again: left up, it would hold none of the older blobs with no
/// rebuild to write them, and every read of their chunks on it would fail its checksum. Once the
/// state fits, the same device is replaced and rebuilt.
#[test]
fn a_replacement_whose_checkpoint_fails_leaves_the_device_failed() {
    let cfg = StoreConfig { checkpoint_size: Some(64 << 10), ..small_config() };
    let devs = devices(4, DEV);
    let store = open(&devs, &cfg);
    let opts = PutOptions::new(Scheme::Rs { k: 2, p: 2 }).durability(Durability::Sync);
    // Five blobs with the longest headers: their records alone exceed the 64 KiB slot.
    let header = vec![3u8; reo_store::MAX_HEADER_LEN];
    let blobs: Vec<(Location, Vec<u8>)> = (0..5)
        .map(|i| {
            let data = content(i, 40_000);
            (store.put(&header, &data, &opts).unwrap(), data)
        })
        .collect();
    store.fail_device(1).unwrap();
    let e = store.replace_device(1, fresh(), RebuildOptions::default()).unwrap_err().to_string();
    assert!(e.contains("exceeds its slot"), "{e}");
    assert_eq!(store.failed_devices(), vec![1], "the abandoned replacement is failed again");
    assert!(store.rebuild_progress().is_none(), "no rebuild is left installed");
    for (loc, data) in &blobs {
        assert_eq!(&store.read_all(loc).unwrap(), data);
    }
    assert_eq!(store.stats().checksum_errors, 0, "no read went to the blank replacement");
    // Three blobs freed: the state fits its slot again, and the replacement goes through.
    for (loc, _) in &blobs[..3] {
        store.free(loc, Durability::Sync).unwrap();
    }
    let h = store.replace_device(1, fresh(), RebuildOptions::default()).unwrap();
    assert_eq!(h.wait().state, RebuildState::Done);
    assert!(store.failed_devices().is_empty());
    // Devices 0 and 2 failed: what is left is device 1, rebuilt, and device 3.
    store.fail_device(0).unwrap();
    store.fail_device(2).unwrap();
    for (loc, data) in &blobs[3..] {
        assert_eq!(&store.read_all(loc).unwrap(), data, "read with device 1's rebuilt chunks");
    }
}

/// The records queued when a replacement's checkpoint fails are not dropped with it: a `None`
/// put queued then (its batch held back by a long group-commit delay) is journaled with the next
/// batch, so after a crash it is found with the `Sync` put that came after it — a crash may lose
/// `None` operations only newest first.
#[test]
fn records_drained_by_a_failed_checkpoint_are_journaled_by_the_next_batch() {
    let cfg = StoreConfig {
        checkpoint_size: Some(64 << 10),
        journal_delay: std::time::Duration::from_secs(600),
        ..small_config()
    };
    let devs = devices(4, DEV);
    let store = open(&devs, &cfg);
    let rs = PutOptions::new(Scheme::Rs { k: 2, p: 2 });
    let header = vec![3u8; reo_store::MAX_HEADER_LEN];
    let big: Vec<Location> =
        (0..5).map(|i| store.put(&header, &content(i, 1000), &rs.durability(Durability::Sync)).unwrap()).collect();
    let early = content(10, 30_000);
    store.put(b"early", &early, &rs.durability(Durability::None)).unwrap();
    store.fail_device(1).unwrap();
    assert!(store.replace_device(1, fresh(), RebuildOptions::default()).is_err());
    let late = content(11, 30_000);
    store.put(b"late", &late, &rs.durability(Durability::Sync)).unwrap();
    // Room for the checkpoint the reopen writes.
    for loc in &big[..3] {
        store.free(loc, Durability::Sync).unwrap();
    }
    store.kill();
    let store = open(&devs, &cfg);
    let blobs = store.blobs();
    for (name, data) in [(&b"early"[..], &early), (&b"late"[..], &late)] {
        let (loc, _) = blobs
            .iter()
            .find(|(_, h)| &h[..] == name)
            .unwrap_or_else(|| panic!("{} lost after the crash", String::from_utf8_lossy(name)));
        assert_eq!(&store.read_all(loc).unwrap(), data);
    }
}

/// A rebuild whose lost blobs the journal cannot record (its generation wedged: a batch that did
/// not fit and a checkpoint that failed) ends with that reason, and the rebuilt device, which did
/// nothing wrong, stays up — before, it was marked failed for a "sync error". It keeps its
/// rebuilding mark, so a restart resumes the rebuild; meanwhile its lost blobs are down on it.
#[test]
fn a_rebuild_whose_lost_blobs_cannot_be_journaled_leaves_the_device_up() {
    let cfg = StoreConfig { journal_size: Some(64 << 10), checkpoint_size: Some(64 << 10), ..small_config() };
    let devs = devices(4, DEV);
    let store = open(&devs, &cfg);
    let blobs = fill(&store, Scheme::None(Placement::Isolated), 12, 3);
    store.fail_device(1).unwrap();
    let h = store.replace_device(1, fresh(), RebuildOptions { start_paused: true, ..by_class() }).unwrap();
    // Wedge the journal: three batches of one 16 KiB-header record fill the new generation, the
    // fourth does not fit and its checkpoint exceeds the slot.
    let rs = PutOptions::new(Scheme::Rs { k: 2, p: 2 });
    let header = vec![9u8; reo_store::MAX_HEADER_LEN];
    for i in 0..3 {
        store.put(&header, &content(100 + i, 1000), &rs.durability(Durability::Sync)).unwrap();
    }
    store.put(&header, &content(103, 1000), &rs.durability(Durability::None)).unwrap();
    assert!(store.flush().is_err());
    h.resume();
    let p = h.wait();
    match &p.state {
        RebuildState::Aborted(why) => assert!(why.contains("could not be recorded"), "{why}"),
        s => panic!("the rebuild ended {s:?}"),
    }
    assert!(!p.lost.is_empty());
    assert!(store.failed_devices().is_empty(), "the rebuilt device was failed for the journal's error");
    for (loc, data) in &blobs {
        if p.lost.iter().any(|l| l == loc) {
            assert!(matches!(store.read_all(loc), Err(Error::Corrupt { .. })));
        } else {
            assert_eq!(&store.read_all(loc).unwrap(), data);
        }
    }
    assert_eq!(store.stats().checksum_errors, 0);
}

/// A replacement that fails while the rebuild writes to it is failed again, and the blobs it did
/// not take are not reported lost (the layer above frees lost blobs): their other chunks hold
/// them, and every one still reads back exact.
#[test]
fn blobs_a_failing_replacement_did_not_take_are_not_lost() {
    let cfg = small_config();
    let devs = devices(4, DEV);
    let store = open(&devs, &cfg);
    let blobs = fill(&store, Scheme::Replicate(3), 24, 7);
    store.fail_device(1).unwrap();
    let spare = fresh();
    let opts = RebuildOptions { start_paused: true, ..Default::default() };
    let h = store.replace_device(1, spare.clone(), opts).unwrap();
    spare.fail_at(1, OpKind::Write, true);
    h.resume();
    let p = h.wait();
    assert_eq!(store.failed_devices(), vec![1], "the failing replacement is failed again");
    assert!(p.lost.is_empty(), "reported lost: {:?}", p.lost);
    assert!(p.unwritten > 0, "{p:?}");
    for (loc, data) in &blobs {
        assert_eq!(&store.read_all(loc).unwrap(), data);
    }
}
