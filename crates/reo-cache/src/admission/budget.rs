//! A flash write budget: throttles admitted bytes to protect the flash's endurance.
//!
//! Two layers, checked in this order on every request:
//!
//! 1. **DynamicRandomAP** (CacheLib `navy/admission_policy/DynamicRandomAP`, reference
//!    docs/REFERENCES.md §A4), optional: admit with probability
//!    `p = clamp((msb(base_size) / msb(len))^decay × factor, 0, 1)` (`msb` = 1-based index of the
//!    highest set bit, so small objects are favoured), drawn from a seeded xoshiro256++ stream (the
//!    decisions are a pure function of the seed, the request sequence and the caller's times).
//!    Every `update_interval` of caller time: `obs = Δadmitted_bytes / Δt`; if `obs > 0`,
//!    `tgt = min(max_rate, max(0, rate × (uptime + 1 day) − admitted) / 1 day)` and
//!    `factor = clamp(factor × clamp(tgt / obs, 1 − window, 1 + window), 0.001, 10)`, where `rate`
//!    is the budget in bytes/s and `uptime` runs from the first request. A "no" is
//!    [`Throttle::Rate`].
//! 2. **Hard cap**, always: a token bucket of `burst_bytes`, full at the first request, refilled at
//!    `bytes_per_day` per day of caller time. A request is admitted only if its `len` bytes are in the
//!    bucket, else [`Throttle::Cap`]. The arithmetic is exact (integers in byte·ns, `u128`), so
//!    **admitted bytes ≤ burst + bytes_per_day × elapsed / 1 day** at all times, where elapsed runs
//!    from the first request; the probabilistic layer only shapes the rate under that bound. A
//!    request larger than `burst_bytes` can never be admitted.
//!
//! Put the budget last in a chain: tokens are taken when it says `Admit`, so it should only see
//! requests every other stage accepted. The parser in [`super::config`] does that.

use super::{Admission, Decision, Request, Throttle, DAY_NS};
use reo_media::rng::Xoshiro256pp;

/// Parameters of [`WriteBudget`]; defaults are CacheLib's DynamicRandomAP ones.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct BudgetConfig {
    /// The budget: bytes of flash writes per day.
    pub bytes_per_day: u64,
    /// Token bucket size in bytes. [`BudgetConfig::per_day`]: one minute of budget, at least 4 MiB.
    pub burst_bytes: u64,
    /// Apply DynamicRandomAP under the cap. Default true.
    pub dynamic: bool,
    /// Seed of the admission draws. Default 0.
    pub seed: u64,
    /// DynamicRandomAP factor update interval in ns. Default 60 s.
    pub update_interval_ns: u64,
    /// Default 4096.
    pub base_size: u64,
    /// Size exponent. Default 0.3.
    pub decay: f64,
    /// Largest relative factor change per update. Default 0.25.
    pub window: f64,
    /// Ceiling on the target rate, bytes/s. Default 160 MiB/s.
    pub max_rate: u64,
}

impl BudgetConfig {
    /// A budget of `bytes_per_day` with the defaults.
    pub fn per_day(bytes_per_day: u64) -> Self {
        BudgetConfig {
            bytes_per_day,
            burst_bytes: (bytes_per_day / 1440).max(4 << 20),
            dynamic: true,
            seed: 0,
            update_interval_ns: 60_000_000_000,
            base_size: 4096,
            decay: 0.3,
            window: 0.25,
            max_rate: 160 << 20,
        }
    }

    /// `dwpd` drive writes per day of a `capacity_bytes` device.
    pub fn dwpd(dwpd: f64, capacity_bytes: u64) -> Self {
        Self::per_day((dwpd.max(0.0) * capacity_bytes as f64) as u64)
    }
}

/// The write budget admission stage.
#[derive(Clone, Debug)]
pub struct WriteBudget {
    cfg: BudgetConfig,
    rng: Xoshiro256pp,
    /// Tokens in byte·ns (bytes × `DAY_NS`), at most `burst_bytes × DAY_NS`.
    tokens: u128,
    start: Option<u64>,
    last: u64,
    admitted: u64,
    factor: f64,
    updated_at: u64,
    admitted_at_update: u64,
}

impl WriteBudget {
    /// A budget with `cfg`; its bucket fills at the first request.
    pub fn new(cfg: BudgetConfig) -> Self {
        WriteBudget {
            cfg,
            rng: Xoshiro256pp::new(cfg.seed),
            tokens: 0,
            start: None,
            last: 0,
            admitted: 0,
            factor: 1.0,
            updated_at: 0,
            admitted_at_update: 0,
        }
    }

    /// The parameters it was built with.
    pub fn config(&self) -> &BudgetConfig {
        &self.cfg
    }

    /// Bytes admitted so far.
    pub fn admitted_bytes(&self) -> u64 {
        self.admitted
    }

    /// DynamicRandomAP's current factor.
    pub fn factor(&self) -> f64 {
        self.factor
    }

    /// The guaranteed bound on admitted bytes at `now`: burst + budget × elapsed / day.
    pub fn bound(&self, now: u64) -> u128 {
        let elapsed = self.start.map_or(0, |s| now.max(self.last).saturating_sub(s));
        u128::from(self.cfg.burst_bytes) + u128::from(self.cfg.bytes_per_day) * u128::from(elapsed) / u128::from(DAY_NS)
    }

    /// Admission probability of a `len`-byte request at the current factor.
    pub fn probability(&self, len: u64) -> f64 {
        let msb = |x: u64| f64::from(64 - x.max(1).leading_zeros());
        ((msb(self.cfg.base_size) / msb(len)).powf(self.cfg.decay) * self.factor).clamp(0.0, 1.0)
    }

    fn advance(&mut self, now: u64) {
        let cap = u128::from(self.cfg.burst_bytes) * u128::from(DAY_NS);
        let Some(start) = self.start else {
            self.start = Some(now);
            self.last = now;
            self.updated_at = now;
            self.tokens = cap;
            return;
        };
        let now = now.max(self.last);
        let dt = u128::from(now - self.last);
        self.tokens = self.tokens.saturating_add(dt.saturating_mul(u128::from(self.cfg.bytes_per_day))).min(cap);
        self.last = now;
        let interval = now - self.updated_at;
        if self.cfg.dynamic && interval >= self.cfg.update_interval_ns.max(1) {
            let secs = interval as f64 / 1e9;
            let obs = (self.admitted - self.admitted_at_update) as f64 / secs;
            if obs > 0.0 {
                let rate = self.cfg.bytes_per_day as f64 / 86_400.0;
                let uptime = (now - start) as f64 / 1e9;
                let owed = (rate * (uptime + 86_400.0) - self.admitted as f64).max(0.0);
                let tgt = (self.cfg.max_rate as f64).min(owed / 86_400.0);
                let w = self.cfg.window.clamp(0.0, 1.0);
                self.factor = (self.factor * (tgt / obs).clamp(1.0 - w, 1.0 + w)).clamp(0.001, 10.0);
            }
            self.updated_at = now;
            self.admitted_at_update = self.admitted;
        }
    }
}

impl Admission for WriteBudget {
    fn name(&self) -> String {
        "budget".into()
    }

    fn decide(&mut self, req: &Request) -> Decision {
        self.advance(req.now);
        if self.cfg.dynamic && self.rng.next_f64() >= self.probability(req.len) {
            return Decision::Throttled(Throttle::Rate);
        }
        let need = u128::from(req.len) * u128::from(DAY_NS);
        if need > self.tokens {
            return Decision::Throttled(Throttle::Cap);
        }
        self.tokens -= need;
        self.admitted += req.len;
        Decision::Admit
    }
}

#[cfg(test)]
mod tests {
    use proptest::prelude::*;

    use super::*;

    const SEC: u64 = 1_000_000_000;

    fn cap_only(bytes_per_day: u64, burst: u64) -> WriteBudget {
        WriteBudget::new(BudgetConfig { burst_bytes: burst, dynamic: false, ..BudgetConfig::per_day(bytes_per_day) })
    }

    fn rd(len: u64, now: u64) -> Request {
        Request::write(1, 0, len, now)
    }

    #[test]
    fn token_bucket_by_hand() {
        // 86 400 bytes/day = 1 byte/s, burst 10.
        let mut b = cap_only(86_400, 10);
        assert_eq!(b.decide(&rd(6, 0)), Decision::Admit);
        assert_eq!(b.decide(&rd(5, 0)), Decision::Throttled(Throttle::Cap), "4 left");
        assert_eq!(b.decide(&rd(4, 0)), Decision::Admit);
        assert_eq!(b.decide(&rd(3, 2 * SEC + SEC / 2)), Decision::Throttled(Throttle::Cap), "2.5 tokens");
        assert_eq!(b.decide(&rd(3, 3 * SEC)), Decision::Admit);
        assert_eq!(b.decide(&rd(10, 1000 * SEC)), Decision::Admit, "refill stops at the burst");
        assert_eq!(b.decide(&rd(1, 1000 * SEC)), Decision::Throttled(Throttle::Cap));
        assert_eq!(b.decide(&rd(11, 5000 * SEC)), Decision::Throttled(Throttle::Cap), "larger than burst");
        assert_eq!(b.decide(&rd(1, 10 * SEC)), Decision::Admit, "time going back: no refill, no panic");
        assert_eq!(b.admitted_bytes(), 24);
        assert_eq!(b.bound(5000 * SEC), 5010);
    }

    #[test]
    fn probability_follows_the_reference_formula() {
        let b = WriteBudget::new(BudgetConfig::per_day(1 << 40));
        assert_eq!(b.probability(4096), 1.0);
        assert_eq!(b.probability(100), 1.0, "smaller than base: clamped");
        let want = (13.0f64 / 21.0).powf(0.3); // msb(4096) = 13, msb(1 MiB) = 21
        assert!((b.probability(1 << 20) - want).abs() < 1e-12);
    }

    #[test]
    fn dynamic_factor_steers_the_long_run_rate_to_the_target() {
        // Budget: 100 × 4 KiB per minute; offered: 1000 × 4 KiB per minute, for one day.
        let per_day = 100 * 4096 * 1440;
        let mut b = WriteBudget::new(BudgetConfig { burst_bytes: 1 << 50, ..BudgetConfig::per_day(per_day) });
        let (mut rate, mut cap) = (0u64, 0u64);
        for i in 0..1440 * 1000u64 {
            match b.decide(&rd(4096, i * 60 * SEC / 1000)) {
                Decision::Throttled(Throttle::Rate) => rate += 1,
                Decision::Throttled(Throttle::Cap) => cap += 1,
                _ => {}
            }
        }
        let ratio = b.admitted_bytes() as f64 / per_day as f64;
        assert!((ratio - 1.0).abs() < 0.1, "admitted {ratio:.3} of the daily budget");
        assert_eq!(cap, 0, "the hard cap never bound with a huge burst");
        assert!(rate > 1_200_000 && b.factor() < 0.2, "rate throttles {rate}, factor {}", b.factor());
    }

    #[test]
    fn decisions_are_deterministic_in_the_seed() {
        let run = |seed| {
            let mut b = WriteBudget::new(BudgetConfig { seed, ..BudgetConfig::per_day(1 << 30) });
            (0..20_000u64).map(|i| b.decide(&rd(1 << 16, i * SEC / 10))).collect::<Vec<_>>()
        };
        assert_eq!(run(1), run(1));
        assert_ne!(run(1), run(2));
    }

    #[test]
    fn dwpd_budget() {
        let c = BudgetConfig::dwpd(0.5, 2_000_000_000_000);
        assert_eq!(c.bytes_per_day, 1_000_000_000_000);
        assert_eq!(c.burst_bytes, 1_000_000_000_000 / 1440);
        assert_eq!(BudgetConfig::per_day(1000).burst_bytes, 4 << 20);
    }

    proptest! {
        #![proptest_config(ProptestConfig::with_cases(64))]

        /// Admitted bytes never exceed burst + budget × elapsed, with or without the dynamic layer.
        #[test]
        fn budget_is_never_exceeded(
            per_day in 1u64..(1 << 40),
            burst in 0u64..(8 << 20),
            dynamic in any::<bool>(),
            seed in any::<u64>(),
            start in 0u64..(1 << 50),
            reqs in prop::collection::vec((0u64..(4 << 20), 0u64..(120 * SEC)), 1..400),
        ) {
            let cfg = BudgetConfig { burst_bytes: burst, dynamic, seed, ..BudgetConfig::per_day(per_day) };
            let mut b = WriteBudget::new(cfg);
            let mut now = start;
            let mut admitted = 0u128;
            for (len, dt) in reqs {
                now += dt;
                if b.decide(&rd(len, now)) == Decision::Admit {
                    admitted += u128::from(len);
                }
                let bound = u128::from(burst) * u128::from(DAY_NS) + u128::from(per_day) * u128::from(now - start);
                prop_assert!(admitted * u128::from(DAY_NS) <= bound, "admitted {} at {}", admitted, now - start);
                prop_assert_eq!(admitted, u128::from(b.admitted_bytes()));
                prop_assert!(admitted <= b.bound(now));
            }
        }
    }
}
