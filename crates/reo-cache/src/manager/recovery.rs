//! [`Recovery`]: what the cache last saw of device failures — so that a new failure triggers a
//! sweep, and the end of a recovery (every device healthy again, the rebuild done) is reported
//! once with sense code 0x66.

use super::sense::SenseCode;

/// Failed devices as last seen (by a sweep or a sense query).
#[derive(Default)]
pub(crate) struct Recovery {
    /// Failed devices at the last sweep, or at least 1 while a recovery was seen in progress
    /// (a change triggers a sweep; recovery sense codes).
    failed_seen: usize,
}

impl Recovery {
    /// Are more devices failed now (`failed`) than last seen? Then a sweep is due.
    pub fn sweep_due(&self, failed: usize) -> bool {
        failed > self.failed_seen
    }

    /// A sweep saw `failed` failed devices.
    pub fn swept(&mut self, failed: usize) {
        self.failed_seen = failed;
    }

    /// The recovery sense code for a query when `failed` devices are failed and a rebuild is
    /// (`rebuilding`) or is not running: 0x65 during a recovery, 0x66 once after it; `None`
    /// when there is no recovery to report.
    pub fn sense(&mut self, failed: usize, rebuilding: bool) -> Option<SenseCode> {
        if failed > 0 || rebuilding {
            // At least 1 while a rebuild runs with no device failed any more: recovery has not
            // ended, and 0x66 must still be reported once it does.
            self.failed_seen = failed.max(1);
            return Some(SenseCode::RecoveryStarts);
        }
        if self.failed_seen > 0 {
            self.failed_seen = 0;
            return Some(SenseCode::RecoveryEnds);
        }
        None
    }
}
