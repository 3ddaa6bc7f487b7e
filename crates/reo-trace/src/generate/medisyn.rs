//! The MediSyn-like object workload of the Reo paper (docs/REFERENCES.md §A9): a fixed population
//! of objects with lognormal sizes (rescaled to a 4.4 MB mean, clamped to [4 KiB, 64 MiB]) and
//! generalized-Zipf popularity over a seeded permutation of ids; MediSyn's temporal locality
//! (objects introduced over the trace, each one's requests over its lifespan: `lifespan.rs`);
//! Poisson arrivals; whole-object Gets, and with probability `write_ratio` a Put of a new version
//! (new content); with probability `dedup_ratio` an object's (or version's) content is a random
//! other object's.
//!
//! Presets reproduce the Reo paper's three workloads: 4,000 objects and 25,616 (`weak`),
//! 51,057 (`medium`) or 89,723 (`strong`) requests. `medium`'s skew and lifespan are calibrated on
//! the paper's Fig. 9 (docs/TRACES.md); `weak` and `strong` step its skew down and up.
//! Keys are `0..objects`; fingerprints are always set.
//!
//! With `cover` (on by default) every object is requested at least once: whenever the objects
//! not yet requested are as many as the requests left, the next request goes to one of them
//! (least popular first) instead of a Zipf draw. That is the fewest forced requests possible
//! (the objects the draws would have missed; a steep skew leaves hundreds), all at the end.

use super::dist::{lognormal_sizes, rescale_mean, Zipf};
use super::error::GenError;
use super::knob::{bool_knob, f64_knob, u64_knob, unknown};
use super::lifespan::{LifespanParams, Timeline};
use crate::hash::mix64;
use crate::request::{Op, Request};
use reo_media::rng::Xoshiro256pp;

/// Knobs of [`Medisyn`]; see the module doc and `docs/TRACES.md`.
#[derive(Debug, Clone, PartialEq)]
pub struct MedisynParams {
    /// Seed of the generator: equal params give equal requests.
    pub seed: u64,
    /// Objects in the population (keys `0..objects`, at most 2^32 - 1).
    pub objects: u64,
    /// Requests the workload yields.
    pub requests: u64,
    /// Zipf skew α.
    pub alpha: f64,
    /// Zipf head flattening h (`p_r ∝ (r + h)^−α`).
    pub h: f64,
    /// Mean object size in bytes (after clamping).
    pub mean_size: u64,
    /// σ of the underlying normal of the lognormal sizes.
    pub sigma: f64,
    /// Smallest object size, bytes.
    pub min_size: u64,
    /// Largest object size, bytes.
    pub max_size: u64,
    /// Fraction of requests that are Puts of a new version, 0–0.5.
    pub write_ratio: f64,
    /// Probability that new content duplicates another object's current content, 0–1.
    pub dedup_ratio: f64,
    /// Mean arrival rate, requests per second (Poisson arrivals).
    pub rate: f64,
    /// Request every object at least once (see the module doc).
    pub cover: bool,
    /// Median lifespan of an object, as a fraction of the trace (MediSyn's temporal locality,
    /// `lifespan.rs`); 0 = stationary popularity.
    pub life: f64,
    /// σ of the lognormal lifespans.
    pub life_sigma: f64,
    /// Fraction of objects with news-like (Pareto) lifespans.
    pub news: f64,
    /// Shape of the news-like lifespans (smaller: a longer tail).
    pub news_shape: f64,
    /// Fraction of objects introduced during the trace (the rest before it).
    pub new_objects: f64,
}

impl MedisynParams {
    /// Preset names; the first is the default.
    pub const PRESETS: [&'static str; 3] = ["weak", "medium", "strong"];
    const KNOBS: [&'static str; 18] = [
        "seed",
        "objects",
        "requests",
        "alpha",
        "h",
        "mean_size",
        "sigma",
        "min_size",
        "max_size",
        "write_ratio",
        "dedup_ratio",
        "rate",
        "cover",
        "life",
        "life_sigma",
        "news",
        "news_shape",
        "new_objects",
    ];

    /// The knobs of preset `name`, or `None` if there is no such preset.
    pub fn preset(name: &str) -> Option<Self> {
        // Calibrated on `medium` against the Reo paper's Fig. 9 (docs/TRACES.md); weak and
        // strong keep its temporal locality and step the skew down or up.
        let (requests, alpha) = match name {
            "weak" => (25_616, 0.0),
            "medium" => (51_057, 0.2),
            "strong" => (89_723, 0.4),
            _ => return None,
        };
        Some(MedisynParams {
            seed: 1,
            objects: 4_000,
            requests,
            alpha,
            h: 0.0,
            mean_size: 4_400_000,
            sigma: 1.0,
            min_size: 4096,
            max_size: 64 << 20,
            write_ratio: 0.1,
            dedup_ratio: 0.0,
            rate: 100.0,
            cover: true,
            life: 0.06,
            life_sigma: 0.3,
            news: 0.0,
            news_shape: 1.0,
            new_objects: 1.0,
        })
    }

    /// Sets knob `key` from its text `value`, checking its range.
    pub fn set(&mut self, key: &str, value: &str) -> Result<(), GenError> {
        match key {
            "seed" => self.seed = u64_knob(key, value, 0)?,
            "objects" => self.objects = u64_knob(key, value, 1)?.min(u64::from(u32::MAX)),
            "requests" => self.requests = u64_knob(key, value, 0)?,
            "alpha" => self.alpha = f64_knob(key, value, 0.0, 10.0)?,
            "h" => self.h = f64_knob(key, value, 0.0, 1e9)?,
            "mean_size" => self.mean_size = u64_knob(key, value, 1)?,
            "sigma" => self.sigma = f64_knob(key, value, 0.0, 5.0)?,
            "min_size" => self.min_size = u64_knob(key, value, 1)?,
            "max_size" => self.max_size = u64_knob(key, value, 1)?,
            "write_ratio" => self.write_ratio = f64_knob(key, value, 0.0, 0.5)?,
            "dedup_ratio" => self.dedup_ratio = f64_knob(key, value, 0.0, 1.0)?,
            "rate" => self.rate = f64_knob(key, value, 1e-6, 1e12)?,
            "cover" => self.cover = bool_knob(key, value)?,
            "life" => self.life = f64_knob(key, value, 0.0, 100.0)?,
            "life_sigma" => self.life_sigma = f64_knob(key, value, 0.01, 5.0)?,
            "news" => self.news = f64_knob(key, value, 0.0, 1.0)?,
            "news_shape" => self.news_shape = f64_knob(key, value, 0.05, 20.0)?,
            "new_objects" => self.new_objects = f64_knob(key, value, 0.0, 1.0)?,
            _ => return Err(unknown("medisyn", key, &Self::KNOBS)),
        }
        Ok(())
    }

    /// Checks `min_size ≤ mean_size ≤ max_size`.
    pub fn validate(&self) -> Result<(), GenError> {
        if !(self.min_size <= self.mean_size && self.mean_size <= self.max_size) {
            return Err(GenError::MedisynSizes { min: self.min_size, mean: self.mean_size, max: self.max_size });
        }
        Ok(())
    }

    /// Every knob and its value, in a fixed order.
    pub fn knobs(&self) -> Vec<(&'static str, String)> {
        let v = [
            self.seed.to_string(),
            self.objects.to_string(),
            self.requests.to_string(),
            self.alpha.to_string(),
            self.h.to_string(),
            self.mean_size.to_string(),
            self.sigma.to_string(),
            self.min_size.to_string(),
            self.max_size.to_string(),
            self.write_ratio.to_string(),
            self.dedup_ratio.to_string(),
            self.rate.to_string(),
            self.cover.to_string(),
            self.life.to_string(),
            self.life_sigma.to_string(),
            self.news.to_string(),
            self.news_shape.to_string(),
            self.new_objects.to_string(),
        ];
        Self::KNOBS.into_iter().zip(v).collect()
    }
}

/// The MediSyn-like generator; an iterator of exactly `requests` requests.
pub struct Medisyn {
    p: MedisynParams,
    rng: Xoshiro256pp,
    zipf: Zipf,
    /// With a lifespan: when each object is in demand (it then picks objects instead of `zipf`).
    timeline: Option<Box<Timeline>>,
    /// Rank → object id.
    ids: Vec<u32>,
    /// Per object: (size, current content fingerprint).
    objects: Vec<(u64, u64)>,
    fresh_salt: u64,
    fresh_next: u64,
    left: u64,
    clock_s: f64,
    /// Per object: requested yet (only with `cover`).
    requested: Vec<bool>,
    unrequested: u64,
    /// Next rank to consider when forcing, counting down from the least popular.
    force_cursor: usize,
}

impl Medisyn {
    /// The generator for `p` (draws the objects' sizes and contents up front: O(objects)).
    pub fn new(p: &MedisynParams) -> Self {
        let mut rng = Xoshiro256pp::new(p.seed);
        let n = p.objects as usize;
        let ids = rng.permutation(p.objects as u32);
        let zipf = Zipf::new(p.objects, p.alpha, p.h);
        let timeline = (p.life > 0.0).then(|| {
            let mut shares = vec![0.0; n];
            for (rank, &id) in ids.iter().enumerate() {
                shares[id as usize] = zipf.weight(rank as u64);
            }
            let life = LifespanParams {
                life: p.life,
                life_sigma: p.life_sigma,
                news: p.news,
                news_shape: p.news_shape,
                new_objects: p.new_objects,
            };
            // Its own stream: the sizes and contents are the same with and without a lifespan.
            Box::new(Timeline::new(shares, p.requests, &life, mix64(p.seed ^ 0x6c69_6665_7370_616e)))
        });
        let mut g = Medisyn {
            p: p.clone(),
            rng,
            zipf,
            timeline,
            ids,
            objects: Vec::with_capacity(n),
            fresh_salt: mix64(p.seed ^ 0x6d65_6469_7379_6e00),
            fresh_next: 0,
            left: p.requests,
            clock_s: 0.0,
            requested: if p.cover { vec![false; n] } else { Vec::new() },
            unrequested: if p.cover { p.objects } else { 0 },
            force_cursor: n,
        };
        // Content groups first (object i duplicates a random earlier object's content with
        // probability d), then one size per content, rescaled so the mean over objects is exact.
        let mut content_of: Vec<usize> = Vec::with_capacity(n);
        let mut group_sizes: Vec<u64> = Vec::new();
        for i in 0..n {
            let c = if i > 0 && g.rng.chance(p.dedup_ratio) {
                content_of[g.rng.below(i as u64) as usize]
            } else {
                group_sizes.push(0);
                group_sizes.len() - 1
            };
            group_sizes[c] += 1;
            content_of.push(c);
        }
        let mut sizes =
            lognormal_sizes(&mut g.rng, group_sizes.len(), p.mean_size as f64, p.sigma, p.min_size, p.max_size);
        rescale_mean(&mut sizes, &group_sizes, p.mean_size as f64, p.min_size, p.max_size);
        let fps: Vec<u64> = sizes.iter().map(|_| g.fresh()).collect();
        g.objects = content_of.iter().map(|&c| (sizes[c], fps[c])).collect();
        g
    }

    /// A content fingerprint never used before in this trace.
    fn fresh(&mut self) -> u64 {
        self.fresh_next += 1;
        mix64(self.fresh_salt.wrapping_add(self.fresh_next))
    }

    /// The object of the next request: a Zipf draw (at its time, with a lifespan), or a forced
    /// first request (see `cover`).
    fn pick(&mut self) -> usize {
        let id = if self.unrequested > 0 && self.unrequested >= self.left {
            loop {
                self.force_cursor -= 1;
                if !self.requested[self.ids[self.force_cursor] as usize] {
                    break self.ids[self.force_cursor] as usize;
                }
            }
        } else if let Some(t) = &mut self.timeline {
            t.sample(&mut self.rng)
        } else {
            self.ids[self.zipf.sample(&mut self.rng) as usize] as usize
        };
        if let Some(seen) = self.requested.get_mut(id) {
            if !*seen {
                *seen = true;
                self.unrequested -= 1;
            }
        }
        id
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

impl Iterator for Medisyn {
    type Item = Request;

    fn next(&mut self) -> Option<Request> {
        if self.left == 0 {
            return None;
        }
        let id = self.pick();
        self.left -= 1;
        self.clock_s += self.rng.exp(self.p.rate);
        let op = if self.rng.chance(self.p.write_ratio) {
            let n = self.objects.len() as u64;
            self.objects[id] = if n > 1 && self.rng.chance(self.p.dedup_ratio) {
                let other = (id as u64 + 1 + self.rng.below(n - 1)) % n;
                self.objects[other as usize]
            } else {
                (self.objects[id].0, self.fresh())
            };
            Op::Put
        } else {
            Op::Get
        };
        let (size, fp) = self.objects[id];
        Some(Request {
            time_ns: (self.clock_s * 1e9) as u64,
            op,
            key: id as u64,
            offset: 0,
            len: size,
            obj_size: size,
            fingerprint: Some(fp),
        })
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

    fn gen(preset: &str, f: impl FnOnce(&mut MedisynParams)) -> Vec<Request> {
        let mut p = MedisynParams::preset(preset).unwrap();
        f(&mut p);
        Medisyn::new(&p).collect()
    }

    #[test]
    fn presets_have_the_papers_counts() {
        for (name, n) in [("weak", 25_616), ("medium", 51_057), ("strong", 89_723)] {
            let p = MedisynParams::preset(name).unwrap();
            assert_eq!((p.objects, p.requests), (4000, n));
            let g = Medisyn::new(&p);
            assert_eq!(g.len(), n);
            let reqs: Vec<_> = g.collect();
            assert_eq!(reqs.len() as u64, n);
            assert!(reqs.iter().all(|r| r.key < 4000 && r.offset == 0 && r.len == r.obj_size));
            assert!(reqs.windows(2).all(|w| w[0].time_ns <= w[1].time_ns));
            let keys: HashSet<u64> = reqs.iter().map(|r| r.key).collect();
            assert_eq!(keys.len(), 4000, "{name}: every object requested");
        }
    }

    #[test]
    fn cover_forces_only_the_missing_objects_at_the_end() {
        // A steep skew leaves objects unrequested, with or without a lifespan.
        let with = gen("strong", |p| p.alpha = 1.2);
        let without = gen("strong", |p| {
            p.alpha = 1.2;
            p.cover = false;
        });
        let missing = 4000 - without.iter().map(|r| r.key).collect::<HashSet<_>>().len();
        assert!(missing > 0);
        let n = with.len();
        // Identical up to the forced tail, which is one request per missing object.
        assert_eq!(with[..n - missing - 50], without[..n - missing - 50]);
        let tail: HashSet<u64> = with[n - missing..].iter().map(|r| r.key).collect();
        assert_eq!(tail.len(), missing);
        let few = gen("weak", |p| p.requests = 100);
        assert_eq!(few.iter().map(|r| r.key).collect::<HashSet<_>>().len(), 100);
    }

    #[test]
    fn deterministic_per_seed() {
        assert_eq!(gen("weak", |_| ()), gen("weak", |_| ()));
        assert_ne!(gen("weak", |_| ()), gen("weak", |p| p.seed = 2));
    }

    #[test]
    fn popularity_skew_grows_with_alpha() {
        let top10 = |alpha| {
            let reqs = gen("strong", |p| {
                p.alpha = alpha;
                p.write_ratio = 0.0;
            });
            let mut counts: HashMap<u64, u64> = HashMap::new();
            for r in &reqs {
                *counts.entry(r.key).or_default() += 1;
            }
            let mut c: Vec<u64> = counts.into_values().collect();
            c.sort_unstable_by(|a, b| b.cmp(a));
            c.iter().take(400).sum::<u64>() as f64 / reqs.len() as f64
        };
        let (w, m, s) = (top10(0.6), top10(0.9), top10(1.2));
        assert!(w < m && m < s, "{w} {m} {s}");
        assert!((s - 0.88).abs() < 0.03, "strong top-10% share {s}");
    }

    /// A lifespan moves demand in time without changing the skew: the top-10 % share is the
    /// Zipf's with and without it, while a window of 1,000 requests touches far fewer objects.
    #[test]
    fn a_lifespan_concentrates_demand_in_time() {
        let top10 = |reqs: &[Request]| {
            let mut counts: HashMap<u64, u64> = HashMap::new();
            for r in reqs {
                *counts.entry(r.key).or_default() += 1;
            }
            let mut c: Vec<u64> = counts.into_values().collect();
            c.sort_unstable_by(|a, b| b.cmp(a));
            c.iter().take(400).sum::<u64>() as f64 / reqs.len() as f64
        };
        let distinct = |reqs: &[Request]| {
            let windows = reqs.chunks_exact(1000);
            let n = windows.len() as f64;
            windows.map(|w| w.iter().map(|r| r.key).collect::<HashSet<_>>().len()).sum::<usize>() as f64 / n
        };
        let with = gen("medium", |p| p.alpha = 0.9);
        let without = gen("medium", |p| {
            p.alpha = 0.9;
            p.life = 0.0;
        });
        assert!((top10(&with) - top10(&without)).abs() < 0.02, "{} {}", top10(&with), top10(&without));
        let (w, wo) = (distinct(&with), distinct(&without));
        assert!(w < 0.5 * wo, "{w} distinct objects per 1,000 requests with a lifespan, {wo} without");
    }

    #[test]
    fn write_ratio_and_new_versions() {
        let reqs = gen("medium", |p| p.write_ratio = 0.3);
        let puts = reqs.iter().filter(|r| r.op == Op::Put).count() as f64 / reqs.len() as f64;
        assert!((puts - 0.3).abs() < 0.01, "{puts}");
        let mut current: HashMap<u64, u64> = HashMap::new();
        for r in &reqs {
            let fp = r.fingerprint.unwrap();
            match r.op {
                Op::Put => assert_ne!(current.insert(r.key, fp), Some(fp)),
                _ => {
                    if let Some(&cur) = current.get(&r.key) {
                        assert_eq!(cur, fp, "a Get sees the last Put's content");
                    }
                }
            }
        }
    }

    #[test]
    fn dedup_ratio_shares_content() {
        let unique = |d: f64| {
            let reqs = gen("strong", |p| {
                p.dedup_ratio = d;
                p.write_ratio = 0.0;
            });
            let keys: HashSet<u64> = reqs.iter().map(|r| r.key).collect();
            let fps: HashSet<u64> = reqs.iter().map(|r| r.fingerprint.unwrap()).collect();
            fps.len() as f64 / keys.len() as f64
        };
        assert_eq!(unique(0.0), 1.0);
        let mut p = MedisynParams::preset("medium").unwrap();
        p.dedup_ratio = 0.4;
        let g = Medisyn::new(&p);
        let mean = g.objects.iter().map(|o| o.0).sum::<u64>() as f64 / 4000.0;
        assert!((mean / 4.4e6 - 1.0).abs() < 1e-3, "mean size with dedup {mean}");
        let u = unique(0.4);
        assert!((0.5..0.75).contains(&u), "unique content ratio {u}");
        let reqs = gen("weak", |p| p.dedup_ratio = 0.4);
        let mut size_of: HashMap<u64, u64> = HashMap::new();
        for r in reqs {
            assert_eq!(
                *size_of.entry(r.fingerprint.unwrap()).or_insert(r.obj_size),
                r.obj_size,
                "equal content, equal size"
            );
        }
    }

    #[test]
    fn knobs_parse_and_reject() {
        let mut p = MedisynParams::preset("weak").unwrap();
        p.set("alpha", "1.1").unwrap();
        assert_eq!(p.alpha, 1.1);
        assert!(p.set("write_ratio", "0.6").is_err());
        assert!(p.set("colour", "1").unwrap_err().to_string().contains("knobs: seed"));
        p.set("min_size", "10000000").unwrap();
        assert!(p.validate().is_err());
    }
}
