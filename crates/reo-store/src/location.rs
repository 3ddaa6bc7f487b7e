//! [`Location`]: where a blob lives, returned by `put` and handed back to `read` and `free`.

use crate::scheme::Scheme;

/// Device index meaning "all devices of the row" (every blob but isolated and narrow ones).
pub const ROW_BAND: u16 = u16::MAX;

/// Sequence numbers the store assigns lie below this bound: one per nanosecond would
/// take 146 years to reach it. A record or checkpoint beyond it is garbage (only a hostile or
/// corrupt device carries one), and keeping it would leave no successor to assign.
pub const SEQ_LIMIT: u64 = 1 << 62;

/// The address of one blob: enough to read it with no lookup (the row geometry is computed from
/// the scheme, the length and the store's layout).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub struct Location {
    /// Unique, increasing blob sequence number; bound into every chunk's checksum.
    pub seq: u64,
    /// Band (zone index on every device).
    pub band: u32,
    /// First 4 KiB sector of the blob within its zone.
    pub start: u32,
    /// The device holding the blob for isolated placement; a narrow blob's first column in the
    /// row it shares (`geometry.rs`); else [`ROW_BAND`].
    pub device: u16,
    /// Redundancy scheme.
    pub scheme: Scheme,
    /// Length of the blob's data in bytes.
    pub len: u64,
}
