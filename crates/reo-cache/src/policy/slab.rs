//! Node storage shared by every policy: a slab of 24-byte list nodes, a key index, intrusive lists.
//!
//! * [`Slab`] owns a `Vec<Node>` (freed slots are chained through `next` and reused) and a
//!   `hashbrown::HashTable<u32>` mapping a key to its slot. The index stores only the 4-byte slot
//!   number; the key is compared in the node. Ghost entries (ARC's B1/B2, S3-FIFO's G) are ordinary
//!   nodes with a ghost tag, so one lookup answers resident / ghost / unknown.
//! * [`Node`] packs the object size (48 bits, < 256 TiB), a list tag (8 bits) and a policy byte
//!   (frequency / visited bit / utility) into one `u64`, next to the key and `u32` prev/next links.
//! * [`List`] is a doubly-linked list threaded through the slab: `head` is the newest (MRU) end,
//!   `next` points toward the tail (older), `prev` toward the head. It tracks its length and bytes.

use hashbrown::HashTable;

use crate::hash::hash_key;

/// Object key (an object id or a fingerprint).
pub type Key = u64;

/// Null link.
pub(crate) const NIL: u32 = u32::MAX;
const SIZE_BITS: u32 = 48;
/// Largest object size a node can hold.
pub(crate) const MAX_SIZE: u64 = (1 << SIZE_BITS) - 1;
const TAG_SHIFT: u32 = 48;
const AUX_SHIFT: u32 = 56;

#[derive(Clone, Copy, Debug)]
pub(crate) struct Node {
    pub key: Key,
    pub prev: u32,
    pub next: u32,
    /// size (bits 0..48) | tag (48..56) | aux (56..64).
    meta: u64,
}

impl Node {
    #[inline]
    pub fn size(&self) -> u64 {
        self.meta & MAX_SIZE
    }
    #[inline]
    pub fn tag(&self) -> u8 {
        (self.meta >> TAG_SHIFT) as u8
    }
    /// Policy byte: frequency counter, visited bit or CLOCK utility.
    #[inline]
    pub fn aux(&self) -> u8 {
        (self.meta >> AUX_SHIFT) as u8
    }
    #[inline]
    pub fn set_size(&mut self, size: u64) {
        debug_assert!(size <= MAX_SIZE);
        self.meta = (self.meta & !MAX_SIZE) | size;
    }
    #[inline]
    pub fn set_tag(&mut self, tag: u8) {
        self.meta = (self.meta & !(0xff << TAG_SHIFT)) | (u64::from(tag) << TAG_SHIFT);
    }
    #[inline]
    pub fn set_aux(&mut self, aux: u8) {
        self.meta = (self.meta & !(0xff << AUX_SHIFT)) | (u64::from(aux) << AUX_SHIFT);
    }
}

/// Slab of nodes plus the key → slot index.
#[derive(Debug, Default)]
pub(crate) struct Slab {
    pub nodes: Vec<Node>,
    free: u32,
    free_len: usize,
    index: HashTable<u32>,
}

impl Slab {
    pub fn new() -> Self {
        Slab { nodes: Vec::new(), free: NIL, free_len: 0, index: HashTable::new() }
    }

    /// Slot of `key` (resident or ghost).
    #[inline]
    pub fn find(&self, key: Key) -> Option<u32> {
        let nodes = &self.nodes;
        self.index.find(hash_key(key), |&i| nodes[i as usize].key == key).copied()
    }

    #[inline]
    pub fn node(&self, i: u32) -> &Node {
        &self.nodes[i as usize]
    }

    #[inline]
    pub fn node_mut(&mut self, i: u32) -> &mut Node {
        &mut self.nodes[i as usize]
    }

    /// New unlinked node for `key`, which must not be in the slab.
    pub fn alloc(&mut self, key: Key, size: u64, tag: u8) -> u32 {
        debug_assert!(self.find(key).is_none());
        let mut node = Node { key, prev: NIL, next: NIL, meta: 0 };
        node.set_size(size);
        node.set_tag(tag);
        let i = if self.free != NIL {
            let i = self.free;
            self.free = self.nodes[i as usize].next;
            self.free_len -= 1;
            self.nodes[i as usize] = node;
            i
        } else {
            let i = u32::try_from(self.nodes.len()).ok().filter(|&i| i != NIL).expect("more than 2^32-1 cache entries");
            self.nodes.push(node);
            i
        };
        let nodes = &self.nodes;
        self.index.insert_unique(hash_key(key), i, |&j| hash_key(nodes[j as usize].key));
        i
    }

    /// Drops node `i` (already unlinked from its list) and its index entry.
    pub fn release(&mut self, i: u32) {
        let key = self.nodes[i as usize].key;
        match self.index.find_entry(hash_key(key), |&j| j == i) {
            Ok(entry) => drop(entry.remove()),
            Err(_) => unreachable!("slot {i} not indexed"),
        }
        self.nodes[i as usize].next = self.free;
        self.free = i;
        self.free_len += 1;
    }

    /// Gives the node of `old` the key `new`, in place (list, tag and size unchanged). False,
    /// changing nothing, if `old` is absent or `new` present.
    pub fn rekey(&mut self, old: Key, new: Key) -> bool {
        let Some(i) = self.find(old) else { return false };
        if self.find(new).is_some() {
            return false;
        }
        match self.index.find_entry(hash_key(old), |&j| j == i) {
            Ok(entry) => drop(entry.remove()),
            Err(_) => unreachable!("slot {i} not indexed"),
        }
        self.nodes[i as usize].key = new;
        let nodes = &self.nodes;
        self.index.insert_unique(hash_key(new), i, |&j| hash_key(nodes[j as usize].key));
        true
    }

    /// Entries (resident + ghost).
    pub fn len(&self) -> usize {
        self.index.len()
    }

    /// Makes room for `entries` entries in total without reallocating.
    pub fn reserve(&mut self, entries: usize) {
        let pushes = entries.saturating_sub(self.index.len() + self.free_len);
        self.nodes.reserve_exact(pushes);
        let nodes = &self.nodes;
        self.index.reserve(entries.saturating_sub(self.index.len()), |&j| hash_key(nodes[j as usize].key));
    }

    /// Heap bytes: node array capacity plus the index allocation.
    pub fn memory_bytes(&self) -> usize {
        self.nodes.capacity() * std::mem::size_of::<Node>() + self.index.allocation_size()
    }
}

/// Intrusive doubly-linked list over a [`Slab`]'s nodes.
#[derive(Clone, Copy, Debug)]
pub(crate) struct List {
    pub head: u32,
    pub tail: u32,
    pub len: usize,
    pub bytes: u64,
}

impl Default for List {
    fn default() -> Self {
        List { head: NIL, tail: NIL, len: 0, bytes: 0 }
    }
}

impl List {
    #[inline]
    pub fn is_empty(&self) -> bool {
        self.len == 0
    }

    #[inline]
    pub fn push_head(&mut self, nodes: &mut [Node], i: u32) {
        let old = self.head;
        let n = &mut nodes[i as usize];
        n.prev = NIL;
        n.next = old;
        self.bytes += n.size();
        if old != NIL {
            nodes[old as usize].prev = i;
        } else {
            self.tail = i;
        }
        self.head = i;
        self.len += 1;
    }

    #[inline]
    pub fn unlink(&mut self, nodes: &mut [Node], i: u32) {
        let Node { prev, next, .. } = nodes[i as usize];
        if prev != NIL {
            nodes[prev as usize].next = next;
        } else {
            self.head = next;
        }
        if next != NIL {
            nodes[next as usize].prev = prev;
        } else {
            self.tail = prev;
        }
        self.len -= 1;
        self.bytes -= nodes[i as usize].size();
    }

    #[inline]
    pub fn move_to_head(&mut self, nodes: &mut [Node], i: u32) {
        if self.head != i {
            self.unlink(nodes, i);
            self.push_head(nodes, i);
        }
    }

    /// Changes the size of member `i`, keeping `bytes` in step.
    pub fn resize(&mut self, nodes: &mut [Node], i: u32, size: u64) {
        let n = &mut nodes[i as usize];
        self.bytes = self.bytes - n.size() + size;
        n.set_size(size);
    }

    /// First member, walking from the tail toward the head, whose key satisfies `pred`.
    #[inline]
    pub fn find_from_tail(&self, nodes: &[Node], pred: &mut dyn FnMut(Key) -> bool) -> Option<u32> {
        let mut i = self.tail;
        while i != NIL {
            let n = &nodes[i as usize];
            if pred(n.key) {
                return Some(i);
            }
            i = n.prev;
        }
        None
    }

    /// Keys from head (newest) to tail.
    pub fn keys(&self, nodes: &[Node]) -> Vec<Key> {
        let mut out = Vec::with_capacity(self.len);
        let mut i = self.head;
        while i != NIL {
            out.push(nodes[i as usize].key);
            i = nodes[i as usize].next;
        }
        out
    }

    /// O(n) check of links, length, byte total and tag (`name` labels errors).
    pub fn check(&self, slab: &Slab, tag: u8, name: &str) -> Result<(), ListError> {
        let name = || name.to_string();
        let (mut len, mut bytes, mut prev, mut i) = (0usize, 0u64, NIL, self.head);
        while i != NIL {
            let n = slab.node(i);
            if n.prev != prev {
                return Err(ListError::BadPrev { name: name(), key: n.key });
            }
            if n.tag() != tag {
                return Err(ListError::BadTag { name: name(), key: n.key, tag: n.tag(), want: tag });
            }
            if slab.find(n.key) != Some(i) {
                return Err(ListError::NotIndexed { name: name(), key: n.key });
            }
            len += 1;
            bytes += n.size();
            prev = i;
            i = n.next;
            if len > slab.len() {
                return Err(ListError::Cycle { name: name() });
            }
        }
        if prev != self.tail || len != self.len || bytes != self.bytes {
            return Err(ListError::Mismatch { name: name(), len, want_len: self.len, bytes, want_bytes: self.bytes });
        }
        Ok(())
    }
}

/// A broken invariant of a [`List`] (what [`List::check`] found), labelled with the list's name.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub(crate) enum ListError {
    #[error("{name}: bad prev link at key {key}")]
    BadPrev { name: String, key: Key },
    #[error("{name}: key {key} has tag {tag} not {want}")]
    BadTag { name: String, key: Key, tag: u8, want: u8 },
    #[error("{name}: key {key} not indexed at its slot")]
    NotIndexed { name: String, key: Key },
    #[error("{name}: cycle")]
    Cycle { name: String },
    #[error("{name}: tail/len/bytes mismatch (len {len} vs {want_len}, bytes {bytes} vs {want_bytes})")]
    Mismatch { name: String, len: usize, want_len: usize, bytes: u64, want_bytes: u64 },
}

/// The policies' invariant checks ([`crate::Policy::check_invariants`]) report in text.
impl From<ListError> for String {
    fn from(e: ListError) -> String {
        e.to_string()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn node_is_24_bytes_and_packs_fields() {
        assert_eq!(std::mem::size_of::<Node>(), 24);
        let mut n = Node { key: 7, prev: NIL, next: NIL, meta: 0 };
        n.set_size(MAX_SIZE);
        n.set_tag(3);
        n.set_aux(200);
        assert_eq!((n.size(), n.tag(), n.aux()), (MAX_SIZE, 3, 200));
        n.set_size(5);
        n.set_aux(1);
        assert_eq!((n.size(), n.tag(), n.aux()), (5, 3, 1));
    }

    #[test]
    fn list_and_slab_reuse_slots() {
        let mut s = Slab::new();
        let mut l = List::default();
        let ids: Vec<u32> = (1..=4).map(|k| s.alloc(k, k * 10, 0)).collect();
        for &i in &ids {
            l.push_head(&mut s.nodes, i);
        }
        assert_eq!(l.keys(&s.nodes), vec![4, 3, 2, 1]);
        assert_eq!(l.bytes, 100);
        l.move_to_head(&mut s.nodes, ids[0]);
        assert_eq!(l.keys(&s.nodes), vec![1, 4, 3, 2]);
        l.unlink(&mut s.nodes, ids[2]);
        s.release(ids[2]);
        assert_eq!(s.find(3), None);
        assert_eq!(l.keys(&s.nodes), vec![1, 4, 2]);
        l.check(&s, 0, "l").unwrap();
        let j = s.alloc(9, 1, 0);
        assert_eq!(j, ids[2], "freed slot reused");
        assert_eq!(s.find(9), Some(j));
        assert_eq!(s.find(4), Some(ids[3]));
    }
}
