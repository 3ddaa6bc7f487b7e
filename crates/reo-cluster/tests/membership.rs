//! Membership against a real etcd (Debian's `etcd-server`, which `scripts/test.sh` installs):
//! joining, the view every node watches, fencing when the lease is gone, the failover claim's
//! compare-and-swap, and a failed-over node discarding its data when it re-joins.

use std::process::{Child, Command, Stdio};
use std::sync::atomic::{AtomicBool, AtomicU32, Ordering};
use std::sync::Arc;
use std::time::Duration;

use reo_cluster::membership::Membership;
use reo_cluster::ClusterConfig;

struct Etcd {
    child: Child,
    url: String,
    _dir: tempfile::TempDir,
}

impl Drop for Etcd {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

/// A loopback port nobody listens on, below the kernel's ephemeral range (32768 and up by
/// default): a port there could be taken by any outgoing connection between this look and etcd's
/// bind. Each process starts at its own offset, so concurrent suites rarely probe the same ports.
fn free_port() -> u16 {
    const LOW: u32 = 20_000;
    const SPAN: u32 = 12_000;
    static NEXT: AtomicU32 = AtomicU32::new(0);
    let start = std::process::id().wrapping_mul(7919) % SPAN;
    for _ in 0..SPAN {
        let port = (LOW + (start + NEXT.fetch_add(1, Ordering::Relaxed)) % SPAN) as u16;
        if std::net::TcpListener::bind(("127.0.0.1", port)).is_ok() {
            return port;
        }
    }
    panic!("no free port in {LOW}..{}", LOW + SPAN);
}

fn etcd() -> Etcd {
    let dir = tempfile::tempdir().unwrap();
    let (client, peer) = (free_port(), free_port());
    let url = format!("http://127.0.0.1:{client}");
    let child = Command::new("etcd")
        .args(["--name", "t", "--data-dir"])
        .arg(dir.path().join("etcd"))
        .args(["--listen-client-urls", &url, "--advertise-client-urls", &url])
        .args(["--listen-peer-urls", &format!("http://127.0.0.1:{peer}")])
        .args(["--initial-advertise-peer-urls", &format!("http://127.0.0.1:{peer}")])
        .args(["--initial-cluster", &format!("t=http://127.0.0.1:{peer}")])
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .spawn()
        .expect("etcd (Debian's etcd-server) must be installed: scripts/test.sh installs it");
    Etcd { child, url, _dir: dir }
}

fn config(url: &str, id: &str, state: &std::path::Path) -> ClusterConfig {
    ClusterConfig {
        etcd: vec![url.to_string()],
        name: "t".into(),
        node_id: id.into(),
        advertise: format!("127.0.0.1:{}", free_port()),
        secret: vec![1; 32],
        replicas: 2,
        min_replicas: 2,
        lease_ttl: Duration::from_secs(1),
        permission: Duration::from_secs(1),
        replica_bytes: 1 << 20,
        state_dir: state.to_path_buf(),
        peer_timeout: Duration::from_secs(1),
    }
}

async fn wait_view(m: &Membership, what: &str, f: impl Fn(&reo_cluster::view::View) -> bool) {
    let mut rx = m.subscribe();
    tokio::time::timeout(Duration::from_secs(20), rx.wait_for(|v| f(v)))
        .await
        .unwrap_or_else(|_| panic!("the view never showed {what}: {:?}", m.view()))
        .unwrap();
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn join_watch_fence_claim_and_discard_after_failover() {
    let e = etcd();
    let dir = tempfile::tempdir().unwrap();
    // etcd answers once it has elected itself: retry the first join.
    let a = Membership::connect(&config(&e.url, "a", dir.path())).await.unwrap();
    let mut tries = 0;
    while a.join(false, || panic!("a fresh node was never failed over")).await.is_err() {
        tries += 1;
        assert!(tries < 100, "etcd never answered");
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
    let b = Membership::connect(&config(&e.url, "b", dir.path())).await.unwrap();
    b.join(false, || panic!("a fresh node was never failed over")).await.unwrap();
    let (wa, wb) = (a.clone(), b.clone());
    tokio::spawn(async move { wa.watch().await });
    tokio::spawn(async move { wb.watch().await });
    wait_view(&a, "both members", |v| v.members.len() == 2 && v.owners.len() == 2).await;
    assert!(!a.fenced() && !b.fenced());
    assert!(!a.claim("b").await.unwrap(), "a live member cannot be claimed");

    // b stops keeping its lease alive (its process is paused): etcd expires it, b fences itself.
    let ka = a.clone();
    tokio::spawn(async move { ka.keep_alive().await });
    wait_view(&a, "b's failover pending", |v| v.pending_failover() == ["b".to_string()]).await;
    assert!(b.fenced(), "b's lease is past its validity");
    assert!(a.claim("b").await.unwrap(), "the first claimant wins");
    assert!(!a.claim("b").await.unwrap(), "and only once");

    // b comes back while the failover runs: it waits for it, then discards what was failed over.
    let discarded = Arc::new(AtomicBool::new(false));
    let d = discarded.clone();
    let rejoin = tokio::spawn(async move { b.join(true, move || d.store(true, Ordering::SeqCst)).await.map(|_| b) });
    tokio::time::sleep(Duration::from_millis(300)).await;
    assert!(!rejoin.is_finished(), "b must wait while its failover is claimed");
    assert!(a.finish_failover("b").await.unwrap());
    let b = tokio::time::timeout(Duration::from_secs(10), rejoin).await.unwrap().unwrap().unwrap();
    assert!(discarded.load(Ordering::SeqCst), "a failed-over node discards its data when it re-joins");
    assert!(!b.fenced());
    wait_view(&a, "b back as a member and an owner", |v| v.members.contains_key("b") && v.owners.contains("b")).await;

    // A node that re-joins before anyone failed it over keeps its data.
    let c = Membership::connect(&config(&e.url, "b", dir.path())).await.unwrap();
    c.join(true, || panic!("b was not failed over: nothing to discard")).await.unwrap();
}
