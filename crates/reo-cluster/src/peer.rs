//! Requests to other nodes ([`Peers`]): signed peer calls (see [`crate::auth`]) with a timeout,
//! and the forwarding of a client's request to the key's home node with its body streamed and
//! its own signature intact.

use std::time::Duration;

use bytes::Bytes;
use reo_gateway::intercept::Answer;

use crate::auth::{sha256_hex, PeerKey, UNSIGNED};

/// Marks a client request a member forwarded (its value: the member's view id).
pub const H_FORWARDED: &str = "x-reo-forwarded";
/// Hex JSON of an object's info on a peer answer or replica.
pub const H_INFO: &str = "x-reo-info";
/// The version of a replica or copy on an answer.
pub const H_VERSION: &str = "x-reo-version";
/// `1` on the answer of a deleted key.
pub const H_DELETED: &str = "x-reo-deleted";
/// The S3 error code of a failed object read (`NoSuchKey`, `NoSuchBucket`).
pub const H_ERROR: &str = "x-reo-error";

/// An object's info as `x-reo-info` carries it.
pub fn info_hex(info: &reo_gateway::backend::ObjectInfo) -> String {
    reo_gateway::hex::hex(&serde_json::to_vec(info).unwrap_or_default())
}

/// Parses `x-reo-info`.
pub fn parse_info(headers: &http::HeaderMap) -> Option<reo_gateway::backend::ObjectInfo> {
    let v = headers.get(H_INFO)?.to_str().ok()?;
    serde_json::from_slice(&reo_gateway::hex::decode(v)?).ok()
}

/// Why a peer call failed.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum PeerError {
    /// The peer could not be reached or did not answer in time.
    #[error("node {node} ({addr}) unreachable: {source}")]
    Unreachable {
        /// Its id.
        node: String,
        /// Its address.
        addr: String,
        /// Why.
        source: reqwest::Error,
    },
    /// It answered with an error status.
    #[error("node {node} answered {status}: {body}")]
    Status {
        /// Its id.
        node: String,
        /// The status.
        status: u16,
        /// The answer's body (its start).
        body: String,
    },
}

impl PeerError {
    /// The HTTP status of an answer, if it was one.
    pub fn status(&self) -> Option<u16> {
        match self {
            PeerError::Status { status, .. } => Some(*status),
            PeerError::Unreachable { .. } => None,
        }
    }
}

/// A peer's answer: status, headers, body.
#[derive(Debug)]
pub struct PeerAnswer {
    /// Its headers.
    pub headers: http::HeaderMap,
    /// Its body.
    pub body: Bytes,
}

/// This node's client of its peers.
pub struct Peers {
    me: String,
    key: PeerKey,
    http: reqwest::Client,
    forward_http: reqwest::Client,
}

/// Headers of one hop only: not forwarded either way.
const HOP: [&str; 5] = ["connection", "keep-alive", "transfer-encoding", "expect", "upgrade"];

impl Peers {
    /// A client signing as `me` with `key`; peer calls time out after `timeout`.
    pub fn new(me: &str, key: PeerKey, timeout: Duration) -> Peers {
        let http = reqwest::Client::builder()
            .timeout(timeout)
            .connect_timeout(timeout)
            .pool_idle_timeout(Duration::from_secs(30))
            .build()
            .expect("a reqwest client without TLS builds");
        // A forwarded request is as long as its body takes; only connecting is bounded.
        let forward_http = reqwest::Client::builder()
            .connect_timeout(timeout)
            .pool_idle_timeout(Duration::from_secs(30))
            .build()
            .expect("a reqwest client without TLS builds");
        Peers { me: me.to_string(), key, http, forward_http }
    }

    /// The peer key (to verify requests).
    pub fn key(&self) -> &PeerKey {
        &self.key
    }

    /// A signed call of `node` at `addr`: `method path_query` with `body` and `headers`.
    pub async fn call(
        &self,
        node: &str,
        addr: &str,
        method: http::Method,
        path_query: &str,
        headers: &[(&str, String)],
        body: Bytes,
    ) -> Result<PeerAnswer, PeerError> {
        let mut rb = self.http.request(method.clone(), format!("http://{addr}{path_query}"));
        for (k, v) in self.key.sign(method.as_str(), path_query, &self.me, &sha256_hex(&body)) {
            rb = rb.header(k, v);
        }
        for (k, v) in headers {
            rb = rb.header(*k, v);
        }
        let unreachable = |source| PeerError::Unreachable { node: node.into(), addr: addr.into(), source };
        let resp = rb.body(body).send().await.map_err(unreachable)?;
        let status = resp.status();
        let headers = resp.headers().clone();
        let body = resp.bytes().await.map_err(unreachable)?;
        if !status.is_success() {
            let text = String::from_utf8_lossy(&body[..body.len().min(512)]).into_owned();
            return Err(PeerError::Status { node: node.into(), status: status.as_u16(), body: text });
        }
        Ok(PeerAnswer { headers, body })
    }

    /// Forwards a client's request to the home node at `addr`, marked as forwarded in membership
    /// `view`; the home node's answer, streamed back.
    pub async fn forward(&self, addr: &str, view: &str, req: http::Request<s3s::Body>) -> Result<Answer, PeerError> {
        let (parts, body) = req.into_parts();
        let pq = parts.uri.path_and_query().map_or("/", |p| p.as_str()).to_string();
        let mut rb = self.forward_http.request(parts.method.clone(), format!("http://{addr}{pq}"));
        for (k, v) in &parts.headers {
            if !HOP.contains(&k.as_str()) && !k.as_str().starts_with("x-reo-") {
                rb = rb.header(k, v);
            }
        }
        for (k, v) in self.key.sign(parts.method.as_str(), &pq, &self.me, UNSIGNED) {
            rb = rb.header(k, v);
        }
        rb = rb.header(H_FORWARDED, view);
        let resp = rb.body(reqwest::Body::wrap_stream(body)).send().await.map_err(|source| PeerError::Unreachable {
            node: "home".into(),
            addr: addr.into(),
            source,
        })?;
        let mut out = http::Response::builder().status(resp.status());
        for (k, v) in resp.headers() {
            if !HOP.contains(&k.as_str()) {
                out = out.header(k, v);
            }
        }
        let body = s3s::Body::http_body_unsync(reqwest::Body::from(resp));
        Ok(Ok(out.body(body).expect("copied status and headers are valid")))
    }
}
