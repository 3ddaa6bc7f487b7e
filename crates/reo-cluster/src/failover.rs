//! Failover ([`run`]): when a node's lease has expired and its owner key remains, a survivor
//! claims its failover in etcd (compare-and-swap: one claimant; the failed node itself, if it
//! comes back first, claims it to keep its own data). The claimant collects every member's
//! inventory of the failed node's replicas, picks the newest version of each key, has its
//! holder write it back to the backend, has every member drop the failed node's replicas, and
//! removes the owner key and the claim together. Until then writes wait (the view is not
//! settled) and reads of those keys are served from the newest replica ([`crate::reads`]).

use std::collections::HashMap;
use std::sync::Arc;
use std::time::{Duration, Instant};

use bytes::Bytes;
use futures::stream::{self, StreamExt};

use crate::node::Node;
use crate::writes::enc;

/// How long a node's absence is watched before its failover is claimed: it may re-join at once
/// (a restart) and keep its data.
pub const GRACE: Duration = Duration::from_millis(500);

/// Failover flushes run at once.
const PARALLEL: usize = 16;

/// Writes this node's replica of `owner`'s key back to the backend (at least `version`).
pub async fn flush_local(node: &Arc<Node>, owner: &str, bucket: &str, key: &str, version: u64) -> Result<(), String> {
    let n = node.clone();
    let (o, b, k) = (owner.to_string(), bucket.to_string(), key.to_string());
    node.blocking(move || {
        let Some((h, data)) = n.replicas.get(&o, &b, &k).map_err(|e| format!("reading the replica: {e}"))? else {
            return Err(format!("no replica of {b}/{k} from {o} here"));
        };
        if h.version < version {
            return Err(format!("the replica here is older ({} < {version})", h.version));
        }
        let backend = n.backend.get().ok_or("no backend yet")?;
        let r = if h.deleted { backend.delete(&b, &k) } else { backend.put(&b, &k, &data, &h.info) };
        r.map_err(|e| format!("writing {b}/{k} back: {e}"))
    })
    .await
}

/// Watches the view and fails over every node whose failover is pending (see the module doc).
pub async fn watch(node: Arc<Node>) {
    let mut seen: HashMap<String, Instant> = HashMap::new();
    loop {
        let view = node.view();
        // Replicas of a node that is no longer an owner are garbage: its owner key goes only
        // after a failover wrote them back or a graceful leave flushed everything. Dropped
        // here even if the failover's drop-owner request never arrived, so an older replica
        // can never be served or written back after the node re-joins.
        if view.members.contains_key(node.me()) {
            for o in node.replicas.owners() {
                if !view.owners.contains(&o) {
                    let n = node.clone();
                    let owner = o.clone();
                    // Durable frees on flash: off the runtime's threads.
                    if let Err(e) = node.blocking(move || n.replicas.drop_owner(&owner)).await {
                        tracing::warn!(owner = o, "dropping the replicas of a former owner: {e}");
                    }
                }
            }
        }
        let pending = view.pending_failover();
        seen.retain(|k, _| pending.contains(k));
        for failed in pending {
            let since = *seen.entry(failed.clone()).or_insert_with(Instant::now);
            if since.elapsed() < GRACE || view.claims.contains_key(&failed) || !view.members.contains_key(node.me()) {
                continue;
            }
            if node.membership.fenced() {
                continue;
            }
            match node.membership.claim(&failed).await {
                Ok(true) => {
                    let t = Instant::now();
                    match run(&node, &failed).await {
                        Ok(n) => {
                            tracing::info!(failed, objects = n, secs = t.elapsed().as_secs_f64(), "failover done");
                        }
                        Err(e) => {
                            tracing::warn!(failed, "failover not finished, released for a retry: {e}");
                            node.membership.release_claim(&failed).await;
                        }
                    }
                }
                Ok(false) => {}
                Err(e) => tracing::warn!(failed, "claiming the failover: {e}"),
            }
        }
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
}

/// Fails `failed` over (this node holds the claim); how many objects it wrote back.
pub async fn run(node: &Arc<Node>, failed: &str) -> Result<usize, String> {
    let view = node.view();
    let mut newest: HashMap<(String, String), (u64, String)> = HashMap::new();
    for (m, info) in &view.members {
        let inv: Vec<(String, String, u64, bool)> = if m == node.me() {
            node.replicas.inventory(failed)
        } else {
            let pq = format!("/_reo/peer/inventory?owner={}", enc(failed));
            let a = node
                .peers
                .call(m, &info.advertise, http::Method::GET, &pq, &[], Bytes::new())
                .await
                .map_err(|e| format!("inventory of {m}: {e}"))?;
            serde_json::from_slice(&a.body).map_err(|e| format!("inventory of {m}: {e}"))?
        };
        for (b, k, v, _) in inv {
            let e = newest.entry((b, k)).or_insert((0, String::new()));
            if v > e.0 {
                *e = (v, m.clone());
            }
        }
    }
    let total = newest.len();
    let flushes = stream::iter(newest.into_iter().map(|((b, k), (v, holder))| {
        let view = view.clone();
        async move {
            if holder == node.me() {
                return flush_local(node, failed, &b, &k, v).await;
            }
            let addr = view.members.get(&holder).map(|m| m.advertise.clone()).ok_or("holder left")?;
            let pq = format!("/_reo/peer/flush?owner={}&bucket={}&key={}&version={v}", enc(failed), enc(&b), enc(&k));
            node.peers
                .call(&holder, &addr, http::Method::POST, &pq, &[], Bytes::new())
                .await
                .map(|_| ())
                .map_err(|e| format!("flush of {b}/{k} by {holder}: {e}"))
        }
    }))
    .buffer_unordered(PARALLEL)
    .collect::<Vec<_>>()
    .await;
    if let Some(Err(e)) = flushes.into_iter().find(Result::is_err) {
        return Err(e);
    }
    for (m, info) in &view.members {
        if m == node.me() {
            let (n, f) = (node.clone(), failed.to_string());
            node.blocking(move || n.replicas.drop_owner(&f)).await.map_err(|e| e.to_string())?;
        } else {
            let pq = format!("/_reo/peer/drop-owner?owner={}", enc(failed));
            // A member that misses this drops them at its next re-join or keeps them until the
            // failed node's next failover: they are older than the backend's then, and a
            // failover flushes only the newest, so they stay harmless but take room.
            let _ = node.peers.call(m, &info.advertise, http::Method::POST, &pq, &[], Bytes::new()).await;
        }
    }
    if !node.membership.finish_failover(failed).await.map_err(|e| e.to_string())? {
        return Err("the claim was lost (this node's lease expired?)".into());
    }
    node.count(|c| {
        c.failovers += 1;
        c.failover_flushed += total as u64;
    });
    Ok(total)
}
