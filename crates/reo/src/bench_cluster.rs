//! `reo bench cluster`: a cluster on loopback — a private etcd and three `reo serve` nodes (this
//! binary) over one local backend directory — against a single write-back gateway, in the same
//! run:
//!
//! 1. PUT latency (4 KiB, one client, sequential) of a single node, of the cluster with one copy
//!    (`--replicas 1`: routing only) and with two (`--replicas 2`: a replica on a peer before the
//!    acknowledgement); all through the same node, so two thirds of the cluster's PUTs are
//!    forwarded to another home node.
//! 2. GET hits (4 KiB, 4 clients) of objects homed at node 1, through node 1 (the home) and
//!    through node 2 (under a caching permission), each body checked.
//! 3. Failover: N unflushed objects (flush delay 10 min) written through their home node, which
//!    is then SIGKILLed; measured from the kill until the last of them is in the backend
//!    directory byte-exact (read with the local backend's own reader), for each N of
//!    `--failover`. The lease TTL is part of that time (the cluster cannot tell a dead node from
//!    a slow one sooner).
//!
//! One host: the nodes share two cores and one disk, so this measures the protocol's costs
//! (round trips, fsyncs), not a network's. The last line on stdout is one JSON object.

use std::path::{Path, PathBuf};
use std::process::{Child, Command, ExitCode, Stdio};
use std::time::{Duration, Instant};

use reo_gateway::backend::{Backend, LocalBackend};

use crate::bench_gateway::load::{self, get_exact, put, Target};

#[derive(clap::Args, Debug)]
pub struct BenchClusterArgs {
    /// Directory for the temporary data (removed at the end). Default: the system temporary
    /// directory.
    #[arg(long)]
    pub dir: Option<PathBuf>,
    /// PUTs per latency phase.
    #[arg(long, default_value_t = 1000)]
    pub puts: usize,
    /// Unflushed objects of each failover run (comma-separated).
    #[arg(long, default_value = "1000,10000")]
    pub failover: String,
    /// The nodes' lease TTL in milliseconds (whole seconds).
    #[arg(long, default_value_t = 2000)]
    pub lease_ttl_ms: u64,
    /// Print only the JSON object on stdout.
    #[arg(long)]
    pub json: bool,
}

const ACCESS: &str = "BENCHCLUSTERACCESS01";
const SECRET: &str = "bench-cluster-secret-key-000000000000000";
const NODES: usize = 3;

fn free_port() -> Result<u16, String> {
    let l = std::net::TcpListener::bind("127.0.0.1:0").map_err(|e| format!("no free loopback port: {e}"))?;
    Ok(l.local_addr().map_err(|e| e.to_string())?.port())
}

/// A child process, killed when dropped.
struct Proc(Child);

impl Drop for Proc {
    fn drop(&mut self) {
        // SAFETY: kill(2) on our own child's pid; no memory is involved.
        unsafe { libc::kill(self.0.id() as i32, libc::SIGTERM) };
        let _ = self.0.wait();
    }
}

fn start_etcd(dir: &Path) -> Result<(Proc, String), String> {
    let (client, peer) = (free_port()?, free_port()?);
    let url = format!("http://127.0.0.1:{client}");
    let peer_url = format!("http://127.0.0.1:{peer}");
    let child = Command::new("etcd")
        .args(["--name", "bench", "--data-dir"])
        .arg(dir.join("etcd"))
        .args(["--listen-client-urls", &url, "--advertise-client-urls", &url])
        .args(["--listen-peer-urls", &peer_url, "--initial-advertise-peer-urls", &peer_url])
        .args(["--initial-cluster", &format!("bench={peer_url}")])
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .spawn()
        .map_err(|e| format!("cannot start etcd (Debian's etcd-server): {e}"))?;
    Ok((Proc(child), format!("etcd://127.0.0.1:{client}")))
}

struct Node {
    proc: Option<Proc>,
    target: Target,
}

fn target(port: u16) -> Target {
    Target { host: format!("127.0.0.1:{port}"), access_key: ACCESS.into(), secret_key: SECRET.into(), tls: None }
}

/// Starts a node (`cluster`: etcd URL, id, replicas) and waits until it answers.
fn start_node(
    dir: &Path,
    backend: &Path,
    cluster: Option<(&str, usize, usize)>,
    ttl_ms: u64,
    flush_delay_ms: u64,
) -> Result<Node, String> {
    let port = free_port()?;
    let exe = std::env::current_exe().map_err(|e| format!("cannot find this executable: {e}"))?;
    std::fs::create_dir_all(dir).map_err(|e| e.to_string())?;
    let log = std::fs::File::create(dir.join("serve.log")).map_err(|e| format!("serve.log: {e}"))?;
    let mut cmd = Command::new(exe);
    cmd.args(["serve", "--data-dir"])
        .arg(dir.join("data"))
        .arg("--backend")
        .arg(backend)
        .args(["--listen", &format!("127.0.0.1:{port}"), "--access-key", ACCESS, "--secret-key", SECRET])
        .args(["--devices", "4", "--device-mib", "256", "--flush-delay-ms", &flush_delay_ms.to_string()]);
    if let Some((etcd, id, replicas)) = cluster {
        let secret = dir.join("cluster.secret");
        std::fs::write(&secret, "bench-cluster-shared-secret-0000000000000\n").map_err(|e| e.to_string())?;
        cmd.args(["--cluster", etcd, "--node-id", &format!("n{id}"), "--advertise", &format!("127.0.0.1:{port}")])
            .arg("--cluster-secret-file")
            .arg(&secret)
            .args(["--replicas", &replicas.to_string(), "--lease-ttl-ms", &ttl_ms.to_string()]);
    }
    let child = cmd
        .env("RUST_LOG", "warn")
        .stdin(Stdio::null())
        .stdout(log.try_clone().map_err(|e| e.to_string())?)
        .stderr(log)
        .spawn()
        .map_err(|e| format!("cannot start reo serve: {e}"))?;
    let mut proc = Proc(child);
    let t = target(port);
    crate::bench_gateway::wait_healthy(&mut proc.0, &t, &dir.join("serve.log"), Duration::from_secs(90))?;
    Ok(Node { proc: Some(proc), target: t })
}

/// The cluster's status as node `n` reports it (through `reo admin`'s signed client: the admin
/// API takes signed bodies only).
fn status(n: &Node) -> Result<serde_json::Value, String> {
    let keys = crate::admin::sign::Keys { access: ACCESS.into(), secret: SECRET.into() };
    let c = crate::admin::client::Client::new(&format!("http://{}", n.target.host), keys, None)?;
    c.call("GET", "/_reo/admin/cluster", &[], b"").map_err(|e| format!("cluster status: {e}"))
}

/// Waits until every node sees all of them and the membership is settled.
fn wait_settled(nodes: &[Node], members: usize) -> Result<(), String> {
    let t0 = Instant::now();
    loop {
        let ok = nodes.iter().filter(|n| n.proc.is_some()).all(|n| {
            status(n).is_ok_and(|s| s["settled"] == true && s["members"].as_array().map_or(0, Vec::len) == members)
        });
        if ok {
            return Ok(());
        }
        if t0.elapsed() > Duration::from_secs(60) {
            return Err("the cluster did not settle within 60 s".into());
        }
        // Polling other processes' state: there is no event to wait on.
        std::thread::sleep(Duration::from_millis(50));
    }
}

fn start_cluster(dir: &Path, etcd: &str, replicas: usize, ttl: u64, flush_delay_ms: u64) -> Result<Vec<Node>, String> {
    let backend = dir.join("backend");
    std::fs::create_dir_all(&backend).map_err(|e| e.to_string())?;
    let mut nodes = Vec::new();
    for i in 0..NODES {
        nodes.push(start_node(&dir.join(format!("n{i}")), &backend, Some((etcd, i, replicas)), ttl, flush_delay_ms)?);
    }
    wait_settled(&nodes, NODES)?;
    Ok(nodes)
}

fn body(i: usize, len: usize) -> Vec<u8> {
    let mut v = vec![0u8; len];
    let mut x = (i as u64 + 1).wrapping_mul(0x9E37_79B9_7F4A_7C15);
    for b in &mut v {
        x ^= x << 13;
        x ^= x >> 7;
        x ^= x << 17;
        *b = x as u8;
    }
    v
}

fn create_bucket(t: &Target) -> Result<(), String> {
    match t.connect()?.call("PUT", "/bench", &[])? {
        200 | 409 => Ok(()),
        s => Err(format!("creating the bucket: {s}")),
    }
}

/// PUT latency through `t`, `n` sequential 4 KiB PUTs (503s retried, counted).
fn put_latency(t: &Target, n: usize, tag: &str) -> Result<load::PhaseResult, String> {
    load::run(t, 1, n, |c, _, i| {
        let path = format!("/bench/{tag}-{i}");
        let data = body(i, 4096);
        for _ in 0..100 {
            if put(c, &path, &data)?.is_some() {
                return Ok(Some(4096));
            }
            std::thread::sleep(Duration::from_millis(20));
        }
        Err(format!("PUT {path}: 503 a hundred times"))
    })
}

/// Keys homed at member `id` of the ring over n0..n2.
fn keys_homed_at(id: &str, prefix: &str, n: usize) -> Vec<String> {
    let ring = reo_cluster::ring::Ring::new(["n0", "n1", "n2"]);
    (0..).map(|i| format!("{prefix}-{i}")).filter(|k| ring.home("bench", k) == Some(id)).take(n).collect()
}

fn phase_json(p: &load::PhaseResult) -> serde_json::Value {
    serde_json::json!({ "ops": p.ops, "ops_per_s": p.ops_per_sec(), "p50_ms": p.p50_ms, "p99_ms": p.p99_ms, "slowdowns": p.slowdowns })
}

pub fn run(a: &BenchClusterArgs) -> Result<ExitCode, String> {
    let root = tempfile::Builder::new()
        .prefix("reo-bench-cluster-")
        .tempdir_in(a.dir.clone().unwrap_or_else(std::env::temp_dir))
        .map_err(|e| format!("temporary directory: {e}"))?;
    let dir = root.path();
    let say = |m: &str| crate::progress::step("bench cluster", m);
    let (_etcd, etcd) = start_etcd(dir)?;

    say("single node: PUT latency");
    let single = {
        let backend = dir.join("single-backend");
        std::fs::create_dir_all(&backend).map_err(|e| e.to_string())?;
        let n = start_node(&dir.join("single"), &backend, None, a.lease_ttl_ms, 0)?;
        create_bucket(&n.target)?;
        put_latency(&n.target, a.puts, "s")?
    };
    let mut latency = Vec::new();
    for replicas in [1, 2] {
        say(&format!("cluster, {replicas} cop{}: PUT latency", if replicas == 1 { "y" } else { "ies" }));
        let d = dir.join(format!("r{replicas}"));
        let nodes = start_cluster(&d, &etcd, replicas, a.lease_ttl_ms, 0)?;
        create_bucket(&nodes[0].target)?;
        latency.push((replicas, put_latency(&nodes[0].target, a.puts, &format!("r{replicas}"))?));
        if replicas == 2 {
            say("GET hits through the home node and through another node");
            let keys = keys_homed_at("n1", "hot", 200);
            let mut c = nodes[1].target.connect()?;
            for (i, k) in keys.iter().enumerate() {
                put(&mut c, &format!("/bench/{k}"), &body(i, 4096))?.ok_or("PUT refused")?;
            }
            let get = |n: &Node| {
                let keys = &keys;
                let per = if a.puts >= 1000 { 2000 } else { 400 };
                // Warm: the first reads fetch (and, off the home node, obtain permissions).
                load::run(&n.target, 1, keys.len(), |c, _, i| {
                    get_exact(c, &format!("/bench/{}", keys[i]), &body(i, 4096))
                })?;
                load::run(&n.target, 4, per, |c, cl, i| {
                    let j = (cl * 7919 + i) % keys.len();
                    get_exact(c, &format!("/bench/{}", keys[j]), &body(j, 4096))
                })
            };
            let home = get(&nodes[1])?;
            let other = get(&nodes[2])?;
            let s = status(&nodes[2])?;
            let hits = s["counters"]["permission_hits"].as_u64().unwrap_or(0);
            if hits < other.ops {
                return Err(format!(
                    "through the non-home node only {hits} of {} reads were cache hits under a permission",
                    other.ops
                ));
            }
            latency.push((100, home));
            latency.push((101, other));
        }
        drop(nodes);
    }

    let mut failovers = Vec::new();
    for n in a.failover.split(',').filter_map(|s| s.trim().parse::<usize>().ok()) {
        say(&format!("failover of {n} unflushed objects"));
        let d = dir.join(format!("fo{n}"));
        let mut nodes = start_cluster(&d, &etcd, 2, a.lease_ttl_ms, 600_000)?;
        create_bucket(&nodes[0].target)?;
        let keys = keys_homed_at("n1", &format!("fo{n}"), n);
        let t = nodes[1].target.clone();
        let per = n / 4;
        load::run(&t, 4, per, |c, cl, i| {
            let j = cl * per + i;
            for _ in 0..200 {
                if put(c, &format!("/bench/{}", keys[j]), &body(j, 4096))?.is_some() {
                    return Ok(Some(4096));
                }
                std::thread::sleep(Duration::from_millis(20));
            }
            Err("PUT refused 200 times".into())
        })?;
        let written = per * 4;
        let mut victim = nodes[1].proc.take().ok_or("no victim")?;
        // SAFETY: kill(2) on our own child's pid.
        unsafe { libc::kill(victim.0.id() as i32, libc::SIGKILL) };
        let killed = Instant::now();
        let _ = victim.0.wait();
        drop(victim);
        let backend = LocalBackend::attach(&d.join("backend"));
        let mut pending: Vec<usize> = (0..written).collect();
        while !pending.is_empty() {
            pending.retain(|&j| match backend.get_range("bench", &keys[j], 0, 4096) {
                Ok((data, _)) => data != body(j, 4096),
                Err(_) => true,
            });
            if killed.elapsed() > Duration::from_secs(300) {
                return Err(format!("{} of {written} objects not in the backend 300 s after the kill", pending.len()));
            }
            if !pending.is_empty() {
                // Polling the backend directory another process writes: no event to wait on.
                std::thread::sleep(Duration::from_millis(20));
            }
        }
        let secs = killed.elapsed().as_secs_f64();
        say(&format!("{written} objects in the backend {secs:.2} s after the kill (lease TTL {} ms)", a.lease_ttl_ms));
        failovers.push(serde_json::json!({ "objects": written, "kill_to_all_flushed_s": secs, "lease_ttl_s": a.lease_ttl_ms as f64 / 1000.0, "after_lease_expiry_s": secs - a.lease_ttl_ms as f64 / 1000.0 }));
        drop(nodes);
    }

    let find = |k: usize| latency.iter().find(|(r, _)| *r == k).map(|(_, p)| *p).unwrap_or_default();
    let out = serde_json::json!({
        "machine": "loopback, one host (all nodes and etcd share its cores and disk)",
        "put_4k": {
            "single_node": phase_json(&single),
            "cluster_1_copy": phase_json(&find(1)),
            "cluster_2_copies": phase_json(&find(2)),
            "p50_ratio_2_copies_vs_single": find(2).p50_ms / single.p50_ms,
        },
        "get_hit_4k": {
            "home_node": phase_json(&find(100)),
            "non_home_node": phase_json(&find(101)),
            "non_home_vs_home": find(101).ops_per_sec() / find(100).ops_per_sec(),
        },
        "failover": failovers,
    });
    if !a.json {
        eprintln!("{}", serde_json::to_string_pretty(&out).unwrap_or_default());
    }
    println!("{out}");
    Ok(ExitCode::SUCCESS)
}
