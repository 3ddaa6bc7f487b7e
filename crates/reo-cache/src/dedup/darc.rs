//! D-ARC and CD-ARC (CacheDedup), after AustereCache's `src/metadata/cachededup/`
//! (docs/REFERENCES.md §A2).
//!
//! M is ARC over addresses (T1, T2 resident; B1, B2 ghosts; target `p`) plus **B3**, addresses ARC
//! would forget, still mapped to their fingerprint. refcnt(fp) = addresses in T1∪T2 mapping to fp;
//! D evicts only zero-count units (oldest first, the ZR list). An address in B1/B2/B3 whose
//! fingerprint is still in D is a **hit** and is promoted (B1/B2 → T2, B3 → T1).
//!
//! ```text
//! bind(addr, fp):                               # update(), and lookup() on a hit
//!   r ← list(addr); r ∈ B1 ? p ← min(c, p + max(|B2|/|B1|, 1)) : r ∈ B2 ? p ← max(0, p − max(|B1|/|B2|, 1))
//!   detach addr from r (deref its old fp if r ∈ T1∪T2)
//!   if fp ∉ D: while no room in D: (ZR ≠ ∅ ? evict LRU(ZR) : REPLACE(addr))
//!              D[fp] ← new, refcnt 0
//!   tgt ← r ∈ {T1,T2,B1,B2} ? T2 : T1
//!   if tgt = T1:                                # ARC case IV directory bounds; deletions go to B3
//!     while |T1|+|B1| ≥ c: (B1 ≠ ∅ ? LRU(B1) : LRU(T1), deref) → MRU(B3)
//!     while |T1|+|T2|+|B1|+|B2| ≥ 2c: (B2 ≠ ∅ ? LRU(B2) : LRU(B1)) → MRU(B3)
//!   while |T1|+|T2|+|B3| ≥ c+X: (B3 ≠ ∅ ? forget LRU(B3) : REPLACE(addr))
//!   while entries ≥ 2c+X and B3 ≠ ∅: forget LRU(B3)
//!   link addr → fp at MRU(tgt); ref(fp)         # 0 → 1 leaves ZR; a deref 1 → 0 joins MRU(ZR)
//! REPLACE(x): |T1| ≥ 1 ∧ (|T1| > p ∨ (x ∈ B2 ∧ |T1| = p)) ? LRU(T1) → MRU(B1) : LRU(T2) → MRU(B2)
//!             (deref; the other list if that one is empty)
//! ```
//!
//! **Bound (where the sources differ).** We take AustereCache's: **|T1|+|T2|+|B3| ≤ c+X**, not the
//! design text's |T1|+|T2| ≤ c+X. Invariants kept after every call: (i) refcnt(fp) = #T1∪T2
//! addresses → fp; (ii) ZR = {units in D with count 0}; (iii) |T1|+|T2|+|B3| ≤ c+X, |T1|+|B1| ≤ c,
//! |T1|+|T2|+|B1|+|B2| ≤ 2c, and all entries ≤ 2c+X (the metadata budget, `meta_capacity`); (iv)
//! every T1∪T2 address's fingerprint is in D; (v) unique content, X = 0, |D| = c blocks ⇒ the lists
//! and hits are exactly [`crate::policy::Arc`]'s (property-tested).
//!
//! **Deviations from AustereCache, each needed for an invariant above** (found by the property tests):
//! * `p` moves by ARC's ghost ratio, not by 1 (else (v) fails at the first ghost hit).
//! * When D needs room, AustereCache runs its whole `manage()` (ARC case IV, moving LRU(B1)/LRU(B2)
//!   to B3) even for a ghost hit; ARC only REPLACEs there, so we do too (else (v) fails).
//! * AustereCache applies case IV's directory bounds only when D is full or |T1|+|T2|+|B3| = c+X; with
//!   duplicate content neither happens and |T1|+|B1| grows past c. We apply them to every address
//!   entering T1 (the two `while` lines), which is ARC's own rule; ARC's drops become moves to B3.
//! * The address being rebound is detached first, so the eviction loops never demote it mid-update.
//!
//! CD-ARC is the same algorithm over [`WeuStore`]: units are 2 MiB WEUs of LZ4-compressed chunks.

use std::collections::HashMap;

use super::store::{BlockStore, DataStore};
use super::table::AddrTable;
use super::weu::{WeuSlot, WeuStore};
use super::{Chunk, DedupOutcome, DedupPolicy, Fingerprint};
use crate::policy::slab::{List, Slab};
use crate::policy::Key;

const T1: u8 = 0;
const T2: u8 = 1;
const B1: u8 = 2;
const B2: u8 = 3;
const B3: u8 = 4;
/// Unlinked while being rebound.
const DETACHED: u8 = 7;
const NONE: u8 = 8;

/// The D-ARC algorithm over a data store `S`.
#[derive(Debug)]
pub(crate) struct Core<S> {
    m: AddrTable,
    lists: [List; 5],
    p: f64,
    c: usize,
    x: usize,
    d: S,
}

impl<S: DataStore> Core<S> {
    fn new(c: usize, x: usize, d: S) -> Self {
        assert!(c > 0 && x < c, "D-ARC needs c ≥ 1 and X < c (got c = {c}, X = {x})");
        Core { m: AddrTable::new(), lists: [List::default(); 5], p: 0.0, c, x, d }
    }

    fn len(&self, tag: u8) -> usize {
        self.lists[tag as usize].len
    }

    fn list(&mut self, tag: u8) -> (&mut List, &mut Slab) {
        (&mut self.lists[tag as usize], &mut self.m.slab)
    }

    /// Moves node `i` (detached) to MRU of `to`, adjusting refcounts when crossing T ↔ ghost.
    fn link(&mut self, i: u32, to: u8) {
        self.m.slab.node_mut(i).set_tag(to);
        let (l, s) = self.list(to);
        l.push_head(&mut s.nodes, i);
        if to <= T2 {
            self.d.reference(&self.m.fp(i));
        }
    }

    /// Unlinks node `i` from its list (dereferencing its fingerprint if resident); returns the tag.
    fn detach(&mut self, i: u32) -> u8 {
        let tag = self.m.tag(i);
        let (l, s) = self.list(tag);
        l.unlink(&mut s.nodes, i);
        s.node_mut(i).set_tag(DETACHED);
        if tag <= T2 {
            self.d.dereference(&self.m.fp(i));
        }
        tag
    }

    /// LRU(from) → MRU(to).
    fn demote(&mut self, from: u8, to: u8) {
        let i = self.lists[from as usize].tail;
        self.detach(i);
        self.link(i, to);
    }

    fn forget_lru_b3(&mut self) {
        let i = self.lists[B3 as usize].tail;
        self.detach(i);
        self.m.slab.release(i);
    }

    /// ARC's REPLACE; `false` if T1 and T2 are empty.
    fn replace(&mut self, x_in_b2: bool) -> bool {
        let t1 = self.len(T1) as f64;
        let from_t1 = self.len(T1) > 0 && (t1 > self.p || (x_in_b2 && t1 == self.p) || self.len(T2) == 0);
        match (from_t1, self.len(T2) > 0) {
            (true, _) => self.demote(T1, B1),
            (false, true) => self.demote(T2, B2),
            (false, false) => return false,
        }
        true
    }

    fn entries(&self) -> usize {
        self.m.slab.len()
    }

    fn bind(&mut self, addr: Key, fp: Fingerprint, chunk: Option<&Chunk>, out: &mut DedupOutcome) {
        out.reset();
        let found = self.m.slab.find(addr);
        let r = found.map_or(NONE, |i| self.m.tag(i));
        let (b1, b2) = (self.len(B1) as f64, self.len(B2) as f64);
        if r == B1 {
            self.p = (self.p + (b2 / b1).max(1.0)).min(self.c as f64);
        } else if r == B2 {
            self.p = (self.p - (b1 / b2).max(1.0)).max(0.0);
        }
        if let Some(i) = found {
            self.detach(i);
        }
        if !self.d.contains(&fp) {
            let chunk = chunk.expect("bind of a fingerprint not in D needs its chunk");
            let mut fits = !self.d.too_large(chunk);
            while fits && !self.d.has_room(chunk) {
                // ZR = ∅ and T1∪T2 = ∅ would mean a full D of referenced units with no reference.
                fits = self.d.evict_zero(out) || self.replace(r == B2);
                debug_assert!(fits, "D full, ZR empty and T1∪T2 empty");
            }
            if !fits {
                if let Some(i) = found {
                    self.m.slab.release(i);
                }
                return;
            }
            self.d.insert(chunk, out);
        }
        let tgt = if r <= B2 { T2 } else { T1 };
        if tgt == T1 {
            while self.len(T1) + self.len(B1) >= self.c {
                self.demote(if self.len(B1) > 0 { B1 } else { T1 }, B3);
            }
            while self.len(T1) + self.len(T2) + self.len(B1) + self.len(B2) >= 2 * self.c {
                self.demote(if self.len(B2) > 0 { B2 } else { B1 }, B3);
            }
        }
        while self.len(T1) + self.len(T2) + self.len(B3) >= self.c + self.x {
            if self.len(B3) > 0 {
                self.forget_lru_b3();
            } else if !self.replace(r == B2) {
                break;
            }
        }
        while self.entries() + usize::from(found.is_none()) > 2 * self.c + self.x && self.len(B3) > 0 {
            self.forget_lru_b3();
        }
        let i = match found {
            Some(i) => {
                self.m.set_fp(i, fp);
                i
            }
            None => self.m.alloc(addr, fp, DETACHED),
        };
        self.link(i, tgt);
        out.admitted = true;
    }

    fn lookup(&mut self, addr: Key) -> Option<Fingerprint> {
        let fp = self.m.fp(self.m.slab.find(addr)?);
        if !self.d.contains(&fp) {
            return None;
        }
        self.bind(addr, fp, None, &mut DedupOutcome::default());
        Some(fp)
    }

    fn remove(&mut self, addr: Key) -> bool {
        let Some(i) = self.m.slab.find(addr) else { return false };
        self.detach(i);
        self.m.slab.release(i);
        true
    }

    fn mapping(&self, addr: Key) -> Option<Fingerprint> {
        self.m.slab.find(addr).map(|i| self.m.fp(i))
    }

    /// Keys of T1, T2, B1, B2, B3, each MRU first.
    fn lists(&self) -> [Vec<Key>; 5] {
        self.lists.each_ref().map(|l| l.keys(&self.m.slab.nodes))
    }

    fn check(&self, name: &str) -> Result<(), String> {
        let names = ["T1", "T2", "B1", "B2", "B3"];
        for (tag, l) in self.lists.iter().enumerate() {
            l.check(&self.m.slab, tag as u8, &format!("{name} {}", names[tag]))?;
        }
        let [t1, t2, b1, b2, b3] = self.lists.each_ref().map(|l| l.len);
        let (c, x) = (self.c, self.x);
        if t1 + t2 + b1 + b2 + b3 != self.entries() {
            return Err(format!("{name}: {} listed, {} indexed", t1 + t2 + b1 + b2 + b3, self.entries()));
        }
        if t1 + t2 + b3 > c + x || t1 + b1 > c || t1 + t2 + b1 + b2 > 2 * c || self.entries() > 2 * c + x {
            return Err(format!("{name} (iii): T1 {t1} T2 {t2} B1 {b1} B2 {b2} B3 {b3}, c {c} X {x}"));
        }
        if !(0.0..=c as f64).contains(&self.p) {
            return Err(format!("{name}: p = {} outside [0, {c}]", self.p));
        }
        let mut refs = HashMap::new();
        for tag in [T1, T2] {
            let mut i = self.lists[tag as usize].head;
            while i != crate::policy::slab::NIL {
                *refs.entry(self.m.fp(i)).or_insert(0u32) += 1;
                i = self.m.slab.node(i).next;
            }
        }
        self.d.check(&refs).map_err(|e| format!("{name}: {e}"))
    }
}

macro_rules! dedup_arc {
    ($ty:ident, $name:literal) => {
        impl $ty {
            /// Keys of T1, T2, B1, B2, B3, each MRU first.
            pub fn lists(&self) -> [Vec<Key>; 5] {
                self.0.lists()
            }

            /// ARC's target size of T1.
            pub fn p(&self) -> f64 {
                self.0.p
            }
        }

        impl DedupPolicy for $ty {
            fn name(&self) -> &'static str {
                $name
            }
            fn lookup(&mut self, addr: Key) -> Option<Fingerprint> {
                self.0.lookup(addr)
            }
            fn update(&mut self, addr: Key, chunk: &Chunk, out: &mut DedupOutcome) {
                self.0.bind(addr, chunk.fp, Some(chunk), out)
            }
            fn remove(&mut self, addr: Key) -> bool {
                self.0.remove(addr)
            }
            fn mapping(&self, addr: Key) -> Option<Fingerprint> {
                self.0.mapping(addr)
            }
            fn contains_fp(&self, fp: &Fingerprint) -> bool {
                self.0.d.contains(fp)
            }
            fn meta_len(&self) -> usize {
                self.0.entries()
            }
            fn meta_capacity(&self) -> usize {
                2 * self.0.c + self.0.x
            }
            fn data_len(&self) -> usize {
                self.0.d.len()
            }
            fn data_bytes(&self) -> u64 {
                self.0.d.used_bytes()
            }
            fn data_capacity(&self) -> u64 {
                self.0.d.capacity_bytes()
            }
            fn memory_bytes(&self) -> usize {
                self.0.m.memory_bytes() + self.0.d.memory_bytes()
            }
            fn check_invariants(&self) -> Result<(), String> {
                self.0.check($name)
            }
        }
    };
}

/// D-ARC: ARC over addresses with B3, refcounted fingerprint store of `data_bytes`.
#[derive(Debug)]
pub struct DArc(Core<BlockStore>);

impl DArc {
    /// ARC size `c` (resident addresses, and ghosts), `x` extra entries for T1∪T2∪B3 (X < c), and a
    /// data cache of `data_bytes` (unit-size chunks: blocks).
    pub fn new(c: usize, x: usize, data_bytes: u64) -> Self {
        DArc(Core::new(c, x, BlockStore::new(data_bytes)))
    }

    /// Stored bytes of `fp` in D.
    pub fn stored(&self, fp: &Fingerprint) -> Option<u32> {
        self.0.d.stored(fp)
    }
}

/// CD-ARC: D-ARC's metadata over compressed chunks packed into write-evict units.
#[derive(Debug)]
pub struct CdArc(Core<WeuStore>);

impl CdArc {
    /// As [`DArc::new`], with D made of `data_bytes / weu_bytes` WEUs (at least one).
    pub fn new(c: usize, x: usize, data_bytes: u64, weu_bytes: u32) -> Self {
        CdArc(Core::new(c, x, WeuStore::new(data_bytes, weu_bytes)))
    }

    /// Where `fp`'s compressed chunk is.
    pub fn slot(&self, fp: &Fingerprint) -> Option<WeuSlot> {
        self.0.d.slot(fp)
    }

    /// WEUs in use.
    pub fn weus(&self) -> usize {
        self.0.d.weus()
    }
}

dedup_arc!(DArc, "d-arc");
dedup_arc!(CdArc, "cd-arc");
