//! Laying a blob out on the devices: the bytes each device holds of it (its *column*), chunk by
//! chunk — data, Reed-Solomon parity or copies, zero padding, and the trailer slot that seals
//! every chunk of a full row (`chunk.rs`; the short last row's checksums go to the blob's record
//! instead). Puts lay a blob out a segment of rows at a time and write each
//! segment while the next is laid out (`write.rs`); rebuild and scrub recreate one device's
//! column ([`Inner::lay_out_column`]) or all of them ([`Inner::lay_out`]).
//!
//! A put's column is a list of pieces ([`Column`]): full data chunk bodies (and their copies)
//! are *the caller's own bytes*, handed to the device as I/O vectors, when the caller's memory
//! and the chunk body meet the devices' direct-I/O alignment ([`Media::vector_align`]); the
//! rest — trailer slots, parity, a short tail chunk with its padding, unused columns — is laid
//! out in a side buffer from the pool. Copying every byte into column buffers instead cost a
//! large share of the raw write bandwidth on the reference machine (the copy's memory traffic
//! competes with the devices'; docs/BENCHMARKS.md). Side bytes are written with streaming stores
//! and never read back: checksums and parity are computed on the blob's own bytes.
//!
//! [`Media::vector_align`]: reo_media::Media::vector_align

use crate::chunk;
use crate::codec;
use crate::geometry::{Row, SECTOR};
use crate::location::Location;
use crate::scheme::Scheme;
use crate::store::Inner;
use reo_media::{copy_streaming, AlignedBuf};
use std::ops::Range;

/// Where a piece of a column comes from: a byte range of the blob or of the side buffer.
#[derive(Debug, Clone, PartialEq, Eq)]
enum Piece {
    Blob(Range<usize>),
    Side(Range<usize>),
}

/// One device's column of a laid-out segment: its pieces in device order, and the side buffer
/// (from the pool: give it back) that holds the pieces not taken from the blob.
pub(crate) struct Column {
    pub side: AlignedBuf,
    pieces: Vec<Piece>,
    used: usize,
}

impl Column {
    fn new(side: AlignedBuf) -> Column {
        Column { side, pieces: Vec::new(), used: 0 }
    }

    /// True when the blob has nothing on this device.
    pub fn is_empty(&self) -> bool {
        self.pieces.is_empty()
    }

    /// The column's bytes, in order, as slices of `data` (the blob) and of the side buffer.
    pub fn parts<'a>(&'a self, data: &'a [u8]) -> Vec<&'a [u8]> {
        let part = |p: &Piece| match p {
            Piece::Blob(r) => &data[r.clone()],
            Piece::Side(r) => &self.side[r.clone()],
        };
        self.pieces.iter().map(part).collect()
    }

    /// Appends `len` bytes of the side buffer to the column; returns their range in it.
    fn side(&mut self, len: usize) -> Range<usize> {
        let r = self.used..self.used + len;
        self.used += len;
        match self.pieces.last_mut() {
            Some(Piece::Side(last)) if last.end == r.start => last.end = r.end,
            _ => self.pieces.push(Piece::Side(r.clone())),
        }
        r
    }

    /// Appends the blob's bytes `r` to the column.
    fn blob(&mut self, r: Range<usize>) {
        self.pieces.push(Piece::Blob(r));
    }

    /// Appends a chunk body of `body` bytes holding blob bytes `r` (fewer for the blob's tail):
    /// the blob's own bytes when `zero_copy` and the chunk is full, else a copy padded with
    /// zeros in the side buffer, whose range is returned.
    fn body(&mut self, data: &[u8], r: Range<usize>, body: usize, zero_copy: bool) -> Option<Range<usize>> {
        if zero_copy && r.len() == body {
            self.blob(r);
            return None;
        }
        let at = self.side(body);
        let dst = &mut self.side[at.clone()];
        copy_streaming(&mut dst[..r.len()], &data[r.clone()]);
        dst[r.len()..].fill(0);
        Some(at)
    }
}

impl Inner {
    /// Lays the blob out in one column buffer per device (empty for devices an isolated blob
    /// does not use): data, parity or copies, trailer slots, zero padding. Returns the columns
    /// (from the buffer pool: callers give them back) and the column length, or `None` for an
    /// empty blob. Used by scrub to compare or rewrite whole columns; puts lay out a segment at
    /// a time ([`Inner::lay_out_rows`]).
    pub(crate) fn lay_out(&self, loc: &Location, data: &[u8]) -> Option<(Vec<AlignedBuf>, usize)> {
        let shape = self.shape(loc);
        if shape.sectors() == 0 {
            return None;
        }
        let rows: Vec<Row> = shape.rows_between(u64::from(loc.start), 0, loc.len).collect();
        let (cols, len) = self.lay_out_rows(loc, data, &rows, false, &mut Vec::new());
        // Without zero copy every used column is one side piece from the start.
        Some((cols.into_iter().map(|c| c.side).collect(), len))
    }

    /// Lays out `rows`, consecutive rows of the blob at `loc` (at least one): one [`Column`]
    /// per device, starting at the first row's sector, and the column length. With `zero_copy`
    /// full chunk bodies are pieces of `data` itself; without, every byte is in the side
    /// buffers, one piece per column. The checksums of the short last row's chunks, which have
    /// no trailer slot, are appended to `tail` (stripe by stripe, column by column).
    pub(crate) fn lay_out_rows(
        &self,
        loc: &Location,
        data: &[u8],
        rows: &[Row],
        zero_copy: bool,
        tail: &mut Vec<u32>,
    ) -> (Vec<Column>, usize) {
        let shape = self.shape(loc);
        let (first, last) = (rows[0].start, rows[rows.len() - 1]);
        let col_len = ((last.start - first) * SECTOR) as usize + last.height;
        let n = self.n();
        let isolated = loc.scheme.is_isolated();
        let need = self.side_bytes(loc, rows, zero_copy);
        let mut cols: Vec<Column> = need.iter().map(|&len| Column::new(self.bufs.take(len))).collect();
        let g = shape.geom;
        let mut crcs: Vec<u32> = Vec::with_capacity(g.width);
        for &row in rows {
            let body = row.body();
            let place = chunk::place(loc.band, row.start);
            let mut used = vec![false; n];
            for s in 0..g.stripes_per_row {
                let dev = |c: usize| shape.device_of(loc.band, &row, s, c, loc.device);
                // Blob bytes of data chunk `c` of the stripe (at most `body` of them).
                let span = |c: usize| {
                    let j = (s * g.data + c) as u64;
                    let from = (row.data_off + j * body as u64).min(loc.len) as usize;
                    let to = (row.data_off + (j + 1) * body as u64).min(row.data_off + row.data_len) as usize;
                    from..to.max(from)
                };
                // The side range of each device's body in this stripe (a stripe's chunks are on
                // distinct devices).
                let mut side_body: Vec<Option<Range<usize>>> = vec![None; n];
                crcs.clear();
                for c in 0..g.data {
                    let r = span(c);
                    crcs.push(chunk::body_crc(&data[r.clone()], body - r.len()));
                    side_body[dev(c)] = cols[dev(c)].body(data, r, body, zero_copy);
                }
                match loc.scheme {
                    Scheme::Rs { k, p } => {
                        let (k, p) = (k as usize, p as usize);
                        for c in k..k + p {
                            side_body[dev(c)] = Some(cols[dev(c)].side(body));
                        }
                        let mut slots: Vec<Option<&mut [u8]>> = cols
                            .iter_mut()
                            .zip(&side_body)
                            .map(|(col, r)| r.clone().map(|r| &mut col.side[r]))
                            .collect();
                        let mut pick =
                            |c: usize| slots[dev(c)].take().expect("a stripe's chunks are on distinct devices");
                        // A full data chunk is encoded from the blob; a short one (the blob's
                        // tail) from its zero-padded copy.
                        let shards: Vec<&[u8]> = (0..k)
                            .map(|c| match span(c) {
                                r if r.len() == body => &data[r],
                                _ => {
                                    let padded: &[u8] = pick(c);
                                    padded
                                }
                            })
                            .collect();
                        let mut outs: Vec<&mut [u8]> = (k..k + p).map(&mut pick).collect();
                        codec::encode_with(&shards, p, |i, parity| {
                            crcs.push(chunk::body_crc(parity, 0));
                            copy_streaming(outs[i], parity);
                        });
                    }
                    Scheme::Replicate(r) => {
                        for c in 1..r as usize {
                            cols[dev(c)].body(data, span(0), body, zero_copy);
                            crcs.push(crcs[0]);
                        }
                    }
                    Scheme::None(_) => {}
                }
                debug_assert_eq!(crcs.len(), g.width, "a checksum for every chunk of the stripe");
                for (c, &crc) in crcs.iter().enumerate() {
                    let idx = shape.chunk_index(&row, s, c);
                    used[dev(c)] = true;
                    if row.tail {
                        tail.push(chunk::tail_crc(crc, loc.seq, idx, place));
                        continue;
                    }
                    let col = &mut cols[dev(c)];
                    let at = col.side(chunk::SLOT);
                    chunk::seal_slot(&mut col.side[at], crc, loc.seq, idx, place);
                }
            }
            // A row's columns no stripe uses are zeroed, except in a shared row (a narrow
            // blob's), where they are other blobs' columns.
            if !isolated && !shape.narrow {
                for (col, _) in cols.iter_mut().zip(&used).filter(|(_, &u)| !u) {
                    let at = col.side(row.height);
                    col.side[at].fill(0);
                }
            }
        }
        debug_assert!(cols.iter().zip(&need).all(|(c, &n)| c.used == n), "side bytes as counted");
        (cols, col_len)
    }

    /// Side-buffer bytes each device's column of `rows` takes in [`Inner::lay_out_rows`]: per
    /// chunk its trailer slot (none in the short last row), plus the whole body for parity, for a data chunk (or copy) not
    /// taken from the blob (a short tail, or no zero copy), and whole rows of unused columns.
    /// Why count: a side buffer as long as the column held a megabyte per device and segment
    /// for the 8 KiB of trailer slots a zero-copy data column needs, times every put in flight.
    fn side_bytes(&self, loc: &Location, rows: &[Row], zero_copy: bool) -> Vec<usize> {
        let shape = self.shape(loc);
        let g = shape.geom;
        let mut need = vec![0usize; self.n()];
        for row in rows {
            let body = row.body();
            let mut used = vec![false; need.len()];
            for s in 0..g.stripes_per_row {
                for c in 0..g.width {
                    let d = shape.device_of(loc.band, row, s, c, loc.device);
                    used[d] = true;
                    // The data chunk this column holds (a copy holds the stripe's first), if any.
                    let data_chunk = match loc.scheme {
                        Scheme::Rs { k, .. } if c >= k as usize => None,
                        Scheme::Replicate(_) => Some(0),
                        _ => Some(c),
                    };
                    let from_blob = data_chunk.is_some_and(|c| {
                        let j = (s * g.data + c) as u64;
                        let from = (row.data_off + j * body as u64).min(loc.len);
                        let to = (row.data_off + (j + 1) * body as u64).min(row.data_off + row.data_len);
                        zero_copy && to.saturating_sub(from) == body as u64
                    });
                    need[d] += if from_blob { row.height - body } else { row.height };
                }
            }
            if !loc.scheme.is_isolated() && !shape.narrow {
                for (n, _) in need.iter_mut().zip(&used).filter(|(_, &u)| !u) {
                    *n += row.height;
                }
            }
        }
        need
    }
}

impl Inner {
    /// Device `d`'s column of the blob, exactly as [`Inner::lay_out`] would lay it out, computed
    /// alone: the data (or copy) chunks `d` holds are cut from `data`, a parity chunk is encoded
    /// from its stripe's data, and only `d`'s chunks are sealed (those of full rows: the short
    /// last row's checksums are in the blob's record). Used by the rebuild, which
    /// writes one column. `None` for an empty blob or a device the blob does not use (an
    /// isolated blob's other devices, a narrow blob's columns of its shared row that are not its
    /// own).
    pub(crate) fn lay_out_column(&self, loc: &Location, data: &[u8], d: usize) -> Option<(AlignedBuf, usize)> {
        let shape = self.shape(loc);
        let sectors = shape.sectors();
        if sectors == 0 || !shape.uses_device(loc.band, u64::from(loc.start), loc.device, d) {
            return None;
        }
        let col_len = (sectors * SECTOR) as usize;
        let mut col = self.bufs.take(col_len);
        let g = shape.geom;
        for row in shape.rows_between(u64::from(loc.start), 0, loc.len) {
            let body = row.body();
            let off = ((row.start - u64::from(loc.start)) * SECTOR) as usize;
            let place = chunk::place(loc.band, row.start);
            // Blob bytes of data chunk `j` of the row.
            let span = |j: usize| {
                let from = (row.data_off + (j * body) as u64).min(loc.len) as usize;
                let to = (row.data_off + ((j + 1) * body) as u64).min(row.data_off + row.data_len) as usize;
                (from, to.max(from))
            };
            let fill = |dst: &mut [u8], j: usize| {
                let (from, to) = span(j);
                dst[..to - from].copy_from_slice(&data[from..to]);
                dst[to - from..].fill(0);
            };
            let mut used = false;
            for s in 0..g.stripes_per_row {
                let Some(c) = (0..g.width).find(|&c| shape.device_of(loc.band, &row, s, c, loc.device) == d) else {
                    continue;
                };
                used = true;
                let dst = &mut col[off..off + body];
                match loc.scheme {
                    Scheme::Rs { k, p } if c >= k as usize => {
                        let (k, p) = (k as usize, p as usize);
                        // Full data chunks are encoded from `data` in place; short ones padded.
                        let mut padded: Vec<AlignedBuf> = Vec::new();
                        for c in 0..k {
                            let (from, to) = span(s * g.data + c);
                            if to - from < body {
                                let mut b = self.bufs.take(body);
                                fill(&mut b[..body], s * g.data + c);
                                padded.push(b);
                            }
                        }
                        let mut pi = padded.iter();
                        let shards: Vec<&[u8]> = (0..k)
                            .map(|c| {
                                let (from, to) = span(s * g.data + c);
                                if to - from == body {
                                    &data[from..to]
                                } else {
                                    &pi.next().expect("a padded shard")[..body]
                                }
                            })
                            .collect();
                        let mut outs: Vec<AlignedBuf> = (0..p).map(|_| self.bufs.take(body)).collect();
                        {
                            let mut refs: Vec<&mut [u8]> = outs.iter_mut().map(|b| &mut b[..body]).collect();
                            codec::encode(&shards, &mut refs);
                        }
                        dst.copy_from_slice(&outs[c - k][..body]);
                        for b in outs.into_iter().chain(padded) {
                            self.bufs.give(b);
                        }
                    }
                    Scheme::Replicate(_) => fill(dst, s * g.data),
                    _ => fill(dst, s * g.data + c),
                }
                if !row.tail {
                    let idx = shape.chunk_index(&row, s, c);
                    chunk::seal(&mut col[off..off + row.height], loc.seq, idx, place);
                }
            }
            if !used {
                col[off..off + row.height].fill(0);
            }
        }
        Some((col, col_len))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::config::StoreConfig;
    use crate::handle::Store;
    use crate::scheme::Placement;
    use crate::store::{Durability, PutOptions};
    use reo_media::{Media, MemMedia};
    use std::sync::Arc;

    fn content(seed: u64, len: usize) -> Vec<u8> {
        let mut x = seed.wrapping_mul(0x9E37_79B9_7F4A_7C15) | 1;
        (0..len)
            .map(|_| {
                x ^= x << 13;
                x ^= x >> 7;
                x ^= x << 17;
                x as u8
            })
            .collect()
    }

    /// One column laid out alone (rebuild) and the zero-copy pieces of puts equal that column of
    /// the full layout (scrub), for every scheme, device and a range of lengths (full rows, short
    /// tails, tiny blobs, bodies just full and one byte over).
    #[test]
    fn a_column_laid_out_alone_matches_the_full_layout() {
        let n = 4;
        let cfg = StoreConfig {
            chunk_size: 16 << 10,
            zone_size: Some(16 << 20),
            journal_size: Some(1 << 20),
            checkpoint_size: Some(1 << 20),
            create: true,
            ..Default::default()
        };
        let devs: Vec<Arc<dyn Media>> = (0..n).map(|_| Arc::new(MemMedia::new(96 << 20)) as Arc<dyn Media>).collect();
        let (store, _) = Store::open(devs, &cfg).unwrap();
        let inner = &store.inner;
        let schemes = [
            Scheme::None(Placement::Isolated),
            Scheme::None(Placement::Striped),
            Scheme::Replicate(2),
            Scheme::Replicate(4),
            Scheme::Rs { k: 2, p: 2 },
            Scheme::Rs { k: 3, p: 1 },
            Scheme::Rs { k: 1, p: 2 },
            Scheme::Rs { k: 1, p: 1 }, // two stripes per row on four devices
        ];
        for scheme in schemes {
            let lens = [1usize, 100, 3584, 3585, 15_872, 16_000, 40_000, (1 << 20) + 12_345, 3 << 20];
            for (i, len) in lens.into_iter().enumerate() {
                let data = content(i as u64 + 7, len);
                let loc =
                    Location { seq: 9 + i as u64, band: 3, start: 17 * i as u32, device: 2, scheme, len: len as u64 };
                let (cols, col_len) = inner.lay_out(&loc, &data).unwrap();
                // The zero-copy layout of puts (pieces of the blob and of side buffers) writes
                // the same bytes, whether laid out whole or a few rows at a time.
                let shape = inner.shape(&loc);
                let rows: Vec<Row> = shape.rows_between(u64::from(loc.start), 0, loc.len).collect();
                for per in [rows.len(), 3, 1] {
                    let mut at = 0;
                    for seg in rows.chunks(per) {
                        let (pieces, seg_len) = inner.lay_out_rows(&loc, &data, seg, true, &mut Vec::new());
                        for (d, col) in pieces.iter().enumerate() {
                            let bytes = col.parts(&data).concat();
                            if cols[d].is_empty() {
                                assert!(bytes.is_empty(), "{scheme} len {len} device {d}");
                                continue;
                            }
                            assert_eq!(bytes.len(), seg_len, "{scheme} len {len} device {d}");
                            assert!(bytes == cols[d][at..at + seg_len], "{scheme} len {len} device {d} rows/{per}");
                        }
                        at += seg_len;
                        for col in pieces {
                            inner.bufs.give(col.side);
                        }
                    }
                    assert_eq!(at, col_len);
                }
                for (d, col) in cols.iter().enumerate() {
                    match inner.lay_out_column(&loc, &data, d) {
                        Some((one, l)) => {
                            assert_eq!(l, col_len);
                            assert!(one[..l] == col[..col_len], "{scheme} len {len} device {d}");
                        }
                        None => assert!(col.is_empty(), "{scheme} len {len} device {d}"),
                    }
                }
            }
        }
    }

    /// A zero-copy put takes side buffers for what is not the blob's own bytes: a column of
    /// full data chunks only its trailer slots (8 KiB for 16 rows), not a column's length.
    #[test]
    fn zero_copy_side_buffers_hold_trailers_and_parity_only() {
        let cfg = StoreConfig {
            chunk_size: 64 << 10,
            zone_size: Some(16 << 20),
            journal_size: Some(1 << 20),
            checkpoint_size: Some(1 << 20),
            create: true,
            ..Default::default()
        };
        let devs: Vec<Arc<dyn Media>> = (0..4).map(|_| Arc::new(MemMedia::new(96 << 20)) as Arc<dyn Media>).collect();
        let (store, _) = Store::open(devs, &cfg).unwrap();
        let inner = &store.inner;
        let body = (64 << 10) - crate::chunk::SLOT;
        let rows = 16; // one rotation: two devices hold data, two parity
        let data = content(3, 2 * body * rows);
        let scheme = Scheme::Rs { k: 2, p: 2 };
        let loc = Location { seq: 5, band: 1, start: 0, device: 0, scheme, len: data.len() as u64 };
        let all: Vec<Row> = inner.shape(&loc).rows_between(0, 0, loc.len).collect();
        let (cols, col_len) = inner.lay_out_rows(&loc, &data, &all, true, &mut Vec::new());
        assert_eq!(col_len, rows << 16);
        let mut sides: Vec<usize> = cols.iter().map(|c| c.side.len()).collect();
        sides.sort_unstable();
        // Data columns: 16 trailer slots (the pool may round a small request up to 64 KiB);
        // parity columns: the whole column.
        assert!(sides[..2].iter().all(|&l| l <= 64 << 10), "{sides:?}");
        assert!(sides[2..].iter().all(|&l| l >= col_len), "{sides:?}");
        let used: Vec<usize> = cols.iter().map(|c| c.used).collect();
        assert_eq!(used.iter().filter(|&&u| u == rows * crate::chunk::SLOT).count(), 2, "{used:?}");
        for c in cols {
            inner.bufs.give(c.side);
        }
    }

    /// Large blobs (many rows): exact reads, healthy and with any one device failed, and zero
    /// padding on the device although the pooled column buffers held other bytes.
    #[test]
    fn large_blobs_round_trip_degrade_and_pad_with_zeros() {
        let n = 4;
        let chunk = 16usize << 10;
        let cfg = StoreConfig {
            chunk_size: chunk as u32,
            zone_size: Some(16 << 20),
            journal_size: Some(1 << 20),
            checkpoint_size: Some(1 << 20),
            io_threads: Some(4),
            create: true,
            ..Default::default()
        };
        let schemes = [
            Scheme::None(Placement::Isolated),
            Scheme::None(Placement::Striped),
            Scheme::Replicate(2),
            Scheme::Replicate(3),
            Scheme::Rs { k: 2, p: 2 },
            Scheme::Rs { k: 3, p: 1 },
            Scheme::Rs { k: 1, p: 2 },
            Scheme::Rs { k: 1, p: 1 }, // two stripes per row on four devices
        ];
        for scheme in schemes {
            let mems: Vec<Arc<MemMedia>> = (0..n).map(|_| Arc::new(MemMedia::new(96 << 20))).collect();
            let devs: Vec<Arc<dyn Media>> = mems.iter().map(|m| m.clone() as Arc<dyn Media>).collect();
            let (store, _) = Store::open(devs.clone(), &cfg).unwrap();
            // Fill the buffer pool with stale bytes first.
            let junk = store.put(b"junk", &vec![0xA5; 3 << 20], &PutOptions::new(scheme)).unwrap();
            store.free(&junk, Durability::None).unwrap();
            let mut blobs = Vec::new();
            for (i, len) in [(5 << 20) + 12_345, (1 << 20) - 7, 2 << 20, 100].into_iter().enumerate() {
                let data = content(i as u64 + 1, len);
                let loc = store.put(b"b", &data, &PutOptions::new(scheme).placement(i as u64)).unwrap();
                assert_eq!(store.read_all(&loc).unwrap(), data, "{scheme} len {len}");
                blobs.push((loc, data));
            }
            if scheme.is_isolated() {
                // The tail chunk's body past the data is zeros on the device, up to the end of
                // its sectors: the short last row has no trailer slot.
                let body = chunk - crate::chunk::SLOT;
                let layout = store.layout();
                for (loc, data) in &blobs {
                    let rows = data.len().div_ceil(body);
                    let tail = data.len() - (rows - 1) * body;
                    let height = tail.div_ceil(4096) * 4096;
                    let mut buf = vec![0u8; height];
                    let off = layout.offset(loc.band, u64::from(loc.start)) + ((rows - 1) * chunk) as u64;
                    mems[loc.device as usize].read_at(&mut buf, off).unwrap();
                    assert_eq!(&buf[..tail], &data[(rows - 1) * body..], "{scheme}: tail data");
                    assert!(buf[tail..].iter().all(|&b| b == 0), "{scheme}: padding");
                }
            }
            store.close().unwrap();
            if scheme.tolerance() == 0 {
                continue;
            }
            for failed in 0..n {
                let (store, _) = Store::open(devs.clone(), &cfg).unwrap();
                store.fail_device(failed).unwrap();
                for (loc, data) in &blobs {
                    assert_eq!(&store.read_all(loc).unwrap(), data, "{scheme} device {failed} failed");
                    let (a, b) = (data.len() as u64 / 3, data.len() as u64 / 3 * 2 + 1);
                    assert_eq!(store.read(loc, a, b).unwrap(), &data[a as usize..b as usize], "{scheme} range");
                }
                store.close().unwrap();
            }
        }
    }
}
