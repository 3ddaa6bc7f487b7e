//! [`ObjectIndex`]: object key → [`ObjectEntry`], plus the fragment side table.
//!
//! Entries live in a slab (`Vec<Option<ObjectEntry>>`, 32 bytes a slot thanks to the thin key's
//! niche) with a free list; a `hashbrown::HashTable<u32>` maps a key to its slot and stores only
//! the 4-byte slot number (the key is compared in the entry, and rehashed from it on growth).
//! Byte keys come from clients, so they are hashed with a per-table secret ([`SeededKeyHasher`]):
//! an attacker cannot craft colliding keys to degrade the table.
//!
//! A slot number names an object for as long as it is cached; the replacement policies and the
//! dedup layer see *fragment keys* `slot << 24 | fragment` ([`frag_key`]), so an eviction maps back
//! to its object without another table. Locations of multi-fragment objects are in the side table
//! keyed by fragment key; single-fragment objects keep theirs inline in the entry.

use std::collections::HashMap;

use hashbrown::HashTable;

use crate::hash::{KeyBuildHasher, SeededKeyHasher};
use crate::object::{ObjectEntry, PackedLoc};
use crate::policy::Key;

/// Bits of the fragment number in a fragment key.
pub const FRAG_BITS: u32 = 24;
/// Most fragments an object may have.
pub const MAX_FRAGMENTS: u64 = 1 << FRAG_BITS;

/// The fragment key of fragment `frag` of the object in `slot`.
#[inline]
pub fn frag_key(slot: u32, frag: u32) -> Key {
    debug_assert!(u64::from(frag) < MAX_FRAGMENTS);
    (u64::from(slot) << FRAG_BITS) | u64::from(frag)
}

/// A fragment's lasting name for the policies' ghost entries: fragment keys name a slot, which
/// another object takes once this one leaves, so a ghost filed under its fragment key would be
/// hit by a stranger and missed by the object itself when it returns. Built from the object key's
/// hash and the fragment number, with the top bit set, which no fragment key has (a slot number
/// has 32 bits, shifted by [`FRAG_BITS`]): the two kinds of key never meet in a policy. Two
/// fragments share a name only on a 63-bit hash collision, whose worst effect is one ghost hit
/// credited to the wrong object.
#[inline]
pub fn ghost_key(object_hash: u64, frag: u32) -> Key {
    (1 << 63) | (crate::hash::hash_key(object_hash ^ u64::from(frag)) >> 1)
}

/// Inverse of [`frag_key`]: (slot, fragment).
#[inline]
pub fn split_key(key: Key) -> (u32, u32) {
    ((key >> FRAG_BITS) as u32, (key & (MAX_FRAGMENTS - 1)) as u32)
}

/// Object key → entry, with fragment locations of large objects.
#[derive(Default)]
pub struct ObjectIndex {
    table: HashTable<u32>,
    slots: Vec<Option<ObjectEntry>>,
    free: Vec<u32>,
    frags: HashMap<Key, PackedLoc, KeyBuildHasher>,
    /// Per multi-fragment object with cached fragments, by slot: (cached fragments, version tag).
    /// The tag (a hash of the ETag) keeps fragments of two versions of an object from mixing.
    frag_counts: HashMap<u32, (u32, u32), KeyBuildHasher>,
    hasher: SeededKeyHasher,
}

impl ObjectIndex {
    /// An empty index.
    pub fn new() -> Self {
        Self::default()
    }

    fn hash(hasher: &SeededKeyHasher, key: &[u8]) -> u64 {
        hasher.hash(key)
    }

    /// The lasting policy key of fragment `frag` of the object `key` (see [`ghost_key`]).
    pub fn ghost_key(&self, key: &[u8], frag: u32) -> Key {
        ghost_key(Self::hash(&self.hasher, key), frag)
    }

    /// Slot of `key`.
    pub fn find(&self, key: &[u8]) -> Option<u32> {
        let h = Self::hash(&self.hasher, key);
        let slots = &self.slots;
        self.table.find(h, |&s| slots[s as usize].as_ref().is_some_and(|e| e.key() == key)).copied()
    }

    /// Inserts a new entry (its key must not be present) and returns its slot.
    pub fn insert(&mut self, entry: ObjectEntry) -> u32 {
        debug_assert!(self.find(entry.key()).is_none(), "duplicate key");
        let h = Self::hash(&self.hasher, entry.key());
        let slot = match self.free.pop() {
            Some(s) => {
                self.slots[s as usize] = Some(entry);
                s
            }
            None => {
                assert!(self.slots.len() < u32::MAX as usize, "object index full (2^32 objects)");
                self.slots.push(Some(entry));
                (self.slots.len() - 1) as u32
            }
        };
        let (slots, hasher) = (&self.slots, &self.hasher);
        self.table.insert_unique(h, slot, |&s| Self::hash(hasher, slots[s as usize].as_ref().expect("live").key()));
        slot
    }

    /// Removes the entry in `slot` (its side-table fragments must have been cleared by the caller).
    pub fn remove(&mut self, slot: u32) -> Option<ObjectEntry> {
        let entry = self.slots.get_mut(slot as usize)?.take()?;
        let h = Self::hash(&self.hasher, entry.key());
        if let Ok(o) = self.table.find_entry(h, |&s| s == slot) {
            o.remove();
        }
        self.free.push(slot);
        Some(entry)
    }

    /// The entry in `slot`, or `None` if the slot is free or out of range.
    pub fn get(&self, slot: u32) -> Option<&ObjectEntry> {
        self.slots.get(slot as usize)?.as_ref()
    }

    /// The entry in `slot`, mutably, or `None` if the slot is free or out of range.
    pub fn get_mut(&mut self, slot: u32) -> Option<&mut ObjectEntry> {
        self.slots.get_mut(slot as usize)?.as_mut()
    }

    /// Location of a fragment of a multi-fragment object.
    pub fn frag(&self, key: Key) -> Option<PackedLoc> {
        self.frags.get(&key).copied()
    }

    /// Sets (or clears) a fragment's location; returns the previous one.
    pub fn set_frag(&mut self, key: Key, loc: Option<PackedLoc>) -> Option<PackedLoc> {
        let slot = split_key(key).0;
        let old = match loc {
            Some(l) => self.frags.insert(key, l),
            None => self.frags.remove(&key),
        };
        match (old.is_some(), loc.is_some()) {
            (false, true) => self.frag_counts.entry(slot).or_default().0 += 1,
            (true, false) => {
                let c = &mut self.frag_counts.get_mut(&slot).expect("counted").0;
                *c -= 1;
                if *c == 0 {
                    self.frag_counts.remove(&slot);
                }
            }
            _ => {}
        }
        old
    }

    /// Cached fragments of the multi-fragment object in `slot`.
    pub fn cached_fragments(&self, slot: u32) -> u32 {
        self.frag_counts.get(&slot).map_or(0, |c| c.0)
    }

    /// Version tag of the cached fragments of the multi-fragment object in `slot` (`None` when none
    /// is cached: any version may start filling).
    pub fn version_tag(&self, slot: u32) -> Option<u32> {
        self.frag_counts.get(&slot).map(|c| c.1)
    }

    /// Sets the version tag of a multi-fragment object that has cached fragments.
    pub fn set_version_tag(&mut self, slot: u32, tag: u32) {
        if let Some(c) = self.frag_counts.get_mut(&slot) {
            c.1 = tag;
        }
    }

    /// Cached fragments in the side table.
    pub fn fragment_count(&self) -> usize {
        self.frags.len()
    }

    /// Slots of the slab (live and free): the range of slot numbers.
    pub fn slot_count(&self) -> usize {
        self.slots.len()
    }

    /// Objects in the index.
    pub fn len(&self) -> usize {
        self.table.len()
    }

    /// Whether no object is indexed.
    pub fn is_empty(&self) -> bool {
        self.table.is_empty()
    }

    /// Every live (slot, entry).
    pub fn iter(&self) -> impl Iterator<Item = (u32, &ObjectEntry)> {
        self.slots.iter().enumerate().filter_map(|(i, e)| e.as_ref().map(|e| (i as u32, e)))
    }

    /// Pre-sizes for `objects` objects.
    pub fn reserve(&mut self, objects: usize) {
        self.slots.reserve(objects);
        let (slots, hasher) = (&self.slots, &self.hasher);
        self.table.reserve(objects, |&s| Self::hash(hasher, slots[s as usize].as_ref().expect("live").key()));
    }

    /// Heap bytes of the index structures beyond the key bytes (slab, table, free list, side
    /// table, and each key's 2-byte length prefix).
    pub fn memory_bytes(&self) -> usize {
        2 * self.len()
            + self.slots.capacity() * std::mem::size_of::<Option<ObjectEntry>>()
            + self.table.allocation_size()
            + self.free.capacity() * 4
            + self.frags.capacity() * (std::mem::size_of::<(Key, PackedLoc)>() + 1)
            + self.frag_counts.capacity() * (std::mem::size_of::<(u32, (u32, u32))>() + 1)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::object::Class;

    #[test]
    fn insert_find_remove_reuse() {
        let mut ix = ObjectIndex::new();
        let a = ix.insert(ObjectEntry::new(b"a", 1, Class::Cold));
        let b = ix.insert(ObjectEntry::new(b"bucket/b", 2, Class::Dirty));
        assert_eq!(ix.find(b"a"), Some(a));
        assert_eq!(ix.find(b"bucket/b"), Some(b));
        assert_eq!(ix.find(b"c"), None);
        assert_eq!(ix.get(b).unwrap().size(), 2);
        assert_eq!(ix.remove(a).unwrap().key(), b"a");
        assert_eq!(ix.find(b"a"), None);
        assert!(ix.remove(a).is_none());
        let c = ix.insert(ObjectEntry::new(b"c", 3, Class::Cold));
        assert_eq!(c, a, "slot reused");
        assert_eq!(ix.len(), 2);
        assert_eq!(ix.iter().map(|(s, _)| s).collect::<Vec<_>>(), vec![a, b]);
    }

    #[test]
    fn grows_past_many_keys() {
        let mut ix = ObjectIndex::new();
        for i in 0..10_000u32 {
            ix.insert(ObjectEntry::new(format!("k{i}").as_bytes(), u64::from(i), Class::Cold));
        }
        for i in (0..10_000u32).step_by(7) {
            let s = ix.find(format!("k{i}").as_bytes()).unwrap();
            assert_eq!(ix.get(s).unwrap().size(), u64::from(i));
        }
    }

    #[test]
    fn fragment_keys_round_trip() {
        assert_eq!(split_key(frag_key(7, 3)), (7, 3));
        assert_eq!(split_key(frag_key(u32::MAX, (MAX_FRAGMENTS - 1) as u32)), (u32::MAX, (MAX_FRAGMENTS - 1) as u32));
    }
}
