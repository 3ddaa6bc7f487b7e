//! `reo bench gateway`: the S3 gateway under a bounded, built-in load, on loopback, against the raw
//! read bandwidth of its own device files in the same run.
//!
//! 1. The device files are created and every byte written once (`bench store`'s
//!    preconditioning: holes of a sparse file would read as zeros without disk I/O). Objects are
//!    written straight into a fresh local backend directory: `small` objects of
//!    4 KiB and `large` objects of 4 MiB (deterministic bytes).
//! 2. A child `reo serve --direct-io` (this binary) starts on temporary device files over that
//!    backend, with a generated key pair, on a free loopback port (HTTPS with `--tls-cert`,
//!    `--tls-key` and `--tls-ca`: the same load over TLS, the client verifying the server).
//! 3. Every object is read twice (misses fill the cache, then hits), each body checked.
//! 4. Measured (each GET phase checked against the server's own counters, `/_reo/admin/status`:
//!    as many cache lookups as timed GETs, every one a hit — a phase with a miss fails the bench):
//!    GET hits of 4 KiB objects (ops/s, p50/p99), the raw read pass of the device
//!    files (`bench store`'s raw read: one thread per file, O_DIRECT, sequential 2 MiB reads),
//!    GET hits of 4 MiB objects (MiB/s, p50/p99), a second raw pass (the two are averaged, so
//!    drift affects both sides alike), PUTs of 64 KiB objects (write-back; ops/s, p50/p99),
//!    PUTs of 4 MiB objects (write-back, streamed into the cache; MiB/s), PUTs of 4 KiB objects
//!    (write-back) and their flush (every device byte written from the first PUT until nothing
//!    is dirty, per user byte, against 1.3 × (N dirty copies + 1 clean); the earlier PUTs are
//!    flushed first), and ListObjectsV2 pages
//!    of 100 keys at random places in a bucket of 1,000 keys and in one of 10,000 (ms per page:
//!    a page should cost the same in both). The hits are served from the memory tier (on by
//!    default; a copy is taken at the warm-up's flash hit) when it takes the objects: each phase
//!    reports how many. GET 4 MiB is compared with the raw read only when every one of its hits
//!    came from flash (`--memory 0`, or a tier too small for 4 MiB objects).
//! 5. With `--peer nginx`, before the PUTs: the same GET-hit load on reo, on nginx's
//!    `proxy_cache` and on a floor server that answers from memory with nothing but its socket
//!    I/O, over the same objects (4 KiB, 64 KiB, 4 MiB), taking turns (`peer.rs`, `nginx.rs`,
//!    `floor.rs`), with `--peer-clients` connections.
//! 6. The server is stopped with SIGTERM and the directory removed.
//!
//! The last line on stdout is one JSON object. The raw read and reo's device reads use O_DIRECT:
//! neither is served by this machine's page cache (nginx's cache files are, as nginx deploys).

pub(crate) mod client;
pub(crate) mod floor;
pub(crate) mod load;
mod nginx;
mod peer;
mod usage;

use std::path::{Path, PathBuf};
use std::process::{Child, Command, ExitCode, Stdio};
use std::sync::Arc;
use std::time::{Duration, Instant};

use crate::bench_store::raw;
use load::{get_exact, put, Target};
use reo_gateway::backend::{Backend, LocalBackend, ObjectInfo};
use reo_media::{FileMedia, FileOptions, Media};

#[derive(clap::Args, Debug)]
pub struct BenchGatewayArgs {
    /// Directory for the temporary data (a fresh subdirectory, removed at the end). Default: the
    /// system temporary directory.
    #[arg(long)]
    pub dir: Option<PathBuf>,
    /// Device files of the server.
    #[arg(long, default_value_t = 4)]
    pub devices: usize,
    /// Size of each device file in MiB.
    #[arg(long, default_value_t = 512)]
    pub device_mib: u64,
    /// Concurrent client connections.
    #[arg(long, default_value_t = 4)]
    pub clients: usize,
    /// Fewer requests (about a quarter).
    #[arg(long)]
    pub quick: bool,
    /// Print only the JSON object on stdout (progress still goes to stderr).
    #[arg(long)]
    pub json: bool,
    /// Serve and load over HTTPS with this certificate chain (PEM; for 127.0.0.1), its key
    /// (`--tls-key`) and the CA that signed it (`--tls-ca`, which the client trusts).
    #[arg(long, requires_all = ["tls_key", "tls_ca"])]
    pub tls_cert: Option<PathBuf>,
    #[arg(long, requires = "tls_cert")]
    pub tls_key: Option<PathBuf>,
    #[arg(long, requires = "tls_cert")]
    pub tls_ca: Option<PathBuf>,
    /// Compare with a peer over the same objects and load, taking turns: `nginx` (`proxy_cache`
    /// over a second server block serving the objects as files; nginx must be on the PATH), and
    /// a minimal server answering from memory (the floor).
    #[arg(long, conflicts_with = "tls_cert")]
    pub peer: Option<String>,
    /// The server's memory tier (`reo serve --memory`), e.g. 0 to serve every hit from flash.
    /// Default: the server's.
    #[arg(long)]
    pub memory: Option<String>,
    /// Rounds of the peer comparison, each side once per round in a rotating order (medians are
    /// reported; a multiple of 6 balances which side follows which).
    #[arg(long, default_value_t = 3)]
    pub rounds: usize,
    /// Concurrent connections of the peer comparison's load (the other phases take
    /// `--clients`).
    #[arg(long, default_value_t = 16)]
    pub peer_clients: usize,
}

const SMALL: usize = 4 << 10;
/// The peer comparison's middle size.
const MIDDLE: usize = 64 << 10;
const LARGE: usize = 4 << 20;
const PUT_SIZE: usize = 64 << 10;
const BUCKET: &str = "bench";
/// How long the write-back phase waits for the flusher to drain.
const FLUSH_WITHIN: Duration = Duration::from_secs(300);
/// Keys in the two listing buckets.
const LISTED: [usize; 2] = [1_000, 10_000];
/// Keys per listing page.
const LIST_PAGE: usize = 100;

fn listed_key(i: usize) -> String {
    format!("k/{i:06}")
}

/// One progress line on stderr (under a spinner on a terminal).
fn progress(msg: impl std::fmt::Display) {
    crate::progress::step("bench gateway", &msg.to_string());
}

fn bytes_of(i: usize, len: usize) -> Vec<u8> {
    let mut v = vec![0u8; len];
    raw::fill(&mut v, 7_000 + i as u64);
    v
}

/// The child server; stopped (SIGTERM, then waited for) when dropped.
struct Server(Child);

impl Drop for Server {
    fn drop(&mut self) {
        // SAFETY: kill(2) on our own child's pid; no memory is involved.
        unsafe { libc::kill(self.0.id() as i32, libc::SIGTERM) };
        let _ = self.0.wait();
    }
}

fn start_server(dir: &Path, a: &BenchGatewayArgs, t: &Target) -> Result<Server, String> {
    let exe = std::env::current_exe().map_err(|e| format!("cannot find this executable: {e}"))?;
    let log = std::fs::File::create(dir.join("serve.log")).map_err(|e| format!("serve.log: {e}"))?;
    let child = Command::new(exe)
        .args(["serve", "--data-dir"])
        .arg(dir.join("data"))
        .arg("--backend")
        .arg(dir.join("backend"))
        .args(match (&a.tls_cert, &a.tls_key) {
            (Some(c), Some(k)) => vec![
                "--tls-listen".into(),
                t.host.clone(),
                "--tls-cert".into(),
                path_str(c),
                "--tls-key".into(),
                path_str(k),
            ],
            _ => vec!["--listen".to_string(), t.host.clone()],
        })
        .args(["--access-key", &t.access_key, "--secret-key", &t.secret_key])
        .args(["--devices", &a.devices.to_string(), "--device-mib", &a.device_mib.to_string(), "--direct-io"])
        .args(a.memory.iter().flat_map(|m| ["--memory", m.as_str()]))
        .env("RUST_LOG", "warn")
        .stdin(Stdio::null())
        .stdout(log.try_clone().map_err(|e| e.to_string())?)
        .stderr(log)
        .spawn()
        .map_err(|e| format!("cannot start reo serve: {e}"))?;
    let mut server = Server(child);
    wait_healthy(&mut server.0, t, &dir.join("serve.log"), Duration::from_secs(60))?;
    Ok(server)
}

/// Waits until the child `reo serve` answers `/_reo/health` (at most `within`); its log `log`
/// is in the error if it exits first.
pub(crate) fn wait_healthy(child: &mut Child, t: &Target, log: &Path, within: Duration) -> Result<(), String> {
    let t0 = Instant::now();
    loop {
        if let Ok(Some(st)) = child.try_wait() {
            let log = std::fs::read_to_string(log).unwrap_or_default();
            return Err(format!("reo serve exited ({st}) before answering:\n{log}"));
        }
        if let Ok(mut c) = t.connect() {
            if c.call("GET", "/_reo/health", &[]) == Ok(200) {
                return Ok(());
            }
        }
        if t0.elapsed() > within {
            return Err(format!("reo serve did not answer /_reo/health within {within:?}"));
        }
        // Polling a starting process: there is no event to wait on across processes.
        std::thread::sleep(Duration::from_millis(50));
    }
}

/// The server's cache lookup and hit counters (`/_reo/admin/status`), to prove that a timed GET
/// phase was all hits.
struct CacheCounters {
    requests: u64,
    hits: u64,
    memory_hits: u64,
}

/// The server's state (`/_reo/admin/status`).
fn server_status(t: &Target) -> Result<reo_gateway::api::admin_types::Status, String> {
    let mut c = t.connect()?;
    let status = c.call("GET", "/_reo/admin/status", &[])?;
    if status != 200 {
        return Err(format!("GET /_reo/admin/status: status {status}: {}", String::from_utf8_lossy(&c.body)));
    }
    serde_json::from_slice(&c.body).map_err(|e| format!("GET /_reo/admin/status: {e}"))
}

/// Device bytes the server has written, over all its devices.
fn device_bytes_written(t: &Target) -> Result<u64, String> {
    Ok(server_status(t)?.devices.iter().map(|d| d.io.get("write_bytes").copied().unwrap_or(0)).sum())
}

/// Wakes the flusher and waits until nothing is dirty (as `reo admin flush`); an error after
/// `within`.
fn flush_all(t: &Target, within: Duration) -> Result<(), String> {
    let began = Instant::now();
    loop {
        let mut c = t.connect()?;
        let status = c.call("POST", "/_reo/admin/flush", &[])?;
        if status != 200 {
            return Err(format!("POST /_reo/admin/flush: status {status}: {}", String::from_utf8_lossy(&c.body)));
        }
        let dirty = server_status(t)?.dirty_objects;
        if dirty == 0 {
            return Ok(());
        }
        if began.elapsed() > within {
            return Err(format!("bench gateway: {dirty} objects still dirty after {within:?} of flushing"));
        }
        // Polling another process's flusher: the admin API has no event to wait on.
        std::thread::sleep(Duration::from_millis(100));
    }
}

impl CacheCounters {
    fn read(t: &Target) -> Result<CacheCounters, String> {
        let s = server_status(t)?;
        Ok(CacheCounters { requests: s.cache.requests, hits: s.cache.hits, memory_hits: s.cache.memory_hits })
    }

    /// Checks that the `timed` GETs of `phase`, made between `before` and `self`, were each one
    /// cache lookup and one hit; returns the hits.
    fn all_hits_since(&self, before: &CacheCounters, timed: u64, phase: &str) -> Result<u64, String> {
        let (lookups, hits) = (self.requests.saturating_sub(before.requests), self.hits.saturating_sub(before.hits));
        if lookups != timed || hits != timed {
            return Err(format!(
                "bench gateway: {phase}: {timed} timed GETs, but the server counted {lookups} lookups and {hits} hits \
                 (every timed GET must be one lookup and a hit)"
            ));
        }
        Ok(hits)
    }
}

fn path_str(p: &Path) -> String {
    p.to_string_lossy().into_owned()
}

fn free_port() -> Result<u16, String> {
    let l = std::net::TcpListener::bind("127.0.0.1:0").map_err(|e| format!("no free loopback port: {e}"))?;
    Ok(l.local_addr().map_err(|e| e.to_string())?.port())
}

/// Bytes at the head of each device file zeroed after preconditioning (superblocks, journal,
/// checkpoints: 3/32 of the device, rounded up to 4 MiB); the raw read covers the rest.
fn meta_bytes(device_mib: u64) -> u64 {
    ((device_mib << 20) * 3 / 32).next_multiple_of(4 << 20)
}

/// Raw sequential O_DIRECT read bandwidth of the server's device files (MiB/s).
fn raw_read(dir: &Path, devices: usize, device_mib: u64) -> Result<f64, String> {
    let mut files = Vec::new();
    for i in 0..devices {
        let p = dir.join("data").join(format!("dev{i}.img"));
        let f = FileMedia::open(&p, &FileOptions { direct: true, create_len: None })
            .map_err(|e| format!("cannot open {} for the raw read: {e}", p.display()))?;
        files.push(Arc::new(f));
    }
    let len = (device_mib << 20).min(1 << 30);
    let (bytes, secs) = raw::read_pass(&files, meta_bytes(device_mib), len, 2 << 20)?;
    Ok(bytes as f64 / f64::from(1 << 20) / secs)
}

pub fn run(a: &BenchGatewayArgs) -> Result<ExitCode, String> {
    if a.devices == 0 || a.clients == 0 || a.rounds == 0 || a.peer_clients == 0 {
        return Err("bench gateway: --devices, --clients, --rounds and --peer-clients must be at least 1".into());
    }
    let nginx = match a.peer.as_deref() {
        None => None,
        Some("nginx") => Some(nginx::find().ok_or(
            "bench gateway --peer nginx: no nginx on the PATH (this bench installs nothing; install nginx, \
             e.g. apt-get install nginx-light)",
        )?),
        Some(p) => return Err(format!("bench gateway: --peer {p:?}: the only peer is nginx")),
    };
    let root = a.dir.clone().unwrap_or_else(std::env::temp_dir).join(format!("reo-bench-gw-{}", std::process::id()));
    std::fs::create_dir_all(&root).map_err(|e| format!("cannot create {}: {e}", root.display()))?;
    let r = bench(&root, a, nginx.as_deref());
    let _ = std::fs::remove_dir_all(&root);
    let json = r?;
    if !a.json {
        for k in [
            "get4k_ops",
            "get4k_p99_ms",
            "get4m_mibps",
            "get4m_p99_ms",
            "put64k_ops",
            "put64k_p99_ms",
            "put4m_mibps",
            "list1k_page_ms",
            "list10k_page_ms",
            "raw_read_mibps",
            "get4m_vs_raw",
        ] {
            println!("{k:>16}  {}", json[k]);
        }
    }
    println!("{json}");
    Ok(ExitCode::SUCCESS)
}

fn bench(root: &Path, a: &BenchGatewayArgs, nginx: Option<&Path>) -> Result<serde_json::Value, String> {
    let scale = if a.quick { 1 } else { 4 };
    let (n_small, n_large) = (512, 32);
    let cap = (a.devices as u64 * a.device_mib) << 20;
    if (n_large * LARGE) as u64 * 4 > cap {
        return Err(format!("bench gateway: {n_large} objects of 4 MiB need more than {} MiB of devices", cap >> 20));
    }
    progress(format_args!("writing {n_small} × 4 KiB and {n_large} × 4 MiB objects to the backend"));
    let backend = LocalBackend::open(&root.join("backend")).map_err(|e| e.to_string())?;
    backend.create_bucket(BUCKET).map_err(|e| e.to_string())?;
    let small: Vec<Vec<u8>> = (0..n_small).map(|i| bytes_of(i, SMALL)).collect();
    let large: Vec<Vec<u8>> = (0..n_large).map(|i| bytes_of(100_000 + i, LARGE)).collect();
    // The peer comparison's 64 KiB objects (only with a peer: the other figures stay as they were).
    let middle: Vec<Vec<u8>> =
        (0..if nginx.is_some() { 256 } else { 0 }).map(|i| bytes_of(50_000 + i, MIDDLE)).collect();
    for (name, set) in [("s", &small), ("m", &middle), ("l", &large)] {
        for (i, d) in set.iter().enumerate() {
            let info = ObjectInfo { size: d.len() as u64, etag: reo_gateway::keys::md5_hex(d), ..Default::default() };
            backend.put(BUCKET, &format!("{name}/{i}"), d, &info).map_err(|e| e.to_string())?;
        }
    }
    progress(format_args!("writing the listing buckets: {} and {} empty objects", LISTED[0], LISTED[1]));
    for n in LISTED {
        let bucket = format!("list{n}");
        backend.create_bucket(&bucket).map_err(|e| e.to_string())?;
        let info = ObjectInfo { etag: reo_gateway::keys::md5_hex(b""), ..Default::default() };
        for i in 0..n {
            backend.put(&bucket, &listed_key(i), b"", &info).map_err(|e| e.to_string())?;
        }
    }
    let t = Target {
        host: format!("127.0.0.1:{}", free_port()?),
        access_key: "BENCHACCESSKEY".into(),
        secret_key: "bench-secret-key".into(),
        tls: a.tls_ca.as_deref().map(client::tls_client).transpose()?,
    };
    // Every byte of the device files written once before the server formats them (as `bench
    // store` does): a sparse file's holes read as zeros without touching the disk, which would
    // flatter the raw read.
    let data = root.join("data");
    std::fs::create_dir_all(&data).map_err(|e| format!("cannot create {}: {e}", data.display()))?;
    let (files, _) = raw::open_devices(&data, a.devices, a.device_mib << 20, raw::DirectMode::On)?;
    raw::precondition(&files)?;
    // The metadata head zeroed again, so the server sees blank devices and formats them.
    let zeros = reo_media::AlignedBuf::zeroed(4 << 20);
    for f in &files {
        let mut off = 0;
        while off < meta_bytes(a.device_mib) {
            f.write_at(&zeros, off).map_err(|e| format!("blanking the device files: {e}"))?;
            off += zeros.len() as u64;
        }
        f.sync().map_err(|e| format!("blanking the device files: {e}"))?;
    }
    drop(files);
    let _server = start_server(root, a, &t)?;
    progress(format_args!("reo serve on {} ({} devices of {} MiB, O_DIRECT)", t.host, a.devices, a.device_mib));
    let path = |name: &str, i: usize| format!("/{BUCKET}/{name}/{i}");
    for pass in ["misses (fills)", "hits"] {
        let w = load::run(&t, 1, 1, |c, _, _| {
            for (i, d) in small.iter().enumerate() {
                get_exact(c, &path("s", i), d)?;
            }
            for (i, d) in middle.iter().enumerate() {
                get_exact(c, &path("m", i), d)?;
            }
            for (i, d) in large.iter().enumerate() {
                get_exact(c, &path("l", i), d)?;
            }
            Ok(Some(0))
        })?;
        progress(format_args!("warm-up read of every object, {pass}: {:.2} s", w.secs));
    }
    let pick = |c: usize, i: usize, n: usize| (c * 7919 + i * 104_729) % n;
    let before = CacheCounters::read(&t)?;
    let g4k = load::run(&t, a.clients, 500 * scale, |c, cl, i| {
        let k = pick(cl, i, n_small);
        get_exact(c, &path("s", k), &small[k])
    })?;
    let after = CacheCounters::read(&t)?;
    let g4k_hits = after.all_hits_since(&before, g4k.ops, "GET 4 KiB")?;
    let g4k_memory_hits = after.memory_hits - before.memory_hits;
    progress(format_args!(
        "GET 4 KiB hits: {:.0} ops/s, p50 {:.2} ms, p99 {:.2} ms",
        g4k.ops_per_sec(),
        g4k.p50_ms,
        g4k.p99_ms
    ));
    let raw1 = raw_read(root, a.devices, a.device_mib)?;
    progress(format_args!("raw read of the device files: {raw1:.0} MiB/s"));
    let before = CacheCounters::read(&t)?;
    let g4m = load::run(&t, a.clients, 16 * scale, |c, cl, i| {
        let k = pick(cl, i, n_large);
        get_exact(c, &path("l", k), &large[k])
    })?;
    let after = CacheCounters::read(&t)?;
    let g4m_hits = after.all_hits_since(&before, g4m.ops, "GET 4 MiB")?;
    let g4m_memory_hits = after.memory_hits - before.memory_hits;
    progress(format_args!(
        "GET 4 MiB hits: {:.0} MiB/s, p50 {:.2} ms, p99 {:.2} ms",
        g4m.mib_per_sec(),
        g4m.p50_ms,
        g4m.p99_ms
    ));
    let raw2 = raw_read(root, a.devices, a.device_mib)?;
    progress(format_args!("raw read of the device files: {raw2:.0} MiB/s"));
    let raw = (raw1 + raw2) / 2.0;
    let peer = match nginx {
        Some(exe) => Some(compare_nginx(root, a, exe, &t, _server.0.id(), [&small, &middle, &large])?),
        None => None,
    };
    let body = bytes_of(999, PUT_SIZE);
    let p64 = load::run(&t, a.clients, 100 * scale, |c, cl, i| put(c, &format!("/{BUCKET}/p/{cl}/{i}"), &body))?;
    progress(format_args!(
        "PUT 64 KiB (write-back): {:.0} ops/s, p50 {:.2} ms, p99 {:.2} ms, {} SlowDown",
        p64.ops_per_sec(),
        p64.p50_ms,
        p64.p99_ms,
        p64.slowdowns
    ));
    let big = bytes_of(998, LARGE);
    let p4m = load::run(&t, a.clients, 4 * scale, |c, cl, i| put(c, &format!("/{BUCKET}/P/{cl}/{i}"), &big))?;
    progress(format_args!(
        "PUT 4 MiB (write-back, streamed): {:.0} MiB/s, p50 {:.2} ms, p99 {:.2} ms, {} SlowDown",
        p4m.mib_per_sec(),
        p4m.p50_ms,
        p4m.p99_ms,
        p4m.slowdowns
    ));
    // Small write-back PUTs until they are flushed: every device byte written from the first
    // PUT until nothing is dirty (data, metadata, clean copies, cleaning), over the user bytes
    // acknowledged; the earlier PUTs are flushed first.
    flush_all(&t, FLUSH_WITHIN)?;
    let written_before = device_bytes_written(&t)?;
    let small_body = bytes_of(997, SMALL);
    let wb = load::run(&t, a.clients, 100 * scale, |c, cl, i| put(c, &format!("/{BUCKET}/w/{cl}/{i}"), &small_body))?;
    flush_all(&t, FLUSH_WITHIN)?;
    let wb_per_byte = (device_bytes_written(&t)? - written_before) as f64 / wb.bytes.max(1) as f64;
    // Dirty data on every device (`replicate(N)`), then one clean copy.
    let wb_target = 1.3 * (a.devices + 1) as f64;
    progress(format_args!(
        "PUT 4 KiB (write-back) until flushed: {:.2} device bytes per user byte (target ≤ 1.3 × ({} dirty + 1 clean \
         copies) = {wb_target:.1}), {:.0} ops/s, {} SlowDown",
        wb_per_byte,
        a.devices,
        wb.ops_per_sec(),
        wb.slowdowns
    ));
    let mut list_ms = Vec::new();
    for n in LISTED {
        let bucket = format!("list{n}");
        let l = load::run(&t, 1, 50 * scale, |c, _, i| {
            let at = (i * 7919) % (n - LIST_PAGE);
            load::list_page(c, &bucket, &listed_key(at), LIST_PAGE)
        })?;
        let per_page = l.secs * 1e3 / l.ops as f64;
        progress(format_args!("LIST pages of {LIST_PAGE} in a bucket of {n} keys: {per_page:.2} ms per page"));
        list_ms.push(per_page);
    }
    // Against the devices' raw read only when every 4 MiB hit came from flash.
    let ratio = (g4m_memory_hits == 0).then(|| g4m.mib_per_sec() / raw);
    match ratio {
        Some(r) => progress(format_args!("GET 4 MiB / raw read = {r:.2} (target ≥ 0.8)")),
        None => progress(format_args!(
            "GET 4 MiB / raw read: not measured, {g4m_memory_hits} of {g4m_hits} hits came from the memory tier \
             (--memory 0 serves them from flash)"
        )),
    }
    let r2 = |x: f64| (x * 100.0).round() / 100.0;
    Ok(serde_json::json!({
        "devices": a.devices, "device_mib": a.device_mib, "clients": a.clients, "direct_io": true,
        "tls": a.tls_cert.is_some(),
        "get4k_hits": g4k_hits, "get4k_memory_hits": g4k_memory_hits, "get4m_hits": g4m_hits,
        "get4m_memory_hits": g4m_memory_hits,
        "get4k_ops": r2(g4k.ops_per_sec()), "get4k_p50_ms": r2(g4k.p50_ms), "get4k_p99_ms": r2(g4k.p99_ms),
        "get4m_mibps": r2(g4m.mib_per_sec()), "get4m_p50_ms": r2(g4m.p50_ms), "get4m_p99_ms": r2(g4m.p99_ms),
        "put64k_ops": r2(p64.ops_per_sec()), "put64k_p50_ms": r2(p64.p50_ms), "put64k_p99_ms": r2(p64.p99_ms),
        "put64k_slowdowns": p64.slowdowns,
        "put4m_mibps": r2(p4m.mib_per_sec()), "put4m_p99_ms": r2(p4m.p99_ms), "put4m_slowdowns": p4m.slowdowns,
        "writeback4k_ops": r2(wb.ops_per_sec()), "writeback4k_slowdowns": wb.slowdowns,
        "writeback4k_device_bytes_per_user_byte": r2(wb_per_byte), "writeback4k_target": r2(wb_target),
        "list1k_page_ms": r2(list_ms[0]), "list10k_page_ms": r2(list_ms[1]),
        "raw_read_mibps": r2(raw), "get4m_vs_raw": ratio.map(r2),
        "peer": peer,
    }))
}

/// The comparison with nginx's `proxy_cache` over the same objects (`peer.rs`), the objects
/// written as files of an origin directory at the paths reo serves them under.
fn compare_nginx(
    root: &Path,
    a: &BenchGatewayArgs,
    exe: &Path,
    t: &Target,
    reo_pid: u32,
    [small, middle, large]: [&[Vec<u8>]; 3],
) -> Result<serde_json::Value, String> {
    let origin = root.join("origin");
    for (name, set) in [("s", small), ("m", middle), ("l", large)] {
        let d = origin.join(BUCKET).join(name);
        std::fs::create_dir_all(&d).map_err(|e| format!("{}: {e}", d.display()))?;
        for (i, b) in set.iter().enumerate() {
            std::fs::write(d.join(i.to_string()), b).map_err(|e| format!("{}: {e}", d.display()))?;
        }
    }
    let version = Command::new(exe).arg("-v").output().map_err(|e| format!("{}: {e}", exe.display()))?;
    let version = String::from_utf8_lossy(&version.stderr).trim().trim_start_matches("nginx version: ").to_string();
    let server = nginx::Nginx::start(exe, &root.join("nginx"), &origin, free_port()?, free_port()?)?;
    progress(format_args!("{version} on {} (proxy_cache, 2 workers)", server.host));
    let nt = Target { host: server.host.clone(), tls: None, ..t.clone() };
    // Filled on the first read, a hit from the second on.
    for hit in [false, true] {
        load::run(&nt, 1, 1, |c, _, _| {
            for (name, set) in [("s", small), ("m", middle), ("l", large)] {
                for (i, d) in set.iter().enumerate() {
                    nginx::get_cached(c, &format!("/{BUCKET}/{name}/{i}"), d, hit)?;
                }
            }
            Ok(Some(0))
        })?;
    }
    let floor = floor::Floor::start(&origin, free_port()?)?;
    progress(format_args!(
        "floor server on {} (the origin's files from memory, {} workers)",
        floor.host,
        floor::WORKERS
    ));
    let scale = if a.quick { 1 } else { 4 };
    let sides =
        peer::Sides { reo: t, reo_pid, nginx: &server, floor: &floor, clients: a.peer_clients, rounds: a.rounds };
    let prefix = |name: &str| format!("/{BUCKET}/{name}/");
    let sets = [
        peer::ObjectSet { name: "get4k", prefix: prefix("s"), objects: small, per_client: 500 * scale },
        peer::ObjectSet { name: "get64k", prefix: prefix("m"), objects: middle, per_client: 250 * scale },
        peer::ObjectSet { name: "get4m", prefix: prefix("l"), objects: large, per_client: 4 * scale },
    ];
    let mut out = serde_json::json!({
        "name": "nginx", "version": version, "rounds": a.rounds, "clients": a.peer_clients,
        "note": "nginx proxy_cache (2 workers, sendfile off for 4 MiB objects) over an origin block serving the same files; nginx ignores the requests' SigV4 signatures, reo verifies them; nginx's CPU and switches are its workers'; the floor server answers each request from memory with nothing but its socket I/O (an estimate of the most a server reaches under this load on this machine); *_load_cpu_us is the load generator's CPU per request, *_idle_share and steal_share the machine's idle and stolen time",
    });
    for set in &sets {
        out[set.name] = sides.compare(set)?;
    }
    Ok(out)
}

#[cfg(test)]
mod tests {
    use super::CacheCounters;

    #[test]
    fn a_timed_phase_passes_only_when_every_get_was_one_hit() {
        let before = CacheCounters { requests: 10, hits: 7, memory_hits: 0 };
        let all_hits = CacheCounters { requests: 110, hits: 107, memory_hits: 0 };
        assert_eq!(all_hits.all_hits_since(&before, 100, "GET"), Ok(100));
        let one_miss = CacheCounters { requests: 110, hits: 106, memory_hits: 0 };
        let err = one_miss.all_hits_since(&before, 100, "GET").unwrap_err();
        assert!(err.contains("100 lookups and 99 hits"), "{err}");
        // GETs the server never saw as lookups (served elsewhere) fail too.
        let unseen = CacheCounters { requests: 109, hits: 106, memory_hits: 0 };
        assert!(unseen.all_hits_since(&before, 100, "GET").is_err());
    }
}
