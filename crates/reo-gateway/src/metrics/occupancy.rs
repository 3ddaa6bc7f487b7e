//! [`Occupancy`]: objects and bytes by class, for scrapes and the console. Counting them walks the
//! whole index under the cache's lock, so a count is reused for [`MAX_AGE`]: scrapes (or console
//! tabs) however frequent cost the request path at most one walk per interval.

use std::time::{Duration, Instant};

use parking_lot::Mutex;
use reo_cache::Cache;

/// How long a count is reused.
pub const MAX_AGE: Duration = Duration::from_secs(5);

/// `(objects, bytes)` by class code.
pub type ByClass = [(u64, u64); 4];

/// See the module doc.
#[derive(Default)]
pub struct Occupancy(Mutex<Option<(Instant, ByClass)>>);

impl Occupancy {
    /// `(objects, bytes)` by class code, at most [`MAX_AGE`] old. Concurrent callers wait for one
    /// walk instead of each walking.
    pub fn of(&self, cache: &Cache) -> ByClass {
        let mut g = self.0.lock();
        match *g {
            Some((at, v)) if at.elapsed() < MAX_AGE => v,
            _ => {
                let v = cache.class_occupancy();
                *g = Some((Instant::now(), v));
                v
            }
        }
    }
}
