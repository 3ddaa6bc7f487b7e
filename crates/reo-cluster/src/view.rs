//! What a node knows of the cluster from etcd ([`View`]): the live members (each under its
//! lease), the owners (nodes that may hold unflushed writes: registered without a lease, removed
//! only by a graceful leave or a finished failover), each member's hand-off marker, and the
//! failover claims. Everything the routing decides follows from it.

use std::collections::{BTreeMap, BTreeSet};

use serde::{Deserialize, Serialize};
use sha2::{Digest, Sha256};

use crate::ring::Ring;

/// A member's registration (the value of `members/<id>`).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct MemberInfo {
    /// `HOST:PORT` of its S3 listener.
    pub advertise: String,
    /// Random per registration: a node that re-registers after losing its lease is a new
    /// member, so the view changes even if the same ids come back.
    pub incarnation: String,
    /// Bytes of replicas it can still take.
    #[serde(default)]
    pub replica_free: u64,
    /// Replicas it holds for its peers (the degree of replication of the seed's formula).
    #[serde(default)]
    pub replicas_held: u64,
}

/// The cluster as etcd says it is.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct View {
    /// Live members by id.
    pub members: BTreeMap<String, MemberInfo>,
    /// Nodes that may hold unflushed writes.
    pub owners: BTreeSet<String>,
    /// Each member's hand-off marker: the view id it has handed over for.
    pub handoff: BTreeMap<String, String>,
    /// Failover claims: the failed node's id → the claimant's.
    pub claims: BTreeMap<String, String>,
}

impl View {
    /// The id of the membership: a hash of the members' ids and incarnations (their statistics
    /// excluded: they change without changing who is home of what).
    pub fn id(&self) -> String {
        let mut h = Sha256::new();
        for (id, m) in &self.members {
            h.update(id.as_bytes());
            h.update([0]);
            h.update(m.incarnation.as_bytes());
            h.update([0]);
        }
        reo_gateway::hex::hex(&h.finalize()[..8])
    }

    /// The ring over the live members.
    pub fn ring(&self) -> Ring {
        Ring::new(self.members.keys().map(String::as_str))
    }

    /// Owners that are not members: nodes whose unflushed writes await a failover.
    pub fn pending_failover(&self) -> Vec<String> {
        self.owners.iter().filter(|o| !self.members.contains_key(*o)).cloned().collect()
    }

    /// Every member has handed over for this membership and no failover is pending: writes may
    /// proceed (see docs/CLUSTER.md, "Membership changes").
    pub fn settled(&self) -> bool {
        let id = self.id();
        !self.members.is_empty()
            && self.members.keys().all(|m| self.handoff.get(m) == Some(&id))
            && self.pending_failover().is_empty()
    }

    /// Applies one key of the cluster's prefix (`rest` is the key after it); `None`: deleted.
    pub fn apply(&mut self, rest: &str, value: Option<&[u8]>) {
        let Some((kind, id)) = rest.split_once('/') else { return };
        let id = id.to_string();
        match (kind, value) {
            ("members", Some(v)) => {
                if let Ok(m) = serde_json::from_slice(v) {
                    self.members.insert(id, m);
                }
            }
            ("members", None) => {
                self.members.remove(&id);
            }
            ("owners", Some(_)) => {
                self.owners.insert(id);
            }
            ("owners", None) => {
                self.owners.remove(&id);
            }
            ("handoff", Some(v)) => {
                self.handoff.insert(id, String::from_utf8_lossy(v).into_owned());
            }
            ("handoff", None) => {
                self.handoff.remove(&id);
            }
            ("claims", Some(v)) => {
                self.claims.insert(id, String::from_utf8_lossy(v).into_owned());
            }
            ("claims", None) => {
                self.claims.remove(&id);
            }
            _ => {}
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn member(inc: &str) -> Vec<u8> {
        serde_json::to_vec(&MemberInfo {
            advertise: "h:1".into(),
            incarnation: inc.into(),
            replica_free: 0,
            replicas_held: 0,
        })
        .unwrap()
    }

    #[test]
    fn settled_needs_every_marker_and_no_pending_failover() {
        let mut v = View::default();
        assert!(!v.settled());
        v.apply("members/a", Some(&member("1")));
        v.apply("members/b", Some(&member("2")));
        v.apply("owners/a", Some(b""));
        v.apply("owners/b", Some(b""));
        let id = v.id();
        v.apply("handoff/a", Some(id.as_bytes()));
        assert!(!v.settled());
        v.apply("handoff/b", Some(id.as_bytes()));
        assert!(v.settled());
        // b dies: its lease takes its member key and marker; its owner key stays.
        v.apply("members/b", None);
        v.apply("handoff/b", None);
        assert_eq!(v.pending_failover(), vec!["b".to_string()]);
        assert!(!v.settled());
        assert_ne!(v.id(), id);
        v.apply("handoff/a", Some(v.id().as_bytes()));
        assert!(!v.settled(), "b's failover is pending");
        v.apply("owners/b", None);
        assert!(v.settled());
        // b re-registers with a new incarnation: a new membership, not the old one.
        v.apply("members/b", Some(&member("3")));
        assert_ne!(v.id(), id);
    }
}
