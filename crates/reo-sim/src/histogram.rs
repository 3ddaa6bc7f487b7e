//! A log-bucketed latency histogram in constant memory: 16 buckets per power of two from 1 µs,
//! so any quantile is within 1/16 (about 4.4 %) of the true value.

/// Latencies in microseconds.
#[derive(Debug, Clone)]
pub struct Histogram {
    counts: Vec<u64>,
    total: u64,
}

const SUB: u32 = 16;

impl Default for Histogram {
    fn default() -> Self {
        Histogram { counts: vec![0; 64 * SUB as usize], total: 0 }
    }
}

impl Histogram {
    fn bucket(us: f64) -> usize {
        // floor(log2 v) is the binary exponent and the top 4 mantissa bits are floor(16 · frac):
        // read them from the bits (once per replayed request, so no log2/powi).
        let bits = us.max(1.0).to_bits();
        let exp = ((bits >> 52) & 0x7ff) - 1023;
        let sub = (bits >> (52 - SUB.trailing_zeros())) & u64::from(SUB - 1);
        (exp * u64::from(SUB) + sub).min(u64::from(64 * SUB - 1)) as usize
    }

    fn value(bucket: usize) -> f64 {
        let (exp, sub) = (bucket as u32 / SUB, bucket as u32 % SUB);
        2f64.powi(exp as i32) * (1.0 + (f64::from(sub) + 0.5) / f64::from(SUB))
    }

    pub fn record(&mut self, secs: f64) {
        self.counts[Self::bucket(secs * 1e6)] += 1;
        self.total += 1;
    }

    /// The `q` quantile in seconds (0 when empty).
    pub fn quantile(&self, q: f64) -> f64 {
        if self.total == 0 {
            return 0.0;
        }
        let rank = ((q * self.total as f64).ceil() as u64).clamp(1, self.total);
        let mut seen = 0;
        for (b, &c) in self.counts.iter().enumerate() {
            seen += c;
            if seen >= rank {
                return Self::value(b) * 1e-6;
            }
        }
        Self::value(self.counts.len() - 1) * 1e-6
    }
}

#[cfg(test)]
mod tests {
    #[test]
    fn bucket_matches_log2_definition() {
        for v in [1.0f64, 1.03, 1.0625, 1.99, 2.0, 3.0, 1000.0, 123_456.7, 1e12, 1e300] {
            let exp = v.log2().floor();
            let frac = v / 2f64.powf(exp) - 1.0;
            let want = ((exp as u64) * 16 + (frac * 16.0) as u64).min(64 * 16 - 1) as usize;
            assert_eq!(super::Histogram::bucket(v), want, "{v}");
        }
        assert_eq!(super::Histogram::bucket(0.2), 0);
        assert_eq!(super::Histogram::bucket(f64::NAN), 0);
        assert_eq!(super::Histogram::bucket(f64::INFINITY), 64 * 16 - 1);
    }
    use super::*;

    #[test]
    fn quantiles_are_within_the_bucket_resolution() {
        let mut h = Histogram::default();
        for i in 1..=1000 {
            h.record(f64::from(i) * 1e-4); // 0.1 ms … 100 ms
        }
        for (q, want) in [(0.5, 0.05), (0.99, 0.099), (1.0, 0.1)] {
            let got = h.quantile(q);
            assert!((got - want).abs() / want < 0.05, "q{q}: {got} vs {want}");
        }
        assert_eq!(Histogram::default().quantile(0.99), 0.0);
    }
}
