//! Reo's flash array store.
//!
//! Blobs (the cache's unit: a fragment or a deduplicated chunk) are kept on an array of N devices
//! in *bands* (zone `i` of every device), each band opened for one redundancy [`Scheme`] and filled
//! log-style. Every chunk carries a CRC32C bound to the blob and position it belongs to and is
//! verified on every read; bad or missing chunks are rebuilt from copies or Reed-Solomon parity,
//! or the read fails — wrong bytes are never returned. Metadata (a group-committed journal and
//! checkpoints) is replicated on every device, so the store reopens after a crash with every
//! acknowledged write from any surviving devices. A cleaner reclaims bands, asking the layer above
//! per blob whether to move, re-encode or drop it.
//!
//! The on-device format is documented in `docs/ARCHITECTURE.md` and in the module docs of
//! `superblock`, `record`, `persist` and `chunk`.

mod bufpool;
mod bytes;
mod chunk;
mod codec;
mod config;
mod devices;
mod eject;
mod error;
mod gc;
mod geometry;
mod handle;
mod hedge;
#[cfg(test)]
mod hostile_tests;
mod journal;
pub(crate) mod lay_out;
mod location;
mod metalog;
mod persist;
mod progress;
mod read;
mod read_bytes;
mod read_sized;
mod rebuild;
mod rebuild_run;
mod record;
mod recover;
mod replace;
mod resync;
mod room;
mod scan;
mod scheme;
mod scrub;
mod shed;
mod slot;
mod space;
mod stale;
mod stats;
mod store;
mod superblock;
mod write;

/// Bytes at the end of every chunk of a full row that are not blob data (its trailer slot,
/// `chunk.rs`; a blob's short last row has none).
pub use chunk::SLOT as CHUNK_SLOT;
pub use config::{StoreConfig, MAX_CHUNK, MAX_HEADER_LEN, MIN_CHUNK};
pub use error::{Error, Result};
pub use gc::{GcDecision, GcHandler, GcReport, KeepAll, VictimPolicy};
pub use handle::Store;
pub use location::{Location, ROW_BAND};
pub use progress::{ClassProgress, LostFn, PriorityFn, RebuildOptions, RebuildProgress, RebuildState, Restored};
pub use read::{column_bytes, device_read_bytes, MAX_RUN as MAX_READ_RUN};
pub use read_bytes::{PendingRead, ReadBytes};
pub use rebuild_run::MAX_WRITE as REBUILD_MAX_WRITE;
pub use recover::OpenReport;
pub use replace::RebuildHandle;
pub use room::MetadataRoom;
pub use scheme::{Geometry, Placement, Scheme};
pub use scrub::{ScrubOptions, ScrubReport};
pub use space::{BandInfo, SchemeSpace, SpaceReport};
pub use stats::StoreStats;
pub use store::{BlobHealth, Durability, PutOptions};
pub use superblock::{Layout, FLAG_REBUILDING, FORMAT_VERSION};

/// Raw codec entry points, for benchmarks.
pub mod rs {
    pub use crate::codec::{decode, decode_packed, encode, pack, padded, unpack, CODEC_ID};
}
