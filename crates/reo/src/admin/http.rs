//! A small blocking HTTP/1.1 client for `reo admin`: one request per connection
//! (`Connection: close`), SigV4-signed, JSON answers.

use std::io::{Read, Write};
use std::net::TcpStream;
use std::time::Duration;

use super::sigv4;

/// Where and as whom to connect.
pub struct Client {
    /// `host:port`
    pub host: String,
    pub access_key: String,
    pub secret_key: String,
}

impl Client {
    /// `endpoint` like `http://127.0.0.1:9000`.
    pub fn new(endpoint: &str, access_key: String, secret_key: String) -> Result<Client, String> {
        let rest = endpoint
            .strip_prefix("http://")
            .ok_or_else(|| format!("--endpoint {endpoint:?}: expected http://HOST:PORT (https is not supported)"))?;
        let host = rest.trim_end_matches('/').to_string();
        if host.is_empty() || host.contains('/') {
            return Err(format!("--endpoint {endpoint:?}: expected http://HOST:PORT"));
        }
        Ok(Client { host, access_key, secret_key })
    }

    /// Sends a signed request; returns the status and the body parsed as JSON.
    pub fn call(
        &self,
        method: &str,
        path: &str,
        query: &[(String, String)],
        body: &[u8],
    ) -> Result<(u16, serde_json::Value), String> {
        let now = std::time::SystemTime::now().duration_since(std::time::UNIX_EPOCH).map_or(0, |d| d.as_secs());
        let date = sigv4::amz_date(now);
        let payload_hash = sigv4::sha256_hex(body);
        // A signed random nonce: the server refuses an admin mutation whose signature it has
        // seen (a replay), and two identical calls within a second would otherwise sign alike.
        let nonce = nonce()?;
        let headers = [("host".to_string(), self.host.clone()), ("x-reo-nonce".to_string(), nonce.clone())];
        let req = sigv4::Request { method, path, query, headers: &headers, payload_hash: &payload_hash };
        let auth = sigv4::authorization(&req, &self.access_key, &self.secret_key, &date);
        let mut target = sigv4::uri_encode(path, true);
        if !query.is_empty() {
            let q: Vec<String> = query
                .iter()
                .map(|(k, v)| format!("{}={}", sigv4::uri_encode(k, false), sigv4::uri_encode(v, false)))
                .collect();
            target = format!("{target}?{}", q.join("&"));
        }
        let head = format!(
            "{method} {target} HTTP/1.1\r\nHost: {}\r\nx-amz-date: {date}\r\nx-amz-content-sha256: {payload_hash}\r\n\
             x-reo-nonce: {nonce}\r\n\
             Authorization: {auth}\r\nContent-Length: {}\r\nContent-Type: application/json\r\nConnection: close\r\n\r\n",
            self.host,
            body.len()
        );
        let mut s = TcpStream::connect(&self.host).map_err(|e| format!("cannot connect to {}: {e}", self.host))?;
        s.set_read_timeout(Some(Duration::from_secs(600))).map_err(|e| e.to_string())?;
        s.write_all(head.as_bytes()).and_then(|_| s.write_all(body)).map_err(|e| format!("sending: {e}"))?;
        let mut raw = Vec::new();
        s.read_to_end(&mut raw).map_err(|e| format!("reading the answer: {e}"))?;
        let (status, body) = parse_response(&raw)?;
        let json = if body.is_empty() {
            serde_json::Value::Null
        } else {
            serde_json::from_slice(&body).unwrap_or_else(|_| {
                // s3s answers auth failures in S3's XML.
                serde_json::json!({ "error": String::from_utf8_lossy(&body).into_owned() })
            })
        };
        Ok((status, json))
    }
}

/// Status and body of a raw HTTP/1.1 response (Content-Length, chunked or until close).
pub fn parse_response(raw: &[u8]) -> Result<(u16, Vec<u8>), String> {
    let end = raw.windows(4).position(|w| w == b"\r\n\r\n").ok_or("malformed HTTP answer (no header end)")?;
    let head = String::from_utf8_lossy(&raw[..end]);
    let mut lines = head.split("\r\n");
    let status: u16 = lines
        .next()
        .and_then(|l| l.split(' ').nth(1))
        .and_then(|c| c.parse().ok())
        .ok_or("malformed HTTP status line")?;
    let chunked = lines.any(|l| {
        let l = l.to_ascii_lowercase();
        l.starts_with("transfer-encoding:") && l.contains("chunked")
    });
    let mut body = &raw[end + 4..];
    if !chunked {
        return Ok((status, body.to_vec()));
    }
    let mut out = Vec::new();
    loop {
        let nl = body.windows(2).position(|w| w == b"\r\n").ok_or("malformed chunked body")?;
        let size_text = String::from_utf8_lossy(&body[..nl]);
        let size = usize::from_str_radix(size_text.split(';').next().unwrap_or("").trim(), 16)
            .map_err(|_| "malformed chunk size")?;
        body = &body[nl + 2..];
        if size == 0 {
            return Ok((status, out));
        }
        if body.len() < size {
            return Err("truncated chunked body".into());
        }
        out.extend_from_slice(&body[..size]);
        body = body.get(size + 2..).unwrap_or_default();
    }
}

/// 16 random bytes, hex.
fn nonce() -> Result<String, String> {
    use std::io::Read as _;
    let mut b = [0u8; 16];
    std::fs::File::open("/dev/urandom")
        .and_then(|mut f| f.read_exact(&mut b))
        .map_err(|e| format!("cannot read /dev/urandom: {e}"))?;
    Ok(reo_gateway::hex::hex(&b))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn responses() {
        let (s, b) = parse_response(b"HTTP/1.1 200 OK\r\nContent-Length: 2\r\n\r\n{}").unwrap();
        assert_eq!((s, b.as_slice()), (200, &b"{}"[..]));
        let (s, b) = parse_response(
            b"HTTP/1.1 403 Forbidden\r\nTransfer-Encoding: chunked\r\n\r\n3\r\nabc\r\n2\r\nde\r\n0\r\n\r\n",
        )
        .unwrap();
        assert_eq!((s, b.as_slice()), (403, &b"abcde"[..]));
        assert!(Client::new("https://x:1", String::new(), String::new()).is_err());
    }
}
