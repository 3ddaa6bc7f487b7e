//! Bytes for requests, without storing any: a shared zero buffer for everything the store only
//! sizes (it keeps no bytes on simulated media), and synthesized contents where bytes matter —
//! dedup fingerprints its fragments and CD-ARC compresses them.
//!
//! A synthesized fragment is a pure function of (content id, fragment number): its first half
//! pseudo-random words, its second half zeros, so equal content ids give equal bytes (dedup
//! finds them) and LZ4 halves them (about the 2:1 CacheDedup reports for its compressed traces).

use reo_media::rng::SplitMix64;

/// Content bytes for replay requests.
pub struct Contents {
    zeros: Vec<u8>,
    scratch: Vec<u8>,
}

impl Contents {
    /// Buffers for objects up to `max_len` bytes (the zero buffer is allocated zeroed and never
    /// written, so it costs address space, not memory).
    pub fn new(max_len: usize) -> Contents {
        Contents { zeros: vec![0u8; max_len], scratch: Vec::new() }
    }

    /// `len` bytes whose contents do not matter.
    pub fn zeros(&mut self, len: u64) -> &[u8] {
        if self.zeros.len() < len as usize {
            self.zeros = vec![0u8; len as usize];
        }
        &self.zeros[..len as usize]
    }

    /// Fragment `frag` (of `len` bytes) of content `id`.
    pub fn synthesize(&mut self, id: u64, frag: u32, len: u64) -> &[u8] {
        let len = len as usize;
        self.scratch.clear();
        self.scratch.resize(len, 0);
        let mut state = SplitMix64::new(id ^ (u64::from(frag) << 48) ^ 0x5eed_c0de);
        let half = len / 2;
        for word in self.scratch[..half].chunks_mut(8) {
            let v = state.next_u64().to_le_bytes();
            word.copy_from_slice(&v[..word.len()]);
        }
        &self.scratch
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn equal_ids_give_equal_bytes_and_different_ids_differ() {
        let mut c = Contents::new(16);
        let a = c.synthesize(7, 0, 4096).to_vec();
        let b = c.synthesize(7, 0, 4096).to_vec();
        let d = c.synthesize(8, 0, 4096).to_vec();
        let e = c.synthesize(7, 1, 4096).to_vec();
        assert_eq!(a, b);
        assert_ne!(a, d);
        assert_ne!(a, e);
        assert!(a[2048..].iter().all(|&x| x == 0) && a[..2048].iter().any(|&x| x != 0));
        assert_eq!(c.zeros(100).len(), 100);
    }
}
