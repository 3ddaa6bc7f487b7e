//! The floor of `reo bench gateway --peer nginx`: a minimal HTTP server, measured in the same
//! rounds as reo and nginx, whose rate estimates the most a server reaches under the
//! comparison's load on this machine.
//!
//! A child process (`reo bench http-floor`, hidden) holds every file of the origin directory in
//! memory as one complete response (status line, `Content-Length`, body) and answers each
//! request with the response of its path, on a tokio runtime of as many workers as nginx has.
//! No signature, no lookup beyond one hash map, no header parsing beyond the request line; its
//! socket reads and writes go through tokio's `AsyncRead` and `AsyncWrite`, as hyper's do (a
//! short read or write clears the socket's readiness without a further system call). A server
//! that answers a hit does this work too (its socket reads and writes and the loopback's work
//! behind them), while the load generator, which shares this machine's two cores, spends its
//! own time on every request. The floor's rate is an estimate of the ceiling, not a proof (a
//! server could use other system calls, `sendfile` or another threading), but a target stated
//! as a multiple of nginx's rate above floor / nginx asks a server to do less than this one.

use std::collections::HashMap;
use std::path::{Path, PathBuf};
use std::pin::Pin;
use std::process::{Child, Command, ExitCode, Stdio};
use std::sync::Arc;
use std::time::{Duration, Instant};

use tokio::io::{AsyncRead, AsyncWrite, ReadBuf};

/// Worker threads of the floor server: as many as nginx's worker processes.
pub const WORKERS: usize = super::nginx::WORKERS;

/// The longest request head the floor server reads (the bench's are under 1 KiB).
const MAX_HEAD: usize = 16 << 10;

const NOT_FOUND: &[u8] = b"HTTP/1.1 404 Not Found\r\nContent-Length: 0\r\n\r\n";

#[derive(clap::Args, Debug)]
pub struct FloorArgs {
    /// Directory whose files are served, each at its path under it.
    #[arg(long)]
    pub origin: PathBuf,
    /// Loopback port to listen on.
    #[arg(long)]
    pub port: u16,
}

/// The floor server under comparison; killed when dropped.
pub struct Floor {
    child: Child,
    /// `127.0.0.1:PORT` it answers on.
    pub host: String,
}

impl Drop for Floor {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

impl Floor {
    /// Starts the floor server over the files of `origin` on `port`.
    pub fn start(origin: &Path, port: u16) -> Result<Floor, String> {
        let exe = std::env::current_exe().map_err(|e| format!("this program's path: {e}"))?;
        let child = Command::new(exe)
            .args(["bench", "http-floor", "--port", &port.to_string(), "--origin"])
            .arg(origin)
            .stdin(Stdio::null())
            .stdout(Stdio::null())
            .spawn()
            .map_err(|e| format!("cannot start the floor server: {e}"))?;
        let mut f = Floor { child, host: format!("127.0.0.1:{port}") };
        let t0 = Instant::now();
        loop {
            if let Ok(Some(st)) = f.child.try_wait() {
                return Err(format!("the floor server exited ({st}) before answering"));
            }
            if std::net::TcpStream::connect(&f.host).is_ok() {
                return Ok(f);
            }
            if t0.elapsed() > Duration::from_secs(20) {
                return Err("the floor server did not answer within 20 s".into());
            }
            // Polling a starting process: there is no event to wait on across processes.
            std::thread::sleep(Duration::from_millis(20));
        }
    }

    /// Its process id (for its CPU time and context switches).
    pub fn pid(&self) -> u32 {
        self.child.id()
    }
}

/// `reo bench http-floor`: serves the files of `--origin` until killed.
pub fn run(a: &FloorArgs) -> Result<ExitCode, String> {
    let table = Arc::new(responses(&a.origin)?);
    let rt = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(WORKERS)
        .enable_io()
        .build()
        .map_err(|e| format!("floor server runtime: {e}"))?;
    rt.block_on(async move {
        let l = tokio::net::TcpListener::bind(("127.0.0.1", a.port))
            .await
            .map_err(|e| format!("floor server: 127.0.0.1:{}: {e}", a.port))?;
        loop {
            let (s, _) = l.accept().await.map_err(|e| format!("floor server: accept: {e}"))?;
            let _ = s.set_nodelay(true);
            let table = table.clone();
            tokio::spawn(async move {
                // A connection the client drops ends here; the bench sees its own error.
                let _ = connection(s, &table).await;
            });
        }
    })
}

/// Every file under `origin` as its complete response, by request path (`/a/b` for `a/b`).
fn responses(origin: &Path) -> Result<HashMap<Vec<u8>, Vec<u8>>, String> {
    let mut out = HashMap::new();
    let mut dirs = vec![origin.to_path_buf()];
    while let Some(d) = dirs.pop() {
        for e in std::fs::read_dir(&d).map_err(|e| format!("{}: {e}", d.display()))? {
            let p = e.map_err(|e| format!("{}: {e}", d.display()))?.path();
            if p.is_dir() {
                dirs.push(p);
                continue;
            }
            let body = std::fs::read(&p).map_err(|e| format!("{}: {e}", p.display()))?;
            let rel = p.strip_prefix(origin).map_err(|e| e.to_string())?.to_string_lossy().into_owned();
            let mut r = format!("HTTP/1.1 200 OK\r\nContent-Length: {}\r\n\r\n", body.len()).into_bytes();
            r.extend_from_slice(&body);
            out.insert(format!("/{rel}").into_bytes(), r);
        }
    }
    Ok(out)
}

/// The path of a request head's request line (`GET /path HTTP/1.1`).
fn request_path(head: &[u8]) -> Option<&[u8]> {
    let line = head.split(|&b| b == b'\r').next()?;
    let mut parts = line.split(|&b| b == b' ');
    let (_method, path) = (parts.next()?, parts.next()?);
    Some(path)
}

/// Where the head that starts `buf` ends (past its blank line), if `buf` holds all of it.
fn head_end(buf: &[u8]) -> Option<usize> {
    buf.windows(4).position(|w| w == b"\r\n\r\n").map(|i| i + 4)
}

/// Reads what the socket holds into `buf` (at least one byte; 0 at the end of the stream).
async fn read_some(s: &mut tokio::net::TcpStream, buf: &mut [u8]) -> std::io::Result<usize> {
    std::future::poll_fn(|cx| {
        let mut rb = ReadBuf::new(buf);
        Pin::new(&mut *s).poll_read(cx, &mut rb).map_ok(|()| rb.filled().len())
    })
    .await
}

/// Writes all of `data`.
async fn write_all(s: &mut tokio::net::TcpStream, mut data: &[u8]) -> std::io::Result<()> {
    while !data.is_empty() {
        let n = std::future::poll_fn(|cx| Pin::new(&mut *s).poll_write(cx, data)).await?;
        if n == 0 {
            return Err(std::io::ErrorKind::WriteZero.into());
        }
        data = &data[n..];
    }
    Ok(())
}

/// Answers the requests of one keep-alive connection (GETs without bodies, as the bench sends;
/// pipelined requests are answered in turn).
async fn connection(mut s: tokio::net::TcpStream, table: &HashMap<Vec<u8>, Vec<u8>>) -> std::io::Result<()> {
    let mut buf = vec![0u8; MAX_HEAD];
    let mut filled = 0;
    loop {
        let end = loop {
            if let Some(end) = head_end(&buf[..filled]) {
                break end;
            }
            if filled == buf.len() {
                return Err(std::io::Error::other("request head too long"));
            }
            match read_some(&mut s, &mut buf[filled..]).await? {
                0 => return Ok(()),
                n => filled += n,
            }
        };
        let answer = request_path(&buf[..end]).and_then(|p| table.get(p)).map_or(NOT_FOUND, |r| r.as_slice());
        write_all(&mut s, answer).await?;
        buf.copy_within(end..filled, 0);
        filled -= end;
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn finds_the_path_and_the_end_of_a_head() {
        let head = b"GET /b/s/7 HTTP/1.1\r\nHost: x\r\n\r\nGET /next";
        assert_eq!(request_path(head), Some(&b"/b/s/7"[..]));
        assert_eq!(head_end(head), Some(head.len() - 9));
        assert_eq!(head_end(b"GET / HTTP/1.1\r\nHost: x\r\n"), None);
    }

    #[test]
    fn serves_each_file_at_its_path_and_nothing_else() {
        let dir = tempfile::tempdir().unwrap();
        std::fs::create_dir_all(dir.path().join("b/s")).unwrap();
        std::fs::write(dir.path().join("b/s/0"), b"hello").unwrap();
        let t = responses(dir.path()).unwrap();
        assert_eq!(t.len(), 1);
        assert_eq!(t[&b"/b/s/0"[..]], b"HTTP/1.1 200 OK\r\nContent-Length: 5\r\n\r\nhello");
    }
}
