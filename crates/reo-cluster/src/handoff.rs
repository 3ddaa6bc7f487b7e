//! Membership changes ([`watch`]): on a new membership this node forgets the permissions it
//! granted (each holder drops its own when it sees the change), writes back every unflushed
//! object whose home is now another node, and then publishes its hand-off marker for the new
//! membership, once the replicas of those objects are dropped (a failover of this node must not
//! find them later, older than what the new home wrote). Writes anywhere wait until every member
//! has published it and no failover is pending (the view is *settled*): by then no node holds a
//! newer copy of a key than its home.
//! A member leaving also means copies may have been lost with it: before the marker, every
//! unflushed write of this node whose replica was on a member that left is replicated again to
//! the live members (or, where they cannot take enough copies, written back first). So in a settled view every acknowledged unflushed write has all its
//! copies on live members, which a read of an unreachable home node relies on
//! ([`crate::backend`]).

use std::collections::HashSet;
use std::sync::Arc;
use std::time::Duration;

use futures::stream::{self, StreamExt};
use reo_gateway::gateway::pending::cache_key;

use crate::node::Node;
use crate::view::View;

/// Re-replications run at once.
const PARALLEL: usize = 16;

/// Keeps the hand-off marker current (see the module doc).
pub async fn watch(node: Arc<Node>) {
    let mut rx = node.membership.subscribe();
    loop {
        let view = rx.borrow_and_update().clone();
        let id = view.id();
        if view.members.contains_key(node.me())
            && view.handoff.get(node.me()) != Some(&id)
            && !node.membership.has_left()
        {
            // Writes routed in the older membership finish (or are refused) before the check.
            node.write_barrier().await;
            node.grants.clear();
            if moved_written_back(&node, &view).await {
                if let Err(e) = node.membership.put_handoff(&id).await {
                    tracing::warn!("publishing the hand-off marker: {e}");
                    tokio::time::sleep(Duration::from_millis(200)).await;
                    continue;
                }
                tracing::info!(view = id, "handed over for the new membership");
            }
        }
        if tokio::time::timeout(Duration::from_millis(500), rx.changed()).await.is_ok_and(|r| r.is_err()) {
            return;
        }
    }
}

/// Writes back this node's unflushed objects homed elsewhere in `view`; `false` if the view
/// changed first.
async fn moved_written_back(node: &Arc<Node>, view: &View) -> bool {
    let ring = view.ring();
    let mut kicked = false;
    let mut unprotected = HashSet::new();
    loop {
        if node.view().id() != view.id() {
            return false;
        }
        let gw = node.gw().clone();
        let dirty = node.blocking(move || gw.dirty_objects()).await;
        if dirty.iter().all(|(b, k)| ring.home(b, k) == Some(node.me())) {
            // Replicas of the moved keys go before the marker: once the new home writes them,
            // an older replica left behind could otherwise be written back by a failover of
            // this node, over the newer write.
            crate::writes::drop_flushed(node).await;
            let left = node
                .replicated
                .lock()
                .keys()
                .any(|ck| ck.split_once('/').is_some_and(|(b, k)| ring.home(b, k) != Some(node.me())));
            if !left && lost_copies_restored(node, view, &mut unprotected).await {
                return true;
            }
        }
        if !kicked {
            node.gw().flush_now();
            kicked = true;
        }
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
}

/// Replicates again this node's unflushed writes that had a copy on a node no longer a member of
/// `view`; `true` once each has its copies on members. A write no live member can take enough
/// copies of joins `unprotected`, which holds up the marker until the flusher has written it
/// back.
async fn lost_copies_restored(node: &Arc<Node>, view: &View, unprotected: &mut HashSet<String>) -> bool {
    let gw = node.gw().clone();
    let dirty: HashSet<String> =
        node.blocking(move || gw.dirty_objects()).await.iter().map(|(b, k)| cache_key(b, k)).collect();
    unprotected.retain(|ck| dirty.contains(ck));
    let lost: Vec<String> = node
        .replicated
        .lock()
        .iter()
        .filter(|(ck, r)| dirty.contains(*ck) && r.targets.iter().any(|t| !view.members.contains_key(t)))
        .map(|(ck, _)| ck.clone())
        .collect();
    if lost.is_empty() {
        return unprotected.is_empty();
    }
    let failed: Vec<String> = stream::iter(lost.iter().cloned())
        .map(|ck| async move {
            let (bucket, key) = ck.split_once('/')?;
            // Ordered with the key's writes, like a write's own replication.
            let _order = node.lock_key(&ck).await;
            crate::writes::sync_replicas(node, bucket, key).await.err().map(|_| ck.clone())
        })
        .buffer_unordered(PARALLEL)
        .filter_map(std::future::ready)
        .collect()
        .await;
    let restored = lost.len() - failed.len();
    node.count(|c| c.copies_restored += restored as u64);
    tracing::info!(
        lost = lost.len(),
        restored,
        "replicated again the unflushed writes whose copies left with a member (the rest wait for their write-back)"
    );
    if !failed.is_empty() {
        node.gw().flush_now();
    }
    unprotected.extend(failed);
    unprotected.is_empty()
}
