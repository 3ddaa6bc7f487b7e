//! `reo.toml`: the configuration file of `reo serve` (every option is in `reo.example.toml` at
//! the repository root). Parsed strictly (unknown fields are errors) and validated at start-up;
//! every message names the file and the field, e.g.
//! `reo.toml: cache.device_size: expected a size like "4GiB", got "lots"`.

use std::net::SocketAddr;
use std::path::{Path, PathBuf};

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
}

#[derive(Debug, Default, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct CacheSection {
    pub devices: Option<usize>,
    pub device_size: Option<String>,
    pub revalidate_after: Option<String>,
}

#[derive(Debug, Default, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct FlushSection {
    pub delay_ms: Option<u64>,
    pub write_policies: Option<Vec<String>>,
}

#[derive(Debug, Default, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct HintsSection {
    pub promote_bandwidth: Option<String>,
}

/// A size like `4GiB`, `512MiB`, `64KiB`, `10MB` or a plain byte count.
pub fn parse_size(s: &str) -> Option<u64> {
    let s = s.trim();
    let split = s.find(|c: char| !c.is_ascii_digit()).unwrap_or(s.len());
    let (num, unit) = s.split_at(split);
    let n: u64 = num.parse().ok()?;
    let mul: u64 = match unit.trim() {
        "" | "B" => 1,
        "KiB" => 1 << 10,
        "MiB" => 1 << 20,
        "GiB" => 1 << 30,
        "TiB" => 1 << 40,
        "KB" | "kB" => 1_000,
        "MB" => 1_000_000,
        "GB" => 1_000_000_000,
        "TB" => 1_000_000_000_000,
        _ => return None,
    };
    n.checked_mul(mul)
}

/// A duration like `30s`, `500ms`, `5m`, `2h` or `0s`.
pub fn parse_duration(s: &str) -> Option<std::time::Duration> {
    let s = s.trim();
    let split = s.find(|c: char| !c.is_ascii_digit())?;
    let (num, unit) = s.split_at(split);
    let n: u64 = num.parse().ok()?;
    let ms = match unit.trim() {
        "ms" => 1,
        "s" => 1_000,
        "m" | "min" => 60_000,
        "h" => 3_600_000,
        _ => return None,
    };
    n.checked_mul(ms).map(std::time::Duration::from_millis)
}

/// The settings `reo serve` takes from a file, validated.
#[derive(Debug, Default, Clone, PartialEq)]
pub struct Settings {
    pub listen: Option<SocketAddr>,
    pub data_dir: Option<PathBuf>,
    pub backend: Option<PathBuf>,
    pub access_key: Option<String>,
    pub secret_key: Option<String>,
    pub max_body: Option<u64>,
    pub anonymous_metrics: Option<bool>,
    pub devices: Option<usize>,
    pub device_bytes: Option<u64>,
    pub flush_delay_ms: Option<u64>,
    pub write_policies: Option<Vec<reo_gateway::gateway::policy::PolicyRule>>,
    pub promote_bps: Option<u64>,
    pub revalidate_after: Option<std::time::Duration>,
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
    Ok(Settings {
        listen,
        data_dir: f.server.data_dir,
        backend: f.server.backend,
        access_key: f.server.access_key,
        secret_key: f.server.secret_key,
        max_body,
        anonymous_metrics: f.server.anonymous_metrics,
        devices: f.cache.devices,
        device_bytes,
        flush_delay_ms: f.flush.delay_ms,
        write_policies,
        promote_bps: size(name, "hints.promote_bandwidth", &f.hints.promote_bandwidth)?,
        revalidate_after,
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
    fn the_example_file_is_valid() {
        let text = include_str!("../../../reo.example.toml");
        let s = parse("reo.example.toml", text).unwrap();
        assert_eq!(s.devices, Some(5));
        assert_eq!(s.device_bytes, Some(256 << 20));
    }

    #[test]
    fn messages_name_the_field() {
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
        let s = parse("reo.toml", "[cache]\nrevalidate_after = \"30s\"\n").unwrap();
        assert_eq!(s.revalidate_after, Some(std::time::Duration::from_secs(30)));
        assert_eq!(parse_duration("250ms"), Some(std::time::Duration::from_millis(250)));
        assert_eq!(parse_duration("2h"), Some(std::time::Duration::from_secs(7200)));
        assert_eq!(parse_duration("30"), None);
        let e = parse("reo.toml", "[flush]\nwrite_policies = [\"b=sometimes\"]\n").unwrap_err();
        assert!(e.starts_with("reo.toml: flush.write_policies[0]:"), "{e}");
        let e = parse("reo.toml", "[server]\naccess_key = \"A\"\n").unwrap_err();
        assert!(e.contains("server.secret_key"), "{e}");
    }
}
