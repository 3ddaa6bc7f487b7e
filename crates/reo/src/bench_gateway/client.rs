//! The load generator's HTTP/1.1 client: one keep-alive connection per client thread (plain TCP,
//! or TLS with rustls verifying the server against a given CA), every request SigV4-signed by
//! `reo admin`'s signer (S3 requests with payload `UNSIGNED-PAYLOAD`, which s3s accepts, so a PUT
//! does not hash its body on the client; `/_reo/` requests with the body's hash, as the server
//! requires), responses read by `Content-Length` (or chunked) into a reused buffer.

use std::io::{BufRead, BufReader, Read, Write};
use std::net::TcpStream;
use std::sync::Arc;
use std::time::Duration;

use crate::admin::sign::{self, Keys, Payload};

/// Bodies of at least this many bytes are sent after the server's `100 Continue`.
const EXPECT_CONTINUE_FROM: usize = 1 << 20;

/// A connection's byte stream: TCP, or TLS over TCP.
trait Io: Read + Write + Send {}
impl<T: Read + Write + Send> Io for T {}

/// One connection to the server under test.
pub struct Conn {
    io: BufReader<Box<dyn Io>>,
    host: String,
    keys: Keys,
    tls: Option<Arc<rustls::ClientConfig>>,
    /// The server will close the connection (it answered before the body was sent, or said
    /// `Connection: close`): the next request goes on a new one.
    spent: bool,
    /// The last response's body.
    pub body: Vec<u8>,
    /// The last response's `X-Cache-Status` (a proxy cache's hit or miss, e.g. nginx's
    /// `$upstream_cache_status`), if it had one.
    pub cache_status: Option<String>,
}

/// A TLS client configuration that trusts the certificates of the PEM file `ca` (and nothing
/// else), with the provider the server uses.
pub fn tls_client(ca: &std::path::Path) -> Result<Arc<rustls::ClientConfig>, String> {
    use rustls::pki_types::pem::PemObject;
    use rustls::pki_types::CertificateDer;
    let mut roots = rustls::RootCertStore::empty();
    for c in CertificateDer::pem_file_iter(ca).map_err(|e| format!("--tls-ca {}: {e}", ca.display()))? {
        roots.add(c.map_err(|e| format!("--tls-ca {}: {e}", ca.display()))?).map_err(|e| format!("--tls-ca: {e}"))?;
    }
    let provider = Arc::new(rustls::crypto::aws_lc_rs::default_provider());
    let cfg = rustls::ClientConfig::builder_with_provider(provider)
        .with_safe_default_protocol_versions()
        .map_err(|e| format!("TLS: {e}"))?
        .with_root_certificates(roots)
        .with_no_client_auth();
    Ok(Arc::new(cfg))
}

impl Conn {
    /// Connects to `host` (over TLS with `tls`, the server named by its IP address).
    pub fn connect(
        host: &str,
        access_key: &str,
        secret_key: &str,
        tls: Option<&Arc<rustls::ClientConfig>>,
    ) -> Result<Conn, String> {
        let s = TcpStream::connect(host).map_err(|e| format!("cannot connect to {host}: {e}"))?;
        s.set_nodelay(true).map_err(|e| e.to_string())?;
        s.set_read_timeout(Some(Duration::from_secs(120))).map_err(|e| e.to_string())?;
        let io: Box<dyn Io> = match tls {
            None => Box::new(s),
            Some(cfg) => {
                let ip = host.rsplit_once(':').map_or(host, |(h, _)| h);
                let name = rustls::pki_types::ServerName::try_from(ip.to_string())
                    .map_err(|e| format!("TLS server name {ip:?}: {e}"))?;
                let conn = rustls::ClientConnection::new(cfg.clone(), name).map_err(|e| format!("TLS: {e}"))?;
                Box::new(rustls::StreamOwned::new(conn, s))
            }
        };
        Ok(Conn {
            io: BufReader::with_capacity(256 << 10, io),
            host: host.into(),
            keys: Keys { access: access_key.into(), secret: secret_key.into() },
            tls: tls.cloned(),
            spent: false,
            body: Vec::new(),
            cache_status: None,
        })
    }

    /// Sends a signed request (`path` unencoded, no query) and reads the answer; returns the
    /// status (the body is in [`Conn::body`]).
    pub fn call(&mut self, method: &str, path: &str, body: &[u8]) -> Result<u16, String> {
        self.call_query(method, path, &[], body)
    }

    /// [`Conn::call`] with query parameters (unencoded).
    pub fn call_query(
        &mut self,
        method: &str,
        path: &str,
        query: &[(String, String)],
        body: &[u8],
    ) -> Result<u16, String> {
        if self.spent {
            *self = Conn::connect(&self.host, &self.keys.access, &self.keys.secret, self.tls.as_ref())?;
        }
        let query: Vec<(&str, String)> = query.iter().map(|(k, v)| (k.as_str(), v.clone())).collect();
        // Signed for http://HOST: the scheme is not part of a signature, the host is.
        let url = sign::url(&format!("http://{}", self.host), path, &query);
        // The server's own API (`/_reo/...`) takes only signed payloads; S3 requests go unsigned
        // so that a PUT does not hash its body on the client's clock.
        let payload = if path.starts_with("/_reo/") { Payload::Signed } else { Payload::Unsigned };
        // An admin mutation carries a signed nonce: the server refuses a signature it has seen
        // (two flush requests within the same second would sign alike).
        let nonce = match (method, payload) {
            ("GET" | "HEAD", _) | (_, Payload::Unsigned) => Vec::new(),
            _ => vec![(
                http::HeaderName::from_static("x-reo-nonce"),
                http::HeaderValue::try_from(crate::admin::client::nonce()?).map_err(|e| e.to_string())?,
            )],
        };
        let headers = sign::sign(&self.keys, method, &url, &nonce, body, payload)?;
        let target = &url[url.find(&self.host).map_or(0, |i| i + self.host.len())..];
        let mut head =
            format!("{method} {target} HTTP/1.1\r\nHost: {}\r\nContent-Length: {}\r\n", self.host, body.len());
        for (k, v) in &headers {
            head.push_str(&format!("{k}: {}\r\n", v.to_str().map_err(|e| e.to_string())?));
        }
        // A large body waits for the server's go-ahead, as S3 clients do: a server refusing
        // it (503 SlowDown, 413) answers at once, instead of closing on a body it will not read.
        let expect = body.len() >= EXPECT_CONTINUE_FROM;
        if expect {
            head.push_str("Expect: 100-continue\r\n");
        }
        head.push_str("\r\n");
        let w = self.io.get_mut();
        w.write_all(head.as_bytes()).and_then(|_| w.flush()).map_err(|e| format!("sending: {e}"))?;
        if expect {
            let first = self.line()?;
            if first.split(' ').nth(1) != Some("100") {
                self.spent = true;
                return self.read_response(Some(first));
            }
            while !self.line()?.is_empty() {}
        }
        let w = self.io.get_mut();
        w.write_all(body).and_then(|_| w.flush()).map_err(|e| format!("sending: {e}"))?;
        self.read_response(None)
    }

    fn line(&mut self) -> Result<String, String> {
        let mut l = String::new();
        match self.io.read_line(&mut l) {
            Ok(0) => Err("the server closed the connection".into()),
            Ok(_) => Ok(l.trim_end().to_string()),
            Err(e) => Err(format!("reading the answer: {e}")),
        }
    }

    /// Reads a response whose status line is `first` if already read.
    fn read_response(&mut self, first: Option<String>) -> Result<u16, String> {
        let status_line = match first {
            Some(l) => l,
            None => self.line()?,
        };
        let status: u16 = status_line
            .split(' ')
            .nth(1)
            .and_then(|c| c.parse().ok())
            .ok_or_else(|| format!("malformed status line {status_line:?}"))?;
        let (mut len, mut chunked) = (None, false);
        self.cache_status = None;
        loop {
            let l = self.line()?;
            if l.is_empty() {
                break;
            }
            let lower = l.to_ascii_lowercase();
            if let Some(v) = lower.strip_prefix("content-length:") {
                len = v.trim().parse::<usize>().ok();
            } else if lower.starts_with("transfer-encoding:") && lower.contains("chunked") {
                chunked = true;
            } else if let Some(v) = lower.strip_prefix("x-cache-status:") {
                self.cache_status = Some(v.trim().to_ascii_uppercase());
            } else if lower.strip_prefix("connection:").is_some_and(|v| v.trim() == "close") {
                // The server's last answer on this connection (its per-connection request
                // limit): the next request opens another.
                self.spent = true;
            }
        }
        self.body.clear();
        if chunked {
            loop {
                let size = self.line()?;
                let n = usize::from_str_radix(size.split(';').next().unwrap_or("").trim(), 16)
                    .map_err(|_| format!("malformed chunk size {size:?}"))?;
                self.read_exact_append(n)?;
                self.line()?; // the CRLF after the chunk (or the trailer's end)
                if n == 0 {
                    break;
                }
            }
        } else {
            self.read_exact_append(len.unwrap_or(0))?;
        }
        Ok(status)
    }

    fn read_exact_append(&mut self, n: usize) -> Result<(), String> {
        let at = self.body.len();
        self.body.resize(at + n, 0);
        self.io.read_exact(&mut self.body[at..]).map_err(|e| format!("reading the body: {e}"))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::net::TcpListener;

    /// A server that answers one request per connection, each with `Connection: close`, then
    /// closes it: the client must open a new connection for every request.
    #[test]
    fn a_connection_the_server_closes_is_not_reused() {
        let l = TcpListener::bind("127.0.0.1:0").unwrap();
        let host = l.local_addr().unwrap().to_string();
        let server = std::thread::spawn(move || {
            for _ in 0..3 {
                let (s, _) = l.accept().unwrap();
                let mut r = BufReader::new(s.try_clone().unwrap());
                let mut line = String::new();
                while r.read_line(&mut line).unwrap() > 0 && line != "\r\n" {
                    line.clear();
                }
                let mut w = s;
                w.write_all(b"HTTP/1.1 200 OK\r\nContent-Length: 2\r\nConnection: close\r\n\r\nok").unwrap();
            }
        });
        let mut c = Conn::connect(&host, "AK", "secret", None).unwrap();
        for _ in 0..3 {
            assert_eq!(c.call("GET", "/b/k", &[]), Ok(200));
            assert_eq!(c.body, b"ok");
        }
        server.join().unwrap();
    }
}
