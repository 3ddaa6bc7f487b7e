//! Reads at a key's home node while the cluster is not settled: a member that has not handed
//! over yet may hold a newer, unflushed copy of a key that moved here, and a failed node's
//! newest write may still be only in its replicas. [`newer_elsewhere`] asks them; the newest
//! copy found is served (a whole-object GET or a HEAD; a ranged or conditional read is asked to
//! retry: this lasts a hand-over or failover, seconds).

use std::sync::Arc;

use bytes::Bytes;
use futures::future::join_all;
use reo_gateway::backend::ObjectInfo;
use reo_gateway::intercept::Answer;

use crate::answers::slowdown;
use crate::node::Node;
use crate::peer_api::{parse_info, H_DELETED, H_VERSION};
use crate::writes::enc;

/// A copy found elsewhere: `(version, None)` for a delete.
type Found = (u64, Option<(ObjectInfo, Vec<u8>)>);

/// The newest copy of the key held elsewhere during a hand-over or failover, as the answer to
/// `req`; `None`: there is none (the backend's, or this node's, is the newest).
pub async fn newer_elsewhere(
    node: &Arc<Node>,
    req: &http::Request<s3s::Body>,
    bucket: &str,
    key: &str,
) -> Option<Answer> {
    let view = node.view();
    let id = view.id();
    let mut calls = Vec::new();
    // Members that have not handed over: their unflushed copy (they still hold the newest).
    for (m, info) in &view.members {
        if m != node.me() && view.handoff.get(m) != Some(&id) {
            let pq = format!("/_reo/peer/dirty?bucket={}&key={}", enc(bucket), enc(key));
            calls.push((m.clone(), info.advertise.clone(), pq));
        }
    }
    // Failed owners: their replicas, on every member.
    let failed = view.pending_failover();
    for owner in &failed {
        for (m, info) in &view.members {
            let pq = format!("/_reo/peer/replica?owner={}&bucket={}&key={}", enc(owner), enc(bucket), enc(key));
            calls.push((m.clone(), info.advertise.clone(), pq));
        }
    }
    if calls.is_empty() {
        return None;
    }
    let answers =
        join_all(calls.iter().map(|(m, addr, pq)| async move {
            node.peers.call(m, addr, http::Method::GET, pq, &[], Bytes::new()).await
        }))
        .await;
    let mut best: Option<Found> = None;
    for (a, (m, _, _)) in answers.into_iter().zip(&calls) {
        match a {
            Ok(a) => {
                let version = a.headers.get(H_VERSION).and_then(|v| v.to_str().ok()?.parse().ok()).unwrap_or(u64::MAX);
                let deleted = a.headers.get(H_DELETED).is_some_and(|v| v == "1");
                let found = if deleted { None } else { parse_info(&a.headers).map(|i| (i, a.body.to_vec())) };
                if best.as_ref().is_none_or(|(v, _)| version > *v) {
                    best = Some((version, found));
                }
            }
            Err(e) if e.status() == Some(404) => {}
            Err(e) => {
                return Some(slowdown(format!("node {m} may hold a newer copy of this key and did not answer: {e}")));
            }
        }
    }
    let (_, found) = best?;
    let h = req.headers();
    if h.contains_key(http::header::RANGE)
        || h.keys().any(|k| k.as_str().starts_with("if-"))
        || req.uri().query().is_some()
    {
        return Some(slowdown("this key's newest copy is being handed over; retry"));
    }
    Some(crate::answers::object(req.method() == http::Method::HEAD, found))
}
