//! [`History`]: the console's charts over the last hour — hit ratio, requests per second and mean
//! latency per interval — sampled from the cache's counters and the request metrics by a task
//! the server starts, whether or not a browser is watching.

use std::collections::VecDeque;
use std::time::{Duration, SystemTime, UNIX_EPOCH};

use parking_lot::Mutex;
use serde::Serialize;

/// How often a sample is taken.
pub const INTERVAL: Duration = Duration::from_secs(10);
/// Samples kept: one hour.
const KEEP: usize = 360;

/// One interval.
#[derive(Debug, Clone, Copy, Serialize)]
pub struct Sample {
    /// End of the interval, Unix seconds.
    pub t: u64,
    /// Cache hits / read requests in the interval (`None`: no read).
    pub hit_ratio: Option<f64>,
    /// Requests answered per second.
    pub requests_per_s: f64,
    /// Mean time to answer, milliseconds (`None`: no request).
    pub latency_ms: Option<f64>,
}

/// Counters a sample is the difference of.
#[derive(Debug, Clone, Copy, Default)]
pub struct Counters {
    /// Cache read requests.
    pub reads: u64,
    /// Of which hits.
    pub hits: u64,
    /// Requests answered.
    pub requests: u64,
    /// Their total time, microseconds.
    pub request_us: u64,
}

#[derive(Default)]
struct Inner {
    last: Option<(std::time::Instant, Counters)>,
    samples: VecDeque<Sample>,
}

/// See the module doc.
#[derive(Default)]
pub struct History(Mutex<Inner>);

impl History {
    /// Takes a sample: the change of `now` since the previous call (the first call only
    /// records the starting point).
    pub fn record(&self, now: Counters) {
        let mut g = self.0.lock();
        let at = std::time::Instant::now();
        if let Some((then, prev)) = g.last {
            let secs = at.duration_since(then).as_secs_f64().max(1e-3);
            let reads = now.reads.saturating_sub(prev.reads);
            let requests = now.requests.saturating_sub(prev.requests);
            let sample = Sample {
                t: SystemTime::now().duration_since(UNIX_EPOCH).map_or(0, |d| d.as_secs()),
                hit_ratio: (reads > 0).then(|| now.hits.saturating_sub(prev.hits) as f64 / reads as f64),
                requests_per_s: requests as f64 / secs,
                latency_ms: (requests > 0)
                    .then(|| now.request_us.saturating_sub(prev.request_us) as f64 / requests as f64 / 1000.0),
            };
            if g.samples.len() == KEEP {
                g.samples.pop_front();
            }
            g.samples.push_back(sample);
        }
        g.last = Some((at, now));
    }

    /// The samples, oldest first.
    pub fn samples(&self) -> Vec<Sample> {
        self.0.lock().samples.iter().copied().collect()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn samples_are_differences_and_bounded() {
        let h = History::default();
        h.record(Counters { reads: 10, hits: 5, requests: 20, request_us: 20_000 });
        assert!(h.samples().is_empty(), "the first call only sets the start");
        h.record(Counters { reads: 20, hits: 14, requests: 30, request_us: 50_000 });
        let s = h.samples()[0];
        assert_eq!(s.hit_ratio, Some(0.9));
        assert_eq!(s.latency_ms, Some(3.0));
        h.record(Counters { reads: 20, hits: 14, requests: 30, request_us: 50_000 });
        assert_eq!(h.samples()[1].hit_ratio, None);
        for _ in 0..KEEP + 5 {
            h.record(Counters::default());
        }
        assert_eq!(h.samples().len(), KEEP);
    }
}
