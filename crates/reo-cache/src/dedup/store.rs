//! D, the data side of D-ARC and CD-ARC: the [`DataStore`] interface the D-ARC algorithm drives,
//! and [`BlockStore`], D-ARC's fingerprint store.
//!
//! D-ARC only needs: membership, "is there room for this chunk", "evict the oldest zero-reference
//! unit" (one fingerprint here, a whole WEU in [`WeuStore`](super::weu::WeuStore)), insertion, and
//! reference counting (refcnt(fp) = addresses in T1 ∪ T2 mapping to fp). A unit whose count drops to 0
//! joins the MRU end of ZR; one that goes back to 1 leaves it. A freshly inserted fingerprint has
//! count 0 and is not in ZR: the D-ARC update that inserted it references it before returning.

use std::collections::HashMap;

use super::table::{Chain, FpTable};
use super::{Chunk, DedupOutcome, Fingerprint};

/// The data cache as seen by the D-ARC algorithm.
pub(crate) trait DataStore: Send {
    fn contains(&self, fp: &Fingerprint) -> bool;
    /// The chunk can never fit (larger than D, or than a WEU).
    fn too_large(&self, chunk: &Chunk) -> bool;
    /// The chunk fits without evicting.
    fn has_room(&self, chunk: &Chunk) -> bool;
    /// Evicts the LRU unit of ZR into `out`; `false` if ZR is empty.
    fn evict_zero(&mut self, out: &mut DedupOutcome) -> bool;
    /// Stores a chunk that is not present and for which there is room; fills `out`'s write fields.
    fn insert(&mut self, chunk: &Chunk, out: &mut DedupOutcome);
    fn reference(&mut self, fp: &Fingerprint);
    fn dereference(&mut self, fp: &Fingerprint);
    fn len(&self) -> usize;
    fn used_bytes(&self) -> u64;
    fn capacity_bytes(&self) -> u64;
    fn memory_bytes(&self) -> usize;
    /// Checks refcounts against `refs` (fingerprint → T1∪T2 addresses; absent = 0), ZR = {count 0},
    /// and the byte accounting.
    fn check(&self, refs: &HashMap<Fingerprint, u32>) -> Result<(), String>;
}

/// D-ARC's D: fingerprint → stored bytes and refcount, ZR = LRU of zero-count fingerprints.
#[derive(Debug)]
pub(crate) struct BlockStore {
    fps: FpTable,
    zr: Chain,
    used: u64,
    capacity: u64,
}

impl BlockStore {
    pub fn new(capacity_bytes: u64) -> Self {
        assert!(capacity_bytes > 0, "empty data cache");
        BlockStore { fps: FpTable::new(), zr: Chain::default(), used: 0, capacity: capacity_bytes }
    }

    /// Stored bytes of `fp` (0-byte chunks count 1).
    pub fn stored(&self, fp: &Fingerprint) -> Option<u32> {
        self.fps.find(fp).map(|i| self.fps.ent(i).stored)
    }
}

impl DataStore for BlockStore {
    fn contains(&self, fp: &Fingerprint) -> bool {
        self.fps.find(fp).is_some()
    }

    fn too_large(&self, chunk: &Chunk) -> bool {
        u64::from(chunk.size.max(1)) > self.capacity
    }

    fn has_room(&self, chunk: &Chunk) -> bool {
        self.used + u64::from(chunk.size.max(1)) <= self.capacity
    }

    fn evict_zero(&mut self, out: &mut DedupOutcome) -> bool {
        let i = self.zr.tail;
        if self.zr.len == 0 {
            return false;
        }
        self.zr.unlink(&mut self.fps.ents, i);
        self.used -= u64::from(self.fps.ent(i).stored);
        out.evicted.push(self.fps.remove(i));
        true
    }

    fn insert(&mut self, chunk: &Chunk, out: &mut DedupOutcome) {
        let stored = chunk.size.max(1);
        self.fps.insert(chunk.fp, stored);
        self.used += u64::from(stored);
        out.write = true;
        out.write_bytes = chunk.size;
    }

    fn reference(&mut self, fp: &Fingerprint) {
        let i = self.fps.find(fp).expect("reference of a fingerprint not in D");
        let e = self.fps.ent_mut(i);
        e.refs += 1;
        if e.listed {
            e.listed = false;
            self.zr.unlink(&mut self.fps.ents, i);
        }
    }

    fn dereference(&mut self, fp: &Fingerprint) {
        let i = self.fps.find(fp).expect("dereference of a fingerprint not in D");
        let e = self.fps.ent_mut(i);
        e.refs -= 1;
        if e.refs == 0 {
            e.listed = true;
            self.zr.push_head(&mut self.fps.ents, i);
        }
    }

    fn len(&self) -> usize {
        self.fps.len()
    }

    fn used_bytes(&self) -> u64 {
        self.used
    }

    fn capacity_bytes(&self) -> u64 {
        self.capacity
    }

    fn memory_bytes(&self) -> usize {
        self.fps.memory_bytes()
    }

    fn check(&self, refs: &HashMap<Fingerprint, u32>) -> Result<(), String> {
        let (mut used, mut zero) = (0u64, 0usize);
        for i in self.fps.slots() {
            let e = self.fps.ent(i);
            let want = refs.get(&e.fp).copied().unwrap_or(0);
            if e.refs != want {
                return Err(format!("(i) {:?}: refcnt {} but {want} T1∪T2 addresses map to it", e.fp, e.refs));
            }
            if e.listed != (e.refs == 0) {
                return Err(format!("(ii) {:?}: refcnt {} but in ZR = {}", e.fp, e.refs, e.listed));
            }
            zero += usize::from(e.refs == 0);
            used += u64::from(e.stored);
        }
        let members = self.zr.members_from_tail(&self.fps.ents);
        if members.len() != zero || self.zr.len != zero {
            return Err(format!("(ii) ZR has {} linked / {} counted, {zero} zero-ref fps", members.len(), self.zr.len));
        }
        if used != self.used || used > self.capacity {
            return Err(format!("D: {used} stored bytes, accounted {}, capacity {}", self.used, self.capacity));
        }
        if let Some(fp) = refs.keys().find(|fp| !self.contains(fp)) {
            return Err(format!("(iv) {fp:?} is mapped from T1∪T2 but not in D"));
        }
        Ok(())
    }
}
