//! `reo admin`'s client of the gateway's API: requests signed by [`super::sign`], sent with
//! reqwest (http or https) on a current-thread runtime, answers parsed into the types the server
//! builds them from (`reo_gateway::api::admin_types`). What goes wrong is said in terms of what
//! to do about it ([`super::refusal`]).

use std::time::Duration;

use http::header::{HeaderName, HeaderValue, CONTENT_TYPE};
use serde::de::DeserializeOwned;

use super::refusal;
use super::sign::{self, Keys, Payload};

/// Longest wait for an answer: a scrub answers when it has read every chunk.
const CALL_TIMEOUT: Duration = Duration::from_secs(3600);

/// A signed client of one server.
pub struct Client {
    /// `http[s]://HOST:PORT`, without a trailing `/`.
    endpoint: String,
    keys: Keys,
    http: reqwest::Client,
    rt: tokio::runtime::Runtime,
}

/// A raw answer.
pub struct Answer {
    /// The HTTP status.
    pub status: u16,
    /// The `Date` header, if any (a clock-skew refusal quotes it).
    pub date: Option<String>,
    /// The body.
    pub body: Vec<u8>,
}

impl Client {
    /// A client of `endpoint` (`http://HOST:PORT` or `https://HOST:PORT`; https verified
    /// against the system's roots, plus the PEM certificates of `ca` if given).
    pub fn new(endpoint: &str, keys: Keys, ca: Option<&std::path::Path>) -> Result<Client, String> {
        let url = reqwest::Url::parse(endpoint)
            .map_err(|e| format!("--endpoint {endpoint:?}: {e}; expected http://HOST:PORT or https://HOST:PORT"))?;
        if !matches!(url.scheme(), "http" | "https")
            || url.host_str().is_none()
            || !url.path().trim_matches('/').is_empty()
        {
            return Err(format!("--endpoint {endpoint:?}: expected http://HOST:PORT or https://HOST:PORT"));
        }
        let mut b = reqwest::Client::builder().connect_timeout(Duration::from_secs(10)).timeout(CALL_TIMEOUT);
        if let Some(ca) = ca {
            let pem = std::fs::read(ca).map_err(|e| format!("--tls-ca {}: {e}", ca.display()))?;
            let certs =
                reqwest::Certificate::from_pem_bundle(&pem).map_err(|e| format!("--tls-ca {}: {e}", ca.display()))?;
            b = b.tls_certs_merge(certs);
        }
        let http = b.build().map_err(|e| format!("the HTTP client: {e}"))?;
        let rt = tokio::runtime::Builder::new_current_thread()
            .enable_all()
            .build()
            .map_err(|e| format!("the HTTP client's runtime: {e}"))?;
        Ok(Client { endpoint: endpoint.trim_end_matches('/').to_string(), keys, http, rt })
    }

    /// Sends one signed request (`path` and `query` unencoded) and returns the answer, whatever
    /// its status; an unreachable server is an error saying so.
    pub fn send(&self, method: &str, path: &str, query: &[(&str, String)], body: &[u8]) -> Result<Answer, String> {
        let url = sign::url(&self.endpoint, path, query);
        // A signed random nonce: the server refuses an admin mutation whose signature it has
        // seen (a replay), and two identical calls within a second would otherwise sign alike.
        let extra = [
            (HeaderName::from_static("x-reo-nonce"), HeaderValue::try_from(nonce()?).map_err(|e| e.to_string())?),
            (CONTENT_TYPE, HeaderValue::from_static("application/json")),
        ];
        let headers = sign::sign(&self.keys, method, &url, &extra, body, Payload::Signed)?;
        let method = reqwest::Method::from_bytes(method.as_bytes()).map_err(|e| format!("{method}: {e}"))?;
        let req = self.http.request(method, &url).headers(headers).body(body.to_vec());
        self.rt.block_on(async {
            let resp = req.send().await.map_err(|e| refusal::unreachable(&self.endpoint, &e))?;
            let status = resp.status().as_u16();
            let date = resp.headers().get(http::header::DATE).and_then(|d| d.to_str().ok()).map(str::to_string);
            let body = resp.bytes().await.map_err(|e| format!("reading the answer of {}: {e}", self.endpoint))?;
            Ok(Answer { status, date, body: body.to_vec() })
        })
    }

    /// A signed call whose 2xx answer is a `T`; any other answer is an error naming what to do.
    pub fn call<T: DeserializeOwned>(
        &self,
        method: &str,
        path: &str,
        query: &[(&str, String)],
        body: &[u8],
    ) -> Result<T, String> {
        let a = self.send(method, path, query, body)?;
        if !(200..300).contains(&a.status) {
            let what = format!("{method} {path}");
            return Err(refusal::explain(
                &self.endpoint,
                &self.keys.access,
                &what,
                a.status,
                a.date.as_deref(),
                &a.body,
            ));
        }
        serde_json::from_slice(&a.body).map_err(|e| {
            format!("{method} {path}: unexpected answer ({e}): {}", String::from_utf8_lossy(&a.body).trim())
        })
    }
}

/// 16 random bytes, hex.
pub(crate) fn nonce() -> Result<String, String> {
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

    /// Nothing listens on the port: the message says so and asks whether the server runs.
    #[test]
    fn a_wrong_endpoint_is_said_unreachable() {
        let port = std::net::TcpListener::bind("127.0.0.1:0").unwrap().local_addr().unwrap().port();
        let endpoint = format!("http://127.0.0.1:{port}");
        let c = Client::new(&endpoint, Keys { access: "AK".into(), secret: "SK".into() }, None).unwrap();
        let e = c.send("GET", "/_reo/admin/status", &[], b"").err().unwrap();
        assert_eq!(e, format!("cannot reach {endpoint}: connection refused; is `reo serve` running there?"));
    }

    #[test]
    fn endpoints_are_http_or_https_without_a_path() {
        let keys = Keys { access: "AK".into(), secret: "SK".into() };
        assert!(Client::new("https://h:1", keys.clone(), None).is_ok());
        for bad in ["ftp://h:1", "h:1", "http://h:1/x"] {
            assert!(Client::new(bad, keys.clone(), None).is_err(), "{bad}");
        }
    }
}
