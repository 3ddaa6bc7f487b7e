//! [`BackendCalls`]: how long the backend takes to answer and how often it fails, by operation,
//! for `/metrics` (`reo_backend_request_duration_seconds`, `reo_backend_request_errors_total`).
//! Request-path calls are timed by [`super::guard`], the flusher's writes and deletes by the
//! flusher; a streamed read or write is timed to its first answer (the stream's later pieces are
//! the client's pace, not the backend's).

use prometheus_client::encoding::EncodeLabelSet;
use prometheus_client::metrics::counter::Counter;
use prometheus_client::metrics::family::Family;
use prometheus_client::metrics::histogram::{exponential_buckets, Histogram};

/// The label of a backend call.
#[derive(Clone, Debug, Hash, PartialEq, Eq, EncodeLabelSet)]
pub struct CallLabel {
    /// The backend operation (`get`, `put`, `head`, `list`, …).
    pub op: &'static str,
}

fn new_histogram() -> Histogram {
    // 1 ms to 32 s, ×2 per bucket: a local directory answers in the first buckets, a remote
    // store in the middle, a stalled one at the deadline.
    Histogram::new(exponential_buckets(0.001, 2.0, 16))
}

/// Backend call latency and errors by operation (clones share the counts).
#[derive(Clone, Debug)]
pub struct BackendCalls {
    duration: Family<CallLabel, Histogram, fn() -> Histogram>,
    errors: Family<CallLabel, Counter>,
}

impl Default for BackendCalls {
    fn default() -> Self {
        BackendCalls { duration: Family::new_with_constructor(new_histogram), errors: Family::default() }
    }
}

impl BackendCalls {
    /// Runs `call` (backend operation `op`), timing it and counting its failure.
    pub fn time<T, E>(&self, op: &'static str, call: impl FnOnce() -> Result<T, E>) -> Result<T, E> {
        let t = std::time::Instant::now();
        let r = call();
        let label = CallLabel { op };
        self.duration.get_or_create(&label).observe(t.elapsed().as_secs_f64());
        if r.is_err() {
            self.errors.get_or_create(&label).inc();
        }
        r
    }

    /// The latency histograms, by operation (for the exposition).
    pub fn duration(&self) -> Family<CallLabel, Histogram, fn() -> Histogram> {
        self.duration.clone()
    }

    /// The failed calls, by operation (for the exposition).
    pub fn errors(&self) -> Family<CallLabel, Counter> {
        self.errors.clone()
    }
}
