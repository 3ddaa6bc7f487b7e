//! The node ([`Node`]): this gateway's part in the cluster — its membership, its peers, its
//! replica area, the permissions it granted and holds, the replicas it made of its own
//! unflushed writes, and the per-key order of writes at the home node. The other files are its
//! behaviours: routing ([`crate::router`]), writes ([`crate::writes`]), reads
//! ([`crate::reads`]), the peer API ([`crate::peer_api`]), membership changes
//! ([`crate::handoff`]) and failover ([`crate::failover`]).

use std::collections::HashMap;
use std::sync::{Arc, OnceLock, Weak};

use parking_lot::Mutex;
use reo_gateway::gateway::Gateway;

use crate::config::ClusterConfig;
use crate::grants::Grants;
use crate::holdings::Holdings;
use crate::membership::Membership;
use crate::peer::Peers;
use crate::replicas::ReplicaStore;
use crate::view::View;

/// Key-lock stripes of the home node's write order.
const STRIPES: usize = 1024;

/// The replicas made of one of this node's unflushed writes.
#[derive(Debug, Clone)]
pub struct Replicated {
    /// The version they are of.
    pub version: u64,
    /// The nodes holding them.
    pub targets: Vec<String>,
    /// Each target's incarnation when it took the copy: a node that re-registered since (after
    /// being failed over it discards every replica it held) no longer holds it.
    pub incarnations: Vec<String>,
    /// Earlier targets that may still hold an older version: their drop was not confirmed.
    /// Dropped before the entry goes (a failover must never find an older version alone).
    pub stale: Vec<String>,
}

impl Replicated {
    /// How many of the targets still hold their copy in `view`: members in the incarnation
    /// they took it in.
    pub fn live_in(&self, view: &View) -> usize {
        self.targets
            .iter()
            .zip(&self.incarnations)
            .filter(|(t, inc)| view.members.get(*t).is_some_and(|m| &m.incarnation == *inc))
            .count()
    }
}

/// Counters of the node's cluster work (`/_reo/admin/cluster`).
#[derive(Debug, Default, Clone, serde::Serialize)]
pub struct ClusterCounters {
    /// Writes sent on to their home node.
    pub forwarded_writes: u64,
    /// Reads of objects homed elsewhere that were served from this node's cache.
    pub permission_hits: u64,
    /// Reads fetched from their home node.
    pub home_fetches: u64,
    /// Permissions revoked by writes at this node.
    pub revocations: u64,
    /// Revocations that waited for a permission to expire (the holder did not answer).
    pub revocations_waited: u64,
    /// Replicas sent.
    pub replicas_sent: u64,
    /// Replica sends that failed (another target was tried).
    pub replica_failures: u64,
    /// Writes refused because fewer than `min_replicas` copies could be made.
    pub under_replicated: u64,
    /// Replicas dropped at their holders after a write-back.
    pub replica_drops: u64,
    /// Unflushed writes replicated again at a membership change (a holder of a copy left, or
    /// this node restarted and no longer knows where its copies are).
    pub copies_restored: u64,
    /// Objects written back by failovers this node coordinated.
    pub failover_flushed: u64,
    /// Failovers this node coordinated.
    pub failovers: u64,
}

/// This node (see the module doc).
pub struct Node {
    pub(crate) cfg: ClusterConfig,
    pub(crate) membership: Arc<Membership>,
    pub(crate) peers: Peers,
    pub(crate) replicas: ReplicaStore,
    pub(crate) grants: Grants,
    pub(crate) holdings: Holdings,
    pub(crate) replicated: Mutex<HashMap<String, Replicated>>,
    last_version: Mutex<HashMap<String, u64>>,
    stripes: Vec<tokio::sync::Mutex<()>>,
    apply_gate: tokio::sync::RwLock<()>,
    /// A graceful leave has begun: no write is applied from here (the leave writes everything
    /// back, then deregisters).
    leaving: std::sync::atomic::AtomicBool,
    /// When this process started (ns since the epoch, the clock of write versions): replicas of
    /// this node's writes with older versions were made before it (re)started.
    started_ns: u64,
    /// The members have dropped those older replicas (see `handoff.rs`).
    older_dropped: std::sync::atomic::AtomicBool,
    /// Weak: the gateway's backend holds this node (a strong reference would keep the gateway,
    /// and its store, alive past shutdown, which then could not close cleanly).
    gw: OnceLock<Weak<Gateway>>,
    pub(crate) counters: Mutex<ClusterCounters>,
    /// The real backend (failover flushes write to it directly).
    pub(crate) backend: OnceLock<Arc<dyn reo_gateway::backend::Backend>>,
}

impl Node {
    /// A node over `membership`, its replica area opened in `medium`.
    pub fn new(
        cfg: ClusterConfig,
        membership: Arc<Membership>,
        medium: Arc<dyn crate::replica_medium::ReplicaMedium>,
    ) -> std::io::Result<Node> {
        let replicas = ReplicaStore::open(medium, cfg.replica_bytes)?;
        let peers = Peers::new(&cfg.node_id, crate::auth::PeerKey::new(&cfg.secret), cfg.peer_timeout);
        Ok(Node {
            holdings: Holdings::new(cfg.permission),
            cfg,
            membership,
            peers,
            replicas,
            grants: Grants::default(),
            replicated: Mutex::default(),
            last_version: Mutex::default(),
            stripes: (0..STRIPES).map(|_| tokio::sync::Mutex::new(())).collect(),
            apply_gate: tokio::sync::RwLock::new(()),
            leaving: std::sync::atomic::AtomicBool::new(false),
            started_ns: std::time::SystemTime::now()
                .duration_since(std::time::UNIX_EPOCH)
                .map_or(0, |d| d.as_nanos() as u64),
            older_dropped: std::sync::atomic::AtomicBool::new(false),
            gw: OnceLock::new(),
            counters: Mutex::default(),
            backend: OnceLock::new(),
        })
    }

    /// This node's id.
    pub fn me(&self) -> &str {
        &self.cfg.node_id
    }

    /// The gateway (set once it has opened; alive until the server has stopped).
    pub fn gw(&self) -> Arc<Gateway> {
        self.gw.get().and_then(Weak::upgrade).expect("the gateway lives while the cluster runs")
    }

    pub(crate) fn set_gateway(&self, gw: &Arc<Gateway>) {
        let _ = self.gw.set(Arc::downgrade(gw));
    }

    /// The current view.
    pub fn view(&self) -> Arc<View> {
        self.membership.view()
    }

    /// The home node of `bucket/key` in `view`, with its address.
    pub fn home_of(view: &View, bucket: &str, key: &str) -> Option<(String, String)> {
        let ring = view.ring();
        let home = ring.home(bucket, key)?;
        let addr = view.members.get(home)?.advertise.clone();
        Some((home.to_string(), addr))
    }

    fn stripe_of(ck: &str) -> usize {
        let h = crate::auth::sha256_hex(ck.as_bytes());
        usize::from_str_radix(&h[..8], 16).unwrap_or(0) % STRIPES
    }

    /// The lock ordering writes of one key at its home node.
    pub(crate) async fn lock_key(&self, ck: &str) -> tokio::sync::MutexGuard<'_, ()> {
        self.stripes[Self::stripe_of(ck)].lock().await
    }

    /// Waits until every write being applied has finished. A write checks the membership once
    /// it holds the gate, so one routed in an older membership that reaches it after this is
    /// refused (see `writes::home_write`); one still revoking permissions does not hold it.
    pub(crate) async fn write_barrier(&self) {
        drop(self.apply_gate.write().await);
    }

    /// Held (shared) while a write is applied and replicated; refused (why) if the membership
    /// is no longer `view` (the key may have moved, and the hand-over may already have checked
    /// what this node holds) or this node is leaving.
    pub(crate) async fn applying(&self, view: &str) -> Result<tokio::sync::RwLockReadGuard<'_, ()>, &'static str> {
        let gate = self.apply_gate.read().await;
        if self.leaving() {
            return Err("this node is leaving its cluster; send writes to another node");
        }
        if self.view().id() != view {
            return Err("the cluster's membership changed while this write waited; retry");
        }
        Ok(gate)
    }

    /// Begins a graceful leave: writes are refused from here, and those being applied have
    /// finished when this returns.
    pub(crate) async fn start_leaving(&self) {
        self.leaving.store(true, std::sync::atomic::Ordering::Release);
        self.write_barrier().await;
    }

    /// When this process started (ns since the epoch).
    pub(crate) fn started_ns(&self) -> u64 {
        self.started_ns
    }

    /// Whether the members have dropped this node's replicas from before it started.
    pub(crate) fn older_dropped(&self) -> bool {
        self.older_dropped.load(std::sync::atomic::Ordering::Acquire)
    }

    /// Records that the members have dropped this node's replicas from before it started.
    pub(crate) fn mark_older_dropped(&self) {
        self.older_dropped.store(true, std::sync::atomic::Ordering::Release);
    }

    /// Whether a graceful leave has begun (or ended).
    pub(crate) fn leaving(&self) -> bool {
        self.leaving.load(std::sync::atomic::Ordering::Acquire) || self.membership.has_left()
    }

    /// The locks of several keys, taken in stripe order (no deadlock with another such call).
    pub(crate) async fn lock_keys(&self, cks: &[String]) -> Vec<tokio::sync::MutexGuard<'_, ()>> {
        let mut idx: Vec<usize> = cks.iter().map(|c| Self::stripe_of(c)).collect();
        idx.sort_unstable();
        idx.dedup();
        let mut out = Vec::with_capacity(idx.len());
        for i in idx {
            out.push(self.stripes[i].lock().await);
        }
        out
    }

    /// The next version of `ck`: later than any this node gave it, and than the clock (so a key
    /// whose home moved keeps growing, given clocks within the permission lease of each other).
    pub(crate) fn next_version(&self, ck: &str) -> u64 {
        let now = std::time::SystemTime::now().duration_since(std::time::UNIX_EPOCH).map_or(0, |d| d.as_nanos() as u64);
        let mut m = self.last_version.lock();
        if m.len() > 1 << 20 {
            m.clear();
        }
        let v = m.entry(ck.to_string()).or_insert(0);
        *v = (*v + 1).max(now);
        *v
    }

    /// Counts with `f`.
    pub(crate) fn count(&self, f: impl FnOnce(&mut ClusterCounters)) {
        f(&mut self.counters.lock());
    }

    /// Runs blocking gateway work off the runtime threads.
    pub(crate) async fn blocking<T: Send + 'static>(&self, f: impl FnOnce() -> T + Send + 'static) -> T {
        tokio::task::spawn_blocking(f).await.expect("cluster blocking task panicked")
    }
}
