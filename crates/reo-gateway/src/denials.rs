//! [`Denials`]: requests answered 401 or 403 are counted (`reo_gateway_denied_requests_total`)
//! and logged at WARN at most once per [`INTERVAL`], with how many were not logged since: an
//! anonymous client sending denied requests in a loop cannot flood the log. (s3s's own error log
//! is off by default for the same reason; `RUST_LOG=s3s=error` turns it back on.)

use std::sync::atomic::{AtomicU64, Ordering};
use std::time::{Duration, Instant};

use parking_lot::Mutex;

/// At most one denial message per this long.
pub const INTERVAL: Duration = Duration::from_secs(10);

/// The denied-request counter and its log throttle.
#[derive(Default)]
pub struct Denials {
    total: AtomicU64,
    /// When the last message was logged, and the denials since that were not.
    last: Mutex<Option<(Instant, u64)>>,
}

impl Denials {
    /// Counts a denial; returns whether it was logged.
    pub fn record(
        &self,
        status: u16,
        method: &str,
        path: &str,
        peer: Option<std::net::SocketAddr>,
        now: Instant,
    ) -> bool {
        self.total.fetch_add(1, Ordering::Relaxed);
        let mut last = self.last.lock();
        match &mut *last {
            Some((at, quiet)) if now.saturating_duration_since(*at) < INTERVAL => {
                *quiet += 1;
                false
            }
            l => {
                let quiet = l.map_or(0, |(_, q)| q);
                let peer = peer.map_or_else(|| "?".to_string(), |p| p.to_string());
                // A path is the client's: bounded and escaped in the message.
                let path: String = path.chars().take(200).flat_map(char::escape_debug).collect();
                tracing::warn!(
                    "denied: {status} {method} {path} from {peer} ({quiet} more denied since the last message)"
                );
                *l = Some((now, 0));
                true
            }
        }
    }

    /// Denials since start.
    pub fn total(&self) -> u64 {
        self.total.load(Ordering::Relaxed)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn denials_are_counted_and_logged_at_a_bounded_rate() {
        let d = Denials::default();
        let t = Instant::now();
        assert!(d.record(403, "GET", "/b/k", None, t));
        assert!(!d.record(403, "GET", "/b/k", None, t + Duration::from_secs(1)));
        assert!(!d.record(401, "GET", "/metrics", None, t + Duration::from_secs(9)));
        assert!(d.record(403, "PUT", "/b/k", None, t + INTERVAL));
        assert_eq!(d.total(), 4);
    }
}
