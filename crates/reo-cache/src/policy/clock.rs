//! SDCC's generalized CLOCK: a FIFO ring whose entries carry a small recency+frequency utility.
//!
//! SDCC (Seshadri et al., "Software defined just-in-time caching in an enterprise storage system",
//! section *Implementation — Cache organization*) replaces fragments with "a variant of the
//! generalized CLOCK algorithm [8: Corbató 1968]" and keeps per fragment "a metric of its caching
//! utility, computed based on the recency and frequency of accesses". The paper gives no formula;
//! this module implements the classic generalized CLOCK (GCLOCK) counter as that utility:
//!
//! ```text
//! u ∈ {0, …, K}            K = max utility (default 3: a 2-bit counter; K = 1 is plain CLOCK)
//! insert:  u ← 0, at the head of the ring
//! hit:     u ← min(u + 1, K)                  (frequency: each access adds one, saturating)
//! evict:   t ← tail; u(t) > 0 ? (u(t) ← u(t) − 1, t to the head) : evict t
//!                                             (recency: every pass of the hand ages u by one)
//! ```
//!
//! So at any time `u = min(K, hits) − (hand passes since those hits)`, floored at 0: an entry
//! survives one extra sweep of the hand per recent access, up to K sweeps. Entries with more
//! recent accesses outlive entries with fewer; among equal counts, the more recently re-referenced
//! one is further from the hand. The eviction order therefore approximates utility order (the
//! hand always evicts an entry of utility 0). `K = 1` reproduces libCacheSim's CLOCK (1-bit, the
//! reference column); `utility()` exposes `u` so admission can compare a candidate against the
//! resident population as SDCC does. A non-evictable entry at the tail goes to the head unchanged.

use super::{accounted_size, InsertError, Key, Policy};
use crate::policy::slab::{List, Slab};

/// Generalized CLOCK with a saturating utility counter, in bytes.
#[derive(Debug)]
pub struct Clock {
    slab: Slab,
    list: List,
    max_utility: u8,
    c: u64,
}

impl Clock {
    /// SDCC variant: utility counter up to 3 (2 bits).
    pub fn new(capacity_bytes: u64) -> Self {
        Self::with_max_utility(capacity_bytes, 3)
    }

    /// Plain CLOCK (one reference bit), as libCacheSim's `Clock`.
    pub fn plain(capacity_bytes: u64) -> Self {
        Self::with_max_utility(capacity_bytes, 1)
    }

    /// Utility saturating at `max_utility` (at least 1).
    pub fn with_max_utility(capacity_bytes: u64, max_utility: u8) -> Self {
        Clock { slab: Slab::new(), list: List::default(), max_utility: max_utility.max(1), c: capacity_bytes }
    }

    /// Current utility of resident `key`.
    pub fn utility(&self, key: Key) -> Option<u8> {
        self.slab.find(key).map(|i| self.slab.node(i).aux())
    }

    /// Keys from head (newest) to tail (next under the hand).
    pub fn keys(&self) -> Vec<Key> {
        self.list.keys(&self.slab.nodes)
    }

    fn evict(&mut self, evictable: &mut dyn FnMut(Key) -> bool) -> Option<Key> {
        let nodes = &mut self.slab.nodes;
        let mut rejected = 0;
        while self.list.len > rejected {
            let i = self.list.tail;
            let n = nodes[i as usize];
            if n.aux() > 0 {
                nodes[i as usize].set_aux(n.aux() - 1);
                self.list.move_to_head(nodes, i);
                rejected = 0;
            } else if !evictable(n.key) {
                self.list.move_to_head(nodes, i);
                rejected += 1;
            } else {
                self.list.unlink(nodes, i);
                self.slab.release(i);
                return Some(n.key);
            }
        }
        None
    }

    fn make_room(
        &mut self,
        incoming: u64,
        evictable: &mut dyn FnMut(Key) -> bool,
        evicted: &mut Vec<Key>,
    ) -> Result<(), InsertError> {
        while self.list.bytes + incoming > self.c {
            evicted.push(self.evict(evictable).ok_or(InsertError::Full)?);
        }
        Ok(())
    }
}

impl Policy for Clock {
    fn name(&self) -> &'static str {
        if self.max_utility == 1 {
            "clock-1bit"
        } else {
            "clock"
        }
    }

    fn on_hit(&mut self, key: Key) -> bool {
        match self.slab.find(key) {
            Some(i) => {
                let n = self.slab.node_mut(i);
                n.set_aux(n.aux().saturating_add(1).min(self.max_utility));
                true
            }
            None => false,
        }
    }

    fn insert(
        &mut self,
        key: Key,
        size: u64,
        evictable: &mut dyn FnMut(Key) -> bool,
        evicted: &mut Vec<Key>,
    ) -> Result<(), InsertError> {
        let s = accounted_size(size, self.c)?;
        if let Some(i) = self.slab.find(key) {
            self.on_hit(key);
            self.list.resize(&mut self.slab.nodes, i, s);
            let r = self.make_room(0, &mut |k| k != key && evictable(k), evicted);
            if r.is_err() {
                self.remove(key);
            }
            return r;
        }
        self.make_room(s, evictable, evicted)?;
        let i = self.slab.alloc(key, s, 0);
        self.list.push_head(&mut self.slab.nodes, i);
        Ok(())
    }

    fn remove(&mut self, key: Key) -> Option<u64> {
        let i = self.slab.find(key)?;
        let size = self.slab.node(i).size();
        self.list.unlink(&mut self.slab.nodes, i);
        self.slab.release(i);
        Some(size)
    }

    single_list_policy_methods!(c);

    fn check_invariants(&self) -> Result<(), String> {
        super::check_single_list(&self.slab, &self.list, self.c, "clock")
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn put(p: &mut Clock, key: Key) -> Vec<Key> {
        let mut ev = Vec::new();
        p.insert(key, 1, &mut |_| true, &mut ev).unwrap();
        p.check_invariants().unwrap();
        ev
    }

    /// Cache of 4 with keys 1..4 hit 3, 1, 2 and 0 times; returns the eviction order of 6 inserts.
    fn eviction_order(mut p: Clock) -> Vec<Key> {
        for k in 1..=4 {
            put(&mut p, k);
        }
        for (k, hits) in [(1, 3), (2, 1), (3, 2)] {
            for _ in 0..hits {
                p.on_hit(k);
            }
        }
        (5..=11).flat_map(|k| put(&mut p, k)).collect()
    }

    #[test]
    fn utility_orders_evictions_by_frequency_then_recency() {
        let mut p = Clock::new(4);
        for k in 1..=4 {
            put(&mut p, k);
        }
        for (k, hits) in [(1, 5), (2, 1), (3, 2)] {
            for _ in 0..hits {
                p.on_hit(k);
            }
        }
        assert_eq!([1, 2, 3, 4].map(|k| p.utility(k).unwrap()), [3, 1, 2, 0], "saturates at 3");
        // One sweep: every survivor ages by one; 4 (utility 0) is the victim.
        assert_eq!(put(&mut p, 5), vec![4]);
        assert_eq!([1, 2, 3].map(|k| p.utility(k).unwrap()), [2, 0, 1]);
        assert_eq!(p.keys(), vec![5, 3, 2, 1]);
        // A fresh access (recency) lifts 2 above the new, unreferenced 5.
        p.on_hit(2);
        assert_eq!(put(&mut p, 6), vec![5]);
        // Original keys leave in order of their access counts: 2, 3, then 1.
        let order = eviction_order(Clock::new(4));
        let originals: Vec<Key> = order.iter().copied().filter(|&k| k <= 4).collect();
        assert_eq!(originals, vec![4, 2, 3, 1]);
        assert_eq!(order, vec![4, 2, 5, 6, 3, 7, 1]);
    }

    #[test]
    fn plain_clock_forgets_frequency() {
        // One reference bit: 1 (3 hits) goes right after the never-hit 4.
        let order = eviction_order(Clock::plain(4));
        assert_eq!(order[..2], [4, 1]);
        assert_eq!(Clock::plain(4).name(), "clock-1bit");
    }

    #[test]
    fn pinned_tail_goes_round() {
        let mut p = Clock::new(3);
        for k in 1..=3 {
            put(&mut p, k);
        }
        let mut ev = Vec::new();
        p.insert(4, 1, &mut |k| k != 1, &mut ev).unwrap();
        assert_eq!(ev, vec![2]);
        assert_eq!(p.keys(), vec![4, 1, 3]);
        ev.clear();
        assert_eq!(p.insert(5, 1, &mut |_| false, &mut ev), Err(InsertError::Full));
        assert!(ev.is_empty());
    }
}
