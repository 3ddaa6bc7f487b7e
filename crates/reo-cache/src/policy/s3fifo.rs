//! S3-FIFO (Yang et al., SOSP'23): a small probationary FIFO S, a main FIFO M with a 2-bit
//! CLOCK-style counter, and a ghost FIFO G of keys evicted from S. Sizes in bytes.
//!
//! As in the reference (libCacheSim `S3FIFO.c`, S 10 %, G 90 %, threshold T = 2):
//!
//! ```text
//! hit:     freq ← min(freq + 1, 3)              (no movement; a ghost hit is a miss)
//! miss:    while full: evict(); insert at head(M) if key ∈ G (removing it) else head(S); freq ← 0
//! evict(): |M| > cap(M) or S empty ? evict_M() : evict_S()
//! evict_S: until one object leaves or S is empty: t ← tail(S);
//!          t.freq ≥ T ? move t to head(M) with freq 0 : move t's key to G, done
//! evict_M: loop t ← tail(M): t.freq ≥ 1 ? (to head(M), freq − 1) : (evict t, done)
//! ```
//!
//! G holds at most `cap(G)` bytes of (key, size) entries, oldest dropped first. Warm-up as in
//! libCacheSim's current `S3FIFO.c` (not in the pseudo-code above): until the first eviction, a new
//! object goes to M once S is full, so the cache does not start with S holding everything (without
//! this rule the 100 k-object reference miss ratio is .1979 instead of .1956). Deviations: an
//! object larger than cap(S) goes straight to M (libCacheSim refuses it); a non-evictable key met
//! at the tail of S or M is moved to the head of its queue unchanged (another round), and a queue
//! whose keys are all non-evictable falls back to the other queue (and M once more after S, whose
//! scan may have promoted evictable keys to M).

use super::{accounted_size, InsertError, Key, Policy};
use crate::policy::slab::{List, Slab};

const S: u8 = 0;
const M: u8 = 1;
const G: u8 = 2;
const MAX_FREQ: u8 = 3;

/// S3-FIFO replacement, in bytes.
#[derive(Debug)]
pub struct S3Fifo {
    slab: Slab,
    small: List,
    main: List,
    ghost: List,
    cap_small: u64,
    cap_main: u64,
    cap_ghost: u64,
    threshold: u8,
    c: u64,
    /// Whether anything was ever evicted (ends the warm-up).
    has_evicted: bool,
}

impl S3Fifo {
    /// Reference parameters: S = 10 %, G = 90 % of the capacity, T = 2.
    pub fn new(capacity_bytes: u64) -> Self {
        Self::with_params(capacity_bytes, 0.1, 0.9, 2)
    }

    /// `small_ratio` and `ghost_ratio` of the capacity; promotion to M needs `threshold` hits in S
    /// (clamped to 1..=3; 1 is the 1-bit variant suggested for block traces).
    pub fn with_params(capacity_bytes: u64, small_ratio: f64, ghost_ratio: f64, threshold: u8) -> Self {
        let cap_small = (capacity_bytes as f64 * small_ratio.clamp(0.0, 1.0)) as u64;
        let l = List::default();
        S3Fifo {
            slab: Slab::new(),
            small: l,
            main: l,
            ghost: l,
            cap_small,
            cap_main: capacity_bytes - cap_small,
            cap_ghost: (capacity_bytes as f64 * ghost_ratio.max(0.0)) as u64,
            threshold: threshold.clamp(1, MAX_FREQ),
            c: capacity_bytes,
            has_evicted: false,
        }
    }

    /// Keys of S, M and G, newest first.
    pub fn queues(&self) -> [Vec<Key>; 3] {
        [&self.small, &self.main, &self.ghost].map(|l| l.keys(&self.slab.nodes))
    }

    /// Access counter of resident `key`.
    pub fn freq(&self, key: Key) -> Option<u8> {
        let n = self.slab.node(self.slab.find(key)?);
        (n.tag() != G).then(|| n.aux())
    }

    fn used(&self) -> u64 {
        self.small.bytes + self.main.bytes
    }

    fn evict(&mut self, evictable: &mut dyn FnMut(Key) -> bool) -> Option<Key> {
        self.has_evicted = true;
        if self.main.bytes > self.cap_main || self.small.is_empty() {
            // evict_small may find nothing to evict in S yet promote keys to M that are: M again.
            self.evict_main(evictable).or_else(|| self.evict_small(evictable)).or_else(|| self.evict_main(evictable))
        } else {
            self.evict_small(evictable).or_else(|| self.evict_main(evictable))
        }
    }

    fn evict_small(&mut self, evictable: &mut dyn FnMut(Key) -> bool) -> Option<Key> {
        let nodes = &mut self.slab.nodes;
        let mut rejected = 0;
        while self.small.len > rejected {
            let i = self.small.tail;
            let n = nodes[i as usize];
            if n.aux() >= self.threshold {
                self.small.unlink(nodes, i);
                nodes[i as usize].set_tag(M);
                nodes[i as usize].set_aux(0);
                self.main.push_head(nodes, i);
            } else if !evictable(n.key) {
                self.small.move_to_head(nodes, i);
                rejected += 1;
            } else {
                self.small.unlink(nodes, i);
                nodes[i as usize].set_tag(G);
                nodes[i as usize].set_aux(0);
                self.ghost.push_head(nodes, i);
                while self.ghost.bytes > self.cap_ghost {
                    let t = self.ghost.tail;
                    self.ghost.unlink(&mut self.slab.nodes, t);
                    self.slab.release(t);
                }
                return Some(n.key);
            }
        }
        None
    }

    fn evict_main(&mut self, evictable: &mut dyn FnMut(Key) -> bool) -> Option<Key> {
        let nodes = &mut self.slab.nodes;
        let mut rejected = 0;
        while self.main.len > rejected {
            let i = self.main.tail;
            let n = nodes[i as usize];
            if n.aux() >= 1 {
                nodes[i as usize].set_aux(n.aux() - 1);
                self.main.move_to_head(nodes, i);
                rejected = 0;
            } else if !evictable(n.key) {
                self.main.move_to_head(nodes, i);
                rejected += 1;
            } else {
                self.main.unlink(nodes, i);
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
        while self.used() + incoming > self.c {
            evicted.push(self.evict(evictable).ok_or(InsertError::Full)?);
        }
        Ok(())
    }
}

impl Policy for S3Fifo {
    fn name(&self) -> &'static str {
        "s3-fifo"
    }

    fn on_hit(&mut self, key: Key) -> bool {
        let Some(i) = self.slab.find(key) else { return false };
        let n = self.slab.node_mut(i);
        if n.tag() == G {
            return false;
        }
        n.set_aux((n.aux() + 1).min(MAX_FREQ));
        true
    }

    fn is_ghost(&self, key: Key) -> bool {
        self.slab.find(key).is_some_and(|i| self.slab.node(i).tag() == G)
    }

    fn rekey(&mut self, old: Key, new: Key) -> bool {
        self.slab.rekey(old, new)
    }

    fn insert(
        &mut self,
        key: Key,
        size: u64,
        evictable: &mut dyn FnMut(Key) -> bool,
        evicted: &mut Vec<Key>,
    ) -> Result<(), InsertError> {
        let s = accounted_size(size, self.c)?;
        let ghost_hit = match self.slab.find(key).map(|i| (i, self.slab.node(i).tag())) {
            Some((i, tag @ (S | M))) => {
                // Overwrite: a hit plus a size change.
                self.on_hit(key);
                let list = match tag {
                    S => &mut self.small,
                    _ => &mut self.main,
                };
                list.resize(&mut self.slab.nodes, i, s);
                let r = self.make_room(0, &mut |k| k != key && evictable(k), evicted);
                if r.is_err() {
                    self.remove(key);
                }
                return r;
            }
            Some((i, _)) => {
                self.ghost.unlink(&mut self.slab.nodes, i);
                self.slab.release(i);
                true
            }
            None => false,
        };
        self.make_room(s, evictable, evicted)?;
        // Decided after evicting, as libCacheSim does. Warm-up: until the first eviction, a full S
        // sends new objects to M.
        let to_main = ghost_hit || s > self.cap_small || (!self.has_evicted && self.small.bytes >= self.cap_small);
        let target = if to_main { M } else { S };
        let i = self.slab.alloc(key, s, target);
        let nodes = &mut self.slab.nodes;
        match target {
            S => self.small.push_head(nodes, i),
            _ => self.main.push_head(nodes, i),
        }
        Ok(())
    }

    fn remove(&mut self, key: Key) -> Option<u64> {
        let i = self.slab.find(key)?;
        let (tag, size) = (self.slab.node(i).tag(), self.slab.node(i).size());
        let list = match tag {
            S => &mut self.small,
            M => &mut self.main,
            _ => &mut self.ghost,
        };
        list.unlink(&mut self.slab.nodes, i);
        self.slab.release(i);
        (tag != G).then_some(size)
    }

    fn contains(&self, key: Key) -> bool {
        self.size_of(key).is_some()
    }

    fn size_of(&self, key: Key) -> Option<u64> {
        let n = self.slab.node(self.slab.find(key)?);
        (n.tag() != G).then(|| n.size())
    }

    fn len(&self) -> usize {
        self.small.len + self.main.len
    }

    fn used_bytes(&self) -> u64 {
        self.used()
    }

    fn capacity_bytes(&self) -> u64 {
        self.c
    }

    fn evict_one(&mut self, evictable: &mut dyn FnMut(Key) -> bool) -> Option<Key> {
        self.evict(evictable)
    }

    fn reserve(&mut self, objects: usize) {
        // Resident objects plus a ghost FIFO of up to 90 % of the capacity.
        let ghosts = (objects as f64 * self.cap_ghost as f64 / self.c.max(1) as f64) as usize;
        self.slab.reserve(objects + ghosts);
    }

    fn memory_bytes(&self) -> usize {
        self.slab.memory_bytes()
    }

    fn check_invariants(&self) -> Result<(), String> {
        self.small.check(&self.slab, S, "s3-fifo S")?;
        self.main.check(&self.slab, M, "s3-fifo M")?;
        self.ghost.check(&self.slab, G, "s3-fifo G")?;
        if self.small.len + self.main.len + self.ghost.len != self.slab.len() {
            return Err("s3-fifo: listed and indexed entries differ".into());
        }
        if self.used() > self.c {
            return Err(format!("s3-fifo: used {} > capacity {}", self.used(), self.c));
        }
        if self.ghost.bytes > self.cap_ghost {
            return Err(format!("s3-fifo: ghost {} > {}", self.ghost.bytes, self.cap_ghost));
        }
        let mut i = self.main.head;
        while i != crate::policy::slab::NIL {
            if self.slab.node(i).aux() > MAX_FREQ {
                return Err("s3-fifo: freq above 3".into());
            }
            i = self.slab.node(i).next;
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn put(p: &mut S3Fifo, key: Key) -> Vec<Key> {
        let mut ev = Vec::new();
        p.insert(key, 1, &mut |_| true, &mut ev).unwrap();
        p.check_invariants().unwrap();
        ev
    }

    fn hit(p: &mut S3Fifo, key: Key, times: usize) {
        for _ in 0..times {
            assert!(p.on_hit(key));
        }
    }

    /// c = 10 (S 1, M 9, G 9) filled with 1..=10: 1 in S, then S is full and (warm-up) 2..=10 go to M.
    fn filled() -> S3Fifo {
        let mut p = S3Fifo::new(10);
        for k in 1..=10 {
            assert!(put(&mut p, k).is_empty());
        }
        assert_eq!(p.queues(), [vec![1], (2..=10).rev().collect(), vec![]]);
        p
    }

    #[test]
    fn a_ghost_renamed_back_before_its_insert_goes_to_main() {
        let mut p = filled();
        hit(&mut p, 1, 2);
        assert_eq!(put(&mut p, 11), vec![2]);
        assert_eq!(put(&mut p, 12), vec![11]);
        // The caller files the ghost of 11 under a lasting name, and brings it back as 111.
        assert!(p.rename_ghost(11, 1 << 63));
        assert!(!p.is_ghost(11) && p.is_ghost(1 << 63));
        assert!(p.rename_ghost(1 << 63, 111));
        put(&mut p, 111);
        assert!(p.queues()[1].contains(&111), "a ghost hit enters M: {:?}", p.queues());
        p.check_invariants().unwrap();
    }

    #[test]
    fn small_to_main_small_to_ghost_and_ghost_hit_to_main() {
        let mut p = filled();
        hit(&mut p, 1, 2);
        // 1 (freq 2 ≥ T) moves to M with freq 0; S is then empty, so M's tail 2 is evicted.
        assert_eq!(put(&mut p, 11), vec![2]);
        assert_eq!(p.queues(), [vec![11], vec![1, 10, 9, 8, 7, 6, 5, 4, 3], vec![]]);
        assert_eq!(p.freq(1), Some(0));
        assert!(!p.is_ghost(2), "main evictions are not remembered");
        // 11 was never hit, 12 once (< T): both leave S for the ghost.
        assert_eq!(put(&mut p, 12), vec![11]);
        hit(&mut p, 12, 1);
        assert_eq!(put(&mut p, 13), vec![12]);
        assert_eq!(p.queues()[2], vec![12, 11]);
        assert!(p.is_ghost(11) && !p.contains(11) && !p.on_hit(11));
        // Ghost hit: 11 leaves G and enters M directly; S's tail 13 makes room.
        assert_eq!(put(&mut p, 11), vec![13]);
        assert_eq!(p.queues(), [vec![], vec![11, 1, 10, 9, 8, 7, 6, 5, 4, 3], vec![13, 12]]);
        // |M| = 10 > cap(M) = 9: the next eviction comes from M.
        assert_eq!(put(&mut p, 14), vec![3]);
        assert_eq!(p.queues()[0], vec![14]);
    }

    #[test]
    fn main_reinserts_with_freq_decrement() {
        let mut p = filled();
        hit(&mut p, 1, 2);
        hit(&mut p, 2, 5);
        hit(&mut p, 3, 1);
        assert_eq!(p.freq(2), Some(3), "capped at 3");
        // 1 is promoted, S is empty → evict_M: 2 (3 → 2) and 3 (1 → 0) go round, 4 is evicted.
        assert_eq!(put(&mut p, 11), vec![4]);
        assert_eq!(p.queues()[1], vec![3, 2, 1, 10, 9, 8, 7, 6, 5]);
        assert_eq!((p.freq(1), p.freq(2), p.freq(3)), (Some(0), Some(2), Some(0)));
    }

    #[test]
    fn a_key_promoted_while_m_is_all_pinned_is_evicted() {
        // The case proptest found: M over its share and all pinned, S's only key hit twice.
        let mut p = S3Fifo::new(79);
        let mut ev = Vec::new();
        let even = &mut |k: Key| k % 2 == 1;
        for (k, s) in [(32, 12), (2, 9), (14, 32), (20, 20), (3, 1)] {
            p.insert(k, s, even, &mut ev).unwrap();
        }
        assert!(p.on_hit(3) && p.on_hit(3));
        // evict_M finds only pinned keys; evict_S promotes 3 to M (freq 2); M again evicts it.
        p.insert(4, 6, even, &mut ev).unwrap();
        assert_eq!(ev, vec![3]);
        p.check_invariants().unwrap();
    }

    #[test]
    fn pinned_keys_get_another_round() {
        let mut p = filled();
        let mut ev = Vec::new();
        // S holds only pinned 1 → fall back to M, whose tail 2 is pinned too: 3 goes.
        p.insert(11, 1, &mut |k| k > 2, &mut ev).unwrap();
        assert_eq!(ev, vec![3]);
        assert_eq!(p.queues()[..2], [vec![11, 1], vec![2, 10, 9, 8, 7, 6, 5, 4]]);
        ev.clear();
        assert_eq!(p.insert(12, 1, &mut |_| false, &mut ev), Err(InsertError::Full));
        assert!(ev.is_empty());
        assert_eq!(p.evict_one(&mut |k| k == 7), Some(7));
        p.check_invariants().unwrap();
    }

    #[test]
    fn large_objects_bypass_small_and_bytes_bound_ghost() {
        let mut p = S3Fifo::new(100); // S 10, M 90, G 90
        let mut ev = Vec::new();
        p.insert(1, 50, &mut |_| true, &mut ev).unwrap();
        assert_eq!(p.queues()[1], vec![1]);
        for k in 2..=30 {
            p.insert(k, 5, &mut |_| true, &mut ev).unwrap();
            p.check_invariants().unwrap();
            assert!(p.used_bytes() <= 100);
        }
        assert!(p.ghost.bytes <= 90 && !p.ghost.is_empty());
    }
}
