//! Dedup-aware caching (CacheDedup, FAST'16): the metadata-level interface the cache manager uses
//! when dedup is on, and D-LRU, D-ARC and CD-ARC behind it.
//!
//! # Model
//!
//! The manager owns the bytes and the flash store; a [`DedupPolicy`] only decides. It keeps
//! * **M**, the metadata cache (source index): address ([`Key`], a fragment id) → [`Fingerprint`],
//!   sized in entries (`meta_entries`, ghosts included);
//! * **D**, the data cache (fingerprint store): fingerprint → stored blob, sized in bytes
//!   (`data_bytes`; with unit sizes, in blocks), with reference counts in D-ARC and CD-ARC.
//!
//! A read of `addr` **hits** iff `addr ∈ M` and `M[addr] ∈ D` ([`DedupPolicy::lookup`]). On a miss
//! the manager fetches the fragment, fingerprints it ([`Chunk::of`]) and calls
//! [`DedupPolicy::update`]; a write does the same. The [`DedupOutcome`] says whether the content
//! must be written to flash (only if its fingerprint was not in D: duplicates cost no write) and
//! which fingerprints left D (the manager frees their blobs; in CD-ARC whole WEUs go).
//!
//! * [`DLru`]: two independent LRUs (docs/REFERENCES.md §A2).
//! * [`DArc`]: ARC over addresses plus ghost list B3 and refcounted D; see `darc.rs` for the exact
//!   rules, the bound chosen where the sources differ (T1+T2 vs T1+T2+B3), and our deviations.
//! * [`CdArc`]: D-ARC's metadata over LZ4-compressed chunks packed into 2 MiB write-evict units.
//! * **Dedup off** ([`DedupKind::Off`]): no dedup policy; the manager runs its normal
//!   [`Policy`](crate::Policy) on fragments directly (key = fragment id, size = fragment bytes).
//!   [`new_dedup`] returns `None` for it.

mod darc;
mod dlru;
mod fingerprint;
mod store;
mod table;
#[cfg(test)]
mod tests;
mod weu;

use std::fmt;
use std::str::FromStr;

pub use darc::{CdArc, DArc};
pub use dlru::DLru;
pub use fingerprint::{compress, decompress, Chunk, Fingerprint};
pub use weu::{WeuSlot, WEU_BYTES};

use crate::policy::Key;

/// What [`DedupPolicy::update`] decided. Reset by every call (the buffers keep their capacity).
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct DedupOutcome {
    /// `addr` is now mapped. `false` only if the chunk is larger than the data cache (or a WEU): the
    /// address was then forgotten and nothing must be written.
    pub admitted: bool,
    /// The content was not in D: write `write_bytes` (the fragment, or its compressed form in CD-ARC).
    pub write: bool,
    /// Bytes to write when `write` is set: the fragment size, or the compressed size in CD-ARC.
    pub write_bytes: u32,
    /// CD-ARC: where the compressed chunk goes.
    pub placement: Option<WeuSlot>,
    /// Fingerprints that left D; the caller frees their blobs.
    pub evicted: Vec<Fingerprint>,
    /// CD-ARC: WEUs evicted whole (their fingerprints are also in `evicted`).
    pub evicted_weus: Vec<u32>,
}

impl DedupOutcome {
    /// Clears every field, keeping the buffers' capacity.
    pub fn reset(&mut self) {
        self.admitted = false;
        self.write = false;
        self.write_bytes = 0;
        self.placement = None;
        self.evicted.clear();
        self.evicted_weus.clear();
    }
}

/// A dedup-aware cache policy over metadata (M) and data (D). See the module documentation.
pub trait DedupPolicy: Send {
    /// Short name, as accepted by [`DedupKind::from_str`].
    fn name(&self) -> &'static str;

    /// A read of `addr`: `Some(fp)` is a hit (`addr ∈ M` and `fp ∈ D`) and updates recency (D-ARC
    /// promotes a ghost address whose data is still in D). `None` changes nothing.
    fn lookup(&mut self, addr: Key) -> Option<Fingerprint>;

    /// After a read miss (content fetched) or on a write: binds `addr → chunk.fp`, storing the chunk
    /// in D if absent (evicting as needed). `out` is reset first.
    fn update(&mut self, addr: Key, chunk: &Chunk, out: &mut DedupOutcome);

    /// Forgets `addr` (delete/invalidate), ghost entries included. Its data stays in D until
    /// evicted. Returns whether `addr` was known.
    fn remove(&mut self, addr: Key) -> bool;

    /// `M[addr]`, resident or ghost. Pure query.
    fn mapping(&self, addr: Key) -> Option<Fingerprint>;

    /// Whether `fp ∈ D`. Pure query.
    fn contains_fp(&self, fp: &Fingerprint) -> bool;

    /// Entries in M, ghosts included.
    fn meta_len(&self) -> usize;
    /// M's bound in entries, ghosts included (D-ARC and CD-ARC: 2c + X).
    fn meta_capacity(&self) -> usize;

    /// Fingerprints in D.
    fn data_len(&self) -> usize;
    /// Bytes stored in D (CD-ARC: compressed bytes).
    fn data_bytes(&self) -> u64;
    /// D's capacity in bytes (CD-ARC: whole WEUs).
    fn data_capacity(&self) -> u64;

    /// Heap bytes of M and D's indexes.
    fn memory_bytes(&self) -> usize;

    /// O(n) check of the structures and the policy's invariants.
    fn check_invariants(&self) -> Result<(), String>;
}

/// Dedup configuration.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum DedupKind {
    /// No dedup: the normal replacement policy runs on fragments.
    Off,
    /// `d-lru`: D-LRU, independent LRUs over addresses and content ([`DLru`]).
    DLru,
    /// `d-arc`: D-ARC, ARC over addresses with refcounted content ([`DArc`]).
    DArc,
    /// `cd-arc`: CD-ARC, D-ARC over LZ4-compressed chunks in write-evict units ([`CdArc`]).
    CdArc,
}

impl DedupKind {
    /// Every kind, `Off` first.
    pub const ALL: [DedupKind; 4] = [DedupKind::Off, DedupKind::DLru, DedupKind::DArc, DedupKind::CdArc];

    /// Stable name (`off`, `d-lru`, `d-arc`, `cd-arc`), as parsed by [`FromStr`].
    pub fn as_str(self) -> &'static str {
        match self {
            DedupKind::Off => "off",
            DedupKind::DLru => "d-lru",
            DedupKind::DArc => "d-arc",
            DedupKind::CdArc => "cd-arc",
        }
    }
}

impl fmt::Display for DedupKind {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.pad(self.as_str())
    }
}

/// Error of [`DedupKind::from_str`].
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct UnknownDedup(pub String);

impl fmt::Display for UnknownDedup {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "unknown dedup mode {:?} (expected off, d-lru, d-arc or cd-arc)", self.0)
    }
}

impl std::error::Error for UnknownDedup {}

impl FromStr for DedupKind {
    type Err = UnknownDedup;
    fn from_str(s: &str) -> Result<Self, Self::Err> {
        DedupKind::ALL.into_iter().find(|k| k.as_str() == s).ok_or_else(|| UnknownDedup(s.to_string()))
    }
}

/// A dedup policy with `meta_entries` metadata entries (ghosts included) and `data_bytes` of data
/// cache; `None` for [`DedupKind::Off`]. D-LRU keeps `meta_entries` addresses; D-ARC and CD-ARC use
/// ARC's `c = meta_entries / 2` with X = 0 (AustereCache's default). CD-ARC packs 2 MiB WEUs
/// (`data_bytes / WEU_BYTES` of them, at least one).
pub fn new_dedup(kind: DedupKind, meta_entries: usize, data_bytes: u64) -> Option<Box<dyn DedupPolicy>> {
    let c = (meta_entries / 2).max(1);
    match kind {
        DedupKind::Off => None,
        DedupKind::DLru => Some(Box::new(DLru::new(meta_entries, data_bytes))),
        DedupKind::DArc => Some(Box::new(DArc::new(c, 0, data_bytes))),
        DedupKind::CdArc => Some(Box::new(CdArc::new(c, 0, data_bytes, WEU_BYTES))),
    }
}
