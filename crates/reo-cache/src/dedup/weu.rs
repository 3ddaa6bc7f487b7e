//! CD-ARC's data cache: compressed chunks packed into write-evict units (WEU).
//!
//! D holds at most `capacity / weu_bytes` WEUs (2 MiB each by default). A new chunk is appended to
//! the open WEU at its fill offset (fp → (weu, offset, len)); when it does not fit, the open WEU is
//! sealed and a new one opened. Reference counts are kept per fingerprint and summed per WEU; a WEU
//! whose sum drops to 0 joins ZR, and when no WEU can be opened the LRU of ZR is evicted **whole**:
//! all its fingerprints leave D at once (reported, not dropped lazily as AustereCache does, so the
//! manager can free the blobs and a stale fingerprint never answers a lookup).

use std::collections::HashMap;

use super::store::DataStore;
use super::table::{Chain, FpTable, Linked};
use super::{Chunk, DedupOutcome, Fingerprint};
use crate::policy::slab::NIL;

/// Default write-evict unit: 2 MiB.
pub const WEU_BYTES: u32 = 2 << 20;

/// Where a compressed chunk lives: `len` bytes at `offset` in WEU number `weu`.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct WeuSlot {
    /// WEU number.
    pub weu: u32,
    /// Byte offset of the chunk in the WEU.
    pub offset: u32,
    /// Compressed length of the chunk in bytes.
    pub len: u32,
}

#[derive(Debug, Default)]
struct Weu {
    refs: u32,
    fill: u32,
    /// Fingerprint slots stored in it.
    fps: Vec<u32>,
    live: bool,
    in_zr: bool,
    prev: u32,
    next: u32,
}

impl Linked for Weu {
    fn links(&mut self) -> (&mut u32, &mut u32) {
        (&mut self.prev, &mut self.next)
    }
    fn prev(&self) -> u32 {
        self.prev
    }
}

/// WEU-packed data cache.
#[derive(Debug)]
pub(crate) struct WeuStore {
    fps: FpTable,
    weus: Vec<Weu>,
    free: Vec<u32>,
    open: u32,
    zr: Chain,
    live: usize,
    max_weus: usize,
    weu_bytes: u32,
    used: u64,
}

impl WeuStore {
    pub fn new(capacity_bytes: u64, weu_bytes: u32) -> Self {
        assert!(weu_bytes > 0, "empty WEU");
        let max_weus = (capacity_bytes / u64::from(weu_bytes)).max(1) as usize;
        WeuStore {
            fps: FpTable::new(),
            weus: Vec::new(),
            free: Vec::new(),
            open: NIL,
            zr: Chain::default(),
            live: 0,
            max_weus,
            weu_bytes,
            used: 0,
        }
    }

    /// Location of `fp`, if in D.
    pub fn slot(&self, fp: &Fingerprint) -> Option<WeuSlot> {
        let e = self.fps.ent(self.fps.find(fp)?);
        Some(WeuSlot { weu: e.group, offset: e.offset, len: e.stored })
    }

    /// Live WEUs.
    pub fn weus(&self) -> usize {
        self.live
    }

    fn open_new(&mut self) {
        let id = match self.free.pop() {
            Some(id) => id,
            None => {
                self.weus.push(Weu::default());
                (self.weus.len() - 1) as u32
            }
        };
        let w = &mut self.weus[id as usize];
        (w.refs, w.fill, w.live, w.in_zr) = (0, 0, true, false);
        self.live += 1;
        self.open = id;
    }
}

impl DataStore for WeuStore {
    fn contains(&self, fp: &Fingerprint) -> bool {
        self.fps.find(fp).is_some()
    }

    fn too_large(&self, chunk: &Chunk) -> bool {
        chunk.compressed.max(1) > self.weu_bytes
    }

    fn has_room(&self, chunk: &Chunk) -> bool {
        let s = chunk.compressed.max(1);
        (self.open != NIL && self.weus[self.open as usize].fill + s <= self.weu_bytes) || self.live < self.max_weus
    }

    fn evict_zero(&mut self, out: &mut DedupOutcome) -> bool {
        if self.zr.len == 0 {
            return false;
        }
        let id = self.zr.tail;
        self.zr.unlink(&mut self.weus, id);
        let w = &mut self.weus[id as usize];
        (w.in_zr, w.live, w.fill) = (false, false, 0);
        for i in std::mem::take(&mut w.fps) {
            self.used -= u64::from(self.fps.ent(i).stored);
            out.evicted.push(self.fps.remove(i));
        }
        self.live -= 1;
        self.free.push(id);
        if self.open == id {
            self.open = NIL;
        }
        out.evicted_weus.push(id);
        true
    }

    fn insert(&mut self, chunk: &Chunk, out: &mut DedupOutcome) {
        let s = chunk.compressed.max(1);
        if self.open == NIL || self.weus[self.open as usize].fill + s > self.weu_bytes {
            self.open_new();
        }
        let i = self.fps.insert(chunk.fp, s);
        let w = &mut self.weus[self.open as usize];
        let e = self.fps.ent_mut(i);
        (e.group, e.offset) = (self.open, w.fill);
        w.fill += s;
        w.fps.push(i);
        self.used += u64::from(s);
        out.write = true;
        out.write_bytes = chunk.compressed;
        out.placement = Some(WeuSlot { weu: self.open, offset: e.offset, len: s });
    }

    fn reference(&mut self, fp: &Fingerprint) {
        let i = self.fps.find(fp).expect("reference of a fingerprint not in D");
        let e = self.fps.ent_mut(i);
        e.refs += 1;
        let id = e.group;
        let w = &mut self.weus[id as usize];
        w.refs += 1;
        if w.in_zr {
            w.in_zr = false;
            self.zr.unlink(&mut self.weus, id);
        }
    }

    fn dereference(&mut self, fp: &Fingerprint) {
        let i = self.fps.find(fp).expect("dereference of a fingerprint not in D");
        let e = self.fps.ent_mut(i);
        e.refs -= 1;
        let id = e.group;
        let w = &mut self.weus[id as usize];
        w.refs -= 1;
        if w.refs == 0 {
            w.in_zr = true;
            self.zr.push_head(&mut self.weus, id);
        }
    }

    fn len(&self) -> usize {
        self.fps.len()
    }

    fn used_bytes(&self) -> u64 {
        self.used
    }

    fn capacity_bytes(&self) -> u64 {
        self.max_weus as u64 * u64::from(self.weu_bytes)
    }

    fn memory_bytes(&self) -> usize {
        let lists: usize = self.weus.iter().map(|w| w.fps.capacity() * 4).sum();
        self.fps.memory_bytes() + self.weus.capacity() * std::mem::size_of::<Weu>() + lists
    }

    fn check(&self, refs: &HashMap<Fingerprint, u32>) -> Result<(), String> {
        let (mut used, mut zero, mut live) = (0u64, 0usize, 0usize);
        let mut fps_seen = 0;
        for (id, w) in self.weus.iter().enumerate().filter(|(_, w)| w.live) {
            live += 1;
            let (mut sum, mut fill) = (0u32, 0u32);
            for &i in &w.fps {
                let e = self.fps.ent(i);
                let want = refs.get(&e.fp).copied().unwrap_or(0);
                if e.refs != want || e.group as usize != id || self.fps.find(&e.fp) != Some(i) {
                    return Err(format!("(i) {:?} in WEU {id}: refcnt {} vs {want} mapped", e.fp, e.refs));
                }
                sum += e.refs;
                fill += e.stored;
            }
            if sum != w.refs || fill != w.fill || fill > self.weu_bytes {
                return Err(format!("WEU {id}: refs {} vs Σ {sum}, fill {} vs Σ {fill}", w.refs, w.fill));
            }
            if w.in_zr != (w.refs == 0) {
                return Err(format!("(ii) WEU {id}: refs {} but in ZR = {}", w.refs, w.in_zr));
            }
            zero += usize::from(w.refs == 0);
            used += u64::from(fill);
            fps_seen += w.fps.len();
        }
        if fps_seen != self.fps.len() {
            return Err(format!("{} fps indexed, {fps_seen} in live WEUs", self.fps.len()));
        }
        if self.zr.members_from_tail(&self.weus).len() != zero || self.zr.len != zero {
            return Err(format!("(ii) ZR has {} WEUs, {zero} at zero refs", self.zr.len));
        }
        if live != self.live || live > self.max_weus || used != self.used {
            return Err(format!("{live} live WEUs (max {}), used {used} vs {}", self.max_weus, self.used));
        }
        if let Some(fp) = refs.keys().find(|fp| !self.contains(fp)) {
            return Err(format!("(iv) {fp:?} is mapped from T1∪T2 but not in D"));
        }
        Ok(())
    }
}
