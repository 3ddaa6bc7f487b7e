//! What a zero-copy read (`Store::read_bytes`) keeps from the store's pool of I/O buffers: the
//! run buffers of a read that uses most of them, nothing for a small range.

mod common;

use common::*;
use reo_store::{PutOptions, Scheme};

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
