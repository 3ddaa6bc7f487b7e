//! Key hashing: a folded-multiply mixer for `u64` keys, and a [`BuildHasher`] around it.
//!
//! Object keys are already well-distributed ids (or sequential ranks in the simulator), so a
//! cryptographic or DoS-resistant hash (std's SipHash) is wasted work on the hot path. One 64×64→128
//! multiply folded back to 64 bits mixes every input bit into both the low bits (hashbrown's bucket
//! index) and the top 7 bits (its control tag). The same function hashes keys in the policies' index,
//! and [`KeyBuildHasher`] lets other key-indexed maps of the cache manager use it too.

use std::hash::{BuildHasher, Hasher};

/// Odd constant (the 64-bit golden ratio) used as the multiplier.
const MUL: u64 = 0x9e37_79b9_7f4a_7c15;
/// Xored in first so that key 0 does not hash to 0.
const SEED: u64 = 0x243f_6a88_85a3_08d3;

/// Hash of one `u64` key: `lo ^ hi` of the 128-bit product `(key ^ SEED) · MUL`.
#[inline]
pub fn hash_key(key: u64) -> u64 {
    let m = u128::from(key ^ SEED) * u128::from(MUL);
    (m as u64) ^ ((m >> 64) as u64)
}

/// [`Hasher`] for `u64`-like keys; arbitrary byte input is folded 8 bytes at a time.
#[derive(Clone, Copy, Debug, Default)]
pub struct KeyHasher {
    state: u64,
}

impl Hasher for KeyHasher {
    #[inline]
    fn finish(&self) -> u64 {
        self.state
    }

    #[inline]
    fn write_u64(&mut self, x: u64) {
        self.state = hash_key(self.state ^ x);
    }

    fn write(&mut self, bytes: &[u8]) {
        let mut chunks = bytes.chunks_exact(8);
        for c in &mut chunks {
            self.write_u64(u64::from_le_bytes(c.try_into().expect("8-byte chunk")));
        }
        let rest = chunks.remainder();
        if !rest.is_empty() {
            let mut buf = [0u8; 8];
            buf[..rest.len()].copy_from_slice(rest);
            // The length tag keeps "ab" and "ab\0" apart.
            self.write_u64(u64::from_le_bytes(buf) ^ ((rest.len() as u64) << 59));
        }
    }
}

/// [`BuildHasher`] producing [`KeyHasher`]s: `HashMap<Key, V, KeyBuildHasher>`.
#[derive(Clone, Copy, Debug, Default)]
pub struct KeyBuildHasher;

impl BuildHasher for KeyBuildHasher {
    type Hasher = KeyHasher;
    #[inline]
    fn build_hasher(&self) -> KeyHasher {
        KeyHasher::default()
    }
}

/// Hasher of client-chosen byte keys: the same folded multiply, keyed by two per-table secrets.
///
/// Every 8-byte word is xored with the running state and the first secret, then multiplied by the
/// second secret (forced odd) and folded — the construction of foldhash. Without the secrets an
/// attacker cannot aim keys at one bucket, which is the resistance a hash table needs (SipHash's
/// cryptographic strength is not); it costs a few nanoseconds per key instead of SipHash's ~20.
#[derive(Clone, Copy, Debug)]
pub struct SeededKeyHasher {
    seed: u64,
    mul: u64,
}

impl SeededKeyHasher {
    /// Secrets from std's per-process random keys.
    pub fn random() -> Self {
        let r = std::hash::RandomState::new();
        Self { seed: r.hash_one(0x5eed_u64), mul: r.hash_one(0x006d_756c_u64) | 1 }
    }

    /// Hash of a byte key.
    #[inline]
    pub fn hash(&self, bytes: &[u8]) -> u64 {
        let mix = |state: u64, word: u64| {
            let m = u128::from(state ^ word ^ self.seed) * u128::from(self.mul);
            (m as u64) ^ ((m >> 64) as u64)
        };
        // The length goes in first: keys that differ only by trailing zero bytes stay apart.
        let mut state = mix(self.seed, bytes.len() as u64);
        let mut chunks = bytes.chunks_exact(8);
        for c in &mut chunks {
            state = mix(state, u64::from_le_bytes(c.try_into().expect("8-byte chunk")));
        }
        let rest = chunks.remainder();
        if !rest.is_empty() {
            let mut buf = [0u8; 8];
            buf[..rest.len()].copy_from_slice(rest);
            state = mix(state, u64::from_le_bytes(buf));
        }
        // A last round so that the final word's bits reach the top bits (hashbrown's tags) too.
        mix(state, 0)
    }
}

impl Default for SeededKeyHasher {
    fn default() -> Self {
        Self::random()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::collections::HashMap;

    #[test]
    fn hasher_matches_hash_key_for_u64() {
        for k in [0u64, 1, 2, 42, u64::MAX] {
            assert_eq!(KeyBuildHasher.hash_one(k), hash_key(k));
        }
    }

    #[test]
    fn sequential_keys_spread_over_low_and_high_bits() {
        // Bucket index (low bits) and control tag (top 7 bits) must both be near uniform for ranks 1..n.
        let n = 1 << 16;
        let mut low = vec![0u32; 1024];
        let mut top = [0u32; 128];
        for k in 1..=n as u64 {
            let h = hash_key(k);
            low[(h & 1023) as usize] += 1;
            top[(h >> 57) as usize] += 1;
        }
        let (lo_min, lo_max) = (low.iter().min().unwrap(), low.iter().max().unwrap());
        assert!(*lo_min > 64 / 2 && *lo_max < 64 * 2, "low bits skewed: {lo_min}..{lo_max}");
        let (t_min, t_max) = (top.iter().min().unwrap(), top.iter().max().unwrap());
        assert!(*t_min > 512 / 2 && *t_max < 512 * 2, "top bits skewed: {t_min}..{t_max}");
    }

    #[test]
    fn byte_input_distinguishes_trailing_zeros() {
        let h = |b: &[u8]| {
            let mut s = KeyHasher::default();
            s.write(b);
            s.finish()
        };
        assert_ne!(h(b"ab"), h(b"ab\0"));
        assert_ne!(h(b"abcdefgh"), h(b"abcdefgh\0"));
        let m: HashMap<&str, u32, KeyBuildHasher> = [("a", 1), ("b", 2)].into_iter().collect();
        assert_eq!(m["b"], 2);
    }

    #[test]
    fn seeded_hasher_separates_keys_and_differs_per_table() {
        let a = SeededKeyHasher::random();
        let b = SeededKeyHasher::random();
        assert_ne!(a.hash(b"ab"), a.hash(b"ab\0"));
        assert_ne!(a.hash(b"abcdefgh"), a.hash(b"abcdefgh\0"));
        assert_eq!(a.hash(b"bucket/key"), a.hash(b"bucket/key"));
        assert_ne!(a.hash(b"bucket/key"), b.hash(b"bucket/key"), "secrets differ per table");
        // Keys differing in one byte spread over buckets and tags.
        let n = 1 << 16;
        let mut low = vec![0u32; 1024];
        let mut top = [0u32; 128];
        for k in 0..n as u64 {
            let h = a.hash(format!("photos/{k:08}.jpg").as_bytes());
            low[(h & 1023) as usize] += 1;
            top[(h >> 57) as usize] += 1;
        }
        // A fair hash puts Poisson(64) keys in each of the 1,024 low buckets: a bound of 32 fails
        // one run in 130 by chance (P(X <= 32) is 7e-6 per bucket); 16 and 128 one in 10^8.
        assert!(low.iter().all(|&c| c > 64 / 4 && c < 64 * 2), "low bits skewed");
        assert!(top.iter().all(|&c| c > 512 / 2 && c < 512 * 2), "top bits skewed");
    }
}
