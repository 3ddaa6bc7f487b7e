//! `reo serve`: the S3 gateway. Settings come from the flags, else from the configuration file
//! (`--config FILE`, else `./reo.toml` if present; see [`crate::config`]), else the embedded
//! defaults (`./reo-data`, 5 device files of 256 MiB, a local backend directory
//! `./reo-data/backend`, `127.0.0.1:9000`, generated credentials). Logs go to stderr through
//! `tracing-subscriber`, filtered by `RUST_LOG` (default `info`, s3s's own log off).

use std::net::SocketAddr;
use std::path::PathBuf;
use std::process::ExitCode;

use clap::Args;

use crate::config;

#[derive(Args, Debug)]
pub struct ServeArgs {
    /// Configuration file (default: ./reo.toml if it exists); flags override it.
    #[arg(long)]
    config: Option<PathBuf>,
    /// Directory of the device files, the gateway's state and (by default) the backend. [default: ./reo-data]
    #[arg(long)]
    data_dir: Option<PathBuf>,
    /// Address to serve S3 on over plain HTTP. [default: 127.0.0.1:9000, or none when TLS is
    /// configured]
    #[arg(long)]
    listen: Option<SocketAddr>,
    /// Address to serve S3 on over HTTPS (with --tls-cert and --tls-key).
    #[arg(long, requires_all = ["tls_cert", "tls_key"])]
    tls_listen: Option<SocketAddr>,
    /// The server's certificate chain, PEM (leaf first).
    #[arg(long, requires = "tls_key")]
    tls_cert: Option<PathBuf>,
    /// The certificate's private key, PEM (PKCS#8, PKCS#1 or SEC1).
    #[arg(long, requires = "tls_cert")]
    tls_key: Option<PathBuf>,
    /// The backend: a local directory (buckets are directories), or an S3 store as `s3://`
    /// (AWS), `s3://HOST[:PORT]` (https) or `s3+http://HOST[:PORT]`; region, credentials and
    /// addressing from [backend] in reo.toml or AWS_* variables. Default: <data-dir>/backend.
    #[arg(long)]
    backend: Option<String>,
    /// Number of device files. [default: 5]
    #[arg(long)]
    devices: Option<usize>,
    /// Size of each device file created on first start, in MiB. [default: 256]
    #[arg(long)]
    device_mib: Option<u64>,
    /// Size of each of the two checkpoint slots on each device, in MiB, set when the devices are
    /// formatted: a checkpoint holds about 50 bytes plus the object's metadata per cached blob
    /// of the whole array, so a cache of small objects needs more than the default (a 32nd of
    /// a device, 1 MiB to 1 GiB).
    #[arg(long)]
    checkpoint_mib: Option<u64>,
    /// S3 access key (with --secret-key). Default: generated once, kept in <data-dir>/credentials.
    #[arg(long)]
    access_key: Option<String>,
    /// S3 secret key (visible in the process list: prefer --secret-key-file or REO_SECRET_KEY).
    #[arg(long, env = "REO_SECRET_KEY", hide_env_values = true)]
    secret_key: Option<String>,
    /// A file whose first line is the S3 secret key.
    #[arg(long, conflicts_with = "secret_key")]
    secret_key_file: Option<PathBuf>,
    /// Largest PUT or part body accepted, in MiB. [default: 1024]
    #[arg(long)]
    max_body_mib: Option<u64>,
    /// Minimum age of a written object before it is flushed to the backend, in milliseconds
    /// (rewrites within it cost one backend write). [default: 0]
    #[arg(long)]
    flush_delay_ms: Option<u64>,
    /// Write policy by bucket or key prefix, BUCKET[/PREFIX]=POLICY with POLICY one of
    /// write-back (the default), write-through, write-around, read-only; repeatable, the longest
    /// match wins.
    #[arg(long = "write-policy", value_name = "RULE")]
    write_policies: Vec<reo_gateway::gateway::policy::PolicyRule>,
    /// Bytes per second hint prefetches may read from the backend (0: unlimited). [default: 64 MiB/s]
    #[arg(long)]
    promote_bps: Option<u64>,
    /// Also serve GET /metrics, without authentication, on this address (off by default; for a
    /// network only the scraper reaches).
    #[arg(long)]
    metrics_listen: Option<SocketAddr>,
    /// The bearer token Prometheus scrapes /metrics with on the S3 address (else [metrics] token).
    #[arg(long = "metrics-token", env = "REO_METRICS_TOKEN", hide_env_values = true, hide = true)]
    metrics_token: Option<String>,
    /// Open the device files with O_DIRECT (bypass the page cache, as a flash array without a
    /// DRAM copy of its contents; `reo bench gateway` uses it). Default: buffered.
    #[arg(long)]
    direct_io: bool,
    /// Bytes of DRAM for the memory tier in front of flash, e.g. 1GiB (0: off; else [cache]
    /// memory). [default: a thirty-second of the RAM, at most 1 GiB]
    #[arg(long, value_parser = parse_size_arg)]
    memory: Option<u64>,
    /// Bytes per second a device rebuild may write (0: as fast as the devices go): the rebuild
    /// resumed at start and replacements that give no rate of their own. [default: 0]
    #[arg(long)]
    rebuild_bps: Option<u64>,
    /// Join a cluster coordinated by this etcd (`etcd://HOST:PORT[,etcd://HOST:PORT...]`; see
    /// docs/CLUSTER.md). Needs --node-id, --advertise and --cluster-secret-file.
    #[arg(long, value_name = "URLS")]
    cluster: Option<String>,
    /// This node's id in the cluster (the same across restarts).
    #[arg(long)]
    node_id: Option<String>,
    /// HOST:PORT the other nodes reach this node's S3 listener on.
    #[arg(long)]
    advertise: Option<String>,
    /// A file whose first line is the cluster's shared secret (at least 32 characters).
    #[arg(long)]
    cluster_secret_file: Option<PathBuf>,
    /// Copies of an unflushed write, this node's included, before it is acknowledged. [default: 2]
    #[arg(long)]
    replicas: Option<usize>,
    /// Fewest copies a write may be acknowledged with when replica targets fail. [default: --replicas]
    #[arg(long)]
    min_replicas: Option<usize>,
    /// TTL of this node's etcd lease, in milliseconds (whole seconds). [default: 5000]
    #[arg(long)]
    lease_ttl_ms: Option<u64>,
    /// How long a caching permission lasts, in milliseconds. [default: 10000]
    #[arg(long)]
    permission_ms: Option<u64>,
}

/// Largest `cluster.replica_share`: with this node's own unflushed writes (at most half the
/// flash), 90 % of the flash at most is data that cannot be evicted.
const MAX_REPLICA_SHARE: f64 = 0.4;

/// The cluster settings of the flags and `[cluster]`; `None` without `--cluster`/`cluster.etcd`.
fn cluster(
    a: &ServeArgs,
    f: &config::ClusterSection,
    data_dir: &std::path::Path,
    capacity_hint: u64,
) -> Result<Option<reo_cluster::ClusterConfig>, String> {
    let Some(urls) = a.cluster.clone().or(f.etcd.clone()) else { return Ok(None) };
    let etcd = reo_cluster::config::parse_endpoints(&urls).map_err(|e| e.to_string())?;
    let node_id = a.node_id.clone().or(f.node_id.clone()).ok_or("--cluster needs --node-id (or cluster.node_id)")?;
    let advertise = a
        .advertise
        .clone()
        .or(f.advertise.clone())
        .ok_or("--cluster needs --advertise HOST:PORT (or cluster.advertise)")?;
    let secret_file = a.cluster_secret_file.clone().or(f.secret_file.clone()).ok_or(
        "--cluster needs --cluster-secret-file (or cluster.secret_file): the secret peers sign their requests with",
    )?;
    let secret = config::read_first_line(&secret_file).map_err(|e| format!("--cluster-secret-file {e}"))?;
    let dur = |field: &str,
               flag: Option<u64>,
               v: &Option<String>,
               d: std::time::Duration|
     -> Result<std::time::Duration, String> {
        if let Some(ms) = flag {
            return Ok(std::time::Duration::from_millis(ms));
        }
        match v {
            None => Ok(d),
            Some(s) => config::parse_duration(s)
                .ok_or_else(|| format!("cluster.{field}: expected a duration like \"5s\", got {s:?}")),
        }
    };
    let replicas = a.replicas.or(f.replicas).unwrap_or(2);
    let share = f.replica_share.unwrap_or(reo_cluster::config::DEFAULT_REPLICA_SHARE);
    // Replicas are never evicted, nor is this node's own unflushed data (up to half the flash):
    // together they must leave room for the clean cache.
    if !(0.0..=MAX_REPLICA_SHARE).contains(&share) {
        return Err(format!(
            "cluster.replica_share: expected a share between 0 and {MAX_REPLICA_SHARE} (the rest of the flash holds \
             this node's own unflushed writes, up to half, and its clean cache), got {share}"
        ));
    }
    let lease_ttl = dur("lease_ttl", a.lease_ttl_ms, &f.lease_ttl, reo_cluster::config::DEFAULT_LEASE_TTL)?;
    if lease_ttl < std::time::Duration::from_secs(1) {
        return Err("the cluster lease TTL must be at least 1 s (etcd counts whole seconds)".into());
    }
    Ok(Some(reo_cluster::ClusterConfig {
        etcd,
        name: f.name.clone().unwrap_or_else(|| "reo".into()),
        node_id,
        advertise,
        secret: secret.into_bytes(),
        replicas,
        min_replicas: a.min_replicas.or(f.min_replicas).unwrap_or(replicas),
        lease_ttl,
        permission: dur(
            "permission_lease",
            a.permission_ms,
            &f.permission_lease,
            reo_cluster::config::DEFAULT_PERMISSION,
        )?,
        replica_bytes: (capacity_hint as f64 * share) as u64,
        state_dir: data_dir.join("state").join("cluster"),
        peer_timeout: std::time::Duration::from_secs(2),
    }))
}

pub fn run(a: &ServeArgs) -> Result<ExitCode, String> {
    let f = config::load(a.config.as_deref())?;
    let tls = match (
        a.tls_listen.or(f.tls_listen),
        a.tls_cert.clone().or(f.tls_cert.clone()),
        a.tls_key.clone().or(f.tls_key.clone()),
    ) {
        (Some(listen), Some(cert), Some(key)) => Some(reo_gateway::launch::TlsSettings { listen, cert, key }),
        (None, None, None) => None,
        _ => return Err("TLS needs all three: --tls-listen (or [server] tls_listen), --tls-cert and --tls-key".into()),
    };
    let cfg = reo_gateway::launch::ServeConfig {
        data_dir: a.data_dir.clone().or(f.data_dir).unwrap_or_else(|| PathBuf::from("./reo-data")),
        tls: tls.clone(),
        // Plain HTTP by default, unless TLS is configured (then only if asked for).
        listen: a.listen.or(f.listen).or_else(|| tls.is_none().then(|| SocketAddr::from(([127, 0, 0, 1], 9000)))),
        backend: match &a.backend {
            Some(v) => config::backend_flag(v, &f.backend)?,
            None => f.backend.clone(),
        },
        devices: a.devices.or(f.devices).unwrap_or(5),
        device_mib: a.device_mib.or(f.device_bytes.map(|b| b >> 20)).unwrap_or(256),
        checkpoint_bytes: match a.checkpoint_mib {
            Some(0) => return Err("--checkpoint-mib: must be at least 1".into()),
            Some(m) => Some(m << 20),
            None => f.checkpoint_bytes,
        },
        access_key: a.access_key.clone().or(f.access_key),
        secret_key: match &a.secret_key_file {
            Some(p) => Some(config::read_first_line(p).map_err(|e| format!("--secret-key-file {e}"))?),
            None => a.secret_key.clone().or(f.secret_key),
        },
        max_body: a.max_body_mib.map(|m| m << 20).or(f.max_body).unwrap_or(1 << 30),
        flush_delay: std::time::Duration::from_millis(a.flush_delay_ms.or(f.flush_delay_ms).unwrap_or(0)),
        policies: if a.write_policies.is_empty() {
            f.write_policies.unwrap_or_default()
        } else {
            a.write_policies.clone()
        },
        promote_bps: a.promote_bps.or(f.promote_bps).unwrap_or(64 << 20),
        anonymous_metrics: f.anonymous_metrics.unwrap_or(false),
        metrics_token: match a.metrics_token.clone().filter(|t| !t.is_empty()) {
            Some(t) => Some(config::metrics_token("REO_METRICS_TOKEN", t)?),
            None => f.metrics_token.clone(),
        },
        metrics_listen: a.metrics_listen.or(f.metrics_listen),
        allow_sigv2: f.allow_sigv2.unwrap_or(false),
        header_timeout: f.header_timeout.unwrap_or(std::time::Duration::from_secs(10)),
        max_connections: f.max_connections,
        blocking_threads: f.blocking_threads,
        dirty_limit: f.dirty_limit,
        backend_down_slowdown_after: f
            .backend_down_slowdown_after
            .unwrap_or(reo_gateway::gateway::outage::DEFAULT_SLOWDOWN_AFTER),
        revalidate_after: f.revalidate_after,
        max_fill: f.max_fill,
        memory_tier: a.memory.or(f.memory_tier),
        direct_io: a.direct_io,
        rebuild_bps: a.rebuild_bps.or(f.rebuild_bps).filter(|&b| b > 0),
        slow_read_after: f.slow_read_after.unwrap_or(reo_store::StoreConfig::default().slow_read_after),
        stuck_read_fail_after: f
            .stuck_read_fail_after
            .unwrap_or(reo_store::StoreConfig::default().stuck_read_fail_after),
        replacement_devices: f.replacement_devices.clone(),
        memory_budget: f.memory_budget,
        max_requests_per_connection: f.max_requests_per_connection.unwrap_or(10_000),
        body_limits: {
            let d = reo_gateway::slow_body::BodyLimits::default();
            reo_gateway::slow_body::BodyLimits {
                idle: f.body_idle_timeout.unwrap_or(d.idle),
                min_rate: f.body_min_rate.unwrap_or(d.min_rate),
                ..d
            }
        },
        multipart_expiry: f.multipart_expiry.unwrap_or(reo_gateway::gateway::DEFAULT_MULTIPART_EXPIRY),
        local_timeout: f.local_timeout.unwrap_or(reo_gateway::backend::s3::Deadlines::default().call),
        extension: None,
    };
    let mut cfg = cfg;
    // The replica area's bound: its share of the flash (all device files).
    let flash = cfg.device_mib.saturating_mul(1 << 20).saturating_mul(cfg.devices as u64);
    if let Some(c) = cluster(a, &f.cluster, &cfg.data_dir, flash)? {
        std::fs::create_dir_all(&c.state_dir).map_err(|e| format!("{}: {e}", c.state_dir.display()))?;
        let x = reo_cluster::ClusterExtension::new(c).map_err(|e| e.to_string())?;
        cfg.extension = Some(std::sync::Arc::new(x));
    }
    reo_gateway::launch::run(&cfg).map_err(|e| e.to_string())?;
    Ok(ExitCode::SUCCESS)
}

/// A size argument (`1GiB`, `512MiB`, `0`).
fn parse_size_arg(v: &str) -> Result<u64, String> {
    reo_cache::units::parse_size(v).map_err(|e| e.to_string())
}
