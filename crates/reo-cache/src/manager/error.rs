//! [`CacheError`]: why the cache could not be opened, or a device command was refused.

use crate::config::ConfigError;

/// Why [`Cache::open`](super::Cache::open) or a device command
/// ([`Cache::fail_device`](super::Cache::fail_device), `replace_device`, `resume_rebuild`) failed.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum CacheError {
    /// The configuration does not suit the store's array.
    #[error(transparent)]
    Config(#[from] ConfigError),
    /// The store's layout is beyond what the index's packed locations can address.
    #[error(
        "store layout ({zones} zones of {zone} bytes) exceeds the cache index's limits ({max_zones} zones of {max_zone_gib} GiB)"
    )]
    Layout {
        /// Zones (bands) of the store.
        zones: u32,
        /// Bytes per zone.
        zone: u64,
        /// Most zones the index can address.
        max_zones: u64,
        /// Largest zone the index can address, GiB.
        max_zone_gib: u64,
    },
    /// The store refused.
    #[error(transparent)]
    Store(#[from] reo_store::Error),
}
