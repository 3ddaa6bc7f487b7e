//! [`Cache`]: the cache manager — object index, replacement, admission, classes and accounting
//! over the flash array store.
//!
//! Locking: one mutex guards the metadata ([`State`]: index, policy, pins, counters); it is held
//! for lookups and updates only, never during device I/O. A read copies the blob locations under
//! the lock and reads the store after releasing it; if the blob is evicted or relocated meanwhile
//! the store answers `NotFound` and that fragment is reported as a miss. A write puts its blob
//! first and installs it under the lock; whichever install loses a race frees its own blob, and
//! a blob the cleaner freed as an orphan before its install (`orphans_freed`) is written again.
//!
//! Lock order: the store's cleaner lock (the cleaner calls [`GcHandler`](reo_store::GcHandler)
//! with it held) → this mutex → the store's metadata locks (gate, bands, journal queue, resync
//! state). Under the mutex the cache only calls store functions that take those (`free` without
//! a durability wait, `header`, `contains`, `health`, `failed_devices`, `rebuild_progress`);
//! never `put`, `read`, `gc`, `scrub`, `replace_device` or a `Sync` free, which do I/O, wait, or
//! take the cleaner's lock.
//!
//! Files: `read.rs` (get), `write.rs` (fill, put, mark clean, delete), `streamed.rs` (a put whose
//! body arrives in pieces), `evict.rs` (freeing space:
//! policy evictions, the cleaner's handler for both eviction modes), `restart.rs` (rebuilding the
//! index from the store after a restart).

mod classify;
mod control;
mod dedup;
mod evict;
mod health;
mod history;
mod read;
mod rebuild;
mod restart;
mod streamed;
mod write;

use std::collections::HashMap;
use std::sync::Arc;

use parking_lot::{Mutex, MutexGuard};
use reo_store::{Location, Scheme, Store};

use crate::admission::Admitter;
use crate::config::{CacheConfig, EvictionMode};
use crate::hash::KeyBuildHasher;
use crate::index::{frag_key, ObjectIndex};
use crate::object::{Class, ObjectEntry, PackedLoc, MAX_BAND, MAX_START, SCHEME_CODES};
use crate::policy::{new_policy, Key, Policy};
use crate::redundancy::ClassSchemes;
use crate::stats::CacheStats;

pub use control::{ControlReply, MAX_CONTROL_MESSAGE};
pub use health::{Access, ObjectStatus, SenseCode, SweepReport};
pub use history::AccessHistory;
pub use read::{GetResult, Piece, Pieces};
pub use streamed::StreamedPut;
pub use write::{object_version, FillOutcome, ObjectMeta, PutReceipt, WriteError, MAX_KEY_LEN};

/// The state of one object, for queries (seed 000's per-object status, SDCC's query API).
#[derive(Debug, Clone, PartialEq)]
pub struct ObjectInfo {
    pub size: u64,
    pub class: Class,
    pub dirty: bool,
    pub pinned: bool,
    /// Reads since the object entered the cache.
    pub freq: u32,
    /// H = Freq / Size.
    pub hotness: f64,
    pub fragments: u64,
    /// Fragments on flash, and the schemes that hold them.
    pub cached_fragments: u64,
    pub schemes: Vec<Scheme>,
}

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
    pub dedup: Option<dedup::DedupState>,
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
        self.invalidated.insert(write::placement_of(key), self.epoch);
    }

    /// Was `key` (possibly) invalidated after `token` was taken?
    pub fn invalidated_since(&self, key: &[u8], token: u64) -> bool {
        token < self.epoch_floor || self.invalidated.get(&write::placement_of(key)).is_some_and(|&e| e > token)
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

/// Bytes of fragment `frag` of an object of `size` bytes.
pub(crate) fn frag_len(size: u64, frag: u32, frag_size: u64) -> u64 {
    size.saturating_sub(u64::from(frag) * frag_size).min(frag_size)
}

/// Number of fragments of an object of `size` bytes (an empty object has one, empty, fragment).
pub(crate) fn frag_count(size: u64, frag_size: u64) -> u64 {
    size.div_ceil(frag_size).max(1)
}

/// The cache manager. Share it through an `Arc`.
pub struct Cache {
    pub(crate) store: Arc<Store>,
    pub(crate) cfg: CacheConfig,
    pub(crate) classes: ClassSchemes,
    pub(crate) state: Mutex<State>,
}

impl Cache {
    /// A cache over `store`, its index rebuilt from the blobs the store holds (a warm restart; an
    /// empty store gives an empty cache).
    pub fn open(store: Arc<Store>, cfg: CacheConfig) -> Result<Cache, String> {
        let n = store.layout().devices as usize;
        cfg.validate(n)?;
        let layout = store.layout();
        if layout.zones as u64 > u64::from(MAX_BAND) + 1 || layout.zone / 4096 > u64::from(MAX_START) + 1 {
            return Err(format!(
                "store layout ({} zones of {} bytes) exceeds the cache index's limits ({} zones of {} GiB)",
                layout.zones,
                layout.zone,
                MAX_BAND as u64 + 1,
                ((MAX_START as u64 + 1) * 4096) >> 30
            ));
        }
        let classes = cfg.class_schemes.unwrap_or_else(|| cfg.redundancy.class_schemes(n));
        let capacity = match cfg.eviction {
            EvictionMode::CacheBased => cfg.capacity_bytes,
            // The policy only ranks; the flash's size bounds the cache.
            EvictionMode::GcBased => u64::MAX >> 17,
        };
        let state = State {
            index: ObjectIndex::new(),
            policy: new_policy(cfg.policy, capacity),
            admitter: {
                // Touch counts and watch entries are per fragment: a segment spanning several
                // fragments would count a scan's next fragment as a second touch.
                let mut a = cfg.admission.clone();
                a.tc.segment_len = a.tc.segment_len.min(cfg.fragment_size);
                a.watchlist.fragment_len = cfg.fragment_size;
                a.build()
            },
            pins: HashMap::default(),
            schemes: SchemeTable::default(),
            stats: CacheStats::default(),
            now: 0,
            evicted: Vec::new(),
            dedup: dedup::DedupState::new(cfg.dedup, cfg.meta_entries(), cfg.capacity_bytes),
            h_hot: f64::INFINITY,
            since_recompute: 0,
            reencode_cursor: 0,
            failed_seen: 0,
            redundancy_over_budget: false,
            epoch: 0,
            invalidated: HashMap::default(),
            epoch_floor: 0,
            orphans_freed: 0,
            staged: HashMap::new(),
        };
        let cache = Cache { store, cfg, classes, state: Mutex::new(state) };
        cache.rebuild_from_store()?;
        Ok(cache)
    }

    pub(crate) fn lock(&self) -> MutexGuard<'_, State> {
        self.state.lock()
    }

    pub fn config(&self) -> &CacheConfig {
        &self.cfg
    }

    pub fn store(&self) -> &Arc<Store> {
        &self.store
    }

    pub fn class_schemes(&self) -> ClassSchemes {
        self.classes
    }

    /// Counters since open.
    pub fn stats(&self) -> CacheStats {
        let s = self.lock();
        let mut st = s.stats.clone();
        st.admission = *s.admitter.stats();
        drop(s);
        let store = self.store.stats();
        st.device_write_bytes = store.put_device_bytes + store.gc_device_bytes;
        st
    }

    /// A token for [`Cache::fill`] taken before fetching from the backend (what `get` returns).
    pub fn token(&self) -> u64 {
        self.lock().epoch
    }

    /// Objects in the index, user bytes the policy holds.
    pub fn occupancy(&self) -> (usize, u64) {
        let s = self.lock();
        (s.index.len(), s.policy.used_bytes())
    }

    /// Status of one object.
    pub fn info(&self, key: &[u8]) -> Option<ObjectInfo> {
        let s = self.lock();
        let slot = s.index.find(key)?;
        let e = s.index.get(slot)?;
        let fragments = frag_count(e.size(), self.cfg.fragment_size);
        let mut schemes = Vec::new();
        let mut cached = 0;
        for f in 0..fragments as u32 {
            let content = s.dedup.as_ref().and_then(|d| {
                let fp = d.policy.mapping(frag_key(slot, f))?;
                d.blobs.get(fp.as_bytes()).copied()
            });
            if let Some(l) = s.location(slot, f, self.cfg.fragment_size).or(content) {
                cached += 1;
                if !schemes.contains(&l.scheme) {
                    schemes.push(l.scheme);
                }
            }
        }
        Some(ObjectInfo {
            size: e.size(),
            class: e.class(),
            dirty: e.dirty(),
            pinned: e.pinned() && s.pins.get(&slot).is_some_and(|&u| u > s.now),
            freq: e.freq(),
            hotness: e.hotness(),
            fragments,
            cached_fragments: cached,
            schemes,
        })
    }

    /// Whether `key` was (possibly) written or deleted since `token` (the `token` of an
    /// earlier get) was taken: bytes read after it may be of another version.
    pub fn changed_since(&self, key: &[u8], token: u64) -> bool {
        self.lock().invalidated_since(key, token)
    }

    /// The metadata of a cached object (ETag, content type, mtime, user metadata), from its first
    /// fragment's blob header — no device I/O. `None` if that fragment is not on flash.
    pub fn meta(&self, key: &[u8]) -> Option<ObjectMeta> {
        let s = self.lock();
        let slot = s.index.find(key)?;
        let loc = s.location(slot, 0, self.cfg.fragment_size)?;
        drop(s);
        let h = crate::header::BlobHeader::decode(&self.store.header(&loc)?)?;
        Some(ObjectMeta {
            etag: h.etag,
            content_type: h.content_type,
            mtime_ns: h.mtime_ns,
            user: h.user,
            system: h.system,
        })
    }

    /// Pins `key` until `until_ns` on the caller's clock (a lease): it is not evicted before.
    /// Returns false if the object is not cached.
    pub fn pin(&self, key: &[u8], until_ns: u64) -> bool {
        let mut s = self.lock();
        let Some(slot) = s.index.find(key) else { return false };
        s.index.get_mut(slot).expect("found").set_pinned(true);
        s.pins.insert(slot, until_ns);
        true
    }

    /// Ends `key`'s lease.
    pub fn unpin(&self, key: &[u8]) {
        let mut s = self.lock();
        if let Some(slot) = s.index.find(key) {
            s.index.get_mut(slot).expect("found").set_pinned(false);
            s.pins.remove(&slot);
        }
    }

    /// Dirty objects (for the flusher): key and the version to pass to [`Cache::mark_clean`],
    /// in no particular order. After a restart this is how the flusher resumes.
    pub fn dirty_keys(&self) -> Vec<(Vec<u8>, u64)> {
        let s = self.lock();
        s.index
            .iter()
            .filter(|(_, e)| e.dirty())
            .map(|(slot, e)| (e.key.to_vec(), self.dirty_version(&s, slot).unwrap_or(0)))
            .collect()
    }

    /// (freq, size) of every cached object: the input of the hot-threshold computation (seed 000
    /// §IV.C.1, H = Freq / Size).
    pub fn hotness_snapshot(&self) -> Vec<(u32, u64)> {
        self.lock().index.iter().map(|(_, e)| (e.freq(), e.size())).collect()
    }

    /// Bytes of DRAM the index and the policy use (key bytes excluded), and objects indexed.
    pub fn memory(&self) -> (usize, usize, usize) {
        let s = self.lock();
        (s.index.memory_bytes(), s.policy.memory_bytes(), s.index.len())
    }
}

/// A new entry for `key`.
pub(crate) fn new_entry(key: &[u8], size: u64, class: Class, frag_size: u64) -> ObjectEntry {
    let mut e = ObjectEntry::new(key, size, class);
    e.set_fragmented(frag_count(size, frag_size) > 1);
    e
}
