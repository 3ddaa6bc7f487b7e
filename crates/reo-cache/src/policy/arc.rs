//! ARC (Megiddo & Modha, FAST'03), exact, with sizes accounted in bytes.
//!
//! T1 (seen once) and T2 (seen twice or more) are resident; B1 and B2 are their ghosts; `p` is the
//! target size of T1. With unit sizes this is the paper's algorithm (and libCacheSim's `ARC.c`,
//! float `p`) step for step:
//!
//! ```text
//! x ∈ T1∪T2 → move to MRU(T2)
//! x ∈ B1    → p ← min(c, p + max(|B2|/|B1|, 1)); REPLACE(x); x → MRU(T2)
//! x ∈ B2    → p ← max(0, p − max(|B1|/|B2|, 1)); REPLACE(x); x → MRU(T2)
//! new x     → if |T1|+|B1| = c: |T1| < c ? (drop LRU(B1); REPLACE) : evict LRU(T1), no ghost
//!             elif total ≥ c: (total = 2c ? drop LRU(B2)); REPLACE
//!             x → MRU(T1)
//! REPLACE(x): |T1| ≥ 1 ∧ (|T1| > p ∨ (x ∈ B2 ∧ |T1| = p)) ? LRU(T1) → MRU(B1) : LRU(T2) → MRU(B2)
//! ```
//!
//! Generalisation to bytes (identical for unit sizes), with `s` the incoming size:
//! * `|·|` are byte totals; "|T1|+|B1| = c" reads `|T1|+|B1|+s > c`: LRU(B1) ghosts are dropped
//!   while that holds, then LRU(T1) entries are evicted without ghost while it still holds;
//!   "total = 2c" reads `total + s > 2c`: LRU(B2) (then LRU(B1)) ghosts are dropped while it holds.
//! * REPLACE runs while `used + s > c` (a ghost hit on a cache that is not full, possible after
//!   explicit removals, evicts nothing).
//! * The `p` step is scaled by the object size: `p ± max(ratio, 1) · s`, the ratio being of ghost
//!   bytes. (libCacheSim adds the bare ratio to a byte-valued `p`, which barely moves `p` for
//!   KiB-sized objects.)
//! * Pinned/dirty keys are skipped in place; if REPLACE's list has no evictable key, the other
//!   resident list is used (as libCacheSim does when T2 is empty).

use super::{accounted_size, InsertError, Key, Policy};
use crate::policy::slab::{List, Slab};

const T1: u8 = 0;
const T2: u8 = 1;
const B1: u8 = 2;
const B2: u8 = 3;

/// Adaptive Replacement Cache, in bytes.
#[derive(Debug)]
pub struct Arc {
    slab: Slab,
    t1: List,
    t2: List,
    b1: List,
    b2: List,
    p: f64,
    c: u64,
}

impl Arc {
    /// An empty ARC holding at most `capacity_bytes` resident bytes (c), p = 0.
    pub fn new(capacity_bytes: u64) -> Self {
        let l = List::default();
        Arc { slab: Slab::new(), t1: l, t2: l, b1: l, b2: l, p: 0.0, c: capacity_bytes }
    }

    /// Current target size of T1, in bytes.
    pub fn p(&self) -> f64 {
        self.p
    }

    /// Keys of T1, T2, B1, B2, each MRU first.
    pub fn lists(&self) -> [Vec<Key>; 4] {
        [&self.t1, &self.t2, &self.b1, &self.b2].map(|l| l.keys(&self.slab.nodes))
    }

    fn list(&mut self, tag: u8) -> (&mut List, &mut Slab) {
        let l = match tag {
            T1 => &mut self.t1,
            T2 => &mut self.t2,
            B1 => &mut self.b1,
            _ => &mut self.b2,
        };
        (l, &mut self.slab)
    }

    fn used(&self) -> u64 {
        self.t1.bytes + self.t2.bytes
    }

    fn total(&self) -> u64 {
        self.used() + self.b1.bytes + self.b2.bytes
    }

    /// Unlinks and frees node `i` of list `tag`.
    fn forget(&mut self, tag: u8, i: u32) {
        let (l, s) = self.list(tag);
        l.unlink(&mut s.nodes, i);
        s.release(i);
    }

    fn drop_lru_ghost(&mut self, tag: u8) {
        let (l, _) = self.list(tag);
        let i = l.tail;
        self.forget(tag, i);
    }

    /// Keeps `total + incoming ≤ 2c` by dropping ghosts (B2 first, as in the paper).
    fn bound_directory(&mut self, incoming: u64) {
        while self.total() + incoming > 2 * self.c {
            if !self.b2.is_empty() {
                self.drop_lru_ghost(B2);
            } else if !self.b1.is_empty() {
                self.drop_lru_ghost(B1);
            } else {
                break;
            }
        }
    }

    /// REPLACE(x, p): moves an evictable LRU entry of T1 or T2 to its ghost list.
    fn replace(&mut self, x_in_b2: bool, evictable: &mut dyn FnMut(Key) -> bool) -> Option<Key> {
        let t1 = self.t1.bytes as f64;
        let from_t1 = !self.t1.is_empty() && (t1 > self.p || (x_in_b2 && t1 == self.p));
        let order = if from_t1 { [T1, T2] } else { [T2, T1] };
        for tag in order {
            let (l, s) = self.list(tag);
            if let Some(i) = l.find_from_tail(&s.nodes, evictable) {
                l.unlink(&mut s.nodes, i);
                let ghost = tag + 2;
                s.node_mut(i).set_tag(ghost);
                let key = s.node(i).key;
                let (g, s) = self.list(ghost);
                g.push_head(&mut s.nodes, i);
                return Some(key);
            }
        }
        None
    }

    fn make_room(
        &mut self,
        incoming: u64,
        x_in_b2: bool,
        evictable: &mut dyn FnMut(Key) -> bool,
        evicted: &mut Vec<Key>,
    ) -> Result<(), InsertError> {
        while self.used() + incoming > self.c {
            evicted.push(self.replace(x_in_b2, evictable).ok_or(InsertError::Full)?);
        }
        Ok(())
    }

    /// Overwrite of resident `key` (slot `i`): a hit plus a size change.
    fn overwrite(
        &mut self,
        key: Key,
        i: u32,
        size: u64,
        evictable: &mut dyn FnMut(Key) -> bool,
        evicted: &mut Vec<Key>,
    ) -> Result<(), InsertError> {
        self.on_hit(key);
        self.t2.resize(&mut self.slab.nodes, i, size);
        self.bound_directory(0);
        let r = self.make_room(0, false, &mut |k| k != key && evictable(k), evicted);
        if r.is_err() {
            self.remove(key);
        }
        r
    }
}

impl Policy for Arc {
    fn name(&self) -> &'static str {
        "arc"
    }

    fn on_hit(&mut self, key: Key) -> bool {
        let Some(i) = self.slab.find(key) else { return false };
        match self.slab.node(i).tag() {
            T1 => {
                self.t1.unlink(&mut self.slab.nodes, i);
                self.slab.node_mut(i).set_tag(T2);
                self.t2.push_head(&mut self.slab.nodes, i);
                true
            }
            T2 => {
                self.t2.move_to_head(&mut self.slab.nodes, i);
                true
            }
            _ => false,
        }
    }

    fn is_ghost(&self, key: Key) -> bool {
        self.slab.find(key).is_some_and(|i| self.slab.node(i).tag() >= B1)
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
        let (c, sf) = (self.c as f64, s as f64);
        let found = self.slab.find(key).map(|i| (i, self.slab.node(i).tag()));
        let (target, x_in_b2) = match found {
            Some((i, T1 | T2)) => return self.overwrite(key, i, s, evictable, evicted),
            Some((i, B1)) => {
                let ratio = self.b2.bytes as f64 / self.b1.bytes as f64;
                self.p = (self.p + ratio.max(1.0) * sf).min(c);
                self.forget(B1, i);
                (T2, false)
            }
            Some((i, _)) => {
                let ratio = self.b1.bytes as f64 / self.b2.bytes as f64;
                self.p = (self.p - ratio.max(1.0) * sf).max(0.0);
                self.forget(B2, i);
                (T2, true)
            }
            None => {
                // Case IV.A: L1 = T1 ∪ B1 is full.
                while self.t1.bytes + self.b1.bytes + s > self.c && !self.b1.is_empty() {
                    self.drop_lru_ghost(B1);
                }
                while self.t1.bytes + s > self.c {
                    let i = self.t1.find_from_tail(&self.slab.nodes, evictable).ok_or(InsertError::Full)?;
                    evicted.push(self.slab.node(i).key);
                    self.forget(T1, i);
                }
                (T1, false)
            }
        };
        // Case IV.B's "total = 2c" (and its byte generalisation for every path).
        self.bound_directory(s);
        self.make_room(s, x_in_b2, evictable, evicted)?;
        let i = self.slab.alloc(key, s, target);
        let (l, slab) = self.list(target);
        l.push_head(&mut slab.nodes, i);
        Ok(())
    }

    fn remove(&mut self, key: Key) -> Option<u64> {
        let i = self.slab.find(key)?;
        let (tag, size) = (self.slab.node(i).tag(), self.slab.node(i).size());
        self.forget(tag, i);
        (tag <= T2).then_some(size)
    }

    fn contains(&self, key: Key) -> bool {
        self.size_of(key).is_some()
    }

    fn size_of(&self, key: Key) -> Option<u64> {
        let n = self.slab.node(self.slab.find(key)?);
        (n.tag() <= T2).then(|| n.size())
    }

    fn len(&self) -> usize {
        self.t1.len + self.t2.len
    }

    fn used_bytes(&self) -> u64 {
        self.used()
    }

    fn capacity_bytes(&self) -> u64 {
        self.c
    }

    fn evict_one(&mut self, evictable: &mut dyn FnMut(Key) -> bool) -> Option<Key> {
        self.replace(false, evictable)
    }

    fn reserve(&mut self, objects: usize) {
        // Up to c resident entries plus c ghosts.
        self.slab.reserve(2 * objects);
    }

    fn memory_bytes(&self) -> usize {
        self.slab.memory_bytes()
    }

    fn check_invariants(&self) -> Result<(), String> {
        self.t1.check(&self.slab, T1, "arc T1")?;
        self.t2.check(&self.slab, T2, "arc T2")?;
        self.b1.check(&self.slab, B1, "arc B1")?;
        self.b2.check(&self.slab, B2, "arc B2")?;
        let c = self.c;
        let entries = self.t1.len + self.t2.len + self.b1.len + self.b2.len;
        if entries != self.slab.len() {
            return Err(format!("arc: {entries} listed entries, {} indexed", self.slab.len()));
        }
        if self.used() > c {
            return Err(format!("arc: |T1|+|T2| = {} > c = {c}", self.used()));
        }
        if self.t1.bytes + self.b1.bytes > c {
            return Err(format!("arc: |T1|+|B1| = {} > c = {c}", self.t1.bytes + self.b1.bytes));
        }
        if self.total() > 2 * c {
            return Err(format!("arc: total {} > 2c = {}", self.total(), 2 * c));
        }
        if !(0.0..=c as f64).contains(&self.p) {
            return Err(format!("arc: p = {} outside [0, {c}]", self.p));
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    fn put(a: &mut Arc, key: Key) -> Vec<Key> {
        let mut ev = Vec::new();
        a.insert(key, 1, &mut |_| true, &mut ev).unwrap();
        a.check_invariants().unwrap();
        ev
    }

    fn state(a: &Arc) -> [Vec<Key>; 4] {
        a.lists()
    }

    #[test]
    fn hits_promote_t1_to_t2_and_refresh_t2() {
        let mut a = Arc::new(4);
        put(&mut a, 1);
        put(&mut a, 2);
        assert!(a.on_hit(1));
        assert_eq!(state(&a), [vec![2], vec![1], vec![], vec![]]);
        put(&mut a, 3);
        assert!(a.on_hit(3));
        assert_eq!(state(&a), [vec![2], vec![3, 1], vec![], vec![]]);
        assert!(a.on_hit(1));
        assert_eq!(state(&a), [vec![2], vec![1, 3], vec![], vec![]]);
        assert!(!a.on_hit(9));
    }

    #[test]
    fn a_renamed_ghost_is_hit_under_its_new_name_only() {
        let mut a = Arc::new(4);
        for k in 1..=4 {
            put(&mut a, k);
        }
        a.on_hit(1);
        a.on_hit(2);
        assert_eq!(put(&mut a, 5), vec![3]);
        assert!(!a.rename_ghost(5, 30), "a resident key is no ghost");
        assert!(a.rename_ghost(3, 30));
        assert!(!a.is_ghost(3) && a.is_ghost(30));
        assert!(!a.rename_ghost(30, 5), "the new name is taken: the ghost goes");
        assert!(!a.is_ghost(30) && a.contains(5));
        a.check_invariants().unwrap();
    }

    #[test]
    fn ghost_hits_adapt_p_and_enter_t2() {
        let mut a = Arc::new(4);
        for k in 1..=4 {
            put(&mut a, k);
        }
        a.on_hit(1);
        a.on_hit(2);
        // New key, |T1|+|B1| < c, total ≥ c: REPLACE takes LRU(T1) since |T1| = 2 > p = 0.
        assert_eq!(put(&mut a, 5), vec![3]);
        assert_eq!(state(&a), [vec![5, 4], vec![2, 1], vec![3], vec![]]);
        assert!(a.is_ghost(3) && !a.contains(3));
        // Ghost hit in B1: p += max(|B2|/|B1|, 1) = 1; REPLACE: |T1| = 2 > 1 → LRU(T1) = 4 to B1.
        assert_eq!(put(&mut a, 3), vec![4]);
        assert_eq!(a.p(), 1.0);
        assert_eq!(state(&a), [vec![5], vec![3, 2, 1], vec![4], vec![]]);
        // New key: |T1| = 1 = p, x not in B2 → LRU(T2) = 1 to B2.
        assert_eq!(put(&mut a, 6), vec![1]);
        assert_eq!(state(&a), [vec![6, 5], vec![3, 2], vec![4], vec![1]]);
        // Ghost hit in B2: p −= max(|B1|/|B2|, 1) = 1 → 0; REPLACE: |T1| = 2 > 0 → 5 to B1.
        assert_eq!(put(&mut a, 1), vec![5]);
        assert_eq!(a.p(), 0.0);
        assert_eq!(state(&a), [vec![6], vec![1, 3, 2], vec![5, 4], vec![]]);
    }

    #[test]
    fn b1_hit_step_is_the_ghost_ratio() {
        let mut a = Arc::new(2);
        put(&mut a, 1);
        put(&mut a, 2);
        a.on_hit(1);
        a.on_hit(2);
        assert_eq!(put(&mut a, 3), vec![1]); // T2 → B2
        a.on_hit(3);
        assert_eq!(put(&mut a, 4), vec![2]);
        assert_eq!(state(&a), [vec![4], vec![3], vec![], vec![2, 1]]);
        assert_eq!(a.evict_one(&mut |_| true), Some(4)); // |T1| = 1 > p = 0
        assert_eq!(state(&a), [vec![], vec![3], vec![4], vec![2, 1]]);
        // |B2|/|B1| = 2: p = 2. The cache has room, so nothing is replaced.
        assert_eq!(put(&mut a, 4), Vec::<Key>::new());
        assert_eq!(a.p(), 2.0);
        assert_eq!(state(&a), [vec![], vec![4, 3], vec![], vec![2, 1]]);
        // B2 hit: |B1|/|B2| = 0 → step 1, p = 1; T1 empty → LRU(T2) = 3 to B2.
        assert_eq!(put(&mut a, 1), vec![3]);
        assert_eq!(a.p(), 1.0);
        assert_eq!(state(&a), [vec![], vec![1, 4], vec![], vec![3, 2]]);
    }

    #[test]
    fn new_key_with_full_l1_drops_b1_or_evicts_t1_without_ghost() {
        // Sub-case |T1| < c: drop LRU(B1), then REPLACE.
        let mut a = Arc::new(4);
        for k in 1..=4 {
            put(&mut a, k);
        }
        a.on_hit(3);
        a.on_hit(4);
        put(&mut a, 5); // 1 → B1
        a.on_hit(5);
        put(&mut a, 6); // 2 → B1
        assert_eq!(state(&a), [vec![6], vec![5, 4, 3], vec![2, 1], vec![]]);
        put(&mut a, 7); // |T1| = 1 > p = 0: 6 → B1
        assert_eq!(state(&a), [vec![7], vec![5, 4, 3], vec![6, 2, 1], vec![]]);
        assert_eq!(a.t1.len + a.b1.len, 4);
        assert_eq!(put(&mut a, 8), vec![7]);
        assert_eq!(state(&a), [vec![8], vec![5, 4, 3], vec![7, 6, 2], vec![]], "LRU(B1) = 1 dropped");
        // Sub-case |T1| = c: evict LRU(T1), no ghost, no REPLACE.
        let mut a = Arc::new(2);
        put(&mut a, 1);
        put(&mut a, 2);
        assert_eq!(put(&mut a, 3), vec![1]);
        assert_eq!(state(&a), [vec![3, 2], vec![], vec![], vec![]]);
        assert!(!a.is_ghost(1));
    }

    #[test]
    fn new_key_with_total_2c_drops_lru_of_b2() {
        let mut a = Arc::new(2);
        put(&mut a, 1);
        put(&mut a, 2);
        a.on_hit(1);
        a.on_hit(2);
        put(&mut a, 3); // 1 → B2
        a.on_hit(3);
        // total = 3 ≥ c but < 2c: REPLACE only.
        assert_eq!(put(&mut a, 4), vec![2]);
        assert_eq!(state(&a), [vec![4], vec![3], vec![], vec![2, 1]]);
        assert_eq!(a.total(), 4);
        // |T1|+|B1| = 1 < c and total = 2c: drop LRU(B2) = 1, then REPLACE (4 → B1).
        assert_eq!(put(&mut a, 5), vec![4]);
        assert_eq!(state(&a), [vec![5], vec![3], vec![4], vec![2]]);
        assert!(!a.is_ghost(1));
        // Same with B1 non-empty: it is B2's LRU that goes, not B1's.
        let mut a = Arc::new(3);
        for k in 1..=3 {
            put(&mut a, k);
        }
        for k in 1..=3 {
            a.on_hit(k);
        }
        put(&mut a, 4);
        a.on_hit(4);
        put(&mut a, 5);
        put(&mut a, 6);
        assert_eq!(state(&a), [vec![6], vec![4, 3], vec![5], vec![2, 1]]);
        assert_eq!(put(&mut a, 7), vec![6]);
        assert_eq!(state(&a), [vec![7], vec![4, 3], vec![6, 5], vec![2]]);
    }

    /// c = 2, T1 = [5], T2 = [3], B1 = [4], B2 = [2], p = 0.
    fn tie_state() -> Arc {
        let mut a = Arc::new(2);
        for k in [1, 2] {
            put(&mut a, k);
            a.on_hit(k);
        }
        put(&mut a, 3);
        a.on_hit(3);
        put(&mut a, 4);
        put(&mut a, 5);
        assert_eq!(state(&a), [vec![5], vec![3], vec![4], vec![2]]);
        assert_eq!(a.p(), 0.0);
        a
    }

    #[test]
    fn replace_tie_favours_t1_only_for_b2_hits() {
        let mut a = tie_state();
        a.p = 2.0;
        // B2 hit on 2: p = 2 − max(|B1|/|B2|, 1) = 1 = |T1| and x ∈ B2 → LRU(T1) = 5.
        assert_eq!(put(&mut a, 2), vec![5]);
        assert_eq!(a.p(), 1.0);
        assert_eq!(state(&a), [vec![], vec![2, 3], vec![5, 4], vec![]]);
        // B1 hit on 4: p = 0 + 1 = 1 = |T1| but x ∉ B2 → LRU(T2) = 3.
        let mut a = tie_state();
        assert_eq!(put(&mut a, 4), vec![3]);
        assert_eq!(a.p(), 1.0);
        assert_eq!(state(&a), [vec![5], vec![4], vec![], vec![3, 2]]);
    }

    #[test]
    fn pinned_lru_is_skipped_and_other_list_used() {
        let mut a = Arc::new(3);
        for k in 1..=3 {
            put(&mut a, k);
        }
        let mut ev = Vec::new();
        a.insert(4, 1, &mut |k| k != 1, &mut ev).unwrap();
        assert_eq!(ev, vec![2]);
        // |T1| = c: case IV.A evicts the first evictable LRU(T1) without ghost.
        assert_eq!(state(&a), [vec![4, 3, 1], vec![], vec![], vec![]]);
        // Everything in T1 pinned, T2 has 4 after a hit: falls back to T2.
        a.on_hit(4);
        ev.clear();
        a.insert(5, 1, &mut |k| k == 4, &mut ev).unwrap();
        assert_eq!(ev, vec![4]);
        ev.clear();
        assert_eq!(a.insert(6, 1, &mut |_| false, &mut ev), Err(InsertError::Full));
        assert!(!a.contains(6));
        a.check_invariants().unwrap();
    }

    #[derive(Debug, Clone)]
    enum Op {
        Get(u64, u64),
        Remove(u64),
        EvictOne,
    }

    fn op(keys: u64, max_size: u64) -> impl Strategy<Value = Op> {
        prop_oneof![
            8 => (0..keys, 1..=max_size).prop_map(|(k, s)| Op::Get(k, s)),
            1 => (0..keys).prop_map(Op::Remove),
            1 => Just(Op::EvictOne),
        ]
    }

    fn run(c: u64, ops: &[Op], sizes_vary: bool, pin_mod: u64) {
        let mut a = Arc::new(c);
        let mut ev = Vec::new();
        let mut evictable = |k: Key| pin_mod == 0 || !k.is_multiple_of(pin_mod);
        for o in ops {
            match *o {
                Op::Get(k, s) => {
                    let s = if sizes_vary { s } else { 1 };
                    if !a.on_hit(k) {
                        let _ = a.insert(k, s, &mut evictable, &mut ev);
                    }
                }
                Op::Remove(k) => drop(a.remove(k)),
                Op::EvictOne => drop(a.evict_one(&mut evictable)),
            }
            a.check_invariants().unwrap();
        }
    }

    proptest! {
        #[test]
        fn invariants_hold_unit_sizes(c in 1u64..12, ops in prop::collection::vec(op(40, 1), 1..400)) {
            run(c, &ops, false, 0);
        }

        #[test]
        fn invariants_hold_bytes_and_pins(c in 1u64..64, pin in 0u64..4,
                                          ops in prop::collection::vec(op(40, 24), 1..400)) {
            run(c, &ops, true, pin);
        }
    }
}
