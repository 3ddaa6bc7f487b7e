//! Device failures through the cache: each class survives exactly its tolerance for every set of
//! failed devices (byte-exact reads), the accessible set is what placement predicts, lost clean
//! objects become misses (refetched), lost dirty objects are reported — and the paper's control
//! messages and sense codes answer accordingly.

mod common;

use std::sync::Arc;

use common::*;
use reo_cache::{Access, Cache, SenseCode, WriteError};
use reo_media::Media;

fn reopen(devs: &[Arc<dyn Media>]) -> Cache {
    let mut c = cfg(64 * FRAG);
    c.hot_recompute_every = u64::MAX;
    open(devs, c)
}

fn close(c: Cache) {
    let store = c.store().clone();
    drop(c);
    Arc::try_unwrap(store).ok().expect("sole owner").close().unwrap();
}

fn whole(c: &Cache, key: &str) -> Result<Option<Vec<u8>>, WriteError> {
    let r = c.get(key.as_bytes(), 0, u64::MAX, 10)?;
    Ok(r.is_hit().then(|| r.pieces.into_iter().flat_map(|p| p.data.unwrap()).collect()))
}

#[test]
fn every_class_survives_exactly_its_tolerance_for_every_failure_set() {
    // Four objects per class: dirty (replicate(4), tolerance 3), hot (rs(2,2), tolerance 2),
    // cold (isolated, lost only with its own device). A fresh array per failure set: a sweep
    // frees what the failed devices took, durably.
    let body = |i: u64| content(i, (FRAG + 777 * i) as usize);
    let setup = || {
        let devs = devices(4, 64);
        let c = reopen(&devs);
        for i in 0..4u64 {
            c.put(format!("b/dirty{i}").as_bytes(), &body(i), &meta(), true, 1).unwrap();
            read_through(&c, format!("b/hot{i}").as_bytes(), &body(10 + i), 0, u64::MAX, 1);
            assert_eq!(c.control(format!("#SETID# b hot{i} 2").as_bytes()).code, 0);
            read_through(&c, format!("b/cold{i}").as_bytes(), &body(20 + i), 0, u64::MAX, 1);
        }
        c.reencode_step(u64::MAX);
        close(c);
        devs
    };
    for mask in 1u32..15 {
        let failed: Vec<usize> = (0..4).filter(|d| mask & (1 << d) != 0).collect();
        let c = reopen(&setup());
        let cold_home: Vec<usize> =
            (0..4).map(|i| c.status(format!("b/cold{i}").as_bytes()).unwrap().devices[0]).collect();
        for &d in &failed {
            c.fail_device(d).unwrap();
        }
        for i in 0..4u64 {
            let (dk, hk, ck) = (format!("b/dirty{i}"), format!("b/hot{i}"), format!("b/cold{i}"));
            // Dirty: replicated on every device, survives up to 3 failures.
            assert_eq!(whole(&c, &dk).unwrap().unwrap(), body(i), "{failed:?} {dk}");
            // Hot: rs(2,2) survives 2.
            if failed.len() <= 2 {
                assert_eq!(whole(&c, &hk).unwrap().as_deref(), Some(&body(10 + i)[..]), "{failed:?} {hk}");
            } else {
                assert!(whole(&c, &hk).unwrap().is_none(), "{failed:?} {hk}: lost, so a miss");
            }
            // Cold: only if its device survived.
            let alive = !failed.contains(&cold_home[i as usize]);
            assert_eq!(whole(&c, &ck).unwrap().is_some(), alive, "{failed:?} {ck} on device {}", cold_home[i as usize]);
        }
        assert_eq!(c.stats().dirty_lost, 0);
        assert_eq!(c.engine_sense(false, 0), SenseCode::RecoveryStarts);
        close(c);
    }
    // All four devices: even dirty data is gone — reported, never replaced by backend bytes.
    let c = reopen(&setup());
    for d in 0..4 {
        c.fail_device(d).unwrap();
    }
    assert!(matches!(whole(&c, "b/dirty0"), Err(WriteError::DirtyLost(_))));
    let st = c.status(b"b/dirty0").unwrap();
    assert_eq!((st.access, st.sense), (Access::Corrupted, SenseCode::Corrupted));
    assert_eq!(c.control(b"#QUERY# b dirty0 R 0 10").code, 0x63);
    assert!(c.stats().dirty_lost >= 4);
}

/// Cold data striped without parity (the Reo paper's placement) cannot be written while a device
/// is down; the cache then keeps caching it on one surviving device instead of refusing every
/// fill, and the re-encoder leaves it there until the device is back.
#[test]
fn a_fill_the_cold_stripe_cannot_take_is_cached_on_one_surviving_device() {
    let devs = devices(4, 64);
    let mut c = cfg(64 * FRAG);
    c.hot_recompute_every = u64::MAX;
    let mut schemes = reo_cache::ClassSchemes::reo_default(4);
    schemes.0[3] = reo_store::Scheme::None(reo_store::Placement::Striped);
    c.class_schemes = Some(schemes);
    let c = open(&devs, c);
    // One fragment whose chunks span every device.
    let body = |i: u64| content(i, FRAG as usize);
    read_through(&c, b"b/before", &body(1), 0, u64::MAX, 1);
    assert_eq!(c.status(b"b/before").unwrap().devices.len(), 4, "striped over every device");
    c.fail_device(2).unwrap();
    assert!(whole(&c, "b/before").unwrap().is_none(), "a stripe without parity dies with any device");
    read_through(&c, b"b/after", &body(2), 0, u64::MAX, 2);
    assert_eq!(whole(&c, "b/after").unwrap().as_deref(), Some(&body(2)[..]), "cached, and a hit");
    let home = c.status(b"b/after").unwrap().devices;
    assert!(home.len() == 1 && home[0] != 2, "on one surviving device: {home:?}");
    assert_eq!(c.info(b"b/after").unwrap().schemes, [reo_store::Scheme::None(reo_store::Placement::Isolated)]);
    assert_eq!(c.reencode_step(u64::MAX), 0, "nothing to move while the stripe cannot be written");
    // Once the device is replaced, the re-encoder (asleep after its clean sweep) moves the fill
    // back into its class's scheme.
    let fresh: Arc<dyn Media> = Arc::new(reo_media::MemMedia::new(64 << 20));
    c.replace_device(2, fresh, None).unwrap().wait();
    assert!(c.reencode_step(u64::MAX) > 0, "the replacement wakes the re-encoder");
    assert_eq!(c.info(b"b/after").unwrap().schemes, [reo_store::Scheme::None(reo_store::Placement::Striped)]);
    assert_eq!(whole(&c, "b/after").unwrap().as_deref(), Some(&body(2)[..]));
    close(c);
}

#[test]
fn control_messages_answer_and_never_panic() {
    let c = reopen(&devices(4, 64));
    read_through(&c, b"b/k", &content(1, 5000), 0, u64::MAX, 1);
    let ok = c.control(b"#SETID# b k 0");
    assert_eq!((ok.code, ok.sense), (0, SenseCode::Success), "{ok:?}");
    c.recompute_hot_threshold();
    assert_eq!(c.info(b"b/k").unwrap().class, reo_cache::Class::Metadata, "a command's class sticks");
    c.reencode_step(u64::MAX);
    assert_eq!(c.info(b"b/k").unwrap().schemes, vec![reo_store::Scheme::Replicate(4)]);
    let q = c.control(b"#QUERY#  b  k  R  0  5000");
    assert_eq!(q.code, 0, "{q:?}");
    assert_eq!(q.status.unwrap().devices, vec![0, 1, 2, 3]);
    // A write that cannot fit: cache full.
    assert_eq!(c.control(format!("#QUERY# b new W 0 {}", 65 * FRAG).as_bytes()).code, 0x64);
    assert_eq!(c.control(b"#QUERY# b new W 0 10").code, 0);
    for bad in [
        &b""[..],
        b"#SETID#",
        b"#SETID# b k",
        b"#SETID# b k 1",
        b"#SETID# b k 9",
        b"#SETID# b missing 2",
        b"#QUERY# b k X 0 1",
        b"#QUERY# b k R -1 1",
        b"#QUERY# b k R 0 99999999",
        b"#QUERY# b k R 18446744073709551615 2",
        b"#QUERY# b missing R 0 1",
        b"#HELLO# b k",
        b"\xff\xfe",
    ] {
        let r = c.control(bad);
        assert_eq!(r.code, -1, "{:?} → {r:?}", String::from_utf8_lossy(bad));
        assert!(!r.message.is_empty());
    }
    assert_eq!(c.control(&vec![b'#'; 5000]).code, -1);
    // A failed device: recovery starts.
    c.fail_device(2).unwrap();
    assert_eq!(c.control(b"#QUERY# b k R 0 1").code, 0x65);
}

/// A replaced device is rebuilt in the cache's priority order — metadata, dirty, hot (hottest
/// first), cold — and the sense codes follow the recovery: 0x65 during, 0x66 once after.
#[test]
fn replacement_rebuilds_in_class_order_and_recovery_ends() {
    let devs = devices(4, 64);
    let c = reopen(&devs);
    for i in 0..6u64 {
        c.put(format!("b/dirty{i}").as_bytes(), &content(i, FRAG as usize), &meta(), true, 1).unwrap();
        read_through(&c, format!("b/hot{i}").as_bytes(), &content(10 + i, FRAG as usize), 0, u64::MAX, 1);
        read_through(&c, format!("b/cold{i}").as_bytes(), &content(20 + i, 3000), 0, u64::MAX, 1);
        // hot{i} is read i + 1 times: hot5 is the hottest.
        for _ in 0..=i {
            c.get(format!("b/hot{i}").as_bytes(), 0, u64::MAX, 2).unwrap();
        }
        assert_eq!(c.control(format!("#SETID# b hot{i} 2").as_bytes()).code, 0);
    }
    read_through(&c, b"b/meta", &content(99, 2000), 0, u64::MAX, 3);
    assert_eq!(c.control(b"#SETID# b meta 0").code, 0);
    c.reencode_step(u64::MAX);
    c.fail_device(1).unwrap();
    assert_eq!(c.engine_sense(false, 0), SenseCode::RecoveryStarts);
    let fresh: Arc<dyn Media> = Arc::new(reo_media::MemMedia::new(64 << 20));
    let opts = reo_store::RebuildOptions { priority: c.rebuild_priorities(), record_order: true, ..Default::default() };
    let done = c.store().replace_device(1, fresh, opts).unwrap().wait();
    assert_eq!(done.state, reo_store::RebuildState::Done);
    let order: Vec<u8> = done.order.iter().map(|r| r.priority).collect();
    assert!(order.windows(2).all(|w| w[0] <= w[1]), "restored in priority order: {order:?}");
    assert_eq!(order.first(), Some(&0), "metadata first");
    assert!(order.contains(&1) && order.iter().any(|&p| (2..=202).contains(&p)), "{order:?}");
    // Hotter objects get smaller priority numbers; everything is accessible again.
    let prio = c.rebuild_priorities();
    let prio_of = |key: &str| {
        let (loc, h) = c
            .store()
            .blobs()
            .into_iter()
            .find(|(_, h)| reo_cache::header::BlobHeader::decode(h).is_some_and(|x| x.key == key.as_bytes()))
            .unwrap();
        prio(&loc, &h)
    };
    let hot: Vec<u8> = (0..6).map(|i| prio_of(&format!("b/hot{i}"))).collect();
    assert!(hot.windows(2).all(|w| w[0] > w[1]) && hot[5] >= 2, "hottest first: {hot:?}");
    assert_eq!((prio_of("b/dirty0"), prio_of("b/meta"), prio_of("b/cold0")), (1, 0, 255));
    for k in (0..6).flat_map(|i| [format!("b/hot{i}"), format!("b/dirty{i}")]) {
        assert_eq!(c.status(k.as_bytes()).unwrap().access, Access::Accessible, "{k} after the rebuild");
    }
    assert_eq!(c.engine_sense(false, 0), SenseCode::RecoveryEnds);
    assert_eq!(c.engine_sense(false, 0), SenseCode::Success, "0x66 is reported once");
    // Full redundancy again: any other single device may now fail without losing hot or dirty data.
    c.fail_device(3).unwrap();
    for i in 0..6u64 {
        assert_eq!(whole(&c, &format!("b/dirty{i}")).unwrap().unwrap(), content(i, FRAG as usize));
        assert_eq!(whole(&c, &format!("b/hot{i}")).unwrap().unwrap(), content(10 + i, FRAG as usize));
    }
}

/// A rebuild a restart interrupted (the store closed with the new device still marked
/// rebuilding) is resumed through the cache, with its priorities, as the gateway does at start:
/// the new device gets everything back, and any two others may then fail.
#[test]
fn an_interrupted_rebuild_is_resumed_through_the_cache() {
    let devs = devices(4, 64);
    let c = reopen(&devs);
    for i in 0..6u64 {
        c.put(format!("b/dirty{i}").as_bytes(), &content(i, FRAG as usize), &meta(), true, 1).unwrap();
        read_through(&c, format!("b/hot{i}").as_bytes(), &content(10 + i, FRAG as usize), 0, u64::MAX, 1);
        assert_eq!(c.control(format!("#SETID# b hot{i} 2").as_bytes()).code, 0);
    }
    c.reencode_step(u64::MAX);
    c.fail_device(1).unwrap();
    let fresh: Arc<dyn Media> = Arc::new(reo_media::MemMedia::new(64 << 20));
    let opts = reo_store::RebuildOptions { start_paused: true, ..Default::default() };
    let paused = c.store().replace_device(1, fresh.clone(), opts).unwrap();
    close(c);
    drop(paused);
    let devs = vec![devs[0].clone(), fresh, devs[2].clone(), devs[3].clone()];
    let c = reopen(&devs);
    let h = c.resume_rebuild(None).unwrap().expect("the interrupted rebuild");
    assert_eq!(h.device(), 1);
    let done = h.wait();
    assert_eq!(done.state, reo_store::RebuildState::Done);
    assert!(done.blobs_done > 0);
    assert!(c.resume_rebuild(None).unwrap().is_none(), "nothing left to resume");
    c.fail_device(0).unwrap();
    c.fail_device(3).unwrap();
    for i in 0..6u64 {
        assert_eq!(whole(&c, &format!("b/dirty{i}")).unwrap().unwrap(), content(i, FRAG as usize));
        assert_eq!(whole(&c, &format!("b/hot{i}")).unwrap().unwrap(), content(10 + i, FRAG as usize));
    }
}

/// Scrub through the cache: a flipped bit in a protected blob is repaired in place; in an
/// unprotected (cold, isolated) blob it cannot be, so the object leaves the cache and is
/// refetched — wrong bytes are never served either way.
#[test]
fn scrub_repairs_or_forgets_and_never_serves_flipped_bits() {
    let faulty: Vec<Arc<reo_media::FaultyMedia>> =
        (0..4).map(|_| Arc::new(reo_media::FaultyMedia::new(Arc::new(reo_media::MemMedia::new(64 << 20))))).collect();
    let devs: Vec<Arc<dyn Media>> = faulty.iter().map(|f| f.clone() as Arc<dyn Media>).collect();
    let c = reopen(&devs);
    let (hot, cold) = (content(1, FRAG as usize), content(2, 3000));
    read_through(&c, b"b/hot", &hot, 0, u64::MAX, 1);
    c.get(b"b/hot", 0, u64::MAX, 2).unwrap();
    assert_eq!(c.control(b"#SETID# b hot 2").code, 0);
    c.reencode_step(u64::MAX);
    read_through(&c, b"b/cold", &cold, 0, u64::MAX, 3);
    let layout = c.store().layout();
    for key in ["b/hot", "b/cold"] {
        let (loc, _) = c
            .store()
            .blobs()
            .into_iter()
            .find(|(_, h)| reo_cache::header::BlobHeader::decode(h).is_some_and(|x| x.key == key.as_bytes()))
            .unwrap();
        let dev = if loc.device == reo_store::ROW_BAND { 0 } else { loc.device as usize };
        faulty[dev].flip_bit(layout.offset(loc.band, u64::from(loc.start)) + 100, 3).unwrap();
    }
    let rep = c.scrub(None);
    assert!(rep.chunks_bad >= 2 && rep.chunks_repaired >= 1, "{rep:?}");
    assert_eq!(rep.unrecoverable.len(), 1, "only the cold blob is beyond repair: {rep:?}");
    assert_eq!(whole(&c, "b/hot").unwrap().as_deref(), Some(&hot[..]), "repaired in place");
    assert!(whole(&c, "b/cold").unwrap().is_none(), "the cold object left the cache");
    assert_eq!(read_through(&c, b"b/cold", &cold, 0, u64::MAX, 4), cold);
    assert_eq!(whole(&c, "b/cold").unwrap().as_deref(), Some(&cold[..]), "refetched and cached again");
    assert_eq!(c.stats().dirty_lost, 0);
}

/// A status or sense query while the replacement device is still being rebuilt (no device
/// failed any more) reports recovery in progress, and recovery's end (0x66) is still reported
/// once the rebuild finishes. The rebuild starts paused, so the query is made mid-rebuild.
#[test]
fn recovery_end_is_reported_after_a_query_during_the_rebuild() {
    let c = reopen(&devices(4, 64));
    c.put(b"b/dirty0", &content(0, FRAG as usize), &meta(), true, 1).unwrap();
    c.fail_device(1).unwrap();
    let fresh: Arc<dyn Media> = Arc::new(reo_media::MemMedia::new(64 << 20));
    let opts = reo_store::RebuildOptions { start_paused: true, ..Default::default() };
    let h = c.store().replace_device(1, fresh, opts).unwrap();
    assert!(c.store().failed_devices().is_empty() && c.rebuilding(), "mid-rebuild, nothing failed");
    let q = c.control(b"#QUERY# b dirty0 R 0 1");
    assert_eq!((q.sense, q.code), (SenseCode::RecoveryStarts, 0x65), "{q:?}");
    assert_eq!(c.engine_sense(false, 0), SenseCode::RecoveryStarts);
    h.resume();
    assert_eq!(h.wait().state, reo_store::RebuildState::Done);
    let q = c.control(b"#QUERY# b dirty0 R 0 1");
    assert_eq!((q.sense, q.code), (SenseCode::RecoveryEnds, 0x66), "{q:?}");
    assert_eq!(c.engine_sense(false, 0), SenseCode::Success, "0x66 is reported once");
}

/// A device the store ejects on its own is swept by the next `maintain` even when a sense query
/// saw the failure first, and so is a second device failing while the first is being rebuilt.
#[test]
fn a_query_before_maintain_does_not_skip_the_sweep() {
    let c = reopen(&devices(4, 64));
    let objects: Vec<(String, Vec<u8>)> =
        (0..24).map(|i| (format!("b/clean{i}"), content(100 + i, FRAG as usize))).collect();
    for (i, (key, data)) in objects.iter().enumerate() {
        read_through(&c, key.as_bytes(), data, 0, u64::MAX, i as u64 + 1);
    }
    // Ejected by the store (as on I/O errors), not by the cache's command, which sweeps at once.
    c.store().fail_device(2).unwrap();
    assert_eq!(c.engine_sense(false, 0), SenseCode::RecoveryStarts);
    c.maintain();
    let left = c.sweep_lost();
    assert_eq!(left.lost_clean, 0, "maintain left lost fragments indexed: {left:?}");
    let lost_first = objects.iter().filter(|(k, _)| c.info(k.as_bytes()).is_none()).count();
    assert!(lost_first > 0, "some cold objects lived on device 2");

    // Device 2 replaced, its rebuild paused; device 3 fails meanwhile.
    let fresh: Arc<dyn Media> = Arc::new(reo_media::MemMedia::new(64 << 20));
    let opts = reo_store::RebuildOptions { start_paused: true, ..Default::default() };
    let h = c.store().replace_device(2, fresh, opts).unwrap();
    c.store().fail_device(3).unwrap();
    c.maintain();
    let left = c.sweep_lost();
    assert_eq!(left.lost_clean, 0, "the failure during the rebuild was not swept: {left:?}");
    let lost_now = objects.iter().filter(|(k, _)| c.info(k.as_bytes()).is_none()).count();
    assert!(lost_now > lost_first, "some cold objects lived on device 3");
    h.resume();
    h.wait();
    // What is still indexed reads back exact.
    for (key, data) in &objects {
        if let Some(got) = whole(&c, key).unwrap() {
            assert_eq!(&got, data, "{key}");
        }
    }
}
