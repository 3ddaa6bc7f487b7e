//! LRU: one recency list; hits move to the head, victims come from the tail.
//!
//! Non-evictable keys at the tail are skipped in place (their recency is not changed), so a pinned
//! or dirty object keeps its true position and is evicted as soon as it becomes evictable.

use super::{accounted_size, InsertError, Key, Policy};
use crate::policy::slab::{List, Slab};

/// Least-recently-used replacement, in bytes.
#[derive(Debug)]
pub struct Lru {
    slab: Slab,
    list: List,
    capacity: u64,
}

impl Lru {
    /// An empty LRU holding at most `capacity_bytes` bytes.
    pub fn new(capacity_bytes: u64) -> Self {
        Lru { slab: Slab::new(), list: List::default(), capacity: capacity_bytes }
    }

    /// Resident keys from most to least recently used.
    pub fn keys_mru_first(&self) -> Vec<Key> {
        self.list.keys(&self.slab.nodes)
    }

    fn evict(&mut self, evictable: &mut dyn FnMut(Key) -> bool) -> Option<Key> {
        let i = self.list.find_from_tail(&self.slab.nodes, evictable)?;
        let key = self.slab.node(i).key;
        self.list.unlink(&mut self.slab.nodes, i);
        self.slab.release(i);
        Some(key)
    }

    /// Evicts until `incoming` more bytes fit.
    fn make_room(
        &mut self,
        incoming: u64,
        evictable: &mut dyn FnMut(Key) -> bool,
        evicted: &mut Vec<Key>,
    ) -> Result<(), InsertError> {
        while self.list.bytes + incoming > self.capacity {
            evicted.push(self.evict(evictable).ok_or(InsertError::Full)?);
        }
        Ok(())
    }
}

impl Policy for Lru {
    fn name(&self) -> &'static str {
        "lru"
    }

    fn on_hit(&mut self, key: Key) -> bool {
        match self.slab.find(key) {
            Some(i) => {
                self.list.move_to_head(&mut self.slab.nodes, i);
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
        let size = accounted_size(size, self.capacity)?;
        if let Some(i) = self.slab.find(key) {
            self.list.move_to_head(&mut self.slab.nodes, i);
            self.list.resize(&mut self.slab.nodes, i, size);
            let r = self.make_room(0, &mut |k| k != key && evictable(k), evicted);
            if r.is_err() {
                self.remove(key);
            }
            return r;
        }
        self.make_room(size, evictable, evicted)?;
        let i = self.slab.alloc(key, size, 0);
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

    single_list_policy_methods!(capacity);

    fn check_invariants(&self) -> Result<(), String> {
        super::check_single_list(&self.slab, &self.list, self.capacity, "lru")
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn put(p: &mut Lru, key: Key, size: u64) -> Vec<Key> {
        let mut ev = Vec::new();
        p.insert(key, size, &mut |_| true, &mut ev).unwrap();
        ev
    }

    #[test]
    fn evicts_least_recently_used_in_order() {
        let mut p = Lru::new(3);
        for k in 1..=3 {
            assert!(put(&mut p, k, 1).is_empty());
        }
        assert_eq!(p.keys_mru_first(), vec![3, 2, 1]);
        assert!(p.on_hit(1));
        assert!(!p.on_hit(9));
        assert_eq!(p.keys_mru_first(), vec![1, 3, 2]);
        assert_eq!(put(&mut p, 4, 1), vec![2]);
        assert_eq!(put(&mut p, 5, 1), vec![3]);
        assert!(p.on_hit(4));
        assert_eq!(put(&mut p, 6, 1), vec![1]);
        assert_eq!(p.keys_mru_first(), vec![6, 4, 5]);
        p.check_invariants().unwrap();
    }

    #[test]
    fn byte_sizes_evict_as_many_as_needed() {
        let mut p = Lru::new(100);
        put(&mut p, 1, 40);
        put(&mut p, 2, 30);
        put(&mut p, 3, 30);
        assert_eq!(p.used_bytes(), 100);
        assert_eq!(put(&mut p, 4, 60), vec![1, 2]);
        assert_eq!(p.used_bytes(), 90);
        // Overwrite growing a resident key evicts others, never itself.
        assert_eq!(put(&mut p, 4, 100), vec![3]);
        assert_eq!((p.len(), p.used_bytes(), p.size_of(4)), (1, 100, Some(100)));
        let mut ev = Vec::new();
        assert_eq!(p.insert(5, 101, &mut |_| true, &mut ev), Err(InsertError::TooLarge));
        p.check_invariants().unwrap();
    }

    #[test]
    fn pinned_keys_are_skipped_in_place() {
        let mut p = Lru::new(3);
        for k in 1..=3 {
            put(&mut p, k, 1);
        }
        let mut ev = Vec::new();
        p.insert(4, 1, &mut |k| k != 1, &mut ev).unwrap();
        assert_eq!(ev, vec![2]);
        // 1 kept its LRU position: it goes first once unpinned.
        assert_eq!(p.keys_mru_first(), vec![4, 3, 1]);
        assert_eq!(p.evict_one(&mut |_| true), Some(1));
        assert_eq!(p.evict_one(&mut |_| false), None);
    }
}
