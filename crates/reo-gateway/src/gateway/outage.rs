//! Backend outages: how the gateway knows the backend is down and what it does about it.
//!
//! * **Down** is decided by the backend's answers: a call that fails because the backend is
//!   unreachable or failing (`BackendError::Io`: refused connections, deadlines passed, 5xx) —
//!   a flush, a miss, a bucket check — marks it down (from the first failure of a run of
//!   failures); the next call it answers marks it up. Answers such as "no such key" or a bad name
//!   are answers: the backend is up.
//! * **While it is down, the request path does not wait for it** ([`super::guard`]): calls fail at
//!   once with `503 SlowDown` and `Retry-After`, instead of each waiting out a deadline. A
//!   [`Prober`] thread asks the backend once a second meanwhile (with the backend's deadline),
//!   and at start-up, so the gateway never waits for the backend to start serving; the flusher
//!   keeps trying with its own backoff. A probe's answer lets requests through again, but the
//!   outage (its clock, `up` in the status) ends only when the backend serves a real call: a
//!   store that answers probes but fails writes stays down for the slowdown below.
//! * **Writes keep landing** while it is down: a write-back PUT needs the bucket to exist, and when
//!   the backend cannot say, a bucket this gateway has seen exist, or that holds unflushed
//!   objects, is taken as existing. The object is durable on flash, readable, and the flusher
//!   writes it once the backend is back.
//! * **Then `503 SlowDown`**: once the backend has been down longer than `slowdown_after`
//!   (`flush.backend_down_slowdown_after`), write-back PUTs are refused with `SlowDown` — the dirty
//!   data stops growing with no end in sight — as they are when the dirty budget is exhausted. A
//!   refused write is never acknowledged; nothing acknowledged is dropped.

use std::collections::HashSet;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::Arc;
use std::thread::JoinHandle;
use std::time::Duration;

use parking_lot::{Condvar, Mutex, MutexGuard};

use super::clock::now_ns;
use crate::backend::BackendError;

/// Default of `flush.backend_down_slowdown_after`.
pub const DEFAULT_SLOWDOWN_AFTER: Duration = Duration::from_secs(300);

#[derive(Default)]
struct State {
    /// When the current outage began: the first failure since the backend last served a real
    /// call (None: up). Probe answers do not end it (see [`BackendHealth::record_probe_success`]).
    down_since_ns: Option<u64>,
    last_error: Option<String>,
    /// Failed backend calls since start.
    failures: u64,
    /// Buckets the backend said exist (taken as existing while it cannot answer).
    known_buckets: HashSet<String>,
}

/// The backend's health, from the answers of its calls (see the module doc).
pub struct BackendHealth {
    state: Mutex<State>,
    /// Whether request-path calls are refused at once: set by a failure, cleared by any answer
    /// (a probe's too).
    down: AtomicBool,
    /// Whether an outage is running (`state.down_since_ns.is_some()`), readable without the lock.
    in_outage: AtomicBool,
    /// Whether it has answered a call since start (until then, whether it is up is unknown).
    answered: AtomicBool,
    slowdown_after_ns: AtomicU64,
}

/// The backend's state for `GET /_reo/admin/status` and `/metrics`.
#[derive(Debug, Clone, serde::Serialize, serde::Deserialize)]
pub struct HealthReport {
    /// No failure since the backend last served a real call.
    pub up: bool,
    /// Whether requests are let through to the backend (it answers, if only probes); false:
    /// they fail at once with `503 SlowDown`.
    pub reachable: bool,
    /// Seconds since the first failure of the current outage (0 when up).
    pub down_seconds: f64,
    /// Failed backend calls since start.
    pub failures: u64,
    /// The last failed call's error, if any call failed since start.
    pub last_error: Option<String>,
    /// Outage length, seconds, after which write-back PUTs get `503 SlowDown`.
    pub slowdown_after_seconds: f64,
    /// Whether write-back PUTs are refused with SlowDown because of the outage.
    pub slowing_down: bool,
}

impl Default for BackendHealth {
    fn default() -> BackendHealth {
        BackendHealth {
            state: Mutex::default(),
            down: AtomicBool::new(false),
            in_outage: AtomicBool::new(false),
            answered: AtomicBool::new(false),
            slowdown_after_ns: AtomicU64::new(DEFAULT_SLOWDOWN_AFTER.as_nanos() as u64),
        }
    }
}

impl BackendHealth {
    /// Whether `bucket` was seen to exist in the backend (and not found gone since).
    pub(crate) fn knows_bucket(&self, bucket: &str) -> bool {
        self.lock().known_buckets.contains(bucket)
    }

    /// `bucket` was seen to exist in the backend.
    pub(crate) fn learn_bucket(&self, bucket: &str) {
        let mut s = self.lock();
        if !s.known_buckets.contains(bucket) {
            s.known_buckets.insert(bucket.to_string());
        }
    }

    /// `bucket` is gone from the backend.
    pub(crate) fn forget_bucket(&self, bucket: &str) {
        self.lock().known_buckets.remove(bucket);
    }

    fn lock(&self) -> MutexGuard<'_, State> {
        self.state.lock()
    }

    /// Sets the outage length after which write-back PUTs get `503 SlowDown`.
    pub fn set_slowdown_after(&self, d: Duration) {
        self.slowdown_after_ns.store(d.as_nanos().min(u128::from(u64::MAX)) as u64, Ordering::Relaxed);
    }

    /// A backend call failed: the backend is unreachable or failing.
    pub fn record_failure(&self, error: &str) {
        let mut s = self.lock();
        s.failures += 1;
        s.last_error = Some(error.to_string());
        if s.down_since_ns.is_none() {
            s.down_since_ns = Some(now_ns());
            self.in_outage.store(true, Ordering::Release);
            tracing::warn!("backend down: {error}");
        }
        self.down.store(true, Ordering::Release);
    }

    /// The backend served a real call (a flush, a request): it is up, and the outage is over.
    pub fn record_success(&self) {
        self.answered.store(true, Ordering::Relaxed);
        if !self.is_down() && !self.in_outage.load(Ordering::Acquire) {
            return;
        }
        let mut s = self.lock();
        self.down.store(false, Ordering::Release);
        self.in_outage.store(false, Ordering::Release);
        if let Some(t) = s.down_since_ns.take() {
            tracing::info!("backend back after {:.1} s down", now_ns().saturating_sub(t) as f64 / 1e9);
        }
    }

    /// The backend answered a probe: requests go through to it again, but the outage goes on
    /// until it serves a real call — a store that answers probes and fails writes (full, refusing
    /// the gateway's writes) is still down for `flush.backend_down_slowdown_after`.
    pub fn record_probe_success(&self) {
        self.answered.store(true, Ordering::Relaxed);
        if self.down.swap(false, Ordering::AcqRel) {
            tracing::info!("the backend answers probes again; requests go through to it");
        }
    }

    /// Whether the backend is down now.
    pub fn is_down(&self) -> bool {
        self.down.load(Ordering::Acquire)
    }

    /// Whether the backend is known to be up: it has answered since start and is not down.
    /// (Before its first answer — a probe starts at once — it may be hung: a revalidation must
    /// not wait on it then.)
    pub fn is_known_up(&self) -> bool {
        self.answered.load(Ordering::Relaxed) && !self.is_down()
    }

    /// The error a request-path call gets at once while the backend is down.
    pub fn refusal(&self) -> Option<BackendError> {
        if !self.is_down() {
            return None;
        }
        let err = self.lock().last_error.clone().unwrap_or_default();
        Some(BackendError::Io(format!("the backend is unreachable (last error: {err}); retry later")))
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

    /// The backend's health now, for the admin status and `/metrics`.
    pub fn report(&self) -> HealthReport {
        let slowing_down = self.slowdown_reason().is_some();
        let s = self.lock();
        HealthReport {
            up: s.down_since_ns.is_none(),
            reachable: !self.is_down(),
            down_seconds: s.down_since_ns.map_or(0.0, |t| now_ns().saturating_sub(t) as f64 / 1e9),
            failures: s.failures,
            last_error: s.last_error.clone(),
            slowdown_after_seconds: self.slowdown_after_ns.load(Ordering::Relaxed) as f64 / 1e9,
            slowing_down,
        }
    }
}

/// How often the [`Prober`] asks a backend that is down.
pub const PROBE_INTERVAL: Duration = Duration::from_secs(1);

/// A thread that asks the backend whether it answers ([`crate::backend::Backend::probe`]): at
/// start-up (in the background: the gateway serves meanwhile) and every [`PROBE_INTERVAL`] while
/// it is down, so the request path learns it is back without waiting for a flush.
pub struct Prober {
    stop: Arc<(Mutex<bool>, Condvar)>,
    handle: Option<JoinHandle<()>>,
}

impl Prober {
    /// Starts probing `backend` (the raw one: not through the request path's guard) for `health`.
    pub fn start(backend: Arc<dyn crate::backend::Backend>, health: Arc<BackendHealth>) -> Prober {
        let stop = Arc::new((Mutex::new(false), Condvar::new()));
        let st = stop.clone();
        let handle = std::thread::Builder::new()
            .name("reo-prober".into())
            .spawn(move || {
                let mut first = true;
                loop {
                    if first || health.is_down() {
                        if probe_once(backend.as_ref(), &health) && first {
                            tracing::info!("the backend answers");
                        }
                        first = false;
                    }
                    let (m, c) = &*st;
                    let mut stopped = m.lock();
                    c.wait_for(&mut stopped, PROBE_INTERVAL);
                    if *stopped {
                        return;
                    }
                }
            })
            .expect("spawn the prober thread");
        Prober { stop, handle: Some(handle) }
    }

    /// Stops the thread (after the probe in progress, if any).
    pub fn stop(mut self) {
        let (m, c) = &*self.stop;
        *m.lock() = true;
        c.notify_all();
        if let Some(h) = self.handle.take() {
            let _ = h.join();
        }
    }
}

/// One probe of `backend` into `health`; whether it answered.
pub(crate) fn probe_once(backend: &dyn crate::backend::Backend, health: &BackendHealth) -> bool {
    match backend.probe() {
        Err(BackendError::Io(m)) => {
            health.record_failure(&m);
            false
        }
        _ => {
            health.record_probe_success();
            true
        }
    }
}

#[cfg(test)]
mod tests {
    use super::BackendHealth;

    #[test]
    fn a_probe_answer_lets_requests_through_but_the_outage_goes_on() {
        let h = BackendHealth::default();
        assert!(!h.is_known_up(), "unknown until the backend first answers");
        h.record_failure("connection refused");
        assert!(h.refusal().is_some());
        // A store that answers probes but fails the flusher's writes stays in its outage: its
        // clock runs on (for the slowdown), only the requests' refusal is lifted.
        h.record_probe_success();
        assert!(h.refusal().is_none() && h.is_known_up());
        let r = h.report();
        assert!(!r.up && r.reachable && h.down_for().is_some(), "{r:?}");
        h.record_failure("503 from the store");
        assert!(h.refusal().is_some());
        let since = h.down_for().unwrap();
        h.record_probe_success();
        assert!(h.down_for().unwrap() >= since, "the same outage");
        // A real call served ends it.
        h.record_success();
        let r = h.report();
        assert!(r.up && r.reachable && h.down_for().is_none(), "{r:?}");
        assert_eq!(r.failures, 2);
    }
}
