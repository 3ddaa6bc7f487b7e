//! Peer authentication: every request one node sends another (a forwarded write, a replica, a
//! revocation, a failover flush) carries an HMAC-SHA256 over its method, path and query, the
//! sender's id, a timestamp and the SHA-256 of its body, keyed with the cluster's shared secret
//! ([`PeerKey`]). A receiver refuses a request whose MAC does not verify or whose timestamp is
//! more than [`SKEW`] away from its clock. A captured request can be replayed within that
//! window only; every peer operation is idempotent under a replay (versions order replicas;
//! revocations and drops only remove), so the window costs no correctness.
//!
//! A client's forwarded request keeps its own SigV4 signature (the home node verifies it); the
//! MAC only vouches that a member forwarded it, with the body hash `UNSIGNED` (the client's
//! signature covers the body).

use std::time::{Duration, SystemTime, UNIX_EPOCH};

use hmac::{Hmac, KeyInit, Mac};
use sha2::{Digest, Sha256};

/// Largest difference between a peer request's timestamp and the receiver's clock.
pub const SKEW: Duration = Duration::from_secs(60);

/// The sender's node id.
pub const H_NODE: &str = "x-reo-peer";
/// Seconds since the epoch when the request was signed.
pub const H_TIME: &str = "x-reo-peer-time";
/// Hex SHA-256 of the body, or `UNSIGNED`.
pub const H_BODY: &str = "x-reo-peer-body-sha256";
/// The MAC, hex.
pub const H_MAC: &str = "x-reo-peer-mac";

/// The body hash of a forwarded client request.
pub const UNSIGNED: &str = "UNSIGNED";

/// Why a peer request is refused.
#[derive(Debug, thiserror::Error, PartialEq, Eq)]
#[non_exhaustive]
pub enum AuthError {
    /// A peer header is missing or malformed.
    #[error("peer request without a valid {0} header")]
    Missing(&'static str),
    /// The timestamp is too far from this node's clock.
    #[error("peer request signed {0} s away from this node's clock (at most 60 s)")]
    Skew(i64),
    /// The MAC does not verify: not signed with this cluster's secret, or altered.
    #[error("peer request signature does not verify (another cluster's secret, or altered)")]
    Mac,
}

/// The cluster's shared secret.
#[derive(Clone)]
pub struct PeerKey(Vec<u8>);

impl std::fmt::Debug for PeerKey {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("PeerKey(..)")
    }
}

/// Hex SHA-256 of `data`.
pub fn sha256_hex(data: &[u8]) -> String {
    reo_gateway::hex::hex(&Sha256::digest(data))
}

fn now_secs() -> i64 {
    SystemTime::now().duration_since(UNIX_EPOCH).map_or(0, |d| d.as_secs() as i64)
}

impl PeerKey {
    /// A key from the shared secret.
    pub fn new(secret: &[u8]) -> PeerKey {
        PeerKey(secret.to_vec())
    }

    fn mac(&self, method: &str, path_query: &str, node: &str, time: i64, body: &str) -> Hmac<Sha256> {
        let mut m = <Hmac<Sha256> as KeyInit>::new_from_slice(&self.0).expect("HMAC takes any key length");
        for part in [method, path_query, node, &time.to_string(), body] {
            m.update(&(part.len() as u32).to_le_bytes());
            m.update(part.as_bytes());
        }
        m
    }

    /// The peer headers of a request `node` sends: `(name, value)` pairs.
    pub fn sign(&self, method: &str, path_query: &str, node: &str, body_sha256: &str) -> [(&'static str, String); 4] {
        let time = now_secs();
        let mac = reo_gateway::hex::hex(&self.mac(method, path_query, node, time, body_sha256).finalize().into_bytes());
        [(H_NODE, node.to_string()), (H_TIME, time.to_string()), (H_BODY, body_sha256.to_string()), (H_MAC, mac)]
    }

    /// Verifies a request's peer headers; returns the sender's id and the body hash it signed.
    pub fn verify(
        &self,
        method: &str,
        path_query: &str,
        headers: &http::HeaderMap,
    ) -> Result<(String, String), AuthError> {
        let get = |h: &'static str| headers.get(h).and_then(|v| v.to_str().ok()).ok_or(AuthError::Missing(h));
        let (node, time, body, mac) = (get(H_NODE)?, get(H_TIME)?, get(H_BODY)?, get(H_MAC)?);
        let time: i64 = time.parse().map_err(|_| AuthError::Missing(H_TIME))?;
        let off = time - now_secs();
        if off.unsigned_abs() > SKEW.as_secs() {
            return Err(AuthError::Skew(off));
        }
        let mac = reo_gateway::hex::decode(mac).ok_or(AuthError::Missing(H_MAC))?;
        self.mac(method, path_query, node, time, body).verify_slice(&mac).map_err(|_| AuthError::Mac)?;
        Ok((node.to_string(), body.to_string()))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn headers(pairs: &[(&'static str, String)]) -> http::HeaderMap {
        pairs.iter().map(|(k, v)| (http::HeaderName::from_static(k), v.parse().unwrap())).collect()
    }

    #[test]
    fn signed_requests_verify_and_altered_ones_do_not() {
        let k = PeerKey::new(&[7; 32]);
        let h = headers(&k.sign("PUT", "/_reo/peer/replica?a=1", "n1", "abc"));
        assert_eq!(k.verify("PUT", "/_reo/peer/replica?a=1", &h), Ok(("n1".into(), "abc".into())));
        assert_eq!(k.verify("PUT", "/_reo/peer/replica?a=2", &h), Err(AuthError::Mac));
        assert_eq!(k.verify("DELETE", "/_reo/peer/replica?a=1", &h), Err(AuthError::Mac));
        assert_eq!(PeerKey::new(&[8; 32]).verify("PUT", "/_reo/peer/replica?a=1", &h), Err(AuthError::Mac));
        let mut other = h.clone();
        other.insert(H_NODE, "n2".parse().unwrap());
        assert_eq!(k.verify("PUT", "/_reo/peer/replica?a=1", &other), Err(AuthError::Mac));
        let mut old = h.clone();
        old.insert(H_TIME, (now_secs() - 3600).to_string().parse().unwrap());
        assert!(matches!(k.verify("PUT", "/_reo/peer/replica?a=1", &old), Err(AuthError::Skew(_))));
        assert_eq!(k.verify("PUT", "/x", &http::HeaderMap::new()), Err(AuthError::Missing(H_NODE)));
    }
}
