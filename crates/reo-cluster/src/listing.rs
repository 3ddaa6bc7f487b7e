//! Listings across the cluster ([`list`]): what the gateway's listing takes as "the backend" is
//! the real backend merged with every other member's unflushed writes and deletes in the range,
//! so a ListObjects through any node shows an object acknowledged through any other (the
//! receiving node's own unflushed state is merged on top by the gateway, as on a single node).
//!
//! The members are asked before the backend is listed: a write a member's flusher lands in
//! between is then in both (the unflushed copy wins), and a delete it applies in between is
//! still known. Like the gateway's own merge, a round merges keys only up to the end of what
//! every source answered completely, and rounds repeat until the page is full or every source
//! is exhausted, so a short answer always means the end of the listing. A member that does not
//! answer, or a failover under way (the failed node's objects are only in replicas until it
//! ends), makes the listing fail with `503 SlowDown` rather than answer without those objects.

use std::collections::BTreeMap;
use std::sync::Arc;

use bytes::Bytes;
use futures::future::join_all;
use reo_gateway::backend::list::known_upto;
use reo_gateway::backend::{BResult, Backend, BackendError, ListEntry, ObjectInfo};

use crate::node::Node;
use crate::writes::enc;

/// A member's unflushed state of one key: its info, `None` for a delete.
pub type Unflushed = (String, Option<ObjectInfo>);

/// Most keys a member answers for one request.
pub const MAX_UNFLUSHED: usize = 1001;

/// The real backend's listing merged with the other members' unflushed keys (see the module
/// doc): up to `limit` entries after `after` under `prefix`, fewer only at the end. Blocks its
/// thread on the backend's listing: run it where blocking is allowed.
pub async fn list(
    node: &Arc<Node>,
    inner: &Arc<dyn Backend>,
    bucket: &str,
    prefix: &str,
    after: &str,
    limit: usize,
) -> BResult<Vec<ListEntry>> {
    let view = node.view();
    if let Some(o) = view.pending_failover().first() {
        return Err(BackendError::Busy(format!(
            "node {o}'s unflushed objects are being written back from their replicas; listings resume when \
             they are (retry)"
        )));
    }
    let others: Vec<(String, String)> = view
        .members
        .iter()
        .filter(|(m, _)| m.as_str() != node.me())
        .map(|(m, i)| (m.clone(), i.advertise.clone()))
        .collect();
    let mut out: Vec<ListEntry> = Vec::new();
    let mut cursor = after.to_string();
    while out.len() < limit {
        let n = (limit - out.len()).clamp(1, MAX_UNFLUSHED);
        let peers =
            join_all(others.iter().map(|(m, addr)| unflushed_of(node, m, addr, bucket, prefix, &cursor, n))).await;
        let peers: Vec<Vec<Unflushed>> = peers.into_iter().collect::<Result<_, _>>()?;
        // Called on a thread that may block (the cluster backend's `block_on`: on the gateway's
        // blocking pool, or the hints engine's thread): the backend's listing is read right here. A job of its own on that
        // pool would wait for a free thread while this one holds its own, and with every thread
        // in such a listing none would ever come.
        let backend = inner.list(bucket, prefix, &cursor, n)?;
        // Keys up to `end` are known from every source (None: to the end of the listing).
        let end = known_upto(
            std::iter::once((backend.len() == n, backend.last().map(|e| &e.key)))
                .chain(peers.iter().map(|u| (u.len() == n, u.last().map(|e| &e.0)))),
        );
        let within = |k: &str| end.as_deref().is_none_or(|e| k <= e);
        let mut merged: BTreeMap<String, Option<ListEntry>> =
            backend.into_iter().filter(|e| within(&e.key)).map(|e| (e.key.clone(), Some(e))).collect();
        for (key, info) in peers.into_iter().flatten().filter(|(k, _)| within(k)) {
            merged.insert(key.clone(), info.map(|info| ListEntry { key, info }));
        }
        out.extend(merged.into_values().flatten());
        match end {
            Some(e) => cursor = e,
            None => break,
        }
    }
    out.truncate(limit);
    Ok(out)
}

/// Member `m`'s unflushed keys after `after` under `prefix`, at most `n`.
async fn unflushed_of(
    node: &Node,
    m: &str,
    addr: &str,
    bucket: &str,
    prefix: &str,
    after: &str,
    n: usize,
) -> BResult<Vec<Unflushed>> {
    let pq =
        format!("/_reo/peer/unflushed?bucket={}&prefix={}&after={}&limit={n}", enc(bucket), enc(prefix), enc(after));
    let a = node.peers.call(m, addr, http::Method::GET, &pq, &[], Bytes::new()).await.map_err(|e| {
        BackendError::Busy(format!("node {m} did not answer for its unflushed objects, which the listing needs: {e}"))
    })?;
    let mut keys: Vec<Unflushed> = serde_json::from_slice(&a.body)
        .map_err(|e| BackendError::Busy(format!("node {m}'s unflushed objects: {e}")))?;
    // The merge relies on a sorted answer within the range and at most `n` long.
    keys.retain(|(k, _)| k.as_str() > after && k.starts_with(prefix));
    keys.sort_by(|a, b| a.0.cmp(&b.0));
    keys.dedup_by(|a, b| a.0 == b.0);
    keys.truncate(n);
    Ok(keys)
}
