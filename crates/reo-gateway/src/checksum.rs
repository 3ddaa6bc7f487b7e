//! [`Algo`]: S3's flexible checksum algorithms (CRC32, CRC32C, CRC64NVME, SHA1, SHA256) and
//! their digests, base64 as S3 sends them; and the checksum of a multipart object made of parts
//! ([`Algo::composite`]). Used by the S3 layer's payload checks and by multipart completion.

use s3s::crypto::{Checksum, Crc32, Crc32c, Crc64Nvme, Sha1, Sha256};
use s3s::dto::ChecksumAlgorithm;
use s3s::{s3_error, S3Result};

/// A flexible checksum algorithm of S3.
#[derive(Debug, Clone, Copy, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
#[serde(rename_all = "UPPERCASE")]
pub enum Algo {
    /// CRC-32 (IEEE), 4 bytes.
    Crc32,
    /// CRC-32C (Castagnoli), 4 bytes.
    Crc32c,
    /// CRC-64/NVME, 8 bytes.
    Crc64Nvme,
    /// SHA-1, 20 bytes.
    Sha1,
    /// SHA-256, 32 bytes.
    Sha256,
}

impl Algo {
    /// Every algorithm, in the order lookups by name try them.
    pub const ALL: [Algo; 5] = [Algo::Crc32, Algo::Crc32c, Algo::Crc64Nvme, Algo::Sha1, Algo::Sha256];

    /// The name S3 uses (`x-amz-sdk-checksum-algorithm`, `ChecksumAlgorithm`).
    pub fn name(self) -> &'static str {
        match self {
            Algo::Crc32 => ChecksumAlgorithm::CRC32,
            Algo::Crc32c => ChecksumAlgorithm::CRC32C,
            Algo::Crc64Nvme => ChecksumAlgorithm::CRC64NVME,
            Algo::Sha1 => ChecksumAlgorithm::SHA1,
            Algo::Sha256 => ChecksumAlgorithm::SHA256,
        }
    }

    /// Its header, `x-amz-checksum-…`.
    pub fn header(self) -> &'static str {
        match self {
            Algo::Crc32 => "x-amz-checksum-crc32",
            Algo::Crc32c => "x-amz-checksum-crc32c",
            Algo::Crc64Nvme => "x-amz-checksum-crc64nvme",
            Algo::Sha1 => "x-amz-checksum-sha1",
            Algo::Sha256 => "x-amz-checksum-sha256",
        }
    }

    /// The algorithm S3 names `name` (any case), if any.
    pub fn of_name(name: &str) -> Option<Algo> {
        Algo::ALL.into_iter().find(|a| a.name().eq_ignore_ascii_case(name))
    }

    /// The algorithm a request names (`x-amz-checksum-algorithm`), or S3's error.
    pub fn named(name: &str) -> S3Result<Algo> {
        Algo::of_name(name).ok_or_else(|| s3_error!(InvalidRequest, "Checksum algorithm {name:?} is not valid."))
    }

    /// The digest of `data`, base64 as S3 sends it.
    pub fn digest_b64(self, data: &[u8]) -> String {
        b64_encode(&self.digest(data))
    }

    /// The algorithm whose `x-amz-checksum-…` header is `name` (any case), if any.
    pub fn of_header(name: &str) -> Option<Algo> {
        Algo::ALL.into_iter().find(|a| a.header().eq_ignore_ascii_case(name))
    }

    /// Digest length in bytes.
    pub fn digest_len(self) -> usize {
        match self {
            Algo::Crc32 | Algo::Crc32c => 4,
            Algo::Crc64Nvme => 8,
            Algo::Sha1 => 20,
            Algo::Sha256 => 32,
        }
    }

    /// S3's COMPOSITE checksum of an object of parts with these (base64) checksums: the digest
    /// of their concatenated digests, then `-N`. `None` if one is not a digest of this algorithm.
    pub fn composite<'a>(self, parts: impl IntoIterator<Item = &'a str>) -> Option<String> {
        let mut raw = Vec::new();
        let mut n = 0;
        for p in parts {
            let d = b64(p).filter(|d| d.len() == self.digest_len())?;
            raw.extend_from_slice(&d);
            n += 1;
        }
        Some(format!("{}-{n}", self.digest_b64(&raw)))
    }

    /// Whether S3 offers FULL_OBJECT checksums of multipart objects for it (the CRCs, which
    /// combine across parts).
    pub fn full_object_capable(self) -> bool {
        matches!(self, Algo::Crc32 | Algo::Crc32c | Algo::Crc64Nvme)
    }

    /// An incremental digest: the same as [`Algo::digest`] of the bytes given to it in order.
    pub fn hasher(self) -> Hasher {
        match self {
            Algo::Crc32 => Hasher::Crc32(Crc32::new()),
            Algo::Crc32c => Hasher::Crc32c(Crc32c::new()),
            Algo::Crc64Nvme => Hasher::Crc64Nvme(Crc64Nvme::new()),
            Algo::Sha1 => Hasher::Sha1(Sha1::new()),
            Algo::Sha256 => Hasher::Sha256(Sha256::new()),
        }
    }

    /// The digest of `data`.
    pub fn digest(self, data: &[u8]) -> Vec<u8> {
        match self {
            Algo::Crc32 => Crc32::checksum(data).to_vec(),
            Algo::Crc32c => Crc32c::checksum(data).to_vec(),
            Algo::Crc64Nvme => Crc64Nvme::checksum(data).to_vec(),
            Algo::Sha1 => Sha1::checksum(data).as_ref().to_vec(),
            Algo::Sha256 => Sha256::checksum(data).as_ref().to_vec(),
        }
    }
}

/// A digest being computed ([`Algo::hasher`]).
pub enum Hasher {
    /// CRC-32 (IEEE).
    Crc32(Crc32),
    /// CRC-32C (Castagnoli).
    Crc32c(Crc32c),
    /// CRC-64/NVME.
    Crc64Nvme(Crc64Nvme),
    /// SHA-1.
    Sha1(Sha1),
    /// SHA-256.
    Sha256(Sha256),
}

impl Hasher {
    /// Feeds the next bytes.
    pub fn update(&mut self, data: &[u8]) {
        match self {
            Hasher::Crc32(h) => h.update(data),
            Hasher::Crc32c(h) => h.update(data),
            Hasher::Crc64Nvme(h) => h.update(data),
            Hasher::Sha1(h) => h.update(data),
            Hasher::Sha256(h) => h.update(data),
        }
    }

    /// The raw digest of all bytes fed ([`Algo::digest_len`] bytes).
    pub fn finalize(self) -> Vec<u8> {
        match self {
            Hasher::Crc32(h) => h.finalize().to_vec(),
            Hasher::Crc32c(h) => h.finalize().to_vec(),
            Hasher::Crc64Nvme(h) => h.finalize().to_vec(),
            Hasher::Sha1(h) => h.finalize().as_ref().to_vec(),
            Hasher::Sha256(h) => h.finalize().as_ref().to_vec(),
        }
    }
}

/// Decodes standard base64 (padded; surrounding whitespace ignored); `None` if invalid.
pub fn b64(s: &str) -> Option<Vec<u8>> {
    base64_simd::STANDARD.decode_to_vec(s.trim()).ok()
}

/// Encodes as standard padded base64.
pub fn b64_encode(b: &[u8]) -> String {
    base64_simd::STANDARD.encode_to_string(b)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn composite_checksums_are_s3s() {
        // ceph/s3-tests' known value: a 1,024-byte part of 'A', SHA256, one part.
        let part = Algo::Sha256.digest_b64(&[b'A'; 1024]);
        assert_eq!(part, "arcu6553sHVAiX4MjW0j7I7vD4w6R+Gz9Ok0Q9lTa+0=");
        assert_eq!(Algo::Sha256.composite([part.as_str()]).unwrap(), "Ok6Cs5b96ux6+MWQkJO7UBT5sKPBeXBLwvj/hK89smg=-1");
        assert_eq!(Algo::Sha256.composite(["bad"]), None);
    }
}
