//! Structure-aware fuzzing of recovery: well-formed journal batches, correctly framed and
//! checksummed by the store's own journal, whose records carry hostile contents (bands, offsets,
//! devices and lengths out of range, frees and resets of what does not exist, stale marks of
//! devices that are not there). A store that replays them after a crash must not panic, must
//! serve the blob it held as it was or refuse it (never other bytes), and whatever it then lists
//! must lie within its geometry. The
//! checksums gate nothing here: whoever can write a device can compute them.

use std::sync::Arc;

use proptest::prelude::*;
use reo_media::{Media, MemMedia};

use crate::bytes::Writer;
use crate::config::StoreConfig;
use crate::handle::Store;
use crate::location::Location;
use crate::record::Record;
use crate::scheme::{Placement, Scheme};
use crate::store::PutOptions;

fn config() -> StoreConfig {
    StoreConfig {
        chunk_size: 16 << 10,
        zone_size: Some(1 << 20),
        journal_size: Some(256 << 10),
        checkpoint_size: Some(256 << 10),
        ..StoreConfig::default()
    }
}

fn scheme(i: u8) -> Scheme {
    match i % 5 {
        0 => Scheme::None(Placement::Isolated),
        1 => Scheme::None(Placement::Striped),
        2 => Scheme::Replicate(2),
        3 => Scheme::Rs { k: 2, p: 2 },
        _ => Scheme::Replicate(4),
    }
}

/// A value that is hostile (anything) or near a limit, so that bounds checks are reached.
fn edge32() -> impl Strategy<Value = u32> {
    prop_oneof![any::<u32>(), 0u32..64, Just(u32::MAX), (0u32..4).prop_map(|v| u32::MAX - v)]
}

fn edge64() -> impl Strategy<Value = u64> {
    prop_oneof![any::<u64>(), 0u64..(4 << 20), Just(u64::MAX), (0u64..4).prop_map(|v| u64::MAX - v)]
}

fn record() -> impl Strategy<Value = Record> {
    prop_oneof![
        (
            edge64(),
            edge32(),
            edge32(),
            any::<u16>(),
            any::<u8>(),
            edge64(),
            proptest::collection::vec(any::<u8>(), 0..40),
            proptest::collection::vec(any::<u32>(), 0..6)
        )
            .prop_map(|(seq, band, start, device, s, len, header, tail)| Record::Put {
                loc: Location { seq, band, start, device: device % 8, scheme: scheme(s), len },
                header,
                tail,
            }),
        (edge64(), edge32()).prop_map(|(seq, band)| Record::Free { seq, band }),
        edge32().prop_map(|band| Record::BandReset { band }),
        (any::<u16>(), edge64(), edge32()).prop_map(|(device, seq, band)| Record::Unrestored { device, seq, band }),
        any::<u16>().prop_map(|device| Record::Missed { device: device % 8 }),
    ]
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 256, ..ProptestConfig::default() })]

    #[test]
    fn replaying_hostile_records_never_panics(records in proptest::collection::vec(record(), 1..24)) {
        let mems: Vec<Arc<MemMedia>> = (0..4).map(|_| Arc::new(MemMedia::new(16 << 20))).collect();
        let devs = || mems.iter().map(|m| m.clone() as Arc<dyn Media>).collect::<Vec<_>>();
        let (store, _) = Store::open(devs(), &config()).unwrap();
        let data: Vec<u8> = (0..50_000u32).map(|i| (i % 251) as u8).collect();
        let kept = store.put(b"kept", &data, &PutOptions::new(Scheme::Replicate(2))).unwrap();
        store.flush().unwrap();
        let encoded = records.clone();
        let pending = store.inner.meta.mutation().enqueue(true, move |w: &mut Writer| {
            for r in &encoded {
                r.encode(w);
            }
        }).unwrap();
        pending.wait().unwrap();
        drop(store); // a crash: no checkpoint, the next open replays the journal
        match Store::open(devs(), &config()) {
            Ok((again, _)) => {
                let layout = again.layout();
                for (loc, _) in again.blobs() {
                    prop_assert!(u64::from(loc.band) < u64::from(layout.zones), "{loc:?}");
                    prop_assert!(loc.scheme.validate(layout.devices as usize).is_ok(), "{loc:?}");
                }
                // The blob it held is served as it was, or refused (a hostile record may free it
                // or mark its devices stale, as a real journal could): never other bytes.
                if again.blobs().iter().any(|(l, _)| *l == kept) {
                    if let Ok(got) = again.read(&kept, 0, data.len() as u64) {
                        prop_assert_eq!(got, data);
                    }
                }
            }
            Err(e) => prop_assert!(!e.to_string().is_empty()),
        }
    }
}
