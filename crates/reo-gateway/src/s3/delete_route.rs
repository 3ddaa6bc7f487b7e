//! DeleteObjects, read here instead of by s3s's operation: s3s 0.14.1's XML reader refuses
//! character references above U+FFFF (`&#128512;`, the way minio-py writes keys outside the
//! Basic Multilingual Plane) — `resolve_char_ref` in its `xml/de.rs` allows
//! `0x10_0000..=0x10_FFFF` where XML allows `0x1_0000..=0x10_FFFF` — so such a batch failed
//! whole as `MalformedXML`. s3s must stay at 0.14.1 for this toolchain, so the request is taken
//! as a custom route: s3s still verifies its signature and, as the body is read, its signed
//! SHA-256. Here the digests the client sent are checked, the references s3s refuses are
//! resolved ([`resolve_supplementary_refs`]), the rest of the XML is read by s3s's own
//! deserializer, the signer's access is checked as for every operation, and the deletion is
//! [`ReoS3`]'s. Drop this file when s3s is upgraded past the fix.

use std::sync::Arc;

use http::{HeaderMap, Method, Uri};
use s3s::access::S3Access;
use s3s::dto::{ChecksumAlgorithm, Delete, DeleteObjectsInput};
use s3s::{s3_error, Body, S3Request, S3Response, S3Result};

use super::integrity::{body_error, Algo, Claims, Sent};
use super::ReoS3;
use crate::users::access::RoleAccess;

/// Largest DeleteObjects body (1,000 keys of 1,024 bytes, escaped, fit).
pub const MAX_XML: usize = 2 << 20;

/// The DeleteObjects handler (see the module doc).
pub struct DeleteObjectsRoute {
    s3: ReoS3,
    access: Arc<RoleAccess>,
}

/// The bucket of a path-style DeleteObjects request (`POST /bucket?delete`).
fn bucket_of(method: &Method, uri: &Uri) -> Option<String> {
    if method != Method::POST {
        return None;
    }
    let deletes = uri.query()?.split('&').any(|p| p == "delete" || p == "delete=");
    let bucket = uri.path().strip_prefix('/')?.trim_end_matches('/');
    (deletes && !bucket.is_empty() && !bucket.contains('/') && bucket != "_reo").then(|| bucket.to_string())
}

impl DeleteObjectsRoute {
    /// The handler over `s3`, its access checks by `access`.
    pub fn new(s3: ReoS3, access: Arc<RoleAccess>) -> DeleteObjectsRoute {
        DeleteObjectsRoute { s3, access }
    }

    /// Whether the request is a path-style DeleteObjects (`POST /bucket?delete`).
    pub fn matches(method: &Method, uri: &Uri) -> bool {
        bucket_of(method, uri).is_some()
    }

    /// Before the body is read: the signer may delete in the bucket.
    pub fn check_access(&self, req: &S3Request<Body>) -> S3Result<()> {
        let bucket = bucket_of(&req.method, &req.uri).unwrap_or_default();
        self.access.may_delete_in(req.credentials.as_ref(), &bucket)
    }

    /// Deletes the objects the request's XML lists and answers the DeleteResult.
    pub async fn call(&self, mut req: S3Request<Body>) -> S3Result<S3Response<Body>> {
        let bucket = bucket_of(&req.method, &req.uri).unwrap_or_default();
        crate::keys::validate_bucket(&bucket).map_err(|e| s3_error!(InvalidBucketName, "{e}"))?;
        let algorithm =
            header(&req.headers, "x-amz-sdk-checksum-algorithm").map(|v| ChecksumAlgorithm::from(v.to_string()));
        let claims = Claims::parse(&sent(&req.headers, algorithm.as_ref()), &req.headers)?;
        let body = req.input.store_all_limited(MAX_XML).await.map_err(|e| body_error(&e))?;
        claims.verify(&body, req.trailing_headers.as_ref())?;
        if body.is_empty() {
            return Err(s3_error!(MissingRequestBodyError, "DeleteObjects needs a <Delete> body"));
        }
        let xml = resolve_supplementary_refs(&body);
        let mut d = s3s::xml::Deserializer::new(&xml);
        let delete = <Delete as s3s::xml::Deserialize>::deserialize(&mut d)
            .and_then(|v| d.expect_eof().map(|()| v))
            .map_err(|e| s3_error!(MalformedXML, "The XML you provided was not well-formed: {e}"))?;
        let input = DeleteObjectsInput {
            bucket,
            delete,
            checksum_algorithm: algorithm,
            bypass_governance_retention: None,
            expected_bucket_owner: header(&req.headers, "x-amz-expected-bucket-owner").map(str::to_string),
            mfa: header(&req.headers, "x-amz-mfa").map(str::to_string),
            request_payer: None,
        };
        if input.mfa.is_some() {
            return Err(s3_error!(NotImplemented, "MFA delete is not supported: objects here have no versions"));
        }
        let mut req = req.map_input(|_| input);
        self.access.delete_objects(&mut req).await?;
        let out = self.s3.op_delete_objects(req).await?;
        let mut buf = Vec::with_capacity(256);
        {
            let mut ser = s3s::xml::Serializer::new(&mut buf);
            ser.decl()
                .and_then(|()| s3s::xml::Serialize::serialize(&out.output, &mut ser))
                .map_err(|e| s3_error!(InternalError, "writing the answer: {e}"))?;
        }
        let mut resp = S3Response::new(Body::from(buf));
        resp.headers.insert(http::header::CONTENT_TYPE, http::HeaderValue::from_static("application/xml"));
        Ok(resp)
    }
}

fn header<'h>(h: &'h HeaderMap, name: &str) -> Option<&'h str> {
    h.get(name).and_then(|v| v.to_str().ok())
}

/// The digests of a DeleteObjects request, from its headers.
fn sent<'a>(h: &'a HeaderMap, algorithm: Option<&'a ChecksumAlgorithm>) -> Sent<'a> {
    let checksums = Algo::ALL.into_iter().filter_map(|a| Some((a, header(h, a.header())?))).collect();
    Sent { content_md5: header(h, "content-md5"), algorithm, checksums }
}

/// `xml` with every character reference to a code point from U+10000 to U+10FFFF
/// (`&#128512;`, `&#x1F600;`) replaced by the character in UTF-8; everything else, inside CDATA
/// sections and comments included, as it was. None of these characters is markup, so the
/// replacement cannot change the document's structure.
pub fn resolve_supplementary_refs(xml: &[u8]) -> Vec<u8> {
    const KEPT: [(&[u8], &[u8]); 2] = [(b"<![CDATA[", b"]]>"), (b"<!--", b"-->")];
    let mut out = Vec::with_capacity(xml.len());
    let mut i = 0;
    while i < xml.len() {
        let rest = &xml[i..];
        if let Some((open, close)) = KEPT.iter().find(|(open, _)| rest.starts_with(open)) {
            let end = find(&rest[open.len()..], close).map_or(rest.len(), |e| open.len() + e + close.len());
            out.extend_from_slice(&rest[..end]);
            i += end;
            continue;
        }
        if let Some((c, len)) = rest.starts_with(b"&#").then(|| supplementary_ref(rest)).flatten() {
            let mut b = [0u8; 4];
            out.extend_from_slice(c.encode_utf8(&mut b).as_bytes());
            i += len;
            continue;
        }
        out.push(rest[0]);
        i += 1;
    }
    out
}

fn find(hay: &[u8], needle: &[u8]) -> Option<usize> {
    hay.windows(needle.len()).position(|w| w == needle)
}

/// The character and the length of a reference `&#…;` at the start of `s`, if it names a code
/// point from U+10000 to U+10FFFF.
fn supplementary_ref(s: &[u8]) -> Option<(char, usize)> {
    let end = s.iter().take(12).position(|&b| b == b';')?;
    let body = std::str::from_utf8(&s[2..end]).ok()?;
    let cp = match body.strip_prefix('x') {
        Some(hex) => u32::from_str_radix(hex, 16).ok()?,
        None => body.parse::<u32>().ok()?,
    };
    if !(0x1_0000..=0x10_FFFF).contains(&cp) || body.starts_with('+') || body.starts_with("x+") {
        return None;
    }
    Some((char::from_u32(cp)?, end + 1))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn supplementary_references_become_characters() {
        let xml = b"<Key>a&#128512;b&#x1F600;c&#65;&#x41;&amp;&#1114111;&#1114112;</Key>";
        let out = String::from_utf8(resolve_supplementary_refs(xml)).unwrap();
        assert_eq!(out, "<Key>a\u{1F600}b\u{1F600}c&#65;&#x41;&amp;\u{10FFFF}&#1114112;</Key>");
    }

    #[test]
    fn cdata_comments_and_broken_references_stay_as_they_are() {
        let xml = b"<!-- &#128512; --><K><![CDATA[&#128512;]]>&#128512</K>&#+128512;&#";
        assert_eq!(resolve_supplementary_refs(xml), xml.to_vec());
    }

    #[test]
    fn s3s_reads_the_resolved_document() {
        let xml = b"<Delete><Object><Key>emoji-&#128512;.txt</Key></Object><Quiet>true</Quiet></Delete>";
        let fixed = resolve_supplementary_refs(xml);
        let mut d = s3s::xml::Deserializer::new(&fixed);
        let delete = <Delete as s3s::xml::Deserialize>::deserialize(&mut d).unwrap();
        assert_eq!(delete.objects[0].key, "emoji-\u{1F600}.txt");
        // The bug this works around: s3s alone refuses the reference.
        let mut d = s3s::xml::Deserializer::new(xml);
        assert!(<Delete as s3s::xml::Deserialize>::deserialize(&mut d).is_err(), "s3s is fixed: drop the route");
    }

    #[test]
    fn only_path_style_bucket_deletes_match() {
        let m = |method: Method, u: &str| DeleteObjectsRoute::matches(&method, &u.parse().unwrap());
        assert!(m(Method::POST, "/bkt?delete"));
        assert!(m(Method::POST, "/bkt/?delete="));
        assert!(!m(Method::POST, "/bkt/key?delete"));
        assert!(!m(Method::GET, "/bkt?delete"));
        assert!(!m(Method::POST, "/bkt?uploads"));
        assert!(!m(Method::POST, "/_reo?delete"));
    }
}
