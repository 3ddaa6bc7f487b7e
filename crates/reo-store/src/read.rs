//! The read path: fetch the chunks a byte range needs (each device's chunks in one merged read,
//! devices in parallel), verify every trailer, and rebuild what is missing or bad from copies or
//! parity. A chunk that cannot be verified or rebuilt makes the read fail with `Corrupt`: wrong
//! bytes are never returned.

use crate::chunk;
use crate::error::{Error, Result};
use crate::geometry::{Row, Shape, SECTOR};
use crate::location::Location;
use crate::scheme::Scheme;
use crate::stats::Counters;
use crate::store::{BlobHealth, Inner};
use reo_media::AlignedBuf;

/// One chunk to fetch and verify.
#[derive(Debug, Clone, Copy)]
pub(crate) struct ChunkAt {
    pub device: usize,
    /// Byte offset on the device.
    pub offset: u64,
    pub height: usize,
    pub index: u32,
    pub place: u64,
}

/// A merged read: device, offset, length, and its member chunks (chunk number, offset in the run).
type Run = (usize, u64, usize, Vec<(usize, usize)>);

/// Fetched chunk bytes: (run buffer, offset in it), or `None` when unreadable or unverified.
pub(crate) type Fetched = Vec<Option<(usize, usize)>>;

/// A data chunk a read wants: the chunk, its row (index into the read's rows) and its data
/// position in the row (stripe × data + column).
pub(crate) type Want = (ChunkAt, usize, usize);

impl Inner {
    /// Reads blob bytes `[from, to)`.
    pub(crate) fn read(&self, loc: &Location, from: u64, to: u64) -> Result<Vec<u8>> {
        if from > to || to > loc.len {
            return Err(Error::BadRange { start: from, end: to, len: loc.len });
        }
        if !self.is_live(loc) {
            return Err(Error::NotFound { seq: loc.seq });
        }
        Counters::add(&self.stats.reads, 1);
        Counters::add(&self.stats.read_bytes, to - from);
        let r = self.read_verified(loc, from, to);
        if r.is_err() && !self.is_live(loc) {
            // Freed or relocated while we read: the location is stale, not the data corrupt.
            return Err(Error::NotFound { seq: loc.seq });
        }
        r
    }

    fn read_verified(&self, loc: &Location, from: u64, to: u64) -> Result<Vec<u8>> {
        let shape = self.shape(loc);
        let g = shape.geom;
        let rows: Vec<Row> = shape.rows_between(loc.start as u64, from, to).collect();
        // Pass 1: the data chunks overlapping the range, in blob order.
        let mut want: Vec<Want> = Vec::new();
        for (ri, row) in rows.iter().enumerate() {
            let body = row.body() as u64;
            for s in 0..g.stripes_per_row {
                for c in 0..g.data {
                    let j = s * g.data + c;
                    let a = row.data_off + j as u64 * body;
                    let b = (a + body).min(row.data_off + row.data_len);
                    if a < b && a < to && b > from {
                        want.push((self.chunk_at(loc, &shape, row, s, c), ri, j));
                    }
                }
            }
        }
        let chunks: Vec<ChunkAt> = want.iter().map(|w| w.0).collect();
        let (runs, got) = self.fetch(loc.seq, &chunks);
        let missing: Vec<usize> = (0..want.len()).filter(|&i| got[i].is_none()).collect();
        let rebuilt = if missing.is_empty() {
            Ok(Vec::new())
        } else {
            self.rebuild(loc, &shape, &rows, &want, (&runs, &got), &missing)
        };
        let result = rebuilt.map(|rebuilt| {
            // The pieces are contiguous and in order: append them, no zero-fill first.
            let mut out = Vec::with_capacity((to - from) as usize);
            let mut next_rebuilt = rebuilt.iter();
            for (i, (_, ri, j)) in want.iter().enumerate() {
                let row = &rows[*ri];
                let body = row.body();
                let bytes: &[u8] = match got[i] {
                    Some((run, off)) => &runs[run][off..off + body],
                    None => next_rebuilt.next().expect("one rebuilt chunk per missing chunk"),
                };
                let a = row.data_off + (*j * body) as u64;
                let b = (a + body as u64).min(row.data_off + row.data_len);
                let (x, y) = (a.max(from), b.min(to));
                debug_assert_eq!(from + out.len() as u64, x, "pieces are contiguous");
                out.extend_from_slice(&bytes[(x - a) as usize..(y - a) as usize]);
            }
            debug_assert_eq!(out.len() as u64, to - from);
            out
        });
        for b in runs {
            self.bufs.give(b);
        }
        if result.is_ok() && !missing.is_empty() {
            Counters::add(&self.stats.degraded_reads, 1);
        }
        result
    }

    pub(crate) fn chunk_at(&self, loc: &Location, shape: &Shape, row: &Row, s: usize, c: usize) -> ChunkAt {
        ChunkAt {
            device: shape.device_of(loc.band, row, s, c, loc.device),
            offset: self.layout.offset(loc.band, row.start),
            height: row.height,
            index: shape.chunk_index(row, s, c),
            place: chunk::place(loc.band, row.start),
        }
    }

    /// Reads and verifies `chunks`, merging adjacent chunks of one device into one read and
    /// reading devices in parallel. Failed devices and bad chunks come back as `None`. The run
    /// buffers come from the pool (possibly longer than the run); callers give them back.
    pub(crate) fn fetch(&self, seq: u64, chunks: &[ChunkAt]) -> (Vec<AlignedBuf>, Fetched) {
        // Group into runs: (device, offset, len, [(chunk i, offset in run)]).
        let mut order: Vec<usize> = (0..chunks.len()).collect();
        order.sort_by_key(|&i| (chunks[i].device, chunks[i].offset));
        let mut runs: Vec<Run> = Vec::new();
        for i in order {
            let c = chunks[i];
            if self.is_failed(c.device) {
                continue;
            }
            match runs.last_mut() {
                Some(r) if r.0 == c.device && r.1 + r.2 as u64 == c.offset => {
                    r.3.push((i, r.2));
                    r.2 += c.height;
                }
                _ => runs.push((c.device, c.offset, c.height, vec![(i, 0)])),
            }
        }
        // Each job reads its run and verifies its chunks (checksums in parallel too).
        let read: Vec<(AlignedBuf, Vec<bool>)> = self.pool.map(runs.len(), |r| {
            let (d, off, len, members) = &runs[r];
            let mut b = self.bufs.take(*len);
            if let Err(_e) = self.devices[*d].read_at(&mut b[..*len], *off) {
                Counters::add(&self.stats.read_errors, 1);
                return (b, Vec::new());
            }
            let good = members
                .iter()
                .map(|&(i, off)| {
                    let c = chunks[i];
                    let ok = !self.stores_bytes || chunk::verify(&b[off..off + c.height], seq, c.index, c.place);
                    if !ok {
                        Counters::add(&self.stats.checksum_errors, 1);
                    }
                    ok
                })
                .collect();
            (b, good)
        });
        let mut got: Fetched = vec![None; chunks.len()];
        for (r, (_, _, _, members)) in runs.iter().enumerate() {
            for (&(i, off), _) in members.iter().zip(&read[r].1).filter(|(_, &ok)| ok) {
                got[i] = Some((r, off));
            }
        }
        (read.into_iter().map(|(b, _)| b).collect(), got)
    }

    /// Health of a blob from the failed-device set alone: lost when a chunk holding data is on
    /// a failed device and its stripe cannot rebuild it.
    pub(crate) fn health(&self, loc: &Location) -> BlobHealth {
        let shape = self.shape(loc);
        let g = shape.geom;
        let mut worst = BlobHealth::Healthy;
        for row in shape.rows_between(loc.start as u64, 0, loc.len) {
            let body = row.body() as u64;
            for s in 0..g.stripes_per_row {
                // Data chunks of stripe s carrying bytes are its first `used` columns.
                let first = row.data_off + (s * g.data) as u64 * body;
                let used =
                    (row.data_off + row.data_len).saturating_sub(first).div_ceil(body).min(g.data as u64) as usize;
                if used == 0 {
                    continue;
                }
                let down = |c: usize| self.is_failed(shape.device_of(loc.band, &row, s, c, loc.device));
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

/// Bytes a full read of `loc` transfers from devices when healthy (for benchmarks).
pub fn device_read_bytes(loc: &Location, devices: usize, chunk: usize) -> u64 {
    let shape = Shape::of(loc, devices, chunk);
    let g = shape.geom;
    (shape.sectors() * SECTOR) * (g.stripes_per_row * g.data) as u64
}
