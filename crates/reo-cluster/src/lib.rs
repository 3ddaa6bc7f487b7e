//! Several Reo gateways over one backend, coordinated by etcd (docs/CLUSTER.md).
//!
//! Membership lives in etcd: each node registers under a lease and watches the others
//! ([`membership`], [`view`]). Every object has a home node on a consistent-hash ring over the
//! live members ([`ring`]). Writes go to the home node, which revokes every caching permission
//! it granted on the key before applying the write ([`grants`], [`holdings`]) and replicates an
//! unflushed result to peers before acknowledging it ([`writes`], [`replicas`], kept in the
//! peers' own flash stores: [`replica_medium`]); other nodes serve an object from their cache
//! only while they hold a permission, else fetch it from the home node ([`router`],
//! [`backend`]). A membership change is settled by hand-overs ([`handoff`]); a failed node's
//! unflushed writes are written back from the newest replica ([`failover`]). Peer traffic is authenticated with the cluster's secret ([`auth`], [`peer`],
//! [`peer_api`]). The gateway runs it through its extension seam ([`extension`]).

pub mod answers;
pub mod auth;
pub mod backend;
pub mod config;
pub mod extension;
pub mod failover;
pub mod grants;
pub mod handoff;
pub mod holdings;
pub mod listing;
pub mod membership;
pub mod node;
pub mod peer;
pub mod peer_api;
pub mod reads;
pub mod replica_medium;
pub mod replicas;
pub mod ring;
pub mod router;
pub mod view;
pub mod writes;

pub use config::{ClusterConfig, ConfigError};
pub use extension::ClusterExtension;
