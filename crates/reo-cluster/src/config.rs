//! A cluster node's settings ([`ClusterConfig`]) and the parsing of `--cluster` URLs.

use std::path::PathBuf;
use std::time::Duration;

/// What one node of a cluster needs.
#[derive(Debug, Clone)]
pub struct ClusterConfig {
    /// etcd client URLs (`http://HOST:PORT`).
    pub etcd: Vec<String>,
    /// The cluster's name: its keys in etcd are under `/reo/<name>/`.
    pub name: String,
    /// This node's id, unique in the cluster and the same across its restarts.
    pub node_id: String,
    /// `HOST:PORT` the other nodes reach this node's S3 listener on (plain HTTP).
    pub advertise: String,
    /// The secret every node signs peer requests with.
    pub secret: Vec<u8>,
    /// Copies of an unflushed write, this node's included, before it is acknowledged.
    pub replicas: usize,
    /// Fewest copies a write may be acknowledged with when replica targets fail.
    pub min_replicas: usize,
    /// The TTL of this node's etcd lease: it is presumed dead this long after its last
    /// keep-alive.
    pub lease_ttl: Duration,
    /// How long a caching permission granted by a home node lasts.
    pub permission: Duration,
    /// Bytes of replicas this node keeps for its peers, at most.
    pub replica_bytes: u64,
    /// This node's cluster state: the replica area and the marker of a past join.
    pub state_dir: PathBuf,
    /// How long a peer request may take before its peer counts as unreachable.
    pub peer_timeout: Duration,
}

/// Default lease TTL.
pub const DEFAULT_LEASE_TTL: Duration = Duration::from_secs(5);
/// Default caching-permission lease.
pub const DEFAULT_PERMISSION: Duration = Duration::from_secs(10);
/// Default share of the flash replicas may take.
pub const DEFAULT_REPLICA_SHARE: f64 = 0.2;

/// Why a cluster setting is refused.
#[derive(Debug, thiserror::Error, PartialEq, Eq)]
#[non_exhaustive]
pub enum ConfigError {
    /// A `--cluster` URL is not `etcd://HOST:PORT` (or `http://`).
    #[error("--cluster {0:?}: expected etcd://HOST:PORT[,etcd://HOST:PORT...]")]
    Url(String),
    /// A node id with characters etcd keys or peer headers cannot carry.
    #[error("--node-id {0:?}: 1 to 64 characters of [A-Za-z0-9._-]")]
    NodeId(String),
    /// The peer secret is too short to resist guessing.
    #[error("the cluster secret has {0} bytes; at least 32 are needed")]
    Secret(usize),
    /// Replica counts out of range.
    #[error("replicas {replicas}, min_replicas {min}: need 1 <= min_replicas <= replicas <= 8")]
    Replicas {
        /// Copies asked for.
        replicas: usize,
        /// Fewest copies accepted.
        min: usize,
    },
}

/// The etcd client URLs of `--cluster etcd://HOST:PORT[,...]`.
pub fn parse_endpoints(s: &str) -> Result<Vec<String>, ConfigError> {
    s.split(',')
        .map(|u| {
            let u = u.trim();
            let rest =
                u.strip_prefix("etcd://").or_else(|| u.strip_prefix("http://")).ok_or(ConfigError::Url(u.into()))?;
            let (host, port) = rest.rsplit_once(':').ok_or(ConfigError::Url(u.into()))?;
            if host.is_empty() || port.parse::<u16>().is_err() || rest.contains('/') {
                return Err(ConfigError::Url(u.into()));
            }
            Ok(format!("http://{rest}"))
        })
        .collect()
}

impl ClusterConfig {
    /// Checks the settings a user gives.
    pub fn validate(&self) -> Result<(), ConfigError> {
        let id_ok = |s: &str| {
            !s.is_empty() && s.len() <= 64 && s.bytes().all(|b| b.is_ascii_alphanumeric() || b"._-".contains(&b))
        };
        if !id_ok(&self.node_id) {
            return Err(ConfigError::NodeId(self.node_id.clone()));
        }
        if !id_ok(&self.name) {
            return Err(ConfigError::NodeId(self.name.clone()));
        }
        if self.secret.len() < 32 {
            return Err(ConfigError::Secret(self.secret.len()));
        }
        if self.min_replicas < 1 || self.min_replicas > self.replicas || self.replicas > 8 {
            return Err(ConfigError::Replicas { replicas: self.replicas, min: self.min_replicas });
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn endpoints_parse_and_refuse() {
        assert_eq!(
            parse_endpoints("etcd://127.0.0.1:2379,etcd://h:1").unwrap(),
            vec!["http://127.0.0.1:2379".to_string(), "http://h:1".into()]
        );
        assert!(parse_endpoints("etcd://h").is_err());
        assert!(parse_endpoints("https://h:1").is_err());
        assert!(parse_endpoints("etcd://h:1/x").is_err());
    }
}
