//! The cluster as the gateway runs it ([`ClusterExtension`], the gateway's
//! [`Extension`]): at start it connects to etcd and joins (discarding what the cluster failed
//! over while this node was away) before the gateway's flusher starts, then runs the
//! background work — lease keep-alive and re-join, the view watch, hand-overs, failovers, the
//! replica reaper — and answers `/_reo/admin/cluster` (status) and its `leave`.

use std::sync::{Arc, OnceLock};
use std::time::Duration;

use parking_lot::Mutex;
use reo_gateway::backend::Backend;
use reo_gateway::gateway::Gateway;
use reo_gateway::intercept::{Extension, Interceptor};
use serde_json::json;

use crate::backend::{ClusterBackend, RUNTIME};
use crate::config::ClusterConfig;
use crate::membership::Membership;
use crate::node::Node;
use crate::router::Router;

/// How long `reo serve` retries reaching etcd at start before it gives up.
pub const JOIN_TIMEOUT: Duration = Duration::from_secs(60);

/// The cluster layer of one gateway (see the module doc).
pub struct ClusterExtension {
    cfg: ClusterConfig,
    node: Arc<OnceLock<Arc<Node>>>,
    inner: OnceLock<Arc<dyn Backend>>,
    tasks: Mutex<Vec<tokio::task::JoinHandle<()>>>,
}

impl std::fmt::Debug for ClusterExtension {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "ClusterExtension({} at {})", self.cfg.node_id, self.cfg.etcd.join(","))
    }
}

impl ClusterExtension {
    /// A cluster layer with `cfg` (checked).
    pub fn new(cfg: ClusterConfig) -> Result<ClusterExtension, crate::config::ConfigError> {
        cfg.validate()?;
        Ok(ClusterExtension { cfg, node: Arc::default(), inner: OnceLock::new(), tasks: Mutex::default() })
    }

    fn marker(&self) -> std::path::PathBuf {
        self.cfg.state_dir.join(format!("joined-{}", self.cfg.name))
    }

    fn node(&self) -> Option<&Arc<Node>> {
        self.node.get()
    }
}

fn discard(node: &Node, gw: &Gateway) {
    match gw.discard_dirty() {
        Ok(n) => tracing::warn!(objects = n, "discarded unflushed writes the cluster failed over"),
        Err(e) => tracing::error!("discarding superseded unflushed writes: {e}"),
    }
    if let Err(e) = node.replicas.clear() {
        tracing::error!("dropping stale replicas: {e}");
    }
    node.replicated.lock().clear();
}

async fn join_until(
    node: &Arc<Node>,
    joined_before: bool,
    deadline: Option<tokio::time::Instant>,
) -> Result<(), String> {
    loop {
        let gw = node.gw().clone();
        let n = node.clone();
        match node.membership.join(joined_before, move || discard(&n, &gw)).await {
            Ok(()) => return Ok(()),
            Err(e) if deadline.is_some_and(|d| tokio::time::Instant::now() >= d) => {
                return Err(format!("cannot join the cluster through etcd {}: {e}", node.cfg.etcd.join(",")))
            }
            Err(e) => {
                tracing::warn!("joining the cluster: {e}; retrying");
                tokio::time::sleep(Duration::from_millis(500)).await;
            }
        }
    }
}

impl Extension for ClusterExtension {
    fn wrap_backend(&self, backend: Arc<dyn Backend>) -> Arc<dyn Backend> {
        let _ = self.inner.set(backend.clone());
        Arc::new(ClusterBackend::new(backend, self.node.clone()))
    }

    fn start(&self, gw: &Arc<Gateway>, rt: &tokio::runtime::Handle) -> Result<Arc<dyn Interceptor>, String> {
        let _ = RUNTIME.set(rt.clone());
        let cfg = self.cfg.clone();
        let marker = self.marker();
        let inner = self.inner.get().cloned().ok_or("the backend was not wrapped")?;
        let node = rt.block_on(async {
            let deadline = tokio::time::Instant::now() + JOIN_TIMEOUT;
            let membership = loop {
                match Membership::connect(&cfg).await {
                    Ok(m) => break m,
                    Err(e) if tokio::time::Instant::now() >= deadline => {
                        return Err(format!("cannot reach etcd {}: {e}", cfg.etcd.join(",")))
                    }
                    Err(e) => {
                        tracing::warn!("connecting to etcd: {e}; retrying");
                        tokio::time::sleep(Duration::from_millis(500)).await;
                    }
                }
            };
            let medium = Arc::new(crate::replica_medium::GatewayMedium(Arc::downgrade(gw)));
            let node =
                Arc::new(Node::new(cfg.clone(), membership, medium).map_err(|e| format!("the replica area: {e}"))?);
            node.set_gateway(gw);
            let _ = node.backend.set(inner);
            let (held, _, free) = node.replicas.usage();
            node.membership.set_stats(free, held);
            let joined_before = marker.exists();
            join_until(&node, joined_before, Some(deadline)).await?;
            std::fs::write(&marker, b"").map_err(|e| format!("{}: {e}", marker.display()))?;
            Ok::<_, String>(node)
        })?;
        let _ = self.node.set(node.clone());
        let mut tasks = self.tasks.lock();
        let n = node.clone();
        tasks.push(rt.spawn(async move { n.membership.watch().await }));
        // Requests are routed by the view: the server starts once it shows this node.
        let mut rx = node.membership.subscribe();
        let me = node.me().to_string();
        let seen = rt.block_on(async {
            tokio::time::timeout(JOIN_TIMEOUT, rx.wait_for(|v| v.members.contains_key(&me))).await.is_ok()
        });
        if !seen {
            return Err("joined the cluster but the etcd watch never showed this node".into());
        }
        let n = node.clone();
        tasks.push(rt.spawn(async move {
            loop {
                n.membership.keep_alive().await;
                if n.membership.has_left() {
                    return;
                }
                let _ = join_until(&n, true, None).await;
            }
        }));
        tasks.push(rt.spawn(crate::handoff::watch(node.clone())));
        tasks.push(rt.spawn(crate::failover::watch(node.clone())));
        let n = node.clone();
        tasks.push(rt.spawn(async move {
            loop {
                crate::writes::drop_flushed(&n).await;
                let (held, _, free) = n.replicas.usage();
                n.membership.set_stats(free, held);
                tokio::time::sleep(Duration::from_millis(500)).await;
            }
        }));
        Ok(Arc::new(Router(node)))
    }

    fn stop(&self) {
        for t in self.tasks.lock().drain(..) {
            t.abort();
        }
    }

    fn status(&self) -> serde_json::Value {
        let Some(node) = self.node() else { return json!({ "node_id": self.cfg.node_id, "joined": false }) };
        let view = node.view();
        let ring = view.ring();
        let (objects, bytes, free) = node.replicas.usage();
        let held_by_owner: serde_json::Map<String, serde_json::Value> =
            node.replicas.owners().into_iter().map(|o| (o.clone(), json!(node.replicas.inventory(&o).len()))).collect();
        let members: Vec<serde_json::Value> = view
            .members
            .iter()
            .map(|(id, m)| {
                json!({
                    "id": id, "advertise": m.advertise, "incarnation": m.incarnation,
                    "replica_free": m.replica_free, "replicas_held": m.replicas_held,
                    "home_share": ring.share(id),
                })
            })
            .collect();
        let (dirty_objects, dirty_bytes) = node.gw().dirty();
        let pending = view.pending_failover();
        let awaiting: usize = pending.iter().map(|o| node.replicas.inventory(o).len()).sum();
        let lease =
            node.membership.lease_info().map(|(id, left)| json!({ "id": format!("{id:x}"), "valid_for_s": left }));
        json!({
            "node_id": node.me(),
            "joined": true,
            "left": node.membership.has_left(),
            "fenced": node.membership.fenced(),
            "etcd_up": node.membership.etcd_up(),
            "view": view.id(),
            "settled": view.settled(),
            "members": members,
            "owners": view.owners,
            "pending_failover": pending,
            "awaiting_failover_objects_here": awaiting,
            "lease": lease,
            "lease_ttl_s": node.cfg.lease_ttl.as_secs_f64(),
            "claims": view.claims,
            "replicas": { "objects": objects, "bytes": bytes, "free_bytes": free, "by_owner": held_by_owner },
            "replicated_objects": node.replicated.lock().len(),
            "dirty_objects": dirty_objects,
            "dirty_bytes": dirty_bytes,
            "grants": node.grants.len(),
            "permissions": node.holdings.len(),
            "replicas_wanted": node.cfg.replicas,
            "min_replicas": node.cfg.min_replicas,
            "counters": node.counters.lock().clone(),
        })
    }

    fn leave(&self) -> Result<serde_json::Value, String> {
        let node = self.node().ok_or("this node has not joined its cluster")?.clone();
        let rt = RUNTIME.get().ok_or("no runtime")?.clone();
        let gw = node.gw().clone();
        let t = std::time::Instant::now();
        // Writes are refused from here, and those being applied finish first: then the flush
        // below writes back every acknowledged write. (`has_left`, which also stops the
        // flusher's backend calls, is set by `leave` below only once nothing is unflushed.)
        rt.block_on(node.start_leaving());
        gw.flush_now();
        while gw.dirty().0 > 0 {
            if t.elapsed() > Duration::from_secs(600) {
                return Err(format!("{} objects still unflushed after 10 minutes; not leaving", gw.dirty().0));
            }
            gw.flush_now();
            std::thread::sleep(Duration::from_millis(50));
        }
        rt.block_on(node.membership.leave()).map_err(|e| format!("deregistering from etcd: {e}"))?;
        rt.block_on(crate::writes::drop_flushed(&node));
        Ok(json!({ "left": true, "node_id": node.me(), "secs": t.elapsed().as_secs_f64() }))
    }
}
