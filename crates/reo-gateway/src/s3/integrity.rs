//! Payload integrity: a PUT's or part's body is checked against every digest its client sent
//! before anything of it is stored, so that bytes damaged on the way are refused, never cached,
//! flushed or served.
//!
//! Digests a client can send, and who checks them:
//! - `x-amz-content-sha256` with the body's SHA-256 (a signed payload): s3s's body stream checks
//!   it while it is read; a mismatch ends the stream with an error that [`body_error`] turns into
//!   S3's `XAmzContentSHA256Mismatch`. aws-chunked bodies: s3s checks each chunk's signature and
//!   the trailer's ([`body_error`]: `SignatureDoesNotMatch`).
//! - `Content-MD5`: [`Claims::check`] (`BadDigest`); the body's MD5 is computed anyway (it is the
//!   object's ETag).
//! - One flexible checksum, `x-amz-checksum-{crc32,crc32c,crc64nvme,sha1,sha256}`, as a header or
//!   as the aws-chunked trailer `x-amz-trailer` announces: [`Claims::check`] (`BadDigest`),
//!   computed as the body streams ([`crate::body::Digests`] with [`Claims::algo`]).
//!
//! Malformed digests are refused before the body is read (`InvalidDigest`, `InvalidRequest`).

use std::collections::BTreeMap;

use http::HeaderMap;
use s3s::dto::{ChecksumAlgorithm, ChecksumMode, PutObjectInput, UploadPartInput};
use s3s::{s3_error, S3Error, S3Result};

pub use crate::checksum::Algo;

/// The digest fields of a PUT or an UploadPart (headers, or a POST's form fields).
#[derive(Default)]
pub struct Sent<'a> {
    pub content_md5: Option<&'a str>,
    pub algorithm: Option<&'a ChecksumAlgorithm>,
    /// `(algorithm, base64 value)` of each `x-amz-checksum-*` sent.
    pub checksums: Vec<(Algo, &'a str)>,
}

impl<'a> Sent<'a> {
    pub fn of_put(i: &'a PutObjectInput) -> Sent<'a> {
        Sent::new(
            i.content_md5.as_deref(),
            i.checksum_algorithm.as_ref(),
            [&i.checksum_crc32, &i.checksum_crc32c, &i.checksum_crc64nvme, &i.checksum_sha1, &i.checksum_sha256],
        )
    }

    pub fn of_part(i: &'a UploadPartInput) -> Sent<'a> {
        Sent::new(
            i.content_md5.as_deref(),
            i.checksum_algorithm.as_ref(),
            [&i.checksum_crc32, &i.checksum_crc32c, &i.checksum_crc64nvme, &i.checksum_sha1, &i.checksum_sha256],
        )
    }

    /// `values` in the order of [`Algo::ALL`].
    fn new(
        content_md5: Option<&'a str>,
        algorithm: Option<&'a ChecksumAlgorithm>,
        values: [&'a Option<String>; 5],
    ) -> Sent<'a> {
        let checksums = Algo::ALL.into_iter().zip(values).filter_map(|(a, v)| Some((a, v.as_deref()?))).collect();
        Sent { content_md5, algorithm, checksums }
    }
}

/// What a request's body must match (see the module doc).
#[derive(Debug, Default, PartialEq, Eq)]
pub struct Claims {
    md5: Option<Vec<u8>>,
    /// A checksum sent as a header.
    checksum: Option<(Algo, Vec<u8>)>,
    /// A checksum announced by `x-amz-trailer`, to come after the body.
    trailer: Option<Algo>,
}

/// What the body was found to match.
#[derive(Debug, Default, PartialEq, Eq)]
pub struct Verified {
    /// The body's MD5 (hex): the ETag.
    pub md5_hex: Option<String>,
    /// The flexible checksum the client sent (base64), checked.
    pub checksum: Option<(Algo, String)>,
}

impl Verified {
    /// The checked checksum as the output fields, in the order of [`Algo::ALL`].
    pub fn fields(&self) -> [Option<String>; 5] {
        Algo::ALL.map(|a| self.checksum.as_ref().filter(|(c, _)| *c == a).map(|(_, v)| v.clone()))
    }

    /// Keeps the checked checksum with the object (`x-amz-checksum-…` in its system metadata),
    /// so that a reader can check the bytes end to end.
    pub fn store(&self, system: &mut BTreeMap<String, String>) {
        if let Some((a, v)) = &self.checksum {
            system.insert(a.header().to_owned(), v.clone());
        }
    }
}

/// `$ty { fields… }` (an s3s output) with its five checksum fields from `$sums`, an array in the
/// order of [`Algo::ALL`] ([`Verified::fields`], [`stored_checksums`]).
macro_rules! with_checksums {
    ($ty:ident { $($f:ident: $v:expr),* $(,)? }, $sums:expr) => {{
        let [checksum_crc32, checksum_crc32c, checksum_crc64nvme, checksum_sha1, checksum_sha256] = $sums;
        #[allow(clippy::needless_update)] // some outputs have no other fields
        $ty {
            $($f: $v,)*
            checksum_crc32,
            checksum_crc32c,
            checksum_crc64nvme,
            checksum_sha1,
            checksum_sha256,
            ..Default::default()
        }
    }};
}
pub(crate) use with_checksums;

/// Whether a GET or HEAD asked for the object's checksum (`x-amz-checksum-mode: ENABLED`).
pub fn wants_checksum(mode: Option<&ChecksumMode>) -> bool {
    mode.is_some_and(|m| m.as_str().eq_ignore_ascii_case(ChecksumMode::ENABLED))
}

/// The checksum an object keeps, as the output fields in the order of [`Algo::ALL`].
pub fn stored_checksums(system: &BTreeMap<String, String>) -> [Option<String>; 5] {
    Algo::ALL.map(|a| system.get(a.header()).cloned())
}

/// Only the checksums of `system`.
pub fn checksums_of(system: &BTreeMap<String, String>) -> BTreeMap<String, String> {
    system.iter().filter(|(k, _)| k.starts_with("x-amz-checksum-")).map(|(k, v)| (k.clone(), v.clone())).collect()
}

use crate::checksum::{b64, b64_encode};

impl Claims {
    /// Parses and checks the form of the digests a request sent; `headers` for `x-amz-trailer`.
    pub fn parse(sent: &Sent<'_>, headers: &HeaderMap) -> S3Result<Claims> {
        let mut c = Claims::default();
        // s3s reads an empty header as none at all; S3 refuses it.
        let empty_md5 = headers.get("content-md5").is_some_and(|v| v.as_bytes().iter().all(u8::is_ascii_whitespace));
        if let Some(m) = sent.content_md5.or(empty_md5.then_some("")) {
            match b64(m) {
                Some(d) if d.len() == 16 => c.md5 = Some(d),
                _ => return Err(s3_error!(InvalidDigest, "The Content-MD5 you specified is not valid.")),
            }
        }
        let trailer = match headers.get("x-amz-trailer").map(|v| v.to_str()) {
            None => None,
            Some(Ok(v)) => match Algo::of_header(v.trim()) {
                Some(a) => Some(a),
                None => {
                    return Err(s3_error!(InvalidRequest, "x-amz-trailer {v:?} names no checksum this server checks"));
                }
            },
            Some(Err(_)) => return Err(s3_error!(InvalidRequest, "x-amz-trailer is not ASCII")),
        };
        let announced = usize::from(trailer.is_some()) + sent.checksums.len();
        if announced > 1 {
            return Err(s3_error!(
                InvalidRequest,
                "Expecting a single x-amz-checksum- header. Multiple checksum Types are not allowed."
            ));
        }
        if let Some(&(a, v)) = sent.checksums.first() {
            match b64(v) {
                Some(d) if d.len() == a.digest_len() => c.checksum = Some((a, d)),
                _ => return Err(s3_error!(InvalidRequest, "Value for {} header is invalid.", a.header())),
            }
        }
        c.trailer = trailer;
        if let Some(alg) = sent.algorithm {
            let Some(named) = Algo::of_name(alg.as_str()) else {
                return Err(s3_error!(InvalidRequest, "Value for x-amz-sdk-checksum-algorithm header is invalid."));
            };
            let given = c.checksum.as_ref().map(|(a, _)| *a).or(c.trailer);
            match given {
                Some(a) if a == named => {}
                Some(a) => {
                    return Err(s3_error!(
                        InvalidRequest,
                        "x-amz-sdk-checksum-algorithm says {} but the request carries {}",
                        named.name(),
                        a.header()
                    ));
                }
                None => {
                    return Err(s3_error!(
                        InvalidRequest,
                        "x-amz-sdk-checksum-algorithm specified, but no corresponding x-amz-checksum-* or \
                         x-amz-trailer headers were found."
                    ));
                }
            }
        }
        Ok(c)
    }

    /// The flexible checksum algorithm the body is to be checked against (sent as a header, or
    /// announced for the trailer), which [`crate::body::Digests`] computes as it streams.
    pub fn algo(&self) -> Option<Algo> {
        self.checksum.as_ref().map(|(a, _)| *a).or(self.trailer)
    }

    /// Keeps the checksum sent as a header with the object's metadata before the body is read
    /// (a backend that fixes metadata before the last byte needs it then); the body is still
    /// checked against it, and refused if it does not match.
    pub fn store_claimed(&self, system: &mut BTreeMap<String, String>) {
        if let Some((a, d)) = &self.checksum {
            system.insert(a.header().to_owned(), b64_encode(d));
        }
    }

    /// The MD5 the client sent (Content-MD5), in hex: the body's ETag if it is accepted.
    pub fn md5_hex(&self) -> Option<String> {
        self.md5.as_ref().map(|d| crate::hex::hex(d))
    }

    /// Checks the whole body against the claims, the trailer's among them (its stream has been
    /// read to the end, so s3s has verified and handed over the trailers).
    pub fn verify(&self, body: &[u8], trailers: Option<&s3s::TrailingHeaders>) -> S3Result<Verified> {
        let mut d = crate::body::Digests::new(self.algo());
        d.update(body);
        self.check(&d.finish(), trailers)
    }

    /// [`Claims::verify`] of a body whose digests were computed as it streamed (with
    /// [`Claims::algo`]).
    pub fn check(&self, got: &crate::body::Digested, trailers: Option<&s3s::TrailingHeaders>) -> S3Result<Verified> {
        if self.md5.as_ref().is_some_and(|want| got.md5[..] != want[..]) {
            return Err(s3_error!(BadDigest, "The Content-MD5 you specified did not match what we received."));
        }
        let mut v = Verified { md5_hex: Some(got.md5_hex()), checksum: None };
        let claimed = match (&self.checksum, self.trailer) {
            (Some((a, d)), _) => Some((*a, d.clone())),
            (None, Some(a)) => {
                let value = trailers.and_then(|t| t.read(|h| h.get(a.header()).map(|v| v.to_str().map(str::to_owned))));
                let value = match value.flatten() {
                    Some(Ok(s)) => s,
                    _ => {
                        return Err(s3_error!(
                            InvalidRequest,
                            "x-amz-trailer announces {} but the body's trailer does not carry it",
                            a.header()
                        ));
                    }
                };
                match b64(&value) {
                    Some(d) if d.len() == a.digest_len() => Some((a, d)),
                    _ => return Err(s3_error!(InvalidRequest, "Value for {} trailer is invalid.", a.header())),
                }
            }
            (None, None) => None,
        };
        if let Some((a, want)) = claimed {
            let matches = got.checksum.as_ref().is_some_and(|(b, d)| *b == a && *d == want);
            if !matches {
                return Err(s3_error!(
                    BadDigest,
                    "The {} you specified did not match the calculated checksum.",
                    a.name()
                ));
            }
            v.checksum = Some((a, b64_encode(&want)));
        }
        Ok(v)
    }
}

/// The S3 error for a request body that could not be read: s3s's stream errors name a signed
/// payload hash or a chunk signature that did not match (its error types are private, so they
/// are told apart by their messages; a test pins them), anything else is a broken body.
pub fn body_error(e: &dyn std::fmt::Display) -> S3Error {
    let m = e.to_string();
    if m.contains("Sha256Mismatch") {
        super::convert::custom_error(
            "XAmzContentSHA256Mismatch",
            http::StatusCode::BAD_REQUEST,
            "The provided 'x-amz-content-sha256' header does not match what was computed.",
        )
    } else if m.contains("RequestTimeout") {
        super::convert::custom_error(
            "RequestTimeout",
            http::StatusCode::BAD_REQUEST,
            "Your socket connection to the server was not read from or written to within the timeout period.",
        )
    } else if m.contains("SignatureMismatch") {
        s3_error!(SignatureDoesNotMatch, "a chunk signature of the aws-chunked body does not match")
    } else {
        s3_error!(IncompleteBody, "reading the request body: {m}")
    }
}

#[cfg(test)]
mod tests {
    use http::HeaderMap;
    use s3s::crypto::Checksum;

    use super::{Algo, Claims, Sent};

    fn b64(b: &[u8]) -> String {
        base64_simd::STANDARD.encode_to_string(b)
    }

    #[test]
    fn every_algorithm_matches_its_known_digest() {
        // The algorithms' check values (the digest of "123456789") and the digests of nothing.
        let data = b"123456789";
        assert_eq!(Algo::Crc32.digest(data), 0xCBF4_3926u32.to_be_bytes());
        assert_eq!(Algo::Crc32c.digest(data), 0xE306_9283u32.to_be_bytes());
        assert_eq!(Algo::Crc64Nvme.digest(data), 0xAE8B_1486_0A79_9888u64.to_be_bytes());
        assert_eq!(b64(&Algo::Sha1.digest(b"")), "2jmj7l5rSw0yVb/vlWAYkK/YBwk=");
        assert_eq!(b64(&Algo::Sha256.digest(b"")), "47DEQpj8HBSa+/TImW+5JCeuQeRkm5NMpJWZG3hSuFU=");
    }

    #[test]
    fn a_body_must_match_what_was_sent() {
        let body = b"the bytes the client meant";
        let md5 = b64(&s3s::crypto::Md5::checksum(body));
        let crc = b64(&Algo::Crc32c.digest(body));
        let sent = Sent { content_md5: Some(&md5), checksums: vec![(Algo::Crc32c, &crc)], ..Default::default() };
        let c = Claims::parse(&sent, &HeaderMap::new()).unwrap();
        let v = c.verify(body, None).unwrap();
        assert_eq!(v.checksum, Some((Algo::Crc32c, crc.clone())));
        assert_eq!(v.md5_hex.unwrap().len(), 32);
        let e = c.verify(b"the bytes the client meanT", None).unwrap_err();
        assert_eq!(e.code().as_str(), "BadDigest");
        let only_crc = Sent { checksums: vec![(Algo::Crc32c, &crc)], ..Default::default() };
        let e = Claims::parse(&only_crc, &HeaderMap::new()).unwrap().verify(b"other", None).unwrap_err();
        assert!(e.message().unwrap().contains("CRC32C"), "{e:?}");
    }

    #[test]
    fn malformed_or_conflicting_digests_are_refused_before_the_body() {
        let h = HeaderMap::new();
        let bad_md5 = Sent { content_md5: Some("not base64!"), ..Default::default() };
        assert_eq!(Claims::parse(&bad_md5, &h).unwrap_err().code().as_str(), "InvalidDigest");
        let short = Sent { checksums: vec![(Algo::Sha256, "AAAA")], ..Default::default() };
        assert_eq!(Claims::parse(&short, &h).unwrap_err().code().as_str(), "InvalidRequest");
        let two = Sent { checksums: vec![(Algo::Crc32, "AAAAAA=="), (Algo::Crc32c, "AAAAAA==")], ..Default::default() };
        assert_eq!(Claims::parse(&two, &h).unwrap_err().code().as_str(), "InvalidRequest");
        let alg = s3s::dto::ChecksumAlgorithm::from_static(s3s::dto::ChecksumAlgorithm::SHA1);
        let named_only = Sent { algorithm: Some(&alg), ..Default::default() };
        assert_eq!(Claims::parse(&named_only, &h).unwrap_err().code().as_str(), "InvalidRequest");
        let mut trailer = HeaderMap::new();
        trailer.insert("x-amz-trailer", "x-amz-checksum-sha1".parse().unwrap());
        assert!(Claims::parse(&named_only, &trailer).is_ok());
        trailer.insert("x-amz-trailer", "x-amz-meta-other".parse().unwrap());
        assert_eq!(Claims::parse(&Sent::default(), &trailer).unwrap_err().code().as_str(), "InvalidRequest");
    }

    #[test]
    fn an_announced_trailer_that_never_came_is_refused() {
        let mut h = HeaderMap::new();
        h.insert("x-amz-trailer", "x-amz-checksum-crc32".parse().unwrap());
        let c = Claims::parse(&Sent::default(), &h).unwrap();
        assert_eq!(c.verify(b"body", None).unwrap_err().code().as_str(), "InvalidRequest");
    }
}
