//! Backend outages: how the gateway knows the backend is down and what it does about it.
//!
//! * **Down** is decided by the flusher: a failed backend write marks the backend down (from the
//!   first failure of a run of failures), the next successful one clears it. Request-path errors do
//!   not count (a missing key, a bad name are not outages).
//! * **Writes keep landing** while it is down: a write-back PUT needs the bucket to exist, and when
//!   the backend cannot say (an I/O error), a bucket this gateway has seen exist, or that holds
//!   unflushed objects, is taken as existing. The object is durable on flash, readable, and the
//!   flusher writes it once the backend is back.
//! * **Then `503 SlowDown`**: once the backend has been down longer than `slowdown_after`
//!   (`flush.backend_down_slowdown_after`), write-back PUTs are refused with `SlowDown` — the dirty
//!   data stops growing with no end in sight — as they are when the dirty budget is exhausted. A
//!   refused write is never acknowledged; nothing acknowledged is dropped.

use std::collections::HashSet;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Mutex, MutexGuard};
use std::time::Duration;

use s3s::S3Result;

use super::errors::backend_err;
use super::{now_ns, Gateway};
use crate::backend::BackendError;

/// Default of `flush.backend_down_slowdown_after`.
pub const DEFAULT_SLOWDOWN_AFTER: Duration = Duration::from_secs(300);

#[derive(Default)]
struct State {
    /// When the current run of flush failures began (None: up).
    down_since_ns: Option<u64>,
    last_error: Option<String>,
    /// Failed backend writes since start.
    failures: u64,
    /// Buckets the backend said exist (taken as existing while it cannot answer).
    known_buckets: HashSet<String>,
}

/// The backend's health as the flusher sees it.
pub struct BackendHealth {
    state: Mutex<State>,
    slowdown_after_ns: AtomicU64,
}

/// The backend's state for `GET /_reo/admin/status` and `/metrics`.
#[derive(Debug, Clone, serde::Serialize)]
pub struct HealthReport {
    pub up: bool,
    /// Seconds since the first failure of the current outage (0 when up).
    pub down_seconds: f64,
    pub failures: u64,
    pub last_error: Option<String>,
    pub slowdown_after_seconds: f64,
    /// Whether write-back PUTs are refused with SlowDown because of the outage.
    pub slowing_down: bool,
}

impl Default for BackendHealth {
    fn default() -> BackendHealth {
        BackendHealth {
            state: Mutex::default(),
            slowdown_after_ns: AtomicU64::new(DEFAULT_SLOWDOWN_AFTER.as_nanos() as u64),
        }
    }
}

impl BackendHealth {
    fn lock(&self) -> MutexGuard<'_, State> {
        self.state.lock().unwrap_or_else(|e| e.into_inner())
    }

    pub fn set_slowdown_after(&self, d: Duration) {
        self.slowdown_after_ns.store(d.as_nanos().min(u64::MAX as u128) as u64, Ordering::Relaxed);
    }

    /// A backend write of the flusher failed.
    pub fn record_failure(&self, error: &str) {
        let mut s = self.lock();
        s.failures += 1;
        s.last_error = Some(error.to_string());
        if s.down_since_ns.is_none() {
            s.down_since_ns = Some(now_ns());
            tracing::warn!("backend down: {error}");
        }
    }

    /// A backend write of the flusher succeeded: the backend is up.
    pub fn record_success(&self) {
        let mut s = self.lock();
        if let Some(t) = s.down_since_ns.take() {
            tracing::info!("backend back after {:.1} s down", now_ns().saturating_sub(t) as f64 / 1e9);
        }
    }

    /// How long the backend has been down (None: up).
    pub fn down_for(&self) -> Option<Duration> {
        self.lock().down_since_ns.map(|t| Duration::from_nanos(now_ns().saturating_sub(t)))
    }

    /// Why writes must slow down now, if they must.
    pub fn slowdown_reason(&self) -> Option<String> {
        let after = Duration::from_nanos(self.slowdown_after_ns.load(Ordering::Relaxed));
        let down = self.down_for()?;
        (down >= after).then(|| {
            let err = self.lock().last_error.clone().unwrap_or_default();
            format!(
                "the backend has been down for {:.0} s (more than {:.0} s; last error: {err}); \
                 acknowledged writes are safe on flash, retry later",
                down.as_secs_f64(),
                after.as_secs_f64()
            )
        })
    }

    pub fn report(&self) -> HealthReport {
        let slowing_down = self.slowdown_reason().is_some();
        let s = self.lock();
        HealthReport {
            up: s.down_since_ns.is_none(),
            down_seconds: s.down_since_ns.map_or(0.0, |t| now_ns().saturating_sub(t) as f64 / 1e9),
            failures: s.failures,
            last_error: s.last_error.clone(),
            slowdown_after_seconds: self.slowdown_after_ns.load(Ordering::Relaxed) as f64 / 1e9,
            slowing_down,
        }
    }
}

impl Gateway {
    /// Checks that `bucket` exists before a write; while the backend cannot answer (an I/O
    /// error), a bucket known to exist passes (see the module doc).
    pub(crate) fn check_bucket(&self, bucket: &str) -> S3Result<()> {
        match self.backend.head_bucket(bucket) {
            Ok(_) => {
                {
                    let mut s = self.health.lock();
                    if !s.known_buckets.contains(bucket) {
                        s.known_buckets.insert(bucket.to_string());
                    }
                }
                self.bucket_exists(bucket);
                Ok(())
            }
            Err(BackendError::Io(m)) if self.assume_bucket_exists(bucket) => {
                tracing::debug!("bucket {bucket:?} taken as existing while the backend cannot answer: {m}");
                Ok(())
            }
            Err(e) => {
                if matches!(e, BackendError::NoSuchBucket(_)) {
                    self.forget_bucket(bucket);
                }
                Err(backend_err(e))
            }
        }
    }

    /// Whether `bucket` was seen to exist or holds unflushed objects.
    fn assume_bucket_exists(&self, bucket: &str) -> bool {
        let known = self.health.lock().known_buckets.contains(bucket);
        known || self.pending().any_in_bucket(bucket)
    }

    /// The bucket is gone (deleted, or the backend says it does not exist).
    pub(crate) fn forget_bucket(&self, bucket: &str) {
        self.health.lock().known_buckets.remove(bucket);
    }
}
