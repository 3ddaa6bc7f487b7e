//! The server's Prometheus metrics (docs/METRICS.md lists every one). [`RequestMetrics`] are the
//! live instruments of the request path — requests by operation and status, latency histograms
//! per operation, requests in flight, bytes in and out — updated as requests are served;
//! [`exposition`] renders them at scrape time together with snapshots of the store, the cache,
//! the devices, the backend, rebuild and scrub, hints and the cluster, in the Prometheus text
//! format (prometheus-client's encoder: `# HELP`, `# TYPE`, `_total` counters, units in names).

mod collect;
pub mod exposition;
pub mod occupancy;
mod snapshot;

use std::sync::atomic::{AtomicU64, Ordering::Relaxed};
use std::time::Duration;

use prometheus_client::encoding::EncodeLabelSet;
use prometheus_client::metrics::counter::Counter;
use prometheus_client::metrics::family::Family;
use prometheus_client::metrics::gauge::Gauge;
use prometheus_client::metrics::histogram::Histogram;

/// Upper bounds (seconds) of the request latency buckets.
pub const BUCKETS: [f64; 12] = [0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1.0, 2.5, 10.0];

/// The operation label of a request.
pub fn operation(method: &http::Method, path: &str) -> &'static str {
    if path.starts_with("/_reo/") || path == "/metrics" {
        return "api";
    }
    match *method {
        http::Method::GET => "get",
        http::Method::PUT => "put",
        http::Method::HEAD => "head",
        http::Method::DELETE => "delete",
        http::Method::POST => "post",
        _ => "other",
    }
}

/// The label value of a class (`class="dirty"`), also the console's name for it.
pub fn class_name(c: reo_cache::Class) -> &'static str {
    match c {
        reo_cache::Class::Metadata => "metadata",
        reo_cache::Class::Dirty => "dirty",
        reo_cache::Class::Hot => "hot",
        reo_cache::Class::Cold => "cold",
    }
}

/// Labels of a request's operation.
#[derive(Clone, Debug, Hash, PartialEq, Eq, EncodeLabelSet)]
pub struct OpLabel {
    /// [`operation`].
    pub op: &'static str,
}

/// Labels of an answered request.
#[derive(Clone, Debug, Hash, PartialEq, Eq, EncodeLabelSet)]
pub struct OpStatusLabel {
    /// [`operation`].
    pub op: &'static str,
    /// The HTTP status code.
    pub code: u16,
}

fn latency_histogram() -> Histogram {
    Histogram::new(BUCKETS)
}

/// The request path's instruments (clones share the counts).
#[derive(Clone, Debug)]
pub struct RequestMetrics {
    requests: Family<OpStatusLabel, Counter>,
    duration: Family<OpLabel, Histogram, fn() -> Histogram>,
    in_flight: Gauge,
    received: Family<OpLabel, Counter>,
    sent: Family<OpLabel, Counter>,
    /// S3 requests answered (API requests excluded) and their total time in microseconds (the
    /// console's history samples them).
    totals: std::sync::Arc<[AtomicU64; 2]>,
}

impl Default for RequestMetrics {
    fn default() -> Self {
        RequestMetrics {
            requests: Family::default(),
            duration: Family::new_with_constructor(latency_histogram),
            in_flight: Gauge::default(),
            received: Family::default(),
            sent: Family::default(),
            totals: Default::default(),
        }
    }
}

/// A request counted in flight until dropped.
pub struct InFlight(Gauge);

impl Drop for InFlight {
    fn drop(&mut self) {
        self.0.dec();
    }
}

impl RequestMetrics {
    /// A request began; it counts as in flight until the guard is dropped.
    pub fn begin(&self) -> InFlight {
        self.in_flight.inc();
        InFlight(self.in_flight.clone())
    }

    /// One request of operation `op` answered with `code` after `took`, with request and answer
    /// bodies of `received` and `sent` bytes (as their `Content-Length` declared them).
    pub fn observe(&self, op: &'static str, code: u16, took: Duration, received: u64, sent: u64) {
        self.requests.get_or_create(&OpStatusLabel { op, code }).inc();
        if op != "api" {
            // S3 traffic only: scrapes, console polls and hour-long admin scrubs are not it.
            self.totals[0].fetch_add(1, Relaxed);
            self.totals[1].fetch_add(took.as_micros().min(u128::from(u64::MAX)) as u64, Relaxed);
        }
        let label = OpLabel { op };
        self.duration.get_or_create(&label).observe(took.as_secs_f64());
        if received > 0 {
            self.received.get_or_create(&label).inc_by(received);
        }
        if sent > 0 {
            self.sent.get_or_create(&label).inc_by(sent);
        }
    }

    /// S3 requests answered since start and their total time in microseconds.
    pub fn totals(&self) -> (u64, u64) {
        (self.totals[0].load(Relaxed), self.totals[1].load(Relaxed))
    }

    /// Registers the instruments in `r` (names in docs/METRICS.md).
    pub(crate) fn register(&self, r: &mut prometheus_client::registry::Registry) {
        r.register(
            "reo_gateway_requests",
            "S3 and API requests answered, by operation and HTTP status",
            self.requests.clone(),
        );
        r.register(
            "reo_gateway_request_duration_seconds",
            "Time from a request's arrival to its answer's headers, by operation",
            self.duration.clone(),
        );
        r.register("reo_gateway_requests_in_flight", "Requests being served now", self.in_flight.clone());
        r.register(
            "reo_gateway_received_bytes",
            "Request body bytes received (as declared by Content-Length), by operation",
            self.received.clone(),
        );
        r.register(
            "reo_gateway_sent_bytes",
            "Answer body bytes sent (as declared by Content-Length), by operation",
            self.sent.clone(),
        );
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn requests_are_counted_by_operation_and_status_with_cumulative_buckets() {
        let m = RequestMetrics::default();
        {
            let _g = m.begin();
            assert_eq!(m.in_flight.get(), 1);
        }
        assert_eq!(m.in_flight.get(), 0);
        m.observe("get", 200, Duration::from_millis(3), 0, 4096);
        m.observe("get", 404, Duration::from_secs(20), 0, 0);
        let mut r = prometheus_client::registry::Registry::default();
        m.register(&mut r);
        let mut out = String::new();
        prometheus_client::encoding::prometheus_text::encode(&mut out, &r).unwrap();
        assert!(out.contains("# TYPE reo_gateway_request_duration_seconds histogram\n"), "{out}");
        assert!(out.contains("reo_gateway_request_duration_seconds_bucket{op=\"get\",le=\"0.0025\"} 0\n"), "{out}");
        assert!(out.contains("reo_gateway_request_duration_seconds_bucket{op=\"get\",le=\"0.005\"} 1\n"), "{out}");
        assert!(out.contains("reo_gateway_request_duration_seconds_bucket{op=\"get\",le=\"+Inf\"} 2\n"), "{out}");
        assert!(out.contains("reo_gateway_requests_total{op=\"get\",code=\"404\"} 1\n"), "{out}");
        assert!(out.contains("reo_gateway_sent_bytes_total{op=\"get\"} 4096\n"), "{out}");
        assert_eq!(operation(&http::Method::GET, "/_reo/query"), "api");
    }
}
