//! Row geometry: how a blob's bytes map onto chunks, stripes, rows and devices.
//!
//! A blob occupies a run of *rows* in its band. A row is a rectangle `height` bytes tall at the
//! same zone offset on every device; it holds `stripes_per_row` stripes side by side, each
//! `width` chunks wide (`data` of them carry data, the rest parity or copies). Full rows are one
//! chunk tall; the last row of a blob is only as tall as its data needs (rounded to 4 KiB) and has
//! no trailer slots (its chunks' checksums are in the blob's record, format 7), so a small blob
//! is sealed with its parity at once instead of padding a whole chunk, and a 4 KiB blob takes
//! 4 KiB per column.
//!
//! Which device holds column 0 of a row rotates, which spreads parity (and the unused columns
//! when `width` does not divide N) evenly over the devices: a blob's first row starts at a hash
//! of the blob's position, and every [`ROTATE_BYTES`] of chunk height (a *run* of rows) the
//! columns shift by the number of data columns of a stripe. Within a run each device keeps its
//! column, so a device holds a blob's data in long contiguous stretches and a read fetches them
//! with a few large I/Os rather than one per row. Shifting by the data width (format 5; format 4
//! shifted by one device) puts consecutive runs' data on the *next* devices, round robin: a
//! blob's data is spread evenly, so a read keeps every device equally busy — an `rs(2,2)` blob
//! of 4 MiB over 4 devices is one 1 MiB run per device, where a shift of one put 2 MiB on one
//! device and none on another, and that device's second read held up the whole blob.
//! Isolated blobs are one column tall stack of chunks on one device.

use crate::chunk::SLOT;
use crate::location::Location;
use crate::scheme::{Geometry, Scheme};

/// Sector size: the unit of allocation and alignment.
pub const SECTOR: u64 = 4096;

/// Chunk height of the rows of one rotation run (at least one row): the columns of a blob's rows
/// shift by the stripe's data width every this many bytes of height.
pub const ROTATE_BYTES: usize = 1 << 20;

/// One row of a blob.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Row {
    /// The blob's short last row: its chunks have no trailer slot (their checksums are kept in
    /// the blob's metadata record, `chunk.rs`), so a small blob takes no sector more than its
    /// bytes need.
    pub tail: bool,
    /// Row number within the blob.
    pub index: u32,
    /// First sector of the row within the zone.
    pub start: u64,
    /// Chunk height in bytes (a multiple of [`SECTOR`]).
    pub height: usize,
    /// Offset of the row's first data byte within the blob.
    pub data_off: u64,
    /// Data bytes the row carries.
    pub data_len: u64,
}

impl Row {
    /// Payload bytes per chunk of this row: all of it in the short last row, else the chunk
    /// less its trailer slot.
    pub fn body(&self) -> usize {
        if self.tail {
            self.height
        } else {
            self.height - SLOT
        }
    }
}

/// The shape of a blob of a given scheme and length over `devices` devices.
#[derive(Debug, Clone, Copy)]
pub struct Shape {
    pub geom: Geometry,
    pub devices: usize,
    pub chunk: usize,
    pub len: u64,
    pub isolated: bool,
    /// A *narrow* blob: one short row using fewer columns than the row has, so that other
    /// narrow blobs share the row (see [`Shape::of`]).
    pub narrow: bool,
    /// A narrow blob's first column within its shared row (the location's `device` field).
    pub offset: usize,
}

impl Shape {
    /// Shape of the blob at `loc`.
    ///
    /// A blob smaller than a full row of its scheme is *narrowed*: its row has only as many data
    /// chunks as it needs for about a sector of data each (whole stripes for `rs` and
    /// `replicate`, data columns for `none(striped)`), and if that leaves columns of the row
    /// unused, the blob is narrow: it takes columns `offset..offset + columns` of a row other
    /// narrow blobs of the same height share (`space/band.rs`). Why: a 4 KiB blob striped over 5
    /// devices took a sector on every one (20 KiB), and `replicate(2)` over 4 split 4 KiB into
    /// two stripes of 2 KiB (16 KiB); narrow, they take 4 and 8 KiB, and their rows fill up
    /// with other blobs. Each blob keeps its own stripes and parity, so a shared row changes
    /// nothing in how a blob is verified, rebuilt, scrubbed or cleaned.
    pub fn of(loc: &Location, devices: usize, chunk: usize) -> Shape {
        let isolated = loc.scheme.is_isolated();
        let mut shape = Shape {
            geom: loc.scheme.geometry(devices),
            devices,
            chunk,
            len: loc.len,
            isolated,
            narrow: false,
            offset: 0,
        };
        if isolated || loc.len == 0 || loc.len >= shape.full_row_bytes() {
            return shape;
        }
        let g = shape.geom;
        let body = (chunk - SLOT) as u64;
        // A sector of data per chunk, and enough chunks that the blob is one short row.
        let chunks = loc.len.div_ceil(SECTOR).max(loc.len / body + 1) as usize;
        shape.geom = match loc.scheme {
            Scheme::None(_) => {
                let c = chunks.min(g.data);
                Geometry { width: c, data: c, stripes_per_row: 1 }
            }
            _ => Geometry { stripes_per_row: chunks.div_ceil(g.data).min(g.stripes_per_row), ..g },
        };
        if shape.geom.stripes_per_row * shape.geom.width < devices {
            shape.narrow = true;
            shape.offset = usize::from(loc.device);
        }
        shape
    }

    /// Device columns the blob occupies in its rows: one when isolated, its own when narrow,
    /// else all (the columns no stripe uses are written with zeros).
    pub fn columns(&self) -> usize {
        if self.isolated {
            1
        } else if self.narrow {
            self.geom.stripes_per_row * self.geom.width
        } else {
            self.devices
        }
    }

    /// Does the blob have chunks on device `d`? (`device` is the location's.)
    pub fn uses_device(&self, band: u32, start: u64, device: u16, d: usize) -> bool {
        if self.isolated {
            return usize::from(device) == d;
        }
        if !self.narrow {
            return true;
        }
        let first = (rotation(band, start, self.devices) + self.offset) % self.devices;
        (d + self.devices - first) % self.devices < self.columns()
    }

    /// Data chunks per row.
    fn row_chunks(&self) -> u64 {
        (self.geom.stripes_per_row * self.geom.data) as u64
    }

    /// Data capacity of a full-height row.
    pub fn full_row_bytes(&self) -> u64 {
        self.row_chunks() * (self.chunk - SLOT) as u64
    }

    /// Height of the last (partial) row holding `rem` bytes: no trailer slot, so at most a
    /// chunk (`rem` is under a full row's capacity).
    fn tail_height(&self, rem: u64) -> usize {
        let per_chunk = rem.div_ceil(self.row_chunks()) as usize;
        per_chunk.div_ceil(SECTOR as usize) * SECTOR as usize
    }

    /// Chunks of the blob's short last row (every column of every stripe), whose checksums its
    /// metadata record carries; 0 when the blob ends with a full row.
    pub fn tail_chunks(&self) -> usize {
        if self.len.is_multiple_of(self.full_row_bytes()) {
            0
        } else {
            self.geom.stripes_per_row * self.geom.width
        }
    }

    /// Number of rows.
    pub fn row_count(&self) -> u64 {
        self.len.div_ceil(self.full_row_bytes())
    }

    /// Sectors the blob occupies in its zone (per device column). Saturating: a length read
    /// from a hostile record must not wrap into a small count that passes a bounds check.
    pub fn sectors(&self) -> u64 {
        let full = self.len / self.full_row_bytes();
        let rem = self.len % self.full_row_bytes();
        let mut bytes = u128::from(full) * self.chunk as u128;
        if rem > 0 {
            bytes += self.tail_height(rem) as u128;
        }
        u64::try_from(bytes / u128::from(SECTOR)).unwrap_or(u64::MAX)
    }

    /// Row `i` of a blob starting at sector `start`.
    pub fn row(&self, start: u64, i: u64) -> Row {
        let full = self.full_row_bytes();
        let data_off = i * full;
        let data_len = (self.len - data_off).min(full);
        let tail = data_len < full;
        let height = if tail { self.tail_height(data_len) } else { self.chunk };
        Row { tail, index: i as u32, start: start + i * (self.chunk as u64 / SECTOR), height, data_off, data_len }
    }

    /// The rows overlapping blob bytes `[from, to)`.
    pub fn rows_between(&self, start: u64, from: u64, to: u64) -> impl Iterator<Item = Row> + '_ {
        let full = self.full_row_bytes();
        let first = from / full;
        let last = if to == 0 { 0 } else { (to - 1) / full + 1 };
        (first..last.min(self.row_count())).map(move |i| self.row(start, i))
    }

    /// Device holding column `col` of stripe `stripe` in `row` of `band`; `device` is the
    /// location's device for isolated placement.
    pub fn device_of(&self, band: u32, row: &Row, stripe: usize, col: usize, device: u16) -> usize {
        if self.isolated {
            return device as usize;
        }
        // Every row before the last is full height, so the blob starts `index` chunks above.
        let blob_start = row.start - u64::from(row.index) * (self.chunk as u64 / SECTOR);
        let rows_per_run = (ROTATE_BYTES / self.chunk).max(1);
        let mut run = row.index as usize / rows_per_run;
        if row.tail && run > 0 && (row.index as usize).is_multiple_of(rows_per_run) {
            // A short last row that would open a run of its own stays with the run before it,
            // right after it on the same devices, so a read fetches it with that run's I/O
            // instead of a small I/O of its own on other devices.
            run -= 1;
        }
        let shift = run * self.geom.data;
        (rotation(band, blob_start, self.devices) + self.offset + shift + stripe * self.geom.width + col) % self.devices
    }

    /// Chunk number bound into the trailer of (row, stripe, column).
    pub fn chunk_index(&self, row: &Row, stripe: usize, col: usize) -> u32 {
        let per_row = (self.geom.stripes_per_row * self.geom.width) as u32;
        row.index * per_row + (stripe * self.geom.width + col) as u32
    }
}

/// First device of a blob's first row: a hash of the blob's position, so that parity and spare
/// columns of different blobs start on different devices.
fn rotation(band: u32, start: u64, devices: usize) -> usize {
    let mut x = start ^ (u64::from(band) << 40) ^ 0x9E37_79B9_7F4A_7C15;
    x = (x ^ (x >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
    x = (x ^ (x >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
    x ^= x >> 31;
    (x % devices as u64) as usize
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::scheme::{Placement, Scheme};

    fn shape(scheme: Scheme, len: u64) -> Shape {
        let loc = Location { seq: 1, band: 0, start: 0, device: 0, scheme, len };
        Shape::of(&loc, 4, 64 << 10)
    }

    #[test]
    fn rows_cover_the_blob_exactly() {
        for scheme in [
            Scheme::Rs { k: 2, p: 2 },
            Scheme::Replicate(3),
            Scheme::None(Placement::Striped),
            Scheme::None(Placement::Isolated),
        ] {
            for len in [0u64, 1, 3584, 3585, 4080, 4081, 130_000, 1 << 20, (1 << 20) + 17] {
                let s = shape(scheme, len);
                let rows: Vec<Row> = s.rows_between(100, 0, len).collect();
                let total: u64 = rows.iter().map(|r| r.data_len).sum();
                assert_eq!(total, len, "{scheme} {len}");
                let sectors: u64 = rows.iter().map(|r| r.height as u64 / SECTOR).sum();
                assert_eq!(sectors, s.sectors(), "{scheme} {len}");
                for w in rows.windows(2) {
                    assert_eq!(w[1].start, w[0].start + w[0].height as u64 / SECTOR);
                    assert_eq!(w[1].data_off, w[0].data_off + w[0].data_len);
                }
                for r in &rows {
                    let cap = (s.geom.stripes_per_row * s.geom.data * r.body()) as u64;
                    assert!(r.data_len <= cap && r.height % SECTOR as usize == 0);
                }
            }
        }
    }

    /// The short last row has no trailer slot: a blob takes the sectors its bytes need per
    /// column, no more, and its record keeps a checksum per chunk of that row.
    #[test]
    fn a_small_blob_takes_no_sector_more_than_its_bytes() {
        let iso = Scheme::None(Placement::Isolated);
        for (scheme, len, sectors, tails) in [
            (iso, 4096, 1, 1),
            (iso, 4097, 2, 1),
            (iso, 16 << 10, 4, 1),
            (iso, 1000, 1, 1),
            (Scheme::Rs { k: 2, p: 2 }, 16 << 10, 2, 4), // 8 KiB of data per column
            (Scheme::Rs { k: 2, p: 2 }, 4096, 1, 4),
            (Scheme::Replicate(2), 16 << 10, 2, 4), // two stripes per row on four devices
            (Scheme::None(Placement::Striped), 16 << 10, 1, 4),
            // Full rows keep their trailer slots; a blob ending on a full row has no tail.
            (iso, (64 << 10) - 512, 16, 0),
            (iso, (64 << 10) - 511, 17, 1),
        ] {
            let s = shape(scheme, len);
            assert_eq!((s.sectors(), s.tail_chunks()), (sectors, tails), "{scheme} {len}");
        }
    }

    /// Blobs smaller than a row of their scheme use only the columns they need, and those that
    /// leave columns free are narrow (they share rows); the rest keep the whole row.
    #[test]
    fn small_blobs_are_narrowed_to_the_columns_they_need() {
        let striped = Scheme::None(Placement::Striped);
        for (scheme, len, columns, narrow, sectors) in [
            (striped, 4096, 1, true, 1),
            (striped, 9000, 3, true, 1),
            (striped, 16 << 10, 4, false, 1),
            (striped, 100_000, 4, false, 7),
            (Scheme::Replicate(2), 4096, 2, true, 1),
            (Scheme::Replicate(2), 16 << 10, 4, false, 2),
            (Scheme::Rs { k: 1, p: 1 }, 3000, 2, true, 1),
            (Scheme::Rs { k: 2, p: 2 }, 4096, 4, false, 1),
            // Narrow (three of four columns), though no other such blob fits the rest of its row.
            (Scheme::Replicate(3), 4096, 3, true, 1),
            (Scheme::Replicate(3), 100_000, 4, false, 25), // past a row: the unused column is zeroed
            (Scheme::None(Placement::Isolated), 4096, 1, false, 1),
        ] {
            let s = shape(scheme, len);
            assert_eq!((s.columns(), s.narrow, s.sectors()), (columns, narrow, sectors), "{scheme} {len}");
            let rows: Vec<Row> = s.rows_between(0, 0, len).collect();
            assert_eq!(rows.iter().map(|r| r.data_len).sum::<u64>(), len, "{scheme} {len}");
        }
    }

    /// Narrow blobs at different offsets of a shared row hold disjoint devices, exactly the
    /// ones `uses_device` names.
    #[test]
    fn narrow_blobs_sharing_a_row_hold_disjoint_devices() {
        for (scheme, len) in [(Scheme::None(Placement::Striped), 4096), (Scheme::Replicate(2), 4096)] {
            let one = shape(scheme, len);
            let per = one.columns();
            let mut seen = std::collections::HashSet::new();
            for offset in (0..4).step_by(per) {
                let loc = Location { seq: 1, band: 3, start: 40, device: offset as u16, scheme, len };
                let s = Shape::of(&loc, 4, 64 << 10);
                let row = s.row(40, 0);
                let mut devs = Vec::new();
                for st in 0..s.geom.stripes_per_row {
                    for c in 0..s.geom.width {
                        devs.push(s.device_of(3, &row, st, c, loc.device));
                    }
                }
                for d in 0..4 {
                    assert_eq!(s.uses_device(3, 40, loc.device, d), devs.contains(&d), "{scheme} offset {offset}");
                }
                for d in devs {
                    assert!(seen.insert(d), "{scheme}: device {d} holds two blobs' chunks");
                }
            }
            assert_eq!(seen.len(), 4, "{scheme}: the row is full");
        }
    }

    #[test]
    fn a_stripe_never_puts_two_chunks_on_one_device() {
        let s = shape(Scheme::Rs { k: 3, p: 1 }, 10 << 20);
        for row in s.rows_between(0, 0, s.len) {
            let devs: std::collections::HashSet<usize> = (0..4).map(|c| s.device_of(7, &row, 0, c, 0)).collect();
            assert_eq!(devs.len(), 4);
        }
    }

    #[test]
    fn parity_rotates_over_devices() {
        for (k, p) in [(2u8, 2u8), (3, 1), (1, 3)] {
            let s = shape(Scheme::Rs { k, p }, 64 << 20);
            let mut counts = [0usize; 4];
            for row in s.rows_between(0, 0, s.len) {
                for c in k as usize..4 {
                    counts[s.device_of(0, &row, 0, c, 0)] += 1;
                }
            }
            let even = s.row_count() as usize * p as usize / 4;
            for c in counts {
                assert!(c.abs_diff(even) <= 16, "rs({k},{p}): parity unevenly spread: {counts:?}");
            }
        }
    }

    /// Chunks of data rows each device holds for the blob of `s`.
    fn data_per_device(s: &Shape) -> Vec<usize> {
        let mut counts = vec![0; s.devices];
        for row in s.rows_between(0, 0, s.len) {
            for st in 0..s.geom.stripes_per_row {
                for c in 0..s.geom.data {
                    counts[s.device_of(0, &row, st, c, 0)] += 1;
                }
            }
        }
        counts
    }

    #[test]
    fn a_blobs_data_is_spread_evenly_in_whole_runs() {
        let run = ROTATE_BYTES / (64 << 10);
        // 4 MiB of rs(2,2) over 4 devices: 32 full rows and a short last one; each device holds
        // one whole 16-row run of data, and the short row stays with the second run.
        let s = shape(Scheme::Rs { k: 2, p: 2 }, 4 << 20);
        assert_eq!(s.row_count(), 2 * run as u64 + 1);
        let mut counts = data_per_device(&s);
        counts.sort();
        assert_eq!(counts, [run, run, run + 1, run + 1]);
        let rows: Vec<Row> = s.rows_between(0, 0, s.len).collect();
        let (last, before) = (rows[2 * run], rows[2 * run - 1]);
        assert!(last.tail && last.height < s.chunk);
        for c in 0..4 {
            assert_eq!(s.device_of(0, &last, 0, c, 0), s.device_of(0, &before, 0, c, 0), "column {c}");
        }
        for (scheme, runs) in
            [(Scheme::Rs { k: 2, p: 2 }, 8), (Scheme::Rs { k: 3, p: 1 }, 12), (Scheme::Replicate(2), 4)]
        {
            let s = shape(scheme, runs as u64 * run as u64 * s.full_row_bytes());
            let counts = data_per_device(&s);
            let total: usize = counts.iter().sum();
            assert!(counts.iter().all(|&c| c == total / 4), "{scheme}: {counts:?}");
        }
    }
}
