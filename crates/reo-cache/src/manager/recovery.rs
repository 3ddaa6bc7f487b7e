//! [`Recovery`]: what the cache last saw of device failures — so that a new failure triggers a
//! sweep, and the end of a recovery (every device healthy again, the rebuild done) is reported
//! once with sense code 0x66.
//!
//! The two are kept apart: a sense query during a recovery must not count as a sweep (the lost
//! clean fragments would stay indexed until a read tripped over them), and a sweep must not end a
//! recovery that a query has yet to report.

use super::sense::SenseCode;

/// Failed devices as last swept, and whether a recovery is still to be reported as ended.
#[derive(Default)]
pub(crate) struct Recovery {
    /// The devices failed at the last sweep that are still failed: a device failing outside this
    /// set (even while another is being rebuilt) makes a sweep due.
    swept: Vec<usize>,
    /// A recovery (a failed device, or a rebuild) was seen and its end not yet reported.
    pending: bool,
}

impl Recovery {
    /// Is a device of `failed` (the failed devices now) new since the last sweep? Then a sweep
    /// is due.
    #[inline]
    pub fn sweep_due(&mut self, failed: &[usize]) -> bool {
        self.swept.retain(|d| failed.contains(d));
        failed.iter().any(|d| !self.swept.contains(d))
    }

    /// A sweep saw the devices `failed` failed.
    #[inline]
    pub fn swept(&mut self, failed: &[usize]) {
        self.swept = failed.to_vec();
        self.pending |= !failed.is_empty();
    }

    /// Device `d` was replaced: should it fail again, that is a new failure.
    #[inline]
    pub fn replaced(&mut self, d: usize) {
        self.swept.retain(|&x| x != d);
    }

    /// The recovery sense code for a query when `failed` devices are failed and a rebuild is
    /// (`rebuilding`) or is not running: 0x65 during a recovery, 0x66 once after it; `None`
    /// when there is no recovery to report.
    pub fn sense(&mut self, failed: usize, rebuilding: bool) -> Option<SenseCode> {
        if failed > 0 || rebuilding {
            self.pending = true;
            return Some(SenseCode::RecoveryStarts);
        }
        if std::mem::take(&mut self.pending) {
            return Some(SenseCode::RecoveryEnds);
        }
        None
    }
}
