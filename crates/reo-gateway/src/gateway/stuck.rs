//! Stuck objects: acknowledged write-back objects the flusher cannot write because their bucket
//! is missing in the backend (deleted there behind the gateway's back, by another client of the
//! backend or an operator). What a storage engineer expects, and what the gateway does:
//!
//! * **Nothing acknowledged is dropped**: the objects stay dirty on flash, readable and listed,
//!   and count as dirty (towards the dirty budget and `reo admin flush`).
//! * **One missing bucket is not an outage**: the backend answered, so it is not marked down
//!   (writes to other buckets do not get `SlowDown`), and the other buckets' objects flush as
//!   usual; the round's backoff is not raised for them.
//! * **Retried with backoff, per bucket**: one object of the bucket per flush worker is tried
//!   when its retry is due (1 s, doubling to 5 min), not every object every round. Once the bucket exists again
//!   they flush: at once when the gateway sees it exist (CreateBucket through the gateway, a
//!   write's bucket check, `reo admin flush`), else at the next retry.
//! * **Visible**: a warning naming the bucket and the key when a bucket is found missing; the
//!   admin status (`stuck`: objects, bytes, per bucket with the reason) and `/metrics`
//!   (`reo_gateway_stuck_objects`, `reo_gateway_stuck_bytes`, `reo_gateway_stuck_buckets`).
//! * To give the objects up instead, delete them through the gateway (a delete in a missing
//!   bucket is done at once by the flusher).
//!
//! The registry's mutex is a leaf: never held across I/O or another lock.

use std::collections::BTreeMap;
use std::time::Duration;

use parking_lot::{Mutex, MutexGuard};

const RETRY_MIN: Duration = Duration::from_secs(1);
const RETRY_MAX: Duration = Duration::from_secs(300);

/// Why objects are stuck (the one reason so far).
pub const REASON: &str = "NoSuchBucket: the bucket is missing in the backend (deleted behind the gateway?)";

struct Gone {
    since_ns: u64,
    retry_at_ns: u64,
    delay: Duration,
    /// The key whose flush last found the bucket missing.
    key: String,
}

/// Buckets found missing by the flusher (see the module doc).
#[derive(Default)]
pub(crate) struct GoneBuckets(Mutex<BTreeMap<String, Gone>>);

/// One bucket's stuck objects, for the admin status.
#[derive(Debug, Clone, serde::Serialize, serde::Deserialize)]
pub struct StuckBucket {
    /// The bucket missing in the backend.
    pub bucket: String,
    /// Unflushed objects of it that cannot be written back.
    pub objects: u64,
    /// Their bytes.
    pub bytes: u64,
    /// Why they are stuck.
    pub reason: std::borrow::Cow<'static, str>,
    /// Seconds since the bucket was found missing.
    pub since_seconds: f64,
    /// A stuck key (the last one tried).
    pub key: String,
}

/// All stuck objects, for the admin status and `/metrics`.
#[derive(Debug, Clone, Default, serde::Serialize, serde::Deserialize)]
pub struct StuckReport {
    /// Stuck objects, all buckets together.
    pub objects: u64,
    /// Their bytes.
    pub bytes: u64,
    /// Per bucket.
    pub buckets: Vec<StuckBucket>,
}

impl GoneBuckets {
    fn lock(&self) -> MutexGuard<'_, BTreeMap<String, Gone>> {
        self.0.lock()
    }

    /// Whether `bucket`'s objects wait at `now_ns`: it is missing and its retry is not due.
    pub fn waiting(&self, bucket: &str, now_ns: u64) -> bool {
        self.lock().get(bucket).is_some_and(|g| g.retry_at_ns > now_ns)
    }

    /// A flush of `key` found `bucket` missing at `now_ns`; the next retry is due after the
    /// bucket's backoff, which doubles. True if the bucket was not known missing before. A
    /// failure while the retry is not due (another flush worker's probe of the same round,
    /// begun before the first failure was recorded) leaves the backoff as it is.
    pub fn failed(&self, bucket: &str, key: &str, now_ns: u64) -> bool {
        let mut m = self.lock();
        let first = !m.contains_key(bucket);
        let g = m.entry(bucket.to_string()).or_insert(Gone {
            since_ns: now_ns,
            retry_at_ns: 0,
            delay: RETRY_MIN,
            key: String::new(),
        });
        if g.retry_at_ns <= now_ns {
            g.retry_at_ns = now_ns.saturating_add(g.delay.as_nanos() as u64);
            g.delay = (g.delay * 2).min(RETRY_MAX);
        }
        g.key = key.to_string();
        first
    }

    /// `bucket` exists (a flush into it succeeded, or the backend said so); true if it was
    /// known missing.
    pub fn exists(&self, bucket: &str) -> bool {
        self.lock().remove(bucket).is_some()
    }

    /// Every missing bucket is retried at the next round (`reo admin flush`).
    pub fn retry_now(&self) {
        for g in self.lock().values_mut() {
            g.retry_at_ns = 0;
        }
    }

    pub(super) fn list(&self) -> Vec<(String, u64, String)> {
        self.lock().iter().map(|(b, g)| (b.clone(), g.since_ns, g.key.clone())).collect()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_missing_bucket_is_retried_with_a_doubling_backoff_until_it_exists() {
        let g = GoneBuckets::default();
        let s = 1_000_000_000u64;
        assert!(!g.waiting("b", 0));
        assert!(g.failed("b", "k1", 10 * s), "the first failure is the one logged as a warning");
        assert!(g.waiting("b", 10 * s) && g.waiting("b", 11 * s - 1) && !g.waiting("b", 11 * s));
        assert!(!g.failed("b", "k2", 11 * s));
        assert!(g.waiting("b", 13 * s - 1) && !g.waiting("b", 13 * s), "2 s after the second failure");
        // Another worker's probe of the same round fails while the retry is not due: the
        // backoff stays as it is.
        assert!(!g.failed("b", "k3", 11 * s));
        assert!(g.waiting("b", 13 * s - 1) && !g.waiting("b", 13 * s), "not doubled by the concurrent probe");
        for _ in 0..20 {
            g.retry_now();
            g.failed("b", "k", 0);
        }
        assert!(g.waiting("b", 300 * s - 1) && !g.waiting("b", 300 * s), "capped at 5 min");
        assert!(!g.waiting("other", 0), "other buckets are not held back");
        g.retry_now();
        assert!(!g.waiting("b", 0), "an explicit flush retries at once");
        g.failed("b", "k", 0);
        assert!(g.exists("b") && !g.exists("b"));
        assert!(!g.waiting("b", 0));
    }
}
