//! [`HintEngine`]: applies hints. A thread ticks every [`TICK`]: hints whose lease ended are
//! undone (their pins released) and dropped; hints whose lease started are applied in order of
//! start time, then priority (higher first). Prefetches read whole objects from the backend into
//! the cache (as clean puts, so admission cannot turn them away) within the promote budget
//! ([`TokenBucket`]); byte-range prefetches go through the read path's fills. Hints with
//! `target: backend` are forwarded to [`crate::backend::Backend::advise`] instead; the backend's
//! report (or error) is kept with the hint.

use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::Arc;
use std::thread::JoinHandle;
use std::time::Duration;

use parking_lot::{Mutex, MutexGuard};

use super::store::HintStore;
use super::throttle::TokenBucket;
use super::{unix_now, Hint, HintError, HintSpec, HintState, Intent, Target};
use crate::gateway::pending::cache_key;
use crate::gateway::{now_ns, Gateway};

/// How often leases are checked.
pub const TICK: Duration = Duration::from_millis(200);
/// Most keys one prefix hint covers.
const PREFIX_LIMIT: usize = 10_000;
/// Most hints in force at once.
pub const MAX_HINTS: usize = 10_000;
/// Most hints one user (other than an admin) has in force.
pub const MAX_HINTS_PER_USER: usize = 1_000;

/// Counters for `/metrics`.
#[derive(Debug, Default, Clone, Copy, serde::Serialize)]
pub struct HintCounters {
    /// Hints accepted.
    pub submitted: u64,
    /// Hints applied at the start of their lease.
    pub applied: u64,
    /// Hints removed at the end of their lease.
    pub expired: u64,
    /// Objects (or ranges) prefetched from the backend into the cache.
    pub prefetched_objects: u64,
    /// Bytes of those prefetches.
    pub prefetched_bytes: u64,
    /// Sleeps of prefetches waiting for promote budget (`promote_bps`), each at most [`TICK`].
    pub throttle_waits: u64,
    /// Bytes of cached objects moved by `reorganize` hints.
    pub reorganized_bytes: u64,
    /// Objects backend hints were applied to.
    pub backend_advised: u64,
    /// Prefetches that failed (a missing object, a failed read or cache put) and backend hints
    /// that failed.
    pub errors: u64,
}

/// What a hint's owner may still pin while it is applied, and what it could not.
struct PinBudget {
    left: Option<u64>,
    refused: Vec<String>,
}

/// The hints in force and the thread applying them.
pub struct HintEngine {
    gw: Arc<Gateway>,
    store: Mutex<HintStore>,
    budget: Mutex<TokenBucket>,
    counters: Mutex<HintCounters>,
    stopping: AtomicBool,
    throttle_waits: AtomicU64,
    thread: Mutex<Option<JoinHandle<()>>>,
}

impl HintEngine {
    /// Loads the hints of `<state_dir>/hints.json` and starts applying them; prefetches read at
    /// most `promote_bps` bytes per second from the backend (0: unlimited).
    pub fn start(
        gw: Arc<Gateway>,
        state_dir: &std::path::Path,
        promote_bps: u64,
    ) -> Result<Arc<HintEngine>, HintError> {
        let e = HintEngine::open(gw, state_dir, promote_bps)?;
        let me = e.clone();
        let h = std::thread::Builder::new()
            .name("reo-hints".into())
            .spawn(move || {
                while !me.stopping.load(Ordering::SeqCst) {
                    me.tick(unix_now());
                    std::thread::sleep(TICK);
                }
            })
            .map_err(HintError::Thread)?;
        *e.thread.lock() = Some(h);
        Ok(e)
    }

    /// Loads the hints without the thread (the caller calls [`HintEngine::tick`]).
    pub fn open(gw: Arc<Gateway>, state_dir: &std::path::Path, promote_bps: u64) -> Result<Arc<HintEngine>, HintError> {
        std::fs::create_dir_all(state_dir).map_err(|source| HintError::Io { path: state_dir.to_path_buf(), source })?;
        let store = HintStore::open(&state_dir.join("hints.json"))?;
        Ok(Arc::new(HintEngine {
            gw,
            store: Mutex::new(store),
            budget: Mutex::new(TokenBucket::new(promote_bps, now_ns())),
            counters: Mutex::new(HintCounters::default()),
            stopping: AtomicBool::new(false),
            throttle_waits: AtomicU64::new(0),
            thread: Mutex::new(None),
        }))
    }

    /// Stops the thread (the hints stay on disk for the next start).
    pub fn stop(&self) {
        self.stopping.store(true, Ordering::SeqCst);
        if let Some(h) = self.thread.lock().take() {
            let _ = h.join();
        }
    }

    fn store(&self) -> MutexGuard<'_, HintStore> {
        self.store.lock()
    }

    fn count(&self, f: impl FnOnce(&mut HintCounters)) {
        f(&mut self.counters.lock());
    }

    /// A snapshot of the counters.
    pub fn counters(&self) -> HintCounters {
        let mut c = *self.counters.lock();
        c.throttle_waits = self.throttle_waits.load(Ordering::Relaxed);
        c
    }

    /// Validates and records a hint; it is applied at its lease start (the next tick if due).
    pub fn submit(&self, spec: HintSpec) -> Result<String, HintError> {
        self.submit_for(spec, None, MAX_HINTS, None)
    }

    /// [`HintEngine::submit`] for a user, who may have at most `per_owner` hints in force and
    /// pins holding at most `pin_limit` bytes (pins past it are not made, and listed in the
    /// hint's `pins_refused`); the whole set is bounded by [`MAX_HINTS`] (each change rewrites
    /// its file).
    pub fn submit_for(
        &self,
        spec: HintSpec,
        owner: Option<&str>,
        per_owner: usize,
        pin_limit: Option<u64>,
    ) -> Result<String, HintError> {
        spec.validate()?;
        let mut store = self.store();
        if store.hints.len() >= MAX_HINTS {
            return Err(HintError::TooMany { limit: MAX_HINTS });
        }
        if let Some(o) = owner {
            if store.hints.values().filter(|h| h.owner.as_deref() == Some(o)).count() >= per_owner {
                return Err(HintError::OwnerLimit { owner: o.to_string(), limit: per_owner });
            }
        }
        let id = store.add(spec, owner.map(str::to_string), pin_limit).map_err(HintError::Persist)?;
        drop(store);
        self.count(|c| c.submitted += 1);
        Ok(id)
    }

    /// Every hint in force, by request id.
    pub fn list(&self) -> Vec<Hint> {
        self.store().hints.values().cloned().collect()
    }

    /// The hints whose address covers `bucket/key`.
    pub fn covering(&self, bucket: &str, key: &str) -> Vec<Hint> {
        self.store()
            .hints
            .values()
            .filter(|h| {
                h.spec.bucket == bucket
                    && (h.spec.key.as_deref() == Some(key)
                        || h.spec.prefix.as_deref().is_some_and(|p| key.starts_with(p)))
            })
            .cloned()
            .collect()
    }

    /// Withdraws a hint (its pins are released). False if there is no such hint.
    pub fn cancel(&self, id: &str) -> Result<bool, HintError> {
        let mut s = self.store();
        let Some(h) = s.hints.remove(id) else { return Ok(false) };
        self.release(&h);
        s.save().map_err(HintError::PersistAll)?;
        Ok(true)
    }

    fn release(&self, h: &Hint) {
        for k in &h.pinned {
            self.gw.cache.unpin(cache_key(&h.spec.bucket, k).as_bytes());
        }
    }

    /// One pass at unix time `now`: expire ended leases, apply started ones.
    pub fn tick(&self, now: u64) {
        let due: Vec<Hint> = {
            let mut s = self.store();
            let ended: Vec<String> =
                s.hints.values().filter(|h| h.spec.lease.end <= now).map(|h| h.request_id.clone()).collect();
            for id in &ended {
                let h = s.hints.remove(id).expect("listed");
                self.release(&h);
                self.count(|c| c.expired += 1);
            }
            if !ended.is_empty() {
                if let Err(e) = s.save() {
                    tracing::error!("cannot persist the hints: {e}");
                }
            }
            let mut due: Vec<Hint> = s
                .hints
                .values()
                .filter(|h| h.state == HintState::Scheduled && h.spec.lease.start <= now)
                .cloned()
                .collect();
            due.sort_by_key(|h| (h.spec.lease.start, -i64::from(h.spec.priority)));
            due
        };
        for h in due {
            if self.stopping.load(Ordering::SeqCst) {
                return;
            }
            let mut pins = self.pin_budget(&h);
            let (pinned, bytes, backend_result) = match h.spec.target {
                Target::Cache => {
                    let (p, b) = self.apply(&h.spec, &mut pins);
                    (p, b, None)
                }
                Target::Backend => (Vec::new(), 0, Some(self.forward(&h.spec))),
            };
            if self.stopping.load(Ordering::SeqCst) {
                return; // possibly applied in part: left scheduled (pins carry their own end)
            }
            self.count(|c| c.applied += 1);
            let mut s = self.store();
            if let Some(stored) = s.hints.get_mut(&h.request_id) {
                stored.state = HintState::Active;
                stored.pinned = pinned;
                stored.prefetched_bytes = bytes;
                stored.backend_result = backend_result;
                stored.pins_refused = pins.refused;
                if let Err(e) = s.save() {
                    tracing::error!("cannot persist the hints: {e}");
                }
            } else {
                // Cancelled while it was applied: undo its pins.
                for k in &pinned {
                    self.gw.cache.unpin(cache_key(&h.spec.bucket, k).as_bytes());
                }
            }
        }
    }

    /// Forwards a `target: backend` hint to the backend; returns what it did (or its error) for
    /// the hint's listing.
    fn forward(&self, spec: &HintSpec) -> String {
        let (address, advice) = spec.backend_advice();
        match self.gw.backend.advise(&spec.bucket, &address, advice) {
            Ok(r) => {
                self.count(|c| c.backend_advised += r.objects);
                r.to_string()
            }
            Err(e) => {
                tracing::warn!(bucket = spec.bucket, "backend hint: {e}");
                self.count(|c| c.errors += 1);
                format!("error: {e}")
            }
        }
    }

    /// The keys a hint addresses.
    fn keys(&self, spec: &HintSpec) -> Vec<String> {
        if let Some(k) = &spec.key {
            return vec![k.clone()];
        }
        let prefix = spec.prefix.as_deref().unwrap_or("");
        let mut keys: Vec<String> = match self.gw.backend.list(&spec.bucket, prefix, "", PREFIX_LIMIT) {
            Ok(v) => v.into_iter().map(|e| e.key).collect(),
            Err(_) => Vec::new(),
        };
        keys.extend(self.gw.pending().in_bucket(&spec.bucket, prefix).into_iter().map(|(k, _)| k));
        keys.sort();
        keys.dedup();
        keys
    }

    /// Bytes an object holds in the cache (0 when it is not there).
    fn cached_size(&self, bucket: &str, key: &str) -> u64 {
        self.gw.cache.info(cache_key(bucket, key).as_bytes()).map_or(0, |i| i.size)
    }

    /// What `h`'s owner may still pin: its limit less what its other active hints pin now.
    fn pin_budget(&self, h: &Hint) -> PinBudget {
        let Some(limit) = h.pin_limit else { return PinBudget { left: None, refused: Vec::new() } };
        let others: Vec<Hint> = self
            .store()
            .hints
            .values()
            .filter(|o| o.owner == h.owner && o.request_id != h.request_id && o.state == HintState::Active)
            .cloned()
            .collect();
        let used: u64 = others.iter().flat_map(|o| o.pinned.iter().map(|k| self.cached_size(&o.spec.bucket, k))).sum();
        PinBudget { left: Some(limit.saturating_sub(used)), refused: Vec::new() }
    }

    /// Applies a hint now; returns the keys it pinned and the bytes it prefetched.
    fn apply(&self, spec: &HintSpec, pins: &mut PinBudget) -> (Vec<String>, u64) {
        let mut pinned = Vec::new();
        let mut bytes = 0;
        if let Some(m) = &spec.reorganize {
            let moved = super::reorganize::reorganize(&self.gw, &spec.bucket, &m.from, &m.to);
            self.count(|c| c.reorganized_bytes += moved);
            return (pinned, 0);
        }
        let until_ns = spec.lease.end.saturating_mul(1_000_000_000);
        for key in self.keys(spec) {
            if self.stopping.load(Ordering::SeqCst) {
                break; // shutting down: the hint stays scheduled and is applied again at the next start
            }
            let ck = cache_key(&spec.bucket, &key);
            match spec.intent.canonical() {
                Intent::Prefetch => bytes += self.prefetch(&spec.bucket, &key, spec.range),
                Intent::Pin => {
                    bytes += self.prefetch(&spec.bucket, &key, None);
                    let size = self.cached_size(&spec.bucket, &key);
                    if pins.left.is_some_and(|left| size > left) {
                        pins.refused.push(key);
                        continue;
                    }
                    if self.gw.cache.pin(ck.as_bytes(), until_ns) {
                        if let Some(left) = &mut pins.left {
                            *left -= size;
                        }
                        pinned.push(key);
                    }
                }
                Intent::Unpin => self.gw.cache.unpin(ck.as_bytes()),
                Intent::Evict => {
                    let _g = self.gw.stripe(&ck);
                    // Unflushed bytes exist only on flash: they are not evicted.
                    if !self.gw.pending().map.contains_key(&ck) {
                        self.gw.cache.delete(ck.as_bytes());
                    }
                }
                Intent::Open | Intent::Close => unreachable!("canonical() resolves the aliases"),
                Intent::Reorganize => unreachable!("validate() requires reorganize's prefixes"),
            }
        }
        (pinned, bytes)
    }

    /// Waits for `n` bytes of promote budget (false if stopping meanwhile).
    fn throttle(&self, n: u64) -> bool {
        loop {
            let r = self.budget.lock().take(n, now_ns());
            match r {
                Ok(()) => return true,
                Err(wait) => {
                    self.throttle_waits.fetch_add(1, Ordering::Relaxed);
                    if self.stopping.load(Ordering::SeqCst) {
                        return false;
                    }
                    std::thread::sleep(wait.min(TICK));
                }
            }
        }
    }

    /// Brings `bucket/key` (or its `range`) onto flash unless it is there; returns backend bytes read.
    fn prefetch(&self, bucket: &str, key: &str, range: Option<(u64, u64)>) -> u64 {
        let ck = cache_key(bucket, key);
        if self.gw.cache.info(ck.as_bytes()).is_some_and(|i| i.cached_fragments == i.fragments) {
            return 0;
        }
        // The size to budget for, from the backend: the gateway's head may revalidate and drop the
        // cached copy, which only a caller holding the key's stripe may do, and no lock is held
        // across the throttle's wait. (A whole cached object was returned for above, an unflushed
        // one among them.)
        let Ok(info) = self.gw.backend.head(bucket, key) else {
            tracing::warn!(bucket, key, "prefetch hint: no such object");
            self.count(|c| c.errors += 1);
            return 0;
        };
        let (start, end) = range.map_or((0, info.size), |(s, e)| (s.min(info.size), e.min(info.size)));
        if !self.throttle(end - start) {
            return 0;
        }
        let ok = if let Some((s, e)) = range {
            // Under the key's stripe (shared) the gateway's head is safe, and describes the
            // version the cache holds pieces of (the read checks the backend's fragments against it).
            let _g = self.gw.read_lock(bucket, key);
            match self.gw.head(bucket, key) {
                Ok(cur) => self.gw.read(bucket, key, &cur, s.min(cur.size), e.min(cur.size)).is_ok(),
                Err(_) => false,
            }
        } else {
            // Exclusive: no write or delete of the key lands between the backend read and the put.
            let _g = self.gw.stripe(&ck);
            if self.gw.pending().map.contains_key(&ck) {
                return 0; // an unflushed write is on flash already
            }
            match self.gw.backend.get_range(bucket, key, 0, info.size) {
                // Only the whole object of the version read is cached: the object may have been
                // rewritten since the HEAD, and the size asked for is the old one's (a longer new
                // version would be cached cut short, under the new version's ETag).
                Ok((data, binfo)) if data.len() as u64 == binfo.size => {
                    let meta = crate::gateway::meta_of(&binfo);
                    self.gw.cache.record_backend_read(data.len() as u64);
                    self.gw.cache.put(ck.as_bytes(), &data, &meta, false, now_ns()).is_ok()
                }
                Ok(_) | Err(_) => false,
            }
        };
        if ok {
            self.count(|c| {
                c.prefetched_objects += 1;
                c.prefetched_bytes += end - start;
            });
            end - start
        } else {
            self.count(|c| c.errors += 1);
            0
        }
    }
}
