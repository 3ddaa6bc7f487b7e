//! [`State`]: the metadata the cache's mutex guards, and the updates that span several parts of it.

use std::collections::HashMap;

use reo_store::Location;

use super::dedup_cache::{ContentRef, DedupState};
use super::objects::Objects;
use super::placement::placement_of;
use crate::admission::Admitter;
use crate::hash::KeyBuildHasher;
use crate::index::frag_key;
use crate::policy::{Key, Policy};
use crate::stats::CacheStats;

/// Metadata guarded by the cache's mutex.
pub(crate) struct State {
    pub objects: Objects,
    pub policy: Box<dyn Policy>,
    pub admitter: Admitter,
    pub stats: CacheStats,
    /// Scratch buffer for evicted keys.
    pub evicted: Vec<Key>,
    /// Dedup of clean fragments, when configured.
    pub dedup: Option<DedupState>,
    /// Hot threshold: clean objects with H = Freq / Size ≥ this are hot (∞: none).
    pub h_hot: f64,
    /// Requests since H_hot was last computed.
    pub since_recompute: u64,
    /// Where the re-encoder resumes (a slot number, wrapping).
    pub reencode_cursor: u64,
    /// Failed devices at the last sweep (a change triggers one; recovery sense codes).
    pub failed_seen: usize,
    /// Redundancy bytes the budget allows, and those in use (for sense code 0x67).
    pub redundancy_over_budget: bool,
    /// Invalidation epoch: bumped by every write or delete.
    pub epoch: u64,
    /// Key hash → epoch of its latest invalidation, for recent ones; fills whose token is older
    /// than `epoch_floor` are refused outright (the map was reset since).
    pub invalidated: HashMap<u64, u64, KeyBuildHasher>,
    pub epoch_floor: u64,
    /// Blobs the cleaner met that the index did not know and freed (under this lock): a writer
    /// whose blobs were put with the lock dropped compares this with the value it saw before its
    /// puts, and only if it moved checks that its blobs are still live before installing them.
    pub orphans_freed: u64,
    /// Streamed writes in progress (write id → location of each fragment after the first; `None`
    /// once lost): blobs the index does not know yet that the cleaner must keep
    /// ([`crate::StreamedPut`]).
    pub staged: HashMap<u64, Vec<Option<Location>>>,
}

/// Invalidations remembered before the map is reset (≈ 1.5 MiB).
const INVALIDATIONS_KEPT: usize = 65_536;

impl State {
    /// Records that `key` changed (a write or delete): fills fetched before now are stale.
    pub fn invalidate(&mut self, key: &[u8]) {
        self.epoch += 1;
        if self.invalidated.len() >= INVALIDATIONS_KEPT {
            self.invalidated.clear();
            self.epoch_floor = self.epoch;
        }
        self.invalidated.insert(placement_of(key), self.epoch);
    }

    /// Was `key` (possibly) invalidated after `token` was taken?
    pub fn invalidated_since(&self, key: &[u8], token: u64) -> bool {
        token < self.epoch_floor || self.invalidated.get(&placement_of(key)).is_some_and(|&e| e > token)
    }
}

impl State {
    /// Looks `addr` up in the dedup cache (a read: updates its recency). `None`: a miss.
    pub fn dedup_lookup(&mut self, addr: Key) -> Option<ContentRef> {
        self.dedup.as_mut()?.lookup(addr)
    }

    /// Forgets `addr` in the dedup cache.
    pub fn dedup_forget(&mut self, addr: Key) {
        if let Some(d) = self.dedup.as_mut() {
            d.forget(addr);
        }
    }

    /// Removes fragment `frag` of `slot` from the policy and the index (not from the store); removes
    /// the object entry when nothing of it is left and it is not dirty.
    pub fn forget_fragment(&mut self, slot: u32, frag: u32) {
        self.policy.remove(frag_key(slot, frag));
        self.objects.set_location(slot, frag, None);
        self.drop_entry_if_empty(slot);
    }

    /// Removes the entry of `slot` if it holds no blob and is neither dirty nor pinned.
    ///
    /// With dedup on, clean fragments live in the dedup cache, not in the entry: the entry stays (its
    /// size says how to address them) until the object is deleted or a read finds nothing of it.
    pub fn drop_entry_if_empty(&mut self, slot: u32) {
        if self.dedup.is_some() {
            return;
        }
        self.objects.remove_if_empty(slot);
    }
}
