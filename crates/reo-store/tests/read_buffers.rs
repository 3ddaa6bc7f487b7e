//! What a zero-copy read (`Store::read_bytes`) keeps from the store's pool of I/O buffers: the
//! run buffers of a read that uses most of them, nothing for a small range.

mod common;

use common::*;
use reo_media::{Media, MemMedia};
use reo_store::{PutOptions, Scheme, Store, StoreConfig};
use std::sync::Arc;

#[test]
fn small_ranges_pin_no_run_buffer_and_whole_blobs_share_theirs() {
    let devs = devices(4, 16 << 20);
    let store = open(&devs, &small_config());
    for scheme in [Scheme::Rs { k: 2, p: 2 }, Scheme::Replicate(2), Scheme::None(reo_store::Placement::Isolated)] {
        let data = content(9, 200_000);
        let loc = store.put(b"p", &data, &PutOptions::new(scheme)).unwrap();
        // A few bytes: copied out of the (16 KiB chunk or larger) run buffer, which goes back.
        let small = store.read_bytes(&loc, 70_000, 70_100).unwrap();
        assert!(small == data[70_000..70_100], "{scheme}");
        assert_eq!(small.pinned_bytes(), 0, "{scheme}: {small:?}");
        // The whole blob: its run buffers are shared, not copied, and no more than twice the
        // bytes read are held.
        let whole = store.read_bytes(&loc, 0, loc.len).unwrap();
        assert!(whole == data[..], "{scheme}");
        let pinned = whole.pinned_bytes();
        assert!(pinned >= data.len() && pinned <= 2 * data.len(), "{scheme}: {pinned} bytes pinned for {}", data.len());
    }
}

/// A read of whole runs shares its buffers even when the pool holds only larger ones: a 512 KiB
/// run is not handed a 2 MiB buffer (which it would use a quarter of, and so copy out).
#[test]
fn whole_runs_are_never_copied_out_whatever_the_pool_holds() {
    let devs: Vec<Arc<dyn Media>> = (0..4).map(|_| Arc::new(MemMedia::new(96 << 20)) as Arc<dyn Media>).collect();
    let cfg = StoreConfig { chunk_size: 64 << 10, create: true, ..Default::default() };
    let store = Store::open(devs, &cfg).unwrap().0;
    let opts = PutOptions::new(Scheme::Rs { k: 2, p: 2 });
    // `half`: 8 full rows of 2 data chunks, runs of 8 chunks (512 KiB) on its two data devices.
    let (big, half) = (content(1, 4 << 20), content(2, 16 * (65_536 - reo_store::CHUNK_SLOT)));
    let (big_loc, half_loc) = (store.put(b"b", &big, &opts).unwrap(), store.put(b"h", &half, &opts).unwrap());
    for _ in 0..3 {
        // 1 MiB runs: 2 MiB buffers, back to the pool when dropped.
        drop(store.read_bytes(&big_loc, 0, big_loc.len).unwrap());
        let got = store.read_bytes(&half_loc, 0, half_loc.len).unwrap();
        assert!(got == half[..]);
        assert!(got.pinned_bytes() >= half.len(), "{got:?}: {} bytes pinned", got.pinned_bytes());
    }
}
