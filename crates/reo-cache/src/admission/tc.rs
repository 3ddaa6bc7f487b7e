//! Touch count (TC, the Fusion-io study, docs/REFERENCES.md §P4, "Touch count algorithms"): admit
//! only segments that have been touched often enough recently ("selectively add quality blocks").
//!
//! The object space is cut into segments of `segment_len` bytes: segment = (key, offset /
//! segment_len). Segments are hashed onto `slots` small saturating counters of `bits` bits ("segments
//! mapped to bits, a simple filter"; collisions only make admission more lenient). There are
//! `generations` such bitmaps: touches go to the current one, and the count of a segment is the sum
//! over all generations. Rotation (every `rotate_requests` requests and/or every `rotate_ns`
//! nanoseconds, whichever comes first) clears the oldest bitmap and makes it current, so touches
//! are forgotten after between `generations − 1` and `generations` rotation periods.
//!
//! A request touches its segment (the first one, where it starts), then is admitted if the count,
//! this touch included, is at least `threshold` ("admit after n touches"); otherwise it is rejected
//! as [`Reason::Cold`]. With the default `threshold = 2` a segment is admitted on its second miss
//! within the memory horizon, like CacheLib's RejectFirstAP.
//!
//! `segment_len` should not exceed the cache's fragment size (1 MiB by default, like the default
//! here): a scan then touches each segment once and is rejected, whereas with segments larger than
//! fragments the second fragment of a segment would already count as a second touch.

use super::{Admission, Decision, Reason, Request};
use crate::hash::hash_key;

/// Parameters of [`TouchCount`]; see the module documentation.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct TcConfig {
    /// Segment length in bytes. Default 1 MiB.
    pub segment_len: u64,
    /// Counters per bitmap (rounded up to a power of two). Default 2^20.
    pub slots: usize,
    /// Bits per counter: 1, 2, 4 or 8. Default 2.
    pub bits: u32,
    /// Bitmaps (≥ 2). Default 2.
    pub generations: usize,
    /// Touches needed to admit (≥ 1). Default 2.
    pub threshold: u32,
    /// Rotate after this many requests (0 = never by count). Default 2^18 (slots / 4).
    pub rotate_requests: u64,
    /// Rotate after this much time in ns (0 = never by time). Default 0.
    pub rotate_ns: u64,
}

impl Default for TcConfig {
    fn default() -> Self {
        TcConfig {
            segment_len: 1 << 20,
            slots: 1 << 20,
            bits: 2,
            generations: 2,
            threshold: 2,
            rotate_requests: 1 << 18,
            rotate_ns: 0,
        }
    }
}

/// The touch-count filter.
#[derive(Clone, Debug)]
pub struct TouchCount {
    cfg: TcConfig,
    /// `generations` bitmaps of packed counters.
    maps: Vec<Vec<u64>>,
    current: usize,
    requests_since: u64,
    rotated_at: Option<u64>,
}

impl TouchCount {
    /// A filter with every counter at 0. `cfg` is normalized: `bits` rounded up to 1, 2, 4 or 8
    /// (at most 8), `slots` up to a power of two ≥ 64, `generations` to at least 2, `threshold`
    /// and `segment_len` to at least 1.
    pub fn new(cfg: TcConfig) -> Self {
        let bits = match cfg.bits {
            0..=1 => 1,
            2 => 2,
            3..=4 => 4,
            _ => 8,
        };
        let cfg = TcConfig {
            segment_len: cfg.segment_len.max(1),
            slots: cfg.slots.max(64).next_power_of_two(),
            bits,
            generations: cfg.generations.max(2),
            threshold: cfg.threshold.max(1),
            ..cfg
        };
        let words = cfg.slots * bits as usize / 64;
        TouchCount { cfg, maps: vec![vec![0; words]; cfg.generations], current: 0, requests_since: 0, rotated_at: None }
    }

    /// The effective (normalized) configuration.
    pub fn config(&self) -> &TcConfig {
        &self.cfg
    }

    /// Heap bytes of the bitmaps.
    pub fn memory_bytes(&self) -> usize {
        self.maps.iter().map(|m| m.len() * 8).sum()
    }

    fn slot(&self, req: &Request) -> usize {
        let seg = req.offset / self.cfg.segment_len;
        (hash_key(req.key ^ hash_key(seg)) as usize) & (self.cfg.slots - 1)
    }

    fn get(&self, map: usize, slot: usize) -> u32 {
        let b = self.cfg.bits as usize;
        let (w, sh) = (slot * b / 64, slot * b % 64);
        ((self.maps[map][w] >> sh) & ((1 << b) - 1)) as u32
    }

    fn bump(&mut self, slot: usize) {
        let b = self.cfg.bits as usize;
        let (w, sh) = (slot * b / 64, slot * b % 64);
        let max = (1u64 << b) - 1;
        let word = &mut self.maps[self.current][w];
        if (*word >> sh) & max < max {
            *word += 1 << sh;
        }
    }

    /// Current count of `req`'s segment over all generations (no touch).
    pub fn count(&self, req: &Request) -> u32 {
        let slot = self.slot(req);
        (0..self.maps.len()).map(|m| self.get(m, slot)).sum()
    }

    fn maybe_rotate(&mut self, now: u64) {
        let start = *self.rotated_at.get_or_insert(now);
        let by_count = self.cfg.rotate_requests > 0 && self.requests_since >= self.cfg.rotate_requests;
        let by_time = self.cfg.rotate_ns > 0 && now.saturating_sub(start) >= self.cfg.rotate_ns;
        if by_count || by_time {
            self.current = (self.current + 1) % self.maps.len();
            self.maps[self.current].fill(0);
            self.requests_since = 0;
            self.rotated_at = Some(now);
        }
    }
}

impl Admission for TouchCount {
    fn name(&self) -> String {
        "tc".into()
    }

    fn decide(&mut self, req: &Request) -> Decision {
        self.maybe_rotate(req.now);
        self.requests_since += 1;
        let slot = self.slot(req);
        self.bump(slot);
        if self.count(req) >= self.cfg.threshold {
            Decision::Admit
        } else {
            Decision::Reject(Reason::Cold)
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const COLD: Decision = Decision::Reject(Reason::Cold);

    fn rd(key: u64, offset: u64, now: u64) -> Request {
        Request::read_miss(key, offset, 4096, now)
    }

    fn small(threshold: u32, rotate_requests: u64, rotate_ns: u64) -> TouchCount {
        TouchCount::new(TcConfig {
            segment_len: 1 << 20,
            slots: 1 << 12,
            bits: 2,
            generations: 2,
            threshold,
            rotate_requests,
            rotate_ns,
        })
    }

    #[test]
    fn admits_on_the_nth_touch() {
        let mut tc = small(3, 0, 0);
        assert_eq!(tc.decide(&rd(1, 0, 0)), COLD);
        assert_eq!(tc.decide(&rd(1, 0, 0)), COLD);
        assert_eq!(tc.decide(&rd(1, 0, 0)), Decision::Admit);
        // Another fragment of the same 1 MiB segment shares the count; the next segment does not.
        assert_eq!(tc.decide(&rd(1, 512 << 10, 0)), Decision::Admit);
        assert_eq!(tc.decide(&rd(1, 1 << 20, 0)), COLD);
        assert_eq!(tc.count(&rd(2, 0, 0)), 0);
    }

    #[test]
    fn counters_saturate_at_their_width() {
        let mut tc = small(2, 0, 0);
        for _ in 0..10 {
            tc.decide(&rd(5, 0, 0));
        }
        assert_eq!(tc.count(&rd(5, 0, 0)), 3, "2-bit counter, one generation touched");
    }

    #[test]
    fn rotation_by_requests_forgets_after_two_periods() {
        let mut tc = small(2, 4, 0);
        assert_eq!(tc.decide(&rd(1, 0, 0)), COLD); // gen A: requests_since 1
        for k in 100..103 {
            tc.decide(&rd(k, 0, 0)); // fill the period (4 requests)
        }
        // Rotation #1 (A kept as the older generation): the touch is remembered.
        assert_eq!(tc.decide(&rd(1, 0, 0)), Decision::Admit);
        let mut tc = small(2, 4, 0);
        tc.decide(&rd(1, 0, 0));
        for k in 100..107 {
            tc.decide(&rd(k, 0, 0)); // two full periods
        }
        // Rotation #2 cleared A: forgotten.
        assert_eq!(tc.decide(&rd(1, 0, 0)), COLD);
    }

    #[test]
    fn rotation_by_time() {
        let mut tc = small(2, 0, 1_000);
        assert_eq!(tc.decide(&rd(1, 0, 0)), COLD);
        assert_eq!(tc.decide(&rd(1, 0, 999)), Decision::Admit);
        let mut tc = small(2, 0, 1_000);
        tc.decide(&rd(1, 0, 0));
        tc.decide(&rd(9, 0, 1_000)); // rotation #1
        assert_eq!(tc.decide(&rd(1, 0, 2_000)), COLD, "rotation #2 forgot the first touch");
    }

    #[test]
    fn config_is_normalized() {
        let tc =
            TouchCount::new(TcConfig { slots: 1000, bits: 3, generations: 1, threshold: 0, ..TcConfig::default() });
        let c = tc.config();
        assert_eq!((c.slots, c.bits, c.generations, c.threshold), (1024, 4, 2, 1));
        assert_eq!(tc.memory_bytes(), 2 * 1024 * 4 / 8);
        assert_eq!(TouchCount::new(TcConfig::default()).memory_bytes(), 512 << 10);
    }
}
