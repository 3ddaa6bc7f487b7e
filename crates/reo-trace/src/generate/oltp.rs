//! SDCC-like OLTP skew: 90 % of the I/O goes to 5 % of the space, uniformly within the hot
//! part and within the rest; 40 % reads, 60 % writes; 4 KiB blocks (`sdcc`) or 8 KiB pages
//! (`sdcc8k`), a 4 GiB space either way, 1,000,000 requests, 5,000 requests/s. The hot part is
//! the first `hot_fraction` of the block numbers (keys are hashed, so placement does not
//! matter to a cache). No fingerprints.

use super::blocks::{block_request, Arrivals};
use super::error::GenError;
use super::knob::{f64_knob, u64_knob, unknown};
use crate::request::{Op, Request};
use reo_media::rng::Xoshiro256pp;

const VOLUME: u64 = 0x01f9;

/// Knobs of [`Oltp`]; see the module doc and `docs/TRACES.md`.
#[derive(Debug, Clone, PartialEq)]
pub struct OltpParams {
    /// Seed of the generator: equal params give equal requests.
    pub seed: u64,
    /// The space, in blocks.
    pub blocks: u64,
    /// Requests the workload yields.
    pub requests: u64,
    /// Size of every block (and request), bytes.
    pub block_size: u64,
    /// Fraction of the space that is hot.
    pub hot_fraction: f64,
    /// Fraction of the I/O that goes to the hot space.
    pub hot_share: f64,
    /// Fraction of requests that are reads (the rest are writes).
    pub read_ratio: f64,
    /// Mean arrival rate, requests per second (Poisson arrivals).
    pub rate: f64,
}

impl OltpParams {
    /// Preset names; the first is the default.
    pub const PRESETS: [&'static str; 2] = ["sdcc", "sdcc8k"];
    const KNOBS: [&'static str; 8] =
        ["seed", "blocks", "requests", "block_size", "hot_fraction", "hot_share", "read_ratio", "rate"];

    /// The knobs of preset `name`, or `None` if there is no such preset.
    pub fn preset(name: &str) -> Option<Self> {
        let (blocks, block_size) = match name {
            "sdcc" => (1_048_576, 4096),
            "sdcc8k" => (524_288, 8192),
            _ => return None,
        };
        Some(OltpParams {
            seed: 1,
            blocks,
            requests: 1_000_000,
            block_size,
            hot_fraction: 0.05,
            hot_share: 0.9,
            read_ratio: 0.4,
            rate: 5000.0,
        })
    }

    /// Sets knob `key` from its text `value`, checking its range (`objects` is `blocks`,
    /// `write_ratio` sets `1 - read_ratio`).
    pub fn set(&mut self, key: &str, value: &str) -> Result<(), GenError> {
        match key {
            "seed" => self.seed = u64_knob(key, value, 0)?,
            "blocks" | "objects" => self.blocks = u64_knob(key, value, 1)?,
            "requests" => self.requests = u64_knob(key, value, 0)?,
            "block_size" => self.block_size = u64_knob(key, value, 1)?,
            "hot_fraction" => self.hot_fraction = f64_knob(key, value, 0.0, 1.0)?,
            "hot_share" => self.hot_share = f64_knob(key, value, 0.0, 1.0)?,
            "read_ratio" => self.read_ratio = f64_knob(key, value, 0.0, 1.0)?,
            "write_ratio" => self.read_ratio = 1.0 - f64_knob(key, value, 0.0, 1.0)?,
            "rate" => self.rate = f64_knob(key, value, 1e-6, 1e12)?,
            _ => return Err(unknown("oltp", key, &Self::KNOBS)),
        }
        Ok(())
    }

    /// Every knob and its value, in a fixed order.
    pub fn knobs(&self) -> Vec<(&'static str, String)> {
        let v = [
            self.seed.to_string(),
            self.blocks.to_string(),
            self.requests.to_string(),
            self.block_size.to_string(),
            self.hot_fraction.to_string(),
            self.hot_share.to_string(),
            self.read_ratio.to_string(),
            self.rate.to_string(),
        ];
        Self::KNOBS.into_iter().zip(v).collect()
    }

    /// Blocks in the hot part (at least 1, at most all but one unless there is only one).
    pub fn hot_blocks(&self) -> u64 {
        ((self.blocks as f64 * self.hot_fraction).round() as u64).clamp(1, self.blocks.saturating_sub(1).max(1))
    }
}

/// The OLTP generator; an iterator of exactly `requests` requests.
pub struct Oltp {
    p: OltpParams,
    hot: u64,
    rng: Xoshiro256pp,
    arrivals: Arrivals,
    left: u64,
}

impl Oltp {
    /// The generator for `p`.
    pub fn new(p: &OltpParams) -> Self {
        Oltp {
            hot: p.hot_blocks(),
            rng: Xoshiro256pp::new(p.seed),
            arrivals: Arrivals::new(p.rate),
            left: p.requests,
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

impl Iterator for Oltp {
    type Item = Request;

    fn next(&mut self) -> Option<Request> {
        if self.left == 0 {
            return None;
        }
        self.left -= 1;
        let t = self.arrivals.next_ns(&mut self.rng);
        let cold = self.p.blocks - self.hot;
        let block = if cold == 0 || self.rng.chance(self.p.hot_share) {
            self.rng.below(self.hot)
        } else {
            self.hot + self.rng.below(cold)
        };
        let op = if self.rng.chance(self.p.read_ratio) { Op::Get } else { Op::Put };
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
    use std::collections::HashSet;

    #[test]
    fn ninety_percent_of_io_in_five_percent_of_space() {
        let mut p = OltpParams::preset("sdcc").unwrap();
        p.blocks = 100_000;
        p.requests = 200_000;
        let hot: HashSet<u64> = (0..p.hot_blocks()).map(|b| block_key(VOLUME, b)).collect();
        assert_eq!(hot.len(), 5000);
        let reqs: Vec<_> = Oltp::new(&p).collect();
        let in_hot = reqs.iter().filter(|r| hot.contains(&r.key)).count() as f64 / 2e5;
        let reads = reqs.iter().filter(|r| r.op == Op::Get).count() as f64 / 2e5;
        assert!((in_hot - 0.9).abs() < 0.01, "{in_hot}");
        assert!((reads - 0.4).abs() < 0.01, "{reads}");
        let p8 = OltpParams::preset("sdcc8k").unwrap();
        assert!(Oltp::new(&p8).take(10).all(|r| r.len == 8192 && r.obj_size == 8192));
    }
}
