//! SigV4 signatures of requests to the gateway's own API (`reo admin`) and of the load of
//! `reo bench gateway`: object_store's `AwsAuthorizer`, the maintained signer the S3 backend's
//! requests go through already. It signs every header the request carries (`x-reo-nonce`
//! included) and the body's SHA-256, which the admin API insists on (no `UNSIGNED-PAYLOAD`).

use http::header::{HeaderMap, HeaderName, HeaderValue};
use object_store::aws::{AwsAuthorizer, AwsCredential};
use object_store::client::{HttpRequest, HttpRequestBody};
use percent_encoding::{utf8_percent_encode, AsciiSet, NON_ALPHANUMERIC};

/// The region the gateway verifies signatures for.
pub const REGION: &str = "us-east-1";

/// Everything but RFC 3986's unreserved characters is escaped (SigV4's canonical encoding).
const STRICT: &AsciiSet = &NON_ALPHANUMERIC.remove(b'-').remove(b'_').remove(b'.').remove(b'~');
/// The same, `/` kept: a path's separators.
const PATH: &AsciiSet = &STRICT.remove(b'/');

/// A key pair of one of the gateway's users.
#[derive(Clone)]
pub struct Keys {
    /// The access key.
    pub access: String,
    /// Its secret key.
    pub secret: String,
}

/// Whether the body's SHA-256 is signed (the admin API requires it) or `UNSIGNED-PAYLOAD`
/// (which s3s accepts for S3 requests: a benchmark's PUT then does not hash its body).
#[derive(Clone, Copy, PartialEq, Eq)]
pub enum Payload {
    /// `x-amz-content-sha256` is the body's hash.
    Signed,
    /// `x-amz-content-sha256: UNSIGNED-PAYLOAD`.
    Unsigned,
}

/// `base` (`http[s]://HOST:PORT`) with `path` and `query` (both unencoded) encoded as SigV4
/// encodes them, so that what is signed is what is sent.
pub fn url(base: &str, path: &str, query: &[(&str, String)]) -> String {
    let mut u = format!("{}{}", base.trim_end_matches('/'), utf8_percent_encode(path, PATH));
    for (i, (k, v)) in query.iter().enumerate() {
        u.push(if i == 0 { '?' } else { '&' });
        u.push_str(&format!("{}={}", utf8_percent_encode(k, STRICT), utf8_percent_encode(v, STRICT)));
    }
    u
}

/// The headers that sign `method url` with `body` and the `extra` headers (sent as they are,
/// and signed): `extra`, `x-amz-date`, `x-amz-content-sha256` and `authorization`. The `host`
/// signed is the URL's authority, which HTTP clients send as the `Host` header.
pub fn sign(
    keys: &Keys,
    method: &str,
    url: &str,
    extra: &[(HeaderName, HeaderValue)],
    body: &[u8],
    payload: Payload,
) -> Result<HeaderMap, String> {
    // An unsigned payload is not hashed: the signer need not see (nor the caller copy) it.
    let signed_body = if payload == Payload::Signed { body.to_vec() } else { Vec::new() };
    let mut req: HttpRequest = http::Request::builder()
        .method(method)
        .uri(url)
        .body(HttpRequestBody::from(signed_body))
        .map_err(|e| format!("request {method} {url}: {e}"))?;
    for (k, v) in extra {
        req.headers_mut().insert(k, v.clone());
    }
    let cred = AwsCredential { key_id: keys.access.clone(), secret_key: keys.secret.clone(), token: None };
    AwsAuthorizer::new(&cred, "s3", REGION)
        .with_sign_payload(payload == Payload::Signed)
        .try_authorize(&mut req, None)
        .map_err(|e| format!("signing {method} {url}: {e}"))?;
    Ok(req.headers().clone())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn urls_are_encoded_as_signed() {
        let q = [("path", "dev 1/new.img".to_string()), ("device", "1".to_string())];
        assert_eq!(
            url("http://h:1/", "/_reo/admin/x y", &q),
            "http://h:1/_reo/admin/x%20y?path=dev%201%2Fnew.img&device=1"
        );
    }

    /// The signature covers the extra header and the body's hash; a different body signs
    /// differently.
    #[test]
    fn signs_headers_and_body() {
        let keys = Keys { access: "AK".into(), secret: "SK".into() };
        let nonce = (HeaderName::from_static("x-reo-nonce"), HeaderValue::from_static("n1"));
        let h =
            sign(&keys, "POST", "http://h:1/_reo/admin/flush", std::slice::from_ref(&nonce), b"{}", Payload::Signed)
                .unwrap();
        let auth = h["authorization"].to_str().unwrap();
        assert!(auth.starts_with("AWS4-HMAC-SHA256 Credential=AK/"), "{auth}");
        assert!(auth.contains("SignedHeaders=host;x-amz-content-sha256;x-amz-date;x-reo-nonce"), "{auth}");
        // SHA-256 of "{}".
        assert_eq!(h["x-amz-content-sha256"], "44136fa355b3678a1146ad16f7e8649e94fb4fc21fe77e8310c060f61caaff8a");
        let unsigned = sign(&keys, "PUT", "http://h:1/b/k", &[], b"x", Payload::Unsigned).unwrap();
        assert_eq!(unsigned["x-amz-content-sha256"], "UNSIGNED-PAYLOAD");
    }
}
