//! The dedup cache of the manager: a [`DedupPolicy`] (D-LRU, D-ARC, CD-ARC) over fragment
//! addresses and the content blobs it keeps, by fingerprint.

use std::collections::HashMap;

use reo_store::Location;

use crate::dedup::{new_dedup, Chunk, DedupKind, DedupOutcome, DedupPolicy, Fingerprint};
use crate::policy::Key;

/// The dedup cache: which content each fragment address maps to (the policy) and where each
/// content blob is.
pub(crate) struct DedupCache {
    policy: Box<dyn DedupPolicy>,
    /// Fingerprint → content blob. The blob's length is the stored (maybe compressed) length.
    blobs: HashMap<[u8; 32], Location>,
    /// Content blobs are LZ4 blocks (CD-ARC).
    compressed: bool,
    /// The policy's answer to the latest update (reused: no allocation per fragment).
    out: DedupOutcome,
}

/// What offering a fragment to the dedup cache did.
pub(crate) struct Offered {
    /// The address is cached now.
    pub admitted: bool,
    /// Its content is new: write the content blob (then [`DedupCache::install`] it).
    pub write: bool,
    /// Content blobs of the contents evicted to make room (forgotten here; to free).
    pub evicted: Vec<Location>,
}

impl DedupCache {
    #[inline]
    pub fn new(kind: DedupKind, meta_entries: usize, data_bytes: u64) -> Option<DedupCache> {
        Some(DedupCache {
            policy: new_dedup(kind, meta_entries, data_bytes)?,
            blobs: HashMap::new(),
            compressed: kind == DedupKind::CdArc,
            out: DedupOutcome::default(),
        })
    }

    /// Content blobs are LZ4 blocks when shorter than their fragment (CD-ARC).
    #[inline]
    pub fn compressed(&self) -> bool {
        self.compressed
    }

    /// Maps `addr` to `chunk`'s content; the contents it evicts leave the cache.
    #[inline]
    pub fn offer(&mut self, addr: Key, chunk: &Chunk) -> Offered {
        self.out.reset();
        self.policy.update(addr, chunk, &mut self.out);
        let evicted = self.out.evicted.iter().filter_map(|f| self.blobs.remove(f.as_bytes())).collect();
        Offered { admitted: self.out.admitted, write: self.out.write, evicted }
    }

    /// Records `loc` as the content blob of `fp`; returns the blob it replaces. `Err(loc)` when
    /// the content was evicted while being written (nothing is recorded).
    #[inline]
    pub fn install(&mut self, fp: &Fingerprint, loc: Location) -> Result<Option<Location>, Location> {
        if self.policy.contains_fp(fp) {
            Ok(self.blobs.insert(*fp.as_bytes(), loc))
        } else {
            Err(loc)
        }
    }

    /// The content blob of fingerprint `fp`.
    #[inline]
    pub fn content(&self, fp: &[u8]) -> Option<Location> {
        self.blobs.get(fp).copied()
    }

    /// The content blob `addr` maps to, without counting as a read.
    #[inline]
    pub fn content_of(&self, addr: Key) -> Option<Location> {
        let fp = self.policy.mapping(addr)?;
        self.content(fp.as_bytes())
    }

    /// The cleaner moved the content blob of `fp` from `old` to `new`; false if `old` is not its
    /// blob any more (the content left the cache meanwhile).
    pub fn relocate(&mut self, fp: &[u8], old: &Location, new: &Location) -> bool {
        self.blobs.get_mut(fp).is_some_and(|l| {
            let hit = l == old;
            if hit {
                *l = *new;
            }
            hit
        })
    }

    /// Forgets the content blob of `fp` if it is `loc`; returns whether it was.
    #[inline]
    pub fn forget_content(&mut self, fp: &[u8], loc: &Location) -> bool {
        let hit = self.blobs.get(fp) == Some(loc);
        if hit {
            self.blobs.remove(fp);
        }
        hit
    }
}

/// Where a deduplicated fragment's bytes are.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct ContentRef {
    pub loc: Location,
    pub compressed: bool,
}

impl DedupCache {
    /// Looks `addr` up (a read: updates its recency). `None`: a miss.
    pub fn lookup(&mut self, addr: Key) -> Option<ContentRef> {
        let fp = self.policy.lookup(addr)?;
        match self.blobs.get(fp.as_bytes()) {
            // Under CD-ARC a blob shorter than its fragment is an LZ4 block.
            Some(&loc) => Some(ContentRef { loc, compressed: self.compressed }),
            None => {
                // Content admitted but its write failed or is still in flight: a miss.
                self.policy.remove(addr);
                None
            }
        }
    }

    /// Forgets `addr`.
    #[inline]
    pub fn forget(&mut self, addr: Key) {
        self.policy.remove(addr);
    }
}
