//! The load phases of `reo bench gateway`: a fixed number of requests per client thread, each
//! client on its own keep-alive connection, every request timed; ops/s over the wall time of the
//! phase, latency percentiles over all requests. Every GET body is checked byte for byte.

use std::time::Instant;

use super::client::Conn;

/// The server's address and key pair, and the TLS configuration to reach it with (if any).
#[derive(Clone)]
pub struct Target {
    pub host: String,
    pub access_key: String,
    pub secret_key: String,
    pub tls: Option<std::sync::Arc<rustls::ClientConfig>>,
}

impl Target {
    pub fn connect(&self) -> Result<Conn, String> {
        Conn::connect(&self.host, &self.access_key, &self.secret_key, self.tls.as_ref())
    }
}

/// What a phase measured.
#[derive(Debug, Clone, Copy, Default)]
pub struct PhaseResult {
    pub ops: u64,
    pub secs: f64,
    pub bytes: u64,
    pub p50_ms: f64,
    pub p99_ms: f64,
    /// Requests answered 503 SlowDown (PUTs outrunning the flusher).
    pub slowdowns: u64,
}

impl PhaseResult {
    pub fn ops_per_sec(&self) -> f64 {
        self.ops as f64 / self.secs
    }

    pub fn mib_per_sec(&self) -> f64 {
        self.bytes as f64 / f64::from(1 << 20) / self.secs
    }
}

fn percentile(sorted: &[f64], q: f64) -> f64 {
    if sorted.is_empty() {
        return 0.0;
    }
    sorted[((sorted.len() as f64 * q).ceil() as usize).clamp(1, sorted.len()) - 1]
}

/// Runs `per_client` requests on each of `clients` connections: `op(conn, client, i)` sends one
/// request and returns the bytes it moved, or `None` for a 503 SlowDown.
pub fn run<F>(t: &Target, clients: usize, per_client: usize, op: F) -> Result<PhaseResult, String>
where
    F: Fn(&mut Conn, usize, usize) -> Result<Option<u64>, String> + Sync,
{
    let barrier = std::sync::Barrier::new(clients + 1);
    let (results, secs) = std::thread::scope(|s| {
        let handles: Vec<_> = (0..clients)
            .map(|c| {
                let (op, barrier) = (&op, &barrier);
                s.spawn(move || -> Result<(Vec<f64>, u64, u64), String> {
                    let conn = t.connect();
                    barrier.wait();
                    let mut conn = conn?;
                    let (mut lat, mut bytes, mut slow) = (Vec::with_capacity(per_client), 0, 0);
                    for i in 0..per_client {
                        let t0 = Instant::now();
                        match op(&mut conn, c, i)? {
                            Some(b) => bytes += b,
                            None => slow += 1,
                        }
                        lat.push(t0.elapsed().as_secs_f64() * 1e3);
                    }
                    Ok((lat, bytes, slow))
                })
            })
            .collect();
        barrier.wait();
        let t0 = Instant::now();
        let r: Vec<_> =
            handles.into_iter().map(|h| h.join().unwrap_or_else(|_| Err("a client panicked".into()))).collect();
        (r, t0.elapsed().as_secs_f64())
    });
    let mut all = Vec::new();
    let mut out = PhaseResult { secs, ..Default::default() };
    for r in results {
        let (lat, bytes, slow) = r?;
        out.ops += lat.len() as u64;
        out.bytes += bytes;
        out.slowdowns += slow;
        all.extend(lat);
    }
    all.sort_by(f64::total_cmp);
    out.p50_ms = percentile(&all, 0.50);
    out.p99_ms = percentile(&all, 0.99);
    Ok(out)
}

/// GETs `path` and checks the body against `want`.
pub fn get_exact(conn: &mut Conn, path: &str, want: &[u8]) -> Result<Option<u64>, String> {
    let status = conn.call("GET", path, &[])?;
    if status != 200 {
        return Err(format!("GET {path}: status {status}: {}", String::from_utf8_lossy(&conn.body)));
    }
    if conn.body != want {
        return Err(format!("GET {path}: {} bytes that differ from the object's {}", conn.body.len(), want.len()));
    }
    Ok(Some(want.len() as u64))
}

/// PUTs `data` to `path`; `None` for 503 SlowDown.
pub fn put(conn: &mut Conn, path: &str, data: &[u8]) -> Result<Option<u64>, String> {
    match conn.call("PUT", path, data)? {
        200 => Ok(Some(data.len() as u64)),
        503 => Ok(None),
        s => Err(format!("PUT {path}: status {s}: {}", String::from_utf8_lossy(&conn.body))),
    }
}

/// A ListObjectsV2 page of `bucket` after `start_after`; checks that it holds `max_keys` keys.
pub fn list_page(conn: &mut Conn, bucket: &str, start_after: &str, max_keys: usize) -> Result<Option<u64>, String> {
    let q = [
        ("list-type".to_string(), "2".to_string()),
        ("max-keys".to_string(), max_keys.to_string()),
        ("start-after".to_string(), start_after.to_string()),
    ];
    let status = conn.call_query("GET", &format!("/{bucket}"), &q, &[])?;
    let body = String::from_utf8_lossy(&conn.body);
    if status != 200 {
        return Err(format!("LIST {bucket}: status {status}: {body}"));
    }
    let n = body.matches("<Key>").count();
    if n != max_keys {
        return Err(format!("LIST {bucket} after {start_after:?}: {n} keys, not {max_keys}"));
    }
    Ok(Some(conn.body.len() as u64))
}
