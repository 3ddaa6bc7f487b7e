//! Freeing flash: the replacement policy's evictions (cache-based eviction, and when the store's
//! metadata room runs out), and the store cleaner's handler, which relocates, re-encodes or
//! drops each live blob of the victim band (GC-based eviction drops the clean blobs nobody read
//! since they were written or last moved).

use std::collections::HashMap;

use reo_store::{Durability, Error as StoreError, GcDecision, GcHandler, Location};

use super::cache::{free_all, Cache};
use super::state::State;
use crate::config::EvictionMode;
use crate::header::BlobHeader;

/// Most objects one put evicts for metadata room (a 64th of a 1 GiB slot is about 100,000 small
/// objects' records; the next puts evict the rest).
const METADATA_EVICTIONS: usize = 4096;

impl Cache {
    /// Makes room after the store said it is full: clean bands until one more is free; failing
    /// that (cache-based), evict about a zone's worth of the policy's victims so the next cleaning
    /// finds dead space. False when nothing can be freed (all dirty or pinned).
    pub(crate) fn make_room(&self) -> bool {
        let before = self.store.free_bands();
        for _ in 0..4 {
            if !self.clean_once() {
                break;
            }
            if self.store.free_bands() > before {
                return true;
            }
        }
        if self.cfg.eviction == EvictionMode::GcBased {
            // Referenced blobs lost their bit as they moved: the next passes can drop them.
            return self.store.free_bands() > before;
        }
        let target = self.store.layout().zone;
        let mut freed = 0;
        while freed < target {
            let locs = {
                let mut s = self.lock();
                let Some(k) = s.evict_one() else { break };
                s.apply_evictions(&[k], self.cfg.fragment_size)
            };
            freed += locs.iter().map(|l| l.len.max(1)).sum::<u64>();
            free_all(&self.store, &locs, Durability::None);
        }
        freed > 0
    }

    /// Makes metadata room when a put's record of `record` bytes would not fit the store's (its
    /// checkpoint slot holds a record per live blob, whatever the flash's free space): evicts the
    /// policy's victims until a 64th of the slot (or the record, if larger) is free, so that a
    /// cache kept full of small objects evicts in batches rather than on every put, and at most
    /// [`METADATA_EVICTIONS`] of them, so that one put does not carry a huge slot's batch.
    /// Stops early when nothing more can be evicted (all dirty, leased or being written).
    pub(crate) fn make_metadata_room(&self, record: u64) {
        let target = (self.store.metadata_room().slot / 64).max(record);
        for _ in 0..METADATA_EVICTIONS {
            if self.store.metadata_room().free() >= target {
                break;
            }
            let locs = {
                let mut s = self.lock();
                let Some(k) = s.evict_one() else { break };
                s.apply_evictions(&[k], self.cfg.fragment_size)
            };
            free_all(&self.store, &locs, Durability::None);
        }
    }

    /// Housekeeping, called periodically (and by tests after writes): sweeps after device
    /// failures, runs the cleaner while fewer than `gc_free_bands` bands are free (a bounded number
    /// of passes), and lets the re-encoder move up to `reencode_per_maintain` bytes.
    pub fn maintain(&self) {
        // A device failed since the last look (by command elsewhere, or ejected by the store on
        // I/O errors): drop what it took.
        let failed = self.store.failed_devices();
        if self.lock().recovery.sweep_due(&failed) {
            self.sweep_lost();
        }
        for _ in 0..8 {
            if self.store.free_bands() >= self.cfg.gc_free_bands || !self.clean_once() {
                break;
            }
        }
        if self.cfg.reencode_per_maintain > 0 {
            self.reencode_step(self.cfg.reencode_per_maintain);
        }
    }

    /// Runs one cleaner pass now (victim by the configured policy, the cache deciding per blob);
    /// true if it cleaned a band. For operators and tests; `maintain` calls it when space is low.
    pub fn clean_once(&self) -> bool {
        let mut h = Cleaner { cache: self, moving: HashMap::new() };
        matches!(self.store.gc(self.cfg.gc_victim, &mut h), Ok(Some(r)) if r.reclaimed_device_bytes > 0 || r.dropped > 0 || r.relocated > 0)
    }
}

/// A blob the index does not point at: a leftover (of a crash, or of a write that lost a race),
/// or the blob of a write still on its way to being installed, which the cache cannot tell apart.
/// Freed here, under the lock, and counted in `orphans_freed`: a writer installing under the same
/// lock then either finds its blob gone (and writes again) or installs it before the cleaner looks,
/// which then keeps it. Freed by the store after `decide` instead, a writer could install its
/// blob between the decision and the free, and the index would point at freed space (a dirty
/// write's only copy lost).
fn orphan(c: &Cache, s: &mut State, loc: &Location) -> GcDecision {
    // Lock order: the cache's state, then the store's gate, band and journal queue (never held
    // while calling into the cache). No durability wait under the lock.
    if c.store.free(loc, Durability::None).is_ok() {
        s.inflight.orphan_freed();
    }
    GcDecision::Drop
}

impl Cache {
    /// Were any of `locs`, put after the writer saw `seen` in `orphans_freed`, freed by the
    /// cleaner as orphans? Costs nothing unless the cleaner freed an orphan meanwhile.
    pub(crate) fn lost_to_cleaner(&self, s: &State, seen: u64, locs: &[Location]) -> bool {
        s.inflight.orphans_freed() != seen && !locs.iter().all(|l| self.store.contains(l))
    }
}

/// A blob the cleaner asked about.
enum Moving {
    /// Fragment of the object in slot.
    Fragment(u32, u32),
    /// Dedup content blob with this fingerprint.
    Content(Vec<u8>),
    /// Fragment of a streamed write in progress (write id, fragment, object key).
    Staged(u64, u32, Vec<u8>),
}

/// The cache's say in cleaning one band.
struct Cleaner<'a> {
    cache: &'a Cache,
    /// Blob sequence → what the blob is, for the blobs decided in this pass.
    moving: HashMap<u64, Moving>,
}

impl GcHandler for Cleaner<'_> {
    fn decide(&mut self, loc: &Location, header: &[u8]) -> GcDecision {
        let c = self.cache;
        let Some(h) = BlobHeader::decode(header) else { return GcDecision::Drop };
        let mut s = c.lock();
        if h.kind == crate::header::BlobKind::Content {
            if s.dedup.as_ref().and_then(|d| d.content(&h.key)) != Some(*loc) {
                return orphan(c, &mut s, loc);
            }
            self.moving.insert(loc.seq, Moving::Content(h.key));
            return GcDecision::Relocate;
        }
        if h.write != 0 && s.inflight.holds(h.write, h.fragment, loc) {
            // Not indexed yet, but its writer will install it: moved, never dropped.
            self.moving.insert(loc.seq, Moving::Staged(h.write, h.fragment, h.key));
            return GcDecision::Relocate;
        }
        let Some(slot) = s.objects.find(&h.key) else { return orphan(c, &mut s, loc) };
        if s.objects.location(slot, h.fragment, c.cfg.fragment_size).as_ref() != Some(loc) {
            return orphan(c, &mut s, loc);
        }
        let leased = s.objects.leased(slot);
        let e = s.objects.get_mut(slot).expect("found");
        let keep = match c.cfg.eviction {
            EvictionMode::CacheBased => true,
            EvictionMode::GcBased => e.dirty() || leased || e.referenced(),
        };
        self.moving.insert(loc.seq, Moving::Fragment(slot, h.fragment));
        if !keep {
            return GcDecision::Drop;
        }
        e.set_referenced(false);
        let target = c.classes.of(e.class());
        if target != loc.scheme {
            GcDecision::Reencode(target)
        } else {
            GcDecision::Relocate
        }
    }

    fn relocated(&mut self, old: &Location, new: &Location) {
        let c = self.cache;
        let (slot, frag) = match self.moving.get(&old.seq) {
            Some(Moving::Fragment(slot, frag)) => (*slot, *frag),
            Some(Moving::Content(fp)) => return self.cache.content_moved(fp, old, new),
            Some(Moving::Staged(write, frag, key)) => {
                let mut s = c.lock();
                if s.inflight.replace(*write, *frag, old, Some(*new)) {
                    s.stats.gc_write(new.len);
                    return;
                }
                // Installed meanwhile (the index points at the old copy: moved below like any
                // fragment), or abandoned (nobody points at either: the new copy is freed).
                (s.objects.find(key).unwrap_or(u32::MAX), *frag)
            }
            None => return,
        };
        let mut s = c.lock();
        s.stats.gc_write(new.len);
        if s.objects.location(slot, frag, c.cfg.fragment_size).as_ref() == Some(old) {
            s.objects.set_location(slot, frag, Some(new));
            return;
        }
        // The fragment was deleted, evicted or rewritten while being moved: nothing points at
        // the copy. Free it — durably if it holds dirty bytes, so a crash cannot resurrect them.
        drop(s);
        let dirty = c.store.header(new).and_then(|h| BlobHeader::decode(&h)).is_some_and(|h| h.dirty);
        free_all(&c.store, &[*new], if dirty { Durability::Sync } else { Durability::None });
    }

    fn dropped(&mut self, loc: &Location) {
        let Some(&Moving::Fragment(slot, frag)) = self.moving.get(&loc.seq) else { return };
        let c = self.cache;
        let mut s = c.lock();
        if s.objects.location(slot, frag, c.cfg.fragment_size).as_ref() == Some(loc) {
            s.forget_fragment(slot, frag);
            s.stats.gc_evicted();
        }
    }

    fn lost(&mut self, loc: &Location, err: &StoreError) {
        let c = self.cache;
        let (slot, frag) = match self.moving.get(&loc.seq) {
            Some(Moving::Fragment(slot, frag)) => (*slot, *frag),
            Some(Moving::Content(fp)) => return self.cache.content_lost(fp, loc),
            Some(Moving::Staged(write, frag, key)) => {
                // Its writer finds the fragment gone and refuses the write (nothing was
                // acknowledged); installed meanwhile, it is a lost fragment like any other.
                let mut s = c.lock();
                if s.inflight.replace(*write, *frag, loc, None) {
                    return;
                }
                (s.objects.find(key).unwrap_or(u32::MAX), *frag)
            }
            None => return,
        };
        let mut s = c.lock();
        if s.objects.location(slot, frag, c.cfg.fragment_size).as_ref() != Some(loc) {
            return;
        }
        let dirty = s.objects.get(slot).is_some_and(|e| e.dirty());
        if dirty {
            let key = String::from_utf8_lossy(s.objects.get(slot).expect("found").key()).into_owned();
            tracing::error!(key = %key, fragment = frag, error = %err, "DATA LOSS: dirty fragment unreadable while cleaning");
            s.stats.dirty_lost();
            // The entry stays dirty with the fragment missing: reads report the loss.
        }
        s.forget_fragment(slot, frag);
    }
}
