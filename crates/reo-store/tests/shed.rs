//! Shedding copies (`Store::shed_copies`): a small replicated blob becomes its first copy as an
//! isolated blob, in place — read back, reopened after a crash and after a clean close, scrubbed,
//! cleaned and refused where the copy cannot stand for the blob.

mod common;

use common::*;
use reo_media::Media;
use reo_store::{Durability, Error, KeepAll, Location, Placement, PutOptions, Scheme, ScrubOptions, VictimPolicy};

const ISOLATED: Scheme = Scheme::None(Placement::Isolated);

/// Live user and device bytes the space report gives `scheme`.
fn live(store: &reo_store::Store, scheme: Scheme) -> (u64, u64) {
    let space = store.space();
    let s = space.per_scheme.iter().find(|(s, _)| *s == scheme).map(|(_, s)| s.clone()).unwrap_or_default();
    (s.live_bytes, s.live_device_bytes)
}

/// A fresh store over four devices.
fn fresh() -> (Vec<std::sync::Arc<reo_media::FaultyMedia>>, reo_store::Store) {
    let devs = devices(4, 16 << 20);
    let store = open(&devs, &small_config());
    (devs, store)
}

/// Puts `len` bytes under `scheme` and sheds them; returns (original, kept, data).
fn put_and_shed(store: &reo_store::Store, id: u64, scheme: Scheme, len: usize) -> (Location, Location, Vec<u8>) {
    let data = content(id, len);
    let loc = store.put(b"dirty", &data, &PutOptions::new(scheme).durability(Durability::Sync)).unwrap();
    let kept = store.shed_copies(&loc, b"clean", Durability::Sync).unwrap().expect("eligible");
    (loc, kept, data)
}

#[test]
fn a_shed_blob_reads_back_from_its_one_device_and_survives_reopening() {
    let cfg = small_config();
    let devs = devices(4, 16 << 20);
    let store = open(&devs, &cfg);
    let (mut blobs, mut neighbours) = (Vec::new(), Vec::new());
    // Narrowed replicate(2) (two columns of a shared row), a whole-row replicate(4), a blob of
    // a whole chunk body (a full row with its trailer slot), and a sub-sector one.
    for (i, (scheme, len)) in [
        (Scheme::Replicate(2), 4096),
        (Scheme::Replicate(4), 12_000),
        (Scheme::Replicate(4), (16 << 10) - 512),
        (Scheme::Replicate(3), 100),
    ]
    .into_iter()
    .enumerate()
    {
        // A neighbour that stays replicated: the band holds both kinds of blob.
        let other = content(50 + i as u64, 4096);
        neighbours.push((store.put(b"dirty", &other, &PutOptions::new(scheme)).unwrap(), other));
        let (loc, kept, data) = put_and_shed(&store, i as u64, scheme, len);
        assert_eq!(kept.band, neighbours[i].0.band);
        assert_eq!(
            (kept.seq, kept.band, kept.start, kept.scheme, kept.len),
            (loc.seq, loc.band, loc.start, ISOLATED, loc.len)
        );
        assert!(!store.contains(&loc) && store.contains(&kept), "{scheme}: the kept copy replaces the blob");
        assert_eq!(store.devices_of(&kept), vec![usize::from(kept.device)]);
        assert!(store.devices_of(&loc).contains(&usize::from(kept.device)), "{scheme}: a copy it had");
        assert_eq!(store.header(&kept).unwrap(), b"clean");
        assert_eq!(store.read_all(&kept).unwrap(), data, "{scheme}");
        blobs.push((kept, data));
    }
    // Space: the kept copies count as isolated blobs, one device's sectors each; nothing of
    // them is left under the replicated schemes.
    let user: u64 = blobs.iter().map(|(l, _)| l.len).sum();
    let sectors: u64 = blobs.iter().map(|(l, _)| l.len.div_ceil(4096)).sum();
    assert_eq!(live(&store, ISOLATED), (user, sectors * 4096));
    for r in 2..=4 {
        let n = neighbours.iter().filter(|(l, _)| l.scheme == Scheme::Replicate(r)).count() as u64;
        assert_eq!(live(&store, Scheme::Replicate(r)), (n * 4096, n * 4096 * u64::from(r)), "replicate({r})");
    }
    let puts = store.stats().put_device_bytes;
    let check = |store: &reo_store::Store, how: &str| {
        for (kept, data) in &blobs {
            assert!(store.contains(kept), "{how}: {kept:?}");
            assert_eq!(store.header(kept).unwrap(), b"clean", "{how}");
            assert_eq!(&store.read_all(kept).unwrap(), data, "{how}");
        }
        assert_eq!(live(store, ISOLATED), (user, sectors * 4096), "{how}");
        for (loc, data) in &neighbours {
            assert_eq!(&store.read_all(loc).unwrap(), data, "{how}");
        }
    };
    assert_eq!(store.stats().put_device_bytes, puts, "shedding writes no data");
    drop(store); // a crash: the journal's Free and Put are replayed
    let store = open(&devs, &cfg);
    check(&store, "after a crash");
    // New puts in the same bands after the restart, then a clean close: the checkpoint carries
    // the isolated copies in their replicated bands.
    for i in 0..8 {
        store.put(b"more", &content(100 + i, 4096), &PutOptions::new(Scheme::Replicate(2))).unwrap();
    }
    store.close().unwrap();
    let store = open(&devs, &cfg);
    check(&store, "after a clean close");
    let rep = store.scrub(&ScrubOptions::default());
    assert_eq!((rep.chunks_bad, rep.unrecoverable.len()), (0, 0), "{rep:?}");
    assert_eq!(rep.blobs, (blobs.len() + neighbours.len()) as u64 + 8);
}

#[test]
fn the_cleaner_moves_a_shed_copy_into_an_isolated_band() {
    let (_devs, store) = fresh();
    let (_, kept, data) = put_and_shed(&store, 1, Scheme::Replicate(4), 4096);
    store.seal_open_bands();
    let mut moved = None;
    for _ in 0..store.bands().len() {
        match store.gc(VictimPolicy::Greedy, &mut KeepAll).unwrap() {
            Some(r) if r.band == kept.band => {
                moved = Some(r);
                break;
            }
            Some(_) => continue,
            None => break,
        }
    }
    assert_eq!(moved.expect("the band was cleaned").relocated, 1);
    let (loc, header) = store.blobs().into_iter().find(|(_, h)| h == b"clean").expect("still live");
    assert!(loc.scheme == ISOLATED && loc.band != kept.band);
    let band = store.bands().into_iter().find(|b| b.band == loc.band).unwrap();
    assert_eq!(band.scheme, Some(ISOLATED));
    assert_eq!((store.read_all(&loc).unwrap(), header), (data, b"clean".to_vec()));
}

#[test]
fn a_blob_that_cannot_be_shed_is_left_alone() {
    let (_devs, store) = fresh();
    let put = |id, scheme, len| {
        let data = content(id, len);
        (store.put(b"h", &data, &PutOptions::new(scheme)).unwrap(), data)
    };
    // More than one row (or stripe), or not replicated: rewritten by the caller instead.
    for (i, (scheme, len)) in [
        (Scheme::Replicate(2), 9000),   // two stripes
        (Scheme::Replicate(4), 40_000), // several rows
        (Scheme::Rs { k: 2, p: 2 }, 4096),
        (Scheme::None(Placement::Striped), 4096),
        (ISOLATED, 4096),
        (Scheme::Replicate(2), 0),
    ]
    .into_iter()
    .enumerate()
    {
        let (loc, data) = put(i as u64, scheme, len);
        assert_eq!(store.shed_copies(&loc, b"x", Durability::None).unwrap(), None, "{scheme} {len}");
        assert!(store.contains(&loc));
        assert_eq!(store.read_all(&loc).unwrap(), data);
    }
    // A blob no longer live.
    let (loc, _) = put(10, Scheme::Replicate(2), 4096);
    store.free(&loc, Durability::None).unwrap();
    assert!(matches!(store.shed_copies(&loc, b"x", Durability::None), Err(Error::NotFound { .. })));
    // With a device failed, a blob whose first copy is on it keeps its copies (the kept copy
    // would be lost with the device); one whose first copy is elsewhere sheds onto that copy.
    let blobs: Vec<_> = (0..16).map(|i| put(20 + i, Scheme::Replicate(2), 4096)).collect();
    store.fail_device(0).unwrap();
    let mut refused = 0;
    for (loc, data) in blobs.iter().filter(|(l, _)| store.devices_of(l).contains(&0)) {
        match store.shed_copies(loc, b"x", Durability::None).unwrap() {
            None => {
                refused += 1;
                assert!(store.contains(loc));
                assert_eq!(&store.read_all(loc).unwrap(), data, "a degraded read from the other copy");
            }
            Some(kept) => {
                assert_ne!(kept.device, 0);
                assert_eq!(&store.read_all(&kept).unwrap(), data);
            }
        }
    }
    assert!(refused > 0, "some blob had its first copy on device 0");
}

#[test]
fn a_corrupt_kept_copy_is_never_served() {
    let (devs, store) = fresh();
    let (_, kept, _) = put_and_shed(&store, 7, Scheme::Replicate(4), 4096);
    let at = store.layout().offset(kept.band, u64::from(kept.start));
    let dev = &devs[usize::from(kept.device)];
    let mut b = vec![0u8; 4096];
    dev.read_at(&mut b, at).unwrap();
    b[10] ^= 0x40;
    dev.write_at(&b, at).unwrap();
    // The other copies are shed: nothing can repair it, and the read fails rather than lie.
    assert!(matches!(store.read_all(&kept), Err(Error::Corrupt { .. })));
}

/// A first copy that does not verify is not kept: `can_shed` says no (the caller rewrites from a
/// good copy), and says yes again once the copy is good; the copy it checks is the one a shed
/// keeps.
#[test]
fn a_bad_first_copy_is_not_kept() {
    let (devs, store) = fresh();
    let data = content(9, 4096);
    let loc = store.put(b"dirty", &data, &PutOptions::new(Scheme::Replicate(4))).unwrap();
    let at = store.layout().offset(loc.band, u64::from(loc.start));
    let mut refused = Vec::new();
    for (d, dev) in devs.iter().enumerate() {
        let mut good = vec![0u8; 4096];
        dev.read_at(&mut good, at).unwrap();
        let mut bad = good.clone();
        bad[100] ^= 1;
        dev.write_at(&bad, at).unwrap();
        if !store.can_shed(&loc) {
            refused.push(d);
        }
        assert_eq!(store.read_all(&loc).unwrap(), data, "read from the good copies");
        dev.write_at(&good, at).unwrap();
    }
    assert_eq!(refused.len(), 1, "exactly the first copy's device: {refused:?}");
    assert!(store.can_shed(&loc));
    let kept = store.shed_copies(&loc, b"clean", Durability::Sync).unwrap().unwrap();
    assert_eq!(usize::from(kept.device), refused[0]);
    assert_eq!(store.read_all(&kept).unwrap(), data);
}
