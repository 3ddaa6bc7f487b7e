//! MediSyn's temporal locality (Tang, Fu, Cherkasova, Vahdat, NOSSDAV 2003; docs/TRACES.md):
//! objects are introduced over time and each one's requests fall over its *lifespan* after its
//! introduction, so the set of objects in demand drifts through the trace while the popularity
//! of each object over the whole trace stays the generalized Zipf share of its rank.
//!
//! Time runs over the trace as a fraction `t ∈ [0, 1)`. Object `i` has its popularity share
//! `s_i`, an introduction time `a_i` (uniform in `[0, 1)` for the `new_objects` fraction, else
//! uniform in `[−1, 0)`: introduced during the trace-length before it) and a lifespan law `F`:
//! lognormal with median `life` and σ `life_sigma` (MediSyn's regular files), or, for the `news`
//! fraction, Pareto type II with the same median and shape `news_shape` (MediSyn's news-like
//! files: demand peaks at introduction and decays as a power law). A request of `i` at time `t`
//! has density `s_i · F'(t − a_i)` (the law's part inside the trace) plus `s_i · (1 − m_i) /
//! (1 − max(a_i, 0))` over the object's time in the trace, `m_i = F(1 − a_i) − F(−a_i)`: what
//! its lifespan would put outside the trace is spread evenly over its existence in it (never
//! before its introduction), so each object gets exactly its share and the trace's popularity
//! skew is exactly the Zipf's (its top-10 % share does not change with the lifespan knobs); only
//! *when* requests come changes.
//!
//! The trace is cut into [`BUCKETS`] equal spans of time. For each span the sampler computes every
//! object's weight (one CDF evaluation per object: the span's end, the previous span's end being
//! its start), allots the span its share of the requests (rounded so the totals are exact), and
//! draws that many objects from the span's weights by inverse CDF. Memory is O(objects), time
//! O(BUCKETS · objects + requests · log objects); nothing grows with the trace length.

use reo_media::rng::Xoshiro256pp;

/// Spans of time the trace is cut into: a lifespan of 1 % of the trace still covers several.
pub const BUCKETS: u64 = 512;

/// The lifespan knobs (see the module doc); `life == 0` means stationary popularity.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct LifespanParams {
    pub life: f64,
    pub life_sigma: f64,
    pub news: f64,
    pub news_shape: f64,
    pub new_objects: f64,
}

/// One object's lifespan law.
#[derive(Debug, Clone, Copy)]
enum Law {
    /// `F(x) = Φ((ln x − ln m) / σ)`.
    LogNormal { ln_median: f64, sigma: f64 },
    /// `F(x) = 1 − (1 + x / λ)^−k`.
    Lomax { lambda: f64, shape: f64 },
}

impl Law {
    /// The probability that a lifespan is at most `x` (0 for `x ≤ 0`).
    fn cdf(self, x: f64) -> f64 {
        if x <= 0.0 {
            return 0.0;
        }
        match self {
            Law::LogNormal { ln_median, sigma } => {
                0.5 * libm::erfc(-(libm::log(x) - ln_median) / (sigma * std::f64::consts::SQRT_2))
            }
            Law::Lomax { lambda, shape } => 1.0 - libm::pow(1.0 + x / lambda, -shape),
        }
    }
}

/// Draws objects span by span from their time-varying weights.
pub struct Timeline {
    /// Per object (by id): popularity share over the trace.
    share: Vec<f64>,
    /// Per object: introduction time (fraction of the trace; negative before it).
    intro: Vec<f64>,
    /// Per object: index into `laws`.
    law: Vec<u8>,
    laws: [Law; 2],
    /// Per object: `F(1 − a) − F(−a)`, the law's mass inside the trace.
    mass: Vec<f64>,
    /// Per object: `F(t − a)` at the end of the last span computed.
    done: Vec<f64>,
    /// Cumulative weights of the current span, by object id.
    cdf: Vec<f64>,
    /// Spans computed so far.
    span: u64,
    requests: u64,
    /// Requests allotted to the spans computed so far, and their total weight.
    allotted: u64,
    weight_so_far: f64,
    /// Draws left in the current span.
    left_in_span: u64,
}

impl Timeline {
    /// The timeline of `shares.len()` objects (shares by object id, summing to 1) yielding
    /// `requests` draws; introduction times and laws are drawn from `seed`.
    pub fn new(shares: Vec<f64>, requests: u64, p: &LifespanParams, seed: u64) -> Timeline {
        let n = shares.len();
        let mut rng = Xoshiro256pp::new(seed);
        let sigma = p.life_sigma.max(1e-3);
        let shape = p.news_shape.max(1e-3);
        let laws = [
            // libm's functions, not the platform's: the same trace on every machine.
            Law::LogNormal { ln_median: libm::log(p.life), sigma },
            // Median λ(2^{1/k} − 1) = life.
            Law::Lomax { lambda: p.life / (libm::pow(2.0, 1.0 / shape) - 1.0), shape },
        ];
        let mut intro = Vec::with_capacity(n);
        let mut law = Vec::with_capacity(n);
        for _ in 0..n {
            let new = rng.chance(p.new_objects);
            intro.push(if new { rng.next_f64() } else { -rng.next_f64() });
            law.push(u8::from(rng.chance(p.news)));
        }
        let mass = (0..n)
            .map(|i| {
                let l = laws[usize::from(law[i])];
                l.cdf(1.0 - intro[i]) - l.cdf(-intro[i])
            })
            .collect();
        let done = (0..n).map(|i| laws[usize::from(law[i])].cdf(-intro[i])).collect();
        Timeline {
            share: shares,
            intro,
            law,
            laws,
            mass,
            done,
            cdf: vec![0.0; n],
            span: 0,
            requests,
            allotted: 0,
            weight_so_far: 0.0,
            left_in_span: 0,
        }
    }

    /// Computes the next span's weights and allotment; false when every span is done.
    fn next_span(&mut self) -> bool {
        while self.span < BUCKETS {
            let start = self.span as f64 / BUCKETS as f64;
            let end = (self.span + 1) as f64 / BUCKETS as f64;
            let mut sum = 0.0;
            for i in 0..self.share.len() {
                let f = self.laws[usize::from(self.law[i])].cdf(end - self.intro[i]);
                let mut w = self.share[i] * (f - self.done[i]).max(0.0);
                self.done[i] = f;
                // The share the law puts outside the trace, evenly over the object's existence.
                let born = self.intro[i].max(0.0);
                if end > born {
                    let overlap = end - start.max(born);
                    w += self.share[i] * (1.0 - self.mass[i]).max(0.0) * overlap / (1.0 - born);
                }
                sum += w;
                self.cdf[i] = sum;
            }
            self.span += 1;
            self.weight_so_far += sum;
            let upto = if self.span == BUCKETS {
                self.requests
            } else {
                ((self.weight_so_far * self.requests as f64).round() as u64).min(self.requests)
            };
            self.left_in_span = upto.saturating_sub(self.allotted);
            self.allotted = self.allotted.max(upto);
            if self.left_in_span > 0 && sum > 0.0 {
                return true;
            }
        }
        false
    }

    /// The object of the next request.
    pub fn sample(&mut self, rng: &mut Xoshiro256pp) -> usize {
        if self.left_in_span == 0 && !self.next_span() {
            // Every span's allotment is drawn (only when asked for more than `requests`): the
            // last span's weights stand.
            self.left_in_span = 1;
        }
        self.left_in_span -= 1;
        let total = *self.cdf.last().expect("at least one object");
        let u = rng.next_f64() * total;
        self.cdf.partition_point(|&c| c <= u).min(self.cdf.len() - 1)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn params(life: f64) -> LifespanParams {
        LifespanParams { life, life_sigma: 1.0, news: 0.3, news_shape: 1.0, new_objects: 0.9 }
    }

    #[test]
    fn each_law_has_its_median() {
        for law in [
            Law::LogNormal { ln_median: libm::log(0.05), sigma: 0.8 },
            Law::Lomax { lambda: 0.05 / (libm::pow(2.0, 1.0 / 1.5) - 1.0), shape: 1.5 },
        ] {
            assert!((law.cdf(0.05) - 0.5).abs() < 1e-9, "{law:?}");
            assert_eq!(law.cdf(0.0), 0.0);
            assert!(law.cdf(0.01) < law.cdf(0.02) && law.cdf(100.0) > 0.99);
        }
    }

    /// Over the whole trace every object keeps its share; within a span the requests go to
    /// the objects alive then.
    #[test]
    fn shares_hold_over_the_trace_and_demand_moves_in_time() {
        let n = 200;
        let shares = vec![1.0 / n as f64; n];
        let requests = 200_000;
        let mut t = Timeline::new(shares, requests, &params(0.02), 9);
        let intro = t.intro.clone();
        let mut rng = Xoshiro256pp::new(1);
        let mut counts = vec![0u64; n];
        let mut early_age = Vec::new();
        for _ in 0..requests {
            let i = t.sample(&mut rng);
            counts[i] += 1;
            // The time of a draw is its span's (spans get requests by their demand: the
            // request count is not the clock).
            let now = (t.span - 1) as f64 / BUCKETS as f64;
            if now < 0.25 && intro[i] > 0.0 {
                early_age.push(now - intro[i]);
            }
        }
        for c in counts {
            let want = requests as f64 / n as f64;
            assert!((c as f64 - want).abs() < 0.15 * want, "{c} against {want}");
        }
        // A new object drawn early was introduced shortly before (its median lifespan is 2 %
        // of the trace): none before it was introduced, and most within a few medians.
        assert!(early_age.iter().all(|&a| a > -1.0 / BUCKETS as f64), "a request before its object existed");
        let recent = early_age.iter().filter(|&&a| a < 0.1).count() as f64 / early_age.len() as f64;
        assert!(recent > 0.8, "only {recent} of early requests within 10 % of the trace of introduction");
    }

    /// Objects introduced so late that their lifespan barely starts inside the trace still get
    /// their share, but only after they exist: none is requested before its introduction, at
    /// any time of the trace.
    #[test]
    fn no_object_is_requested_before_it_exists() {
        let n = 2_000;
        let shares = vec![1.0 / n as f64; n];
        let requests = 400_000;
        let p = LifespanParams { life: 0.06, life_sigma: 0.3, news: 0.0, news_shape: 1.0, new_objects: 1.0 };
        let mut t = Timeline::new(shares, requests, &p, 5);
        let intro = t.intro.clone();
        assert!(intro.iter().filter(|&&a| a > 0.995).count() >= 3, "late objects to check");
        let mut rng = Xoshiro256pp::new(4);
        let mut counts = vec![0u64; n];
        for _ in 0..requests {
            let i = t.sample(&mut rng);
            counts[i] += 1;
            // Drawn in the span that ends here (the span is the clock, not the request count).
            let span_end = t.span as f64 / BUCKETS as f64;
            assert!(
                intro[i] < span_end,
                "object {i} (introduced at {}) drawn in the span ending at {span_end}",
                intro[i]
            );
        }
        let late: Vec<usize> = (0..n).filter(|&i| intro[i] > 0.99).collect();
        let got: u64 = late.iter().map(|&i| counts[i]).sum();
        let want = requests as f64 * late.len() as f64 / n as f64;
        assert!((got as f64 - want).abs() < 0.2 * want, "late objects drawn {got} times, their share {want}");
    }

    #[test]
    fn allotments_sum_to_the_requests() {
        let shares: Vec<f64> = (1..=50).map(|r: i32| 1.0 / f64::from(r)).collect();
        let total: f64 = shares.iter().sum();
        let shares = shares.into_iter().map(|s| s / total).collect();
        let mut t = Timeline::new(shares, 1_000, &params(0.1), 3);
        let mut rng = Xoshiro256pp::new(2);
        for _ in 0..1_000 {
            t.sample(&mut rng);
        }
        assert_eq!(t.allotted, 1_000);
        assert_eq!(t.left_in_span, 0);
    }
}
