//! Fragment fingerprints and the fragment descriptor the dedup policies take.
//!
//! * [`Fingerprint`]: BLAKE3-256 of a fragment's bytes, collision resistant, so a match is trusted
//!   without a byte compare, and fast enough to fingerprint every fragment (docs/REFERENCES.md §A7).
//!   A simulator can instead derive one from a trace's content id
//!   ([`Fingerprint::from_content_id`]) or take raw bytes.
//! * [`Chunk`]: what [`DedupPolicy::update`](super::DedupPolicy::update) needs to know about a
//!   fragment: its fingerprint, its size, and its size once compressed (CD-ARC stores that many bytes;
//!   the other policies ignore it). [`Chunk::of`] computes both from the bytes (LZ4 block format).
//! * Fingerprint-keyed maps hash only the first 8 bytes (already uniform for BLAKE3; mixed for ids).

use std::fmt;
use std::hash::{Hash, Hasher};

use reo_media::rng::SplitMix64;

/// BLAKE3-256 digest of a fragment's content.
#[derive(Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
pub struct Fingerprint([u8; 32]);

impl Fingerprint {
    /// Fingerprint of `data`.
    pub fn of(data: &[u8]) -> Self {
        Fingerprint(*blake3::hash(data).as_bytes())
    }

    /// A fingerprint given as raw bytes (e.g. read back from an index).
    pub const fn from_bytes(bytes: [u8; 32]) -> Self {
        Fingerprint(bytes)
    }

    /// Simulator fingerprint of a trace's content id: distinct ids give distinct fingerprints (the id
    /// is kept verbatim in bytes 8..16) and the first 8 bytes are a bijective mix of it, so the maps'
    /// prefix hash stays uniform. Not a hash of any bytes; do not mix with [`Fingerprint::of`].
    pub fn from_content_id(id: u64) -> Self {
        let mut st = SplitMix64::new(id.wrapping_sub(0x9e37_79b9_7f4a_7c15));
        let mut b = [0u8; 32];
        b[..8].copy_from_slice(&st.next_u64().to_le_bytes());
        b[8..16].copy_from_slice(&id.to_le_bytes());
        Fingerprint(b)
    }

    /// The 32 raw bytes.
    pub const fn as_bytes(&self) -> &[u8; 32] {
        &self.0
    }

    /// First 8 bytes, little-endian: the map hash.
    #[inline]
    pub fn prefix(&self) -> u64 {
        u64::from_le_bytes(self.0[..8].try_into().expect("8 bytes"))
    }
}

impl Hash for Fingerprint {
    #[inline]
    fn hash<H: Hasher>(&self, state: &mut H) {
        state.write_u64(self.prefix());
    }
}

impl fmt::Debug for Fingerprint {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "fp:")?;
        self.0[..8].iter().try_for_each(|b| write!(f, "{b:02x}"))
    }
}

impl fmt::Display for Fingerprint {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        self.0.iter().try_for_each(|b| write!(f, "{b:02x}"))
    }
}

/// LZ4 (block format) compression of a fragment, as CD-ARC would store it.
pub fn compress(data: &[u8]) -> Vec<u8> {
    lz4_flex::block::compress(data)
}

/// Inverse of [`compress`], given the original length.
pub fn decompress(data: &[u8], len: usize) -> Option<Vec<u8>> {
    lz4_flex::block::decompress(data, len).ok()
}

/// A fragment as the dedup policies see it.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Chunk {
    /// Fingerprint of the fragment's bytes (dedup identity).
    pub fp: Fingerprint,
    /// Fragment bytes (what D-LRU and D-ARC store).
    pub size: u32,
    /// Bytes once compressed, ≤ `size` (what CD-ARC stores). Incompressible data is stored raw.
    pub compressed: u32,
}

impl Chunk {
    /// Fingerprint and compressed length of `data` (compressed with [`compress`]).
    pub fn of(data: &[u8]) -> Self {
        let size = u32::try_from(data.len()).expect("fragment under 4 GiB");
        let compressed = (compress(data).len() as u32).min(size);
        Chunk { fp: Fingerprint::of(data), size, compressed }
    }

    /// Simulator chunk: content `id` of `size` bytes compressing by `ratio` (≥ 1; 2.0 halves it).
    pub fn sim(id: u64, size: u32, ratio: f64) -> Self {
        let compressed = ((f64::from(size) / ratio.max(1.0)).ceil() as u32).clamp(1.min(size), size);
        Chunk { fp: Fingerprint::from_content_id(id), size, compressed }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn blake3_fingerprint_of_known_input() {
        // BLAKE3 test vector: the hash of the empty input.
        assert_eq!(
            Fingerprint::of(b"").to_string(),
            "af1349b9f5f9a1a6a0404dea36dcc9499bcb25c9adc112b7cc9a93cae41f3262"
        );
        assert_eq!(Fingerprint::of(b"abc"), Fingerprint::of(b"abc"));
        assert_ne!(Fingerprint::of(b"abc"), Fingerprint::of(b"abd"));
        let fp = Fingerprint::of(b"x");
        assert_eq!(Fingerprint::from_bytes(*fp.as_bytes()), fp);
    }

    #[test]
    fn content_ids_map_to_distinct_fingerprints() {
        let fps: std::collections::HashSet<_> = (0..10_000).map(Fingerprint::from_content_id).collect();
        assert_eq!(fps.len(), 10_000);
        let prefixes: std::collections::HashSet<_> = fps.iter().map(|f| f.prefix() >> 48).collect();
        assert!(prefixes.len() > 9_000, "prefix hash not spread: {}", prefixes.len());
    }

    #[test]
    fn chunk_compression_round_trips() {
        let text = b"reo reo reo reo reo reo reo reo reo reo reo reo reo reo".repeat(100);
        let c = Chunk::of(&text);
        assert_eq!(c.size as usize, text.len());
        assert!(c.compressed * 4 < c.size, "repetitive text compresses: {c:?}");
        assert_eq!(decompress(&compress(&text), text.len()).unwrap(), text);
        let mut rng = reo_media::rng::Xoshiro256pp::new(1);
        let noise: Vec<u8> = (0..4096).map(|_| rng.next_u64() as u8).collect();
        assert_eq!(Chunk::of(&noise).compressed, 4096, "incompressible data stored raw");
        assert_eq!(Chunk::sim(1, 4096, 2.0).compressed, 2048);
        assert_eq!(Chunk::sim(1, 4096, 0.5).compressed, 4096);
    }
}
