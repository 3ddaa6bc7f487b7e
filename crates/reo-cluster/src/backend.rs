//! The backend the gateway sees in a cluster ([`ClusterBackend`]): reads of an object whose
//! home is another node go to that node (which answers with its newest version, unflushed or
//! not, and grants this node a caching permission: [`crate::holdings`]); everything else goes
//! to the real backend; listings merge in the other members' unflushed keys
//! ([`crate::listing`]). While this node is fenced (its lease may have expired), it writes
//! nothing to the backend: the flusher's calls fail and are retried, so a node the cluster may
//! have failed over never writes an older copy over a newer one.

use std::sync::{Arc, OnceLock};
use std::time::Instant;

use bytes::Bytes;
use reo_gateway::backend::{
    Address, Advice, AdviceReport, BResult, Backend, BackendError, BucketInfo, ChunkIter, ListEntry, ObjectInfo,
    ObjectWriter,
};
use reo_gateway::gateway::pending::cache_key;

use crate::node::Node;
use crate::peer::parse_info;
use crate::reads::Elsewhere;
use crate::view::View;
use crate::writes::enc;

/// The gateway's backend in a cluster (see the module doc).
pub struct ClusterBackend {
    inner: Arc<dyn Backend>,
    node: Arc<OnceLock<Arc<Node>>>,
}

impl ClusterBackend {
    /// Around `inner`, for the node `node` will hold once it has started.
    pub fn new(inner: Arc<dyn Backend>, node: Arc<OnceLock<Arc<Node>>>) -> ClusterBackend {
        ClusterBackend { inner, node }
    }

    fn fenced(&self) -> BResult<()> {
        match self.node.get() {
            Some(n) if n.membership.fenced() => Err(BackendError::Busy(
                "this node cannot confirm its cluster lease: nothing is written back until it has re-joined".into(),
            )),
            _ => Ok(()),
        }
    }

    /// Where a read of the key goes: `None` the real backend (this node is home, or not in a
    /// cluster yet), else the home node's id and address; and the view it was decided in.
    fn home(&self, bucket: &str, key: &str) -> (Option<(String, String)>, Option<Arc<View>>) {
        let Some(n) = self.node.get() else { return (None, None) };
        let v = n.view();
        match Node::home_of(&v, bucket, key) {
            Some((h, addr)) if h != n.me() => (Some((h, addr)), Some(v)),
            _ => (None, Some(v)),
        }
    }

    /// A newer copy than the backend's on another member, which a home node reads first while
    /// the membership changes: a member that has not handed over, or a failed node's replicas,
    /// may hold one (the router asked too, but the view may have changed since and made this
    /// node the home). `None`: read the backend.
    fn newer_elsewhere(&self, bucket: &str, key: &str, view: Option<&View>) -> Option<Elsewhere> {
        let (Some(n), Some(v)) = (self.node.get(), view) else { return None };
        if v.settled() {
            return None;
        }
        match block_on(crate::reads::newest_elsewhere(n, v, bucket, key)) {
            Elsewhere::Nothing => None,
            other => Some(other),
        }
    }

    /// Marks this node's copy of the key, read from the backend by a request sent at `sent`,
    /// valid while it stays home in `view`.
    fn install_home(&self, bucket: &str, key: &str, sent: Instant, view: Option<&View>) {
        if let (Some(n), Some(v)) = (self.node.get(), view) {
            n.holdings.install(&cache_key(bucket, key), sent, &v.id(), true);
        }
    }

    /// A read by the key's home node: a newer copy elsewhere (not installed as this node's own:
    /// it is not the home node's yet), else the real backend, whose copy is valid in this
    /// membership.
    fn home_read(
        &self,
        bucket: &str,
        key: &str,
        view: Option<Arc<View>>,
        range: Option<(u64, u64)>,
    ) -> BResult<(Vec<u8>, ObjectInfo)> {
        let sent = Instant::now();
        if let Some(found) = self.newer_elsewhere(bucket, key, view.as_deref()) {
            return self.served_from(found, key, range);
        }
        let r = self.inner_read(bucket, key, range)?;
        self.install_home(bucket, key, sent, view.as_deref());
        Ok(r)
    }

    /// A read of the real backend (no data for a HEAD: `range` `None`).
    fn inner_read(&self, bucket: &str, key: &str, range: Option<(u64, u64)>) -> BResult<(Vec<u8>, ObjectInfo)> {
        match range {
            Some((s, e)) => self.inner.get_range(bucket, key, s, e),
            None => self.inner.head(bucket, key).map(|i| (Vec::new(), i)),
        }
    }

    /// The answer from a copy found on another member (never [`Elsewhere::Nothing`]).
    fn served_from(&self, found: Elsewhere, key: &str, range: Option<(u64, u64)>) -> BResult<(Vec<u8>, ObjectInfo)> {
        match found {
            Elsewhere::Found(Some((info, data))) => {
                let (s, e) = range.map_or((0, 0), |(s, e)| (s.min(info.size) as usize, e.min(info.size) as usize));
                Ok((data.get(s..e.max(s)).unwrap_or_default().to_vec(), info))
            }
            Elsewhere::Found(None) => Err(BackendError::NoSuchKey(key.into())),
            Elsewhere::Unanswered(why) => Err(BackendError::Busy(why)),
            Elsewhere::Nothing => Err(BackendError::Busy("no copy found elsewhere".into())),
        }
    }

    /// A read of the key (a HEAD: `range` `None`) from wherever its newest copy is.
    fn read(&self, bucket: &str, key: &str, range: Option<(u64, u64)>) -> BResult<(Vec<u8>, ObjectInfo)> {
        match self.home(bucket, key) {
            (Some(h), Some(v)) => self.peer_read(&h, &v.id(), bucket, key, range),
            (_, view) => self.home_read(bucket, key, view, range),
        }
    }

    /// A read from the home node `(home, addr)`.
    fn peer_read(
        &self,
        home: &(String, String),
        view: &str,
        bucket: &str,
        key: &str,
        range: Option<(u64, u64)>,
    ) -> BResult<(Vec<u8>, ObjectInfo)> {
        let n = self.node.get().expect("set with the home");
        let pq = match range {
            Some((s, e)) => {
                format!("/_reo/peer/object?bucket={}&key={}&start={s}&end={e}&view={view}", enc(bucket), enc(key))
            }
            None => format!("/_reo/peer/head?bucket={}&key={}&view={view}", enc(bucket), enc(key)),
        };
        let sent = Instant::now();
        let call = n.peers.call(&home.0, &home.1, http::Method::GET, &pq, &[], Bytes::new());
        let r = block_on(call);
        match r {
            Ok(a) => {
                let info = parse_info(&a.headers)
                    .ok_or_else(|| BackendError::Busy("home node answered without x-reo-info".into()))?;
                n.holdings.install(&cache_key(bucket, key), sent, view, false);
                n.count(|c| c.home_fetches += 1);
                Ok((a.body.to_vec(), info))
            }
            Err(crate::peer::PeerError::Status { status: 404, body, .. }) => {
                // The home node's answer starts with the S3 error code.
                if body.starts_with("NoSuchBucket") {
                    Err(BackendError::NoSuchBucket(bucket.into()))
                } else {
                    Err(BackendError::NoSuchKey(key.into()))
                }
            }
            Err(e @ crate::peer::PeerError::Unreachable { .. }) => {
                // The home node may be dead (its lease not yet expired) or alive and slow. In a
                // settled view each member's unflushed writes have at least `min_replicas − 1`
                // copies on live members (a hand-over replicates again what a leaving member
                // took along), so with `min_replicas` ≥ 2 its replicas hold what it has not
                // written back and the backend the rest. Otherwise (the membership changing, a
                // member that left may have held the only other copy; or writes acknowledged
                // with no copy elsewhere) the read is retried rather than answered from an older
                // copy.
                let v = n.view();
                if !v.settled() {
                    return Err(BackendError::Busy(format!(
                        "the key's home node is unreachable ({e}) while the cluster's membership changes; retry"
                    )));
                }
                if n.cfg.min_replicas < 2 {
                    return Err(BackendError::Busy(format!(
                        "the key's home node is unreachable ({e}) and may hold the only copy of its newest \
                         version (min_replicas 1); retry"
                    )));
                }
                match block_on(crate::reads::from_replicas(n, &v, &home.0, bucket, key)) {
                    Elsewhere::Nothing => self.inner_read(bucket, key, range),
                    Elsewhere::Unanswered(why) => {
                        Err(BackendError::Busy(format!("the key's home node is unreachable ({e}) and {why}")))
                    }
                    other => self.served_from(other, key, range),
                }
            }
            Err(e) => Err(BackendError::Busy(format!("reading from the key's home node: {e}"))),
        }
    }
}

/// Runs a peer call from the gateway's (blocking) backend call.
fn block_on<F: std::future::Future>(f: F) -> F::Output {
    match tokio::runtime::Handle::try_current() {
        Ok(h) => tokio::task::block_in_place(|| h.block_on(f)),
        Err(_) => RUNTIME.get().expect("the cluster runtime is set at start").block_on(f),
    }
}

/// The runtime peer calls from non-runtime threads (the gateway's flusher and miss path) run on.
pub(crate) static RUNTIME: OnceLock<tokio::runtime::Handle> = OnceLock::new();

impl Backend for ClusterBackend {
    fn list_buckets(&self) -> BResult<Vec<BucketInfo>> {
        self.inner.list_buckets()
    }
    fn create_bucket(&self, bucket: &str) -> BResult<()> {
        self.inner.create_bucket(bucket)
    }
    fn head_bucket(&self, bucket: &str) -> BResult<BucketInfo> {
        self.inner.head_bucket(bucket)
    }
    fn delete_bucket(&self, bucket: &str) -> BResult<()> {
        self.inner.delete_bucket(bucket)
    }
    fn put(&self, bucket: &str, key: &str, data: &[u8], info: &ObjectInfo) -> BResult<()> {
        self.fenced()?;
        self.inner.put(bucket, key, data, info)
    }
    fn put_owned(&self, bucket: &str, key: &str, data: Bytes, info: &ObjectInfo) -> BResult<()> {
        self.fenced()?;
        self.inner.put_owned(bucket, key, data, info)
    }
    fn put_stream(self: Arc<Self>, bucket: &str, key: &str, info: &ObjectInfo) -> BResult<Box<dyn ObjectWriter>> {
        self.fenced()?;
        self.inner.clone().put_stream(bucket, key, info)
    }
    fn head(&self, bucket: &str, key: &str) -> BResult<ObjectInfo> {
        self.read(bucket, key, None).map(|(_, i)| i)
    }
    fn get_range(&self, bucket: &str, key: &str, start: u64, end: u64) -> BResult<(Vec<u8>, ObjectInfo)> {
        self.read(bucket, key, Some((start, end)))
    }
    fn get_stream(&self, bucket: &str, key: &str, start: u64, end: u64) -> BResult<(ObjectInfo, ChunkIter)> {
        let buffered = |(data, info): (Vec<u8>, ObjectInfo)| -> (ObjectInfo, ChunkIter) {
            (info, Box::new(std::iter::once(Ok(Bytes::from(data)))))
        };
        match self.home(bucket, key) {
            (Some(h), Some(v)) => self.peer_read(&h, &v.id(), bucket, key, Some((start, end))).map(buffered),
            (_, view) => {
                let sent = Instant::now();
                if let Some(found) = self.newer_elsewhere(bucket, key, view.as_deref()) {
                    return self.served_from(found, key, Some((start, end))).map(buffered);
                }
                // Streamed from the backend, as on a single node.
                let r = self.inner.get_stream(bucket, key, start, end)?;
                self.install_home(bucket, key, sent, view.as_deref());
                Ok(r)
            }
        }
    }
    fn delete(&self, bucket: &str, key: &str) -> BResult<()> {
        self.fenced()?;
        self.inner.delete(bucket, key)
    }
    fn list(&self, bucket: &str, prefix: &str, after: &str, limit: usize) -> BResult<Vec<ListEntry>> {
        match self.node.get() {
            Some(n) if n.view().members.len() > 1 => {
                block_on(crate::listing::list(n, &self.inner, bucket, prefix, after, limit))
            }
            _ => self.inner.list(bucket, prefix, after, limit),
        }
    }
    fn check_key(&self, key: &str) -> BResult<()> {
        self.inner.check_key(key)
    }
    fn probe(&self) -> BResult<()> {
        self.inner.probe()
    }
    fn advise(&self, bucket: &str, address: &Address, advice: Advice) -> BResult<AdviceReport> {
        self.inner.advise(bucket, address, advice)
    }
}
