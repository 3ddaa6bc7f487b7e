//! Block workloads with duplicate content, shaped after the FIU IODedup traces (`webvm`, `homes`,
//! `mail`): fixed-size blocks, Zipf popularity over a seeded permutation of a working set, a read
//! ratio, and a dedup ratio — the probability that newly written content (and the initial
//! content of a block first touched) duplicates content seen before, picked uniformly from the
//! last 65,536 contents generated (so popular contents get more popular, as in real dedup
//! traces). Reads see a block's current content; fingerprints are always set.
//!
//! Preset parameters are our choices (the FIU traces' exact statistics are not in the
//! reference): `webvm` 1 GiB working set, 70 % reads, dedup 0.5, α 0.9; `homes` 4 GiB,
//! 35 % reads, dedup 0.3, α 0.8; `mail` 2 GiB, 10 % reads, dedup 0.85, α 1.0; 1,000,000
//! requests each, 4 KiB blocks, 5,000 requests/s.

use super::blocks::{block_request, Arrivals};
use super::dist::Zipf;
use super::error::GenError;
use super::knob::{f64_knob, u64_knob, unknown};
use crate::hash::mix64;
use crate::request::{Op, Request};
use reo_media::rng::Xoshiro256pp;

/// Volume id of the dedup workloads' blocks.
const VOLUME: u64 = 0xdd;
/// Contents remembered as duplicate candidates.
const HISTORY: usize = 65_536;

/// Knobs of [`DedupBlocks`]; see the module doc and `docs/TRACES.md`.
#[derive(Debug, Clone, PartialEq)]
pub struct DedupParams {
    /// Seed of the generator: equal params give equal requests.
    pub seed: u64,
    /// Working set, in blocks.
    pub blocks: u64,
    /// Requests the workload yields.
    pub requests: u64,
    /// Size of every block (and request), bytes.
    pub block_size: u64,
    /// Fraction of requests that are reads (the rest are writes).
    pub read_ratio: f64,
    /// Probability that new content duplicates a recent earlier content, 0–1.
    pub dedup_ratio: f64,
    /// Zipf skew of block popularity.
    pub alpha: f64,
    /// Mean arrival rate, requests per second (Poisson arrivals).
    pub rate: f64,
}

impl DedupParams {
    /// Preset names; the first is the default.
    pub const PRESETS: [&'static str; 3] = ["webvm", "homes", "mail"];
    const KNOBS: [&'static str; 8] =
        ["seed", "blocks", "requests", "block_size", "read_ratio", "dedup_ratio", "alpha", "rate"];

    /// The knobs of preset `name`, or `None` if there is no such preset.
    pub fn preset(name: &str) -> Option<Self> {
        let (blocks, read_ratio, dedup_ratio, alpha) = match name {
            "webvm" => (262_144, 0.7, 0.5, 0.9),
            "homes" => (1_048_576, 0.35, 0.3, 0.8),
            "mail" => (524_288, 0.1, 0.85, 1.0),
            _ => return None,
        };
        Some(DedupParams {
            seed: 1,
            blocks,
            requests: 1_000_000,
            block_size: 4096,
            read_ratio,
            dedup_ratio,
            alpha,
            rate: 5000.0,
        })
    }

    /// Sets knob `key` from its text `value`, checking its range (`objects` is `blocks`,
    /// `write_ratio` sets `1 - read_ratio`).
    pub fn set(&mut self, key: &str, value: &str) -> Result<(), GenError> {
        match key {
            "seed" => self.seed = u64_knob(key, value, 0)?,
            "blocks" | "objects" => self.blocks = u64_knob(key, value, 1)?.min(u64::from(u32::MAX)),
            "requests" => self.requests = u64_knob(key, value, 0)?,
            "block_size" => self.block_size = u64_knob(key, value, 1)?,
            "read_ratio" => self.read_ratio = f64_knob(key, value, 0.0, 1.0)?,
            "write_ratio" => self.read_ratio = 1.0 - f64_knob(key, value, 0.0, 1.0)?,
            "dedup_ratio" => self.dedup_ratio = f64_knob(key, value, 0.0, 1.0)?,
            "alpha" => self.alpha = f64_knob(key, value, 0.0, 10.0)?,
            "rate" => self.rate = f64_knob(key, value, 1e-6, 1e12)?,
            _ => return Err(unknown("dedup", key, &Self::KNOBS)),
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
            self.read_ratio.to_string(),
            self.dedup_ratio.to_string(),
            self.alpha.to_string(),
            self.rate.to_string(),
        ];
        Self::KNOBS.into_iter().zip(v).collect()
    }
}

/// The dedup block generator; an iterator of exactly `requests` requests.
pub struct DedupBlocks {
    p: DedupParams,
    rng: Xoshiro256pp,
    zipf: Zipf,
    blocks: Vec<u32>,
    /// Per block: current content, 0 = not yet touched.
    content: Vec<u64>,
    history: Vec<u64>,
    history_next: usize,
    fresh_salt: u64,
    fresh_next: u64,
    arrivals: Arrivals,
    left: u64,
}

impl DedupBlocks {
    /// The generator for `p` (O(blocks) memory).
    pub fn new(p: &DedupParams) -> Self {
        let mut rng = Xoshiro256pp::new(p.seed);
        let blocks = rng.permutation(p.blocks as u32);
        DedupBlocks {
            zipf: Zipf::new(p.blocks, p.alpha, 0.0),
            blocks,
            content: vec![0; p.blocks as usize],
            history: Vec::with_capacity(HISTORY),
            history_next: 0,
            fresh_salt: mix64(p.seed ^ 0x6465_6475_7000),
            fresh_next: 0,
            arrivals: Arrivals::new(p.rate),
            left: p.requests,
            rng,
            p: p.clone(),
        }
    }

    /// New content: a duplicate of a remembered one with probability `dedup_ratio`, else fresh.
    fn new_content(&mut self) -> u64 {
        let fp = if !self.history.is_empty() && self.rng.chance(self.p.dedup_ratio) {
            self.history[self.rng.below(self.history.len() as u64) as usize]
        } else {
            loop {
                self.fresh_next += 1;
                let fp = mix64(self.fresh_salt.wrapping_add(self.fresh_next));
                if fp != 0 {
                    break fp;
                }
            }
        };
        if self.history.len() < HISTORY {
            self.history.push(fp);
        } else {
            self.history[self.history_next] = fp;
            self.history_next = (self.history_next + 1) % HISTORY;
        }
        fp
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

impl Iterator for DedupBlocks {
    type Item = Request;

    fn next(&mut self) -> Option<Request> {
        if self.left == 0 {
            return None;
        }
        self.left -= 1;
        let t = self.arrivals.next_ns(&mut self.rng);
        let block = self.blocks[self.zipf.sample(&mut self.rng) as usize] as usize;
        let op = if self.rng.chance(self.p.read_ratio) { Op::Get } else { Op::Put };
        if op == Op::Put || self.content[block] == 0 {
            self.content[block] = self.new_content();
        }
        Some(block_request(t, op, VOLUME, block as u64, self.p.block_size, Some(self.content[block])))
    }

    fn size_hint(&self) -> (usize, Option<usize>) {
        let n = usize::try_from(self.left).unwrap_or(usize::MAX);
        (n, Some(n))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::collections::{HashMap, HashSet};

    fn small(preset: &str) -> DedupParams {
        let mut p = DedupParams::preset(preset).unwrap();
        p.blocks = 20_000;
        p.requests = 100_000;
        p
    }

    #[test]
    fn shapes_have_their_read_and_dup_ratios() {
        for preset in DedupParams::PRESETS {
            let p = small(preset);
            let reqs: Vec<_> = DedupBlocks::new(&p).collect();
            assert_eq!(reqs.len(), 100_000);
            let reads = reqs.iter().filter(|r| r.op == Op::Get).count() as f64 / 1e5;
            assert!((reads - p.read_ratio).abs() < 0.01, "{preset}: reads {reads}");
            assert!(reqs.iter().all(|r| r.len == 4096 && r.obj_size == 4096 && r.fingerprint.is_some()));
            // Distinct contents among the writes: about 1 − dedup ratio of them are new.
            let writes: Vec<u64> = reqs.iter().filter(|r| r.op == Op::Put).map(|r| r.fingerprint.unwrap()).collect();
            let unique = writes.iter().collect::<HashSet<_>>().len() as f64 / writes.len() as f64;
            assert!(unique < 1.0 - p.dedup_ratio + 0.1, "{preset}: unique write content {unique}");
        }
    }

    #[test]
    fn reads_see_the_last_write() {
        let reqs: Vec<_> = DedupBlocks::new(&small("webvm")).collect();
        let mut cur: HashMap<u64, u64> = HashMap::new();
        for r in reqs {
            let fp = r.fingerprint.unwrap();
            match r.op {
                Op::Put => {
                    cur.insert(r.key, fp);
                }
                _ => assert_eq!(*cur.entry(r.key).or_insert(fp), fp),
            }
        }
    }

    #[test]
    fn deterministic() {
        let a: Vec<_> = DedupBlocks::new(&small("mail")).take(1000).collect();
        let b: Vec<_> = DedupBlocks::new(&small("mail")).take(1000).collect();
        assert_eq!(a, b);
    }
}
