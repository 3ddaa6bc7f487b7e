//! [`Invalidations`]: which keys were written or deleted since a reader's token was taken, so
//! that bytes fetched from the backend before a write are never cached after it.

use std::collections::HashMap;

use super::placement::placement_of;
use crate::hash::KeyBuildHasher;

/// Invalidations remembered before the map is reset (≈ 1.5 MiB).
const INVALIDATIONS_KEPT: usize = 65_536;

/// The invalidation epoch and the recent invalidations, by key hash.
#[derive(Default)]
pub(crate) struct Invalidations {
    /// Bumped by every write or delete; a reader's token is its value when the reader looked.
    epoch: u64,
    /// Key hash → epoch of its latest invalidation, for recent ones; tokens older than `floor`
    /// count as invalidated outright (the map was reset since).
    invalidated: HashMap<u64, u64, KeyBuildHasher>,
    floor: u64,
}

impl Invalidations {
    /// The current epoch: a token for [`Invalidations::changed_since`].
    #[inline]
    pub fn epoch(&self) -> u64 {
        self.epoch
    }

    /// Records that `key` changed (a write or delete): fills fetched before now are stale.
    #[inline]
    pub fn invalidate(&mut self, key: &[u8]) {
        self.epoch += 1;
        if self.invalidated.len() >= INVALIDATIONS_KEPT {
            self.invalidated.clear();
            self.floor = self.epoch;
        }
        self.invalidated.insert(placement_of(key), self.epoch);
    }

    /// Was `key` (possibly) invalidated after `token` was taken?
    #[inline]
    pub fn changed_since(&self, key: &[u8], token: u64) -> bool {
        token < self.floor || self.invalidated.get(&placement_of(key)).is_some_and(|&e| e > token)
    }
}
