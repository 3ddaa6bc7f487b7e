//! The JSON answers of `/_reo/admin/...` as types: the server builds its answers from them and
//! `reo admin` parses them back, so a field renamed on one side fails to compile on the other
//! instead of showing as `?` in the CLI. The wire format is what it was as hand-built JSON
//! (scripts and the end-to-end tests read it): field names, `null` for an absent rebuild, the
//! per-device I/O counters as an object (empty when a device has none yet).

use std::collections::BTreeMap;

use serde::{Deserialize, Serialize};

pub use crate::gateway::outage::HealthReport;
pub use crate::gateway::stuck::{StuckBucket, StuckReport};
use crate::users::{Role, Scope, User};

/// `GET /_reo/admin/status`: the server's state as `reo admin status` shows it.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct Status {
    /// Every device of the array, in order.
    pub devices: Vec<DeviceStatus>,
    /// The array's I/O since start.
    pub io: StoreIo,
    /// Bands and bytes.
    pub space: Space,
    /// The cache's occupancy and hit ratio.
    pub cache: CacheStatus,
    /// Objects written but not yet flushed to the backend.
    pub dirty_objects: u64,
    /// Their bytes.
    pub dirty_bytes: u64,
    /// Age in seconds of the oldest unflushed write.
    pub flush_lag_seconds: f64,
    /// The backend's state.
    pub backend: HealthReport,
    /// Objects that cannot be flushed for now (their bucket is missing in the backend).
    pub stuck: StuckReport,
    /// The running rebuild, or the last one started through the API; `null` if none.
    pub rebuild: Option<Rebuild>,
    /// Whether a rebuild runs (or is paused).
    pub rebuilding: bool,
    /// Unflushed objects lost since start (a device failed under them).
    pub data_loss_events: u64,
    /// Hints in force.
    pub hints: u64,
}

/// One device in [`Status`].
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct DeviceStatus {
    /// Its number in the array.
    pub device: usize,
    /// `healthy`, `failed` or `rebuilding`.
    pub health: String,
    /// Its I/O counters by name ([`crate::device_io::FIELDS`]); empty if it has none yet.
    pub io: BTreeMap<String, u64>,
}

impl DeviceStatus {
    /// The counter `name` (0 if absent).
    pub fn count(&self, name: &str) -> u64 {
        self.io.get(name).copied().unwrap_or(0)
    }
}

/// The array's I/O in [`Status`].
#[derive(Debug, Clone, Serialize, Deserialize)]
#[allow(missing_docs)] // the store's counters of the same names
pub struct StoreIo {
    pub reads: u64,
    pub read_bytes: u64,
    pub puts: u64,
    pub put_bytes: u64,
    pub degraded_reads: u64,
    pub read_errors: u64,
    pub write_errors: u64,
    pub checksum_errors: u64,
    pub slow_reads: u64,
    pub ejections: u64,
}

/// Space in [`Status`].
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct Space {
    /// Bytes of objects the array can hold.
    pub capacity: u64,
    /// Bands not in use.
    pub free_bands: u64,
    /// All bands.
    pub total_bands: u64,
    /// Bands and bytes per redundancy scheme in use.
    pub per_scheme: Vec<SchemeSpace>,
}

/// One scheme's space in [`Space`].
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct SchemeSpace {
    /// The scheme, e.g. `rs(4,2)`.
    pub scheme: String,
    /// Bands written with it.
    pub bands: u64,
    /// Live object bytes in them.
    pub live_bytes: u64,
    /// Device bytes those live bytes take (data and parity).
    pub live_device_bytes: u64,
    /// Device bytes of its bands, live or not.
    pub used_device_bytes: u64,
}

/// The cache in [`Status`].
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct CacheStatus {
    /// Objects cached.
    pub objects: u64,
    /// Their bytes.
    pub bytes: u64,
    /// The cache's capacity in bytes.
    pub capacity: u64,
    /// Lookups since start.
    pub requests: u64,
    /// Lookups that hit.
    pub hits: u64,
    /// hits / requests (0 without requests).
    pub hit_ratio: f64,
    /// Of `hits`, those the memory tier served (no device read).
    #[serde(default)]
    pub memory_hits: u64,
}

/// A rebuild's progress in [`Status`].
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct Rebuild {
    /// The device rebuilt.
    pub device: usize,
    /// `running`, `paused`, `done` or `aborted: <why>`.
    pub state: String,
    /// Blobs rebuilt so far.
    pub blobs_done: u64,
    /// Blobs to rebuild.
    pub blobs_total: u64,
    /// Bytes rebuilt so far.
    pub bytes_done: u64,
    /// Bytes to rebuild.
    pub bytes_total: u64,
}

impl Rebuild {
    /// Whether the rebuild still goes on (running or paused).
    pub fn ongoing(&self) -> bool {
        self.state == "running" || self.state == "paused"
    }
}

/// `POST /_reo/admin/flush`: what was dirty when the flusher was woken.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct Flushing {
    /// Unflushed objects.
    pub dirty_objects: u64,
    /// Their bytes.
    pub dirty_bytes: u64,
    /// The backend's state.
    pub backend: HealthReport,
}

/// `POST /_reo/admin/scrub`: the scrub's outcome (it runs within the request).
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct Scrubbed {
    /// Blobs verified.
    pub blobs: u64,
    /// Chunks whose checksum was verified.
    pub chunks_verified: u64,
    /// Chunks found bad.
    pub chunks_bad: u64,
    /// Bad chunks rewritten from redundancy.
    pub chunks_repaired: u64,
    /// Chunks not verified (on a failed device).
    pub chunks_skipped: u64,
    /// Bytes read.
    pub bytes_read: u64,
    /// Blobs redundancy could not repair.
    pub unrecoverable: u64,
    /// Blobs a rebuild had left off a device, restored onto it.
    pub blobs_restored: u64,
}

/// `POST /_reo/admin/device/fail`: the device's fragments by what their objects lost.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct DeviceFailed {
    /// The device failed.
    pub device: usize,
    /// Fragments whose objects keep full redundancy.
    pub healthy_fragments: u64,
    /// Fragments whose objects are now served degraded.
    pub degraded_fragments: u64,
    /// Fragments of clean objects lost (refetched from the backend).
    pub lost_clean_fragments: u64,
    /// Fragments of unflushed objects lost.
    pub lost_dirty_fragments: u64,
}

/// `POST /_reo/admin/device/replace`: the rebuild has started.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct DeviceReplaced {
    /// The device replaced.
    pub device: usize,
    /// The replacement's path on the server.
    pub path: String,
    /// `started`.
    pub rebuild: String,
    /// The rebuild's bandwidth cap, bytes per second (`null`: none).
    pub rate_bps: Option<u64>,
}

/// `GET /_reo/admin/users`.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct UserList {
    /// Every user (no secrets).
    pub users: Vec<User>,
}

/// `POST /_reo/admin/users` and `.../rotate`: a user's key pair, the only time the secret is
/// shown.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct UserKeys {
    /// The user's name.
    pub name: String,
    /// Its role.
    pub role: Role,
    /// Its scopes (empty: every bucket).
    pub scopes: Vec<Scope>,
    /// Its access key.
    pub access_key: String,
    /// Its secret key.
    pub secret_key: String,
}

/// `DELETE /_reo/admin/users/{name}`.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct UserRemoved {
    /// The user removed.
    pub removed: String,
}

/// Any refusal of the API (4xx/5xx).
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct ApiError {
    /// What went wrong.
    pub error: String,
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A status with no rebuild has `"rebuild": null` and parses back.
    #[test]
    fn status_round_trips() {
        let s = Status {
            devices: vec![DeviceStatus { device: 0, health: "healthy".into(), io: BTreeMap::new() }],
            io: StoreIo {
                reads: 1,
                read_bytes: 2,
                puts: 3,
                put_bytes: 4,
                degraded_reads: 0,
                read_errors: 0,
                write_errors: 0,
                checksum_errors: 0,
                slow_reads: 0,
                ejections: 0,
            },
            space: Space { capacity: 10, free_bands: 1, total_bands: 2, per_scheme: Vec::new() },
            cache: CacheStatus {
                objects: 0,
                bytes: 0,
                capacity: 5,
                requests: 0,
                hits: 0,
                hit_ratio: 0.0,
                memory_hits: 0,
            },
            dirty_objects: 0,
            dirty_bytes: 0,
            flush_lag_seconds: 0.0,
            backend: HealthReport {
                up: true,
                reachable: true,
                down_seconds: 0.0,
                failures: 0,
                last_error: None,
                slowdown_after_seconds: 60.0,
                slowing_down: false,
            },
            stuck: StuckReport::default(),
            rebuild: None,
            rebuilding: false,
            data_loss_events: 0,
            hints: 0,
        };
        let v = serde_json::to_value(&s).unwrap();
        assert!(v["rebuild"].is_null() && v["devices"][0]["io"].as_object().unwrap().is_empty(), "{v}");
        let back: Status = serde_json::from_value(v).unwrap();
        assert_eq!(back.space.total_bands, 2);
    }
}
