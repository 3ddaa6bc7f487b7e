//! Revalidation of cached objects against a backend that others also write ([`Freshness`], and
//! [`Gateway::revalidate`](super::Gateway::revalidate)): off by default; with `revalidate_after = D`, a hit on a clean object
//! last filled or validated more than `D` ago first asks the backend for its ETag (a HEAD). The
//! same ETag: the cached copy is served and its age starts again. Another ETag (or the object is
//! gone): the cached copy is dropped and the request proceeds as a miss, with the backend's
//! info. The backend unreachable (any other error, its deadline passed included): the cached
//! copy is served, with a warning — a cache in front of a down backend keeps answering; while
//! the backend is known to be down, or has not answered yet since start, without asking it. Dirty objects are never revalidated: the
//! cache holds the newest version.
//!
//! Ages are kept in DRAM per cache key (at most [`MAX_ENTRIES`]; when full the table is cleared,
//! so every object is revalidated once more). An object with no entry (cached before a restart,
//! or by a prefetch) counts as due.

use std::collections::HashMap;
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::Duration;

use parking_lot::Mutex;

/// Most cache keys whose validation time is remembered.
pub const MAX_ENTRIES: usize = 1 << 20;

const OFF: u64 = u64::MAX;

/// When each cached object was last known to match the backend.
pub struct Freshness {
    after_ns: AtomicU64,
    at: Mutex<HashMap<String, u64>>,
}

impl Default for Freshness {
    fn default() -> Self {
        Freshness { after_ns: AtomicU64::new(OFF), at: Mutex::default() }
    }
}

impl Freshness {
    /// `None`: never revalidate (the default).
    pub fn set(&self, after: Option<Duration>) {
        let ns = after.map_or(OFF, |d| (d.as_nanos() as u64).min(OFF - 1));
        self.after_ns.store(ns, Ordering::Relaxed);
    }

    fn enabled(&self) -> Option<u64> {
        Some(self.after_ns.load(Ordering::Relaxed)).filter(|&n| n != OFF)
    }

    fn at(&self) -> parking_lot::MutexGuard<'_, HashMap<String, u64>> {
        self.at.lock()
    }

    /// `ck` was filled from, or checked against, the backend at `now`.
    pub fn validated(&self, ck: &str, now: u64) {
        if self.enabled().is_some() {
            let mut at = self.at();
            if at.len() >= MAX_ENTRIES && !at.contains_key(ck) {
                at.clear();
            }
            at.insert(ck.to_string(), now);
        }
    }

    /// Whether a hit on `ck` at `now` must be checked first.
    pub fn due(&self, ck: &str, now: u64) -> bool {
        let Some(after) = self.enabled() else { return false };
        self.at().get(ck).is_none_or(|&t| now.saturating_sub(t) >= after)
    }
}
