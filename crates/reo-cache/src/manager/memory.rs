//! [`MemoryTier`]: the DRAM tier in front of flash — whole small objects kept in memory, so a hit
//! on one costs no device read.
//!
//! The tier is *inclusive*: it holds copies of objects that flash holds, by their index slot, and
//! a copy goes whenever its object changes or leaves flash (a write or delete of the key, an
//! eviction or loss of any of its fragments, the object forgotten; `State` calls
//! [`MemoryTier::remove`] on each). So flash stays the source of truth — dirty data is on flash
//! with its class's redundancy before a write is acknowledged — and coherence (writes, deletes,
//! a cluster's revocations, which all reach the cache as writes or deletes) needs nothing of its
//! own. A copy is taken from a whole-object read that flash served, or from a write of the whole
//! object, and installed only if the key did not change since (the invalidation token).
//!
//! Replacement is SIEVE over whole objects, size-aware (the crate's own policy, the one its
//! conformance tests check against the reference): a copy that is read again survives the hand,
//! a one-read object leaves first. Memory is bounded in bytes: each copy counts its bytes plus
//! [`ENTRY_OVERHEAD`] for its map entry, policy node and buffer header, and the policy never
//! counts more than the configured capacity. (A part of a copy a reader still holds lives on
//! after the copy leaves; readers of a small part get a copy of it, so only large parts of
//! large copies can outlive them, for as long as their response is being sent.)
//!
//! In the simulator copies carry no bytes ([`MemCopy::Sized`]): the tier's hits and its effect
//! on device reads are modelled the same way.

use std::collections::HashMap;

use bytes::Bytes;

use crate::hash::KeyBuildHasher;
use crate::policy::{new_policy, Key, Policy, PolicyKind};

/// Memory a copy costs beyond its bytes, counted against the tier's capacity so that the bound
/// holds for tiny objects too: its map bucket (about 48 bytes, up to twice that after the table
/// grows), SIEVE node and index (about 30), the `Bytes` shared header (32) and the allocator's
/// rounding of the buffer (up to 24).
pub const ENTRY_OVERHEAD: u64 = 256;

/// The largest object the tier keeps; it also keeps none larger than a sixteenth of its
/// capacity, so that one object never pushes out more than that share of the others. The gateway
/// copies only objects read in one piece (a large GET streams window by window and is not
/// copied) or written whole.
pub const MAX_MEMORY_OBJECT: u64 = 16 << 20;

/// A copy of a whole object in memory.
#[derive(Debug, Clone)]
pub enum MemCopy {
    /// The object's bytes.
    Bytes(Bytes),
    /// Only its length (the simulator's byte-less media).
    Sized(u64),
}

impl MemCopy {
    /// The object's length.
    pub fn size(&self) -> u64 {
        match self {
            MemCopy::Bytes(b) => b.len() as u64,
            MemCopy::Sized(n) => *n,
        }
    }
}

/// The DRAM tier (see the module doc). Off (capacity 0) it holds and costs nothing.
pub(crate) struct MemoryTier {
    policy: Option<Box<dyn Policy>>,
    copies: HashMap<Key, MemCopy, KeyBuildHasher>,
    /// Scratch buffer for the keys an insert evicts.
    evicted: Vec<Key>,
    max_object: u64,
}

impl MemoryTier {
    /// A tier of `capacity` bytes (0: off).
    pub fn new(capacity: u64) -> MemoryTier {
        MemoryTier {
            policy: (capacity > 0).then(|| new_policy(PolicyKind::Sieve, capacity)),
            copies: HashMap::default(),
            evicted: Vec::new(),
            max_object: MAX_MEMORY_OBJECT.min(capacity / 16),
        }
    }

    /// Whether an object of `size` bytes may be kept.
    #[inline]
    pub fn admits(&self, size: u64) -> bool {
        self.policy.is_some() && size <= self.max_object
    }

    /// The copy of the object in `slot` of `size` bytes, counted as a read of it; `None` if there
    /// is none, or only a byte-less one and `bytes` are needed. A copy of another size (which the
    /// drops on every change rule out) is dropped rather than served.
    #[inline]
    pub fn get(&mut self, slot: u32, bytes: bool, size: u64) -> Option<MemCopy> {
        let policy = self.policy.as_mut()?;
        let copy = self.copies.get(&Key::from(slot))?;
        if copy.size() != size {
            self.remove(slot);
            return None;
        }
        if bytes && matches!(copy, MemCopy::Sized(_)) {
            return None;
        }
        policy.on_hit(Key::from(slot));
        Some(copy.clone())
    }

    /// Keeps `copy` as the object in `slot` (replacing an older copy), evicting others as
    /// needed; returns how many it evicted.
    pub fn insert(&mut self, slot: u32, copy: MemCopy) -> u64 {
        if !self.admits(copy.size()) {
            self.remove(slot);
            return 0;
        }
        let Some(policy) = self.policy.as_mut() else { return 0 };
        let key = Key::from(slot);
        policy.remove(key);
        let mut evicted = std::mem::take(&mut self.evicted);
        evicted.clear();
        let inserted = policy.insert(key, copy.size() + ENTRY_OVERHEAD, &mut |_| true, &mut evicted).is_ok();
        for k in &evicted {
            self.copies.remove(k);
        }
        let n = evicted.len() as u64;
        if n > 0 {
            self.shrink_if_sparse();
        }
        self.evicted = evicted;
        if inserted {
            self.copies.insert(key, copy);
        } else {
            self.copies.remove(&key);
        }
        n
    }

    /// Drops the copy of the object in `slot`, if any.
    #[inline]
    pub fn remove(&mut self, slot: u32) {
        if let Some(policy) = self.policy.as_mut() {
            if self.copies.remove(&Key::from(slot)).is_some() {
                policy.remove(Key::from(slot));
                self.shrink_if_sparse();
            }
        }
    }

    /// Shrinks the map when it is mostly empty. It does not shrink by itself: after a burst of
    /// tiny copies, dropped or pushed out by larger ones, its table would stay at its peak size,
    /// outside the bound.
    fn shrink_if_sparse(&mut self) {
        if self.copies.capacity() > 1024 && self.copies.len() * 4 < self.copies.capacity() {
            self.copies.shrink_to(self.copies.len() * 2);
        }
    }

    /// (copies held, bytes they count against the capacity, the capacity).
    pub fn occupancy(&self) -> (usize, u64, u64) {
        self.policy.as_ref().map_or((0, 0, 0), |p| (self.copies.len(), p.used_bytes(), p.capacity_bytes()))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn bytes(n: usize, fill: u8) -> MemCopy {
        MemCopy::Bytes(Bytes::from(vec![fill; n]))
    }

    #[test]
    fn stays_within_its_capacity_and_keeps_what_is_read_again() {
        // Room for 20 copies of 1,000 bytes with their overhead.
        let mut t = MemoryTier::new(20 * (1000 + ENTRY_OVERHEAD));
        for s in 0..20 {
            assert_eq!(t.insert(s, bytes(1000, s as u8)), 0);
        }
        // Slot 3 is read again: SIEVE keeps it when the next copies push the others out.
        assert!(t.get(3, true, 1000).is_some());
        for s in 20..39 {
            t.insert(s, bytes(1000, s as u8));
        }
        let (n, used, cap) = t.occupancy();
        assert!(used <= cap && n == 20, "{n} copies, {used} of {cap} bytes");
        match t.get(3, true, 1000) {
            Some(MemCopy::Bytes(b)) => assert!(b.iter().all(|&x| x == 3)),
            other => panic!("slot 3 evicted despite its second read: {other:?}"),
        }
        assert!(t.get(0, true, 1000).is_none(), "a one-read copy survived a full turn");
    }

    #[test]
    fn refuses_large_objects_and_forgets_removed_ones() {
        let mut t = MemoryTier::new(1 << 30);
        assert!(t.admits(MAX_MEMORY_OBJECT) && !t.admits(MAX_MEMORY_OBJECT + 1));
        t.insert(1, bytes((MAX_MEMORY_OBJECT + 1) as usize, 1));
        assert!(t.get(1, true, MAX_MEMORY_OBJECT + 1).is_none());
        t.insert(2, MemCopy::Sized(100));
        assert!(t.get(2, true, 100).is_none(), "a byte-less copy served a reader of bytes");
        assert!(t.get(2, false, 100).is_some());
        assert!(t.get(2, false, 99).is_none(), "a copy of another size was served");
        assert_eq!(t.occupancy().0, 0, "a copy of another size is dropped");
        t.insert(2, MemCopy::Sized(100));
        t.remove(2);
        assert!(t.get(2, false, 100).is_none());
        assert_eq!(t.occupancy().1, 0);
        let mut off = MemoryTier::new(0);
        assert!(!off.admits(1));
        off.insert(1, MemCopy::Sized(1));
        assert!(off.get(1, false, 1).is_none());
    }

    #[test]
    fn the_map_shrinks_after_tiny_copies_are_pushed_out() {
        // 10,000 tiny copies fill the tier; fifteen copies of a sixteenth of it (the largest it
        // takes) then push nearly all of them out.
        let cap = 10_000 * (1 + ENTRY_OVERHEAD);
        let mut t = MemoryTier::new(cap);
        for s in 0..10_000 {
            t.insert(s, bytes(1, 0));
        }
        let peak = t.copies.capacity();
        assert!(peak >= 10_000);
        for s in 20_000..20_015 {
            t.insert(s, bytes((cap / 16 - ENTRY_OVERHEAD) as usize, 1));
        }
        let (n, used, _) = t.occupancy();
        assert!(used <= cap);
        assert!(t.copies.capacity() < peak / 2, "{n} copies in a table of {} (peak {peak})", t.copies.capacity());
    }
}
