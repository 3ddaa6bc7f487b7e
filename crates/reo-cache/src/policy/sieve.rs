//! SIEVE (Zhang et al., NSDI'24): one FIFO with a visited bit and a moving hand. Sizes in bytes.
//!
//! Insert at the head with the bit clear; a hit sets the bit (no movement). Eviction starts at the
//! hand (initially the tail) and walks toward the head, clearing set bits, until it finds an entry
//! with a clear bit; that entry is evicted and the hand is left on its head-side neighbour. Past
//! the head the hand wraps to the tail. Non-evictable entries with a clear bit are passed over like
//! visited ones (their bit stays clear); if a whole round finds nothing evictable, eviction fails.

use super::{accounted_size, InsertError, Key, Policy};
use crate::policy::slab::{List, Slab, NIL};

/// SIEVE replacement, in bytes.
#[derive(Debug)]
pub struct Sieve {
    slab: Slab,
    list: List,
    /// Next entry to examine; `NIL` means the tail.
    hand: u32,
    c: u64,
}

impl Sieve {
    /// An empty SIEVE holding at most `capacity_bytes` bytes.
    pub fn new(capacity_bytes: u64) -> Self {
        Sieve { slab: Slab::new(), list: List::default(), hand: NIL, c: capacity_bytes }
    }

    /// Keys from head (newest) to tail.
    pub fn keys(&self) -> Vec<Key> {
        self.list.keys(&self.slab.nodes)
    }

    /// Key under the hand (`None`: the hand is at the tail position, before any eviction or wrap).
    pub fn hand_key(&self) -> Option<Key> {
        (self.hand != NIL).then(|| self.slab.node(self.hand).key)
    }

    /// Whether resident `key` has its visited bit set.
    pub fn visited(&self, key: Key) -> Option<bool> {
        self.slab.find(key).map(|i| self.slab.node(i).aux() != 0)
    }

    fn evict(&mut self, evictable: &mut dyn FnMut(Key) -> bool) -> Option<Key> {
        if self.list.is_empty() {
            return None;
        }
        let nodes = &mut self.slab.nodes;
        let mut i = if self.hand == NIL { self.list.tail } else { self.hand };
        let mut passed = 0;
        loop {
            let n = nodes[i as usize];
            if n.aux() != 0 {
                nodes[i as usize].set_aux(0);
                passed = 0;
            } else if evictable(n.key) {
                self.hand = n.prev;
                self.list.unlink(nodes, i);
                self.slab.release(i);
                return Some(n.key);
            } else {
                passed += 1;
                if passed >= self.list.len {
                    self.hand = i;
                    return None;
                }
            }
            i = if n.prev == NIL { self.list.tail } else { n.prev };
        }
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

impl Policy for Sieve {
    fn name(&self) -> &'static str {
        "sieve"
    }

    fn on_hit(&mut self, key: Key) -> bool {
        match self.slab.find(key) {
            Some(i) => {
                self.slab.node_mut(i).set_aux(1);
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
        let n = *self.slab.node(i);
        if self.hand == i {
            self.hand = n.prev;
        }
        self.list.unlink(&mut self.slab.nodes, i);
        self.slab.release(i);
        Some(n.size())
    }

    single_list_policy_methods!(c);

    fn check_invariants(&self) -> Result<(), String> {
        super::check_single_list(&self.slab, &self.list, self.c, "sieve")?;
        if self.hand != NIL && self.slab.find(self.slab.node(self.hand).key) != Some(self.hand) {
            return Err("sieve: hand on a free slot".into());
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn put(p: &mut Sieve, key: Key) -> Vec<Key> {
        let mut ev = Vec::new();
        p.insert(key, 1, &mut |_| true, &mut ev).unwrap();
        p.check_invariants().unwrap();
        ev
    }

    #[test]
    fn hand_clears_bits_moves_toward_head_and_wraps() {
        let mut p = Sieve::new(4);
        for k in 1..=4 {
            put(&mut p, k);
        }
        assert_eq!(p.keys(), vec![4, 3, 2, 1]);
        assert_eq!(p.hand_key(), None);
        p.on_hit(1);
        p.on_hit(3);
        // From the tail: 1 visited (cleared), 2 evicted; hand stops on 3.
        assert_eq!(put(&mut p, 5), vec![2]);
        assert_eq!((p.visited(1), p.hand_key()), (Some(false), Some(3)));
        assert_eq!(p.keys(), vec![5, 4, 3, 1], "survivors keep their place");
        // 3 cleared, 4 evicted; hand on 5.
        assert_eq!(put(&mut p, 6), vec![4]);
        assert_eq!(p.hand_key(), Some(5));
        p.on_hit(5);
        p.on_hit(6);
        // 5 and 6 cleared, past the head → wrap to the tail: 1 evicted, hand on 3.
        assert_eq!(put(&mut p, 7), vec![1]);
        assert_eq!(p.hand_key(), Some(3));
        assert_eq!(p.keys(), vec![7, 6, 5, 3]);
        // Unvisited entries go one by one as the hand keeps walking toward the head.
        assert_eq!(put(&mut p, 8), vec![3]);
        assert_eq!(p.hand_key(), Some(5));
        assert_eq!(put(&mut p, 9), vec![5]);
        assert_eq!(put(&mut p, 10), vec![6]);
        assert_eq!(put(&mut p, 11), vec![7]);
        assert_eq!(p.hand_key(), Some(8));
        p.check_invariants().unwrap();
    }

    #[test]
    fn pinned_entries_are_passed_over() {
        let mut p = Sieve::new(3);
        for k in 1..=3 {
            put(&mut p, k);
        }
        p.on_hit(3);
        let mut ev = Vec::new();
        p.insert(4, 1, &mut |k| k == 3, &mut ev).unwrap();
        assert_eq!(ev, vec![3], "3's bit was cleared on the first pass, then it was the only candidate");
        ev.clear();
        assert_eq!(p.insert(5, 1, &mut |_| false, &mut ev), Err(InsertError::Full));
        assert_eq!(p.remove(2), Some(1));
        p.check_invariants().unwrap();
    }
}
