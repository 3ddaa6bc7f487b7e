//! Scan-plus-random mixes like the Fusion-io study's TPC-E-with-backup: a random workload (Zipf
//! over a hot set of blocks, reads and writes) interleaved with a long sequential scan (a backup)
//! that reads a large range of blocks once, in order. Each request is the scan's next block with
//! probability `scan_fraction`, else a random hot-set request.
//!
//! The hot set is the first `hot_blocks` blocks of the volume (permuted by the seed), the scan
//! covers blocks `0..scan_blocks` of the same volume (so it also passes over the hot set) and
//! wraps around only if the trace is longer than the range. No fingerprints.
//!
//! Presets (our choices): `tpce` scan fraction 0.5, `light` 0.2, `heavy` 0.8; hot set 1 GiB
//! (262,144 blocks), α 0.9, 70 % reads in the random part, scan range 16 GiB (4,194,304
//! blocks), 1,000,000 requests, 4 KiB blocks, 5,000 requests/s.

use super::blocks::{block_request, Arrivals};
use super::dist::Zipf;
use super::error::GenError;
use super::knob::{f64_knob, u64_knob, unknown};
use crate::request::{Op, Request};
use reo_media::rng::Xoshiro256pp;

const VOLUME: u64 = 0x5ca;

/// Knobs of [`ScanMix`]; see the module doc and `docs/TRACES.md`.
#[derive(Debug, Clone, PartialEq)]
pub struct ScanParams {
    /// Seed of the generator: equal params give equal requests.
    pub seed: u64,
    /// Blocks of the random part's hot set (at most 2^32 - 1).
    pub hot_blocks: u64,
    /// Blocks the scan covers (`0..scan_blocks`) before wrapping around.
    pub scan_blocks: u64,
    /// Requests the workload yields.
    pub requests: u64,
    /// Size of every block (and request), bytes.
    pub block_size: u64,
    /// Zipf skew of the hot set's popularity.
    pub alpha: f64,
    /// Reads among the random (non-scan) requests.
    pub read_ratio: f64,
    /// Fraction of requests that are scan reads.
    pub scan_fraction: f64,
    /// Mean arrival rate, requests per second (Poisson arrivals).
    pub rate: f64,
}

impl ScanParams {
    /// Preset names; the first is the default.
    pub const PRESETS: [&'static str; 3] = ["tpce", "light", "heavy"];
    const KNOBS: [&'static str; 9] =
        ["seed", "hot_blocks", "scan_blocks", "requests", "block_size", "alpha", "read_ratio", "scan_fraction", "rate"];

    /// The knobs of preset `name`, or `None` if there is no such preset.
    pub fn preset(name: &str) -> Option<Self> {
        let scan_fraction = match name {
            "tpce" => 0.5,
            "light" => 0.2,
            "heavy" => 0.8,
            _ => return None,
        };
        Some(ScanParams {
            seed: 1,
            hot_blocks: 262_144,
            scan_blocks: 4_194_304,
            requests: 1_000_000,
            block_size: 4096,
            alpha: 0.9,
            read_ratio: 0.7,
            scan_fraction,
            rate: 5000.0,
        })
    }

    /// Sets knob `key` from its text `value`, checking its range (`objects` is `hot_blocks`,
    /// `write_ratio` sets `1 - read_ratio`).
    pub fn set(&mut self, key: &str, value: &str) -> Result<(), GenError> {
        match key {
            "seed" => self.seed = u64_knob(key, value, 0)?,
            "hot_blocks" | "objects" => self.hot_blocks = u64_knob(key, value, 1)?.min(u64::from(u32::MAX)),
            "scan_blocks" => self.scan_blocks = u64_knob(key, value, 1)?,
            "requests" => self.requests = u64_knob(key, value, 0)?,
            "block_size" => self.block_size = u64_knob(key, value, 1)?,
            "alpha" => self.alpha = f64_knob(key, value, 0.0, 10.0)?,
            "read_ratio" => self.read_ratio = f64_knob(key, value, 0.0, 1.0)?,
            "write_ratio" => self.read_ratio = 1.0 - f64_knob(key, value, 0.0, 1.0)?,
            "scan_fraction" => self.scan_fraction = f64_knob(key, value, 0.0, 1.0)?,
            "rate" => self.rate = f64_knob(key, value, 1e-6, 1e12)?,
            _ => return Err(unknown("scan", key, &Self::KNOBS)),
        }
        Ok(())
    }

    /// Every knob and its value, in a fixed order.
    pub fn knobs(&self) -> Vec<(&'static str, String)> {
        let v = [
            self.seed.to_string(),
            self.hot_blocks.to_string(),
            self.scan_blocks.to_string(),
            self.requests.to_string(),
            self.block_size.to_string(),
            self.alpha.to_string(),
            self.read_ratio.to_string(),
            self.scan_fraction.to_string(),
            self.rate.to_string(),
        ];
        Self::KNOBS.into_iter().zip(v).collect()
    }
}

/// The scan-plus-random generator; an iterator of exactly `requests` requests.
pub struct ScanMix {
    p: ScanParams,
    rng: Xoshiro256pp,
    zipf: Zipf,
    hot: Vec<u32>,
    cursor: u64,
    arrivals: Arrivals,
    left: u64,
}

impl ScanMix {
    /// The generator for `p` (O(hot_blocks) memory).
    pub fn new(p: &ScanParams) -> Self {
        let mut rng = Xoshiro256pp::new(p.seed);
        ScanMix {
            zipf: Zipf::new(p.hot_blocks, p.alpha, 0.0),
            hot: rng.permutation(p.hot_blocks as u32),
            cursor: 0,
            arrivals: Arrivals::new(p.rate),
            left: p.requests,
            rng,
            p: p.clone(),
        }
    }

    /// Requests left to yield.
    pub fn len(&self) -> u64 {
        self.left
    }

    /// Whether every request was yielded.
    pub fn is_empty(&self) -> bool {
        self.left == 0
    }
}

impl Iterator for ScanMix {
    type Item = Request;

    fn next(&mut self) -> Option<Request> {
        if self.left == 0 {
            return None;
        }
        self.left -= 1;
        let t = self.arrivals.next_ns(&mut self.rng);
        let (op, block) = if self.rng.chance(self.p.scan_fraction) {
            let b = self.cursor;
            self.cursor = (self.cursor + 1) % self.p.scan_blocks;
            (Op::Get, b)
        } else {
            let b = u64::from(self.hot[self.zipf.sample(&mut self.rng) as usize]);
            (if self.rng.chance(self.p.read_ratio) { Op::Get } else { Op::Put }, b)
        };
        Some(block_request(t, op, VOLUME, block, self.p.block_size, None))
    }

    fn size_hint(&self) -> (usize, Option<usize>) {
        let n = usize::try_from(self.left).unwrap_or(usize::MAX);
        (n, Some(n))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::hash::block_key;
    use std::collections::HashMap;

    #[test]
    fn scan_reads_each_block_once_in_order_and_random_part_is_skewed() {
        let mut p = ScanParams::preset("tpce").unwrap();
        p.hot_blocks = 10_000;
        p.requests = 100_000;
        let reqs: Vec<_> = ScanMix::new(&p).collect();
        assert_eq!(reqs.len(), 100_000);
        let mut counts: HashMap<u64, u32> = HashMap::new();
        for r in &reqs {
            *counts.entry(r.key).or_default() += 1;
        }
        // Blocks beyond the hot set are only ever touched by the scan: once each, in order.
        let scan_tail: Vec<u64> =
            (10_000..40_000).map(|b| block_key(VOLUME, b)).filter(|k| counts.contains_key(k)).collect();
        assert!(scan_tail.len() > 30_000 - 100, "scan reached {} tail blocks", scan_tail.len());
        assert!(scan_tail.iter().all(|k| counts[k] == 1));
        let mut hot: Vec<u32> = (0..10_000).filter_map(|b| counts.get(&block_key(VOLUME, b)).copied()).collect();
        hot.sort_unstable_by(|a, b| b.cmp(a));
        assert!(hot[0] > 100 * hot[hot.len() / 2], "hot set skew {} vs {}", hot[0], hot[hot.len() / 2]);
    }
}
