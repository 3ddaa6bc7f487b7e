//! [`State`]: the metadata the cache's mutex guards, and the updates that span several parts of it.

use std::collections::HashMap;

use reo_store::{Location, Scheme};

use super::dedup_cache::{ContentRef, DedupState};
use super::objects::frag_len;
use super::placement::placement_of;
use crate::admission::Admitter;
use crate::hash::KeyBuildHasher;
use crate::index::{frag_key, ObjectIndex};
use crate::object::{PackedLoc, SCHEME_CODES};
use crate::policy::{Key, Policy};
use crate::stats::CacheStats;

/// Scheme codes stored in packed locations (at most 32 distinct schemes at a time).
#[derive(Debug, Default)]
pub(crate) struct SchemeTable(Vec<Scheme>);

impl SchemeTable {
    pub fn code(&mut self, s: Scheme) -> u8 {
        if let Some(i) = self.0.iter().position(|&x| x == s) {
            return i as u8;
        }
        assert!(self.0.len() < SCHEME_CODES, "more than {SCHEME_CODES} distinct schemes in one cache");
        self.0.push(s);
        (self.0.len() - 1) as u8
    }

    pub fn get(&self, code: u8) -> Scheme {
        self.0[code as usize]
    }
}

/// Metadata guarded by the cache's mutex.
pub(crate) struct State {
    pub index: ObjectIndex,
    pub policy: Box<dyn Policy>,
    pub admitter: Admitter,
    /// Lease end (caller's clock, ns) of pinned objects, by slot.
    pub pins: HashMap<u32, u64, KeyBuildHasher>,
    pub schemes: SchemeTable,
    pub stats: CacheStats,
    /// The caller's clock at the latest request (leases expire against it).
    pub now: u64,
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

    /// May the fragment key be evicted? Not while its object is dirty or pinned by a live lease.
    pub fn evictable(index: &ObjectIndex, pins: &HashMap<u32, u64, KeyBuildHasher>, now: u64, key: Key) -> bool {
        let (slot, _) = crate::index::split_key(key);
        match index.get(slot) {
            Some(e) => !(e.dirty() || (e.pinned() && pins.get(&slot).is_some_and(|&until| until > now))),
            None => true,
        }
    }

    /// The store location of fragment `frag` of the object in `slot`, if cached.
    pub fn location(&self, slot: u32, frag: u32, frag_size: u64) -> Option<Location> {
        let e = self.index.get(slot)?;
        let packed = if e.fragmented() { self.index.frag(frag_key(slot, frag))? } else { e.blob()? };
        let len = frag_len(e.size(), frag, frag_size);
        Some(packed.unpack(self.schemes.get(packed.scheme_code()), len))
    }

    /// Records `loc` as fragment `frag` of `slot`; returns the location it replaces.
    pub fn set_location(&mut self, slot: u32, frag: u32, loc: Option<&Location>) -> Option<PackedLoc> {
        let packed = loc.map(|l| {
            let code = self.schemes.code(l.scheme);
            PackedLoc::pack(l, code).expect("layout checked at open")
        });
        let e = self.index.get_mut(slot)?;
        if e.fragmented() {
            self.index.set_frag(frag_key(slot, frag), packed)
        } else {
            let old = e.blob();
            e.set_blob(packed);
            old
        }
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
        self.set_location(slot, frag, None);
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
        let Some(e) = self.index.get(slot) else { return };
        let empty = if e.fragmented() { self.index.cached_fragments(slot) == 0 } else { e.blob().is_none() };
        let leased = e.pinned() && self.pins.get(&slot).is_some_and(|&until| until > self.now);
        if empty && !e.dirty() && !leased {
            self.index.remove(slot);
            self.pins.remove(&slot);
        }
    }
}
