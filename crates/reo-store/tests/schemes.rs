//! Every scheme, every set of failed devices: reads within tolerance are byte-exact; beyond it,
//! exactly the blobs that lost data report loss and no read ever returns wrong bytes.

mod common;
use common::*;
use reo_store::{BlobHealth, Durability, Error, PutOptions, Scheme, Store};

fn subsets(n: usize) -> impl Iterator<Item = Vec<usize>> {
    (0u32..(1 << n)).map(move |m| (0..n).filter(|d| m & (1 << d) != 0).collect())
}

fn check_all_failure_sets(n: usize) {
    let cfg = small_config();
    for scheme in schemes(n) {
        let devs = devices(n, 16 << 20);
        let store = open(&devs, &cfg);
        let mut blobs = Vec::new();
        for (i, &len) in SIZES.iter().enumerate() {
            let data = content(i as u64, len);
            let opts = PutOptions::new(scheme).durability(Durability::Sync).placement(i as u64);
            let loc = store.put(format!("k{i}").as_bytes(), &data, &opts).unwrap();
            blobs.push((loc, data));
        }
        drop(store);
        for failed in subsets(n) {
            for d in &devs {
                d.revive();
            }
            for &d in &failed {
                devs[d].fail_stop();
            }
            if failed.len() == n {
                let e = Store::open(as_media(&devs), &cfg).err().expect("no device left");
                assert!(e.to_string().contains("device failed"), "{e}");
                continue;
            }
            let store = open(&devs, &cfg);
            assert_eq!(store.failed_devices(), failed, "{scheme}");
            for (loc, data) in &blobs {
                let health = store.health(loc);
                let within = failed.len() <= scheme.tolerance();
                match store.read_all(loc) {
                    Ok(bytes) => {
                        assert_eq!(&bytes, data, "{scheme} failed={failed:?} len={}", data.len());
                        assert_ne!(health, BlobHealth::Lost, "{scheme} {failed:?}: read ok but health lost");
                    }
                    Err(Error::Corrupt { .. }) => {
                        assert!(!within, "{scheme} failed={failed:?} len={}: lost within tolerance", data.len());
                        assert_eq!(health, BlobHealth::Lost, "{scheme} {failed:?}: loss not predicted by health");
                    }
                    Err(e) => panic!("{scheme} {failed:?}: unexpected error {e}"),
                }
                // The zero-copy read answers alike: the same bytes, or loss.
                match store.read_bytes(loc, 0, loc.len) {
                    Ok(bytes) => assert!(bytes == data[..], "{scheme} failed={failed:?} len={}", data.len()),
                    Err(Error::Corrupt { .. }) => assert_eq!(health, BlobHealth::Lost, "{scheme} {failed:?}"),
                    Err(e) => panic!("{scheme} {failed:?}: unexpected error from read_bytes: {e}"),
                }
                if within {
                    // Ranges too, degraded or not.
                    let len = data.len() as u64;
                    for (a, b) in [(0, len / 3), (len / 3, len), (len / 2, len / 2 + 1.min(len / 2))] {
                        assert_eq!(store.read(loc, a, b).unwrap(), data[a as usize..b as usize], "{scheme}");
                        let bytes = store.read_bytes(loc, a, b).unwrap();
                        assert_eq!(bytes.len() as u64, b - a);
                        assert_eq!(bytes.into_vec(), data[a as usize..b as usize], "{scheme} [{a}, {b})");
                    }
                }
            }
            drop(store);
        }
    }
}

#[test]
fn every_scheme_and_failure_set_over_four_devices() {
    check_all_failure_sets(4);
}

#[test]
fn every_scheme_and_failure_set_over_five_devices() {
    check_all_failure_sets(5);
}

#[test]
fn isolated_placement_loses_only_the_dead_devices_share() {
    let devs = devices(4, 16 << 20);
    let store = open(&devs, &small_config());
    let scheme = Scheme::None(reo_store::Placement::Isolated);
    let locs: Vec<_> = (0..40u64)
        .map(|k| {
            let data = content(k, 5000);
            (store.put(b"x", &data, &PutOptions::new(scheme).placement(k)).unwrap(), data)
        })
        .collect();
    store.fail_device(1).unwrap();
    let mut lost = 0;
    for (loc, data) in &locs {
        match store.read_all(loc) {
            Ok(b) => assert_eq!(&b, data),
            Err(Error::Corrupt { .. }) => {
                assert_eq!(loc.device, 1);
                lost += 1
            }
            Err(e) => panic!("{e}"),
        }
    }
    assert_eq!(lost, 10, "exactly the blobs placed on device 1");
}

#[test]
fn striped_none_loses_everything_with_one_device() {
    let devs = devices(4, 16 << 20);
    let store = open(&devs, &small_config());
    let scheme = Scheme::None(reo_store::Placement::Striped);
    let loc = store.put(b"x", &content(1, 200_000), &PutOptions::new(scheme)).unwrap();
    store.fail_device(2).unwrap();
    assert!(matches!(store.read_all(&loc), Err(Error::Corrupt { .. })));
    assert_eq!(store.health(&loc), BlobHealth::Lost);
}

#[test]
fn bad_requests_get_clear_errors() {
    let devs = devices(4, 16 << 20);
    let store: Store = open(&devs, &small_config());
    let e = store.put(b"h", b"data", &PutOptions::new(Scheme::Rs { k: 3, p: 2 })).unwrap_err();
    assert!(e.to_string().contains("k + p"), "{e}");
    let e = store.put(&vec![0u8; 20_000], b"d", &PutOptions::new(Scheme::Replicate(2))).unwrap_err();
    assert!(matches!(e, Error::HeaderTooLarge { .. }), "{e}");
    let e = store.put(b"h", &vec![0u8; 2 << 20], &PutOptions::new(Scheme::Replicate(2))).unwrap_err();
    assert!(matches!(e, Error::TooLarge { .. }), "{e}");
    let loc = store.put(b"h", b"0123456789", &PutOptions::new(Scheme::Replicate(2))).unwrap();
    assert!(matches!(store.read(&loc, 5, 11), Err(Error::BadRange { .. })));
    store.free(&loc, Durability::Sync).unwrap();
    assert!(matches!(store.read_all(&loc), Err(Error::NotFound { .. })));
    assert!(matches!(store.free(&loc, Durability::None), Err(Error::NotFound { .. })));
    assert!(store.fail_device(9).is_err());
}

/// Small blobs take their scheme's footprint and no more: narrow blobs share rows (a 4 KiB
/// striped blob takes one 4 KiB column, `replicate(2)` and `rs(1,1)` two), the rows they fill
/// are used to the last column, and the shared rows survive a restart and later puts intact.
#[test]
fn small_blobs_share_rows_and_take_only_their_footprint() {
    let cfg = small_config();
    let devs = devices(4, 16 << 20);
    let store = open(&devs, &cfg);
    let schemes = [
        (Scheme::None(reo_store::Placement::Striped), 1u64),
        (Scheme::Replicate(2), 2),
        (Scheme::Rs { k: 1, p: 1 }, 2),
    ];
    let mut blobs = Vec::new();
    // Interleaved schemes and one Sync put in eight: rows are shared across put batches.
    for i in 0..64u64 {
        for (j, &(scheme, _)) in schemes.iter().enumerate() {
            let data = content(i * 3 + j as u64, 4096);
            let durability = if i % 8 == 0 { Durability::Sync } else { Durability::None };
            let loc = store.put(b"s", &data, &PutOptions::new(scheme).durability(durability)).unwrap();
            blobs.push((loc, data));
        }
    }
    let space = store.space();
    for (scheme, columns) in schemes {
        let s = &space.per_scheme.iter().find(|(s, _)| *s == scheme).unwrap().1;
        assert_eq!(s.live_bytes, 64 * 4096, "{scheme}");
        assert_eq!(s.live_device_bytes, 64 * 4096 * columns, "{scheme}: footprint");
        assert_eq!(s.used_device_bytes, s.live_device_bytes, "{scheme}: every column of its rows used");
    }
    drop(store); // a crash: the journal is replayed
    let store = open(&devs, &cfg);
    for (loc, data) in &blobs {
        assert_eq!(&store.read_all(loc).unwrap(), data, "{}", loc.scheme);
    }
    // New puts go past the shared rows, never into their free columns of before the restart.
    for i in 0..16u64 {
        for (j, &(scheme, _)) in schemes.iter().enumerate() {
            let data = content(1000 + i * 3 + j as u64, 3000);
            blobs.push((store.put(b"t", &data, &PutOptions::new(scheme)).unwrap(), data));
        }
    }
    store.fail_device(1).unwrap();
    for (loc, data) in &blobs {
        match store.read_all(loc) {
            Ok(got) => assert_eq!(&got, data, "{}", loc.scheme),
            Err(Error::Corrupt { .. }) => {
                assert!(loc.scheme.tolerance() == 0 && store.devices_of(loc).contains(&1), "{}", loc.scheme)
            }
            Err(e) => panic!("{e}"),
        }
    }
}
