//! How `/metrics` is reached (SECURITY.md). On the S3 listener: with `Authorization: Bearer
//! <token>` (`[metrics] token`, as Prometheus's `authorization` setting sends it), answered here
//! before s3s, which would take the header for a malformed signature; signed by an admin (through
//! s3s and the API route); anonymously only if `[server] anonymous_metrics` says so. Or on a
//! separate address (`--metrics-listen`, off by default) that serves `GET /metrics` and nothing
//! else, for a network only the scraper reaches.

use std::future::Future;

use http::{Method, Request, Response, StatusCode};
use hyper_util::rt::{TokioExecutor, TokioIo};
use hyper_util::server::conn::auto::Builder as ConnBuilder;

use crate::api::Api;

/// What a request to `/metrics` carries.
#[derive(Debug, PartialEq, Eq)]
pub enum Bearer {
    /// No bearer token: s3s decides (a signature, or anonymous).
    Absent,
    /// The configured token.
    Valid,
    /// A bearer token, but not the configured one (or none is configured).
    Invalid,
}

/// The bearer token of a `/metrics` request, checked in constant time.
pub fn bearer(token: Option<&str>, headers: &http::HeaderMap) -> Bearer {
    let Some(sent) = headers.get(http::header::AUTHORIZATION).and_then(|v| v.to_str().ok()) else {
        return Bearer::Absent;
    };
    let Some(sent) = sent.strip_prefix("Bearer ") else { return Bearer::Absent };
    match token {
        Some(t) if constant_time_eq(t.as_bytes(), sent.trim().as_bytes()) => Bearer::Valid,
        _ => Bearer::Invalid,
    }
}

fn constant_time_eq(a: &[u8], b: &[u8]) -> bool {
    a.len() == b.len() && a.iter().zip(b).fold(0u8, |acc, (x, y)| acc | (x ^ y)) == 0
}

/// A plain-text answer.
pub fn text(status: StatusCode, body: String) -> Response<s3s::Body> {
    let mut r = Response::new(s3s::Body::from(body));
    *r.status_mut() = status;
    r.headers_mut()
        .insert(http::header::CONTENT_TYPE, http::HeaderValue::from_static(crate::metrics::exposition::CONTENT_TYPE));
    if status == StatusCode::UNAUTHORIZED {
        r.headers_mut().insert(http::header::WWW_AUTHENTICATE, http::HeaderValue::from_static("Bearer"));
    }
    r
}

/// The metrics answer.
pub async fn answer(api: &Api) -> Response<s3s::Body> {
    match api.metrics_text().await {
        Ok(t) => text(StatusCode::OK, t),
        Err(e) => text(StatusCode::INTERNAL_SERVER_ERROR, format!("{e}\n")),
    }
}

/// Serves `GET /metrics` (only) on `listener` until `shutdown` resolves.
pub async fn serve_metrics_only(listener: tokio::net::TcpListener, api: Api, shutdown: impl Future<Output = ()>) {
    let mut shutdown = std::pin::pin!(shutdown);
    let mut http = ConnBuilder::new(TokioExecutor::new());
    http.http1().timer(hyper_util::rt::TokioTimer::new()).header_read_timeout(std::time::Duration::from_secs(10));
    loop {
        let socket = tokio::select! {
            s = listener.accept() => match s {
                Ok((s, _)) => s,
                Err(e) => {
                    tracing::warn!("metrics listener: {e}");
                    tokio::time::sleep(std::time::Duration::from_millis(100)).await;
                    continue;
                }
            },
            _ = &mut shutdown => return,
        };
        let api = api.clone();
        let svc = hyper::service::service_fn(move |req: Request<hyper::body::Incoming>| {
            let api = api.clone();
            async move {
                let r = if req.method() == Method::GET && req.uri().path() == "/metrics" {
                    answer(&api).await
                } else {
                    text(StatusCode::NOT_FOUND, "this address serves GET /metrics only\n".into())
                };
                Ok::<_, std::convert::Infallible>(r)
            }
        });
        let conn = http.serve_connection(TokioIo::new(socket), svc).into_owned();
        tokio::spawn(async move {
            let _ = conn.await;
        });
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn bearer_tokens_are_checked() {
        let mut h = http::HeaderMap::new();
        assert_eq!(bearer(Some("t0k"), &h), Bearer::Absent);
        h.insert(http::header::AUTHORIZATION, "AWS4-HMAC-SHA256 Credential=x".parse().unwrap());
        assert_eq!(bearer(Some("t0k"), &h), Bearer::Absent, "a signature is s3s's");
        h.insert(http::header::AUTHORIZATION, "Bearer t0k".parse().unwrap());
        assert_eq!(bearer(Some("t0k"), &h), Bearer::Valid);
        assert_eq!(bearer(Some("other"), &h), Bearer::Invalid);
        assert_eq!(bearer(None, &h), Bearer::Invalid);
    }
}
