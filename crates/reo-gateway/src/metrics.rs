//! Request latency histograms per operation (HTTP method, or `api` for `/_reo/...`), measured
//! around the whole S3 service, and their Prometheus text.

use std::collections::BTreeMap;
use std::time::Duration;

use parking_lot::Mutex;

/// Upper bounds (seconds) of the histogram buckets.
pub const BUCKETS: [f64; 12] = [0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1.0, 2.5, 10.0];

#[derive(Debug, Default, Clone)]
struct Histogram {
    counts: [u64; BUCKETS.len()],
    count: u64,
    sum: f64,
}

/// Latency histograms by operation.
#[derive(Debug, Default)]
pub struct Metrics {
    latency: Mutex<BTreeMap<&'static str, Histogram>>,
}

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

impl Metrics {
    /// Records one request of operation `op` that took `d`.
    pub fn observe(&self, op: &'static str, d: Duration) {
        let s = d.as_secs_f64();
        let mut m = self.latency.lock();
        let h = m.entry(op).or_default();
        for (i, b) in BUCKETS.iter().enumerate() {
            if s <= *b {
                h.counts[i] += 1;
            }
        }
        h.count += 1;
        h.sum += s;
    }

    /// `reo_request_duration_seconds` in Prometheus text format.
    pub fn render(&self, out: &mut String) {
        let m = self.latency.lock();
        if m.is_empty() {
            return;
        }
        out.push_str("# TYPE reo_request_duration_seconds histogram\n");
        for (op, h) in m.iter() {
            for (i, b) in BUCKETS.iter().enumerate() {
                out.push_str(&format!(
                    "reo_request_duration_seconds_bucket{{op=\"{op}\",le=\"{b}\"}} {}\n",
                    h.counts[i]
                ));
            }
            out.push_str(&format!("reo_request_duration_seconds_bucket{{op=\"{op}\",le=\"+Inf\"}} {}\n", h.count));
            out.push_str(&format!("reo_request_duration_seconds_sum{{op=\"{op}\"}} {:.6}\n", h.sum));
            out.push_str(&format!("reo_request_duration_seconds_count{{op=\"{op}\"}} {}\n", h.count));
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn buckets_are_cumulative() {
        let m = Metrics::default();
        m.observe("get", Duration::from_millis(3));
        m.observe("get", Duration::from_secs(20));
        let mut out = String::new();
        m.render(&mut out);
        assert!(out.contains("reo_request_duration_seconds_bucket{op=\"get\",le=\"0.0025\"} 0\n"));
        assert!(out.contains("reo_request_duration_seconds_bucket{op=\"get\",le=\"0.005\"} 1\n"));
        assert!(out.contains("reo_request_duration_seconds_bucket{op=\"get\",le=\"10\"} 1\n"));
        assert!(out.contains("reo_request_duration_seconds_bucket{op=\"get\",le=\"+Inf\"} 2\n"));
        assert!(out.contains("reo_request_duration_seconds_count{op=\"get\"} 2\n"));
        assert_eq!(operation(&http::Method::GET, "/_reo/query"), "api");
    }
}
