//! The read path: fetch the chunks a byte range needs (adjacent chunks of a device merged into
//! reads of up to 1 MiB, plus a blob's short last row, all queued at once on the devices' read
//! lanes, `reo_media::ReadLanes`), verify every chunk (its trailer, or the short last row's
//! checksums from the blob's record) and copy the wanted bytes into the
//! caller's buffer as each read completes (or leave them where they were read: `read_bytes.rs`),
//! and rebuild what is missing or bad from copies or parity (`rebuild.rs`). A chunk that cannot
//! be verified or rebuilt makes the read fail with `Corrupt`: wrong bytes are never returned.
//! A device stuck on a read is not waited for when the others can rebuild its chunks
//! (`hedge.rs`).

use crate::chunk;
use crate::error::{Error, Result};
use crate::geometry::{Row, Shape, SECTOR};
use crate::hedge::Hedge;
use crate::location::Location;
use crate::scheme::Scheme;
use crate::stats::Stat;
use crate::store::{BlobHealth, Inner};
use reo_media::{AlignedBuf, ReadBatch, Waited};
use std::time::Instant;

/// One chunk to fetch and verify.
#[derive(Debug, Clone, Copy)]
pub(crate) struct ChunkAt {
    pub device: usize,
    /// Byte offset on the device.
    pub offset: u64,
    pub height: usize,
    pub index: u32,
    pub place: u64,
    /// For a chunk of the blob's short last row (no trailer slot), its position among the
    /// checksums the blob's record keeps (stripe × width + column).
    pub tail: Option<u16>,
}

impl ChunkAt {
    /// Do `bytes`, read from this chunk's place, verify as blob `seq`'s? Against the chunk's
    /// trailer, or for a short last row against `tail`, the blob's recorded checksums (`None`
    /// when the blob is no longer live: nothing then verifies).
    pub(crate) fn verifies(&self, bytes: &[u8], seq: u64, tail: Option<&[u32]>) -> bool {
        match self.tail {
            None => chunk::verify(bytes, seq, self.index, self.place),
            Some(i) => tail
                .and_then(|t| t.get(usize::from(i)))
                .is_some_and(|&crc| chunk::verify_tail(bytes, seq, self.index, self.place, crc)),
        }
    }
}

/// Largest merged read of full chunks (a blob's short last row may join past it: see
/// `Inner::joins_run`): a longer stretch of one device is read as several reads, queued on
/// its lane together, so that checking and copying the first part overlaps reading the rest.
pub const MAX_RUN: usize = 1 << 20;

/// A merged read: device, offset, length, and its member chunks (chunk number, offset in the run).
type Run = (usize, u64, usize, Vec<(usize, usize)>);

/// Runs of a fetch queued on the device lanes, not yet waited for.
pub(crate) struct Queued<'a> {
    runs: Vec<Run>,
    /// The generation of each run's device slot when the run was queued (`slot.rs`).
    generations: Vec<u64>,
    batch: ReadBatch<'a>,
}

/// Fetched chunk bytes: (run buffer, offset in it), or `None` when unreadable or unverified.
pub(crate) type Fetched = Vec<Option<(usize, usize)>>;

/// Where a fetched chunk's wanted bytes go: (piece of the output, offset of its first byte in the
/// chunk body).
pub(crate) type Dest<'a> = (&'a mut [std::mem::MaybeUninit<u8>], usize);

/// What a read fetches: its rows, the data chunks it wants with the part of each it wants
/// (blob bytes [x, y) of the chunk starting at blob byte a), the columns prefetched to rebuild
/// wanted chunks on failed devices, and all their chunks (wanted first, in order).
pub(crate) struct ReadPlan {
    pub shape: Shape,
    pub rows: Vec<Row>,
    pub want: Vec<Want>,
    pub spans: Vec<(u64, u64, u64)>,
    pub extra: Vec<(usize, usize, usize)>,
    pub chunks: Vec<ChunkAt>,
}

/// A data chunk a read wants: the chunk, its row (index into the read's rows) and its data
/// position in the row (stripe × data + column).
pub(crate) type Want = (ChunkAt, usize, usize);

impl Inner {
    /// Reads blob bytes `[from, to)`.
    pub(crate) fn read(&self, loc: &Location, from: u64, to: u64) -> Result<Vec<u8>> {
        self.read_checked(loc, from, to, || self.read_verified(loc, from, to))
    }

    /// The checks and counts around every kind of read: the range, the blob live before, and a
    /// failure of a blob freed meanwhile reported as `NotFound`.
    pub(crate) fn read_checked<T>(
        &self,
        loc: &Location,
        from: u64,
        to: u64,
        read: impl FnOnce() -> Result<T>,
    ) -> Result<T> {
        self.check_read(loc, from, to)?;
        self.stale_or(loc, read())
    }

    /// What every read checks and counts before its I/O: the range, and the blob live.
    pub(crate) fn check_read(&self, loc: &Location, from: u64, to: u64) -> Result<()> {
        if from > to || to > loc.len {
            return Err(Error::BadRange { start: from, end: to, len: loc.len });
        }
        if !self.space.is_live(loc) {
            return Err(Error::NotFound { seq: loc.seq });
        }
        self.stats.add(Stat::Reads, 1);
        self.stats.add(Stat::ReadBytes, to - from);
        Ok(())
    }

    /// The outcome of a read, a failure reported as `NotFound` if the blob was freed meanwhile.
    pub(crate) fn stale_or<T>(&self, loc: &Location, r: Result<T>) -> Result<T> {
        if r.is_err() && !self.space.is_live(loc) {
            // Freed or relocated while we read: the location is stale, not the data corrupt.
            return Err(Error::NotFound { seq: loc.seq });
        }
        r
    }

    /// What a read of blob bytes `[from, to)` fetches.
    pub(crate) fn plan_read(&self, loc: &Location, from: u64, to: u64, hedge: &Hedge) -> ReadPlan {
        let shape = self.shape(loc);
        let rows: Vec<Row> = shape.rows_between(u64::from(loc.start), from, to).collect();
        let (mut want, mut spans) = (Vec::new(), Vec::new());
        self.wanted_into(loc, &shape, &rows, from, to, &mut want, Some(&mut spans));
        // Stripes with a wanted chunk on a failed (or, hedging, a stuck) device: fetch the
        // columns that rebuild it in the same round (`rs` only), instead of a second round.
        let extra = self.prefetch_columns(loc, &shape, &rows, &want, hedge);
        let mut chunks: Vec<ChunkAt> = want.iter().map(|w| w.0).collect();
        chunks.extend(extra.iter().map(|&(ri, s, c)| self.chunk_at(loc, &shape, &rows[ri], s, c)));
        ReadPlan { shape, rows, want, spans, extra, chunks }
    }

    /// Reads and verifies blob bytes `[from, to)` into one buffer, hedging where the blob allows
    /// and, if that fails after leaving a slow device behind, again waiting for every device.
    pub(crate) fn read_verified(&self, loc: &Location, from: u64, to: u64) -> Result<Vec<u8>> {
        let hedge = Hedge::for_blob(self, loc);
        match self.read_verified_with(loc, from, to, &hedge) {
            Err(_) if hedge.abandoned() => self.read_verified_with(loc, from, to, &hedge.retry()),
            r => r,
        }
    }

    /// [`Inner::read_verified`] waiting for every device (scrub: it verifies chunks where they lie).
    pub(crate) fn read_verified_waiting(&self, loc: &Location, from: u64, to: u64) -> Result<Vec<u8>> {
        self.read_verified_with(loc, from, to, &Hedge::off())
    }

    fn read_verified_with(&self, loc: &Location, from: u64, to: u64, hedge: &Hedge) -> Result<Vec<u8>> {
        let ReadPlan { shape, rows, want, spans, extra, chunks } = self.plan_read(loc, from, to, hedge);
        // The output is filled as the reads complete, each run's verified chunks copied (while
        // they are in cache) into their own disjoint pieces of it.
        let len = (to - from) as usize;
        let mut out: Vec<u8> = Vec::with_capacity(len);
        let (runs, got) = {
            let mut dests: Vec<Option<Dest<'_>>> = Vec::with_capacity(chunks.len());
            let mut rest = &mut out.spare_capacity_mut()[..len];
            for &(x, y, a) in &spans {
                let (piece, tail) = rest.split_at_mut((y - x) as usize);
                dests.push(Some((piece, (x - a) as usize)));
                rest = tail;
            }
            debug_assert!(rest.is_empty(), "the pieces cover the range");
            dests.resize_with(chunks.len(), || None);
            self.fetch_into(loc, &chunks, dests, hedge)
        };
        let missing: Vec<usize> = (0..want.len()).filter(|&i| got[i].is_none()).collect();
        let result = if missing.is_empty() {
            Ok(())
        } else {
            self.rebuild(loc, &shape, &rows, &want, &extra, (&runs, &got), &missing, hedge).map(|rebuilt| {
                let spare = out.spare_capacity_mut();
                for (&i, body) in missing.iter().zip(&rebuilt) {
                    let (x, y, a) = spans[i];
                    spare[(x - from) as usize..(y - from) as usize]
                        .write_copy_of_slice(&body[(x - a) as usize..(y - a) as usize]);
                }
            })
        };
        for b in runs {
            self.bufs.give(b);
        }
        result?;
        // SAFETY: the pieces of `spans` cover [0, len) of the spare capacity exactly, and each
        // was written: by `fetch_into` once its chunk was read and verified (`got[i]` is `Some`
        // only then), or above from the rebuilt chunk (every other one is in `missing`).
        unsafe { out.set_len(len) };
        if !missing.is_empty() {
            self.stats.add(Stat::DegradedReads, 1);
        }
        Ok(out)
    }

    /// Pass 1 of a read: the data chunks overlapping blob bytes `[from, to)`, in blob order, and
    /// if asked for, each one's part the caller wants: (x, y, a) = blob bytes [x, y) of the chunk
    /// starting at blob byte a. Into caller-owned buffers (cleared first), so sized reads reuse them.
    #[allow(clippy::too_many_arguments)]
    pub(crate) fn wanted_into(
        &self,
        loc: &Location,
        shape: &Shape,
        rows: &[Row],
        from: u64,
        to: u64,
        want: &mut Vec<Want>,
        mut spans: Option<&mut Vec<(u64, u64, u64)>>,
    ) {
        let g = shape.geom;
        want.clear();
        if let Some(s) = spans.as_deref_mut() {
            s.clear();
        }
        for (ri, row) in rows.iter().enumerate() {
            let body = row.body() as u64;
            for s in 0..g.stripes_per_row {
                for c in 0..g.data {
                    let j = s * g.data + c;
                    let a = row.data_off + j as u64 * body;
                    let b = (a + body).min(row.data_off + row.data_len);
                    if a < b && a < to && b > from {
                        want.push((self.chunk_at(loc, shape, row, s, c), ri, j));
                        if let Some(spans) = spans.as_deref_mut() {
                            spans.push((a.max(from), b.min(to), a));
                        }
                    }
                }
            }
        }
    }

    /// For `rs` blobs, the (row, stripe, column) of the chunks that rebuild the wanted chunks on
    /// failed devices (or devices `hedge` avoids): per such stripe, healthy columns not already
    /// wanted, up to k in all.
    pub(crate) fn prefetch_columns(
        &self,
        loc: &Location,
        shape: &Shape,
        rows: &[Row],
        want: &[Want],
        hedge: &Hedge,
    ) -> Vec<(usize, usize, usize)> {
        let Scheme::Rs { k, .. } = loc.scheme else { return Vec::new() };
        let (k, g) = (k as usize, shape.geom);
        let mut extra = Vec::new();
        let mut i = 0;
        while i < want.len() {
            // The wanted chunks of one stripe are adjacent in `want`.
            let (ri, s) = (want[i].1, want[i].2 / g.data);
            let end = (i..want.len()).find(|&e| (want[e].1, want[e].2 / g.data) != (ri, s)).unwrap_or(want.len());
            let avoid = |d: usize| self.avoid(d, loc.seq, hedge);
            if want[i..end].iter().any(|w| avoid(w.0.device)) {
                let healthy_wanted = want[i..end].iter().filter(|w| !avoid(w.0.device)).count();
                let wanted = |c: usize| want[i..end].iter().any(|w| w.2 % g.data == c);
                let more = (0..g.width)
                    .filter(|&c| !wanted(c) && !avoid(shape.device_of(loc.band, &rows[ri], s, c, loc.device)))
                    .take(k.saturating_sub(healthy_wanted));
                extra.extend(more.map(|c| (ri, s, c)));
            }
            i = end;
        }
        extra
    }

    pub(crate) fn chunk_at(&self, loc: &Location, shape: &Shape, row: &Row, s: usize, c: usize) -> ChunkAt {
        ChunkAt {
            device: shape.device_of(loc.band, row, s, c, loc.device),
            offset: self.layout.offset(loc.band, row.start),
            height: row.height,
            index: shape.chunk_index(row, s, c),
            place: chunk::place(loc.band, row.start),
            tail: row.tail.then(|| (s * shape.geom.width + c) as u16),
        }
    }

    /// Reads and verifies `chunks`, merging adjacent chunks of one device into one read and
    /// reading devices in parallel. Failed devices, devices `hedge` leaves behind and bad chunks
    /// come back as `None`. The run buffers come from the pool (possibly longer than the run;
    /// empty for a run left behind); callers give them back.
    pub(crate) fn fetch(&self, loc: &Location, chunks: &[ChunkAt], hedge: &Hedge) -> (Vec<AlignedBuf>, Fetched) {
        self.fetch_into(loc, chunks, (0..chunks.len()).map(|_| None).collect(), hedge)
    }

    /// [`Inner::fetch`], also copying the body bytes of each chunk that verifies into its
    /// destination, if it has one: `dests[i] = (piece, offset in the body)`. A chunk that comes
    /// back `Some` has had its destination written in full.
    ///
    /// A chunk that fails verification is charged to its device only if the blob is still live
    /// once it was read: the read checked liveness before its I/O, without a lock, so the cleaner
    /// may have freed the blob, reset its band and written another blob over it meanwhile; those
    /// bytes are another blob's, not a device fault (the read then answers `NotFound`). Nor if
    /// the device is down for the blob by then: a read queued on a lane before the device was
    /// replaced runs on the replacement, which does not hold the blob's chunk until the rebuild
    /// restores it (the chunk is rebuilt from the others, as for any failed device). Nor, like a
    /// read error, if the device was replaced between queueing and finishing the read, even when
    /// the rebuild has restored the blob by then: the read may have run on the old media.
    pub(crate) fn fetch_into(
        &self,
        loc: &Location,
        chunks: &[ChunkAt],
        dests: Vec<Option<Dest<'_>>>,
        hedge: &Hedge,
    ) -> (Vec<AlignedBuf>, Fetched) {
        let queued = self.submit_fetch(loc, chunks, hedge);
        self.complete_fetch(loc, chunks, queued, dests, hedge)
    }

    /// The first half of [`Inner::fetch_into`]: groups `chunks` into runs (adjacent chunks of a
    /// device merged) and queues every run on its device's lane at once, so that a caller can
    /// start the reads of several blobs before waiting for the first ([`crate::PendingRead`]).
    pub(crate) fn submit_fetch(&self, loc: &Location, chunks: &[ChunkAt], hedge: &Hedge) -> Queued<'_> {
        let seq = loc.seq;
        // Group into runs: (device, offset, len, [(chunk i, offset in run)]).
        let mut order: Vec<usize> = (0..chunks.len()).collect();
        order.sort_by_key(|&i| (chunks[i].device, chunks[i].offset));
        let mut runs: Vec<Run> = Vec::new();
        for i in order {
            let c = chunks[i];
            if self.avoid(c.device, seq, hedge) {
                if !self.down(c.device, seq) {
                    hedge.note_left(c.device);
                }
                continue;
            }
            match runs.last_mut() {
                Some(r) if r.0 == c.device && r.1 + r.2 as u64 == c.offset && self.joins_run(r.2, &c) => {
                    r.3.push((i, r.2));
                    r.2 += c.height;
                }
                _ => runs.push((c.device, c.offset, c.height, vec![(i, 0)])),
            }
        }
        // Taken before the reads are queued: a replacement from here on makes them straddle it.
        let generations = runs.iter().map(|r| self.devs.generation(r.0)).collect();
        let mut batch = if hedge.reads_on_caller() { self.devs.read_batch_on_caller() } else { self.devs.read_batch() };
        for (r, &(d, off, len, _)) in runs.iter().enumerate() {
            batch.submit(d, off, len, self.bufs.take(len), r);
        }
        Queued { runs, generations, batch }
    }

    /// The second half of [`Inner::fetch_into`]: waits for the runs `queued` for `chunks`,
    /// verifying each (and copying its chunks' wanted bytes to `dests`) as it completes.
    pub(crate) fn complete_fetch(
        &self,
        loc: &Location,
        chunks: &[ChunkAt],
        queued: Queued<'_>,
        mut dests: Vec<Option<Dest<'_>>>,
        hedge: &Hedge,
    ) -> (Vec<AlignedBuf>, Fetched) {
        let seq = loc.seq;
        let Queued { runs, generations, mut batch } = queued;
        let stores_bytes = self.devs.stores_bytes();
        let tail =
            if stores_bytes && chunks.iter().any(|c| c.tail.is_some()) { self.space.tail_crcs(loc) } else { None };
        // Each run's destinations, by run.
        let mut run_dests: Vec<Vec<Option<Dest<'_>>>> =
            runs.iter().map(|r| r.3.iter().map(|&(i, _)| dests[i].take()).collect()).collect();
        // Each run is checked, and its wanted bytes copied out while they are in cache, as it
        // completes, while the devices read the rest.
        let mut bufs: Vec<Option<AlignedBuf>> = (0..runs.len()).map(|_| None).collect();
        let mut got: Fetched = vec![None; chunks.len()];
        // Runs not waited for any more (their device failed or stalled: `hedge.rs`).
        let mut left = vec![false; runs.len()];
        // Every run came back or was left behind.
        let settled =
            |bufs: &[Option<AlignedBuf>], left: &[bool]| bufs.iter().zip(left).all(|(b, &l)| b.is_some() || l);
        let poll = self.tunables.hedge_poll();
        loop {
            let waited = match poll {
                None => batch.wait_next().map_or(Waited::Finished, Waited::Done),
                Some(every) => batch.wait_next_until(Instant::now() + every),
            };
            let done = match waited {
                Waited::Finished => break,
                Waited::Done(done) => done,
                Waited::TimedOut => {
                    for (r, run) in runs.iter().enumerate() {
                        if bufs[r].is_none() && !left[r] && self.give_up_on(run.0, hedge) {
                            left[r] = true;
                            if !self.devs.is_failed(run.0) {
                                self.stats.add(Stat::SlowReads, 1);
                                hedge.note_left(run.0);
                            }
                        }
                    }
                    if settled(&bufs, &left) {
                        break;
                    }
                    continue;
                }
            };
            let r = done.tag;
            // A run left behind that came back after all is as good as any.
            left[r] = false;
            let (d, _, _, members) = &runs[r];
            // A failure of a read that straddled a replacement of its device is not charged to
            // the new device: it may have run on the old one (`slot.rs`).
            let same_media = self.devs.generation(*d) == generations[r];
            match done.result {
                Err(e) if hedge.charges(*d) => {
                    self.stats.add(Stat::ReadErrors, 1);
                    if same_media {
                        self.note_read_error(*d, &format!("read error: {e}"));
                    }
                }
                Err(_) => {}
                Ok(()) => {
                    for (&(i, off), dest) in members.iter().zip(run_dests[r].iter_mut()) {
                        let c = chunks[i];
                        let bytes = &done.buf[off..off + c.height];
                        if stores_bytes && !c.verifies(bytes, seq, tail.as_deref()) {
                            // Not the device's fault when it went down for this blob meanwhile:
                            // a read queued before a replacement runs on the new, blank device.
                            if same_media && self.space.is_live(loc) && !self.down(*d, seq) && hedge.charges(*d) {
                                self.stats.add(Stat::ChecksumErrors, 1);
                                self.note_read_error(*d, "checksum mismatch");
                            }
                            continue;
                        }
                        if let Some((piece, at)) = dest {
                            let n = piece.len();
                            piece.write_copy_of_slice(&bytes[*at..*at + n]);
                        }
                        got[i] = Some((r, off));
                    }
                }
            }
            bufs[r] = Some(done.buf);
            if left.contains(&true) && settled(&bufs, &left) {
                break;
            }
        }
        // Lane threads answer every request, even one whose read panicked; a run left behind
        // has no buffer here (its completion is dropped with the batch).
        let bufs = bufs
            .into_iter()
            .zip(&left)
            .map(|(b, &l)| {
                assert!(b.is_some() || l, "every run came back or was left behind");
                b.unwrap_or_else(|| AlignedBuf::zeroed(0))
            })
            .collect();
        (bufs, got)
    }

    /// Whether chunk `c`, adjacent on its device to a run of `len` bytes, is read with it: up to
    /// [`MAX_RUN`], and a blob's short last row always (it follows its run on the same devices,
    /// `geometry.rs`; a few more KiB in one I/O cost less than a small I/O of their own).
    pub(crate) fn joins_run(&self, len: usize, c: &ChunkAt) -> bool {
        len + c.height <= MAX_RUN || c.tail.is_some()
    }

    /// Health of a blob from the failed-device set alone: lost when a chunk holding data is on
    /// a failed device and its stripe cannot rebuild it.
    pub(crate) fn health(&self, loc: &Location) -> BlobHealth {
        if self.all_up() {
            // Every put asks: with no device failed or rebuilding, nothing can be down.
            return BlobHealth::Healthy;
        }
        let shape = self.shape(loc);
        let g = shape.geom;
        let mut worst = BlobHealth::Healthy;
        for row in shape.rows_between(u64::from(loc.start), 0, loc.len) {
            let body = row.body() as u64;
            for s in 0..g.stripes_per_row {
                // Data chunks of stripe s carrying bytes are its first `used` columns.
                let first = row.data_off + (s * g.data) as u64 * body;
                let used =
                    (row.data_off + row.data_len).saturating_sub(first).div_ceil(body).min(g.data as u64) as usize;
                if used == 0 {
                    continue;
                }
                let down = |c: usize| self.down(shape.device_of(loc.band, &row, s, c, loc.device), loc.seq);
                let data_down = (0..used).any(down);
                let lost = match loc.scheme {
                    Scheme::None(_) => data_down,
                    Scheme::Replicate(r) => (0..r as usize).all(down),
                    Scheme::Rs { p, .. } => data_down && (0..g.width).filter(|&c| down(c)).count() > p as usize,
                };
                if lost {
                    return BlobHealth::Lost;
                }
                let relevant = if loc.scheme.tolerance() == 0 { used } else { g.width };
                if (0..relevant).any(down) {
                    worst = BlobHealth::Degraded;
                }
            }
        }
        worst
    }
}

/// Bytes the blob at `loc` holds on each device it touches (its column; for benchmarks).
pub fn column_bytes(loc: &Location, devices: usize, chunk: usize) -> u64 {
    Shape::of(loc, devices, chunk).sectors() * SECTOR
}

/// Bytes a full read of `loc` transfers from devices when healthy (for benchmarks).
pub fn device_read_bytes(loc: &Location, devices: usize, chunk: usize) -> u64 {
    let shape = Shape::of(loc, devices, chunk);
    let g = shape.geom;
    (shape.sectors() * SECTOR) * (g.stripes_per_row * g.data) as u64
}
