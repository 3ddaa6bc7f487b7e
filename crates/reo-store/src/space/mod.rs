//! [`Space`]: the store's bands (`band.rs`, this component's own part: only this file touches a
//! band's fields) — the live blobs each holds and its space —, their
//! allocation (the open band of each scheme, the free bands), the sequence numbers of puts, and
//! the cleaner's lock.
//!
//! Locks owned: one `RwLock` per band and the allocation mutex, both taken only inside the methods
//! here (allocation holds the allocation lock, then the band it allocates in, and opens a free
//! band while holding the full one; everything else one band lock at a time, never held on
//! return); and the cleaner's lock ([`Space::lock_cleaner`]), at the top of the store's lock
//! order. Methods that change which blobs are live take the metadata log's [`Mutation`] (the
//! gate, held while their journal records are queued), and the checkpoint's encoding takes its
//! [`Frozen`] (the gate, exclusive): see `metalog.rs`. A sequence number is taken under the put
//! fence ([`PutFence`]).

mod band;

use crate::bytes::Writer;
use crate::error::{Error, Result};
use crate::geometry::{Shape, SECTOR};
use crate::location::{Location, ROW_BAND, SEQ_LIMIT};
use crate::metalog::{Frozen, Mutation, PutFence, PutsFenced};
use crate::record::{Record, PUT_RECORD_FIXED};
use crate::scheme::{Placement, Scheme};
use crate::superblock::Layout;
pub(crate) use band::{Band, BandState, Entry, SeqHasher};
use parking_lot::{Mutex, MutexGuard, RwLock};
use reo_media::IoPool;
use std::collections::{HashMap, HashSet, VecDeque};
use std::hash::BuildHasherDefault;
use std::sync::atomic::{AtomicU64, Ordering};

/// Free bands only the cleaner may open (one per scheme it may move into at once, plus one).
pub const GC_RESERVE: usize = 2;

/// Groups of bands a checkpoint snapshot encodes in parallel (on the I/O pool's threads).
const SNAPSHOT_GROUPS: usize = 8;

/// Space held by one scheme.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct SchemeSpace {
    /// Bands (open or sealed) holding the scheme's blobs.
    pub bands: usize,
    /// User bytes of live blobs.
    pub live_bytes: u64,
    /// Device bytes held by live blobs (with redundancy and padding).
    pub live_device_bytes: u64,
    /// Device bytes written in its bands (live + dead).
    pub used_device_bytes: u64,
}

/// Space report.
#[derive(Debug, Clone, Default)]
pub struct SpaceReport {
    /// Device bytes of all zones of all devices.
    pub capacity: u64,
    /// Free bands (no scheme assigned), the cleaner's reserve of `GC_RESERVE` bands included.
    pub free_bands: usize,
    /// Bands of the store (zones per device).
    pub total_bands: usize,
    /// Space held by each scheme in use, sorted by the scheme's name.
    pub per_scheme: Vec<(Scheme, SchemeSpace)>,
}

/// One band's state and space, for operators and the cleaner's callers.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct BandInfo {
    /// The band's index (its zone on every device).
    pub band: u32,
    /// "free", "open" or "sealed".
    pub state: &'static str,
    /// The scheme the band was opened for; `None` while free.
    pub scheme: Option<Scheme>,
    /// Live blobs in the band.
    pub live_blobs: usize,
    /// User bytes of its live blobs.
    pub live_bytes: u64,
    /// Device bytes held by its live blobs (with redundancy and padding).
    pub live_device_bytes: u64,
    /// Device bytes written in the band (live + dead), over all devices.
    pub used_device_bytes: u64,
    /// Device bytes not yet written (the band's capacity minus used).
    pub free_device_bytes: u64,
}

/// Could the isolated blob at `loc`, found in a band of `band_scheme`, be a shed copy
/// (`shed.rs`)? The replay's check of a record from the device: a replicated band and one row.
fn is_shed_copy(band_scheme: Scheme, loc: &Location, shape: &Shape) -> bool {
    matches!(band_scheme, Scheme::Replicate(_)) && loc.scheme.is_isolated() && loc.len > 0 && shape.row_count() == 1
}

/// What [`Space::shed`] did.
pub(crate) enum Shed {
    /// Done: the kept copy's checksums.
    Done(Vec<u32>),
    /// No blob is live at the location.
    NotLive,
    /// Not now: its band is being cleaned (or the record does not fit).
    Refused,
}

/// A sealed band the cleaner may take, as its victim policy weighs it.
pub(crate) struct Candidate {
    /// Device bytes held by live blobs.
    pub live: u64,
    /// Device bytes written (live + dead).
    pub used: u64,
    /// Highest sequence number written into the band.
    pub last_write: u64,
}

/// Allocation state: the open band of each scheme and the free bands.
#[derive(Default)]
struct Alloc {
    // A handful of schemes, looked up on every put: a multiply hash, not SipHash.
    open: HashMap<Scheme, u32, BuildHasherDefault<SeqHasher>>,
    free: VecDeque<u32>,
}

/// The bands and their allocation (see the module doc).
pub(crate) struct Space {
    bands: Vec<RwLock<Band>>,
    alloc: Mutex<Alloc>,
    next_seq: AtomicU64,
    /// Bytes of the live blobs' put records, the bulk of a checkpoint: the sum of the bands'
    /// `record_bytes`, kept by the methods that change them at run time and recounted at open
    /// ([`Space::settle`]).
    records: AtomicU64,
    /// Serialises cleaners, and keeps bands from being reset and reused while held (see the lock
    /// order in `store.rs`).
    cleaner: Mutex<()>,
    devices: usize,
    chunk: usize,
    /// Bytes of a band on one device.
    zone: u64,
}

/// The cleaner's lock, held ([`Space::lock_cleaner`]).
pub(crate) struct CleanerLock<'a> {
    _held: MutexGuard<'a, ()>,
}

impl Space {
    /// The bands of `layout`, all free and none on the free list yet ([`Space::settle`]).
    pub fn new(layout: &Layout) -> Space {
        Space {
            bands: (0..layout.zones).map(|_| RwLock::new(Band::new())).collect(),
            alloc: Mutex::new(Alloc::default()),
            next_seq: AtomicU64::new(1),
            records: AtomicU64::new(0),
            cleaner: Mutex::new(()),
            devices: layout.devices as usize,
            chunk: layout.chunk as usize,
            zone: layout.zone,
        }
    }

    #[inline]
    fn sectors(&self, loc: &Location) -> u64 {
        Shape::of(loc, self.devices, self.chunk).sectors()
    }

    /// Device bytes the blob at `loc` occupies.
    fn phys(&self, loc: &Location) -> u64 {
        let shape = Shape::of(loc, self.devices, self.chunk);
        Band::phys(shape.columns(), shape.sectors())
    }

    #[inline]
    fn zone_sectors(&self) -> u64 {
        self.zone / SECTOR
    }

    /// `f` of the write-locked band `b`, keeping [`Space::record_bytes`] current with what it
    /// changed.
    #[inline]
    fn tracked<R>(&self, b: &mut Band, f: impl FnOnce(&mut Band) -> R) -> R {
        let before = b.record_bytes;
        let r = f(b);
        // Wrapping: a shrinking band adds the two's complement of what it lost.
        self.records.fetch_add(b.record_bytes.wrapping_sub(before), Ordering::Relaxed);
        r
    }

    /// Bytes of the live blobs' put records in a checkpoint.
    #[inline]
    pub fn record_bytes(&self) -> u64 {
        self.records.load(Ordering::Relaxed)
    }

    /// Takes the cleaner's lock: no band is reset and reused while it is held.
    #[inline]
    pub fn lock_cleaner(&self) -> CleanerLock<'_> {
        CleanerLock { _held: self.cleaner.lock() }
    }

    #[inline]
    pub fn band_count(&self) -> usize {
        self.bands.len()
    }

    /// Is `loc` a live blob?
    #[inline]
    pub fn is_live(&self, loc: &Location) -> bool {
        self.bands.get(loc.band as usize).is_some_and(|b| b.read().live.get(&loc.seq).is_some_and(|e| e.loc == *loc))
    }

    /// The header of the live blob at `loc`.
    #[inline]
    pub fn header(&self, loc: &Location) -> Option<Vec<u8>> {
        let b = self.bands.get(loc.band as usize)?.read();
        b.live.get(&loc.seq).filter(|e| e.loc == *loc).map(|e| e.header().to_vec())
    }

    /// `f` of the header of the live blob at `loc`; `false` if none is live there.
    #[inline]
    pub fn header_is(&self, loc: &Location, f: impl FnOnce(&[u8]) -> bool) -> bool {
        let Some(b) = self.bands.get(loc.band as usize) else { return false };
        b.read().live.get(&loc.seq).filter(|e| e.loc == *loc).is_some_and(|e| f(e.header()))
    }

    /// The recorded checksums of the chunks of the short last row of the live blob at `loc`
    /// (stripe × width + column); `None` if no such blob is live (freed or moved).
    #[inline]
    pub fn tail_crcs(&self, loc: &Location) -> Option<Vec<u32>> {
        let b = self.bands.get(loc.band as usize)?.read();
        b.live.get(&loc.seq).filter(|e| e.loc == *loc).map(|e| e.tail())
    }

    /// The locations of the live blobs among `seqs` (a few: a scan of every band's map).
    pub fn locations_of(&self, seqs: &HashSet<u64>) -> HashMap<u64, Location> {
        let mut out = HashMap::new();
        for b in &self.bands {
            let b = b.read();
            out.extend(seqs.iter().filter_map(|s| b.live.get(s)).map(|e| (e.loc.seq, e.loc)));
        }
        out
    }

    /// Every live blob with its header, in sequence order.
    pub fn blobs(&self) -> Vec<(Location, Vec<u8>)> {
        let mut out = Vec::new();
        for b in &self.bands {
            let b = b.read();
            out.extend(b.live.values().map(|e| (e.loc, e.header().to_vec())));
        }
        out.sort_by_key(|(l, _)| l.seq);
        out
    }

    /// Number of live blobs.
    #[inline]
    pub fn blob_count(&self) -> usize {
        self.bands.iter().map(|b| b.read().live.len()).sum()
    }

    /// Bands on the free list.
    #[inline]
    pub fn free_bands(&self) -> usize {
        self.alloc.lock().free.len()
    }

    /// Live, used and free space, per scheme.
    pub fn report(&self) -> SpaceReport {
        let n = self.devices;
        let mut per: HashMap<Scheme, SchemeSpace> = HashMap::new();
        let mut free = 0;
        for b in &self.bands {
            let b = b.read();
            match (b.state, b.scheme) {
                (BandState::Free, _) | (_, None) => free += 1,
                (_, Some(s)) => {
                    let e = per.entry(s).or_default();
                    e.bands += 1;
                    e.live_bytes += b.live_bytes - b.shed_bytes;
                    e.live_device_bytes += b.live_phys - b.shed_phys;
                    e.used_device_bytes += b.used_phys(n);
                    if b.shed_phys > 0 {
                        // Shed copies are isolated blobs, wherever they were written.
                        let iso = per.entry(Scheme::None(Placement::Isolated)).or_default();
                        iso.live_bytes += b.shed_bytes;
                        iso.live_device_bytes += b.shed_phys;
                    }
                }
            }
        }
        let mut per_scheme: Vec<_> = per.into_iter().collect();
        per_scheme.sort_by_key(|(s, _)| s.to_string());
        SpaceReport {
            capacity: self.zone * self.bands.len() as u64 * n as u64,
            free_bands: free,
            total_bands: self.bands.len(),
            per_scheme,
        }
    }

    /// Per-band state and space.
    pub fn band_infos(&self) -> Vec<BandInfo> {
        let n = self.devices;
        let cap = self.zone * n as u64;
        self.bands
            .iter()
            .enumerate()
            .map(|(i, b)| {
                let b = b.read();
                let used = b.used_phys(n);
                BandInfo {
                    band: i as u32,
                    state: match b.state {
                        BandState::Free => "free",
                        BandState::Open => "open",
                        BandState::Sealed => "sealed",
                    },
                    scheme: b.scheme,
                    live_blobs: b.live.len(),
                    live_bytes: b.live_bytes,
                    live_device_bytes: b.live_phys,
                    used_device_bytes: used,
                    free_device_bytes: cap.saturating_sub(used),
                }
            })
            .collect()
    }

    /// The live blobs of `band` (in no order), and the device bytes written in it.
    #[inline]
    pub fn contents(&self, band: u32) -> (Vec<Entry>, u64) {
        let b = self.bands[band as usize].read();
        (b.live.values().cloned().collect(), b.used_phys(self.devices))
    }

    /// The sealed band without puts in flight that `score` rates highest.
    pub fn best_sealed(&self, score: impl Fn(&Candidate) -> f64) -> Option<u32> {
        let mut best: Option<(f64, u32)> = None;
        for (i, b) in self.bands.iter().enumerate() {
            let b = b.read();
            if b.state != BandState::Sealed || b.inflight > 0 {
                continue;
            }
            let s = score(&Candidate { live: b.live_phys, used: b.used_phys(self.devices), last_write: b.last_write });
            if best.is_none_or(|(bs, _)| s > bs) {
                best = Some((s, i as u32));
            }
        }
        best.map(|(_, i)| i)
    }

    /// The next sequence number to be taken (the age of the store, for the cleaner).
    #[inline]
    pub fn next_seq(&self) -> u64 {
        self.next_seq.load(Ordering::Acquire)
    }

    /// Takes a put's sequence number, under the put fence.
    #[inline]
    pub fn take_seq(&self, _fence: &PutFence) -> u64 {
        self.next_seq.fetch_add(1, Ordering::AcqRel)
    }

    /// The next sequence number while no put holds one unrecorded: every blob below it is
    /// recorded, every later one is not taken yet.
    #[inline]
    pub fn seq_boundary(&self, _fenced: &PutsFenced) -> u64 {
        self.next_seq.load(Ordering::SeqCst)
    }

    /// Sets the next sequence number (open).
    #[inline]
    pub fn set_next_seq(&self, seq: u64) {
        self.next_seq.store(seq, Ordering::Release);
    }

    /// Reserves room for a blob of `shape` in the open band of `scheme`; returns (band, start
    /// sector, device), the device being `key`'s (or the next one with room) for isolated
    /// placement, skipping devices `failed` says are failed; for a narrow blob, the first of
    /// its columns in a row it shares (`Band::place_narrow`). User puts leave [`GC_RESERVE`] free bands for the
    /// cleaner (`gc`), which needs room to move into. The reservation ends with
    /// [`Space::land`] or [`Space::release`].
    pub fn allocate(
        &self,
        _fence: &PutFence,
        scheme: Scheme,
        shape: &Shape,
        key: u64,
        gc: bool,
        failed: impl Fn(usize) -> bool,
    ) -> Result<(u32, u64, u16)> {
        let (sectors, narrow) = (shape.sectors(), shape.narrow.then(|| shape.columns()));
        let n = self.devices;
        let zone = self.zone_sectors();
        let mut alloc = self.alloc.lock();
        loop {
            if let Some(&band) = alloc.open.get(&scheme) {
                let mut b = self.bands[band as usize].write();
                if scheme.is_isolated() {
                    // The key's device, else the next healthy one with room: a band is sealed
                    // only when no column has room, not when the key's column is full (which
                    // would leave the other devices' columns mostly empty). A spilled blob
                    // still lives wholly on one device; only an object's blobs may then span two.
                    let first = (key % n as u64) as usize;
                    if let Some(d) =
                        (0..n).map(|i| (first + i) % n).find(|&d| !failed(d) && b.cursor[d] + sectors <= zone)
                    {
                        let start = b.cursor[d];
                        b.cursor[d] += sectors;
                        b.inflight += 1;
                        return Ok((band, start, d as u16));
                    }
                } else if let Some(columns) = narrow {
                    if let Some((start, first)) = b.place_narrow(sectors, columns, n, zone) {
                        b.inflight += 1;
                        return Ok((band, start, first as u16));
                    }
                } else if b.cursor[0] + sectors <= zone {
                    let start = b.cursor[0];
                    b.cursor[0] += sectors;
                    b.inflight += 1;
                    return Ok((band, start, ROW_BAND));
                }
                b.state = BandState::Sealed;
                alloc.open.remove(&scheme);
            }
            let reserve = if gc { 0 } else { GC_RESERVE };
            if alloc.free.len() <= reserve {
                return Err(Error::OutOfSpace { needed: sectors * SECTOR });
            }
            let band = alloc.free.pop_front().expect("checked");
            self.bands[band as usize].write().open(scheme, n);
            alloc.open.insert(scheme, band);
        }
    }

    /// Ends a put's reservation in `band` without a blob (not written, or discarded).
    #[inline]
    pub fn release(&self, band: u32) {
        self.bands[band as usize].write().inflight -= 1;
    }

    /// Ends a put's reservation in `band`, recording the blob written at `loc`.
    #[inline]
    pub fn land(&self, _m: &Mutation, band: u32, loc: &Location, header: &[u8], tail: &[u32]) {
        let e = Entry::new(*loc, header, tail);
        let mut b = self.bands[band as usize].write();
        b.inflight -= 1;
        self.tracked(&mut b, |b| b.insert(e, self.phys(loc)));
    }

    /// Replaces the live replicated blob at `old` by `kept`, the copy it keeps of itself
    /// (`shed.rs`), with `header`: the kept copy's checksums (the first `tails` of the blob's).
    pub fn shed(&self, _m: &Mutation, old: &Location, kept: &Location, header: &[u8], tails: usize) -> Shed {
        let Some(band) = self.bands.get(old.band as usize) else { return Shed::NotLive };
        let mut b = band.write();
        let Some(mut tail) = b.live.get(&old.seq).filter(|e| e.loc == *old).map(|e| e.tail()) else {
            return Shed::NotLive;
        };
        if b.cleaning || tail.len() < tails {
            return Shed::Refused;
        }
        tail.truncate(tails);
        self.tracked(&mut b, |b| {
            b.remove(old.seq, |l| self.phys(l));
            b.insert(Entry::new(*kept, header, &tail), self.phys(kept));
        });
        Shed::Done(tail)
    }

    /// The cleaner starts (`on`) or ends taking `band`: while it does, nothing is shed into it.
    pub fn set_cleaning(&self, band: u32, on: bool) {
        if let Some(b) = self.bands.get(band as usize) {
            b.write().cleaning = on;
        }
    }

    /// Forgets the live blob at `loc`; false if it is not live (freed, moved, or never written).
    pub fn remove_live(&self, _m: &Mutation, loc: &Location) -> bool {
        let Some(band) = self.bands.get(loc.band as usize) else { return false };
        let mut b = band.write();
        if !b.live.get(&loc.seq).is_some_and(|e| e.loc == *loc) {
            return false;
        }
        self.tracked(&mut b, |b| b.remove(loc.seq, |l| self.phys(l)));
        true
    }

    /// Empties `band` for reuse (the cleaner's last step, before [`Space::reclaim`]); false if
    /// it holds live blobs.
    #[inline]
    pub fn reset_if_empty(&self, _m: &Mutation, band: u32) -> bool {
        let mut b = self.bands[band as usize].write();
        if !b.live.is_empty() {
            return false;
        }
        *b = Band::new();
        true
    }

    /// Puts the emptied `band` back on the free list.
    #[inline]
    pub fn reclaim(&self, band: u32) {
        self.alloc.lock().free.push_back(band);
    }

    /// Seals the open bands, so that the cleaner may take them too.
    #[inline]
    pub fn seal_open(&self) {
        let mut alloc = self.alloc.lock();
        for (_, band) in alloc.open.drain() {
            self.bands[band as usize].write().state = BandState::Sealed;
        }
    }

    /// A checkpoint's snapshot of the bands: their entries ([`Band::encode_entry`]) and the
    /// records of their live blobs (with `Unrestored` records for those in `unrestored`, per
    /// device), in groups of consecutive bands to be concatenated. The groups are encoded in
    /// parallel on `pool`: the snapshot holds the gate (puts wait), and on a single thread it
    /// grows long enough with many blobs to stall puts noticeably.
    pub fn snapshot(
        &self,
        _frozen: &Frozen,
        pool: &IoPool,
        unrestored: &[(u16, HashSet<u64>)],
    ) -> (Vec<Vec<u8>>, Vec<Vec<u8>>) {
        let groups = SNAPSHOT_GROUPS.min(self.bands.len()).max(1);
        let per_group = self.bands.len().div_ceil(groups);
        let encoded = pool.map(groups, |g| {
            let (mut bands, mut live) = (Writer::default(), Writer::default());
            for (i, b) in self.bands.iter().enumerate().skip(g * per_group).take(per_group) {
                let b = b.read();
                b.encode_entry(&mut bands);
                live.0.reserve(b.live.len() * (PUT_RECORD_FIXED + 16));
                for e in b.live.values() {
                    Record::encode_put(&mut live, &e.loc, e.header(), &e.tail());
                    for (device, _) in unrestored.iter().filter(|(_, s)| s.contains(&e.loc.seq)) {
                        Record::Unrestored { device: *device, seq: e.loc.seq, band: i as u32 }.encode(&mut live);
                    }
                }
            }
            (bands.0, live.0)
        });
        encoded.into_iter().unzip()
    }

    /// At open: band `i` as a checkpoint recorded it — reopened (sealed) for a valid scheme with
    /// the right number of cursors, clamped to the zone; left free otherwise.
    pub fn restore_band(&self, i: usize, state: BandState, scheme: Option<Scheme>, cursors: &[u64]) {
        let n = self.devices;
        let mut b = self.bands[i].write();
        if let (BandState::Open | BandState::Sealed, Some(s)) = (state, scheme) {
            let want = if s.is_isolated() { n } else { 1 };
            if s.validate(n).is_ok() && cursors.len() == want {
                b.open(s, n);
                b.state = BandState::Sealed;
                b.cursor = cursors.iter().map(|&c| c.min(self.zone_sectors())).collect();
            }
        }
    }

    /// At open: applies the `Put`, `Free` and `BandReset` records of band `band`, in order;
    /// returns the highest sequence number put. Records that do not fit the store (a sequence
    /// number past the limit, a scheme or device it does not have, a blob past the zone, a
    /// scheme other than the band's (but a shed copy's, `shed.rs`), tail checksums not one per chunk of its short last row,
    /// a narrow blob's columns past the row) are skipped.
    pub fn replay(&self, band: usize, records: Vec<Record>) -> u64 {
        let Some(lock) = self.bands.get(band) else { return 0 };
        let n = self.devices;
        let puts = records.iter().filter(|r| matches!(r, Record::Put { .. })).count();
        lock.write().live.reserve(puts);
        let mut last_seq = 0;
        for rec in records {
            match rec {
                Record::Put { loc, header, tail } => {
                    if loc.seq >= SEQ_LIMIT
                        || loc.scheme.validate(n).is_err()
                        || (loc.scheme.is_isolated() && loc.device as usize >= n)
                    {
                        continue;
                    }
                    let shape = Shape::of(&loc, n, self.chunk);
                    if tail.len() != shape.tail_chunks() || (shape.narrow && shape.offset + shape.columns() > n) {
                        continue;
                    }
                    let sectors = self.sectors(&loc);
                    if u64::from(loc.start).saturating_add(sectors) > self.zone_sectors() {
                        continue;
                    }
                    let mut b = lock.write();
                    let shed = b.state != BandState::Free && b.scheme.is_some_and(|s| is_shed_copy(s, &loc, &shape));
                    if (b.scheme != Some(loc.scheme) && !shed) || b.state == BandState::Free {
                        if b.state != BandState::Free && !b.live.is_empty() {
                            continue; // a band holds one scheme; a conflicting record is garbage
                        }
                        b.open(loc.scheme, n);
                        b.state = BandState::Sealed;
                    }
                    b.cover(&loc, sectors);
                    if !b.live.contains_key(&loc.seq) {
                        b.insert(Entry::new(loc, &header, &tail), self.phys(&loc));
                    }
                    last_seq = last_seq.max(loc.seq);
                }
                Record::Free { seq, .. } => {
                    lock.write().remove(seq, |l| self.phys(l));
                }
                Record::BandReset { .. } => *lock.write() = Band::new(),
                Record::Unrestored { .. } | Record::Missed { .. } => {} // not a band's
            }
        }
        last_seq
    }

    /// Decides band states from their contents (after a replay, or on a fresh format where all
    /// are empty): empty bands are free; the newest band of each scheme is reopened for appends;
    /// the rest are sealed.
    pub fn settle(&self) {
        let mut alloc = self.alloc.lock();
        let mut newest: HashMap<Scheme, (u64, u32)> = HashMap::new();
        for (i, b) in self.bands.iter().enumerate() {
            let mut b = b.write();
            let used = b.cursor.iter().any(|&c| c > 0);
            if b.state == BandState::Free || b.scheme.is_none() || (!used && b.live.is_empty()) {
                *b = Band::new();
                alloc.free.push_back(i as u32);
                continue;
            }
            b.state = BandState::Sealed;
            let s = b.scheme.expect("checked");
            let e = newest.entry(s).or_insert((b.last_write, i as u32));
            if b.last_write >= e.0 {
                *e = (b.last_write, i as u32);
            }
        }
        for (s, (_, i)) in newest {
            self.bands[i as usize].write().state = BandState::Open;
            alloc.open.insert(s, i);
        }
        let records = self.bands.iter().map(|b| b.read().record_bytes).sum();
        self.records.store(records, Ordering::Relaxed);
    }
}
