//! Reo's own HTTP API on the S3 port (an s3s custom route): `GET /_reo/health` and (if
//! configured) `GET /metrics` are anonymous; everything else under `/_reo/` — [`hints`],
//! [`query`], [`admin`], [`users`] — needs a request SigV4-signed by one of the gateway's users
//! (s3s checks the signature before the route runs; an unsigned request has no credentials and is
//! denied), whose role allows it: `/_reo/admin/...` and signed `/metrics` are for admins; hints
//! and queries for any user on the keys of its scopes (submitting or cancelling a hint needs
//! `readwrite`). Answers are JSON; errors are `{"error": "..."}` with a 4xx/5xx status.

pub mod admin;
pub mod admin_types;
pub mod hints;
pub mod query;
pub mod replay;
pub mod scrubs;
pub mod users;

use std::path::PathBuf;
use std::sync::Arc;

use http::{Extensions, HeaderMap, HeaderValue, Method, StatusCode, Uri};
use s3s::route::S3Route;
use s3s::{s3_error, Body, S3Request, S3Response, S3Result};

use crate::gateway::Gateway;
use crate::hints::engine::HintEngine;
use crate::users::{Role, User, Users};

/// Largest request body the API reads (hint JSON).
const MAX_BODY: usize = 1 << 20;

/// What the API routes need.
#[derive(Clone)]
pub struct Api {
    /// The gateway's data path.
    pub gw: Arc<Gateway>,
    /// The hint engine (`/_reo/hints`).
    pub hints: Arc<HintEngine>,
    /// Size of each device file (a replacement device is created this large).
    pub device_bytes: u64,
    /// Relative replacement-device paths are taken from here.
    pub data_dir: PathBuf,
    /// Whether `/metrics` may be scraped without a signature.
    pub anonymous_metrics: bool,
    /// The request path's metrics (requests, latency, bytes, in flight), for `/metrics`.
    pub metrics: Arc<crate::metrics::RequestMetrics>,
    /// Scrubs run through the API.
    pub scrubs: Arc<scrubs::ScrubLog>,
    /// Objects and bytes by class, counted at most every few seconds.
    pub occupancy: Arc<crate::metrics::occupancy::Occupancy>,
    /// The web console's sessions and history.
    pub console: Arc<crate::console::state::Console>,
    /// The last rebuild started through the API: its outcome stays visible after it finishes
    /// (the store forgets a finished rebuild).
    pub last_rebuild: Arc<parking_lot::Mutex<Option<reo_store::RebuildHandle>>>,
    /// Per-device I/O counters (replacements are wrapped too).
    pub device_io: Arc<crate::device_io::DeviceIoTable>,
    /// Rebuild bandwidth cap in bytes per second for replacements that give none (`None`:
    /// as fast as the devices go).
    pub rebuild_bps: Option<u64>,
    /// The users, for `/_reo/admin/users` and access checks.
    pub users: Arc<Users>,
    /// Block devices a replacement may be (anything else is a new file in `data_dir`).
    pub replacement_devices: Vec<PathBuf>,
    /// Signatures of admin mutations already accepted.
    pub replays: Arc<replay::ReplayGuard>,
    /// Requests answered 401 or 403.
    pub denials: Arc<crate::denials::Denials>,
    /// Bytes of request bodies held in memory ([`crate::budget`]).
    pub budget: Arc<crate::budget::MemoryBudget>,
    /// The layer the gateway runs under (the cluster): `/_reo/admin/cluster`.
    pub extension: Option<Arc<dyn crate::intercept::Extension>>,
}

/// A JSON answer.
pub struct Reply {
    /// The HTTP status.
    pub status: StatusCode,
    /// The JSON body.
    pub body: serde_json::Value,
}

impl Reply {
    /// 200 with `body`.
    pub fn ok(body: serde_json::Value) -> Reply {
        Reply { status: StatusCode::OK, body }
    }

    /// 200 with one of [`admin_types`]' answers.
    pub fn typed(body: &impl serde::Serialize) -> Reply {
        match serde_json::to_value(body) {
            Ok(v) => Reply::ok(v),
            Err(e) => Reply::error(StatusCode::INTERNAL_SERVER_ERROR, format!("encoding the answer: {e}")),
        }
    }

    /// `status` with `{"error": msg}` ([`admin_types::ApiError`]).
    pub fn error(status: StatusCode, msg: impl Into<String>) -> Reply {
        // A struct of one string always encodes.
        let body = serde_json::to_value(admin_types::ApiError { error: msg.into() }).unwrap_or_default();
        Reply { status, body }
    }

    /// 403: the user's role or scopes do not allow it.
    pub fn denied(user: &User, what: impl std::fmt::Display) -> Reply {
        Reply::error(StatusCode::FORBIDDEN, format!("user {} may not {what}", user.describe()))
    }
}

/// The decoded query string of a request.
pub fn query_params(uri: &Uri) -> Vec<(String, String)> {
    uri.query()
        .unwrap_or("")
        .split('&')
        .filter(|p| !p.is_empty())
        .map(|p| {
            let (k, v) = p.split_once('=').unwrap_or((p, ""));
            (percent_decode(k), percent_decode(v))
        })
        .collect()
}

/// `%XX` and `+` decoding (invalid escapes are kept as they are).
pub fn percent_decode(s: &str) -> String {
    let b = s.as_bytes();
    let mut out = Vec::with_capacity(b.len());
    let mut i = 0;
    while i < b.len() {
        match b[i] {
            b'%' if i + 2 < b.len() => {
                match u8::from_str_radix(std::str::from_utf8(&b[i + 1..i + 3]).unwrap_or("zz"), 16) {
                    Ok(v) => {
                        out.push(v);
                        i += 3;
                        continue;
                    }
                    Err(_) => out.push(b'%'),
                }
            }
            b'+' => out.push(b' '),
            c => out.push(c),
        }
        i += 1;
    }
    String::from_utf8_lossy(&out).into_owned()
}

/// The value of the first parameter called `name`, if any.
pub fn param<'a>(params: &'a [(String, String)], name: &str) -> Option<&'a str> {
    params.iter().find(|(k, _)| k == name).map(|(_, v)| v.as_str())
}

#[async_trait::async_trait]
impl S3Route for Api {
    fn is_match(&self, _m: &Method, uri: &Uri, _h: &HeaderMap, _e: &mut Extensions) -> bool {
        uri.path() == "/metrics" || uri.path().starts_with("/_reo/")
    }

    async fn check_access(&self, req: &mut S3Request<Body>) -> S3Result<()> {
        let path = req.uri.path();
        let open = (req.method == Method::GET && path == "/_reo/health")
            || (req.method == Method::GET && path == "/metrics" && self.anonymous_metrics);
        if open {
            return Ok(());
        }
        let Some(user) = req.credentials.as_ref().and_then(|c| self.users.user(&c.access_key)) else {
            return Err(s3_error!(AccessDenied, "{path} needs a request signed by a user of this gateway"));
        };
        let admin_only = path.starts_with("/_reo/admin/") || path == "/metrics";
        let writes = path.starts_with("/_reo/hints") && req.method != Method::GET;
        if (admin_only && user.role != Role::Admin) || (writes && user.role == Role::ReadOnly) {
            return Err(s3_error!(AccessDenied, "user {} may not {} {path}", user.describe(), req.method));
        }
        // The API takes header signatures over a signed body hash only: a presigned URL's or an
        // UNSIGNED-PAYLOAD request's body could be swapped by whoever holds the request.
        let authorization = req.headers.get(http::header::AUTHORIZATION).and_then(|v| v.to_str().ok());
        let signed_body = req
            .headers
            .get("x-amz-content-sha256")
            .is_some_and(|v| v.len() == 64 && v.as_bytes().iter().all(u8::is_ascii_hexdigit));
        let Some(signature) = authorization.and_then(replay::signature_of).filter(|_| signed_body) else {
            return Err(s3_error!(
                AccessDenied,
                "{path} takes requests signed in the Authorization header with the body's SHA-256 in \
                 x-amz-content-sha256 (no presigned URLs, no UNSIGNED-PAYLOAD)"
            ));
        };
        if path.starts_with("/_reo/admin/") && req.method != Method::GET {
            match self.replays.admit(signature, std::time::Instant::now()) {
                Ok(()) => {}
                Err(replay::Replay::Seen) => {
                    return Err(s3_error!(
                        AccessDenied,
                        "this signed request was received already (a replay); sign it anew"
                    ))
                }
                Err(replay::Replay::Full) => {
                    return Err(s3_error!(SlowDown, "too many admin requests in the last 30 minutes; try again later"))
                }
            }
        }
        Ok(())
    }

    async fn call(&self, mut req: S3Request<Body>) -> S3Result<S3Response<Body>> {
        let path = req.uri.path().to_string();
        if path == "/_reo/health" || path == "/metrics" {
            let text = if path == "/metrics" { self.metrics_text().await? } else { "ok\n".into() };
            let mut resp = S3Response::new(Body::from(text));
            resp.headers.insert("content-type", HeaderValue::from_static("text/plain; version=0.0.4"));
            return Ok(resp);
        }
        let body = req
            .input
            .store_all_limited(MAX_BODY)
            .await
            .map_err(|e| s3_error!(InvalidRequest, "reading the request body: {e}"))?;
        let api = self.clone();
        let (method, uri) = (req.method.clone(), req.uri.clone());
        let user = req
            .credentials
            .as_ref()
            .and_then(|c| self.users.user(&c.access_key))
            .ok_or_else(|| s3_error!(AccessDenied, "the access key is no longer known"))?;
        let reply = tokio::task::spawn_blocking(move || api.dispatch(&user, &method, &uri, &body))
            .await
            .unwrap_or_else(|e| Reply::error(StatusCode::INTERNAL_SERVER_ERROR, format!("handler failed: {e}")));
        let text = serde_json::to_string_pretty(&reply.body).unwrap_or_default() + "\n";
        let mut resp = S3Response::new(Body::from(text));
        resp.status = Some(reply.status);
        resp.headers.insert("content-type", HeaderValue::from_static("application/json"));
        Ok(resp)
    }
}

impl Api {
    /// `/metrics`' text, rendered on the blocking pool: it takes the gateway's, the cache's and
    /// the hint engine's locks, which their holders may keep across I/O (an fsync'ed pending
    /// record, a hint file). Waiting for them on a runtime thread would stall every request that
    /// thread serves (with two cores, two such waits stall them all).
    pub(crate) async fn metrics_text(&self) -> S3Result<String> {
        let api = self.clone();
        tokio::task::spawn_blocking(move || crate::metrics::exposition::render(&api))
            .await
            .map_err(|e| s3_error!(InternalError, "metrics failed: {e}"))?
            .map_err(|e| s3_error!(InternalError, "metrics failed: {e}"))
    }

    /// Routes a signed API request of `user` (blocking: runs on tokio's blocking pool).
    fn dispatch(&self, user: &User, method: &Method, uri: &Uri, body: &[u8]) -> Reply {
        let path = uri.path();
        let params = query_params(uri);
        match (method.as_str(), path) {
            ("POST", "/_reo/hints") => hints::submit(self, user, body),
            ("GET", "/_reo/hints") | ("GET", "/_reo/admin/hints") => hints::list(self, user),
            ("DELETE", p) if p.starts_with("/_reo/hints/") => hints::cancel(self, user, &p["/_reo/hints/".len()..]),
            ("GET", "/_reo/query") => query::query(self, user, &params),
            (_, p) if p.starts_with("/_reo/admin/users") => {
                users::dispatch(self, method, &p["/_reo/admin/users".len()..], body)
            }
            (_, p) if p.starts_with("/_reo/admin/") => {
                admin::dispatch(self, method, &p["/_reo/admin/".len()..], &params)
            }
            _ => Reply::error(StatusCode::NOT_FOUND, format!("no API endpoint {method} {path}")),
        }
    }
}

#[cfg(test)]
mod tests {
    #[test]
    fn percent_decoding() {
        assert_eq!(super::percent_decode("a%2Fb+c%zz%4"), "a/b c%zz%4");
    }

    /// Regression: `/metrics` was rendered on the runtime thread, waiting there for the locks it
    /// reads. Here the runtime's only thread holds the pending map's lock while the metrics task
    /// runs: rendered off the runtime it waits on the blocking pool until the lock is let go;
    /// rendered on the runtime thread it would wait for ever (the test hangs, and CI's time
    /// bound names it).
    #[test]
    #[allow(clippy::await_holding_lock)] // on purpose: the runtime thread must hold it
    fn metrics_are_rendered_off_the_runtime_threads() {
        let rig = crate::gateway::tests::Rig::new();
        let (gw, _) = rig.open();
        let hints = crate::hints::engine::HintEngine::open(gw.clone(), &rig.dir.join("state"), 0).unwrap();
        let api = super::Api {
            gw: gw.clone(),
            hints,
            device_bytes: 0,
            data_dir: rig.dir.clone(),
            anonymous_metrics: true,
            metrics: Default::default(),
            scrubs: Default::default(),
            console: Default::default(),
            occupancy: Default::default(),
            last_rebuild: Default::default(),
            device_io: Default::default(),
            rebuild_bps: None,
            users: std::sync::Arc::new(crate::users::Users::with_admin("A".into(), "S".into(), None)),
            replacement_devices: Vec::new(),
            replays: Default::default(),
            denials: Default::default(),
            budget: crate::budget::MemoryBudget::new(1 << 30),
            extension: None,
        };
        let rt = tokio::runtime::Builder::new_current_thread().build().unwrap();
        let text = rt.block_on(async {
            let held = gw.pending();
            let task = tokio::spawn(async move { api.metrics_text().await });
            // The task runs now (up to its wait), on this thread, while the lock is held.
            tokio::task::yield_now().await;
            drop(held);
            task.await.unwrap().unwrap()
        });
        assert!(text.contains("reo_gateway_dirty_objects 0"), "{text}");
    }
}
