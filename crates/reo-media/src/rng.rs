//! The seeded random generators of every crate: [`SplitMix64`] and [`Xoshiro256pp`] (xoshiro256++
//! by Blackman & Vigna, seeded through splitmix64), plus [`mix64`], the splitmix64 finalizer.
//!
//! Small, fast and fixed forever: a generator's output for a given seed never changes, because
//! generated traces, power-cut plans, admission coin flips and the reference figures of the tests
//! are pinned to it (hence no `rand` crate, whose streams may change between versions). It lives
//! in the lowest crate so that the media's fault injection, the cache, the traces and the
//! simulator all draw from the same code.

/// The splitmix64 increment (the golden ratio in 64-bit fixed point).
const GOLDEN_GAMMA: u64 = 0x9e37_79b9_7f4a_7c15;

/// The splitmix64 finalizer: a bijection on `u64` that scatters nearby inputs.
#[inline]
pub fn mix64(mut x: u64) -> u64 {
    x = (x ^ (x >> 30)).wrapping_mul(0xbf58_476d_1ce4_e5b9);
    x = (x ^ (x >> 27)).wrapping_mul(0x94d0_49bb_1331_11eb);
    x ^ (x >> 31)
}

/// splitmix64 (Steele, Lea & Flood): one `u64` of state, for seeding and for small needs.
#[derive(Debug, Clone)]
pub struct SplitMix64 {
    state: u64,
}

impl SplitMix64 {
    /// The generator whose state starts at `seed` (any value, 0 included).
    pub const fn new(seed: u64) -> Self {
        SplitMix64 { state: seed }
    }

    /// Advances the state and returns the next output.
    #[inline]
    pub fn next_u64(&mut self) -> u64 {
        self.state = self.state.wrapping_add(GOLDEN_GAMMA);
        mix64(self.state)
    }

    /// `next_u64() % n` (`n` > 0): slightly biased unless `n` is a power of two, and kept so
    /// because the power-cut plans of seeded tests are pinned to it.
    #[inline]
    pub fn below_mod(&mut self, n: u64) -> u64 {
        self.next_u64() % n
    }
}

/// xoshiro256++ (Blackman & Vigna), seeded with splitmix64.
#[derive(Debug, Clone)]
pub struct Xoshiro256pp {
    s: [u64; 4],
}

impl Xoshiro256pp {
    /// The generator for `seed` (any value, 0 included): four splitmix64 outputs as its state.
    pub fn new(seed: u64) -> Self {
        let mut sm = SplitMix64::new(seed);
        Xoshiro256pp { s: [(); 4].map(|_| sm.next_u64()) }
    }

    /// The next 64 uniformly distributed bits (xoshiro256++).
    #[inline]
    pub fn next_u64(&mut self) -> u64 {
        let s = &mut self.s;
        let out = s[0].wrapping_add(s[3]).rotate_left(23).wrapping_add(s[0]);
        let t = s[1] << 17;
        s[2] ^= s[0];
        s[3] ^= s[1];
        s[1] ^= s[2];
        s[0] ^= s[3];
        s[2] ^= t;
        s[3] = s[3].rotate_left(45);
        out
    }

    /// Uniform in `[0, 1)` with 53 random bits.
    #[inline]
    pub fn next_f64(&mut self) -> f64 {
        (self.next_u64() >> 11) as f64 * (1.0 / (1u64 << 53) as f64)
    }

    /// Uniform in `[0, n)` (`n` > 0; multiply-shift, bias below 2^-32 for n < 2^32).
    #[inline]
    pub fn below(&mut self, n: u64) -> u64 {
        ((u128::from(self.next_u64()) * u128::from(n)) >> 64) as u64
    }

    /// True with probability `p`.
    #[inline]
    pub fn chance(&mut self, p: f64) -> bool {
        self.next_f64() < p
    }

    /// Standard normal, by Box-Muller (one of the pair; simplicity over speed).
    pub fn normal(&mut self) -> f64 {
        let u1 = 1.0 - self.next_f64(); // (0, 1]
        let u2 = self.next_f64();
        (-2.0 * u1.ln()).sqrt() * (std::f64::consts::TAU * u2).cos()
    }

    /// Exponential with the given rate (mean `1 / rate`).
    pub fn exp(&mut self, rate: f64) -> f64 {
        -(1.0 - self.next_f64()).ln() / rate
    }

    /// A uniformly random permutation of `0..n` (Fisher-Yates).
    pub fn permutation(&mut self, n: u32) -> Vec<u32> {
        let mut p: Vec<u32> = (0..n).collect();
        for i in (1..p.len()).rev() {
            let j = self.below(i as u64 + 1) as usize;
            p.swap(i, j);
        }
        p
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn splitmix_reference_values() {
        // First outputs for seed 0 (reference splitmix64).
        let mut r = SplitMix64::new(0);
        assert_eq!(r.next_u64(), 0xE220_A839_7B1D_CDAF);
        assert_eq!(r.next_u64(), 0x6E78_9E6A_A1B9_65F4);
    }

    #[test]
    fn xoshiro_matches_reference_output() {
        // Reference: xoshiro256plusplus.c with s = {1, 2, 3, 4}.
        let mut r = Xoshiro256pp { s: [1, 2, 3, 4] };
        assert_eq!(r.next_u64(), 41_943_041);
        assert_eq!(r.next_u64(), 58_720_359);
        assert_eq!(r.next_u64(), 3_588_806_011_781_223);
    }

    #[test]
    fn deterministic_and_seed_sensitive() {
        let a: Vec<_> = (0..4)
            .map({
                let mut r = Xoshiro256pp::new(7);
                move |_| r.next_u64()
            })
            .collect();
        let mut r = Xoshiro256pp::new(7);
        assert_eq!(a, (0..4).map(|_| r.next_u64()).collect::<Vec<_>>());
        assert_ne!(Xoshiro256pp::new(7).next_u64(), Xoshiro256pp::new(8).next_u64());
    }

    #[test]
    fn rng_is_deterministic_and_uniformish() {
        let (mut a, mut b) = (Xoshiro256pp::new(7), Xoshiro256pp::new(7));
        assert_eq!((0..5).map(|_| a.next_u64()).collect::<Vec<_>>(), (0..5).map(|_| b.next_u64()).collect::<Vec<_>>());
        assert_ne!(Xoshiro256pp::new(8).next_u64(), Xoshiro256pp::new(7).next_u64());
        let mean = (0..100_000).map(|_| a.next_f64()).sum::<f64>() / 100_000.0;
        assert!((mean - 0.5).abs() < 0.01, "mean {mean}");
    }

    #[test]
    fn distributions_have_the_right_moments() {
        let mut r = Xoshiro256pp::new(1);
        let n = 200_000;
        let (mut s, mut s2, mut e) = (0.0, 0.0, 0.0);
        for _ in 0..n {
            let z = r.normal();
            s += z;
            s2 += z * z;
            e += r.exp(4.0);
            let u = r.next_f64();
            assert!((0.0..1.0).contains(&u));
            assert!(r.below(10) < 10);
        }
        let n = f64::from(n);
        assert!((s / n).abs() < 0.01, "mean {}", s / n);
        assert!((s2 / n - 1.0).abs() < 0.02, "var {}", s2 / n);
        assert!((e / n - 0.25).abs() < 0.005, "exp mean {}", e / n);
    }

    #[test]
    fn permutation_is_a_permutation() {
        let mut p = Xoshiro256pp::new(3).permutation(1000);
        assert_ne!(p, (0..1000).collect::<Vec<_>>());
        p.sort_unstable();
        assert_eq!(p, (0..1000).collect::<Vec<_>>());
    }
}
