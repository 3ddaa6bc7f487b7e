//! AWS Signature Version 4 for `reo admin`'s requests (header-based, S3 service, payload hash
//! signed), enough for the gateway's API: the same scheme s3s verifies for S3 requests.

use hmac::{Hmac, KeyInit, Mac};
use sha2::{Digest, Sha256};

pub const REGION: &str = "us-east-1";

pub fn hex(bytes: &[u8]) -> String {
    reo_gateway::hex::hex(bytes)
}

pub fn sha256_hex(data: &[u8]) -> String {
    hex(&Sha256::digest(data))
}

fn hmac(key: &[u8], msg: &str) -> Vec<u8> {
    let mut m = <Hmac<Sha256> as KeyInit>::new_from_slice(key).expect("HMAC takes any key length");
    m.update(msg.as_bytes());
    m.finalize().into_bytes().to_vec()
}

/// RFC 3986 encoding of everything but unreserved characters (and `/` when `keep_slash`).
pub fn uri_encode(s: &str, keep_slash: bool) -> String {
    let mut out = String::new();
    for b in s.bytes() {
        match b {
            b'A'..=b'Z' | b'a'..=b'z' | b'0'..=b'9' | b'-' | b'_' | b'.' | b'~' => out.push(b as char),
            b'/' if keep_slash => out.push('/'),
            _ => out.push_str(&format!("%{b:02X}")),
        }
    }
    out
}

/// `YYYYMMDDTHHMMSSZ` of a unix time.
pub fn amz_date(unix: u64) -> String {
    let (days, secs) = (unix / 86_400, unix % 86_400);
    // Civil date from days since 1970-01-01 (Howard Hinnant's algorithm).
    let z = days as i64 + 719_468;
    let era = z.div_euclid(146_097);
    let doe = z - era * 146_097;
    let yoe = (doe - doe / 1460 + doe / 36_524 - doe / 146_096) / 365;
    let doy = doe - (365 * yoe + yoe / 4 - yoe / 100);
    let mp = (5 * doy + 2) / 153;
    let d = doy - (153 * mp + 2) / 5 + 1;
    let m = if mp < 10 { mp + 3 } else { mp - 9 };
    let y = yoe + era * 400 + i64::from(m <= 2);
    format!("{y:04}{m:02}{d:02}T{:02}{:02}{:02}Z", secs / 3600, secs % 3600 / 60, secs % 60)
}

/// What a request's signature covers.
pub struct Request<'a> {
    pub method: &'a str,
    /// Path, not yet encoded.
    pub path: &'a str,
    /// Query parameters, not yet encoded.
    pub query: &'a [(String, String)],
    /// Headers to sign besides `x-amz-date` and `x-amz-content-sha256` (lower-case names).
    pub headers: &'a [(String, String)],
    pub payload_hash: &'a str,
}

/// The `Authorization` header value for `req` at `amz_date`.
pub fn authorization(req: &Request<'_>, access_key: &str, secret_key: &str, amz_date: &str) -> String {
    let mut q: Vec<(String, String)> =
        req.query.iter().map(|(k, v)| (uri_encode(k, false), uri_encode(v, false))).collect();
    q.sort();
    let query = q.iter().map(|(k, v)| format!("{k}={v}")).collect::<Vec<_>>().join("&");
    let mut headers: Vec<(String, String)> = req.headers.to_vec();
    headers.push(("x-amz-content-sha256".into(), req.payload_hash.into()));
    headers.push(("x-amz-date".into(), amz_date.into()));
    headers.sort();
    let canonical_headers: String = headers.iter().flat_map(|(k, v)| [k.as_str(), ":", v.trim(), "\n"]).collect();
    let signed: String = headers.iter().map(|(k, _)| k.as_str()).collect::<Vec<_>>().join(";");
    let canonical = format!(
        "{}\n{}\n{query}\n{canonical_headers}\n{signed}\n{}",
        req.method,
        uri_encode(req.path, true),
        req.payload_hash
    );
    let date = &amz_date[..8];
    let scope = format!("{date}/{REGION}/s3/aws4_request");
    let to_sign = format!("AWS4-HMAC-SHA256\n{amz_date}\n{scope}\n{}", sha256_hex(canonical.as_bytes()));
    let mut key = hmac(format!("AWS4{secret_key}").as_bytes(), date);
    for part in [REGION, "s3", "aws4_request"] {
        key = hmac(&key, part);
    }
    let signature = hex(&hmac(&key, &to_sign));
    format!("AWS4-HMAC-SHA256 Credential={access_key}/{scope}, SignedHeaders={signed}, Signature={signature}")
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The GET Object example of AWS's SigV4 documentation ("Examples: Signature Calculations").
    #[test]
    fn aws_documentation_example() {
        let empty = sha256_hex(b"");
        let req = Request {
            method: "GET",
            path: "/test.txt",
            query: &[],
            headers: &[("host".into(), "examplebucket.s3.amazonaws.com".into()), ("range".into(), "bytes=0-9".into())],
            payload_hash: &empty,
        };
        let auth =
            authorization(&req, "AKIAIOSFODNN7EXAMPLE", "wJalrXUtnFEMI/K7MDENG/bPxRfiCYEXAMPLEKEY", "20130524T000000Z");
        assert!(auth.ends_with("Signature=f0e8bdb87c964420e857bd35b5d6ed310bd44f0170aba48dd91039c6036bdb41"), "{auth}");
        assert!(auth.contains("SignedHeaders=host;range;x-amz-content-sha256;x-amz-date"));
    }

    #[test]
    fn dates_and_encoding() {
        assert_eq!(amz_date(1_369_353_600), "20130524T000000Z");
        assert_eq!(amz_date(951_825_661), "20000229T120101Z");
        assert_eq!(uri_encode("a b/c~", false), "a%20b%2Fc~");
        assert_eq!(uri_encode("/_reo/x y", true), "/_reo/x%20y");
    }
}
