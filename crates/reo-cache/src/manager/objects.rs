//! [`Objects`]: the objects the cache holds — the index of their entries, where each fragment's
//! blob is, and their leases — and the geometry of an object cut into fragments.

use std::collections::HashMap;

use reo_store::{Location, Scheme};

use crate::hash::KeyBuildHasher;
use crate::index::{frag_key, split_key, ObjectIndex};
use crate::object::{Class, ObjectEntry, PackedLoc, SCHEME_CODES};
use crate::policy::Key;

/// Bytes of fragment `frag` of an object of `size` bytes.
pub(crate) fn frag_len(size: u64, frag: u32, frag_size: u64) -> u64 {
    size.saturating_sub(u64::from(frag) * frag_size).min(frag_size)
}

/// Number of fragments of an object of `size` bytes (an empty object has one, empty, fragment).
pub(crate) fn frag_count(size: u64, frag_size: u64) -> u64 {
    size.div_ceil(frag_size).max(1)
}

/// A new entry for `key`.
pub(crate) fn new_entry(key: &[u8], size: u64, class: Class, frag_size: u64) -> ObjectEntry {
    let mut e = ObjectEntry::new(key, size, class);
    e.set_fragmented(frag_count(size, frag_size) > 1);
    e
}

/// Scheme codes stored in packed locations (at most 32 distinct schemes at a time).
#[derive(Debug, Default)]
struct SchemeTable(Vec<Scheme>);

impl SchemeTable {
    #[inline]
    fn code(&mut self, s: Scheme) -> u8 {
        if let Some(i) = self.0.iter().position(|&x| x == s) {
            return i as u8;
        }
        assert!(self.0.len() < SCHEME_CODES, "more than {SCHEME_CODES} distinct schemes in one cache");
        self.0.push(s);
        (self.0.len() - 1) as u8
    }

    #[inline]
    fn get(&self, code: u8) -> Scheme {
        self.0[code as usize]
    }
}

/// The object index, the blob locations it packs, and the leases of pinned objects.
#[derive(Default)]
pub(crate) struct Objects {
    index: ObjectIndex,
    schemes: SchemeTable,
    /// Lease end (caller's clock, ns) of pinned objects, by slot.
    pins: HashMap<u32, u64, KeyBuildHasher>,
    /// The caller's clock at the latest request (leases expire against it).
    now: u64,
}

impl Objects {
    #[inline]
    pub fn find(&self, key: &[u8]) -> Option<u32> {
        self.index.find(key)
    }

    #[inline]
    pub fn get(&self, slot: u32) -> Option<&ObjectEntry> {
        self.index.get(slot)
    }

    #[inline]
    pub fn get_mut(&mut self, slot: u32) -> Option<&mut ObjectEntry> {
        self.index.get_mut(slot)
    }

    /// Indexes `entry`; returns its slot.
    #[inline]
    pub fn insert(&mut self, entry: ObjectEntry) -> u32 {
        self.index.insert(entry)
    }

    /// The slot of `key`, indexing a new entry (`size` bytes, `class`) if it has none.
    #[inline]
    pub fn find_or_insert(&mut self, key: &[u8], size: u64, class: Class, frag_size: u64) -> u32 {
        match self.index.find(key) {
            Some(slot) => slot,
            None => self.index.insert(new_entry(key, size, class, frag_size)),
        }
    }

    /// The lasting policy key of fragment `frag` of the object in `slot` (a ghost's name, see
    /// [`crate::index::ghost_key`]).
    #[inline]
    pub fn ghost_key(&self, slot: u32, frag: u32) -> Option<Key> {
        self.index.get(slot).map(|e| self.index.ghost_key(e.key(), frag))
    }

    /// Forgets the entry of `slot` and its lease.
    #[inline]
    pub fn remove(&mut self, slot: u32) {
        self.index.remove(slot);
        self.pins.remove(&slot);
    }

    #[inline]
    pub fn iter(&self) -> impl Iterator<Item = (u32, &ObjectEntry)> {
        self.index.iter()
    }

    #[inline]
    pub fn len(&self) -> usize {
        self.index.len()
    }

    /// Slots in use or free (the re-encoder's cursor wraps at this).
    #[inline]
    pub fn slot_count(&self) -> usize {
        self.index.slot_count()
    }

    #[inline]
    pub fn memory_bytes(&self) -> usize {
        self.index.memory_bytes()
    }

    #[inline]
    pub fn version_tag(&self, slot: u32) -> Option<u32> {
        self.index.version_tag(slot)
    }

    #[inline]
    pub fn set_version_tag(&mut self, slot: u32, tag: u32) {
        self.index.set_version_tag(slot, tag)
    }

    /// The caller's clock at the latest request.
    #[inline]
    pub fn now(&self) -> u64 {
        self.now
    }

    /// Moves the clock forward to `now_ns` (never back).
    #[inline]
    pub fn advance(&mut self, now_ns: u64) {
        self.now = self.now.max(now_ns);
    }

    /// Pins `slot` until `until_ns` (a lease).
    #[inline]
    pub fn pin(&mut self, slot: u32, until_ns: u64) {
        if let Some(e) = self.index.get_mut(slot) {
            e.set_pinned(true);
            self.pins.insert(slot, until_ns);
        }
    }

    /// Ends the lease of `slot`.
    #[inline]
    pub fn unpin(&mut self, slot: u32) {
        if let Some(e) = self.index.get_mut(slot) {
            e.set_pinned(false);
            self.pins.remove(&slot);
        }
    }

    /// Is the object in `slot` pinned by a lease that has not expired?
    #[inline]
    pub fn leased(&self, slot: u32) -> bool {
        self.index.get(slot).is_some_and(|e| e.pinned()) && self.pins.get(&slot).is_some_and(|&until| until > self.now)
    }

    /// May the fragment key be evicted? Not while its object is dirty or pinned by a live lease.
    #[inline]
    pub fn evictable(&self, key: Key) -> bool {
        let (slot, _) = split_key(key);
        match self.index.get(slot) {
            Some(e) => !(e.dirty() || self.leased(slot)),
            None => true,
        }
    }

    /// Removes the entry of `slot` if it holds no blob and is neither dirty nor leased.
    #[inline]
    pub fn remove_if_empty(&mut self, slot: u32) {
        let Some(e) = self.index.get(slot) else { return };
        let empty = if e.fragmented() { self.index.cached_fragments(slot) == 0 } else { e.blob().is_none() };
        if empty && !e.dirty() && !self.leased(slot) {
            self.remove(slot);
        }
    }

    /// The store location of fragment `frag` of the object in `slot`, if cached.
    #[inline]
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
