//! Automatic ejection: a per-device decaying budget of read errors and checksum mismatches, as
//! bcache's `io_error_limit` / `io_error_halflife`.
//!
//! Each error adds 1 to the device's count; the count decays by half every half-life (computed
//! exactly from the time since the last error, no timer thread). When it exceeds the limit, the
//! device is marked failed and a loud message goes to stderr: from then on no I/O goes to it and
//! its chunks are reconstructed from redundancy. Write and sync errors fail a device at once
//! (`write.rs`, `persist.rs`); they never pass through the budget. The counts are the device
//! set's (`devices.rs`); the limit and half-life the configuration's (`config::Tunables`).

use crate::stats::Stat;
use crate::store::Inner;
use std::time::Instant;

impl Inner {
    /// Counts a read error or checksum mismatch on device `d`, ejecting it past the budget.
    pub(crate) fn note_read_error(&self, d: usize, what: &str) {
        let (limit, halflife) = self.tunables.error_limit();
        if limit == 0 || self.devs.is_failed(d) {
            return;
        }
        let count = self.devs.charge_error(d, Instant::now(), halflife);
        if count > f64::from(limit) {
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
