//! The read path: fetch the chunks a byte range needs (each device's chunks in one merged read,
//! devices in parallel), verify every trailer, and rebuild what is missing or bad from copies or
//! parity. A chunk that cannot be verified or rebuilt makes the read fail with `Corrupt`: wrong
//! bytes are never returned.

use crate::chunk;
use crate::codec;
use crate::error::{Error, Result};
use crate::geometry::{Row, Shape, SECTOR};
use crate::location::Location;
use crate::scheme::Scheme;
use crate::stats::Counters;
use crate::store::{BlobHealth, Inner};
use reo_media::AlignedBuf;

/// One chunk to fetch and verify.
#[derive(Debug, Clone, Copy)]
struct ChunkAt {
    device: usize,
    /// Byte offset on the device.
    offset: u64,
    height: usize,
    index: u32,
    place: u64,
}

/// A merged read: device, offset, length, and its member chunks (chunk number, offset in the run).
type Run = (usize, u64, usize, Vec<(usize, usize)>);

/// Fetched chunk bytes: (run buffer, offset in it), or `None` when unreadable or unverified.
type Fetched = Vec<Option<(usize, usize)>>;

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
        let mut out = vec![0u8; (to - from) as usize];
        let rows: Vec<Row> = shape.rows_between(loc.start as u64, from, to).collect();
        // Pass 1: the data chunks overlapping the range.
        let mut want: Vec<(ChunkAt, usize, usize)> = Vec::new(); // (chunk, row i, stripe*data + c)
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
        let mut degraded = false;
        for (i, (at, ri, j)) in want.iter().enumerate() {
            let row = &rows[*ri];
            let body = row.body();
            let rebuilt;
            let bytes: &[u8] = match got[i] {
                Some((run, off)) => &runs[run][off..off + body],
                None => {
                    degraded = true;
                    rebuilt = self.rebuild(loc, &shape, row, *j / g.data, *j % g.data, at)?;
                    &rebuilt
                }
            };
            let a = row.data_off + (*j * body) as u64;
            let b = (a + body as u64).min(row.data_off + row.data_len);
            let (x, y) = (a.max(from), b.min(to));
            out[(x - from) as usize..(y - from) as usize].copy_from_slice(&bytes[(x - a) as usize..(y - a) as usize]);
        }
        if degraded {
            Counters::add(&self.stats.degraded_reads, 1);
        }
        Ok(out)
    }

    fn chunk_at(&self, loc: &Location, shape: &Shape, row: &Row, s: usize, c: usize) -> ChunkAt {
        ChunkAt {
            device: shape.device_of(loc.band, row, s, c, loc.device),
            offset: self.layout.offset(loc.band, row.start),
            height: row.height,
            index: shape.chunk_index(row, s, c),
            place: chunk::place(loc.band, row.start),
        }
    }

    /// Rebuilds data chunk `c` of stripe `s` in `row` from the stripe's other chunks.
    fn rebuild(&self, loc: &Location, shape: &Shape, row: &Row, s: usize, c: usize, at: &ChunkAt) -> Result<Vec<u8>> {
        let g = shape.geom;
        let body = row.body();
        let lost = |why: &str| Error::Corrupt {
            seq: loc.seq,
            detail: format!("chunk {} on device {}: {why}", at.index, at.device),
        };
        match loc.scheme {
            Scheme::None(_) => Err(lost("unreadable and the scheme has no redundancy")),
            Scheme::Replicate(r) => {
                for copy in 1..r as usize {
                    let other = self.chunk_at(loc, shape, row, s, copy);
                    let (runs, got) = self.fetch(loc.seq, &[other]);
                    if let Some((run, off)) = got[0] {
                        Counters::add(&self.stats.reconstructed_chunks, 1);
                        return Ok(runs[run][off..off + body].to_vec());
                    }
                }
                Err(lost("every copy is unreadable"))
            }
            Scheme::Rs { k, p } => {
                let (k, p) = (k as usize, p as usize);
                let others: Vec<ChunkAt> =
                    (0..g.width).filter(|&x| x != c).map(|x| self.chunk_at(loc, shape, row, s, x)).collect();
                let (runs, got) = self.fetch(loc.seq, &others);
                let piece = |x: usize| -> Option<&[u8]> {
                    let i = if x < c { x } else { x - 1 };
                    got[i].map(|(run, off)| &runs[run][off..off + body])
                };
                let data: Vec<Option<&[u8]>> = (0..k).map(|x| if x == c { None } else { piece(x) }).collect();
                let parity: Vec<Option<&[u8]>> = (k..k + p).map(piece).collect();
                let mut out = vec![0u8; body];
                // Restore every missing data shard; keep the one asked for.
                let mut bufs: Vec<(usize, Vec<u8>)> =
                    (0..k).filter(|&x| data[x].is_none() && x != c).map(|x| (x, vec![0u8; body])).collect();
                let mut restored: Vec<(usize, &mut [u8])> = vec![(c, out.as_mut_slice())];
                restored.extend(bufs.iter_mut().map(|(x, v)| (*x, v.as_mut_slice())));
                if !codec::decode(k, p, &data, &parity, &mut restored) {
                    return Err(lost(&format!("more than {p} chunks of its stripe are unreadable")));
                }
                Counters::add(&self.stats.reconstructed_chunks, 1);
                Ok(out)
            }
        }
    }

    /// Reads and verifies `chunks`, merging adjacent chunks of one device into one read and
    /// reading devices in parallel. Failed devices and bad chunks come back as `None`.
    fn fetch(&self, seq: u64, chunks: &[ChunkAt]) -> (Vec<AlignedBuf>, Fetched) {
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
        let bufs: Vec<Option<AlignedBuf>> = self.pool.map(runs.len(), |r| {
            let (d, off, len, _) = &runs[r];
            let mut b = AlignedBuf::zeroed(*len);
            match self.devices[*d].read_at(&mut b, *off) {
                Ok(()) => Some(b),
                Err(_) => {
                    Counters::add(&self.stats.read_errors, 1);
                    None
                }
            }
        });
        let mut got: Fetched = vec![None; chunks.len()];
        for (r, (_, _, _, members)) in runs.iter().enumerate() {
            let Some(buf) = &bufs[r] else { continue };
            for &(i, off) in members {
                let c = chunks[i];
                if !self.stores_bytes || chunk::verify(&buf[off..off + c.height], seq, c.index, c.place) {
                    got[i] = Some((r, off));
                } else {
                    Counters::add(&self.stats.checksum_errors, 1);
                }
            }
        }
        let bufs = bufs.into_iter().map(|b| b.unwrap_or_else(|| AlignedBuf::zeroed(0))).collect();
        (bufs, got)
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
