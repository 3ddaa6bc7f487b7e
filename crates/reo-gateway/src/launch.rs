//! Running a gateway from a data directory: device files (created on first start), the store,
//! the cache, the backend (a local directory or an S3 store), the flusher, credentials, and the server until SIGTERM/SIGINT;
//! then requests drain, the flusher stops and the store closes cleanly (checkpoint), so the next
//! start is warm (hints persist in `<data_dir>/state/hints.json`). After a SIGKILL the store
//! recovers and the flusher resumes the dirty objects. The local backend directory is created on
//! a fresh data directory only: on a restart a missing one means the backend is down.

use std::net::SocketAddr;
use std::path::PathBuf;
use std::sync::Arc;

use reo_cache::{Cache, CacheConfig};
use reo_media::{FileMedia, FileOptions, Media};
use reo_store::{Store, StoreConfig};

use crate::backend::{Backend, LocalBackend, S3Backend};
use crate::gateway::flusher::Flusher;
use crate::gateway::Gateway;
use crate::s3::Limits;
use crate::server::{serve, ServerOptions};

/// Everything `reo serve` needs.
#[derive(Debug, Clone)]
pub struct ServeConfig {
    /// The data directory: device files, `state/` (hints), `credentials`, `users.json` and, by
    /// default, the local backend.
    pub data_dir: PathBuf,
    /// The plain HTTP address (`None`: none, when TLS serves alone).
    pub listen: Option<SocketAddr>,
    /// HTTPS: the address, the certificate chain and the key (PEM files).
    pub tls: Option<TlsSettings>,
    /// The backend the cache is in front of.
    pub backend: BackendChoice,
    /// Number of device files (at least 1).
    pub devices: usize,
    /// Size of each device file in MiB (used when the file is created).
    pub device_mib: u64,
    /// Access key of the built-in admin; given with `secret_key` or not at all (`None`: from
    /// `<data_dir>/credentials`, generated on the first start).
    pub access_key: Option<String>,
    /// Secret key of the built-in admin; given with `access_key` or not at all.
    pub secret_key: Option<String>,
    /// Largest request body accepted, in bytes.
    pub max_body: u64,
    /// Bytes of request bodies held in memory at once (`None`: [`crate::s3::default_memory_budget`]).
    pub memory_budget: Option<u64>,
    /// Minimum age of an unflushed object before it is written back.
    pub flush_delay: std::time::Duration,
    /// Write-policy rules (`BUCKET[/PREFIX]=POLICY`); write-back where none matches.
    pub policies: Vec<crate::gateway::policy::PolicyRule>,
    /// Promote budget of hint prefetches, bytes per second (0: unlimited).
    pub promote_bps: u64,
    /// Whether `/metrics` answers unsigned requests.
    pub anonymous_metrics: bool,
    /// The bearer token `/metrics` takes ([`crate::scrape`]).
    pub metrics_token: Option<String>,
    /// A separate address serving `GET /metrics` only, without authentication.
    pub metrics_listen: Option<SocketAddr>,
    /// Accept Signature Version 2 requests (unsafe; `[server] allow_sigv2`).
    pub allow_sigv2: bool,
    /// See [`ServerOptions::header_timeout`].
    pub header_timeout: std::time::Duration,
    /// See [`ServerOptions::max_connections`].
    pub max_connections: Option<usize>,
    /// Threads of the blocking pool at most (`None`: [`default_blocking_threads`]).
    pub blocking_threads: Option<usize>,
    /// Unflushed bytes beyond which writes get 503 SlowDown (default: half the cache).
    pub dirty_limit: Option<u64>,
    /// Backend outage after which writes get 503 SlowDown.
    pub backend_down_slowdown_after: std::time::Duration,
    /// Revalidate clean cache hits older than this against the backend's ETag (`None`: never).
    pub revalidate_after: Option<std::time::Duration>,
    /// Bytes of DRAM for the memory tier in front of flash (`None`: [`default_memory_tier`]; 0:
    /// off).
    pub memory_tier: Option<u64>,
    /// Streamed misses of at most this many bytes are collected and offered to the cache (`None`:
    /// a quarter of the cache, at most 256 MiB; 0: misses are never cached).
    pub max_fill: Option<u64>,
    /// Device files opened with O_DIRECT (no page cache).
    pub direct_io: bool,
    /// Rebuild bandwidth cap in bytes per second (`None`: as fast as the devices go): for a
    /// rebuild resumed at start and for replacements that give no rate of their own.
    pub rebuild_bps: Option<u64>,
    /// Hedged reads: stop waiting for a device whose read has been in service this long when the
    /// others can rebuild its chunks (`None`: always wait; `reo_store::StoreConfig`).
    pub slow_read_after: Option<std::time::Duration>,
    /// Mark failed a device with one read in service this long (`None`: never).
    pub stuck_read_fail_after: Option<std::time::Duration>,
    /// Bytes of each of the two checkpoint slots on each device, set when the devices are
    /// formatted (`None`: the store's default, a 32nd of a device; `reo_store::StoreConfig`). A
    /// checkpoint holds a record per live blob of the whole array: a cache of small objects
    /// needs more than the default.
    pub checkpoint_bytes: Option<u64>,
    /// Block devices a device replacement may use (`[server] replacement_devices`); any other
    /// replacement is a new file inside the data directory.
    pub replacement_devices: Vec<PathBuf>,
    /// What a request body must keep up.
    pub body_limits: crate::slow_body::BodyLimits,
    /// Requests one connection may carry before the server closes it.
    pub max_requests_per_connection: u64,
    /// Open multipart uploads older than this are removed.
    pub multipart_expiry: std::time::Duration,
    /// The deadline of a local directory backend's calls ([`crate::backend::deadline`]; an S3
    /// backend's are in its settings).
    pub local_timeout: std::time::Duration,
    /// A layer the gateway runs under (the cluster), if any.
    pub extension: Option<std::sync::Arc<dyn crate::intercept::Extension>>,
}

/// Where and with what `reo serve` answers HTTPS.
#[derive(Debug, Clone)]
pub struct TlsSettings {
    /// The HTTPS address.
    pub listen: SocketAddr,
    /// The certificate chain, a PEM file.
    pub cert: PathBuf,
    /// The private key, a PEM file.
    pub key: PathBuf,
}

/// Which backend `reo serve` caches.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum BackendChoice {
    /// A local directory (default `<data_dir>/backend`).
    Local(Option<PathBuf>),
    /// An S3-compatible store.
    S3(crate::backend::s3::S3Settings),
}

impl Default for BackendChoice {
    fn default() -> Self {
        BackendChoice::Local(None)
    }
}

/// An error of a lower layer (media, store, cache, the server loop), kept as the source.
type Lower = Box<dyn std::error::Error + Send + Sync>;

/// Why `reo serve` could not start, or did not stop cleanly; the message names the option,
/// setting or file to change.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum LaunchError {
    #[error("cannot create {}: {source}", dir.display())]
    /// The data directory could not be created.
    DataDir {
        /// The directory.
        dir: PathBuf,
        /// Why.
        source: std::io::Error,
    },
    #[error(transparent)]
    /// The S3 backend could not be opened (its settings).
    S3(#[from] crate::backend::s3::OpenError),
    #[error(transparent)]
    /// The local directory backend could not be opened.
    Backend(#[from] crate::backend::BackendError),
    #[error("--access-key and --secret-key go together")]
    /// Only one of `--access-key` and `--secret-key` was given.
    KeyPair,
    #[error(transparent)]
    /// The credentials or `users.json` could not be loaded.
    Users(#[from] crate::users::LoadError),
    #[error(
        "server.memory_budget ({budget} bytes) is below the largest body accepted ({max_body} bytes): such a body could never be stored"
    )]
    /// The memory budget is below the largest accepted body.
    MemoryBudget {
        /// The configured budget, bytes.
        budget: u64,
        /// The largest accepted body, bytes.
        max_body: u64,
    },
    #[error("--devices must be at least 1")]
    /// `--devices` is 0.
    NoDevices,
    #[error(transparent)]
    /// A device file could not be opened or created.
    Device(Lower),
    #[error("opening the store: {0}")]
    /// The store could not be opened (or recovered).
    Store(Lower),
    #[error(transparent)]
    /// The cache could not be built over the store.
    Cache(Lower),
    #[error(transparent)]
    /// The gateway could not be opened (its recovery).
    Gateway(#[from] crate::gateway::OpenError),
    #[error("flush.dirty_limit: {limit} bytes is more than the cache's capacity ({capacity} bytes on these devices)")]
    /// `flush.dirty_limit` exceeds the cache's capacity.
    DirtyLimit {
        /// The configured limit, bytes.
        limit: u64,
        /// The cache's capacity on these devices, bytes.
        capacity: u64,
    },
    #[error(transparent)]
    /// The hint engine could not start (loading its persisted hints).
    Hints(#[from] crate::hints::HintError),
    #[error("cannot start the runtime: {0}")]
    /// The tokio runtime could not be built.
    Runtime(std::io::Error),
    #[error("{0}")]
    /// The layer the gateway runs under (the cluster) could not start.
    Extension(String),
    #[error(transparent)]
    /// The TLS certificate or key could not be loaded.
    Tls(#[from] crate::tls::TlsError),
    #[error("no address to serve on: give --listen, or --tls-listen with --tls-cert and --tls-key")]
    /// Neither an HTTP nor an HTTPS address was given.
    NoListener,
    #[error("cannot listen on {addr}: {source}")]
    /// Binding the HTTP or HTTPS address failed.
    Listen {
        /// The address.
        addr: SocketAddr,
        /// Why.
        source: std::io::Error,
    },
    #[error("cannot listen on {addr} (--metrics-listen): {source}")]
    /// Binding the `--metrics-listen` address failed.
    MetricsListen {
        /// The address.
        addr: SocketAddr,
        /// Why.
        source: std::io::Error,
    },
    /// The server loop failed.
    #[error(transparent)]
    Serve(Lower),
    #[error("closing the store: {0}")]
    /// Closing the store (writing its checkpoint) failed at shutdown.
    Close(Lower),
    #[error("flushing the store: {0}")]
    /// Flushing a store still referenced at shutdown failed.
    Flush(Lower),
}

/// Opens an S3 backend; returns it and a description for the log. Nothing is sent: whether the
/// store answers is the prober's question, asked in the background once the gateway serves (a
/// hung store must not hold up the start; writes wait on flash until it answers).
fn open_s3(settings: &crate::backend::s3::S3Settings) -> Result<(Arc<dyn Backend>, String), LaunchError> {
    let b = S3Backend::open(settings)?;
    let desc = b.describe();
    Ok((Arc::new(b), desc))
}

/// Opens the local directory backend (default `<data_dir>/backend`). It is created only with a
/// fresh data directory (`formatted`) or when it exists: a restart with the directory gone (an
/// unmounted volume, a rename) would otherwise send the flushes into a new empty one. The gateway
/// then serves from the cache, and the flusher writes once the directory is back.
fn open_local(cfg: &ServeConfig, formatted: bool) -> Result<(Arc<dyn Backend>, String), LaunchError> {
    let configured = match &cfg.backend {
        BackendChoice::Local(dir) => dir.clone(),
        BackendChoice::S3(_) => None,
    };
    let dir = configured.unwrap_or_else(|| cfg.data_dir.join("backend"));
    // In a cluster, the other members' gateways write the directory too.
    let shared = cfg.extension.is_some();
    let backend: Arc<dyn Backend> = if formatted || dir.is_dir() {
        Arc::new(if shared { LocalBackend::open_shared(&dir)? } else { LocalBackend::open(&dir)? })
    } else {
        tracing::warn!(
            "backend directory {} is missing: the backend is down until it appears (create it if it is meant to be new)",
            dir.display()
        );
        Arc::new(if shared { LocalBackend::attach_shared(&dir) } else { LocalBackend::attach(&dir) })
    };
    // File-system calls cannot time out by themselves (a hung mount blocks them in the kernel).
    let backend = Arc::new(crate::backend::deadline::Deadline::new(backend, cfg.local_timeout));
    Ok((backend, dir.display().to_string()))
}

/// The users: the built-in admin from the flags (or `<data_dir>/credentials`, generated on the
/// first start) and those of `<data_dir>/users.json`.
fn users(cfg: &ServeConfig) -> Result<crate::users::Users, LaunchError> {
    let pair = match (&cfg.access_key, &cfg.secret_key) {
        (Some(a), Some(s)) => Some((a.clone(), s.clone())),
        (Some(_), None) | (None, Some(_)) => return Err(LaunchError::KeyPair),
        _ => None,
    };
    Ok(crate::users::Users::open(&cfg.data_dir, pair)?)
}

fn open_store(cfg: &ServeConfig, io: &crate::device_io::DeviceIoTable) -> Result<(Arc<Store>, bool), LaunchError> {
    let (dir, devices, device_mib) = (&cfg.data_dir, cfg.devices, cfg.device_mib);
    if devices == 0 {
        return Err(LaunchError::NoDevices);
    }
    let opts = FileOptions { direct: cfg.direct_io, create_len: Some(device_mib << 20) };
    let mut devs: Vec<Arc<dyn Media>> = Vec::new();
    for i in 0..devices {
        let p = crate::device_files::device_path(dir, i);
        let media: Arc<dyn Media> = match crate::device_files::missing_target(&p) {
            // A replacement whose disk is gone: the device opens failed, the gateway still starts.
            Some(target) => {
                let why = format!("{} links to {}, which is missing", p.display(), target.display());
                tracing::error!("device {i}: {why}; it opens as failed (replace it)");
                Arc::new(reo_media::AbsentMedia::new(device_mib << 20, why))
            }
            None => Arc::new(FileMedia::open(&p, &opts).map_err(|e| LaunchError::Device(e.into()))?),
        };
        devs.push(io.wrap(i, media));
    }
    crate::device_files::warn_leftovers(dir, devices);
    let store_cfg = StoreConfig {
        slow_read_after: cfg.slow_read_after,
        stuck_read_fail_after: cfg.stuck_read_fail_after,
        checkpoint_size: cfg.checkpoint_bytes,
        ..StoreConfig::default()
    };
    let (store, report) = Store::open(devs, &store_cfg).map_err(|e| LaunchError::Store(e.into()))?;
    tracing::info!(
        "store on {devices} devices of {device_mib} MiB in {} ({})",
        dir.display(),
        if report.formatted {
            "formatted"
        } else if report.clean {
            "clean restart"
        } else {
            "recovered after a crash"
        }
    );
    Ok((Arc::new(store), report.formatted))
}

/// Runs the gateway until SIGTERM or SIGINT.
pub fn run(cfg: &ServeConfig) -> Result<(), LaunchError> {
    // Everything the server creates is its own alone: cached objects, unflushed writes, staged
    // parts and credentials.
    // SAFETY: umask only sets the process's file-creation mask.
    unsafe { libc::umask(0o077) };
    std::fs::create_dir_all(&cfg.data_dir)
        .map_err(|source| LaunchError::DataDir { dir: cfg.data_dir.clone(), source })?;
    crate::device_files::restrict(&cfg.data_dir, cfg.devices);
    // An S3 backend's settings are checked before anything is created on the devices.
    let s3 = match &cfg.backend {
        BackendChoice::S3(settings) => Some(open_s3(settings)?),
        BackendChoice::Local(_) => None,
    };
    let users = Arc::new(users(cfg)?);
    if let Some(b) = cfg.memory_budget.filter(|&b| b < cfg.max_body) {
        return Err(LaunchError::MemoryBudget { budget: b, max_body: cfg.max_body });
    }
    let device_io = Arc::new(crate::device_io::DeviceIoTable::default());
    let (store, formatted) = open_store(cfg, &device_io)?;
    // One device's worth of user bytes: dirty data (replicated on every device) still fits.
    let capacity = store.space().capacity / cfg.devices as u64;
    let mut cache_cfg = CacheConfig::new(capacity.max(1 << 20));
    cache_cfg.memory_bytes = cfg.memory_tier.unwrap_or_else(default_memory_tier);
    let cache = Arc::new(Cache::open(store.clone(), cache_cfg).map_err(|e| LaunchError::Cache(e.into()))?);
    let (backend, backend_desc) = match s3 {
        Some(b) => b,
        None => open_local(cfg, formatted)?,
    };
    let backend = match &cfg.extension {
        Some(x) => x.wrap_backend(backend),
        None => backend,
    };
    let gw = Gateway::open(backend, cache, &cfg.data_dir.join("state"))?;
    let (n, bytes) = gw.dirty();
    if n > 0 {
        tracing::info!("resuming the flush of {n} unflushed objects ({bytes} bytes)");
    }
    gw.set_flush_delay(cfg.flush_delay);
    gw.set_multipart_expiry(cfg.multipart_expiry);
    if let Some(limit) = cfg.dirty_limit {
        let cap = gw.cache.config().capacity_bytes;
        if limit > cap {
            return Err(LaunchError::DirtyLimit { limit, capacity: cap });
        }
        gw.set_dirty_limit(limit);
    }
    gw.health.set_slowdown_after(cfg.backend_down_slowdown_after);
    gw.set_policies(cfg.policies.clone());
    gw.set_revalidate_after(cfg.revalidate_after);
    if let Some(bytes) = cfg.max_fill {
        gw.set_max_fill(bytes);
    }
    let rt = tokio::runtime::Builder::new_multi_thread()
        .max_blocking_threads(cfg.blocking_threads.unwrap_or_else(|| default_blocking_threads(cfg.extension.is_some())))
        .enable_all()
        .build()
        .map_err(LaunchError::Runtime)?;
    let interceptor = match &cfg.extension {
        Some(x) => Some(x.start(&gw, rt.handle()).map_err(LaunchError::Extension)?),
        None => {
            let held = gw.held().len();
            if held > 0 {
                tracing::warn!(
                    held,
                    "this node holds replicas of cluster peers' unflushed writes but runs without a cluster: \
                     they stay on flash, never evicted, until it runs in its cluster again"
                );
            }
            None
        }
    };
    let flusher = Flusher::start(gw.clone());
    let prober = crate::gateway::outage::Prober::start(gw.raw_backend.clone(), gw.health.clone());
    let hints = crate::hints::engine::HintEngine::start(gw.clone(), &cfg.data_dir.join("state"), cfg.promote_bps)?;
    let api = crate::api::Api {
        gw: gw.clone(),
        hints: hints.clone(),
        device_bytes: cfg.device_mib << 20,
        data_dir: cfg.data_dir.clone(),
        anonymous_metrics: cfg.anonymous_metrics,
        metrics: Default::default(),
        scrubs: Default::default(),
        console: Default::default(),
        occupancy: Default::default(),
        last_rebuild: Default::default(),
        device_io,
        rebuild_bps: cfg.rebuild_bps,
        users: users.clone(),
        replacement_devices: cfg.replacement_devices.clone(),
        replays: Default::default(),
        denials: Default::default(),
        budget: crate::budget::MemoryBudget::new(
            cfg.memory_budget.unwrap_or_else(|| crate::s3::default_memory_budget(cfg.max_body)),
        ),
        extension: cfg.extension.clone(),
    };
    // A rebuild the last run did not finish (the store found its device still marked
    // rebuilding) goes on, in the cache's priority order; the admin status follows it.
    match api.gw.cache.resume_rebuild(cfg.rebuild_bps) {
        Ok(Some(h)) => {
            tracing::info!(device = h.device(), "resuming the rebuild the last run did not finish");
            *api.last_rebuild.lock() = Some(h);
        }
        Ok(None) => {}
        Err(e) => tracing::error!("cannot resume the rebuild the last run did not finish: {e}"),
    }
    let opts = ServerOptions {
        users,
        limits: Limits { max_body: cfg.max_body },
        allow_sigv2: cfg.allow_sigv2,
        header_timeout: cfg.header_timeout,
        max_connections: cfg.max_connections,
        metrics_token: cfg.metrics_token.clone(),
        body_limits: cfg.body_limits,
        max_requests_per_connection: cfg.max_requests_per_connection,
        interceptor,
    };
    // Certificates are read before anything listens: a bad file stops the start.
    let tls = cfg.tls.as_ref().map(|t| crate::tls::acceptor(&t.cert, &t.key).map(|a| (t.listen, a))).transpose()?;
    if cfg.listen.is_none() && tls.is_none() {
        return Err(LaunchError::NoListener);
    }
    let served = rt.block_on(async {
        let mut listeners = Vec::new();
        for (addr, tls) in cfg.listen.map(|a| (a, None)).into_iter().chain(tls.map(|(a, t)| (a, Some(t)))) {
            let tcp =
                tokio::net::TcpListener::bind(addr).await.map_err(|source| LaunchError::Listen { addr, source })?;
            let scheme = if tls.is_some() { "https" } else { "http" };
            tracing::info!(
                "S3 on {scheme}://{} (backend {backend_desc})",
                tcp.local_addr().map_err(|e| LaunchError::Serve(e.into()))?
            );
            listeners.push(crate::server::Listener { tcp, tls });
        }
        if let Some(addr) = cfg.metrics_listen {
            let m = tokio::net::TcpListener::bind(addr)
                .await
                .map_err(|source| LaunchError::MetricsListen { addr, source })?;
            tracing::info!("metrics on http://{addr}/metrics (no authentication: keep it on a private network)");
            tokio::spawn(crate::scrape::serve_metrics_only(m, api.clone(), std::future::pending()));
        }
        tokio::spawn(crate::console::sample_forever(api.clone()));
        serve(listeners, api, opts, shutdown_signal()).await.map_err(|e| LaunchError::Serve(e.into()))
    });
    if let Some(x) = &cfg.extension {
        x.stop();
    }
    rt.shutdown_timeout(std::time::Duration::from_secs(5));
    tracing::info!("shutting down");
    // Backend fetches run on threads of their own; their readers are gone with the connections,
    // so they stop at their next chunk (a fill under way finishes).
    if !gw.fetch.flights.wait_idle_for(std::time::Duration::from_secs(5)) {
        tracing::warn!("backend fetches still running after 5 s; closing anyway");
    }
    hints.stop();
    drop(hints);
    prober.stop();
    flusher.stop();
    drop(gw);
    match Arc::try_unwrap(store) {
        Ok(s) => {
            s.close().map_err(|e| LaunchError::Close(e.into()))?;
            tracing::info!("store closed (checkpoint written)");
        }
        Err(s) => {
            s.flush().map_err(|e| LaunchError::Flush(e.into()))?;
            tracing::warn!("store flushed (still referenced; the next start recovers from the journal)");
        }
    }
    served
}

async fn shutdown_signal() {
    use tokio::signal::unix::{signal, SignalKind};
    let mut term = signal(SignalKind::terminate()).expect("SIGTERM handler");
    tokio::select! {
        _ = term.recv() => {}
        _ = tokio::signal::ctrl_c() => {}
    }
}

/// The blocking pool's default bound: eight threads per core, between 16 and 128. Its threads
/// mostly wait (on a device lane, a group commit, the backend), so it is sized to the I/O a
/// node keeps in flight, not to its cores; the bound keeps a burst of slow requests from
/// growing the process to hundreds of threads (tokio's own default is 512). Work beyond it
/// queues in the pool. A cluster node (`clustered`) gets four times as many: its pool threads
/// may wait on a peer whose answer needs a pool thread there, and two nodes whose pools were
/// all waiting on each other would stall until the peer timeout failed those requests.
pub fn default_blocking_threads(clustered: bool) -> usize {
    let cores = std::thread::available_parallelism().map_or(2, |n| n.get());
    (8 * cores).clamp(16, 128) * if clustered { 4 } else { 1 }
}

/// The memory tier's default size: a thirty-second of the machine's RAM, at most 1 GiB (64 MiB
/// if the RAM cannot be read). Modest on purpose: the request-body budget, the page cache and
/// the index need memory too.
pub fn default_memory_tier() -> u64 {
    let ram = std::fs::read_to_string("/proc/meminfo").ok().and_then(|m| {
        let line = m.lines().find(|l| l.starts_with("MemTotal:"))?;
        line.split_whitespace().nth(1)?.parse::<u64>().ok().map(|kib| kib * 1024)
    });
    ram.map_or(64 << 20, |r| (r / 32).min(1 << 30))
}
