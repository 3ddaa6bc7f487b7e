//! Membership changes ([`watch`]): on a new membership this node forgets the permissions it
//! granted (each holder drops its own when it sees the change), writes back every unflushed
//! object whose home is now another node, and then publishes its hand-off marker for the new
//! membership, once the replicas of those objects are dropped (a failover of this node must not
//! find them later, older than what the new home wrote). Writes anywhere wait until every member
//! has published it and no failover is pending (the view is *settled*): by then no node holds a
//! newer copy of a key than its home.
//! A member leaving also means replicas may have been lost with it: this node's unflushed
//! writes are written back at once.

use std::sync::Arc;
use std::time::Duration;

use crate::node::Node;

/// Keeps the hand-off marker current (see the module doc).
pub async fn watch(node: Arc<Node>) {
    let mut rx = node.membership.subscribe();
    let mut members: Vec<String> = Vec::new();
    loop {
        let view = rx.borrow_and_update().clone();
        let id = view.id();
        let now: Vec<String> = view.members.keys().cloned().collect();
        if now.iter().any(|m| m == node.me()) && view.handoff.get(node.me()) != Some(&id) && !node.membership.has_left()
        {
            if members.iter().any(|m| !now.contains(m)) {
                node.gw().flush_now();
            }
            members = now;
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
async fn moved_written_back(node: &Arc<Node>, view: &crate::view::View) -> bool {
    let ring = view.ring();
    let mut kicked = false;
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
            if !left {
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
