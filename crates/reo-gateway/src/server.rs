//! The HTTP server: s3s's service (SigV4 with the gateway's users, each request checked against
//! its signer's role and scopes by [`crate::users::access`], anonymous requests denied) plus
//! Reo's API routes ([`crate::api`]: health, metrics, hints, query, admin), served with
//! hyper-util on a tokio listener until `shutdown` resolves, every request timed into the
//! request metrics ([`crate::metrics::RequestMetrics`]); then in-flight requests drain (up to
//! [`DRAIN`]).

use std::future::Future;
use std::sync::Arc;
use std::time::Duration;

use hyper_util::rt::{TokioExecutor, TokioIo};
use hyper_util::server::conn::auto::Builder as ConnBuilder;
use hyper_util::server::graceful::GracefulShutdown;
use s3s::config::{S3Config, StaticConfigProvider};
use s3s::route::S3Route;
use s3s::service::S3ServiceBuilder;
use s3s::validation::{AwsNameValidation, NameValidation};
use s3s::{Body, S3Request, S3Response, S3Result};
use tokio::net::TcpListener;

use crate::api::Api;
use crate::s3::delete_route::DeleteObjectsRoute;
use crate::s3::{Limits, ReoS3};

/// How long in-flight requests may take to finish at shutdown.
pub const DRAIN: Duration = Duration::from_secs(30);

/// Users and limits of a server.
#[derive(Debug, Clone)]
pub struct ServerOptions {
    /// Who may sign requests, and what each may do.
    pub users: Arc<crate::users::Users>,
    /// What clients may send.
    pub limits: Limits,
    /// Accept Signature Version 2 (`crate::sigv2`; unsafe, for legacy clients only).
    pub allow_sigv2: bool,
    /// A request's header must have arrived this long after its connection became ready to read
    /// one, else the connection is closed (a client holding a connection with a trickle).
    pub header_timeout: std::time::Duration,
    /// Connections open at once ([`crate::accept`]); `None`: sized from the open-file limit.
    pub max_connections: Option<usize>,
    /// The bearer token Prometheus scrapes `/metrics` with ([`crate::scrape`]).
    pub metrics_token: Option<String>,
    /// What a request body must keep up ([`crate::slow_body`]).
    pub body_limits: crate::slow_body::BodyLimits,
    /// Requests one connection may carry; the last answer closes it.
    pub max_requests_per_connection: u64,
    /// A layer that sees every S3 request first (a cluster's routing), if any.
    pub interceptor: Option<Arc<dyn crate::intercept::Interceptor>>,
}

/// S3's bucket-name rules, plus `_reo` so `/_reo/...` paths reach the custom routes (the backend
/// still refuses `_reo` as a bucket).
struct Names;

impl NameValidation for Names {
    fn validate_bucket_name(&self, name: &str) -> bool {
        name == "_reo" || AwsNameValidation::new().validate_bucket_name(name)
    }
}

/// The custom routes s3s hands requests to once their signature is verified: Reo's API, and
/// DeleteObjects ([`crate::s3::delete_route`], for a bug of s3s's XML reader).
struct Routes {
    api: Api,
    delete: DeleteObjectsRoute,
}

#[async_trait::async_trait]
impl S3Route for Routes {
    fn is_match(&self, m: &http::Method, uri: &http::Uri, h: &http::HeaderMap, e: &mut http::Extensions) -> bool {
        DeleteObjectsRoute::matches(m, uri) || self.api.is_match(m, uri, h, e)
    }

    async fn check_access(&self, req: &mut S3Request<Body>) -> S3Result<()> {
        if DeleteObjectsRoute::matches(&req.method, &req.uri) {
            self.delete.check_access(req)
        } else {
            self.api.check_access(req).await
        }
    }

    async fn call(&self, req: S3Request<Body>) -> S3Result<S3Response<Body>> {
        if DeleteObjectsRoute::matches(&req.method, &req.uri) {
            self.delete.call(req).await
        } else {
            self.api.call(req).await
        }
    }
}

/// A message's declared body length (0 if it declares none).
fn content_length(h: &http::HeaderMap) -> u64 {
    h.get(http::header::CONTENT_LENGTH).and_then(|v| v.to_str().ok()).and_then(|v| v.parse().ok()).unwrap_or(0)
}

/// How a request's answer may come before `100 Continue` (see [`close_after_early_answer`]).
#[derive(Clone, Copy)]
struct Continue {
    /// The request asked for it (`Expect: 100-continue`).
    expected: bool,
    /// Its body is empty: the answer comes at once, with no 100 (nothing to wait for).
    empty: bool,
}

impl Continue {
    fn of(req: &http::Request<hyper::body::Incoming>) -> Continue {
        let h = req.headers();
        let expected = h.get(http::header::EXPECT).is_some_and(|v| v.as_bytes().eq_ignore_ascii_case(b"100-continue"));
        let empty = h.get(http::header::CONTENT_LENGTH).is_some_and(|v| v.as_bytes() == b"0");
        Continue { expected, empty }
    }
}

/// Closes the connection after an answer that came instead of `100 Continue` (an empty body, or
/// an error before the body was read). RFC 9110 allows such an early answer, and botocore takes
/// it as the answer — but keeps parsing the connection's later answers as if their status line
/// were that one (`AWSConnection.request` resets its response class only for requests without
/// `Expect`), so the next PUT on the connection hangs until its read timeout (60 s by default).
/// A closed connection makes botocore reset (its `close` restores the class), at the cost of one
/// new connection per such request.
fn close_after_early_answer<B>(c: Continue, resp: &mut http::Response<B>) {
    let error = resp.status().is_client_error() || resp.status().is_server_error();
    if c.expected && (c.empty || error) {
        resp.headers_mut().insert(http::header::CONNECTION, http::HeaderValue::from_static("close"));
    }
}

/// An address the server answers on: plain HTTP, or HTTPS with `tls`.
pub struct Listener {
    /// The bound socket.
    pub tcp: TcpListener,
    /// The TLS acceptor for HTTPS (`None`: plain HTTP).
    pub tls: Option<tokio_rustls::TlsAcceptor>,
}

/// Serves S3 on `listeners` until `shutdown` resolves, then drains.
pub async fn serve(
    listeners: Vec<Listener>,
    api: Api,
    opts: ServerOptions,
    shutdown: impl Future<Output = ()>,
) -> std::io::Result<()> {
    let s3 = ReoS3 { gw: api.gw.clone(), limits: opts.limits, users: opts.users.clone(), budget: api.budget.clone() };
    let mut b = S3ServiceBuilder::new(s3.clone());
    b.set_auth(crate::users::access::KeyAuth(opts.users.clone()));
    b.set_access(crate::users::access::RoleAccess(opts.users.clone()));
    let latency = api.metrics.clone();
    let access = Arc::new(crate::users::access::RoleAccess(opts.users.clone()));
    let scrape_api = api.clone();
    let denials = api.denials.clone();
    let metrics_token: Option<Arc<str>> = opts.metrics_token.as_deref().map(Arc::from);
    b.set_route(Routes { api, delete: DeleteObjectsRoute::new(s3, access) });
    b.set_validation(Names);
    let mut cfg = S3Config::default();
    cfg.xml_max_body_size = 2 << 20; // DeleteObjects of 1000 long keys fits
    b.set_config(Arc::new(StaticConfigProvider::new(Arc::new(cfg))));
    let service = b.build();
    let ids = std::sync::Arc::new(crate::request_id::RequestIds::default());
    let allow_sigv2 = opts.allow_sigv2;
    let mut http = ConnBuilder::new(TokioExecutor::new());
    http.http1().timer(hyper_util::rt::TokioTimer::new()).header_read_timeout(opts.header_timeout);
    let graceful = GracefulShutdown::new();
    let mut shutdown = std::pin::pin!(shutdown);
    let max_connections = opts.max_connections.unwrap_or_else(crate::accept::default_max_connections);
    tracing::info!(max_connections, header_timeout = ?opts.header_timeout, "connection limits");
    let (tcp, tls): (Vec<TcpListener>, Vec<_>) = listeners.into_iter().map(|l| (l.tcp, l.tls)).unzip();
    let mut acceptor = crate::accept::Acceptor::new(tcp, max_connections);
    let handshake_timeout = opts.header_timeout;
    let body_limits = opts.body_limits;
    let max_requests = opts.max_requests_per_connection.max(1);
    let interceptor = opts.interceptor.clone();
    loop {
        let (socket, which, permit) = tokio::select! {
            s = acceptor.accept() => s,
            _ = &mut shutdown => break,
        };
        let peer = socket.peer_addr().ok();
        // Requests served on this connection: past the limit, the answer closes it (a client
        // cannot keep one connection, and what it holds, for ever).
        let served = Arc::new(std::sync::atomic::AtomicU64::new(0));
        let (service, latency, ids) = (service.clone(), latency.clone(), ids.clone());
        let (scrape_api, denials, metrics_token) = (scrape_api.clone(), denials.clone(), metrics_token.clone());
        let interceptor = interceptor.clone();
        let is_tls = tls[which].is_some();
        let timed = hyper::service::service_fn(move |req: http::Request<hyper::body::Incoming>| {
            let op = crate::metrics::operation(req.method(), req.uri().path());
            let (service, latency, ids) = (service.clone(), latency.clone(), ids.clone());
            let interceptor = interceptor.clone();
            let (scrape_api, denials, metrics_token) = (scrape_api.clone(), denials.clone(), metrics_token.clone());
            let last = served.fetch_add(1, std::sync::atomic::Ordering::Relaxed) + 1 >= max_requests;
            let cont = Continue::of(&req);
            let (method, path) = (req.method().clone(), req.uri().path().to_string());
            let attributes = crate::s3::parts::is_attributes_request(req.method(), req.uri());
            let received = content_length(req.headers());
            async move {
                let t = std::time::Instant::now();
                let _in_flight = latency.begin();
                let id = ids.next();
                // Refused before s3s reads anything of the request.
                let early = crate::form_post::refuse(req.method(), req.headers())
                    .or_else(|| {
                        (!allow_sigv2).then(|| crate::sigv2::refuse(req.headers(), req.uri().query())).flatten()
                    })
                    .or_else(|| crate::presign::check(req.uri().query()));
                let scrape = if method == http::Method::GET && path == "/metrics" {
                    crate::scrape::bearer(metrics_token.as_deref(), req.headers())
                } else {
                    crate::scrape::Bearer::Absent
                };
                let console =
                    path == crate::console::PREFIX || path.starts_with(&format!("{}/", crate::console::PREFIX));
                let mut r = match (early, scrape) {
                    // The console is a web page, not S3: its own sign-in, no S3 refusals.
                    _ if console => {
                        let req = req.map(|b| s3s::Body::http_body(crate::slow_body::MinRate::new(b, body_limits)));
                        Ok(crate::console::handle(&scrape_api, req, is_tls, peer).await)
                    }
                    (Some(e), _) => e.to_http_response().map_err(|e| s3s::HttpError::new(Box::new(e))),
                    (None, crate::scrape::Bearer::Valid) => Ok(crate::scrape::answer(&scrape_api).await),
                    (None, crate::scrape::Bearer::Invalid) => Ok(crate::scrape::text(
                        http::StatusCode::UNAUTHORIZED,
                        "the bearer token is not this server's [metrics] token\n".into(),
                    )),
                    (None, crate::scrape::Bearer::Absent) => {
                        let req = req.map(|b| s3s::Body::http_body(crate::slow_body::MinRate::new(b, body_limits)));
                        match interceptor {
                            Some(i) => {
                                let local: crate::intercept::LocalService =
                                    Box::new(move |req| Box::pin(async move { service.call(req).await }));
                                i.handle(req, local).await
                            }
                            None => service.call(req).await,
                        }
                    }
                };
                if let (true, Ok(resp)) = (attributes, &mut r) {
                    if resp.status().is_success() {
                        // Small (1,000 parts at most); see `unquote_etag` for why.
                        match std::mem::take(resp.body_mut()).store_all_limited(4 << 20).await {
                            Ok(body) => *resp.body_mut() = s3s::Body::from(crate::s3::parts::unquote_etag(&body)),
                            Err(e) => {
                                *resp.status_mut() = http::StatusCode::INTERNAL_SERVER_ERROR;
                                *resp.body_mut() = s3s::Body::from(format!("GetObjectAttributes: {e}\n"));
                            }
                        }
                        resp.headers_mut().remove(http::header::CONTENT_LENGTH);
                    }
                }
                if let (false, Ok(resp)) = (console, &mut r) {
                    // An object shown by a browser (a presigned GET with `response-content-type:
                    // text/html`) runs in an opaque origin: its script cannot use the console's
                    // session on this origin, read its pages or send its actions.
                    resp.headers_mut()
                        .entry(http::header::CONTENT_SECURITY_POLICY)
                        .or_insert(http::HeaderValue::from_static("sandbox"));
                }
                if let Ok(resp) = &r {
                    let sent = if method == http::Method::HEAD { 0 } else { content_length(resp.headers()) };
                    latency.observe(op, resp.status().as_u16(), t.elapsed(), received, sent);
                    let status = resp.status().as_u16();
                    if status == 401 || status == 403 {
                        denials.record(status, method.as_str(), &path, peer, std::time::Instant::now());
                    }
                }
                if let Ok(resp) = &mut r {
                    close_after_early_answer(cont, resp);
                    if last {
                        resp.headers_mut().insert(http::header::CONNECTION, http::HeaderValue::from_static("close"));
                    }
                    ids.stamp(&id, resp);
                }
                if let Ok(resp) = &r {
                    tracing::debug!(
                        op,
                        request_id = id.as_str(),
                        status = resp.status().as_u16(),
                        elapsed_us = t.elapsed().as_micros() as u64,
                        "request"
                    );
                }
                r
            }
        });
        let (watcher, http, tls) = (graceful.watcher(), http.clone(), tls[which].clone());
        tokio::spawn(async move {
            match tls {
                None => {
                    let _ = watcher.watch(http.serve_connection(TokioIo::new(socket), timed).into_owned()).await;
                }
                // The handshake is bounded like a request header: a client that never finishes
                // it holds a connection slot no longer.
                Some(tls) => match tokio::time::timeout(handshake_timeout, tls.accept(socket)).await {
                    Ok(Ok(stream)) => {
                        let _ = watcher.watch(http.serve_connection(TokioIo::new(stream), timed).into_owned()).await;
                    }
                    Ok(Err(e)) => tracing::debug!(?peer, "TLS handshake failed: {e}"),
                    Err(_) => tracing::debug!(?peer, "TLS handshake not finished within {handshake_timeout:?}"),
                },
            }
            drop(permit);
        });
    }
    drop(acceptor);
    if tokio::time::timeout(DRAIN, graceful.shutdown()).await.is_err() {
        tracing::warn!("requests still running after {DRAIN:?}; closing anyway");
    }
    Ok(())
}
