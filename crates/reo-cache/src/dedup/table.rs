//! Storage shared by the dedup policies: the address side (M) and the fingerprint side (D).
//!
//! * [`AddrTable`]: the crate's 24-byte-node [`Slab`] keyed by address, plus a parallel array of the
//!   32-byte fingerprint each address maps to (indexed by slab slot). Lists are the slab's [`List`]s,
//!   tagged per policy (MetaLRU; ARC's T1/T2/B1/B2 and D-ARC's B3).
//! * [`FpTable`]: fingerprint → entry (size, stored bytes, reference count, group = WEU id), entries in
//!   a `Vec` with a free list, indexed by a `HashMap<Fingerprint, u32>`.
//! * [`Chain`]: an intrusive doubly-linked list over any `Vec` of [`Linked`] items (DataLRU, the
//!   zero-reference list ZR of fingerprints or of WEUs). `head` is the newest end.

use std::collections::HashMap;

use super::Fingerprint;
use crate::hash::KeyBuildHasher;
use crate::policy::slab::{Slab, NIL};
use crate::policy::Key;

/// Address → fingerprint entries (resident and ghost) on the crate's slab.
#[derive(Debug, Default)]
pub(crate) struct AddrTable {
    pub slab: Slab,
    fps: Vec<Fingerprint>,
}

impl AddrTable {
    pub fn new() -> Self {
        AddrTable { slab: Slab::new(), fps: Vec::new() }
    }

    /// New unlinked entry `addr → fp` with list tag `tag`.
    pub fn alloc(&mut self, addr: Key, fp: Fingerprint, tag: u8) -> u32 {
        let i = self.slab.alloc(addr, 1, tag);
        let slot = i as usize;
        if slot >= self.fps.len() {
            self.fps.resize(slot + 1, fp);
        }
        self.fps[slot] = fp;
        i
    }

    #[inline]
    pub fn fp(&self, i: u32) -> Fingerprint {
        self.fps[i as usize]
    }

    #[inline]
    pub fn set_fp(&mut self, i: u32, fp: Fingerprint) {
        self.fps[i as usize] = fp;
    }

    #[inline]
    pub fn tag(&self, i: u32) -> u8 {
        self.slab.node(i).tag()
    }

    pub fn memory_bytes(&self) -> usize {
        self.slab.memory_bytes() + self.fps.capacity() * std::mem::size_of::<Fingerprint>()
    }
}

/// An item of a [`Chain`].
pub(crate) trait Linked {
    fn links(&mut self) -> (&mut u32, &mut u32);
    fn prev(&self) -> u32;
}

/// Intrusive list over a slice of [`Linked`] items; `head` is the newest (MRU) end.
#[derive(Clone, Copy, Debug)]
pub(crate) struct Chain {
    pub head: u32,
    pub tail: u32,
    pub len: usize,
}

impl Default for Chain {
    fn default() -> Self {
        Chain { head: NIL, tail: NIL, len: 0 }
    }
}

impl Chain {
    pub fn push_head<T: Linked>(&mut self, items: &mut [T], i: u32) {
        let old = self.head;
        let (prev, next) = items[i as usize].links();
        (*prev, *next) = (NIL, old);
        if old != NIL {
            *items[old as usize].links().0 = i;
        } else {
            self.tail = i;
        }
        self.head = i;
        self.len += 1;
    }

    pub fn unlink<T: Linked>(&mut self, items: &mut [T], i: u32) {
        let (prev, next) = {
            let (p, n) = items[i as usize].links();
            (*p, *n)
        };
        if prev != NIL {
            *items[prev as usize].links().1 = next;
        } else {
            self.head = next;
        }
        if next != NIL {
            *items[next as usize].links().0 = prev;
        } else {
            self.tail = prev;
        }
        self.len -= 1;
    }

    pub fn move_to_head<T: Linked>(&mut self, items: &mut [T], i: u32) {
        if self.head != i {
            self.unlink(items, i);
            self.push_head(items, i);
        }
    }

    /// Members from tail (oldest) to head, checking the back links.
    pub fn members_from_tail<T: Linked>(&self, items: &[T]) -> Vec<u32> {
        let mut out = Vec::with_capacity(self.len);
        let mut i = self.tail;
        while i != NIL && out.len() <= items.len() {
            out.push(i);
            i = items[i as usize].prev();
        }
        out
    }
}

/// One fingerprint in D.
#[derive(Clone, Copy, Debug)]
pub(crate) struct FpEnt {
    pub fp: Fingerprint,
    /// Bytes the fingerprint occupies in D (fragment size, or compressed size in CD-ARC).
    pub stored: u32,
    /// Addresses in T1 ∪ T2 mapping to it (D-ARC, CD-ARC); unused by D-LRU.
    pub refs: u32,
    /// CD-ARC: the WEU holding it, and its offset there.
    pub group: u32,
    pub offset: u32,
    /// On a chain (DataLRU, or ZR).
    pub listed: bool,
    prev: u32,
    next: u32,
}

impl Linked for FpEnt {
    #[inline]
    fn links(&mut self) -> (&mut u32, &mut u32) {
        (&mut self.prev, &mut self.next)
    }
    #[inline]
    fn prev(&self) -> u32 {
        self.prev
    }
}

/// Fingerprint → [`FpEnt`].
#[derive(Debug, Default)]
pub(crate) struct FpTable {
    map: HashMap<Fingerprint, u32, KeyBuildHasher>,
    pub ents: Vec<FpEnt>,
    free: Vec<u32>,
}

impl FpTable {
    pub fn new() -> Self {
        FpTable::default()
    }

    #[inline]
    pub fn find(&self, fp: &Fingerprint) -> Option<u32> {
        self.map.get(fp).copied()
    }

    #[inline]
    pub fn ent(&self, i: u32) -> &FpEnt {
        &self.ents[i as usize]
    }

    #[inline]
    pub fn ent_mut(&mut self, i: u32) -> &mut FpEnt {
        &mut self.ents[i as usize]
    }

    /// New unlinked entry for `fp`, which must not be present.
    pub fn insert(&mut self, fp: Fingerprint, stored: u32) -> u32 {
        let e = FpEnt { fp, stored, refs: 0, group: NIL, offset: 0, listed: false, prev: NIL, next: NIL };
        let i = match self.free.pop() {
            Some(i) => {
                self.ents[i as usize] = e;
                i
            }
            None => {
                self.ents.push(e);
                u32::try_from(self.ents.len() - 1).expect("under 2^32 fingerprints")
            }
        };
        let old = self.map.insert(fp, i);
        debug_assert!(old.is_none(), "{fp:?} inserted twice");
        i
    }

    /// Drops entry `i` (already unlinked from any chain); returns its fingerprint.
    pub fn remove(&mut self, i: u32) -> Fingerprint {
        let fp = self.ents[i as usize].fp;
        self.map.remove(&fp);
        self.free.push(i);
        fp
    }

    pub fn len(&self) -> usize {
        self.map.len()
    }

    /// Live entries' slots.
    pub fn slots(&self) -> impl Iterator<Item = u32> + '_ {
        self.map.values().copied()
    }

    /// Heap bytes; the map's share is estimated from its capacity (hashbrown: one entry plus one
    /// control byte per bucket).
    pub fn memory_bytes(&self) -> usize {
        let bucket = std::mem::size_of::<(Fingerprint, u32)>() + 1;
        self.map.capacity() * bucket + self.ents.capacity() * std::mem::size_of::<FpEnt>() + self.free.capacity() * 4
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn chain_and_table_reuse_slots() {
        let mut t = FpTable::new();
        let mut c = Chain::default();
        let ids: Vec<u32> = (0..4).map(|k| t.insert(Fingerprint::from_content_id(k), 1)).collect();
        for &i in &ids {
            c.push_head(&mut t.ents, i);
        }
        assert_eq!(c.members_from_tail(&t.ents), ids);
        c.move_to_head(&mut t.ents, ids[0]);
        c.unlink(&mut t.ents, ids[2]);
        assert_eq!(c.members_from_tail(&t.ents), vec![ids[1], ids[3], ids[0]]);
        assert_eq!(t.remove(ids[2]), Fingerprint::from_content_id(2));
        assert_eq!(t.find(&Fingerprint::from_content_id(2)), None);
        assert_eq!(t.insert(Fingerprint::from_content_id(9), 1), ids[2], "slot reused");
        assert_eq!(t.len(), 4);
    }
}
