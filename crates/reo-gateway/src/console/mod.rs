//! The web console at `/_reo/console` (docs/OPERATIONS.md): the array's devices and their health
//! and I/O, a rebuild's progress by class, classes and schemes with their space and H_hot, hit
//! ratio, request rate and latency over the last hour, dirty data and flush lag, the backend's
//! state and the hints in force; for admins, actions (fail or replace a device, flush, scrub)
//! behind a confirmation.
//!
//! Server-rendered HTML and one small script, embedded in the binary (no CDN, no framework: the
//! page is a few tables and two line charts drawn as SVG). A browser cannot sign SigV4: a user
//! signs in with a key pair once and gets a session ([`sessions`]); every state-changing request
//! carries the session's CSRF token in a header and, when the browser sends one, an `Origin` of
//! this server. The console shows the array's state, which only admins may read through the API
//! (docs/SECURITY.md), so only admin keys may sign in, and a session's user and role are looked
//! up on every request: a removed admin's session, or one whose key was rotated, ends at once.
//! The form sends a secret key, so it is refused over plain HTTP except from this host.

pub mod history;
pub mod sessions;
pub mod state;

use std::net::SocketAddr;
use std::sync::Arc;

use http::{header, HeaderMap, HeaderValue, Method, Request, Response, StatusCode};

use crate::api::Api;
use crate::users::{Role, User};
use sessions::{same_token, Session};

/// Where the console is served.
pub const PREFIX: &str = "/_reo/console";
/// The session cookie's name.
const COOKIE: &str = "reo_console";
/// Bytes of a sign-in form at most.
const MAX_FORM: usize = 4096;

const LOGIN_HTML: &str = include_str!("assets/login.html");
const CONSOLE_HTML: &str = include_str!("assets/console.html");
const CONSOLE_JS: &str = include_str!("assets/console.js");
const CONSOLE_CSS: &str = include_str!("assets/console.css");

/// Samples the history every [`history::INTERVAL`] until the runtime stops.
pub async fn sample_forever(api: Api) {
    let mut tick = tokio::time::interval(history::INTERVAL);
    tick.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Skip);
    loop {
        tick.tick().await;
        let a = api.clone();
        let sample = move || {
            let cs = a.gw.cache.stats();
            let (requests, request_us) = a.metrics.totals();
            a.console.history().record(history::Counters { reads: cs.requests, hits: cs.hits, requests, request_us });
        };
        if tokio::task::spawn_blocking(sample).await.is_err() {
            return;
        }
    }
}

/// A request under [`PREFIX`], as the server received it.
pub struct ConsoleRequest {
    /// Its method.
    pub method: Method,
    /// Its path.
    pub path: String,
    /// Its query string.
    pub query: Option<String>,
    /// Its headers.
    pub headers: HeaderMap,
    /// Whether it came over TLS (cookies are then `Secure`).
    pub tls: bool,
    /// The client's address (sign-in failures are limited per address).
    pub peer: Option<SocketAddr>,
}

/// Answers a console request (a sign-in form's body is read up to [`MAX_FORM`] bytes).
pub async fn handle(api: &Api, req: Request<s3s::Body>, tls: bool, peer: Option<SocketAddr>) -> Response<s3s::Body> {
    let (parts, body) = req.into_parts();
    let r = ConsoleRequest {
        method: parts.method,
        path: parts.uri.path().to_string(),
        query: parts.uri.query().map(str::to_string),
        headers: parts.headers,
        tls,
        peer,
    };
    let mut resp = route(api, &r, body).await;
    let h = resp.headers_mut();
    // The page loads only its own script and style; it is never framed, sniffed or cached.
    // `same-origin` referrers (not `no-referrer`): under `no-referrer` a browser sends
    // `Origin: null` with the sign-in form, which the origin check must refuse.
    h.insert(
        header::CONTENT_SECURITY_POLICY,
        HeaderValue::from_static(
            "default-src 'none'; script-src 'self'; style-src 'self'; img-src 'self' data:; connect-src 'self'; \
             form-action 'self'; frame-ancestors 'none'; base-uri 'none'",
        ),
    );
    h.insert(header::X_CONTENT_TYPE_OPTIONS, HeaderValue::from_static("nosniff"));
    h.insert(header::X_FRAME_OPTIONS, HeaderValue::from_static("DENY"));
    h.insert(header::REFERRER_POLICY, HeaderValue::from_static("same-origin"));
    h.insert(header::CACHE_CONTROL, HeaderValue::from_static("no-store"));
    resp
}

async fn route(api: &Api, r: &ConsoleRequest, body: s3s::Body) -> Response<s3s::Body> {
    let sub = r.path.strip_prefix(PREFIX).unwrap_or("");
    match (&r.method, sub) {
        (&Method::GET, "" | "/") => match signed_in(api, r) {
            Some((_, s)) => page(StatusCode::OK, &CONSOLE_HTML.replace("{{csrf}}", &s.csrf)),
            None => login_page(StatusCode::OK, ""),
        },
        (&Method::GET, "/console.js") => asset(CONSOLE_JS, "text/javascript; charset=utf-8"),
        (&Method::GET, "/console.css") => asset(CONSOLE_CSS, "text/css; charset=utf-8"),
        (&Method::POST, "/login") => login(api, r, body).await,
        (&Method::POST, "/logout") => match signed_in(api, r) {
            Some((token, s)) if csrf_ok(r, &s) => {
                api.console.sessions().end(&token);
                redirect(&clear_cookie(r.tls))
            }
            _ => text(StatusCode::FORBIDDEN, "not signed in, or the request did not come from the console"),
        },
        (&Method::GET, "/api/state") => match signed_in(api, r) {
            Some((_, s)) => {
                let api = api.clone();
                match tokio::task::spawn_blocking(move || state(&api, &s)).await {
                    Ok(v) => json(StatusCode::OK, &v),
                    Err(e) => text(StatusCode::INTERNAL_SERVER_ERROR, &format!("state failed: {e}")),
                }
            }
            None => text(StatusCode::UNAUTHORIZED, "sign in first"),
        },
        (&Method::POST, "/api/action") => action(api, r).await,
        _ => text(StatusCode::NOT_FOUND, "no such console page"),
    }
}

/// The session a request's cookie names, if live and its user is still an admin.
fn signed_in(api: &Api, r: &ConsoleRequest) -> Option<(String, Session)> {
    let token = cookie(&r.headers, COOKIE)?;
    let s = api.console.sessions().get(&token)?;
    match api.users.lookup(&s.access_key) {
        Some((u, secret)) if u.role == Role::Admin && s.opened_with(&secret) => Some((token, s)),
        _ => {
            api.console.sessions().end(&token);
            None
        }
    }
}

/// Whether a state-changing request carries the session's CSRF token and, if the browser said
/// where it comes from, comes from this server.
fn csrf_ok(r: &ConsoleRequest, s: &Session) -> bool {
    let sent = r.headers.get("x-reo-csrf").and_then(|v| v.to_str().ok()).unwrap_or("");
    same_token(sent, &s.csrf) && same_origin(&r.headers)
}

/// No `Origin` (not a browser's cross-site request), or one whose host is this request's `Host`.
fn same_origin(h: &HeaderMap) -> bool {
    let Some(origin) = h.get(header::ORIGIN).and_then(|v| v.to_str().ok()) else { return true };
    let host = h.get(header::HOST).and_then(|v| v.to_str().ok()).unwrap_or("");
    let origin_host = origin.split_once("://").map_or("", |(_, rest)| rest);
    !host.is_empty() && origin_host.eq_ignore_ascii_case(host)
}

async fn login(api: &Api, r: &ConsoleRequest, mut body: s3s::Body) -> Response<s3s::Body> {
    if !same_origin(&r.headers) {
        return login_page(StatusCode::FORBIDDEN, "This sign-in did not come from this server's page.");
    }
    let ip = r.peer.map(|p| p.ip());
    if !r.tls && !ip.is_some_and(|ip| ip.is_loopback()) {
        // The form carries the secret itself (SigV4 never does): not in clear over a network.
        return login_page(
            StatusCode::FORBIDDEN,
            "Sign in over HTTPS (the TLS listener, --tls-listen): this form sends the secret key, which plain HTTP would show to the network.",
        );
    }
    if !api.console.sessions().attempt(ip) {
        return login_page(StatusCode::TOO_MANY_REQUESTS, "Too many failed sign-ins: wait a minute.");
    }
    let form = match body.store_all_limited(MAX_FORM).await {
        Ok(b) => b,
        Err(_) => return login_page(StatusCode::PAYLOAD_TOO_LARGE, "The sign-in form was too large."),
    };
    let fields: Vec<(String, String)> = form_urlencoded(&form);
    let field = |k: &str| fields.iter().find(|(n, _)| n == k).map(|(_, v)| v.as_str()).unwrap_or("");
    let (access, secret) = (field("access_key").trim(), field("secret_key").trim());
    let user = api.users.lookup(access).filter(|(_, s)| same_token(s, secret)).map(|(u, _)| u);
    let Some(user) = user else {
        return login_page(
            StatusCode::UNAUTHORIZED,
            "That access key and secret key do not match a user of this server.",
        );
    };
    if user.role != Role::Admin {
        return login_page(
            StatusCode::FORBIDDEN,
            &format!(
                "User {} is not an admin: the console shows the array's state, which only admins may read.",
                user.name
            ),
        );
    }
    api.console.sessions().succeeded(ip);
    match api.console.sessions().create(access, secret) {
        Ok((token, _)) => {
            tracing::info!(user = user.name.as_str(), "console sign-in");
            redirect(&session_cookie(&token, r.tls))
        }
        Err(e) => login_page(StatusCode::INTERNAL_SERVER_ERROR, &format!("No session could be made: {e}")),
    }
}

/// What the console page shows (its script polls it).
fn state(api: &Api, s: &Session) -> serde_json::Value {
    let user: Option<Arc<User>> = api.users.user(&s.access_key);
    let cache = &api.gw.cache;
    let occ = api.occupancy.of(cache);
    let schemes = cache.class_schemes();
    let classes: Vec<_> = reo_cache::Class::ALL
        .iter()
        .map(|&c| {
            let (objects, bytes) = occ[c as usize];
            serde_json::json!({"class": crate::metrics::class_name(c), "scheme": schemes.of(c).to_string(),
                               "objects": objects, "bytes": bytes})
        })
        .collect();
    let rebuild_classes: Vec<_> = cache
        .store()
        .rebuild_progress()
        .or_else(|| api.last_rebuild.lock().as_ref().map(|h| h.progress()))
        .map(|p| {
            p.classes
                .iter()
                .map(|(c, cp)| {
                    serde_json::json!({"class": reo_cache::Class::ALL.get(usize::from(*c)).map_or("other", |&c| crate::metrics::class_name(c)),
                                       "bytes_done": cp.bytes_done, "bytes_total": cp.bytes_total,
                                       "blobs_lost": cp.blobs_lost})
                })
                .collect()
        })
        .unwrap_or_default();
    let hints = match &user {
        Some(u) => crate::api::hints::list(api, u).body,
        None => serde_json::Value::Null,
    };
    serde_json::json!({
        "user": user.map(|u| u.name.clone()),
        "status": crate::api::admin::status(api),
        "classes": classes,
        "hot_threshold": finite(cache.hot_threshold()),
        "space_efficiency": cache.space_efficiency(),
        "rebuild_classes": rebuild_classes,
        "history": api.console.history().samples(),
        "history_interval_seconds": history::INTERVAL.as_secs(),
        "scrub": {"running": api.scrubs.snapshot().running},
        "hints": hints,
    })
}

/// JSON has no infinity: H_hot = ∞ (nothing hot) is sent as null.
fn finite(x: f64) -> Option<f64> {
    x.is_finite().then_some(x)
}

async fn action(api: &Api, r: &ConsoleRequest) -> Response<s3s::Body> {
    let Some((_, s)) = signed_in(api, r) else { return text(StatusCode::UNAUTHORIZED, "sign in first") };
    if !csrf_ok(r, &s) {
        return text(StatusCode::FORBIDDEN, "the request did not come from the console (CSRF token or origin)");
    }
    let params = r.query.as_deref().map(|q| form_urlencoded(q.as_bytes())).unwrap_or_default();
    let what = params.iter().find(|(k, _)| k == "what").map(|(_, v)| v.clone()).unwrap_or_default();
    let endpoint = match what.as_str() {
        "fail" => "device/fail",
        "replace" => "device/replace",
        "flush" => "flush",
        "scrub" => "scrub",
        _ => return text(StatusCode::BAD_REQUEST, "what: expected fail, replace, flush or scrub"),
    };
    let user = api.users.user(&s.access_key).map_or_else(String::new, |u| u.name.clone());
    tracing::info!(user = user.as_str(), action = endpoint, "console action");
    let api = api.clone();
    match tokio::task::spawn_blocking(move || crate::api::admin::dispatch(&api, &Method::POST, endpoint, &params)).await
    {
        Ok(reply) => json(reply.status, &reply.body),
        Err(e) => text(StatusCode::INTERNAL_SERVER_ERROR, &format!("{endpoint} failed: {e}")),
    }
}

/// `application/x-www-form-urlencoded` pairs (also a query string's).
fn form_urlencoded(b: &[u8]) -> Vec<(String, String)> {
    String::from_utf8_lossy(b)
        .split('&')
        .filter(|p| !p.is_empty())
        .map(|p| {
            let (k, v) = p.split_once('=').unwrap_or((p, ""));
            (crate::api::percent_decode(k), crate::api::percent_decode(v))
        })
        .collect()
}

/// The value of cookie `name`.
fn cookie(h: &HeaderMap, name: &str) -> Option<String> {
    h.get_all(header::COOKIE).iter().filter_map(|v| v.to_str().ok()).flat_map(|v| v.split(';')).find_map(|c| {
        let (k, v) = c.trim().split_once('=')?;
        (k == name).then(|| v.to_string())
    })
}

fn session_cookie(token: &str, tls: bool) -> String {
    format!(
        "{COOKIE}={token}; Path={PREFIX}; HttpOnly; SameSite=Strict; Max-Age={}{}",
        sessions::SESSION_TTL.as_secs(),
        if tls { "; Secure" } else { "" }
    )
}

fn clear_cookie(tls: bool) -> String {
    format!("{COOKIE}=; Path={PREFIX}; HttpOnly; SameSite=Strict; Max-Age=0{}", if tls { "; Secure" } else { "" })
}

/// Escapes text for HTML.
fn escape(s: &str) -> String {
    s.replace('&', "&amp;").replace('<', "&lt;").replace('>', "&gt;").replace('"', "&quot;").replace('\'', "&#39;")
}

fn login_page(status: StatusCode, message: &str) -> Response<s3s::Body> {
    let msg = if message.is_empty() {
        String::new()
    } else {
        format!("<p class=\"error\" id=\"error\">{}</p>", escape(message))
    };
    page(status, &LOGIN_HTML.replace("{{message}}", &msg))
}

fn respond(status: StatusCode, content_type: &'static str, body: String) -> Response<s3s::Body> {
    let mut r = Response::new(s3s::Body::from(body));
    *r.status_mut() = status;
    r.headers_mut().insert(header::CONTENT_TYPE, HeaderValue::from_static(content_type));
    r
}

fn page(status: StatusCode, html: &str) -> Response<s3s::Body> {
    respond(status, "text/html; charset=utf-8", html.to_string())
}

fn asset(body: &'static str, content_type: &'static str) -> Response<s3s::Body> {
    respond(StatusCode::OK, content_type, body.to_string())
}

fn text(status: StatusCode, msg: &str) -> Response<s3s::Body> {
    respond(status, "text/plain; charset=utf-8", format!("{msg}\n"))
}

fn json(status: StatusCode, v: &serde_json::Value) -> Response<s3s::Body> {
    respond(status, "application/json", v.to_string())
}

/// 303 to the console, setting `cookie`.
fn redirect(cookie: &str) -> Response<s3s::Body> {
    let mut r = respond(StatusCode::SEE_OTHER, "text/plain; charset=utf-8", String::new());
    r.headers_mut().insert(header::LOCATION, HeaderValue::from_static(PREFIX));
    if let Ok(v) = HeaderValue::from_str(cookie) {
        r.headers_mut().insert(header::SET_COOKIE, v);
    }
    r
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn cookies_forms_and_origins_are_parsed() {
        let mut h = HeaderMap::new();
        h.insert(header::COOKIE, "a=1; reo_console=tok; b=2".parse().unwrap());
        assert_eq!(cookie(&h, COOKIE).as_deref(), Some("tok"));
        assert_eq!(
            form_urlencoded(b"access_key=AK&secret_key=a%2Bb%3D"),
            vec![("access_key".into(), "AK".into()), ("secret_key".into(), "a+b=".into())]
        );
        h.insert(header::HOST, "127.0.0.1:9000".parse().unwrap());
        assert!(same_origin(&h), "no Origin: not a cross-site browser request");
        h.insert(header::ORIGIN, "http://127.0.0.1:9000".parse().unwrap());
        assert!(same_origin(&h));
        h.insert(header::ORIGIN, "https://evil.example".parse().unwrap());
        assert!(!same_origin(&h));
        assert!(session_cookie("t", true).contains("; Secure") && !session_cookie("t", false).contains("Secure"));
        assert!(session_cookie("t", false).contains("HttpOnly; SameSite=Strict"));
        assert_eq!(escape("<a href=\"x\">'&"), "&lt;a href=&quot;x&quot;&gt;&#39;&amp;");
    }
}
