//! `reo.toml`: the configuration file of `reo serve` (every option is in `reo.example.toml` at
//! the repository root). Parsed strictly (unknown fields are errors) and validated at start-up;
//! every message names the file and the field, e.g.
//! `reo.toml: cache.device_size: expected a size like "4GiB", got "lots"`.

use std::net::SocketAddr;
use std::path::{Path, PathBuf};

use reo_gateway::backend::s3::S3Settings;
use reo_gateway::launch::BackendChoice;
use serde::Deserialize;

/// The file as written; every field optional (defaults and flags fill the rest).
#[derive(Debug, Default, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct FileConfig {
    #[serde(default)]
    pub server: ServerSection,
    #[serde(default)]
    pub cache: CacheSection,
    #[serde(default)]
    pub flush: FlushSection,
    #[serde(default)]
    pub hints: HintsSection,
    #[serde(default)]
    pub metrics: MetricsSection,
    #[serde(default)]
    pub backend: Option<BackendSection>,
    #[serde(default)]
    pub cluster: ClusterSection,
}

/// `[cluster]`: this gateway as a node of a cluster (docs/CLUSTER.md); flags override it.
#[derive(Debug, Default, Clone, PartialEq, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ClusterSection {
    /// `etcd://HOST:PORT[,...]`.
    pub etcd: Option<String>,
    /// The cluster's name (its etcd prefix `/reo/<name>/`).
    pub name: Option<String>,
    pub node_id: Option<String>,
    pub advertise: Option<String>,
    /// A file whose first line is the cluster's shared secret.
    pub secret_file: Option<PathBuf>,
    pub replicas: Option<usize>,
    pub min_replicas: Option<usize>,
    pub lease_ttl: Option<String>,
    pub permission_lease: Option<String>,
    /// Share of the flash replicas of peers may take, 0 to 1.
    pub replica_share: Option<f64>,
}

#[derive(Debug, Default, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ServerSection {
    pub listen: Option<String>,
    pub data_dir: Option<PathBuf>,
    pub backend: Option<PathBuf>,
    pub access_key: Option<String>,
    pub secret_key: Option<String>,
    pub max_body: Option<String>,
    pub anonymous_metrics: Option<bool>,
    pub allow_sigv2: Option<bool>,
    pub header_timeout: Option<String>,
    pub max_connections: Option<usize>,
    pub blocking_threads: Option<usize>,
    pub replacement_devices: Option<Vec<PathBuf>>,
    pub multipart_expiry: Option<String>,
    pub memory_budget: Option<String>,
    pub body_idle_timeout: Option<String>,
    pub body_min_rate: Option<String>,
    pub max_requests_per_connection: Option<u64>,
    pub tls_listen: Option<String>,
    pub tls_cert: Option<PathBuf>,
    pub tls_key: Option<PathBuf>,
}

#[derive(Debug, Default, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct CacheSection {
    pub devices: Option<usize>,
    pub device_size: Option<String>,
    pub checkpoint_size: Option<String>,
    pub revalidate_after: Option<String>,
    pub max_fill: Option<String>,
    pub memory: Option<String>,
    pub rebuild_bandwidth: Option<String>,
    pub slow_read_after: Option<String>,
    pub stuck_read_fail_after: Option<String>,
}

#[derive(Debug, Default, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct FlushSection {
    pub delay_ms: Option<u64>,
    pub write_policies: Option<Vec<String>>,
    pub dirty_limit: Option<String>,
    pub backend_down_slowdown_after: Option<String>,
}

#[derive(Debug, Default, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct HintsSection {
    pub promote_bandwidth: Option<String>,
}

/// `[metrics]`: how Prometheus scrapes `/metrics`.
#[derive(Debug, Default, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct MetricsSection {
    /// The bearer token on the S3 listener.
    pub token: Option<String>,
    /// A file whose first line is the token.
    pub token_file: Option<PathBuf>,
    /// A separate address serving `GET /metrics` only, without authentication.
    pub listen: Option<String>,
}

/// `[backend]`: a local directory (`kind = "local"`, `path`) or an S3 store (`kind = "s3"`).
#[derive(Debug, Default, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct BackendSection {
    pub kind: Option<String>,
    pub path: Option<PathBuf>,
    pub endpoint: Option<String>,
    pub region: Option<String>,
    pub virtual_hosted: Option<bool>,
    pub access_key_id: Option<String>,
    pub secret_access_key: Option<String>,
    pub session_token: Option<String>,
    pub allow_http: Option<bool>,
    pub upload_checksum: Option<bool>,
    pub connect_timeout: Option<String>,
    pub timeout: Option<String>,
}

/// A positive duration for `field`, or a message naming it.
/// A metrics token: at least 16 printable characters (it is all a scraper shows).
pub fn metrics_token(field: &str, t: String) -> Result<String, String> {
    let t = t.trim().to_string();
    if t.len() >= 16 && t.bytes().all(|b| b.is_ascii_graphic()) {
        Ok(t)
    } else {
        Err(format!("{field}: at least 16 printable characters without spaces"))
    }
}

/// The first line of a secret's file.
pub fn read_first_line(p: &Path) -> Result<String, String> {
    std::fs::read_to_string(p)
        .map_err(|e| format!("{}: {e}", p.display()))?
        .lines()
        .next()
        .map(str::trim)
        .filter(|s| !s.is_empty())
        .map(str::to_string)
        .ok_or_else(|| format!("{}: the first line is empty", p.display()))
}

fn positive_duration(field: &str, v: &str) -> Result<std::time::Duration, String> {
    match parse_duration(v) {
        Some(d) if !d.is_zero() => Ok(d),
        _ => Err(format!("{field}: expected a positive duration like \"3s\" or \"500ms\", got {v:?}")),
    }
}

impl BackendSection {
    /// `timeout`: the deadline of a backend call (either kind).
    fn call_timeout(&self) -> Result<Option<std::time::Duration>, String> {
        self.timeout.as_deref().map(|v| positive_duration("backend.timeout", v)).transpose()
    }

    /// The backend it describes (`server_backend`: the older `server.backend` directory).
    fn choice(&self, server_backend: Option<PathBuf>) -> Result<BackendChoice, String> {
        let s3_fields = [
            ("endpoint", self.endpoint.is_some()),
            ("region", self.region.is_some()),
            ("virtual_hosted", self.virtual_hosted.is_some()),
            ("access_key_id", self.access_key_id.is_some()),
            ("secret_access_key", self.secret_access_key.is_some()),
            ("session_token", self.session_token.is_some()),
            ("allow_http", self.allow_http.is_some()),
            ("upload_checksum", self.upload_checksum.is_some()),
            ("connect_timeout", self.connect_timeout.is_some()),
        ];
        match self.kind.as_deref().unwrap_or("local") {
            "local" => {
                if let Some((f, _)) = s3_fields.iter().find(|(_, set)| *set) {
                    return Err(format!("backend.{f}: only with kind = \"s3\" (kind is \"local\")"));
                }
                if self.path.is_some() && server_backend.is_some() {
                    return Err("backend.path, server.backend: give the directory once".into());
                }
                Ok(BackendChoice::Local(self.path.clone().or(server_backend)))
            }
            "s3" => {
                if self.path.is_some() {
                    return Err("backend.path: only with kind = \"local\"; an S3 backend takes backend.endpoint".into());
                }
                if server_backend.is_some() {
                    return Err("server.backend: a local directory, but backend.kind is \"s3\"".into());
                }
                let mut deadlines = reo_gateway::backend::s3::Deadlines::default();
                if let Some(v) = &self.connect_timeout {
                    deadlines.connect = positive_duration("backend.connect_timeout", v)?;
                }
                if let Some(d) = self.call_timeout()? {
                    deadlines.call = d;
                }
                let s = S3Settings {
                    deadlines,
                    endpoint: self.endpoint.clone(),
                    region: self.region.clone(),
                    virtual_hosted: self.virtual_hosted.unwrap_or(false),
                    access_key_id: self.access_key_id.clone(),
                    secret_access_key: self.secret_access_key.clone(),
                    session_token: self.session_token.clone(),
                    allow_http: self.allow_http.unwrap_or(false),
                    no_upload_checksum: !self.upload_checksum.unwrap_or(true),
                };
                s.validate().map_err(|e| e.to_string())?;
                Ok(BackendChoice::S3(s))
            }
            other => Err(format!("backend.kind: expected \"local\" or \"s3\", got {other:?}")),
        }
    }
}

/// The backend of `reo serve --backend VALUE` over the file's: `s3://…`/`s3+http://…` is an S3
/// store (region, credentials, addressing and deadlines from the file's `[backend]` if it is S3 too), anything
/// else a local directory.
pub fn backend_flag(value: &str, file: &BackendChoice) -> Result<BackendChoice, String> {
    if !(value.starts_with("s3://") || value.starts_with("s3+http://")) {
        return Ok(BackendChoice::Local(Some(PathBuf::from(value))));
    }
    let mut s = S3Settings::from_url(value).map_err(|e| e.to_string())?;
    if let BackendChoice::S3(f) = file {
        s.region = f.region.clone();
        s.virtual_hosted = f.virtual_hosted;
        s.access_key_id = f.access_key_id.clone();
        s.secret_access_key = f.secret_access_key.clone();
        s.session_token = f.session_token.clone();
        s.allow_http |= f.allow_http;
        s.deadlines = f.deadlines;
        s.no_upload_checksum = f.no_upload_checksum;
    }
    s.validate().map_err(|e| format!("--backend {value}: {e}"))?;
    Ok(BackendChoice::S3(s))
}

/// A size like `4GiB`, `512MiB`, `64KiB`, `10MB` or a plain byte count
/// ([`reo_cache::units::parse_size`], the one parser of sizes).
pub fn parse_size(s: &str) -> Option<u64> {
    reo_cache::units::parse_size(s).ok()
}

/// A duration like `250ms`, `30s`, `5m`, `2h` ([`reo_cache::units::parse_duration`], the one
/// parser of durations).
pub fn parse_duration(s: &str) -> Option<std::time::Duration> {
    reo_cache::units::parse_duration(s).ok()
}

/// The settings `reo serve` takes from a file, validated.
#[derive(Debug, Default, Clone, PartialEq)]
pub struct Settings {
    /// `[cluster]` as written (checked by `reo serve`, where the flags join it).
    pub cluster: ClusterSection,
    pub listen: Option<SocketAddr>,
    pub data_dir: Option<PathBuf>,
    pub backend: BackendChoice,
    pub access_key: Option<String>,
    pub secret_key: Option<String>,
    pub max_body: Option<u64>,
    pub anonymous_metrics: Option<bool>,
    pub allow_sigv2: Option<bool>,
    pub header_timeout: Option<std::time::Duration>,
    pub max_connections: Option<usize>,
    /// `server.blocking_threads`: the bound of the blocking pool.
    pub blocking_threads: Option<usize>,
    pub replacement_devices: Vec<PathBuf>,
    pub multipart_expiry: Option<std::time::Duration>,
    pub memory_budget: Option<u64>,
    pub body_idle_timeout: Option<std::time::Duration>,
    pub body_min_rate: Option<u64>,
    pub max_requests_per_connection: Option<u64>,
    pub metrics_token: Option<String>,
    pub metrics_listen: Option<SocketAddr>,
    pub tls_listen: Option<SocketAddr>,
    pub tls_cert: Option<PathBuf>,
    pub tls_key: Option<PathBuf>,
    pub devices: Option<usize>,
    pub device_bytes: Option<u64>,
    /// `cache.checkpoint_size`: each checkpoint slot's bytes, at format.
    pub checkpoint_bytes: Option<u64>,
    pub flush_delay_ms: Option<u64>,
    pub write_policies: Option<Vec<reo_gateway::gateway::policy::PolicyRule>>,
    pub promote_bps: Option<u64>,
    pub dirty_limit: Option<u64>,
    pub backend_down_slowdown_after: Option<std::time::Duration>,
    pub revalidate_after: Option<std::time::Duration>,
    pub max_fill: Option<u64>,
    /// `cache.memory`: the DRAM tier's bytes (0: off).
    pub memory_tier: Option<u64>,
    pub rebuild_bps: Option<u64>,
    /// `cache.slow_read_after`: `Some(None)` for "off".
    pub slow_read_after: Option<Option<std::time::Duration>>,
    /// `cache.stuck_read_fail_after`: `Some(None)` for "off".
    pub stuck_read_fail_after: Option<Option<std::time::Duration>>,
    /// `backend.timeout` of a local directory backend (an S3 one keeps it in its settings).
    pub local_timeout: Option<std::time::Duration>,
}

/// A duration option that may be turned off: `"off"` is `Some(None)`, a positive duration
/// `Some(Some(d))`, absent `None`.
fn duration_or_off(name: &str, field: &str, v: &Option<String>) -> Result<Option<Option<std::time::Duration>>, String> {
    v.as_ref()
        .map(|s| match (s.as_str(), parse_duration(s)) {
            ("off", _) => Ok(None),
            (_, Some(d)) if !d.is_zero() => Ok(Some(d)),
            _ => Err(format!(
                "{name}: {field}: expected a positive duration like \"100ms\" or \"30s\", or \"off\", got {s:?}"
            )),
        })
        .transpose()
}

fn size(name: &str, field: &str, v: &Option<String>) -> Result<Option<u64>, String> {
    v.as_ref()
        .map(|s| parse_size(s).ok_or_else(|| format!("{name}: {field}: expected a size like \"4GiB\", got {s:?}")))
        .transpose()
}

/// Parses and validates the text of a configuration file called `name` (for messages).
pub fn parse(name: &str, text: &str) -> Result<Settings, String> {
    let f: FileConfig = toml::from_str(text).map_err(|e| format!("{name}: {}", e.to_string().trim_end()))?;
    let listen = f
        .server
        .listen
        .as_ref()
        .map(|l| {
            l.parse::<SocketAddr>().map_err(|_| format!("{name}: server.listen: expected ADDRESS:PORT, got {l:?}"))
        })
        .transpose()?;
    if f.server.access_key.is_some() != f.server.secret_key.is_some() {
        return Err(format!("{name}: server.access_key, server.secret_key: give both or neither"));
    }
    if f.cache.devices == Some(0) {
        return Err(format!("{name}: cache.devices: must be at least 1"));
    }
    let device_bytes = size(name, "cache.device_size", &f.cache.device_size)?;
    if device_bytes.is_some_and(|b| b < 16 << 20) {
        return Err(format!("{name}: cache.device_size: must be at least 16MiB"));
    }
    let checkpoint_bytes = size(name, "cache.checkpoint_size", &f.cache.checkpoint_size)?;
    if checkpoint_bytes.is_some_and(|b| b < 1 << 20 || !b.is_multiple_of(4096)) {
        return Err(format!("{name}: cache.checkpoint_size: must be at least 1MiB and a multiple of 4KiB"));
    }
    let max_body = size(name, "server.max_body", &f.server.max_body)?;
    if max_body == Some(0) {
        return Err(format!("{name}: server.max_body: must be more than 0"));
    }
    let revalidate_after = f
        .cache
        .revalidate_after
        .as_ref()
        .map(|d| {
            parse_duration(d).ok_or_else(|| {
                format!("{name}: cache.revalidate_after: expected a duration like \"30s\", \"500ms\", \"5m\" or \"2h\", got {d:?}")
            })
        })
        .transpose()?;
    let max_fill = size(name, "cache.max_fill", &f.cache.max_fill)?;
    let write_policies = f
        .flush
        .write_policies
        .as_ref()
        .map(|v| {
            v.iter()
                .enumerate()
                .map(|(i, r)| r.parse().map_err(|e| format!("{name}: flush.write_policies[{i}]: {e}")))
                .collect::<Result<Vec<_>, String>>()
        })
        .transpose()?;
    let dirty_limit = size(name, "flush.dirty_limit", &f.flush.dirty_limit)?;
    if dirty_limit == Some(0) {
        return Err(format!("{name}: flush.dirty_limit: must be more than 0"));
    }
    let backend_down_slowdown_after = f
        .flush
        .backend_down_slowdown_after
        .as_ref()
        .map(|v| match parse_duration(v) {
            Some(d) if !d.is_zero() => Ok(d),
            Some(_) => Err(format!("{name}: flush.backend_down_slowdown_after: must be more than 0")),
            None => Err(format!(
                "{name}: flush.backend_down_slowdown_after: expected a duration like \"30s\", \"5m\" or \"1h\", got {v:?}"
            )),
        })
        .transpose()?;
    let backend = match &f.backend {
        Some(b) => b.choice(f.server.backend.clone()).map_err(|e| format!("{name}: {e}"))?,
        None => BackendChoice::Local(f.server.backend.clone()),
    };
    let local_timeout = match (&backend, &f.backend) {
        (BackendChoice::Local(_), Some(b)) => b.call_timeout().map_err(|e| format!("{name}: {e}"))?,
        _ => None,
    };
    Ok(Settings {
        cluster: f.cluster,
        listen,
        data_dir: f.server.data_dir,
        backend,
        access_key: f.server.access_key,
        secret_key: f.server.secret_key,
        max_body,
        anonymous_metrics: f.server.anonymous_metrics,
        allow_sigv2: f.server.allow_sigv2,
        header_timeout: f
            .server
            .header_timeout
            .as_deref()
            .map(|v| positive_duration("server.header_timeout", v))
            .transpose()?,
        max_connections: match f.server.max_connections {
            Some(0) => return Err("server.max_connections: must be at least 1".into()),
            n => n,
        },
        blocking_threads: match f.server.blocking_threads {
            Some(0) => return Err("server.blocking_threads: must be at least 1".into()),
            n => n,
        },
        replacement_devices: match f.server.replacement_devices.unwrap_or_default() {
            v if v.iter().any(|p| !p.is_absolute()) => {
                return Err("server.replacement_devices: give absolute paths of block devices".into())
            }
            v => v,
        },
        multipart_expiry: f
            .server
            .multipart_expiry
            .as_deref()
            .map(|v| positive_duration("server.multipart_expiry", v))
            .transpose()?,
        metrics_token: match (f.metrics.token, &f.metrics.token_file) {
            (Some(_), Some(_)) => return Err("metrics.token, metrics.token_file: give one".into()),
            (Some(t), None) => Some(metrics_token("metrics.token", t)?),
            (None, Some(p)) => Some(metrics_token("metrics.token_file", read_first_line(p)?)?),
            (None, None) => None,
        },
        memory_budget: match size(name, "server.memory_budget", &f.server.memory_budget)? {
            Some(b) if b < 1 << 20 => return Err(format!("{name}: server.memory_budget: at least 1MiB")),
            b => b,
        },
        body_idle_timeout: f
            .server
            .body_idle_timeout
            .as_deref()
            .map(|v| positive_duration("server.body_idle_timeout", v))
            .transpose()?,
        body_min_rate: size(name, "server.body_min_rate", &f.server.body_min_rate)?,
        max_requests_per_connection: match f.server.max_requests_per_connection {
            Some(0) => return Err(format!("{name}: server.max_requests_per_connection: at least 1")),
            n => n,
        },
        tls_listen: f
            .server
            .tls_listen
            .as_deref()
            .map(|v| v.parse().map_err(|e| format!("server.tls_listen: {v:?}: {e}")))
            .transpose()?,
        tls_cert: f.server.tls_cert,
        tls_key: f.server.tls_key,
        metrics_listen: f
            .metrics
            .listen
            .as_deref()
            .map(|v| v.parse().map_err(|e| format!("metrics.listen: {v:?}: {e}")))
            .transpose()?,
        devices: f.cache.devices,
        device_bytes,
        checkpoint_bytes,
        flush_delay_ms: f.flush.delay_ms,
        write_policies,
        promote_bps: size(name, "hints.promote_bandwidth", &f.hints.promote_bandwidth)?,
        dirty_limit,
        backend_down_slowdown_after,
        revalidate_after,
        max_fill,
        memory_tier: size(name, "cache.memory", &f.cache.memory)?,
        rebuild_bps: size(name, "cache.rebuild_bandwidth", &f.cache.rebuild_bandwidth)?,
        slow_read_after: duration_or_off(name, "cache.slow_read_after", &f.cache.slow_read_after)?,
        stuck_read_fail_after: duration_or_off(name, "cache.stuck_read_fail_after", &f.cache.stuck_read_fail_after)?,
        local_timeout,
    })
}

/// The settings of `explicit` (an error if it cannot be read), else of `./reo.toml` if present,
/// else none.
pub fn load(explicit: Option<&Path>) -> Result<Settings, String> {
    let path = match explicit {
        Some(p) => p.to_path_buf(),
        None if Path::new("reo.toml").exists() => PathBuf::from("reo.toml"),
        None => return Ok(Settings::default()),
    };
    let text = std::fs::read_to_string(&path).map_err(|e| format!("{}: {e}", path.display()))?;
    let name = path.file_name().map_or_else(|| path.display().to_string(), |n| n.to_string_lossy().into_owned());
    parse(&name, &text)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn sizes() {
        assert_eq!(parse_size("4GiB"), Some(4 << 30));
        assert_eq!(parse_size("10MB"), Some(10_000_000));
        assert_eq!(parse_size("123"), Some(123));
        assert_eq!(parse_size("lots"), None);
        assert_eq!(parse_size("4 PiB"), None);
    }

    #[test]
    fn durations() {
        use std::time::Duration;
        assert_eq!(parse_duration("250ms"), Some(Duration::from_millis(250)));
        assert_eq!(parse_duration("30s"), Some(Duration::from_secs(30)));
        assert_eq!(parse_duration("5m"), Some(Duration::from_secs(300)));
        assert_eq!(parse_duration("2h"), Some(Duration::from_secs(7200)));
        assert_eq!(parse_duration("30"), None);
        assert_eq!(parse_duration("soon"), None);
        assert_eq!(parse_duration("3d"), Some(Duration::from_secs(3 * 86_400)));
        assert_eq!(parse_duration("3w"), None);
    }

    #[test]
    fn connection_limits() {
        let s = parse("t", "[server]\nheader_timeout = \"2s\"\nmax_connections = 64\nallow_sigv2 = true\n").unwrap();
        assert_eq!(s.header_timeout, Some(std::time::Duration::from_secs(2)));
        assert_eq!((s.max_connections, s.allow_sigv2), (Some(64), Some(true)));
        let e = parse("t", "[server]\nheader_timeout = \"0s\"\n").unwrap_err();
        assert!(e.contains("server.header_timeout"), "{e}");
        let s = parse("t", "[server]\nblocking_threads = 12\n").unwrap();
        assert_eq!(s.blocking_threads, Some(12));
        let e = parse("t", "[server]\nblocking_threads = 0\n").unwrap_err();
        assert!(e.contains("server.blocking_threads"), "{e}");
        let e = parse("t", "[server]\nmax_connections = 0\n").unwrap_err();
        assert!(e.contains("server.max_connections"), "{e}");
    }

    #[test]
    fn the_example_file_is_valid() {
        let text = include_str!("../../../reo.example.toml");
        let s = parse("reo.example.toml", text).unwrap();
        assert_eq!(s.devices, Some(5));
        assert_eq!(s.device_bytes, Some(256 << 20));
        assert_eq!(s.backend_down_slowdown_after, Some(std::time::Duration::from_secs(300)));
        assert_eq!(s.rebuild_bps, Some(0), "0: unthrottled (serve filters it out)");
        assert_eq!(s.slow_read_after, Some(Some(std::time::Duration::from_millis(100))));
        assert_eq!(s.stuck_read_fail_after, Some(Some(std::time::Duration::from_secs(30))));
    }

    #[test]
    fn slow_read_limits_take_a_duration_or_off() {
        let s = parse(
            "reo.toml",
            "[cache]
slow_read_after = \"off\"
stuck_read_fail_after = \"2m\"
",
        )
        .unwrap();
        assert_eq!(s.slow_read_after, Some(None));
        assert_eq!(s.stuck_read_fail_after, Some(Some(std::time::Duration::from_secs(120))));
        assert_eq!(parse("reo.toml", "").unwrap().slow_read_after, None, "absent: the store's default");
        for bad in ["0s", "soon"] {
            let e = parse("reo.toml", &format!("[cache]\nslow_read_after = {bad:?}\n")).unwrap_err();
            assert_eq!(
                e,
                format!(
                    "reo.toml: cache.slow_read_after: expected a positive duration like \"100ms\" or \"30s\", or \"off\", got {bad:?}"
                )
            );
        }
    }

    #[test]
    fn messages_name_the_field() {
        assert_eq!(
            parse("reo.toml", "[cache]\ncheckpoint_size = \"64MiB\"\n").unwrap().checkpoint_bytes,
            Some(64 << 20)
        );
        let e = parse("reo.toml", "[cache]\ncheckpoint_size = \"1000\"\n").unwrap_err();
        assert_eq!(e, "reo.toml: cache.checkpoint_size: must be at least 1MiB and a multiple of 4KiB");
        let e = parse("reo.toml", "[cache]\ndevice_size = \"lots\"\n").unwrap_err();
        assert_eq!(e, "reo.toml: cache.device_size: expected a size like \"4GiB\", got \"lots\"");
        let e = parse("reo.toml", "[server]\nlisten = \"nowhere\"\n").unwrap_err();
        assert!(e.starts_with("reo.toml: server.listen:"), "{e}");
        let e = parse("reo.toml", "[cache]\ncolour = 3\n").unwrap_err();
        assert!(e.contains("colour"), "{e}");
        let e = parse("reo.toml", "[cache]\ndevices = \"five\"\n").unwrap_err();
        assert!(e.contains("devices"), "{e}");
        let e = parse("reo.toml", "[cache]\nrevalidate_after = \"soon\"\n").unwrap_err();
        assert!(e.starts_with("reo.toml: cache.revalidate_after: expected a duration"), "{e}");
        let e = parse("reo.toml", "[cache]\nmax_fill = \"big\"\n").unwrap_err();
        assert!(e.starts_with("reo.toml: cache.max_fill: expected a size"), "{e}");
        assert_eq!(parse("reo.toml", "[cache]\nmax_fill = \"0\"\n").unwrap().max_fill, Some(0));
        assert_eq!(parse("reo.toml", "[cache]\nmemory = \"1GiB\"\n").unwrap().memory_tier, Some(1 << 30));
        let e = parse("reo.toml", "[cache]\nmemory = \"lots\"\n").unwrap_err();
        assert!(e.starts_with("reo.toml: cache.memory: expected a size"), "{e}");
        let e = parse("reo.toml", "[cache]\nrebuild_bandwidth = \"fast\"\n").unwrap_err();
        assert!(e.starts_with("reo.toml: cache.rebuild_bandwidth: expected a size"), "{e}");
        assert_eq!(
            parse("reo.toml", "[cache]\nrebuild_bandwidth = \"200MiB\"\n").unwrap().rebuild_bps,
            Some(200 << 20)
        );
        let s = parse("reo.toml", "[cache]\nrevalidate_after = \"30s\"\n").unwrap();
        assert_eq!(s.revalidate_after, Some(std::time::Duration::from_secs(30)));
        assert_eq!(parse_duration("250ms"), Some(std::time::Duration::from_millis(250)));
        assert_eq!(parse_duration("2h"), Some(std::time::Duration::from_secs(7200)));
        assert_eq!(parse_duration("30"), None);
        let e = parse("reo.toml", "[flush]\nwrite_policies = [\"b=sometimes\"]\n").unwrap_err();
        assert!(e.starts_with("reo.toml: flush.write_policies[0]:"), "{e}");
        let e = parse("reo.toml", "[flush]\nbackend_down_slowdown_after = \"a while\"\n").unwrap_err();
        assert_eq!(
            e,
            "reo.toml: flush.backend_down_slowdown_after: expected a duration like \"30s\", \"5m\" or \"1h\", got \"a while\""
        );
        let e = parse("reo.toml", "[flush]\nbackend_down_slowdown_after = \"0s\"\n").unwrap_err();
        assert_eq!(e, "reo.toml: flush.backend_down_slowdown_after: must be more than 0");
        let e = parse("reo.toml", "[flush]\ndirty_limit = \"0\"\n").unwrap_err();
        assert_eq!(e, "reo.toml: flush.dirty_limit: must be more than 0");
        let e = parse("reo.toml", "[server]\naccess_key = \"A\"\n").unwrap_err();
        assert!(e.contains("server.secret_key"), "{e}");
    }

    #[test]
    fn backend_section() {
        let s = parse("reo.toml", "[server]\nbackend = \"/b\"\n").unwrap();
        assert_eq!(s.backend, BackendChoice::Local(Some("/b".into())));
        let text = "[backend]\nkind = \"s3\"\nendpoint = \"http://127.0.0.1:5000\"\nallow_http = true\n\
                    region = \"eu-west-1\"\nvirtual_hosted = false\naccess_key_id = \"A\"\nsecret_access_key = \"S\"\n";
        let BackendChoice::S3(s3) = parse("reo.toml", text).unwrap().backend else { panic!("not s3") };
        assert_eq!((s3.endpoint.as_deref(), s3.region.as_deref()), (Some("http://127.0.0.1:5000"), Some("eu-west-1")));
        let err = |t: &str| parse("reo.toml", t).unwrap_err();
        assert_eq!(
            err("[backend]\nkind = \"gcs\"\n"),
            "reo.toml: backend.kind: expected \"local\" or \"s3\", got \"gcs\""
        );
        assert!(err("[backend]\nendpoint = \"http://x\"\n").starts_with("reo.toml: backend.endpoint: only with kind"));
        let http = "[backend]\nkind = \"s3\"\nendpoint = \"http://x:1\"\n";
        assert!(err(http).starts_with("reo.toml: backend.endpoint: \"http://x:1\" is plain HTTP"), "{}", err(http));
        assert!(err("[backend]\nkind = \"s3\"\npath = \"/d\"\n").starts_with("reo.toml: backend.path"));
        assert!(err("[backend]\nkind = \"s3\"\nregion = 5\n").contains("region"));
        assert!(err("[backend]\npath = \"/a\"\n[server]\nbackend = \"/b\"\n").contains("backend.path, server.backend"));
        // The flag: an s3 URL keeps the file's credentials and region; anything else is a directory.
        let file = parse("reo.toml", text).unwrap().backend;
        let BackendChoice::S3(f) = backend_flag("s3+http://127.0.0.1:9", &file).unwrap() else { panic!() };
        assert_eq!((f.endpoint.as_deref(), f.access_key_id.as_deref()), (Some("http://127.0.0.1:9"), Some("A")));
        assert_eq!(backend_flag("./dir", &file).unwrap(), BackendChoice::Local(Some("./dir".into())));
        assert!(backend_flag("s3://h/bucket", &file).unwrap_err().starts_with("--backend"));
    }

    #[test]
    fn backend_deadlines() {
        use std::time::Duration;
        let s3 = "[backend]\nkind = \"s3\"\nendpoint = \"http://127.0.0.1:5000\"\nallow_http = true\n";
        let BackendChoice::S3(d) = parse("reo.toml", s3).unwrap().backend else { panic!("not s3") };
        assert_eq!((d.deadlines.connect, d.deadlines.call), (Duration::from_secs(3), Duration::from_secs(15)));
        let text = format!("{s3}connect_timeout = \"500ms\"\ntimeout = \"4s\"\n");
        let file = parse("reo.toml", &text).unwrap().backend;
        let BackendChoice::S3(d) = &file else { panic!("not s3") };
        assert_eq!((d.deadlines.connect, d.deadlines.call), (Duration::from_millis(500), Duration::from_secs(4)));
        // The flag keeps the file's deadlines.
        let BackendChoice::S3(f) = backend_flag("s3+http://127.0.0.1:9", &file).unwrap() else { panic!() };
        assert_eq!(f.deadlines.call, Duration::from_secs(4));
        let err = |t: &str| parse("reo.toml", t).unwrap_err();
        assert_eq!(
            err(&format!("{s3}timeout = \"0s\"\n")),
            "reo.toml: backend.timeout: expected a positive duration like \"3s\" or \"500ms\", got \"0s\""
        );
        assert!(err(&format!("{s3}connect_timeout = \"soon\"\n")).starts_with("reo.toml: backend.connect_timeout"));
        assert!(err("[backend]\nconnect_timeout = \"5s\"\n")
            .starts_with("reo.toml: backend.connect_timeout: only with kind"));
        // A local directory takes `timeout` too (its calls run under that deadline).
        let local = parse("reo.toml", "[backend]\nkind = \"local\"\ntimeout = \"7s\"\n").unwrap();
        assert_eq!(local.local_timeout, Some(Duration::from_secs(7)));
        assert!(err("[backend]\ntimeout = \"never\"\n").starts_with("reo.toml: backend.timeout: expected"));
    }
}
