//! This node's membership in etcd ([`Membership`]): the lease it registers under and keeps
//! alive (every TTL/3), the watch that keeps its [`View`] current, its fencing (it stops
//! acknowledging writes once its lease may have expired), and the keys it writes: its member
//! registration, its owner key, its hand-off marker, and failover claims (compare-and-swap).
//!
//! Keys, under `/reo/<cluster>/`: `members/<id>` (lease), `owners/<id>` (no lease),
//! `handoff/<id>` (lease), `claims/<failed id>` (the claimant's lease).

use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

use etcd_client::{Client, Compare, CompareOp, ConnectOptions, GetOptions, PutOptions, Txn, TxnOp, WatchOptions};
use parking_lot::Mutex;
use tokio::sync::watch;

use crate::config::ClusterConfig;
use crate::view::{MemberInfo, View};

/// What a call to etcd failed with.
pub type EtcdError = etcd_client::Error;

/// The lease this node holds, and until when it is surely valid.
#[derive(Debug, Clone, Copy)]
struct Lease {
    id: i64,
    /// Before this instant etcd cannot have expired the lease: the TTL counted from when the
    /// last successful keep-alive was *sent*.
    valid_until: Instant,
}

/// This node's membership (see the module doc).
pub struct Membership {
    cfg: ClusterConfig,
    prefix: String,
    client: Client,
    lease: Mutex<Option<Lease>>,
    incarnation: Mutex<String>,
    view_tx: watch::Sender<Arc<View>>,
    /// Whether etcd answered the last watch or keep-alive.
    etcd_up: AtomicBool,
    /// Replica statistics published with the registration.
    stats: Mutex<(u64, u64)>,
    left: AtomicBool,
}

fn new_incarnation() -> String {
    let mut b = [0u8; 8];
    let t = std::time::SystemTime::now().duration_since(std::time::UNIX_EPOCH).unwrap_or_default().as_nanos();
    b.copy_from_slice(&(t as u64 ^ u64::from(std::process::id()).rotate_left(40)).to_le_bytes());
    reo_gateway::hex::hex(&b)
}

impl Membership {
    /// Connects to etcd (the connection is lazy: an etcd down at start is retried).
    pub async fn connect(cfg: &ClusterConfig) -> Result<Arc<Membership>, EtcdError> {
        let opts = ConnectOptions::new()
            .with_timeout(Duration::from_secs(2))
            .with_connect_timeout(Duration::from_secs(2))
            .with_keep_alive(Duration::from_secs(1), Duration::from_secs(2));
        let client = Client::connect(&cfg.etcd, Some(opts)).await?;
        let (view_tx, _) = watch::channel(Arc::new(View::default()));
        Ok(Arc::new(Membership {
            prefix: format!("/reo/{}/", cfg.name),
            cfg: cfg.clone(),
            client,
            lease: Mutex::new(None),
            incarnation: Mutex::new(new_incarnation()),
            view_tx,
            etcd_up: AtomicBool::new(false),
            stats: Mutex::new((0, 0)),
            left: AtomicBool::new(false),
        }))
    }

    fn key(&self, kind: &str, id: &str) -> String {
        format!("{}{kind}/{id}", self.prefix)
    }

    /// The current view.
    pub fn view(&self) -> Arc<View> {
        self.view_tx.borrow().clone()
    }

    /// A receiver of view changes.
    pub fn subscribe(&self) -> watch::Receiver<Arc<View>> {
        self.view_tx.subscribe()
    }

    /// Whether this node may acknowledge writes: registered, not left, and its lease surely
    /// valid for a margin more (a fifth of the TTL: a write acknowledged now completes before
    /// etcd could expire the lease and the cluster fail this node over).
    pub fn fenced(&self) -> bool {
        if self.left.load(Ordering::Acquire) {
            return true;
        }
        match *self.lease.lock() {
            Some(l) => Instant::now() + self.cfg.lease_ttl / 5 >= l.valid_until,
            None => true,
        }
    }

    /// This node's lease: its id and how long it is surely valid still (seconds; negative once
    /// past), if it holds one.
    pub fn lease_info(&self) -> Option<(i64, f64)> {
        let l = (*self.lease.lock())?;
        let now = Instant::now();
        let left = if l.valid_until >= now {
            (l.valid_until - now).as_secs_f64()
        } else {
            -(now - l.valid_until).as_secs_f64()
        };
        Some((l.id, left))
    }

    /// Whether etcd answered lately.
    pub fn etcd_up(&self) -> bool {
        self.etcd_up.load(Ordering::Acquire)
    }

    /// Whether this node left the cluster ([`Membership::leave`]).
    pub fn has_left(&self) -> bool {
        self.left.load(Ordering::Acquire)
    }

    /// This registration's incarnation.
    pub fn incarnation(&self) -> String {
        self.incarnation.lock().clone()
    }

    /// Sets the replica statistics the next keep-alive publishes.
    pub fn set_stats(&self, replica_free: u64, replicas_held: u64) {
        *self.stats.lock() = (replica_free, replicas_held);
    }

    fn member_value(&self) -> Vec<u8> {
        let (replica_free, replicas_held) = *self.stats.lock();
        serde_json::to_vec(&MemberInfo {
            advertise: self.cfg.advertise.clone(),
            incarnation: self.incarnation(),
            replica_free,
            replicas_held,
        })
        .unwrap_or_default()
    }

    /// Joins (or re-joins) the cluster. First this node claims its own failover claim, so no
    /// peer can start failing it over meanwhile (if one is already doing it, this waits until it
    /// has finished). Then, if this node has joined before and its owner key is gone, the cluster
    /// failed it over while it was away: `failed_over` runs (it discards the unflushed writes and
    /// replicas, all superseded). Then it registers, and lets the claim go.
    pub async fn join(&self, joined_before: bool, failed_over: impl FnOnce()) -> Result<(), EtcdError> {
        let mut c = self.client.clone();
        let ttl = self.cfg.lease_ttl.as_secs().max(1) as i64;
        let sent = Instant::now();
        let lease = c.lease_grant(ttl, None).await?;
        let lease = Lease { id: lease.id(), valid_until: sent + Duration::from_secs(lease.ttl().max(0) as u64) };
        let me = &self.cfg.node_id;
        let claim = self.key("claims", me);
        loop {
            let txn = Txn::new()
                .when([Compare::create_revision(claim.clone(), CompareOp::Equal, 0)])
                .and_then([TxnOp::put(claim.clone(), me.as_bytes(), Some(PutOptions::new().with_lease(lease.id)))]);
            if c.txn(txn).await?.succeeded() {
                break;
            }
            tracing::warn!("a peer is failing this node over; waiting for it to finish before re-joining");
            tokio::time::sleep(Duration::from_millis(200)).await;
            c.lease_keep_alive(lease.id).await?.0.keep_alive().await?;
        }
        let owner = c.get(self.key("owners", me), None).await?;
        if joined_before && owner.kvs().is_empty() {
            tracing::warn!("the cluster failed this node over while it was away: discarding its superseded writes");
            failed_over();
        }
        *self.incarnation.lock() = new_incarnation();
        let txn = Txn::new().and_then([
            TxnOp::put(self.key("owners", me), "", None),
            TxnOp::put(self.key("members", me), self.member_value(), Some(PutOptions::new().with_lease(lease.id))),
            TxnOp::delete(claim, None),
        ]);
        c.txn(txn).await?;
        *self.lease.lock() = Some(lease);
        self.etcd_up.store(true, Ordering::Release);
        tracing::info!(node = %me, lease = lease.id, "joined the cluster");
        Ok(())
    }

    /// Keeps the lease alive every TTL/3 and republishes the registration's statistics. Returns
    /// when the lease is lost (etcd expired it): the caller re-joins.
    pub async fn keep_alive(&self) {
        let every = self.cfg.lease_ttl / 3;
        let mut last_stats = (u64::MAX, u64::MAX);
        loop {
            if self.left.load(Ordering::Acquire) {
                return;
            }
            let Some(lease) = *self.lease.lock() else { return };
            let sent = Instant::now();
            let mut c = self.client.clone();
            let r = tokio::time::timeout(every.max(Duration::from_millis(500)), async {
                let (mut keeper, mut stream) = c.lease_keep_alive(lease.id).await?;
                keeper.keep_alive().await?;
                stream.message().await
            })
            .await;
            match r {
                Ok(Ok(Some(resp))) if resp.ttl() > 0 => {
                    self.etcd_up.store(true, Ordering::Release);
                    let until = sent + Duration::from_secs(resp.ttl() as u64);
                    if let Some(l) = self.lease.lock().as_mut() {
                        l.valid_until = until;
                    }
                    let stats = *self.stats.lock();
                    if stats != last_stats {
                        let mut c = self.client.clone();
                        let put = c.put(
                            self.key("members", &self.cfg.node_id),
                            self.member_value(),
                            Some(PutOptions::new().with_lease(lease.id)),
                        );
                        if put.await.is_ok() {
                            last_stats = stats;
                        }
                    }
                }
                Ok(Ok(_)) => {
                    tracing::error!("this node's cluster lease expired: fenced until it has re-joined");
                    *self.lease.lock() = None;
                    return;
                }
                Ok(Err(e)) => {
                    self.etcd_up.store(false, Ordering::Release);
                    tracing::warn!("cluster lease keep-alive failed: {e}");
                }
                Err(_) => {
                    self.etcd_up.store(false, Ordering::Release);
                    tracing::warn!("cluster lease keep-alive timed out");
                }
            }
            // Past its validity, ask etcd whether the lease still exists: a node resumed after a
            // long pause (SIGSTOP, a VM freeze) learns here that it must re-join.
            if Instant::now() >= lease.valid_until && self.lease_gone(lease.id).await {
                tracing::error!("this node's cluster lease expired: fenced until it has re-joined");
                *self.lease.lock() = None;
                return;
            }
            let wait = every.saturating_sub(sent.elapsed());
            tokio::time::sleep(wait).await;
        }
    }

    /// Whether etcd says the lease no longer exists (`false` if etcd cannot be asked).
    async fn lease_gone(&self, id: i64) -> bool {
        let r = tokio::time::timeout(Duration::from_secs(2), self.client.clone().lease_time_to_live(id, None)).await;
        match r {
            Ok(Ok(resp)) => resp.ttl() <= 0,
            Ok(Err(e)) => e.to_string().contains("not found"),
            Err(_) => false,
        }
    }

    /// Keeps the view current: a read of the prefix, then a watch from the revision after it;
    /// on any error, again.
    pub async fn watch(&self) {
        loop {
            if let Err(e) = self.watch_once().await {
                self.etcd_up.store(false, Ordering::Release);
                tracing::warn!("cluster watch: {e}; retrying");
            }
            tokio::time::sleep(Duration::from_millis(200)).await;
        }
    }

    async fn watch_once(&self) -> Result<(), EtcdError> {
        let mut c = self.client.clone();
        let got = c.get(self.prefix.clone(), Some(GetOptions::new().with_prefix())).await?;
        let mut view = View::default();
        for kv in got.kvs() {
            if let Some(rest) = kv.key_str().ok().and_then(|k| k.strip_prefix(&self.prefix)) {
                view.apply(rest, Some(kv.value()));
            }
        }
        let rev = got.header().map_or(0, |h| h.revision());
        self.view_tx.send_replace(Arc::new(view.clone()));
        let (_watcher, mut stream) =
            c.watch(self.prefix.clone(), Some(WatchOptions::new().with_prefix().with_start_revision(rev + 1))).await?;
        while let Some(resp) = stream.message().await? {
            if resp.canceled() {
                return Ok(());
            }
            for ev in resp.events() {
                let Some(kv) = ev.kv() else { continue };
                let Some(rest) = kv.key_str().ok().and_then(|k| k.strip_prefix(&self.prefix)) else { continue };
                let value = (ev.event_type() == etcd_client::EventType::Put).then(|| kv.value());
                view.apply(rest, value);
            }
            self.view_tx.send_if_modified(|v| {
                if **v == view {
                    false
                } else {
                    *v = Arc::new(view.clone());
                    true
                }
            });
        }
        Ok(())
    }

    /// Publishes that this node has handed over for the membership `view_id`.
    pub async fn put_handoff(&self, view_id: &str) -> Result<(), EtcdError> {
        let Some(lease) = *self.lease.lock() else { return Ok(()) };
        let key = self.key("handoff", &self.cfg.node_id);
        self.client.clone().put(key, view_id, Some(PutOptions::new().with_lease(lease.id))).await?;
        Ok(())
    }

    /// Claims the failover of `failed` (compare-and-swap: only if nobody holds the claim and
    /// `failed` is still not a member); whether this node got it.
    pub async fn claim(&self, failed: &str) -> Result<bool, EtcdError> {
        let Some(lease) = *self.lease.lock() else { return Ok(false) };
        let claim = self.key("claims", failed);
        let txn = Txn::new()
            .when([
                Compare::create_revision(claim.clone(), CompareOp::Equal, 0),
                Compare::create_revision(self.key("members", failed), CompareOp::Equal, 0),
                Compare::create_revision(self.key("owners", failed), CompareOp::Greater, 0),
            ])
            .and_then([TxnOp::put(claim, self.cfg.node_id.as_bytes(), Some(PutOptions::new().with_lease(lease.id)))]);
        Ok(self.client.clone().txn(txn).await?.succeeded())
    }

    /// Ends the failover of `failed` this node claimed: its owner key and the claim go, in one
    /// transaction, if the claim is still this node's.
    pub async fn finish_failover(&self, failed: &str) -> Result<bool, EtcdError> {
        let claim = self.key("claims", failed);
        let txn = Txn::new()
            .when([Compare::value(claim.clone(), CompareOp::Equal, self.cfg.node_id.as_bytes())])
            .and_then([TxnOp::delete(self.key("owners", failed), None), TxnOp::delete(claim, None)]);
        Ok(self.client.clone().txn(txn).await?.succeeded())
    }

    /// Gives up a claim (the failover could not finish; another node, or this one later, retries).
    pub async fn release_claim(&self, failed: &str) {
        let claim = self.key("claims", failed);
        let txn = Txn::new()
            .when([Compare::value(claim.clone(), CompareOp::Equal, self.cfg.node_id.as_bytes())])
            .and_then([TxnOp::delete(claim, None)]);
        let _ = self.client.clone().txn(txn).await;
    }

    /// Leaves: the registration, the owner key and the marker go, and the lease is revoked. Call
    /// once nothing unflushed remains.
    pub async fn leave(&self) -> Result<(), EtcdError> {
        let me = &self.cfg.node_id;
        self.left.store(true, Ordering::Release);
        let txn = Txn::new().and_then([
            TxnOp::delete(self.key("members", me), None),
            TxnOp::delete(self.key("owners", me), None),
            TxnOp::delete(self.key("handoff", me), None),
        ]);
        let mut c = self.client.clone();
        c.txn(txn).await?;
        let lease = self.lease.lock().take();
        if let Some(l) = lease {
            let _ = c.lease_revoke(l.id).await;
        }
        Ok(())
    }
}
