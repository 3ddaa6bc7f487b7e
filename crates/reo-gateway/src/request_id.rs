//! [`RequestIds`]: every answer carries `x-amz-request-id` (this request) and `x-amz-id-2` (this
//! process), and every S3 error body its `<RequestId>` and `<HostId>`, as S3 answers: clients log
//! them and print them with errors, which is how an operator finds the request in the server's
//! log (each request's log line names its id).
//!
//! s3s writes error bodies itself and leaves the request id out, so it is added to the finished
//! answer here; an error body is one small buffered XML document.

use std::sync::atomic::{AtomicU64, Ordering};

use bytes::Bytes;
use http::HeaderValue;

/// See the module doc.
pub struct RequestIds {
    /// A per-process random start, so ids of two runs do not repeat.
    base: u64,
    next: AtomicU64,
    host: String,
}

impl Default for RequestIds {
    fn default() -> Self {
        use std::hash::BuildHasher;
        let r = std::hash::RandomState::new();
        let host = format!("reo-{:016x}", r.hash_one(std::process::id()));
        RequestIds { base: r.hash_one(0x7265_7169_u64), next: AtomicU64::new(0), host }
    }
}

impl RequestIds {
    /// A new id: 16 upper-case hex digits, as S3's.
    pub fn next(&self) -> String {
        let n = self.next.fetch_add(1, Ordering::Relaxed);
        format!("{:016X}", self.base.wrapping_add(n.wrapping_mul(0x9E37_79B9_7F4A_7C15)))
    }

    /// Adds the ids to `resp` (see the module doc).
    pub fn stamp(&self, id: &str, resp: &mut http::Response<s3s::Body>) {
        if let (Ok(r), Ok(h)) = (HeaderValue::from_str(id), HeaderValue::from_str(&self.host)) {
            resp.headers_mut().insert("x-amz-request-id", r);
            resp.headers_mut().insert("x-amz-id-2", h);
        }
        if !(resp.status().is_client_error() || resp.status().is_server_error()) {
            return;
        }
        let Some(body) = resp.body().bytes() else { return };
        let Some(stamped) = with_ids(&body, id, &self.host) else { return };
        resp.headers_mut().insert(http::header::CONTENT_LENGTH, HeaderValue::from(stamped.len()));
        *resp.body_mut() = s3s::Body::from(stamped);
    }
}

/// `body` with `<RequestId>` and `<HostId>` before its closing `</Error>`, if it is an S3 error
/// document without them.
fn with_ids(body: &[u8], id: &str, host: &str) -> Option<Bytes> {
    const END: &[u8] = b"</Error>";
    let at = body.windows(END.len()).rposition(|w| w == END)?;
    if body.windows(11).any(|w| w == b"<RequestId>") {
        return None;
    }
    let mut out = Vec::with_capacity(body.len() + 80);
    out.extend_from_slice(&body[..at]);
    out.extend_from_slice(format!("<RequestId>{id}</RequestId><HostId>{host}</HostId>").as_bytes());
    out.extend_from_slice(&body[at..]);
    Some(out.into())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn ids_are_unique_and_error_bodies_name_them() {
        let ids = RequestIds::default();
        let (a, b) = (ids.next(), ids.next());
        assert_ne!(a, b);
        assert_eq!(a.len(), 16);
        let mut resp = http::Response::new(s3s::Body::from(Bytes::from_static(
            b"<?xml version=\"1.0\"?><Error><Code>NoSuchKey</Code></Error>",
        )));
        *resp.status_mut() = http::StatusCode::NOT_FOUND;
        ids.stamp(&a, &mut resp);
        let body = resp.body().bytes().unwrap();
        let text = std::str::from_utf8(&body).unwrap();
        assert!(text.ends_with(&format!("<RequestId>{a}</RequestId><HostId>{}</HostId></Error>", ids.host)), "{text}");
        assert_eq!(resp.headers()["content-length"], body.len().to_string().as_str());
        assert_eq!(resp.headers()["x-amz-request-id"], a.as_str());
        // A success keeps its body; an error body that has an id keeps it.
        let mut ok = http::Response::new(s3s::Body::from(Bytes::from_static(b"<Error></Error>")));
        ids.stamp(&b, &mut ok);
        assert_eq!(ok.body().bytes().unwrap(), &b"<Error></Error>"[..]);
        assert!(with_ids(b"<Error><RequestId>x</RequestId></Error>", "y", "h").is_none());
    }
}
