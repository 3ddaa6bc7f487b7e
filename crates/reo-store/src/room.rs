//! Metadata room: how much of a checkpoint slot the live set takes, and whether a put's record
//! fits the bound a caller keeps to.
//!
//! Every device's checkpoint slot holds a put record for every live blob of the array
//! (`persist.rs`). A live set that outgrows the slot fails its next checkpoint with
//! `MetadataFull` after its puts' bytes were written and their records journaled, and the
//! journal generation then takes no further batch until a checkpoint fits (`JournalPos::wedged`):
//! every durable write fails until frees shrink the set. The store reports the room in one
//! atomic load; the caller that decides what to drop bounds itself by it — the cache evicts before
//! a put whose record would pass the bound ([`Inner::record_fits`]). The store does not refuse
//! such a put itself: it would have to refuse it after its caller chose what to keep, and the
//! checkpoint's failure stays the backstop, as before.
//!
//! The bound leaves a 16th of the slot to what a checkpoint holds besides put records and band
//! entries (stale and unrestored marks), to puts racing the check, and to the cleaner's
//! re-encoding moves (a scheme with more tail chunks takes 4 bytes more per chunk, unchecked).

use crate::location::{Location, ROW_BAND};
use crate::record::{FRAME_HEADER, PUT_RECORD_FIXED};
use crate::scheme::Scheme;
use crate::store::Inner;

/// Bytes of a checkpoint's head (`next_seq u64 | clean u8 | bands u32`).
const CKPT_HEAD: u64 = 8 + 1 + 4;

/// What a checkpoint of the live set takes of its slot, and how much of it puts may fill.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct MetadataRoom {
    /// Bytes a checkpoint of the current live set takes (frame header, head, band entries and a
    /// put record per live blob), marks left out.
    pub used: u64,
    /// Bytes puts may fill: a slot less a 16th.
    pub limit: u64,
    /// Bytes of one checkpoint slot.
    pub slot: u64,
}

impl MetadataRoom {
    /// Bytes puts may still add within the bound.
    #[inline]
    pub fn free(&self) -> u64 {
        self.limit.saturating_sub(self.used)
    }
}

impl Inner {
    /// The slot's room now (one atomic load).
    pub(crate) fn metadata_room(&self) -> MetadataRoom {
        let slot = self.layout.ckpt_len;
        let band_entry = 5 + 8 * self.n() as u64;
        let fixed = FRAME_HEADER as u64 + CKPT_HEAD + self.space.band_count() as u64 * band_entry;
        MetadataRoom { used: fixed + self.space.record_bytes(), limit: slot - slot / 16, slot }
    }

    /// Bytes of the put record of a blob of `len` bytes in `scheme` with a header of
    /// `header_len` bytes.
    pub(crate) fn record_len(&self, header_len: usize, len: u64, scheme: Scheme) -> u64 {
        let loc = Location { seq: 0, band: 0, start: 0, device: ROW_BAND, scheme, len };
        (PUT_RECORD_FIXED + header_len + 4 * self.shape(&loc).tail_chunks()) as u64
    }

    /// Does the record of such a put fit within the bound?
    pub(crate) fn record_fits(&self, header_len: usize, len: u64, scheme: Scheme) -> bool {
        let room = self.metadata_room();
        room.used + self.record_len(header_len, len, scheme) <= room.limit
    }
}

#[cfg(test)]
mod tests {
    use std::sync::Arc;

    use reo_media::{Media, MemMedia};

    use crate::config::StoreConfig;
    use crate::error::Error;
    use crate::handle::Store;
    use crate::record::PUT_RECORD_FIXED;
    use crate::scheme::{Placement, Scheme};
    use crate::store::{Durability, PutOptions};

    fn config() -> StoreConfig {
        StoreConfig {
            chunk_size: 16 << 10,
            zone_size: Some(1 << 20),
            journal_size: Some(64 << 10),
            checkpoint_size: Some(64 << 10),
            ..StoreConfig::default()
        }
    }

    /// The put records of the live set, counted from the blobs themselves.
    fn records_of(store: &Store) -> u64 {
        store
            .blobs()
            .iter()
            .map(|(loc, h)| (PUT_RECORD_FIXED + h.len() + 4 * store.inner.shape(loc).tail_chunks()) as u64)
            .sum()
    }

    /// The room predicts the checkpoint: small blobs of several schemes fill the slot, and while
    /// `used` is within the slot a checkpoint fits; one record more and it does not. The count
    /// stays exact through frees, a shed and a crash, and `record_fits` turns false at the bound.
    #[test]
    fn the_room_predicts_whether_a_checkpoint_fits() {
        let mems: Vec<Arc<MemMedia>> = (0..4).map(|_| Arc::new(MemMedia::new(32 << 20))).collect();
        let devs = || mems.iter().map(|m| m.clone() as Arc<dyn Media>).collect::<Vec<_>>();
        let (store, _) = Store::open(devs(), &config()).unwrap();
        let schemes = [Scheme::None(Placement::Isolated), Scheme::Replicate(2), Scheme::Rs { k: 2, p: 2 }];
        let header = |i: usize| format!("header of blob {i:06}").into_bytes();
        let mut locs = Vec::new();
        let mut crossed_bound = None;
        loop {
            let i = locs.len();
            let (h, scheme) = (header(i), schemes[i % 3]);
            let room = store.metadata_room();
            let record = store.inner.record_len(h.len(), 100, scheme);
            assert_eq!(store.inner.record_fits(h.len(), 100, scheme), room.used + record <= room.limit);
            if crossed_bound.is_none() && room.used + record > room.limit {
                crossed_bound = Some(i);
            }
            if room.used + record > room.slot {
                break;
            }
            locs.push(store.put(&h, &[i as u8; 100], &PutOptions::new(scheme).durability(Durability::Sync)).unwrap());
        }
        assert!(crossed_bound.is_some_and(|b| b < locs.len()), "the bound comes before the slot");
        let room = store.metadata_room();
        assert_eq!(store.inner.space.record_bytes(), records_of(&store));
        assert!(room.used <= room.slot && room.limit < room.slot, "{room:?}");
        // At the slot's edge the checkpoint still fits. Past it, it fails within the room's
        // overestimate (every band counted with a cursor per device, free ones with none) of a
        // record more.
        crate::persist::checkpoint(&store.inner, false).unwrap();
        let e = loop {
            let i = locs.len();
            locs.push(store.put(&header(i), &[1; 100], &PutOptions::new(schemes[i % 3])).unwrap());
            if let Err(e) = crate::persist::checkpoint(&store.inner, false) {
                break e;
            }
        };
        assert!(matches!(e, Error::MetadataFull(_)), "{e}");
        let slack = store.inner.space.band_count() as u64 * 8 * 4 + 100;
        assert!(store.metadata_room().used <= room.slot + slack, "{:?}", store.metadata_room());
        for loc in locs.drain(..10) {
            store.free(&loc, Durability::Sync).unwrap();
        }
        assert_eq!(store.inner.space.record_bytes(), records_of(&store));
        crate::persist::checkpoint(&store.inner, false).unwrap();
        let again = store.put(b"fits again", &[7; 100], &PutOptions::new(Scheme::Replicate(2))).unwrap();
        let kept = store.shed_copies(&again, b"fits again", Durability::Sync).unwrap().expect("shed");
        assert_eq!(store.inner.space.record_bytes(), records_of(&store));
        let before = store.metadata_room();
        store.kill();
        let (store, _) = Store::open(devs(), &config()).unwrap();
        assert_eq!(store.metadata_room(), before);
        assert_eq!(store.read_all(&kept).unwrap(), vec![7; 100]);
    }
}
