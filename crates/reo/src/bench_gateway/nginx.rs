//! `reo bench gateway --peer nginx`: nginx with `proxy_cache` in front of the same objects, the
//! deployment users compare a caching gateway with. Nothing is installed: `nginx` must be on the
//! PATH.
//!
//! One nginx (2 workers, as many as this machine's cores; `daemon off`) runs two server blocks:
//! the *origin*, serving the objects as plain files from a directory (the same bytes the reo
//! backend holds, at the same paths), and the *cache*, a `proxy_cache` over the origin that
//! marks every answer with `X-Cache-Status: $upstream_cache_status`, so the load checks that
//! every timed request was a HIT. Large objects are served with `sendfile off`: on loopback,
//! sendfile moves nginx's copy into the client's receive path, where the load generator would
//! pay for it, and reo has no such path; small ones keep nginx's default (`sendfile on`).

use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

use super::client::Conn;

/// The nginx under comparison; stopped (SIGQUIT: graceful, then waited for) when dropped.
pub struct Nginx {
    child: Child,
    /// `127.0.0.1:PORT` of the caching server block.
    pub host: String,
    workers: Vec<u32>,
}

impl Drop for Nginx {
    fn drop(&mut self) {
        // SAFETY: kill(2) on our own child's pid; no memory is involved.
        unsafe { libc::kill(self.child.id() as i32, libc::SIGQUIT) };
        let _ = self.child.wait();
    }
}

/// The `nginx` executable on the PATH, if any.
pub fn find() -> Option<PathBuf> {
    std::env::split_paths(&std::env::var_os("PATH")?).map(|d| d.join("nginx")).find(|p| p.is_file())
}

impl Nginx {
    /// Starts nginx under `dir` (config, cache, logs) serving the files of `origin` through a
    /// `proxy_cache` on `port` (the origin block on `origin_port`).
    pub fn start(exe: &Path, dir: &Path, origin: &Path, port: u16, origin_port: u16) -> Result<Nginx, String> {
        std::fs::create_dir_all(dir.join("cache")).map_err(|e| format!("{}: {e}", dir.display()))?;
        let conf = dir.join("nginx.conf");
        std::fs::write(&conf, config(dir, origin, port, origin_port))
            .map_err(|e| format!("{}: {e}", conf.display()))?;
        let log = std::fs::File::create(dir.join("stderr.log")).map_err(|e| e.to_string())?;
        let child = Command::new(exe)
            .arg("-p")
            .arg(dir)
            .arg("-c")
            .arg(&conf)
            .stdin(Stdio::null())
            .stdout(log.try_clone().map_err(|e| e.to_string())?)
            .stderr(log)
            .spawn()
            .map_err(|e| format!("cannot start {}: {e}", exe.display()))?;
        let mut n = Nginx { child, host: format!("127.0.0.1:{port}"), workers: Vec::new() };
        let t0 = Instant::now();
        loop {
            if let Ok(Some(st)) = n.child.try_wait() {
                let log = std::fs::read_to_string(dir.join("stderr.log")).unwrap_or_default();
                let err = std::fs::read_to_string(dir.join("error.log")).unwrap_or_default();
                return Err(format!("nginx exited ({st}) before answering:\n{log}{err}"));
            }
            if std::net::TcpStream::connect(&n.host).is_ok() {
                n.workers = super::usage::children(n.child.id(), "nginx: worker process");
                if n.workers.len() == WORKERS {
                    return Ok(n);
                }
            }
            if t0.elapsed() > Duration::from_secs(20) {
                return Err("nginx did not start its workers within 20 s".into());
            }
            // Polling a starting process: there is no event to wait on across processes.
            std::thread::sleep(Duration::from_millis(20));
        }
    }

    /// The processes whose CPU and switches count as nginx's: its workers, which serve every
    /// request (the master only manages them).
    pub fn pids(&self) -> Vec<u32> {
        self.workers.clone()
    }
}

/// Worker processes: this machine's two cores.
pub(super) const WORKERS: usize = 2;

fn config(dir: &Path, origin: &Path, port: u16, origin_port: u16) -> String {
    let d = dir.display();
    // SAFETY: geteuid has no preconditions.
    let root = unsafe { libc::geteuid() } == 0;
    // As root, nginx hands its workers to `nobody`, who cannot read a private temporary directory.
    let user = if root { "user root;" } else { "" };
    let proxy = String::from(
        "proxy_pass http://origin;
            proxy_http_version 1.1;
            proxy_set_header Connection \"\";
            proxy_cache reo;
            proxy_cache_key $uri;
            proxy_cache_valid 200 1h;
            proxy_ignore_headers Cache-Control Expires Set-Cookie;
            add_header X-Cache-Status $upstream_cache_status always;",
    );
    format!(
        "{user}
worker_processes {WORKERS};
daemon off;
pid {d}/nginx.pid;
error_log {d}/error.log warn;
events {{ worker_connections 4096; }}
http {{
    access_log off;
    default_type application/octet-stream;
    keepalive_requests 1000000;
    keepalive_timeout 300s;
    client_body_temp_path {d}/client_body;
    proxy_temp_path {d}/proxy_temp;
    fastcgi_temp_path {d}/fastcgi_temp;
    uwsgi_temp_path {d}/uwsgi_temp;
    scgi_temp_path {d}/scgi_temp;
    proxy_cache_path {d}/cache levels=1:2 keys_zone=reo:64m max_size=8g inactive=1d use_temp_path=off;
    upstream origin {{ server 127.0.0.1:{origin_port}; keepalive 16; }}
    server {{
        listen 127.0.0.1:{origin_port};
        root {origin};
    }}
    server {{
        listen 127.0.0.1:{port};
        location / {{
            {proxy}
        }}
        location /bench/l/ {{
            sendfile off;
            {proxy}
        }}
    }}
}}
",
        origin = origin.display(),
    )
}

/// GETs `path` from nginx and checks the body against `want` and that nginx answered it from
/// its cache (`X-Cache-Status: HIT`) when `hit` is asked for.
pub fn get_cached(conn: &mut Conn, path: &str, want: &[u8], hit: bool) -> Result<Option<u64>, String> {
    let status = conn.call("GET", path, &[])?;
    if status != 200 {
        return Err(format!("nginx GET {path}: status {status}: {}", String::from_utf8_lossy(&conn.body)));
    }
    if conn.body != want {
        return Err(format!(
            "nginx GET {path}: {} bytes that differ from the object's {}",
            conn.body.len(),
            want.len()
        ));
    }
    if hit && conn.cache_status.as_deref() != Some("HIT") {
        return Err(format!(
            "nginx GET {path}: X-Cache-Status {:?}, not HIT: a timed request was not served from nginx's cache",
            conn.cache_status
        ));
    }
    Ok(Some(want.len() as u64))
}
