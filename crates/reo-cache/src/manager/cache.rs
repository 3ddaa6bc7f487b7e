//! [`Cache`]: the cache manager's handle — the store, the configuration and the locked [`State`] —
//! opened over a store, and its counters.

use std::sync::Arc;

use parking_lot::{Mutex, MutexGuard};
use reo_store::{Durability, Location, Store};

use super::error::CacheError;
use super::state::State;
use crate::config::CacheConfig;
use crate::object::{MAX_BAND, MAX_START};
use crate::redundancy::ClassSchemes;
use crate::stats::CacheStats;

/// The cache manager. Share it through an `Arc`.
pub struct Cache {
    pub(super) store: Arc<Store>,
    pub(super) cfg: CacheConfig,
    pub(super) classes: ClassSchemes,
    state: Mutex<State>,
}

impl Cache {
    /// A cache over `store`, its index rebuilt from the blobs the store holds (a warm restart; an
    /// empty store gives an empty cache).
    pub fn open(store: Arc<Store>, cfg: CacheConfig) -> Result<Cache, CacheError> {
        let n = store.layout().devices as usize;
        cfg.validate(n)?;
        let layout = store.layout();
        if u64::from(layout.zones) > u64::from(MAX_BAND) + 1 || layout.zone / 4096 > u64::from(MAX_START) + 1 {
            return Err(CacheError::Layout {
                zones: layout.zones,
                zone: layout.zone,
                max_zones: u64::from(MAX_BAND) + 1,
                max_zone_gib: ((u64::from(MAX_START) + 1) * 4096) >> 30,
            });
        }
        let classes = cfg.class_schemes.unwrap_or_else(|| cfg.redundancy.class_schemes(n));
        let state = State::new(&cfg);
        let cache = Cache { store, cfg, classes, state: Mutex::new(state) };
        cache.rebuild_from_store()?;
        Ok(cache)
    }

    #[inline]
    pub(super) fn lock(&self) -> MutexGuard<'_, State> {
        self.state.lock()
    }

    /// The state if its lock is free now (the gateway's hot path, which must not wait).
    #[inline]
    pub(super) fn try_lock(&self) -> Option<MutexGuard<'_, State>> {
        self.state.try_lock()
    }

    /// The configuration the cache was opened with.
    #[inline]
    pub fn config(&self) -> &CacheConfig {
        &self.cfg
    }

    /// The flash array store the cache keeps its blobs in.
    #[inline]
    pub fn store(&self) -> &Arc<Store> {
        &self.store
    }

    /// The class → redundancy-scheme map in force: the configured override, else the redundancy
    /// setting's map for the array's device count.
    #[inline]
    pub fn class_schemes(&self) -> ClassSchemes {
        self.classes
    }

    /// Counters since open.
    pub fn stats(&self) -> CacheStats {
        let s = self.lock();
        let mut st = s.stats.snapshot();
        st.admission = *s.admitter.stats();
        drop(s);
        let store = self.store.stats();
        st.device_write_bytes = store.put_device_bytes + store.gc_device_bytes;
        st
    }

    /// A token for [`Cache::fill`] taken before fetching from the backend (what `get` returns).
    #[inline]
    pub fn token(&self) -> u64 {
        self.lock().invalidations.epoch()
    }

    /// Marks `key` changed without forgetting its cached copy: fills fetched before now are
    /// refused as stale ([`FillOutcome::Stale`](super::FillOutcome::Stale)) and its copy in
    /// memory goes. For a caller that learns of a change elsewhere (another node's write) and
    /// drops the copy itself later, under its own lock.
    #[inline]
    pub fn invalidate(&self, key: &[u8]) {
        self.lock().invalidate(key);
    }

    /// Objects in the index, user bytes the policy holds.
    #[inline]
    pub fn occupancy(&self) -> (usize, u64) {
        let s = self.lock();
        (s.objects.len(), s.policy.used_bytes())
    }

    /// The memory tier: (copies held, bytes they count against its capacity, the capacity).
    pub fn memory_occupancy(&self) -> (usize, u64, u64) {
        self.lock().memory.occupancy()
    }
}

/// Frees blobs (best effort: a blob already gone is fine).
pub(crate) fn free_all(store: &Store, locs: &[Location], d: Durability) {
    for l in locs {
        let _ = store.free(l, d);
    }
}
