//! Bands: zone `i` of every device, opened for one scheme and filled log-style.
//!
//! A band tracks its write cursor (one per device for isolated placement, where each device's
//! zone is its own log), the live blobs it holds, and live/used space for the cleaner.

use crate::bytes::{Reader, Writer};
use crate::geometry::SECTOR;
use crate::location::Location;
use crate::record::PUT_RECORD_FIXED;
use crate::scheme::Scheme;
use std::collections::HashMap;
use std::hash::{BuildHasherDefault, Hasher};

/// Hasher of the live maps' keys, sequence numbers: unique integers the store assigns, not
/// chosen by clients, so one multiply (Fibonacci hashing, good high bits for the table's
/// control bytes) replaces SipHash. Restart inserts every live blob, and this is its hot loop.
#[derive(Default, Clone, Copy)]
pub struct SeqHasher(u64);

impl Hasher for SeqHasher {
    #[inline]
    fn finish(&self) -> u64 {
        self.0
    }

    #[inline]
    fn write(&mut self, bytes: &[u8]) {
        for &b in bytes {
            self.0 = (self.0.rotate_left(8) ^ u64::from(b)).wrapping_mul(0x9E37_79B9_7F4A_7C15);
        }
    }

    #[inline]
    fn write_u64(&mut self, n: u64) {
        self.0 = (self.0 ^ n).wrapping_mul(0x9E37_79B9_7F4A_7C15);
    }
}

/// A band's live blobs by sequence number.
pub type LiveMap = HashMap<u64, Entry, BuildHasherDefault<SeqHasher>>;

/// Life cycle of a band.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum BandState {
    /// Empty, ready to be opened.
    Free,
    /// Taking new blobs of its scheme.
    Open,
    /// Full (or closed by a restart); only frees and the cleaner change it.
    Sealed,
}

/// A live blob in a band: its location, header and the checksums of its short last row's
/// chunks (`chunk.rs`), kept in one allocation (a live map holds millions of small blobs).
#[derive(Debug, Clone)]
pub struct Entry {
    pub loc: Location,
    /// The header, then each tail checksum as 4 little-endian bytes.
    meta: Box<[u8]>,
    header_len: u32,
}

impl Entry {
    /// The entry of the blob at `loc` with `header` and tail checksums `tail`.
    pub fn new(loc: Location, header: &[u8], tail: &[u32]) -> Entry {
        let mut meta = Vec::with_capacity(header.len() + 4 * tail.len());
        meta.extend_from_slice(header);
        for c in tail {
            meta.extend_from_slice(&c.to_le_bytes());
        }
        Entry { loc, meta: meta.into_boxed_slice(), header_len: header.len() as u32 }
    }

    /// Bytes of the blob's put record in a checkpoint ([`Record::encode_put`]).
    #[inline]
    pub fn record_len(&self) -> u64 {
        (PUT_RECORD_FIXED + self.meta.len()) as u64
    }

    /// The blob's header.
    #[inline]
    pub fn header(&self) -> &[u8] {
        &self.meta[..self.header_len as usize]
    }

    /// The checksums of the short last row's chunks (stripe × width + column).
    pub fn tail(&self) -> Vec<u32> {
        let crcs = self.meta[self.header_len as usize..].chunks_exact(4);
        crcs.map(|b| u32::from_le_bytes(b.try_into().expect("4 bytes"))).collect()
    }
}

/// State of one band.
#[derive(Debug)]
pub struct Band {
    pub(super) state: BandState,
    pub(super) scheme: Option<Scheme>,
    /// Sectors used: one cursor for row bands, one per device for isolated bands.
    pub(super) cursor: Vec<u64>,
    pub(super) live: LiveMap,
    /// Sum of live blob lengths.
    pub(super) live_bytes: u64,
    /// Device bytes held by live blobs (all columns of their rows, or their one device).
    pub(super) live_phys: u64,
    /// Of `live_bytes` and `live_phys`: isolated blobs in a row band, the copies a replicated
    /// blob kept of itself when it shed the others (`shed.rs`), reported under their own scheme.
    pub(super) shed_bytes: u64,
    pub(super) shed_phys: u64,
    /// Bytes of the live blobs' put records ([`Entry::record_len`]): the band's share of a
    /// checkpoint.
    pub(super) record_bytes: u64,
    /// Highest sequence number written into the band (its age for cost-benefit cleaning).
    pub(super) last_write: u64,
    /// Puts that reserved space here and have not yet recorded their blob: the cleaner must not
    /// take the band until they land.
    pub(super) inflight: u32,
    /// The cleaner is taking the band: no blob may enter it (a shed copy would make the band
    /// non-empty once its blobs are moved out).
    pub(super) cleaning: bool,
    /// Rows narrow blobs share (`geometry.rs`), at most one open per height: (height in sectors,
    /// start sector, next free column). Not persisted: after a restart the cursor is past them.
    shared: Vec<(u64, u64, usize)>,
}

impl Band {
    /// A free band.
    pub fn new() -> Band {
        Band {
            state: BandState::Free,
            scheme: None,
            cursor: Vec::new(),
            live: LiveMap::default(),
            live_bytes: 0,
            live_phys: 0,
            shed_bytes: 0,
            shed_phys: 0,
            record_bytes: 0,
            last_write: 0,
            inflight: 0,
            cleaning: false,
            shared: Vec::new(),
        }
    }

    /// Opens a free band for `scheme` over `devices` devices.
    #[inline]
    pub fn open(&mut self, scheme: Scheme, devices: usize) {
        let cursors = if scheme.is_isolated() { devices } else { 1 };
        *self = Band::new();
        self.state = BandState::Open;
        self.scheme = Some(scheme);
        self.cursor = vec![0; cursors];
    }

    /// Room in a row band for a narrow blob `sectors` tall using `columns` of the row's
    /// `devices`: the next free columns of the open shared row of that height, else a new row at
    /// the cursor (which becomes the open shared row of its height). Returns (start sector,
    /// first column), or `None` when the zone (`zone` sectors) has no room.
    pub fn place_narrow(&mut self, sectors: u64, columns: usize, devices: usize, zone: u64) -> Option<(u64, usize)> {
        if let Some(row) = self.shared.iter_mut().find(|r| r.0 == sectors && r.2 + columns <= devices) {
            let at = (row.1, row.2);
            row.2 += columns;
            return Some(at);
        }
        let start = self.cursor[0];
        if start + sectors > zone {
            return None;
        }
        self.cursor[0] += sectors;
        self.shared.retain(|r| r.0 != sectors);
        self.shared.push((sectors, start, columns));
        Some((start, 0))
    }

    /// Device bytes a blob of `sectors` sectors over `columns` device columns occupies.
    #[inline]
    pub fn phys(columns: usize, sectors: u64) -> u64 {
        sectors * SECTOR * columns as u64
    }

    /// Device bytes written so far (live or dead).
    #[inline]
    pub fn used_phys(&self, devices: usize) -> u64 {
        match self.scheme {
            Some(s) if s.is_isolated() => self.cursor.iter().sum::<u64>() * SECTOR,
            Some(_) => self.cursor.first().copied().unwrap_or(0) * SECTOR * devices as u64,
            None => 0,
        }
    }

    /// Is the blob at `loc` a shed copy: isolated, in a row band?
    #[inline]
    fn is_shed(&self, loc: &Location) -> bool {
        loc.scheme.is_isolated() && self.scheme.is_some_and(|s| !s.is_isolated())
    }

    /// Records a live blob occupying `phys` device bytes.
    #[inline]
    pub fn insert(&mut self, e: Entry, phys: u64) {
        let loc = e.loc;
        self.live_bytes += loc.len;
        self.live_phys += phys;
        if self.is_shed(&loc) {
            self.shed_bytes += loc.len;
            self.shed_phys += phys;
        }
        self.last_write = self.last_write.max(loc.seq);
        self.record_bytes += e.record_len();
        if let Some(old) = self.live.insert(loc.seq, e) {
            self.record_bytes -= old.record_len();
        }
    }

    /// Forgets a live blob (`phys_of` its device bytes); returns it if it was live.
    #[inline]
    pub fn remove(&mut self, seq: u64, phys_of: impl Fn(&Location) -> u64) -> Option<Entry> {
        let e = self.live.remove(&seq)?;
        let phys = phys_of(&e.loc);
        self.record_bytes -= e.record_len();
        self.live_bytes -= e.loc.len;
        self.live_phys -= phys;
        if self.is_shed(&e.loc) {
            self.shed_bytes -= e.loc.len;
            self.shed_phys -= phys;
        }
        Some(e)
    }

    /// Encodes the band's checkpoint entry: `state u8 | scheme [u8;3] | cursors u8 | cursor u64 ×
    /// cursors`.
    pub fn encode_entry(&self, w: &mut Writer) {
        let state = match self.state {
            BandState::Free => 0,
            BandState::Open => 1,
            BandState::Sealed => 2,
        };
        w.u8(state).bytes(&self.scheme.map(|s| s.encode()).unwrap_or([0; 3])).u8(self.cursor.len() as u8);
        for c in &self.cursor {
            w.u64(*c);
        }
    }

    /// Decodes a checkpoint entry ([`Band::encode_entry`]) of a store of `devices` devices: (state,
    /// scheme, cursors); `None` if malformed.
    pub fn decode_entry(r: &mut Reader, devices: usize) -> Option<(BandState, Option<Scheme>, Vec<u64>)> {
        let state = match r.u8()? {
            0 => BandState::Free,
            1 => BandState::Open,
            2 => BandState::Sealed,
            _ => return None,
        };
        let s = r.take(3)?;
        let scheme = Scheme::decode([s[0], s[1], s[2]]);
        let nc = r.u8()? as usize;
        if nc > devices {
            return None;
        }
        let mut cursors = Vec::with_capacity(nc);
        for _ in 0..nc {
            cursors.push(r.u64()?);
        }
        Some((state, scheme, cursors))
    }

    /// Extends the cursor to cover a blob at `start` of `sectors` (replay of a put record): its
    /// device's cursor in an isolated band, the band's one cursor in a row band (a shed copy
    /// there included).
    #[inline]
    pub fn cover(&mut self, loc: &Location, sectors: u64) {
        let i = if self.scheme.is_some_and(|s| s.is_isolated()) { loc.device as usize } else { 0 };
        if let Some(c) = self.cursor.get_mut(i) {
            *c = (*c).max(u64::from(loc.start) + sectors);
        }
        self.last_write = self.last_write.max(loc.seq);
    }
}

impl Default for Band {
    #[inline]
    fn default() -> Self {
        Band::new()
    }
}
