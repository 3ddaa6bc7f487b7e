//! [`ScrubLog`]: scrubs run through the API — whether one runs now, and what they found, for
//! `/metrics` (`reo_scrub_*`) and the console. One scrub at a time: a second request while one
//! runs is refused (two passes over the array would only compete for the devices).

use std::time::{SystemTime, UNIX_EPOCH};

use parking_lot::Mutex;

/// Totals of the scrubs since start.
#[derive(Debug, Clone, Default)]
pub struct ScrubTotals {
    /// A scrub is running.
    pub running: bool,
    /// Scrubs completed.
    pub runs: u64,
    /// Chunks verified.
    pub chunks_verified: u64,
    /// Chunks found bad.
    pub chunks_bad: u64,
    /// Chunks repaired.
    pub chunks_repaired: u64,
    /// Blobs found beyond their redundancy.
    pub unrecoverable: u64,
    /// When the last scrub ended, Unix seconds (0: none has).
    pub last_end_unix: u64,
}

/// See the module doc.
#[derive(Debug, Default)]
pub struct ScrubLog(Mutex<ScrubTotals>);

impl ScrubLog {
    /// Runs `scrub` unless one runs already (then `None`), recording its report.
    pub fn run(&self, scrub: impl FnOnce() -> reo_store::ScrubReport) -> Option<reo_store::ScrubReport> {
        {
            let mut t = self.0.lock();
            if t.running {
                return None;
            }
            t.running = true;
        }
        // Cleared even if the scrub panics: a stuck flag would refuse every later scrub.
        struct Done<'a>(&'a ScrubLog);
        impl Drop for Done<'_> {
            fn drop(&mut self) {
                self.0 .0.lock().running = false;
            }
        }
        let done = Done(self);
        let r = scrub();
        let mut t = self.0.lock();
        t.runs += 1;
        t.chunks_verified += r.chunks_verified;
        t.chunks_bad += r.chunks_bad;
        t.chunks_repaired += r.chunks_repaired;
        t.unrecoverable += r.unrecoverable.len() as u64;
        t.last_end_unix = SystemTime::now().duration_since(UNIX_EPOCH).map_or(0, |d| d.as_secs());
        drop(t);
        drop(done);
        Some(r)
    }

    /// The totals now.
    pub fn snapshot(&self) -> ScrubTotals {
        self.0.lock().clone()
    }
}
