//! Classes in motion (the Reo paper §IV.C.1, docs/REFERENCES.md §P1): the adaptive hot threshold
//! H_hot under the redundancy budget, the class each object should have, the background re-encoder
//! that moves blobs whose class changed, and the space efficiency the redundancy costs.
//!
//! **H_hot.** Clean objects are sorted by H = Freq / Size, descending, and added to the hot class
//! one by one while the redundancy they would cost in the hot scheme (size × parity / data) fits
//! the budget: `budget × capacity` minus what dirty data's replicas already take. The H of the last
//! object that fits is H_hot; an object with H ≥ H_hot is hot. Objects not read since they were
//! cached have H = 0 and come last, as in the paper's greedy, which adds objects until the
//! budget is spent: if every clean object fits, all are hot, new fills included (the budget
//! is spent, not held back while few objects have been read twice); if the budget runs out
//! among them, the objects read are hot and the unread ones cold (H cannot tell them apart);
//! if no object read fits, H_hot = ∞. Recomputed every `hot_recompute_every` requests and on demand.
//!
//! **Moving.** A class change only updates the entry; its blobs follow lazily — when the cleaner
//! meets them (a `Reencode`) or when [`Cache::reencode_step`] (the rate-limited re-encoder)
//! rewrites them.

use reo_store::{Durability, Scheme};

use super::cache::free_all;
use super::cache::Cache;
use super::objects::frag_count;
use super::placement::placement_of;
use super::state::State;
use crate::header::BlobHeader;
use crate::object::Class;

/// Device bytes of redundancy per user byte in `scheme` (copies and parity; no padding).
pub(crate) fn overhead(scheme: Scheme) -> f64 {
    match scheme {
        Scheme::Replicate(r) => f64::from(r) - 1.0,
        Scheme::Rs { k, p } => f64::from(p) / f64::from(k),
        Scheme::None(_) => 0.0,
    }
}

/// Index slots the re-encoder looks at per call at most.
const MAX_SCAN: usize = 16_384;

impl Cache {
    /// Recomputes H_hot now and reclassifies every clean object; returns H_hot (∞: nothing is hot).
    /// Without a hot budget (uniform baselines) every clean object stays cold.
    pub fn recompute_hot_threshold(&self) -> f64 {
        let mut s = self.lock();
        recompute(self, &mut s)
    }

    /// Counts a request and recomputes H_hot when it is due.
    pub(crate) fn tick_classes(&self, s: &mut State) {
        if s.classes.tick(self.cfg.hot_recompute_every) {
            recompute(self, s);
        }
    }

    /// The current hot threshold.
    pub fn hot_threshold(&self) -> f64 {
        self.lock().classes.h_hot()
    }

    /// Objects in the index and their sizes, by the class each has now (index order: class code).
    /// One pass over the index under the cache's lock: for scrapes and status pages, not for the
    /// request path.
    pub fn class_occupancy(&self) -> [(u64, u64); 4] {
        let s = self.lock();
        let mut out = [(0u64, 0u64); 4];
        for (_, e) in s.objects.iter() {
            let c = &mut out[s.classes.class_of(e) as usize];
            c.0 += 1;
            c.1 += e.size();
        }
        out
    }

    /// User bytes cached / device bytes they occupy with their redundancy (1.0 = no redundancy;
    /// 0.25 = four copies). From the store's live space, so it covers every blob the cache holds.
    pub fn space_efficiency(&self) -> f64 {
        let sp = self.store.space();
        let user: u64 = sp.per_scheme.iter().map(|(_, x)| x.live_bytes).sum();
        let dev: u64 = sp.per_scheme.iter().map(|(_, x)| x.live_device_bytes).sum();
        if dev == 0 {
            1.0
        } else {
            user as f64 / dev as f64
        }
    }

    /// The re-encoder: rewrites up to about `max_bytes` of clean blobs whose scheme is not their
    /// class's any more (hot ↔ cold), resuming where the previous call stopped. Returns the bytes
    /// moved. Callers pace it (bytes per second) so it shares the devices with traffic.
    pub fn reencode_step(&self, max_bytes: u64) -> u64 {
        let fs = self.cfg.fragment_size;
        if self.classes.of(Class::Hot) == self.classes.of(Class::Cold) {
            // Clean data has one scheme whatever its class: nothing is ever misplaced.
            return 0;
        }
        // A scheme that tolerates fewer failures than there are now cannot take the blob (a fill
        // fell back to one surviving device for that reason): leave it until a replacement.
        let failed = self.store.failed_devices().len();
        let writable = |scheme: Scheme| failed <= scheme.tolerance() || scheme.is_isolated();
        let mut moved = 0;
        let mut visited = 0usize;
        let mut attempts = 0usize;
        while moved < max_bytes && attempts < 1_000_000 {
            // Find the next misplaced fragment from the cursor.
            let job = {
                let mut s = self.lock();
                let total = s.objects.slot_count();
                let mut found = None;
                // A bounded share of the index per call: a large cache with nothing misplaced
                // must not cost a full scan on every `maintain`.
                while found.is_none() && visited < total.min(MAX_SCAN) && !s.classes.reencoder_idle(total) {
                    let slot = s.classes.next_reencode_slot(total);
                    visited += 1;
                    let Some(e) = s.objects.get(slot) else {
                        s.classes.reencode_seen(true);
                        continue;
                    };
                    if e.dirty() {
                        // Dirty data moves when it is flushed (mark_clean wakes the re-encoder).
                        s.classes.reencode_seen(true);
                        continue;
                    }
                    let target = self.classes.of(e.class());
                    let n = frag_count(e.size(), fs) as u32;
                    found = (0..n)
                        .filter_map(|f| s.objects.location(slot, f, fs).map(|l| (f, l)))
                        .find(|(_, l)| l.scheme != target && writable(target))
                        .map(|(f, l)| (slot, f, l, target, e.class(), s.inflight.orphans_freed()));
                    s.classes.reencode_seen(found.is_none());
                    if found.is_some() {
                        // Come back to this object for its other fragments.
                        s.classes.revisit_reencode_slot();
                        visited -= 1;
                    }
                }
                found
            };
            let Some((slot, frag, old, target, class, seen)) = job else { break };
            let moved_one = (|| {
                let data = self.store.read_all(&old).ok()?;
                let mut h = BlobHeader::decode(&self.store.header(&old)?)?;
                h.class = class;
                self.put_blob(&h.encode(), &data, target, false, placement_of(&h.key)).ok()
            })();
            attempts += 1;
            let Some(new) = moved_one else {
                // Unreadable or gone: skip it this round.
                let mut s = self.lock();
                s.classes.skip_reencode_slot();
                visited += 1;
                continue;
            };
            let mut s = self.lock();
            if s.objects.location(slot, frag, fs).as_ref() == Some(&old) && !self.lost_to_cleaner(&s, seen, &[new]) {
                s.objects.set_location(slot, frag, Some(&new));
                s.stats.gc_write(new.len);
                s.stats.reencoded(new.len);
                drop(s);
                free_all(&self.store, &[old], Durability::None);
                moved += new.len;
            } else {
                s.stats.wasted(new.len);
                drop(s);
                free_all(&self.store, &[new], Durability::None);
            }
        }
        moved
    }
}

/// H_hot over the current index; reclassifies clean entries.
fn recompute(c: &Cache, s: &mut State) -> f64 {
    s.classes.recomputing();
    s.classes.wake_reencoder();
    let Some(budget) = c.cfg.redundancy.hot_budget() else {
        s.classes.set_h_hot(f64::INFINITY, false, 0.0, 0.0);
        return f64::INFINITY;
    };
    let capacity = c.cfg.capacity_bytes as f64;
    let mut clean: Vec<(f64, u64)> = Vec::new();
    let mut dirty_bytes = 0u64;
    for (_, e) in s.objects.iter() {
        if e.dirty() {
            dirty_bytes += e.size();
        } else if !e.explicit_class() {
            clean.push((e.hotness(), e.size()));
        }
    }
    let dirty_cost = dirty_bytes as f64 * overhead(c.classes.of(Class::Dirty));
    let mut room = budget * capacity - dirty_cost;
    s.classes.set_over_budget(room < 0.0);
    let per_byte = overhead(c.classes.of(Class::Hot));
    clean.sort_unstable_by(|a, b| b.0.total_cmp(&a.0));
    // The H of the last object read that fits (∞ until one does); whether all fit.
    let mut h_hot = f64::INFINITY;
    // Dirty redundancy alone over the budget: nothing fits, not even with no clean object.
    let mut all_fit = room >= 0.0;
    for (h, size) in clean {
        let cost = size as f64 * per_byte;
        if cost > room {
            all_fit = false;
            break;
        }
        room -= cost;
        if h > 0.0 {
            h_hot = h;
        }
    }
    if all_fit {
        // Every clean object is hot, and so are objects cached before the next recompute while
        // the room left lasts.
        h_hot = 0.0;
    }
    s.classes.set_h_hot(h_hot, all_fit, room.max(0.0), per_byte);
    let slots: Vec<u32> = s.objects.iter().map(|(slot, _)| slot).collect();
    for slot in slots {
        let e = s.objects.get(slot).expect("listed");
        let want = s.classes.class_of(e);
        if want != e.class() {
            s.objects.get_mut(slot).expect("listed").set_class(want);
            s.stats.class_changed();
        }
    }
    h_hot
}
