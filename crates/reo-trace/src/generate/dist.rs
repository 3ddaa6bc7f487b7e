//! The distributions the generators draw from: [`Zipf`] (generalized, `p_r ∝ (r + h)^−α`,
//! sampled by inverse CDF with binary search; [`zipf_trace`] draws keys from it) and [`lognormal_sizes`] (rescaled to a target
//! mean, clamped).

use reo_media::rng::Xoshiro256pp;

/// Ranks `0..n` with `P(rank r) ∝ (r + 1 + h)^−α`.
#[derive(Debug, Clone)]
pub struct Zipf {
    cdf: Vec<f64>,
}

impl Zipf {
    /// `n` ≥ 1 ranks, skew `alpha` ≥ 0 (0 = uniform), head flattening `h` ≥ 0.
    pub fn new(n: u64, alpha: f64, h: f64) -> Self {
        assert!(n >= 1, "Zipf over no ranks");
        let mut cdf = Vec::with_capacity(n as usize);
        let mut sum = 0.0;
        for r in 0..n {
            sum += (r as f64 + 1.0 + h).powf(-alpha);
            cdf.push(sum);
        }
        for c in &mut cdf {
            *c /= sum;
        }
        Zipf { cdf }
    }

    /// Number of ranks (`n`).
    pub fn len(&self) -> u64 {
        self.cdf.len() as u64
    }

    /// Whether there are no ranks.
    pub fn is_empty(&self) -> bool {
        self.cdf.is_empty()
    }

    /// A rank (0 = most popular).
    pub fn sample(&self, rng: &mut Xoshiro256pp) -> u64 {
        let u = rng.next_f64();
        (self.cdf.partition_point(|&c| c <= u) as u64).min(self.len() - 1)
    }

    /// The probability of rank `r`.
    pub fn weight(&self, r: u64) -> f64 {
        let r = r as usize;
        self.cdf[r] - if r == 0 { 0.0 } else { self.cdf[r - 1] }
    }

    /// The probability mass of the most popular `fraction` of ranks.
    pub fn top_share(&self, fraction: f64) -> f64 {
        let k = ((self.len() as f64 * fraction).round() as usize).clamp(1, self.cdf.len());
        self.cdf[k - 1]
    }
}

/// `requests` keys drawn from Zipf(`alpha`) over `objects` ranks, as keys `1..=objects` (rank + 1,
/// 1 the most popular), deterministic in `seed`: the policies' miss-ratio reference workload
/// (docs/REFERENCES.md §A5) and the key stream of cache tests and `reo bench cache`.
pub fn zipf_trace(objects: u64, requests: usize, alpha: f64, seed: u64) -> Vec<u64> {
    let z = Zipf::new(objects, alpha, 0.0);
    let mut rng = Xoshiro256pp::new(seed);
    (0..requests).map(|_| z.sample(&mut rng) + 1).collect()
}

/// `n` sizes drawn from LogNormal(ln(mean) − σ²/2, σ), then repeatedly rescaled to `mean` and
/// clamped to `[min, max]` (so the clamped sample's mean is `mean`, up to rounding, whenever
/// `min ≤ mean ≤ max`).
pub fn lognormal_sizes(rng: &mut Xoshiro256pp, n: usize, mean: f64, sigma: f64, min: u64, max: u64) -> Vec<u64> {
    let mu = mean.ln() - sigma * sigma / 2.0;
    let mut s: Vec<f64> = (0..n).map(|_| (mu + sigma * rng.normal()).exp()).collect();
    for _ in 0..20 {
        let avg = s.iter().sum::<f64>() / n.max(1) as f64;
        if avg <= 0.0 || (avg / mean - 1.0).abs() < 1e-6 {
            break;
        }
        for x in &mut s {
            *x = (*x * mean / avg).clamp(min as f64, max as f64);
        }
    }
    s.into_iter().map(|x| (x.round() as u64).clamp(min, max)).collect()
}

/// Rescales `sizes` (item `i` counted `weights[i]` times) so their weighted mean is `mean`,
/// clamping to `[min, max]` and repeating until the clamped mean is right (up to rounding).
pub fn rescale_mean(sizes: &mut [u64], weights: &[u64], mean: f64, min: u64, max: u64) {
    let total: f64 = weights.iter().map(|&w| w as f64).sum();
    let mut s: Vec<f64> = sizes.iter().map(|&x| x as f64).collect();
    for _ in 0..20 {
        let avg = s.iter().zip(weights).map(|(&x, &w)| x * w as f64).sum::<f64>() / total.max(1.0);
        if avg <= 0.0 || (avg / mean - 1.0).abs() < 1e-6 {
            break;
        }
        for x in &mut s {
            *x = (*x * mean / avg).clamp(min as f64, max as f64);
        }
    }
    for (out, x) in sizes.iter_mut().zip(s) {
        *out = (x.round() as u64).clamp(min, max);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn zipf_top_share_matches_reference_table() {
        // docs/REFERENCES.md §A9: top-10 % share for 4,000 objects.
        for (alpha, share) in [(0.6, 0.38), (0.8, 0.56), (1.0, 0.74), (1.2, 0.88)] {
            let z = Zipf::new(4000, alpha, 0.0);
            assert!((z.top_share(0.1) - share).abs() < 0.015, "α {alpha}: {}", z.top_share(0.1));
        }
    }

    #[test]
    fn zipf_samples_follow_the_cdf() {
        let z = Zipf::new(100, 1.0, 0.0);
        let mut r = Xoshiro256pp::new(5);
        let mut top10 = 0;
        let n = 100_000;
        for _ in 0..n {
            let s = z.sample(&mut r);
            assert!(s < 100);
            top10 += u32::from(s < 10);
        }
        assert!((f64::from(top10) / f64::from(n) - z.top_share(0.1)).abs() < 0.01);
        assert_eq!(Zipf::new(1, 1.0, 0.0).sample(&mut r), 0);
    }

    #[test]
    fn zipf_frequencies_follow_the_weights() {
        let n = 1000u64;
        let t = zipf_trace(n, 200_000, 1.0, 3);
        assert!(t.iter().all(|&k| (1..=n).contains(&k)));
        let h: f64 = (1..=n).map(|i| 1.0 / i as f64).sum();
        for rank in [1u64, 2, 10] {
            let seen = t.iter().filter(|&&k| k == rank).count() as f64 / t.len() as f64;
            let want = 1.0 / (rank as f64 * h);
            assert!((seen - want).abs() < 0.1 * want + 0.001, "rank {rank}: {seen} vs {want}");
        }
        assert_eq!(t, zipf_trace(n, 200_000, 1.0, 3));
        assert_ne!(t, zipf_trace(n, 200_000, 1.0, 4));
    }

    #[test]
    fn weighted_rescale_hits_the_weighted_mean() {
        let mut s = vec![1000, 2000, 9000];
        rescale_mean(&mut s, &[5, 1, 1], 1500.0, 100, 8000);
        let mean = (s[0] * 5 + s[1] + s[2]) as f64 / 7.0;
        assert!((mean / 1500.0 - 1.0).abs() < 1e-3, "{s:?}");
        assert!(s.iter().all(|&x| (100..=8000).contains(&x)));
    }

    #[test]
    fn sizes_have_target_mean_and_bounds() {
        let mut r = Xoshiro256pp::new(9);
        let s = lognormal_sizes(&mut r, 4000, 4.4e6, 1.0, 4096, 64 << 20);
        let mean = s.iter().sum::<u64>() as f64 / 4000.0;
        assert!((mean / 4.4e6 - 1.0).abs() < 1e-3, "mean {mean}");
        assert!(s.iter().all(|&x| (4096..=64 << 20).contains(&x)));
        let mut sorted = s.clone();
        sorted.sort_unstable();
        let median = sorted[2000] as f64;
        assert!((median / 2.67e6 - 1.0).abs() < 0.1, "median {median}");
    }
}
