//! The write-back model of a replay: dirty objects queue in write order; when dirty bytes pass
//! the high watermark the oldest are flushed (written to the backend, then marked clean, which
//! changes their class and scheme) until they fall below the low watermark — as `reo serve`'s
//! flusher does with its dirty watermarks. Flushes run in the background: their backend time is
//! counted apart, not on a request's path.

use std::collections::VecDeque;

use reo_cache::Cache;

/// Dirty objects awaiting their flush.
pub struct Flusher {
    queue: VecDeque<(u64, u64, u64)>, // (key, version, bytes)
    dirty_bytes: u64,
    high: u64,
    low: u64,
    /// Bytes written to the backend.
    pub flushed_bytes: u64,
    pub flushes: u64,
}

impl Flusher {
    /// Watermarks in bytes of dirty user data.
    pub fn new(high: u64, low: u64) -> Flusher {
        Flusher { queue: VecDeque::new(), dirty_bytes: 0, high, low: low.min(high), flushed_bytes: 0, flushes: 0 }
    }

    /// A write-back put of `bytes` to `key` was acknowledged as `version`.
    pub fn dirtied(&mut self, key: u64, version: u64, bytes: u64) {
        self.queue.push_back((key, version, bytes));
        self.dirty_bytes += bytes;
    }

    /// Flushes down to the low watermark when above the high one.
    pub fn run(&mut self, cache: &Cache) {
        if self.dirty_bytes <= self.high {
            return;
        }
        let mut retries = 0;
        while self.dirty_bytes > self.low {
            let Some((key, version, bytes)) = self.queue.pop_front() else { break };
            let k = key.to_le_bytes();
            // The backend write happens first; the cache then drops the extra replicas.
            let cleaned = cache.mark_clean(&k, version);
            if !matches!(cleaned, Ok(true)) && cache.dirty_version_of(&k) == Some(version) {
                // Still this dirty version: the rewrite raced the cleaner or found the flash
                // full. Retry later (a bounded number of times per run).
                self.queue.push_back((key, version, bytes));
                retries += 1;
                if retries > 8 {
                    break;
                }
                continue;
            }
            // Clean now, or a newer version replaced it (with its own queue entry).
            self.dirty_bytes -= bytes;
            self.flushed_bytes += bytes;
            self.flushes += 1;
        }
    }
}
