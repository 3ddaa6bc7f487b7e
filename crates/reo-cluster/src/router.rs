//! Where each S3 request goes ([`Router`], the gateway's [`Interceptor`]): peer requests to the
//! peer API; a write to its key's home node (forwarded there with the client's signature
//! intact, or handled here if this node is home); a read served from this node's cache while it
//! holds a caching permission (or is the key's home), else fetched from the home node through
//! the gateway's miss path ([`crate::backend::ClusterBackend`]). Bucket-level requests and
//! Reo's API are this node's own.

use std::sync::Arc;
use std::time::Duration;

use reo_gateway::gateway::pending::cache_key;
use reo_gateway::intercept::{Answer, Interceptor, LocalService};

use crate::answers::{bucket_key, slowdown};
use crate::node::Node;
use crate::peer::H_FORWARDED;

/// Longest a write waits for a membership change or failover to settle before `503 SlowDown`.
pub const SETTLE_WAIT: Duration = Duration::from_secs(10);

/// What kind of request it is.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Kind {
    /// A node-to-node request (`/_reo/peer/...`).
    Peer,
    /// This node's own: the API, `/metrics`, bucket operations and listings.
    Local,
    /// GET or HEAD of an object.
    Read {
        /// Its bucket.
        bucket: String,
        /// Its key.
        key: String,
    },
    /// Any write to an object (PUT, DELETE, POST); `changes`: it changes the object (not a
    /// part upload, an abort or the start of an upload).
    Write {
        /// Its bucket.
        bucket: String,
        /// Its key.
        key: String,
        /// Whether it changes the object.
        changes: bool,
    },
    /// DeleteObjects on a bucket.
    DeleteMany {
        /// The bucket.
        bucket: String,
    },
}

fn has_param(query: Option<&str>, name: &str) -> bool {
    query.unwrap_or("").split('&').any(|p| p.split('=').next() == Some(name))
}

/// Classifies a request.
pub fn classify(method: &http::Method, uri: &http::Uri) -> Kind {
    let path = uri.path();
    if path.starts_with("/_reo/peer/") {
        return Kind::Peer;
    }
    if path.starts_with("/_reo/") || path == "/metrics" {
        return Kind::Local;
    }
    let q = uri.query();
    match bucket_key(path) {
        (Some(bucket), None) if method == http::Method::POST && has_param(q, "delete") => Kind::DeleteMany { bucket },
        (Some(bucket), Some(key)) => match *method {
            http::Method::GET | http::Method::HEAD => Kind::Read { bucket, key },
            _ => {
                let upload = has_param(q, "uploadId");
                let part = upload && has_param(q, "partNumber");
                let start = method == http::Method::POST && has_param(q, "uploads");
                let abort = method == http::Method::DELETE && upload;
                Kind::Write { bucket, key, changes: !(part || start || abort) }
            }
        },
        _ => Kind::Local,
    }
}

/// The cluster's interceptor.
pub struct Router(pub Arc<Node>);

impl std::fmt::Debug for Router {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "Router({})", self.0.me())
    }
}

#[async_trait::async_trait]
impl Interceptor for Router {
    async fn handle(&self, req: http::Request<s3s::Body>, local: LocalService) -> Answer {
        let node = &self.0;
        match classify(req.method(), req.uri()) {
            Kind::Peer => crate::peer_api::handle(node, req).await,
            Kind::Local => local(req).await,
            Kind::Read { bucket, key } => read(node, req, local, &bucket, &key).await,
            Kind::Write { bucket, key, changes } => write(node, req, local, &bucket, &key, changes).await,
            Kind::DeleteMany { bucket } => crate::writes::delete_many(node, req, local, &bucket).await,
        }
    }
}

async fn read(node: &Arc<Node>, req: http::Request<s3s::Body>, local: LocalService, bucket: &str, key: &str) -> Answer {
    let view = node.view();
    let Some((home, _)) = Node::home_of(&view, bucket, key) else {
        return slowdown("this node has not joined its cluster yet");
    };
    let gw = node.gw().clone();
    let ck = cache_key(bucket, key);
    let id = view.id();
    if node.membership.fenced() {
        // The cluster may have failed this node over and written newer versions since: only a
        // copy under a live permission (which no write has revoked) may be served.
        if home != node.me() && node.holdings.valid(&ck, &id, false) {
            node.count(|c| c.permission_hits += 1);
            return local(req).await;
        }
        return slowdown(
            "this node cannot reach etcd (its cluster lease may have expired): it serves only objects it \
             holds a live caching permission for",
        );
    }
    // The newest version of an unflushed object is the one here.
    if gw.dirty_state(bucket, key).is_some() {
        return local(req).await;
    }
    if home == node.me() {
        if !view.settled() {
            if let Some(answer) = crate::reads::newer_elsewhere(node, &req, bucket, key).await {
                return answer;
            }
        }
    } else if node.holdings.valid(&ck, &id, false) {
        node.count(|c| c.permission_hits += 1);
        return local(req).await;
    }
    if !node.holdings.valid(&ck, &id, home == node.me()) {
        let (b, k) = (bucket.to_string(), key.to_string());
        node.blocking(move || gw.drop_clean(&b, &k)).await;
    }
    local(req).await
}

/// Verifies the forwarding mark of a request: `Ok(None)`: not forwarded; `Ok(Some(view))`:
/// forwarded by a member in membership `view`.
pub(crate) fn forwarded(node: &Node, req: &http::Request<s3s::Body>) -> Result<Option<String>, crate::auth::AuthError> {
    let Some(view) = req.headers().get(H_FORWARDED) else { return Ok(None) };
    let pq = req.uri().path_and_query().map_or("/", |p| p.as_str());
    node.peers.key().verify(req.method().as_str(), pq, req.headers())?;
    Ok(Some(view.to_str().unwrap_or("").to_string()))
}

/// The answer to a forged or stale forwarding mark.
pub(crate) fn denied(e: crate::auth::AuthError) -> Answer {
    crate::answers::error(s3s::s3_error!(AccessDenied, "{e}"))
}

async fn write(
    node: &Arc<Node>,
    req: http::Request<s3s::Body>,
    local: LocalService,
    bucket: &str,
    key: &str,
    changes: bool,
) -> Answer {
    if node.leaving() {
        return slowdown("this node is leaving or has left its cluster; send writes to another node");
    }
    if node.membership.fenced() {
        return slowdown(
            "this node cannot reach etcd (its cluster lease may have expired): writes need cluster \
             coordination and are refused until it has re-joined",
        );
    }
    let fwd = match forwarded(node, &req) {
        Ok(f) => f,
        Err(e) => return denied(e),
    };
    let view = node.view();
    let Some((home, addr)) = Node::home_of(&view, bucket, key) else {
        return slowdown("this node has not joined its cluster yet");
    };
    if home != node.me() {
        if fwd.is_some() {
            return slowdown("the cluster's membership is changing (nodes disagree on the home of this key); retry");
        }
        node.count(|c| c.forwarded_writes += 1);
        return match node.peers.forward(&addr, &view.id(), req).await {
            Ok(answer) => answer,
            Err(e) => slowdown(format!("the home node of this key is unreachable: {e}")),
        };
    }
    if fwd.is_some_and(|v| v != view.id()) {
        return slowdown("the cluster's membership is changing (nodes disagree on the membership); retry");
    }
    if !wait_settled(node).await {
        return slowdown("the cluster's membership is changing (a hand-over or failover is under way); retry");
    }
    crate::writes::home_write(node, req, local, (bucket, key), changes, &view.id()).await
}

/// Waits until the view is settled (at most [`SETTLE_WAIT`]); whether it is.
pub(crate) async fn wait_settled(node: &Node) -> bool {
    let mut rx = node.membership.subscribe();
    let deadline = tokio::time::Instant::now() + SETTLE_WAIT;
    loop {
        if rx.borrow_and_update().settled() {
            return true;
        }
        if tokio::time::timeout_at(deadline, rx.changed()).await.is_err() {
            return false;
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn kind(m: &str, u: &str) -> Kind {
        classify(&m.parse().unwrap(), &u.parse().unwrap())
    }

    #[test]
    fn requests_are_classified() {
        let w = |changes| Kind::Write { bucket: "b".into(), key: "k".into(), changes };
        assert_eq!(kind("GET", "/b/k"), Kind::Read { bucket: "b".into(), key: "k".into() });
        assert_eq!(kind("PUT", "/b/k"), w(true));
        assert_eq!(kind("PUT", "/b/k?partNumber=1&uploadId=x"), w(false));
        assert_eq!(kind("POST", "/b/k?uploads"), w(false));
        assert_eq!(kind("POST", "/b/k?uploadId=x"), w(true));
        assert_eq!(kind("DELETE", "/b/k?uploadId=x"), w(false));
        assert_eq!(kind("DELETE", "/b/k"), w(true));
        assert_eq!(kind("POST", "/b?delete"), Kind::DeleteMany { bucket: "b".into() });
        assert_eq!(kind("GET", "/b?list-type=2"), Kind::Local);
        assert_eq!(kind("PUT", "/b"), Kind::Local);
        assert_eq!(kind("GET", "/"), Kind::Local);
        assert_eq!(kind("GET", "/_reo/admin/cluster"), Kind::Local);
        assert_eq!(kind("PUT", "/_reo/peer/replica?x=1"), Kind::Peer);
    }
}
