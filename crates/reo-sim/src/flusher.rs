//! The write-back model of a replay: dirty objects queue in write order and are flushed oldest
//! first (written to the backend, then marked clean, which changes their class and scheme). When
//! a flush happens is the [`FlushPace`]:
//!
//! - **watermarks**: when dirty bytes pass the high watermark the oldest are flushed until they
//!   fall below the low one, at no cost in time;
//! - **backend**: `reo serve`'s flusher, modelled: an object is flushed once it is `delay` old
//!   (`flush.delay_ms`; rewrites within it cost one backend write) and the backend takes it,
//!   and a write that would take dirty bytes past the dirty limit (the high watermark) is
//!   refused, as the gateway answers it `503 SlowDown` past `flush.dirty_limit`. The backend is
//!   one device (a disk): it writes one object after another in the modelled time the requests
//!   leave it idle (a request's time minus its own backend I/O), where the gateway keeps up to
//!   eight flushes in flight, which a single disk serves no faster. So the dirty share grows with
//!   the write rate: about the bytes written in the last `delay` while the backend keeps up, up
//!   to the limit (or a flash full of dirty replicas) when it does not.
//!
//! Either way flushes are background work: their backend time is counted apart, not on a
//! request's path.

use std::collections::{HashMap, VecDeque};

use reo_cache::Cache;

use crate::model::LatencyModel;

/// When dirty objects are flushed (see the module doc).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum FlushPace {
    /// Down to the low watermark once past the high one, instantly.
    Watermarks,
    /// As fast as the backend's idle time allows; writes past the dirty limit are refused.
    Backend,
}

impl std::str::FromStr for FlushPace {
    type Err = String;
    fn from_str(s: &str) -> Result<Self, String> {
        match s {
            "watermarks" => Ok(FlushPace::Watermarks),
            "backend" => Ok(FlushPace::Backend),
            _ => Err(format!("expected `watermarks` or `backend`, got {s:?}")),
        }
    }
}

/// A dirty version awaiting its flush.
#[derive(Debug, Clone, Copy)]
struct Dirty {
    key: u64,
    version: u64,
    /// When it was written, modelled seconds.
    at_secs: f64,
}

/// Dirty objects awaiting their flush.
pub struct Flusher {
    pace: FlushPace,
    /// Versions in write order; one a later write replaced stays queued until it reaches the
    /// head, where it is skipped.
    queue: VecDeque<Dirty>,
    /// Each dirty key's current version and bytes, as the gateway's pending map holds them: a
    /// rewrite replaces its key's bytes in the count.
    current: HashMap<u64, (u64, u64)>,
    /// Sum of `current`'s bytes.
    dirty_bytes: u64,
    high: u64,
    low: u64,
    /// Age at which an object is due ([`FlushPace::Backend`]), modelled seconds.
    delay_secs: f64,
    /// Modelled seconds since the replay began: the requests' time.
    clock_secs: f64,
    /// Backend seconds the flusher may still spend ([`FlushPace::Backend`]): idle time it has
    /// not used yet, carried while an object's flush is under way.
    credit_secs: f64,
    /// Bytes written to the backend.
    pub flushed_bytes: u64,
    pub flushes: u64,
}

impl Flusher {
    /// Watermarks in bytes of dirty user data (`high` is the dirty limit of the backend pace);
    /// `delay_secs`: the age at which the backend pace flushes an object.
    pub fn new(pace: FlushPace, high: u64, low: u64, delay_secs: f64) -> Flusher {
        Flusher {
            pace,
            delay_secs,
            clock_secs: 0.0,
            queue: VecDeque::new(),
            current: HashMap::new(),
            dirty_bytes: 0,
            high,
            low: low.min(high),
            credit_secs: 0.0,
            flushed_bytes: 0,
            flushes: 0,
        }
    }

    /// Whether a write-back put of `bytes` is refused before it reaches the cache: past the dirty
    /// limit under the backend pace (the watermark pace flushes instead).
    pub fn refuses(&self, bytes: u64) -> bool {
        self.pace == FlushPace::Backend && self.dirty_bytes + bytes > self.high
    }

    /// A write-back put of `bytes` to `key` was acknowledged as `version`.
    pub fn dirtied(&mut self, key: u64, version: u64, bytes: u64) {
        self.queue.push_back(Dirty { key, version, at_secs: self.clock_secs });
        if let Some((_, old)) = self.current.insert(key, (version, bytes)) {
            self.dirty_bytes -= old;
        }
        self.dirty_bytes += bytes;
    }

    /// `key`'s dirty data left the cache without a flush (a delete, or a write that went to the
    /// backend around the cache): nothing of it is to be written back.
    pub fn forget(&mut self, key: u64) {
        if let Some((_, bytes)) = self.current.remove(&key) {
            self.dirty_bytes -= bytes;
        }
    }

    /// Flushes what the pace allows after a request that took `secs`, of which `idle_secs` the
    /// backend had nothing of the request's to do (the backend pace spends it).
    pub fn run(&mut self, cache: &Cache, secs: f64, idle_secs: f64, model: &LatencyModel) {
        self.clock_secs += secs;
        match self.pace {
            FlushPace::Watermarks => {
                if self.dirty_bytes > self.high {
                    let low = self.low;
                    self.flush_while(cache, |f, _, _| (f.dirty_bytes > low).then_some(0.0));
                }
            }
            FlushPace::Backend => {
                self.credit_secs += idle_secs;
                self.flush_while(cache, |f, d, bytes| {
                    let since_due = f.clock_secs - (d.at_secs + f.delay_secs);
                    if since_due < 0.0 {
                        // Not due yet: the backend idles until it is.
                        f.credit_secs = 0.0;
                        return None;
                    }
                    // The backend cannot have started it before it came due.
                    f.credit_secs = f.credit_secs.min(since_due);
                    let cost = model.backend_secs(1, bytes);
                    if f.credit_secs < cost {
                        return None;
                    }
                    f.credit_secs -= cost;
                    Some(cost)
                });
                if self.queue.is_empty() {
                    // An idle backend's time cannot be saved for later writes.
                    self.credit_secs = 0.0;
                }
            }
        }
    }

    /// Flushes the oldest dirty objects while `go(self, the next, its bytes)` gives the backend
    /// seconds it charged for the next one.
    fn flush_while(&mut self, cache: &Cache, mut go: impl FnMut(&mut Flusher, &Dirty, u64) -> Option<f64>) {
        let mut retries = 0;
        while let Some(&d) = self.queue.front() {
            let Dirty { key, version, .. } = d;
            let Some(&(current, bytes)) = self.current.get(&key).filter(|(v, _)| *v == version) else {
                // Replaced by a newer version (queued behind) or forgotten: nothing to write.
                self.queue.pop_front();
                continue;
            };
            let k = key.to_le_bytes();
            if cache.dirty_version_of(&k) != Some(current) {
                // Gone from the cache unflushed (lost with failed devices): nothing to write.
                self.queue.pop_front();
                self.forget(key);
                continue;
            }
            let Some(cost) = go(self, &d, bytes) else { break };
            self.queue.pop_front();
            // The backend write happens first; the cache then drops the extra replicas.
            let cleaned = cache.mark_clean(&k, version);
            if !matches!(cleaned, Ok(true)) && cache.dirty_version_of(&k) == Some(version) {
                // Still this dirty version: the rewrite raced the cleaner or found the flash
                // full. Retry later (a bounded number of times per run); the backend write is
                // charged once, when the retry succeeds.
                self.queue.push_back(d);
                self.credit_secs += cost;
                retries += 1;
                if retries > 8 {
                    break;
                }
                continue;
            }
            self.forget(key);
            self.flushed_bytes += bytes;
            self.flushes += 1;
        }
    }
}
