//! Fixed, stable hashes: FNV-1a 64 for string keys, the splitmix64 finalizer as a bijective
//! 64-bit mixer, and the block key of block traces. Their values are part of the trace format
//! (a key read today must equal the key read next year), so they never change.

/// FNV-1a 64 of `bytes`: how a non-numeric key string becomes a `u64` key.
pub fn fnv1a64(bytes: &[u8]) -> u64 {
    let mut h: u64 = 0xcbf2_9ce4_8422_2325;
    for &b in bytes {
        h ^= u64::from(b);
        h = h.wrapping_mul(0x0000_0100_0000_01b3);
    }
    h
}

/// The splitmix64 finalizer: a bijection on `u64` that scatters nearby inputs (the generators'
/// own, so that keys and generated streams share one definition).
pub use reo_media::rng::mix64;

/// The key of block `block` of volume `volume` in a block trace: the volume's hash in the top
/// 24 bits plus the block number, so consecutive blocks have consecutive keys (admission's
/// sequential-run detection sees them as adjacent). For a fixed volume it is a bijection of the
/// block number, so two blocks of one volume never share a key; volumes collide only when the
/// top 24 bits of their hashes do and their blocks overlap.
pub fn block_key(volume: u64, block: u64) -> u64 {
    (mix64(volume) << 40).wrapping_add(block)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn fnv_matches_reference_vectors() {
        assert_eq!(fnv1a64(b""), 0xcbf2_9ce4_8422_2325);
        assert_eq!(fnv1a64(b"a"), 0xaf63_dc4c_8601_ec8c);
        assert_eq!(fnv1a64(b"foobar"), 0x8594_4171_f739_67e8);
    }

    #[test]
    fn block_keys_are_distinct_within_and_across_volumes() {
        let mut seen = std::collections::HashSet::new();
        for v in 0..4 {
            for b in 0..1000 {
                assert!(seen.insert(block_key(v, b)));
            }
        }
    }
}
