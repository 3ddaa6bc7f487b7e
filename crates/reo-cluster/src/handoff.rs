//! Membership changes ([`watch`]): on a new membership this node forgets the permissions it
//! granted (each holder drops its own when it sees the change), writes back every unflushed
//! object whose home is now another node, and then publishes its hand-off marker for the new
//! membership, once the replicas of those objects are dropped (a failover of this node must not
//! find them later, older than what the new home wrote). Writes anywhere wait until every member
//! has published it and no failover is pending (the view is *settled*): by then no node holds a
//! newer copy of a key than its home.
//! A member leaving also means copies may have been lost with it: before the marker, every
//! unflushed write of this node short of copies on the live members (a holder left or
//! re-registered, or this node restarted and no longer knows where its copies are) is replicated
//! again (or, where the members cannot take enough copies, written back first). So in a settled
//! view every acknowledged unflushed write has at least `min_replicas − 1` copies on live
//! members, which a read of an unreachable home node relies on ([`crate::backend`]).

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

/// Writes back this node's unflushed objects homed elsewhere in `view` and puts the copies of
/// the rest in place; `false` if the view changed first.
async fn moved_written_back(node: &Arc<Node>, view: &View) -> bool {
    let ring = view.ring();
    let mut kicked = false;
    let mut tried = HashSet::new();
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
            let dirty: HashSet<String> = dirty.iter().map(|(b, k)| cache_key(b, k)).collect();
            if !left && copies_in_place(node, view, &dirty, &mut tried).await && older_dropped(node, view).await {
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

/// Whether every unflushed write in `dirty` has at least `min_replicas − 1` copies on live
/// members of `view`. First, each write with a copy on a node that left (or re-registered, so
/// discarded it), with fewer copies than `replicas − 1`, or with none known (this node
/// restarted) is replicated again to the live members, once per hand-over (`tried`). A write
/// still short of copies is written back instead: the flusher is started and the caller waits.
async fn copies_in_place(node: &Arc<Node>, view: &View, dirty: &HashSet<String>, tried: &mut HashSet<String>) -> bool {
    let need = node.cfg.replicas - 1;
    let least = node.cfg.min_replicas - 1;
    if need == 0 {
        return true;
    }
    let live = |r: Option<&crate::node::Replicated>| r.map_or((0, 0), |r| (r.live_in(view), r.targets.len()));
    let again: Vec<String> = {
        let g = node.replicated.lock();
        dirty
            .iter()
            .filter(|ck| !tried.contains(*ck))
            .filter(|ck| {
                let (alive, held) = live(g.get(*ck));
                alive < held || alive < need
            })
            .cloned()
            .collect()
    };
    if !again.is_empty() {
        tried.extend(again.iter().cloned());
        let restored = stream::iter(again.iter().cloned())
            .map(|ck| async move {
                let Some((bucket, key)) = ck.split_once('/') else { return false };
                // Ordered with the key's writes, like a write's own replication.
                let _order = node.lock_key(&ck).await;
                crate::writes::sync_replicas(node, bucket, key).await.is_ok()
            })
            .buffer_unordered(PARALLEL)
            .filter(|ok| std::future::ready(*ok))
            .count()
            .await;
        node.count(|c| c.copies_restored += restored as u64);
        tracing::info!(
            writes = again.len(),
            restored,
            "replicated again the unflushed writes short of copies on the live members"
        );
    }
    let short = {
        let g = node.replicated.lock();
        dirty.iter().filter(|ck| live(g.get(*ck)).0 < least).count()
    };
    if short > 0 {
        // Kicked on every pass: the write-back of these is what the marker waits for.
        node.gw().flush_now();
    }
    short == 0
}

/// Once per process, after its first hand-over has put the copies of its unflushed writes in
/// place: asks every member to drop this node's replicas made before it started. A restart keeps
/// the unflushed writes but not the record of where their copies went, so replicas of writes
/// written back since (whose drops were never sent) would linger, older than the backend's
/// copy, and a read of an unreachable home or a failover could serve or write them back. The
/// copies the hand-over made again carry newer versions and stay. No marker until every member
/// has confirmed.
async fn older_dropped(node: &Arc<Node>, view: &View) -> bool {
    if node.older_dropped() {
        return true;
    }
    let pq = format!("/_reo/peer/drop-older?owner={}&before={}", crate::writes::enc(node.me()), node.started_ns());
    for (m, info) in &view.members {
        if m == node.me() {
            continue;
        }
        if let Err(e) = node.peers.call(m, &info.advertise, http::Method::POST, &pq, &[], bytes::Bytes::new()).await {
            tracing::warn!(member = m, "dropping this node's replicas from before its start: {e}");
            return false;
        }
    }
    node.mark_older_dropped();
    true
}
