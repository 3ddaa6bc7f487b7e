//! Reads of a key whose newest copy may not be at its home node or in the backend:
//!
//! - while the cluster is not settled, a member that has not handed over yet may hold a newer,
//!   unflushed copy of a key that moved, and a failed node's newest writes may still be only in
//!   its replicas ([`newest_elsewhere`], asked by the home node before it reads the backend);
//! - while a home node is unreachable (dead, its lease not yet expired, or slow), its
//!   acknowledged unflushed writes are in their replicas on the other members
//!   ([`from_replicas`]); all of them only in a settled view, so the caller asks only then.
//!
//! The newest copy found is served (a whole-object GET or a HEAD through the router; any range
//! through the gateway's miss path). If a member that may hold a newer copy does not answer,
//! the read is refused (`503 SlowDown`) rather than answered from an older copy.

use std::sync::Arc;

use bytes::Bytes;
use futures::future::join_all;
use reo_gateway::backend::ObjectInfo;
use reo_gateway::intercept::Answer;

use crate::answers::slowdown;
use crate::node::Node;
use crate::peer::{parse_info, H_DELETED, H_VERSION};
use crate::view::View;
use crate::writes::enc;

/// A copy found: its version and the object (`None` for a delete).
type Copy = (u64, Option<(ObjectInfo, Vec<u8>)>);

/// What the other members hold of a key.
#[derive(Debug)]
pub enum Elsewhere {
    /// Nothing newer than the backend's (or this node's) copy.
    Nothing,
    /// The newest copy found: `None` for a delete.
    Found(Option<(ObjectInfo, Vec<u8>)>),
    /// A member that may hold a newer copy did not answer (why).
    Unanswered(String),
}

/// Asks `calls` (member id, address, peer path) and keeps the newest answer.
async fn ask(node: &Node, calls: Vec<(String, String, String)>) -> Elsewhere {
    if calls.is_empty() {
        return Elsewhere::Nothing;
    }
    let answers =
        join_all(calls.iter().map(|(m, addr, pq)| async move {
            node.peers.call(m, addr, http::Method::GET, pq, &[], Bytes::new()).await
        }))
        .await;
    let mut best: Option<Copy> = None;
    for (a, (m, _, _)) in answers.into_iter().zip(&calls) {
        match a {
            Ok(a) => {
                // An unflushed copy of a member that has not handed over carries no version: it
                // is the newest there is (its writes were the key's last).
                let version = a.headers.get(H_VERSION).and_then(|v| v.to_str().ok()?.parse().ok()).unwrap_or(u64::MAX);
                let deleted = a.headers.get(H_DELETED).is_some_and(|v| v == "1");
                let found = if deleted { None } else { parse_info(&a.headers).map(|i| (i, a.body.to_vec())) };
                if best.as_ref().is_none_or(|(v, _)| version > *v) {
                    best = Some((version, found));
                }
            }
            Err(e) if e.status() == Some(404) => {}
            Err(e) => return Elsewhere::Unanswered(format!("node {m} may hold a newer copy and did not answer: {e}")),
        }
    }
    best.map_or(Elsewhere::Nothing, |(_, f)| Elsewhere::Found(f))
}

/// The newest copy of the key held elsewhere during a hand-over or failover in `view`.
pub async fn newest_elsewhere(node: &Arc<Node>, view: &View, bucket: &str, key: &str) -> Elsewhere {
    let id = view.id();
    let mut calls = Vec::new();
    for (m, info) in &view.members {
        if m != node.me() && view.handoff.get(m) != Some(&id) {
            let pq = format!("/_reo/peer/dirty?bucket={}&key={}", enc(bucket), enc(key));
            calls.push((m.clone(), info.advertise.clone(), pq));
        }
    }
    for owner in view.pending_failover() {
        calls.extend(replica_calls(view, &owner, bucket, key));
    }
    ask(node, calls).await
}

fn replica_calls(view: &View, owner: &str, bucket: &str, key: &str) -> Vec<(String, String, String)> {
    let pq = format!("/_reo/peer/replica?owner={}&bucket={}&key={}", enc(owner), enc(bucket), enc(key));
    view.members
        .iter()
        .filter(|(m, _)| m.as_str() != owner)
        .map(|(m, info)| (m.clone(), info.advertise.clone(), pq.clone()))
        .collect()
}

/// The newest replica of `owner`'s key on the other members (its home is unreachable).
pub async fn from_replicas(node: &Arc<Node>, view: &View, owner: &str, bucket: &str, key: &str) -> Elsewhere {
    ask(node, replica_calls(view, owner, bucket, key)).await
}

/// [`newest_elsewhere`] as the answer to a GET or HEAD `req`; `None`: nothing newer elsewhere.
pub async fn newer_elsewhere(
    node: &Arc<Node>,
    req: &http::Request<s3s::Body>,
    bucket: &str,
    key: &str,
) -> Option<Answer> {
    let view = node.view();
    let found = match newest_elsewhere(node, &view, bucket, key).await {
        Elsewhere::Nothing => return None,
        Elsewhere::Unanswered(why) => return Some(slowdown(why)),
        Elsewhere::Found(f) => f,
    };
    let h = req.headers();
    if h.contains_key(http::header::RANGE)
        || h.keys().any(|k| k.as_str().starts_with("if-"))
        || req.uri().query().is_some()
    {
        return Some(slowdown("this key's newest copy is being handed over; retry"));
    }
    Some(crate::answers::object(req.method() == http::Method::HEAD, found))
}
