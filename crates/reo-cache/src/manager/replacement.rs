//! [`Replacement`]: the replacement policy over the cached fragments (addressed by slot and
//! fragment number), with the scratch buffer its evictions are reported in.

use crate::index::frag_key;
use crate::policy::{InsertError, Key, Policy};

/// The policy ranking the cached fragments, and a reused buffer for the keys it evicts.
pub(crate) struct Replacement {
    policy: Box<dyn Policy>,
    /// Scratch buffer for evicted keys (an insert evicts into it: no allocation per fill).
    evicted: Vec<Key>,
}

impl Replacement {
    #[inline]
    pub fn new(policy: Box<dyn Policy>) -> Self {
        Replacement { policy, evicted: Vec::new() }
    }

    /// A read of fragment `frag` of `slot`.
    #[inline]
    pub fn on_hit(&mut self, slot: u32, frag: u32) {
        self.policy.on_hit(frag_key(slot, frag));
    }

    /// Files the ghost of `old` under `new` (see [`Policy::rename_ghost`]).
    #[inline]
    pub fn rename_ghost(&mut self, old: Key, new: Key) -> bool {
        self.policy.rename_ghost(old, new)
    }

    /// Forgets fragment `frag` of `slot`.
    #[inline]
    pub fn remove(&mut self, slot: u32, frag: u32) {
        self.policy.remove(frag_key(slot, frag));
    }

    /// Inserts fragment `frag` of `slot` (`len` bytes), evicting only keys `evictable` allows;
    /// returns the outcome and the evicted keys (hand the buffer back with
    /// [`Replacement::recycle`]).
    pub fn insert(
        &mut self,
        slot: u32,
        frag: u32,
        len: u64,
        evictable: &mut dyn FnMut(Key) -> bool,
    ) -> (Result<(), InsertError>, Vec<Key>) {
        let mut evicted = std::mem::take(&mut self.evicted);
        evicted.clear();
        let r = self.policy.insert(frag_key(slot, frag), len, evictable, &mut evicted);
        (r, evicted)
    }

    /// Returns the buffer [`Replacement::insert`] gave out, for the next insert.
    #[inline]
    pub fn recycle(&mut self, evicted: Vec<Key>) {
        self.evicted = evicted;
    }

    /// Picks and removes the next victim `evictable` allows.
    #[inline]
    pub fn evict_one(&mut self, evictable: &mut dyn FnMut(Key) -> bool) -> Option<Key> {
        self.policy.evict_one(evictable)
    }

    /// User bytes the policy holds.
    #[inline]
    pub fn used_bytes(&self) -> u64 {
        self.policy.used_bytes()
    }

    /// DRAM the policy uses.
    #[inline]
    pub fn memory_bytes(&self) -> usize {
        self.policy.memory_bytes()
    }
}
