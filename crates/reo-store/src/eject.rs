//! Automatic ejection: a per-device decaying budget of read errors and checksum mismatches, as
//! bcache's `io_error_limit` / `io_error_halflife`.
//!
//! Each error adds 1 to the device's count; the count decays by half every half-life (computed
//! exactly from the time since the last error, no timer thread). When it exceeds the limit, the
//! device is marked failed and a loud message goes to stderr: from then on no I/O goes to it and
//! its chunks are reconstructed from redundancy. Write and sync errors fail a device at once
//! (`write.rs`, `persist.rs`); they never pass through the budget.

use crate::stats::Stat;
use crate::store::Inner;
use parking_lot::Mutex;
use std::time::{Duration, Instant};

/// The error count of one device.
#[derive(Default)]
pub(crate) struct ErrorBudget {
    state: Mutex<Option<(f64, Instant)>>,
}

impl ErrorBudget {
    /// Adds one error at `now`; returns the decayed count including it.
    pub fn add(&self, now: Instant, halflife: Duration) -> f64 {
        let mut s = self.state.lock();
        let count = match *s {
            Some((c, at)) => c * 0.5f64.powf(now.saturating_duration_since(at).as_secs_f64() / halflife.as_secs_f64()),
            None => 0.0,
        } + 1.0;
        *s = Some((count, now));
        count
    }

    /// Forgets every error (a replaced device starts with a clean budget).
    pub fn reset(&self) {
        *self.state.lock() = None;
    }
}

impl Inner {
    /// Counts a read error or checksum mismatch on device `d`, ejecting it past the budget.
    pub(crate) fn note_read_error(&self, d: usize, what: &str) {
        let (limit, halflife) = self.error_limit;
        if limit == 0 || self.is_failed(d) {
            return;
        }
        let count = self.budgets[d].add(Instant::now(), halflife);
        if count > limit as f64 {
            self.mark_failed(
                d,
                &format!(
                    "EJECTED: {count:.1} read errors/checksum mismatches (last: {what}) exceed io_error_limit \
                     {limit} (half-life {halflife:?}); replace the device"
                ),
            );
            self.stats.add(Stat::Ejections, 1);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn count_decays_by_half_each_halflife() {
        let b = ErrorBudget::default();
        let t = Instant::now();
        let h = Duration::from_secs(10);
        assert_eq!(b.add(t, h), 1.0);
        assert_eq!(b.add(t, h), 2.0);
        let c = b.add(t + h, h);
        assert!((c - 2.0).abs() < 1e-9, "{c}");
        let c = b.add(t + h * 3, h);
        assert!((c - 1.5).abs() < 1e-9, "{c}");
        b.reset();
        assert_eq!(b.add(t, h), 1.0);
    }
}
