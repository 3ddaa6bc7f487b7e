//! Running a gateway from a data directory: device files (created on first start), the store,
//! the cache, the local backend, the flusher, credentials, and the server until SIGTERM/SIGINT;
//! then requests drain, the flusher stops and the store closes cleanly (checkpoint), so the next
//! start is warm (hints persist in `<data_dir>/state/hints.json`). After a SIGKILL the store recovers and the flusher resumes the dirty objects.

use std::io::Read;
use std::net::SocketAddr;
use std::path::PathBuf;
use std::sync::Arc;

use reo_cache::{Cache, CacheConfig};
use reo_media::{FileMedia, FileOptions, Media};
use reo_store::{Store, StoreConfig};

use crate::backend::{Backend, LocalBackend};
use crate::gateway::flusher::Flusher;
use crate::gateway::Gateway;
use crate::s3::Limits;
use crate::server::{serve, ServerOptions};

/// Everything `reo serve` needs.
#[derive(Debug, Clone)]
pub struct ServeConfig {
    pub data_dir: PathBuf,
    pub listen: SocketAddr,
    /// Local backend directory (default `<data_dir>/backend`).
    pub backend: Option<PathBuf>,
    pub devices: usize,
    pub device_mib: u64,
    pub access_key: Option<String>,
    pub secret_key: Option<String>,
    pub max_body: u64,
    /// Minimum age of an unflushed object before it is written back.
    pub flush_delay: std::time::Duration,
    /// Write-policy rules (`BUCKET[/PREFIX]=POLICY`); write-back where none matches.
    pub policies: Vec<crate::gateway::policy::PolicyRule>,
    /// Promote budget of hint prefetches, bytes per second (0: unlimited).
    pub promote_bps: u64,
    /// Whether `/metrics` answers unsigned requests.
    pub anonymous_metrics: bool,
    /// Revalidate clean cache hits older than this against the backend's ETag (`None`: never).
    pub revalidate_after: Option<std::time::Duration>,
    /// Device files opened with O_DIRECT (no page cache).
    pub direct_io: bool,
}

fn random_string(len: usize, alphabet: &[u8]) -> Result<String, String> {
    let mut buf = vec![0u8; len];
    std::fs::File::open("/dev/urandom")
        .and_then(|mut f| f.read_exact(&mut buf))
        .map_err(|e| format!("cannot read /dev/urandom for credentials: {e}"))?;
    Ok(buf.iter().map(|b| alphabet[*b as usize % alphabet.len()] as char).collect())
}

/// The key pair: from the flags, else from `<data_dir>/credentials`, else generated (printed once
/// and saved there, mode 0600).
fn credentials(cfg: &ServeConfig) -> Result<(String, String), String> {
    match (&cfg.access_key, &cfg.secret_key) {
        (Some(a), Some(s)) => return Ok((a.clone(), s.clone())),
        (Some(_), None) | (None, Some(_)) => return Err("--access-key and --secret-key go together".into()),
        _ => {}
    }
    let file = cfg.data_dir.join("credentials");
    if let Ok(text) = std::fs::read_to_string(&file) {
        let mut it = text.lines();
        if let (Some(a), Some(s)) = (it.next(), it.next()) {
            tracing::info!("credentials from {}", file.display());
            return Ok((a.trim().to_string(), s.trim().to_string()));
        }
    }
    let a = random_string(20, b"ABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789")?;
    let s = random_string(40, b"ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789")?;
    {
        use std::io::Write;
        use std::os::unix::fs::OpenOptionsExt;
        let mut f = std::fs::OpenOptions::new()
            .write(true)
            .create(true)
            .truncate(true)
            .mode(0o600)
            .open(&file)
            .map_err(|e| format!("cannot save credentials to {}: {e}", file.display()))?;
        writeln!(f, "{a}\n{s}").map_err(|e| format!("{}: {e}", file.display()))?;
    }
    println!("reo: generated credentials (saved in {}):", file.display());
    println!("  access key: {a}\n  secret key: {s}");
    Ok((a, s))
}

fn open_store(cfg: &ServeConfig, io: &crate::device_io::DeviceIoTable) -> Result<Arc<Store>, String> {
    let (dir, devices, device_mib) = (&cfg.data_dir, cfg.devices, cfg.device_mib);
    if devices == 0 {
        return Err("--devices must be at least 1".into());
    }
    let opts = FileOptions { direct: cfg.direct_io, create_len: Some(device_mib << 20) };
    let mut devs: Vec<Arc<dyn Media>> = Vec::new();
    for i in 0..devices {
        let p = dir.join(format!("dev{i}.img"));
        devs.push(io.wrap(i, Arc::new(FileMedia::open(&p, &opts).map_err(|e| e.to_string())?)));
    }
    let (store, report) = Store::open(devs, &StoreConfig::default()).map_err(|e| format!("opening the store: {e}"))?;
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
    Ok(Arc::new(store))
}

/// Runs the gateway until SIGTERM or SIGINT.
pub fn run(cfg: &ServeConfig) -> Result<(), String> {
    std::fs::create_dir_all(&cfg.data_dir).map_err(|e| format!("cannot create {}: {e}", cfg.data_dir.display()))?;
    let (access_key, secret_key) = credentials(cfg)?;
    let device_io = Arc::new(crate::device_io::DeviceIoTable::default());
    let store = open_store(cfg, &device_io)?;
    // One device's worth of user bytes: dirty data (replicated on every device) still fits.
    let capacity = store.space().capacity / cfg.devices as u64;
    let cache = Arc::new(Cache::open(store.clone(), CacheConfig::new(capacity.max(1 << 20)))?);
    let backend_dir = cfg.backend.clone().unwrap_or_else(|| cfg.data_dir.join("backend"));
    let backend: Arc<dyn Backend> = Arc::new(LocalBackend::open(&backend_dir).map_err(|e| e.to_string())?);
    let gw = Gateway::open(backend, cache, &cfg.data_dir.join("state"))?;
    let (n, bytes) = gw.dirty();
    if n > 0 {
        tracing::info!("resuming the flush of {n} unflushed objects ({bytes} bytes)");
    }
    gw.set_flush_delay(cfg.flush_delay);
    gw.set_policies(cfg.policies.clone());
    gw.set_revalidate_after(cfg.revalidate_after);
    let flusher = Flusher::start(gw.clone());
    let hints = crate::hints::engine::HintEngine::start(gw.clone(), &cfg.data_dir.join("state"), cfg.promote_bps)?;
    let api = crate::api::Api {
        gw: gw.clone(),
        hints: hints.clone(),
        device_bytes: cfg.device_mib << 20,
        data_dir: cfg.data_dir.clone(),
        anonymous_metrics: cfg.anonymous_metrics,
        metrics: Default::default(),
        last_rebuild: Default::default(),
        device_io,
    };
    let rt = tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .build()
        .map_err(|e| format!("cannot start the runtime: {e}"))?;
    let opts = ServerOptions { access_key, secret_key, limits: Limits { max_body: cfg.max_body } };
    let served = rt.block_on(async {
        let listener = tokio::net::TcpListener::bind(cfg.listen)
            .await
            .map_err(|e| format!("cannot listen on {}: {e}", cfg.listen))?;
        tracing::info!(
            "S3 on http://{} (backend {})",
            listener.local_addr().map_err(|e| e.to_string())?,
            backend_dir.display()
        );
        serve(listener, api, opts, shutdown_signal()).await.map_err(|e| e.to_string())
    });
    rt.shutdown_timeout(std::time::Duration::from_secs(5));
    tracing::info!("shutting down");
    hints.stop();
    drop(hints);
    flusher.stop();
    drop(gw);
    match Arc::try_unwrap(store) {
        Ok(s) => {
            s.close().map_err(|e| format!("closing the store: {e}"))?;
            tracing::info!("store closed (checkpoint written)");
        }
        Err(s) => {
            s.flush().map_err(|e| format!("flushing the store: {e}"))?;
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
