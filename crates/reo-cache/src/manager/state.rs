//! [`State`]: the metadata the cache's mutex guards, and the updates that span several parts of it.

use reo_store::Location;

use super::classes::Classes;
use super::counters::Counters;
use super::dedup_cache::{ContentRef, DedupCache};
use super::inflight::InFlight;
use super::invalidation::Invalidations;
use super::memory::MemoryTier;
use super::objects::{frag_count, Objects};
use super::placement::placement_of;
use super::recovery::Recovery;
use super::replacement::Replacement;
use crate::admission::Admitter;
use crate::config::{CacheConfig, EvictionMode};
use crate::index::{frag_key, split_key};
use crate::policy::{new_policy, InsertError, Key};

/// The blobs of evicted fragments, to free after unlocking: one or two inline (a fill of equal-sized
/// objects evicts about one), so the usual fill allocates nothing for them.
pub(crate) type Freed = smallvec::SmallVec<[Location; 2]>;

/// Metadata guarded by the cache's mutex: the manager's components (see the module doc of
/// `manager`), each of which keeps its own data private.
pub(crate) struct State {
    pub(super) objects: Objects,
    pub(super) policy: Replacement,
    pub(super) admitter: Admitter,
    pub(super) stats: Counters,
    /// Dedup of clean fragments, when configured.
    pub(super) dedup: Option<DedupCache>,
    pub(super) classes: Classes,
    pub(super) recovery: Recovery,
    pub(super) invalidations: Invalidations,
    pub(super) inflight: InFlight,
    /// The DRAM tier: copies of objects flash holds (see `memory.rs`; dropped here whenever
    /// their object changes or leaves).
    pub(super) memory: MemoryTier,
}

impl State {
    /// The empty metadata of a cache configured by `cfg` (already validated).
    pub fn new(cfg: &CacheConfig) -> State {
        let capacity = match cfg.eviction {
            EvictionMode::CacheBased => cfg.capacity_bytes,
            // The policy only ranks; the flash's size bounds the cache.
            EvictionMode::GcBased => u64::MAX >> 17,
        };
        State {
            objects: Objects::default(),
            policy: Replacement::new(new_policy(cfg.policy, capacity)),
            admitter: {
                // Touch counts and watch entries are per fragment: a segment spanning several
                // fragments would count a scan's next fragment as a second touch.
                let mut a = cfg.admission.clone();
                a.tc.segment_len = a.tc.segment_len.min(cfg.fragment_size);
                a.watchlist.fragment_len = cfg.fragment_size;
                a.build()
            },
            stats: Counters::default(),
            dedup: DedupCache::new(cfg.dedup, cfg.meta_entries(), cfg.capacity_bytes),
            classes: Classes::default(),
            recovery: Recovery::default(),
            invalidations: Invalidations::default(),
            inflight: InFlight::default(),
            // With dedup, clean fragments live in the dedup cache and leave it on its own terms:
            // a copy would no longer be inclusive of flash.
            memory: MemoryTier::new(if cfg.dedup == crate::dedup::DedupKind::Off { cfg.memory_bytes } else { 0 }),
        }
    }

    /// Records that `key` changed (a write or a delete): fills fetched before now are stale, and
    /// its copy in memory goes.
    #[inline]
    pub fn invalidate(&mut self, key: &[u8]) {
        self.invalidations.invalidate(key);
        if let Some(slot) = self.objects.find(key) {
            self.memory.remove(slot);
        }
    }

    /// Looks `addr` up in the dedup cache (a read: updates its recency). `None`: a miss.
    #[inline]
    pub fn dedup_lookup(&mut self, addr: Key) -> Option<ContentRef> {
        self.dedup.as_mut()?.lookup(addr)
    }

    /// Forgets `addr` in the dedup cache.
    #[inline]
    pub fn dedup_forget(&mut self, addr: Key) {
        if let Some(d) = self.dedup.as_mut() {
            d.forget(addr);
        }
    }

    /// Removes fragment `frag` of `slot` from the policy and the index (not from the store); removes
    /// the object entry when nothing of it is left and it is not dirty.
    #[inline]
    pub fn forget_fragment(&mut self, slot: u32, frag: u32) {
        self.memory.remove(slot);
        self.policy.remove(slot, frag);
        self.objects.set_location(slot, frag, None);
        self.drop_entry_if_empty(slot);
    }

    /// Removes the entry of `slot` if it holds no blob and is neither dirty nor pinned.
    ///
    /// With dedup on, clean fragments live in the dedup cache, not in the entry: the entry stays (its
    /// size says how to address them) until the object is deleted or a read finds nothing of it.
    #[inline]
    pub fn drop_entry_if_empty(&mut self, slot: u32) {
        if self.dedup.is_some() {
            return;
        }
        self.objects.remove_if_empty(slot);
    }

    /// Unlinks the fragments the policy evicted; returns their blobs (to free after unlocking).
    pub fn apply_evictions(&mut self, keys: &[Key], frag_size: u64) -> Freed {
        let mut locs = Freed::with_capacity(keys.len());
        for &k in keys {
            let (slot, frag) = split_key(k);
            self.memory.remove(slot);
            // A ghost keeps the fragment's lasting name: the slot goes to another object once
            // this one has left.
            if let Some(g) = self.objects.ghost_key(slot, frag) {
                self.policy.rename_ghost(k, g);
            }
            if let Some(e) = self.objects.get(slot) {
                // Utility of the evicted: its reads since it entered the cache.
                let (id, freq) = (placement_of(e.key()), f64::from(e.freq()));
                let now = self.objects.now();
                self.admitter.on_evict(id, freq, now);
            }
            if let Some(l) = self.objects.location(slot, frag, frag_size) {
                locs.push(l);
            }
            self.objects.set_location(slot, frag, None);
            self.drop_entry_if_empty(slot);
            self.stats.evicted(1);
        }
        locs
    }

    /// Inserts fragment `frag` of `slot` into the policy; returns the blobs of evicted fragments
    /// (to free), or on failure those plus nothing inserted.
    pub fn policy_insert(&mut self, slot: u32, frag: u32, len: u64, frag_size: u64) -> Result<Freed, Freed> {
        // The fragment's ghost (filed under its lasting name when it was evicted) comes back under
        // the slot's key, so the policy sees the ghost hit (ARC's adaptation, S3-FIFO's
        // ghost-to-main).
        let ghost = self.objects.ghost_key(slot, frag);
        if let Some(g) = ghost {
            self.policy.rename_ghost(g, frag_key(slot, frag));
        }
        let State { objects, policy, .. } = self;
        let (r, keys) = policy.insert(slot, frag, len, &mut |k| objects.evictable(k));
        let locs = self.apply_evictions(&keys, frag_size);
        self.policy.recycle(keys);
        if let (Err(_), Some(g)) = (r, ghost) {
            // Not inserted (a ghost hit the policy did not consume stays a ghost, by name).
            self.policy.rename_ghost(frag_key(slot, frag), g);
        }
        match r {
            Ok(()) => Ok(locs),
            Err(InsertError::TooLarge) | Err(InsertError::Full) => Err(locs),
        }
    }

    /// Evicts the policy's next victim that is neither dirty nor leased (its blobs are unlinked by
    /// [`State::apply_evictions`]).
    #[inline]
    pub fn evict_one(&mut self) -> Option<Key> {
        let State { objects, policy, .. } = self;
        policy.evict_one(&mut |k| objects.evictable(k))
    }

    /// Removes every fragment of `slot` from the policy and the object from the index; returns the
    /// blobs to free.
    pub fn forget_object(&mut self, slot: u32, fs: u64) -> Vec<Location> {
        let size = self.objects.get(slot).map_or(0, |e| e.size());
        self.memory.remove(slot);
        let mut locs = Vec::new();
        for f in 0..frag_count(size, fs) as u32 {
            self.policy.remove(slot, f);
            self.dedup_forget(frag_key(slot, f));
            if let Some(l) = self.objects.location(slot, f, fs) {
                locs.push(l);
            }
            self.objects.set_location(slot, f, None);
        }
        self.objects.remove(slot);
        locs
    }
}
