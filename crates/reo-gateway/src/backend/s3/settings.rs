//! [`S3Settings`]: where the S3 backend is and how to reach it — endpoint (none: AWS), region,
//! path-style or virtual-hosted addressing, credentials (configured, else the standard
//! `AWS_ACCESS_KEY_ID` / `AWS_SECRET_ACCESS_KEY` / `AWS_SESSION_TOKEN` environment variables),
//! whether plain `http://` is allowed, and the deadlines of its calls ([`Deadlines`]). Parsed from `--backend s3://…` and the `[backend]` section
//! of `reo.toml`, validated at start-up with messages naming the bad field (`backend.endpoint: …`).

/// Why the S3 backend's settings are refused; the message names the bad field or option.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum SettingsError {
    /// A `--backend` value that is not an S3 URL.
    #[error("--backend: {0}")]
    Url(String),
    /// A field of the `[backend]` settings (`backend.FIELD`, or several).
    #[error("{field}: {reason}")]
    Field {
        /// The field (`backend.FIELD`) or fields at fault.
        field: &'static str,
        /// What is wrong with it.
        reason: String,
    },
    /// Neither configured nor in the environment.
    #[error(
        "backend.access_key_id: the S3 backend has no credentials; set backend.access_key_id and \
         backend.secret_access_key, or AWS_ACCESS_KEY_ID and AWS_SECRET_ACCESS_KEY"
    )]
    NoCredentials,
}

impl SettingsError {
    fn field(field: &'static str, reason: impl Into<String>) -> SettingsError {
        SettingsError::Field { field, reason: reason.into() }
    }
}

/// The S3 backend's settings.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct S3Settings {
    /// `http(s)://host[:port]` of an S3-compatible service; `None`: AWS S3 in `region`.
    pub endpoint: Option<String>,
    /// Signing region; `None`: `AWS_REGION`, else `AWS_DEFAULT_REGION`, else `us-east-1`.
    pub region: Option<String>,
    /// Virtual-hosted addressing (`bucket.host/key`) instead of path style (`host/bucket/key`).
    pub virtual_hosted: bool,
    /// Access key id, given with `secret_access_key`; `None`: the key pair (and session token)
    /// come from `AWS_ACCESS_KEY_ID`, `AWS_SECRET_ACCESS_KEY` and `AWS_SESSION_TOKEN`.
    pub access_key_id: Option<String>,
    /// Secret access key, given with `access_key_id`.
    pub secret_access_key: Option<String>,
    /// Session token of temporary credentials; only with a configured `access_key_id`.
    pub session_token: Option<String>,
    /// Whether an `http://` endpoint is accepted.
    pub allow_http: bool,
    /// How long a call may take ([`Deadlines`]).
    pub deadlines: Deadlines,
    /// Send no `x-amz-checksum-sha256` with uploads (for a store that refuses the header).
    /// Otherwise every PUT and part carries the SHA-256 of its bytes, which the store checks:
    /// a write-back damaged between the gateway and the store is refused, not kept.
    pub no_upload_checksum: bool,
}

/// How long a call to the S3 backend may take: a hung or partitioned store must fail the call in
/// bounded time (the request waiting on it answers `503 SlowDown`, the flusher retries later),
/// not hold it for ever.
///
/// * `connect`: to establish a connection (TCP and TLS);
/// * `call`: a whole call without a body to send (HEAD, GET until its answer begins, DELETE,
///   listings, bucket operations) — object_store's retries included; a streamed GET body may then
///   take longer, but no read of it may stall longer than `call`;
/// * a transfer (a PUT, a ranged GET): `call` plus one second per MiB moved
///   ([`Deadlines::transfer`]), so a large object over a slow link is not cut short while a hung
///   store still fails the call.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Deadlines {
    /// To establish a connection, TCP and TLS (default 3 s).
    pub connect: std::time::Duration,
    /// A whole call without a body to send, retries included (default 15 s).
    pub call: std::time::Duration,
}

impl Default for Deadlines {
    fn default() -> Self {
        Deadlines { connect: std::time::Duration::from_secs(3), call: std::time::Duration::from_secs(15) }
    }
}

impl Deadlines {
    /// The deadline of a transfer of `bytes` (see the type's doc).
    pub fn transfer(&self, bytes: u64) -> std::time::Duration {
        self.call + std::time::Duration::from_secs(bytes.div_ceil(1 << 20))
    }
}

/// The credentials actually used (after the environment fallback).
#[derive(Clone, PartialEq, Eq)]
pub struct Credentials {
    /// The access key id.
    pub key_id: String,
    /// The secret access key (not shown by `Debug`).
    pub secret: String,
    /// The session token, for temporary credentials.
    pub token: Option<String>,
}

impl std::fmt::Debug for Credentials {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "Credentials {{ key_id: {:?}, secret: \"***\" }}", self.key_id)
    }
}

impl S3Settings {
    /// Parses a `--backend` value: `s3://` (AWS), `s3://HOST[:PORT]` (an `https://` endpoint) or
    /// `s3+http://HOST[:PORT]` (a plain-HTTP endpoint; implies `allow_http`).
    pub fn from_url(url: &str) -> Result<S3Settings, SettingsError> {
        let (rest, http) = if let Some(r) = url.strip_prefix("s3+http://") {
            (r, true)
        } else if let Some(r) = url.strip_prefix("s3://") {
            (r, false)
        } else {
            return Err(SettingsError::Url(format!(
                "expected s3://[HOST[:PORT]] or s3+http://HOST[:PORT], got {url:?}"
            )));
        };
        let host = rest.trim_end_matches('/');
        if host.contains('/') || host.contains('?') || host.contains('@') {
            return Err(SettingsError::Url(format!(
                "{url:?}: give only HOST[:PORT] after the scheme (buckets come from requests)"
            )));
        }
        if host.is_empty() && http {
            return Err(SettingsError::Url(format!("{url:?}: s3+http:// needs a HOST[:PORT]")));
        }
        let endpoint = (!host.is_empty()).then(|| format!("{}://{host}", if http { "http" } else { "https" }));
        Ok(S3Settings { endpoint, allow_http: http, ..Default::default() })
    }

    /// Checks the fields; the message names the bad one (`backend.FIELD: …`).
    pub fn validate(&self) -> Result<(), SettingsError> {
        if let Some(e) = &self.endpoint {
            let (scheme, rest) = e.split_once("://").ok_or_else(|| {
                SettingsError::field("backend.endpoint", format!("expected http(s)://HOST[:PORT], got {e:?}"))
            })?;
            if scheme != "http" && scheme != "https" {
                return Err(SettingsError::field(
                    "backend.endpoint",
                    format!("the scheme must be http or https, got {scheme:?}"),
                ));
            }
            let host = rest.trim_end_matches('/');
            if host.is_empty() || host.contains(['/', '?', '#', '@', ' ']) {
                return Err(SettingsError::field(
                    "backend.endpoint",
                    format!("expected http(s)://HOST[:PORT] without a path, got {e:?}"),
                ));
            }
            if let Some((_, port)) = host.rsplit_once(':').filter(|_| !host.ends_with(']')) {
                if port.parse::<u16>().is_err() {
                    return Err(SettingsError::field("backend.endpoint", format!("bad port {port:?} in {e:?}")));
                }
            }
            if scheme == "http" && !self.allow_http {
                return Err(SettingsError::field(
                    "backend.endpoint",
                    format!("{e:?} is plain HTTP; set backend.allow_http = true to allow it"),
                ));
            }
            if self.virtual_hosted && host_is_ip(host) {
                return Err(SettingsError::field(
                    "backend.virtual_hosted",
                    format!("bucket names cannot be prefixed to the IP address in {e:?}; use path style"),
                ));
            }
        }
        if let Some(r) = &self.region {
            if r.is_empty() || !r.chars().all(|c| c.is_ascii_lowercase() || c.is_ascii_digit() || c == '-') {
                return Err(SettingsError::field(
                    "backend.region",
                    format!("expected a region like \"us-east-1\", got {r:?}"),
                ));
            }
        }
        if self.access_key_id.is_some() != self.secret_access_key.is_some() {
            return Err(SettingsError::field(
                "backend.access_key_id, backend.secret_access_key",
                "give both or neither",
            ));
        }
        if self.session_token.is_some() && self.access_key_id.is_none() {
            return Err(SettingsError::field(
                "backend.session_token",
                "needs backend.access_key_id and backend.secret_access_key",
            ));
        }
        if self.deadlines.connect.is_zero() {
            return Err(SettingsError::field("backend.connect_timeout", "must be more than 0"));
        }
        if self.deadlines.call.is_zero() {
            return Err(SettingsError::field("backend.timeout", "must be more than 0"));
        }
        Ok(())
    }

    /// The region: configured, else from `env`, else `us-east-1`.
    pub fn region_or(&self, env: &dyn Fn(&str) -> Option<String>) -> String {
        self.region
            .clone()
            .or_else(|| env("AWS_REGION"))
            .or_else(|| env("AWS_DEFAULT_REGION"))
            .filter(|r| !r.is_empty())
            .unwrap_or_else(|| "us-east-1".into())
    }

    /// The credentials: configured, else from `env` (the standard AWS variables).
    pub fn credentials(&self, env: &dyn Fn(&str) -> Option<String>) -> Result<Credentials, SettingsError> {
        if let (Some(k), Some(s)) = (&self.access_key_id, &self.secret_access_key) {
            return Ok(Credentials { key_id: k.clone(), secret: s.clone(), token: self.session_token.clone() });
        }
        match (env("AWS_ACCESS_KEY_ID"), env("AWS_SECRET_ACCESS_KEY")) {
            (Some(k), Some(s)) if !k.is_empty() && !s.is_empty() => {
                Ok(Credentials { key_id: k, secret: s, token: env("AWS_SESSION_TOKEN").filter(|t| !t.is_empty()) })
            }
            _ => Err(SettingsError::NoCredentials),
        }
    }

    /// The service URL without a bucket (ListBuckets), no trailing slash.
    pub fn service_url(&self, region: &str) -> String {
        match &self.endpoint {
            Some(e) => e.trim_end_matches('/').to_string(),
            None => format!("https://s3.{region}.amazonaws.com"),
        }
    }

    /// The URL of `bucket` (path style `SERVICE/bucket`, or virtual-hosted `scheme://bucket.host`),
    /// no trailing slash; object_store's endpoint for that bucket.
    pub fn bucket_url(&self, bucket: &str, region: &str) -> String {
        let service = self.service_url(region);
        if !self.virtual_hosted {
            return format!("{service}/{bucket}");
        }
        match service.split_once("://") {
            Some((scheme, host)) => format!("{scheme}://{bucket}.{host}"),
            None => format!("{service}/{bucket}"),
        }
    }

    /// A one-line description for logs.
    pub fn describe(&self, region: &str) -> String {
        format!(
            "S3 {} ({region}, {})",
            self.service_url(region),
            if self.virtual_hosted { "virtual-hosted" } else { "path style" }
        )
    }
}

fn host_is_ip(host: &str) -> bool {
    let h = host.rsplit_once(':').map_or(host, |(h, p)| if p.parse::<u16>().is_ok() { h } else { host });
    h.starts_with('[') || h.parse::<std::net::Ipv4Addr>().is_ok()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn no_env(_: &str) -> Option<String> {
        None
    }

    #[test]
    fn urls_parse() {
        assert_eq!(S3Settings::from_url("s3://").unwrap(), S3Settings::default());
        let s = S3Settings::from_url("s3+http://127.0.0.1:5000").unwrap();
        assert_eq!((s.endpoint.as_deref(), s.allow_http), (Some("http://127.0.0.1:5000"), true));
        let s = S3Settings::from_url("s3://minio.lan:9000/").unwrap();
        assert_eq!(s.endpoint.as_deref(), Some("https://minio.lan:9000"));
        assert!(S3Settings::from_url("s3://host/bucket").unwrap_err().to_string().contains("HOST[:PORT]"));
        assert!(S3Settings::from_url("gs://x").unwrap_err().to_string().starts_with("--backend"));
        assert!(S3Settings::from_url("s3+http://").is_err());
    }

    #[test]
    fn validation_names_the_field() {
        let ok = S3Settings { endpoint: Some("http://127.0.0.1:9".into()), allow_http: true, ..Default::default() };
        ok.validate().unwrap();
        let bad = |s: S3Settings, field: &str| {
            let e = s.validate().unwrap_err();
            assert!(e.to_string().starts_with(field), "{e}");
        };
        bad(S3Settings { allow_http: false, ..ok.clone() }, "backend.endpoint: \"http://127.0.0.1:9\" is plain HTTP");
        bad(S3Settings { endpoint: Some("ftp://x".into()), ..ok.clone() }, "backend.endpoint: the scheme");
        bad(S3Settings { endpoint: Some("http://x/path".into()), ..ok.clone() }, "backend.endpoint: expected");
        bad(S3Settings { endpoint: Some("http://x:port".into()), ..ok.clone() }, "backend.endpoint: bad port");
        bad(S3Settings { endpoint: Some("127.0.0.1".into()), ..ok.clone() }, "backend.endpoint");
        bad(S3Settings { virtual_hosted: true, ..ok.clone() }, "backend.virtual_hosted");
        bad(S3Settings { region: Some("US East".into()), ..ok.clone() }, "backend.region");
        bad(S3Settings { access_key_id: Some("k".into()), ..ok.clone() }, "backend.access_key_id, backend.secret");
        bad(S3Settings { session_token: Some("t".into()), ..ok.clone() }, "backend.session_token");
    }

    #[test]
    fn credentials_and_region_fall_back_to_the_environment() {
        let s = S3Settings::default();
        assert!(s.credentials(&no_env).unwrap_err().to_string().starts_with("backend.access_key_id"));
        let env = |k: &str| match k {
            "AWS_ACCESS_KEY_ID" => Some("AK".to_string()),
            "AWS_SECRET_ACCESS_KEY" => Some("SK".to_string()),
            "AWS_DEFAULT_REGION" => Some("eu-west-3".to_string()),
            _ => None,
        };
        let c = s.credentials(&env).unwrap();
        assert_eq!((c.key_id.as_str(), c.secret.as_str(), c.token.as_deref()), ("AK", "SK", None));
        assert!(!format!("{c:?}").contains("SK"), "the secret is not logged");
        assert_eq!(s.region_or(&env), "eu-west-3");
        assert_eq!(s.region_or(&no_env), "us-east-1");
        let own = S3Settings { access_key_id: Some("a".into()), secret_access_key: Some("b".into()), ..s };
        assert_eq!(own.credentials(&env).unwrap().key_id, "a");
    }

    #[test]
    fn bucket_urls() {
        let aws = S3Settings::default();
        assert_eq!(aws.bucket_url("b", "eu-west-1"), "https://s3.eu-west-1.amazonaws.com/b");
        let vh = S3Settings { virtual_hosted: true, ..aws };
        assert_eq!(vh.bucket_url("b", "eu-west-1"), "https://b.s3.eu-west-1.amazonaws.com");
        let local = S3Settings { endpoint: Some("http://127.0.0.1:5000/".into()), ..Default::default() };
        assert_eq!(local.bucket_url("b", "us-east-1"), "http://127.0.0.1:5000/b");
        assert_eq!(local.service_url("us-east-1"), "http://127.0.0.1:5000");
    }
}
