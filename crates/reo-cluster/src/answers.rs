//! S3 answers the cluster gives itself (a refusal while membership changes, a read served from
//! another node's copy) and the parsing of an S3 request's bucket and key.

use reo_gateway::backend::ObjectInfo;
use reo_gateway::intercept::Answer;
use s3s::{s3_error, S3Error};

/// `503 SlowDown` with `msg` (the client retries).
pub fn slowdown(msg: impl Into<String>) -> Answer {
    let e: S3Error = s3_error!(SlowDown, "{}", msg.into());
    error(e)
}

/// An S3 error as an answer.
pub fn error(e: S3Error) -> Answer {
    e.to_http_response().map_err(|e| s3s::HttpError::new(Box::new(e)))
}

/// `%XX` decoding of a path segment (`+` is a plus in a path).
pub fn decode_path(s: &str) -> String {
    let b = s.as_bytes();
    let mut out = Vec::with_capacity(b.len());
    let mut i = 0;
    while i < b.len() {
        if b[i] == b'%' && i + 2 < b.len() {
            if let Some(v) = std::str::from_utf8(&b[i + 1..i + 3]).ok().and_then(reo_gateway::hex::decode) {
                out.push(v[0]);
                i += 3;
                continue;
            }
        }
        out.push(b[i]);
        i += 1;
    }
    String::from_utf8_lossy(&out).into_owned()
}

/// The bucket and key of a path-style request path (`/bucket/key`), decoded.
pub fn bucket_key(path: &str) -> (Option<String>, Option<String>) {
    let p = path.strip_prefix('/').unwrap_or(path);
    if p.is_empty() {
        return (None, None);
    }
    match p.split_once('/') {
        Some((b, k)) if !k.is_empty() => (Some(decode_path(b)), Some(decode_path(k))),
        Some((b, _)) => (Some(decode_path(b)), None),
        None => (Some(decode_path(p)), None),
    }
}

/// A whole-object GET or HEAD answered from a copy another node holds (`None`: deleted).
pub fn object(head: bool, found: Option<(ObjectInfo, Vec<u8>)>) -> Answer {
    let Some((info, data)) = found else {
        return error(s3_error!(NoSuchKey, "The specified key does not exist."));
    };
    let mut b = http::Response::builder()
        .status(200)
        .header("etag", format!("\"{}\"", info.etag.trim_matches('"')))
        .header("content-length", info.size.to_string())
        .header("accept-ranges", "bytes");
    if !info.content_type.is_empty() {
        b = b.header("content-type", info.content_type.as_str());
    }
    let mut date = Vec::new();
    let t = reo_gateway::s3::convert::timestamp(info.mtime_ns);
    if t.format(s3s::dto::TimestampFormat::HttpDate, &mut date).is_ok() {
        if let Ok(v) = http::HeaderValue::from_bytes(&date) {
            b = b.header("last-modified", v);
        }
    }
    for (k, v) in &info.user_meta {
        if let (Ok(n), Ok(v)) =
            (http::HeaderName::from_bytes(format!("x-amz-meta-{k}").as_bytes()), http::HeaderValue::from_str(v))
        {
            b = b.header(n, v);
        }
    }
    let body = if head { s3s::Body::empty() } else { s3s::Body::from(data) };
    Ok(b.body(body).expect("valid headers"))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn path_style_bucket_and_key() {
        assert_eq!(bucket_key("/"), (None, None));
        assert_eq!(bucket_key("/b"), (Some("b".into()), None));
        assert_eq!(bucket_key("/b/"), (Some("b".into()), None));
        assert_eq!(bucket_key("/b/a%20b/c+d%2F"), (Some("b".into()), Some("a b/c+d/".into())));
        assert_eq!(decode_path("%zz%4"), "%zz%4");
        assert_eq!(decode_path("%é"), "%é", "a multi-byte character after % is kept whole");
    }
}
