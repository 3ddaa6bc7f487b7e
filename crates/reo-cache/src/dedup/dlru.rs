//! D-LRU (CacheDedup): two independent LRUs (docs/REFERENCES.md §A2).
//!
//! MetaLRU holds `Cm` addresses (addr → fp); DataLRU holds fingerprints up to `Cd` bytes. A hit needs
//! both (`addr ∈ M`, `M[addr] ∈ D`) and refreshes both. `update` stores the chunk in DataLRU only if
//! its fingerprint is absent (evicting LRU fingerprints), then maps the address (evicting the LRU
//! address). The two sides never consult each other: evicting an address leaves its data (an orphan
//! that cannot hit until some address maps to it again), evicting data leaves dangling addresses
//! (they miss), and an overwritten address's old fingerprint lingers until it ages out.

use super::table::{AddrTable, Chain, FpTable};
use super::{Chunk, DedupOutcome, DedupPolicy, Fingerprint};
use crate::policy::slab::List;
use crate::policy::Key;

/// D-LRU over `cm` metadata entries and `cd` data bytes.
#[derive(Debug)]
pub struct DLru {
    meta: AddrTable,
    mlist: List,
    cm: usize,
    data: FpTable,
    dlist: Chain,
    dbytes: u64,
    cd: u64,
}

impl DLru {
    /// D-LRU with M bounded to `meta_entries` addresses and D to `data_bytes` bytes.
    ///
    /// # Panics
    ///
    /// If either bound is 0.
    pub fn new(meta_entries: usize, data_bytes: u64) -> Self {
        assert!(meta_entries > 0 && data_bytes > 0, "D-LRU needs Cm ≥ 1 and Cd ≥ 1");
        DLru {
            meta: AddrTable::new(),
            mlist: List::default(),
            cm: meta_entries,
            data: FpTable::new(),
            dlist: Chain::default(),
            dbytes: 0,
            cd: data_bytes,
        }
    }

    /// Addresses, most recently used first.
    pub fn addrs_mru_first(&self) -> Vec<Key> {
        self.mlist.keys(&self.meta.slab.nodes)
    }

    /// Fingerprints in D, least recently used first.
    pub fn fps_lru_first(&self) -> Vec<Fingerprint> {
        self.dlist.members_from_tail(&self.data.ents).into_iter().map(|i| self.data.ent(i).fp).collect()
    }
}

impl DedupPolicy for DLru {
    fn name(&self) -> &'static str {
        "d-lru"
    }

    fn lookup(&mut self, addr: Key) -> Option<Fingerprint> {
        let i = self.meta.slab.find(addr)?;
        let fp = self.meta.fp(i);
        let d = self.data.find(&fp)?;
        self.mlist.move_to_head(&mut self.meta.slab.nodes, i);
        self.dlist.move_to_head(&mut self.data.ents, d);
        Some(fp)
    }

    fn update(&mut self, addr: Key, chunk: &Chunk, out: &mut DedupOutcome) {
        out.reset();
        let size = u64::from(chunk.size.max(1));
        if size > self.cd {
            self.remove(addr);
            return;
        }
        match self.data.find(&chunk.fp) {
            Some(d) => self.dlist.move_to_head(&mut self.data.ents, d),
            None => {
                while self.dbytes + size > self.cd {
                    let d = self.dlist.tail;
                    self.dlist.unlink(&mut self.data.ents, d);
                    self.dbytes -= u64::from(self.data.ent(d).stored);
                    out.evicted.push(self.data.remove(d));
                }
                let d = self.data.insert(chunk.fp, size as u32);
                self.dlist.push_head(&mut self.data.ents, d);
                self.dbytes += size;
                out.write = true;
                out.write_bytes = chunk.size;
            }
        }
        match self.meta.slab.find(addr) {
            Some(i) => {
                self.meta.set_fp(i, chunk.fp);
                self.mlist.move_to_head(&mut self.meta.slab.nodes, i);
            }
            None => {
                if self.mlist.len >= self.cm {
                    let i = self.mlist.tail;
                    self.mlist.unlink(&mut self.meta.slab.nodes, i);
                    self.meta.slab.release(i);
                }
                let i = self.meta.alloc(addr, chunk.fp, 0);
                self.mlist.push_head(&mut self.meta.slab.nodes, i);
            }
        }
        out.admitted = true;
    }

    fn remove(&mut self, addr: Key) -> bool {
        let Some(i) = self.meta.slab.find(addr) else { return false };
        self.mlist.unlink(&mut self.meta.slab.nodes, i);
        self.meta.slab.release(i);
        true
    }

    fn mapping(&self, addr: Key) -> Option<Fingerprint> {
        self.meta.slab.find(addr).map(|i| self.meta.fp(i))
    }

    fn contains_fp(&self, fp: &Fingerprint) -> bool {
        self.data.find(fp).is_some()
    }

    fn meta_len(&self) -> usize {
        self.mlist.len
    }

    fn meta_capacity(&self) -> usize {
        self.cm
    }

    fn data_len(&self) -> usize {
        self.data.len()
    }

    fn data_bytes(&self) -> u64 {
        self.dbytes
    }

    fn data_capacity(&self) -> u64 {
        self.cd
    }

    fn memory_bytes(&self) -> usize {
        self.meta.memory_bytes() + self.data.memory_bytes()
    }

    fn check_invariants(&self) -> Result<(), String> {
        self.mlist.check(&self.meta.slab, 0, "d-lru MetaLRU")?;
        if self.mlist.len != self.meta.slab.len() || self.mlist.len > self.cm {
            return Err(format!(
                "d-lru: {} listed addrs, {} indexed, Cm {}",
                self.mlist.len,
                self.meta.slab.len(),
                self.cm
            ));
        }
        let members = self.dlist.members_from_tail(&self.data.ents);
        let bytes: u64 = members.iter().map(|&d| u64::from(self.data.ent(d).stored)).sum();
        if members.len() != self.data.len() || self.dlist.len != self.data.len() {
            return Err(format!("d-lru DataLRU: {} linked, {} indexed", members.len(), self.data.len()));
        }
        if members.iter().any(|&d| self.data.find(&self.data.ent(d).fp) != Some(d)) {
            return Err("d-lru DataLRU: member not indexed at its slot".into());
        }
        if bytes != self.dbytes || bytes > self.cd {
            return Err(format!("d-lru DataLRU: {bytes} bytes, accounted {}, Cd {}", self.dbytes, self.cd));
        }
        Ok(())
    }
}
