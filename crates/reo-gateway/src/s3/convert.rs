//! Conversions between the gateway's types and s3s's DTOs: timestamps, ETags, metadata,
//! conditional requests, URL encoding of listed keys.

use std::collections::BTreeMap;
use std::time::{Duration, UNIX_EPOCH};

use s3s::dto::{ETag, ETagCondition, Metadata, Timestamp, TimestampFormat};
use s3s::{s3_error, S3Error, S3ErrorCode, S3Result};

use crate::backend::ObjectInfo;

/// An S3 timestamp of `ns` nanoseconds since the Unix epoch.
pub fn timestamp(ns: u64) -> Timestamp {
    Timestamp::from(UNIX_EPOCH + Duration::from_nanos(ns))
}

/// Seconds since the Unix epoch of an S3 timestamp.
pub fn unix_secs(t: &Timestamp) -> i64 {
    time::OffsetDateTime::from(t.clone()).unix_timestamp()
}

/// A strong ETag of `s` (without quotes).
pub fn etag(s: &str) -> ETag {
    ETag::Strong(s.to_string())
}

/// User metadata as s3s takes it (`None` when empty).
pub fn metadata(m: &BTreeMap<String, String>) -> Option<Metadata> {
    (!m.is_empty()).then(|| m.iter().map(|(k, v)| (k.clone(), v.clone())).collect())
}

/// An error whose code s3s does not know (it would answer 500 for it).
pub fn custom_error(code: &'static str, status: http::StatusCode, message: impl Into<String>) -> S3Error {
    let mut e = S3Error::with_message(S3ErrorCode::Custom(code.into()), message.into());
    e.set_status_code(status);
    e
}

fn cond_matches(c: &ETagCondition, etag: &str) -> bool {
    match c {
        ETagCondition::Any => true,
        ETagCondition::ETag(e) => e.value().trim_matches('"') == etag,
    }
}

/// The GET/HEAD preconditions of RFC 9110 §13.2.2 as S3 applies them: 412 for a failed
/// If-Match / If-Unmodified-Since, 304 for a matching If-None-Match / unchanged If-Modified-Since.
pub fn check_conditions(
    info: &ObjectInfo,
    if_match: Option<&ETagCondition>,
    if_none_match: Option<&ETagCondition>,
    if_modified_since: Option<&Timestamp>,
    if_unmodified_since: Option<&Timestamp>,
) -> S3Result<()> {
    let mtime = (info.mtime_ns / 1_000_000_000) as i64;
    if let Some(c) = if_match {
        if !cond_matches(c, &info.etag) {
            return Err(s3_error!(PreconditionFailed, "If-Match: the object's ETag is \"{}\"", info.etag));
        }
    } else if let Some(t) = if_unmodified_since {
        if mtime > unix_secs(t) {
            return Err(s3_error!(PreconditionFailed, "If-Unmodified-Since: the object was modified since"));
        }
    }
    if let Some(c) = if_none_match {
        if cond_matches(c, &info.etag) {
            return Err(not_modified(info));
        }
    } else if let Some(t) = if_modified_since {
        if mtime <= unix_secs(t) {
            return Err(not_modified(info));
        }
    }
    Ok(())
}

/// A 304 with the validators a cache needs to refresh its copy (RFC 9110 §15.4.5: the ETag and
/// Last-Modified a 200 would have carried).
fn not_modified(info: &ObjectInfo) -> S3Error {
    let mut e = S3Error::new(S3ErrorCode::NotModified);
    let mut h = http::HeaderMap::new();
    if let Ok(v) = http::HeaderValue::from_str(&format!("\"{}\"", info.etag)) {
        h.insert(http::header::ETAG, v);
    }
    let mut date = Vec::new();
    if timestamp(info.mtime_ns).format(TimestampFormat::HttpDate, &mut date).is_ok() {
        if let Ok(v) = http::HeaderValue::from_bytes(&date) {
            h.insert(http::header::LAST_MODIFIED, v);
        }
    }
    e.set_headers(h);
    e
}

/// URL-encodes a listed key, prefix or marker (`encoding-type=url`): every byte outside
/// `A-Z a-z 0-9 - _ . ~ /` as `%XX`, so `+`, `%`, spaces and non-ASCII survive any decoder.
pub fn url_encode(s: &str) -> String {
    let mut out = String::with_capacity(s.len());
    for &b in s.as_bytes() {
        if b.is_ascii_alphanumeric() || matches!(b, b'-' | b'_' | b'.' | b'~' | b'/') {
            out.push(b as char);
        } else {
            out.push_str(&format!("%{b:02X}"));
        }
    }
    out
}

/// The owner listings name: every bucket and object belongs to the account whose key signed the
/// request (one account per gateway).
pub fn owner_of(creds: &Option<s3s::auth::Credentials>) -> s3s::dto::Owner {
    let id = creds.as_ref().map(|c| c.access_key.clone());
    s3s::dto::Owner { display_name: id.clone(), id }
}

/// An opaque continuation token for "list after `key`".
pub fn token_of(key: &str) -> String {
    crate::hex::hex(key.as_bytes())
}

/// The key a continuation token of [`token_of`] names; `InvalidArgument` for any other.
pub fn key_of_token(t: &str) -> S3Result<String> {
    let bytes: Option<Vec<u8>> =
        (0..t.len() / 2).map(|i| t.get(2 * i..2 * i + 2).and_then(|h| u8::from_str_radix(h, 16).ok())).collect();
    bytes
        .filter(|_| t.len().is_multiple_of(2))
        .and_then(|b| String::from_utf8(b).ok())
        .ok_or_else(|| s3_error!(InvalidArgument, "the continuation token is not one this gateway issued"))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn url_encoding_and_tokens() {
        assert_eq!(url_encode("a b+c%41/é"), "a%20b%2Bc%2541/%C3%A9");
        let k = "dir/é + %";
        assert_eq!(key_of_token(&token_of(k)).unwrap(), k);
        assert!(key_of_token("zz").is_err());
    }

    #[test]
    fn conditions() {
        let info = ObjectInfo { etag: "abc".into(), mtime_ns: 100_000_000_000, ..Default::default() };
        let e = ETagCondition::ETag(etag("abc"));
        let other = ETagCondition::ETag(etag("zzz"));
        assert!(check_conditions(&info, Some(&e), None, None, None).is_ok());
        let r = check_conditions(&info, Some(&other), None, None, None).unwrap_err();
        assert_eq!(r.code(), &S3ErrorCode::PreconditionFailed);
        let r = check_conditions(&info, None, Some(&e), None, None).unwrap_err();
        assert_eq!(r.code(), &S3ErrorCode::NotModified);
        let later = timestamp(200_000_000_000);
        let r = check_conditions(&info, None, None, Some(&later), None).unwrap_err();
        assert_eq!(r.code(), &S3ErrorCode::NotModified);
        assert!(check_conditions(&info, None, None, None, Some(&later)).is_ok());
        let earlier = timestamp(50_000_000_000);
        assert!(check_conditions(&info, None, None, None, Some(&earlier)).is_err());
    }
}
