//! The dedup cache of the manager: a [`DedupPolicy`] (D-LRU, D-ARC, CD-ARC) over fragment
//! addresses and the content blobs it keeps, by fingerprint.

use std::collections::HashMap;

use reo_store::Location;

use crate::dedup::{new_dedup, DedupKind, DedupOutcome, DedupPolicy};
use crate::policy::Key;

/// Dedup state of the manager.
pub(crate) struct DedupState {
    pub policy: Box<dyn DedupPolicy>,
    /// Fingerprint → content blob. The blob's length is the stored (maybe compressed) length.
    pub blobs: HashMap<[u8; 32], Location>,
    /// Content blobs are LZ4 blocks (CD-ARC).
    pub compressed: bool,
    pub out: DedupOutcome,
}

impl DedupState {
    pub fn new(kind: DedupKind, meta_entries: usize, data_bytes: u64) -> Option<DedupState> {
        Some(DedupState {
            policy: new_dedup(kind, meta_entries, data_bytes)?,
            blobs: HashMap::new(),
            compressed: kind == DedupKind::CdArc,
            out: DedupOutcome::default(),
        })
    }
}

/// Where a deduplicated fragment's bytes are.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct ContentRef {
    pub loc: Location,
    pub compressed: bool,
}

impl DedupState {
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
    pub fn forget(&mut self, addr: Key) {
        self.policy.remove(addr);
    }
}
