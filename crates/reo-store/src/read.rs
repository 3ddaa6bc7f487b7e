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

/// A data chunk a read wants: the chunk, its row (index into the read's rows) and its data
/// position in the row (stripe × data + column).
type Want = (ChunkAt, usize, usize);

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

    fn chunk_at(&self, loc: &Location, shape: &Shape, row: &Row, s: usize, c: usize) -> ChunkAt {
        ChunkAt {
            device: shape.device_of(loc.band, row, s, c, loc.device),
            offset: self.layout.offset(loc.band, row.start),
            height: row.height,
            index: shape.chunk_index(row, s, c),
            place: chunk::place(loc.band, row.start),
        }
    }

    /// Rebuilds the data chunks `missing` (indexes into `want`) that pass 1 (`first`: its run
    /// buffers and what they hold) could not read or verify, from copies or parity. The chunks
    /// every damaged stripe needs are fetched together in one parallel round; another round
    /// follows only if some of those are unreadable too. Returns the bodies in `missing` order.
    fn rebuild(
        &self,
        loc: &Location,
        shape: &Shape,
        rows: &[Row],
        want: &[Want],
        first: (&[AlignedBuf], &Fetched),
        missing: &[usize],
    ) -> Result<Vec<Vec<u8>>> {
        let g = shape.geom;
        let lost = |i: usize, why: &str| {
            let at = want[i].0;
            Error::Corrupt { seq: loc.seq, detail: format!("chunk {} on device {}: {why}", at.index, at.device) }
        };
        match loc.scheme {
            Scheme::None(_) => Err(lost(missing[0], "unreadable and the scheme has no redundancy")),
            Scheme::Replicate(r) => {
                let mut out: Vec<Option<Vec<u8>>> = vec![None; missing.len()];
                for copy in 1..r as usize {
                    let todo: Vec<usize> = (0..missing.len()).filter(|&m| out[m].is_none()).collect();
                    if todo.is_empty() {
                        break;
                    }
                    let others: Vec<ChunkAt> = todo
                        .iter()
                        .map(|&m| {
                            let (_, ri, j) = want[missing[m]];
                            self.chunk_at(loc, shape, &rows[ri], j / g.data, copy)
                        })
                        .collect();
                    let (bufs, found) = self.fetch(loc.seq, &others);
                    for (t, &m) in todo.iter().enumerate() {
                        if let Some((run, off)) = found[t] {
                            let body = rows[want[missing[m]].1].body();
                            out[m] = Some(bufs[run][off..off + body].to_vec());
                            Counters::add(&self.stats.reconstructed_chunks, 1);
                        }
                    }
                    for b in bufs {
                        self.bufs.give(b);
                    }
                }
                out.into_iter()
                    .enumerate()
                    .map(|(m, o)| o.ok_or_else(|| lost(missing[m], "every copy is unreadable")))
                    .collect()
            }
            Scheme::Rs { k, p } => {
                let (k, p) = (k as usize, p as usize);
                let mut rounds: Vec<Vec<AlignedBuf>> = Vec::new();
                let r = self.rebuild_rs(loc, shape, rows, want, first, missing, (k, p), &mut rounds);
                for b in rounds.into_iter().flatten() {
                    self.bufs.give(b);
                }
                r.map_err(|(i, why)| lost(i, &why))
            }
        }
    }

    /// [`Inner::rebuild`] for `rs(k, p)`; the buffers of extra fetch rounds go into `rounds`.
    /// An error names the `want` index of a chunk that cannot be rebuilt and why.
    #[allow(clippy::too_many_arguments)]
    fn rebuild_rs(
        &self,
        loc: &Location,
        shape: &Shape,
        rows: &[Row],
        want: &[Want],
        first: (&[AlignedBuf], &Fetched),
        missing: &[usize],
        (k, p): (usize, usize),
        rounds: &mut Vec<Vec<AlignedBuf>>,
    ) -> std::result::Result<Vec<Vec<u8>>, (usize, String)> {
        let width = shape.geom.width;
        let data = shape.geom.data;
        // Every damaged stripe, (row, stripe) → its columns: (tried, piece: (round, run, offset)).
        type Piece = (usize, usize, usize);
        type Column = (bool, Option<Piece>);
        let mut stripes: Vec<((usize, usize), Vec<Column>)> = Vec::new();
        let stripe_of = |i: usize| (want[i].1, want[i].2 / data);
        for &i in missing {
            if !stripes.iter().any(|(key, _)| *key == stripe_of(i)) {
                stripes.push((stripe_of(i), vec![(false, None); width]));
            }
        }
        for (i, w) in want.iter().enumerate() {
            if let Some((_, cols)) = stripes.iter_mut().find(|(key, _)| *key == stripe_of(i)) {
                cols[w.2 % data] = (true, first.1[i].map(|(run, off)| (0, run, off)));
            }
        }
        // Fetch rounds: each stripe short of k pieces asks for as many untried columns (healthy
        // devices first) as it lacks.
        loop {
            let mut ask: Vec<(usize, usize)> = Vec::new(); // (stripe, column)
            for (si, ((ri, s), cols)) in stripes.iter().enumerate() {
                let have = cols.iter().filter(|c| c.1.is_some()).count();
                if have >= k {
                    continue;
                }
                let mut untried: Vec<usize> = (0..width).filter(|&c| !cols[c].0).collect();
                untried.sort_by_key(|&c| self.is_failed(shape.device_of(loc.band, &rows[*ri], *s, c, loc.device)));
                ask.extend(untried.into_iter().take(k - have).map(|c| (si, c)));
            }
            if ask.is_empty() {
                break;
            }
            let chunks: Vec<ChunkAt> = ask
                .iter()
                .map(|&(si, c)| {
                    let (ri, s) = stripes[si].0;
                    self.chunk_at(loc, shape, &rows[ri], s, c)
                })
                .collect();
            let (bufs, found) = self.fetch(loc.seq, &chunks);
            rounds.push(bufs);
            for (t, &(si, c)) in ask.iter().enumerate() {
                stripes[si].1[c] = (true, found[t].map(|(run, off)| (rounds.len(), run, off)));
            }
        }
        // Decode each stripe, restoring the data chunks asked for.
        let mut out: Vec<Vec<u8>> = vec![Vec::new(); missing.len()];
        for ((ri, s), cols) in &stripes {
            let body = rows[*ri].body();
            let piece = |c: usize| -> Option<&[u8]> {
                cols[c].1.map(|(round, run, off)| {
                    let bufs = if round == 0 { first.0 } else { &rounds[round - 1][..] };
                    &bufs[run][off..off + body]
                })
            };
            let shards: Vec<Option<&[u8]>> = (0..k).map(piece).collect();
            let parity: Vec<Option<&[u8]>> = (k..k + p).map(piece).collect();
            let targets: Vec<usize> = (0..missing.len()).filter(|&m| stripe_of(missing[m]) == (*ri, *s)).collect();
            let mut bodies: Vec<Vec<u8>> = targets.iter().map(|_| vec![0u8; body]).collect();
            let mut restored: Vec<(usize, &mut [u8])> = targets
                .iter()
                .zip(bodies.iter_mut())
                .map(|(&m, b)| (want[missing[m]].2 % data, b.as_mut_slice()))
                .collect();
            if !codec::decode(k, p, &shards, &parity, &mut restored) {
                return Err((missing[targets[0]], format!("more than {p} chunks of its stripe are unreadable")));
            }
            Counters::add(&self.stats.reconstructed_chunks, targets.len() as u64);
            for (&m, b) in targets.iter().zip(bodies) {
                out[m] = b;
            }
        }
        Ok(out)
    }

    /// Reads and verifies `chunks`, merging adjacent chunks of one device into one read and
    /// reading devices in parallel. Failed devices and bad chunks come back as `None`. The run
    /// buffers come from the pool (possibly longer than the run); callers give them back.
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
        let read: Vec<(AlignedBuf, bool)> = self.pool.map(runs.len(), |r| {
            let (d, off, len, _) = &runs[r];
            let mut b = self.bufs.take(*len);
            let ok = self.devices[*d].read_at(&mut b[..*len], *off).is_ok();
            if !ok {
                Counters::add(&self.stats.read_errors, 1);
            }
            (b, ok)
        });
        let mut got: Fetched = vec![None; chunks.len()];
        for (r, (_, _, _, members)) in runs.iter().enumerate() {
            let (buf, ok) = &read[r];
            if !ok {
                continue;
            }
            for &(i, off) in members {
                let c = chunks[i];
                if !self.stores_bytes || chunk::verify(&buf[off..off + c.height], seq, c.index, c.place) {
                    got[i] = Some((r, off));
                } else {
                    Counters::add(&self.stats.checksum_errors, 1);
                }
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
