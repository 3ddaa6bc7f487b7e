//! The write path: allocate room in the scheme's open band, lay the blob out as rows of stripes
//! (data, parity or copies, each chunk sealed with its trailer, or, in the short last row, its
//! checksum kept for the record; `lay_out.rs`) and write it, then record the blob (and free) in
//! the journal.
//!
//! A blob is laid out and written a segment of rows at a time ([`SEGMENT`] bytes per device):
//! the segment's device writes go to the I/O pool, all devices in parallel, while the caller lays
//! out the next segment. Laying out (a CRC32C of every byte, the parity, and a copy of the bytes
//! the devices cannot take from the caller's memory) took a sizeable fraction of the time of
//! writing the same bytes when every byte was copied; done before any write, it would add that much to every put and leave
//! the devices idle meanwhile. (1 MiB measured best against 512 KiB, 2 and 4 MiB on the
//! reference machine: docs/BENCHMARKS.md.)

use crate::config::MAX_HEADER_LEN;
use crate::error::{Error, Result};
use crate::geometry::{Row, SECTOR};
use crate::lay_out::Column;
use crate::location::{Location, ROW_BAND};
use crate::record::Record;
use crate::scheme::Scheme;
use crate::stats::Stat;
use crate::store::{BlobHealth, Durability, Inner, PutOptions};
use parking_lot::Mutex;
use std::sync::atomic::{AtomicU64, Ordering};

/// Device bytes of one segment of a put (the rows laid out, then written, together).
const SEGMENT: usize = 1 << 20;

/// Largest put that announces its record to the journal before writing its data: one whose
/// write takes about the journal's gather bound (1 ms) or less.
const ANNOUNCED_MAX: usize = 64 << 10;

impl Inner {
    /// Stores a blob; returns its location and its short last row's checksums (for its record).
    /// `gc` marks cleaner relocations, counted apart from user writes, and recorded by the cleaner.
    pub(crate) fn put(&self, header: &[u8], data: &[u8], opts: &PutOptions, gc: bool) -> Result<(Location, Vec<u32>)> {
        if header.len() > MAX_HEADER_LEN {
            return Err(Error::HeaderTooLarge { len: header.len(), max: MAX_HEADER_LEN });
        }
        let scheme = opts.scheme;
        scheme.validate(self.n())?;
        let need = match scheme {
            Scheme::Rs { k, .. } => k as usize,
            _ => 1,
        };
        if self.devs.healthy() < need {
            return Err(Error::InsufficientDevices { scheme: scheme.to_string(), healthy: self.devs.healthy() });
        }
        let mut loc = Location { seq: 0, band: 0, start: 0, device: ROW_BAND, scheme, len: data.len() as u64 };
        let shape = self.shape(&loc);
        let sectors = shape.sectors();
        if sectors > self.layout.zone_sectors() {
            let max = self.shape(&loc).full_row_bytes() * (self.layout.zone / u64::from(self.layout.chunk));
            return Err(Error::TooLarge { len: loc.len, max });
        }
        // Held until the blob is recorded: a replacement waits for it (see `replace.rs`).
        let fence = self.meta.fence_put();
        loc.seq = self.space.take_seq(&fence);
        let (band, start, device) =
            self.space.allocate(&fence, scheme, &shape, opts.placement_key, gc, |d| self.devs.is_failed(d))?;
        loc.band = band;
        loc.start = start as u32;
        loc.device = device;
        // A batch due while the data is written waits for this record (`journal.rs`,
        // anticipation); withdrawn if the put fails. Only small puts: a large one's data write
        // would hold every batch for the whole gather bound.
        let coming =
            (opts.durability == Durability::Sync && !gc && data.len() <= ANNOUNCED_MAX).then(|| self.meta.expect());

        let (written, tail) = match self.write_blob(&loc, data) {
            Ok(w) if self.health(&loc) != BlobHealth::Lost => w,
            other => {
                self.space.release(band);
                other?;
                return Err(Error::InsufficientDevices { scheme: scheme.to_string(), healthy: self.devs.healthy() });
            }
        };
        let s = &self.stats;
        if gc {
            s.add(Stat::GcRelocatedBlobs, 1);
            s.add(Stat::GcRelocatedBytes, loc.len);
            s.add(Stat::GcDeviceBytes, written);
        } else {
            s.add(Stat::Puts, 1);
            s.add(Stat::PutBytes, loc.len);
            s.add(Stat::PutDeviceBytes, written);
        }
        if gc {
            // The cleaner commits the move (new put + free of the old blob) as one record pair.
            return Ok((loc, tail));
        }
        let pending = {
            let m = self.meta.mutation();
            self.space.land(&m, band, &loc, header, &tail);
            m.enqueue(opts.durability == Durability::Sync, |w| self.encode_put_marking_stale(w, &loc, header, &tail))?
        };
        // Queued: the writer need not wait for it any longer (and must not, while this put
        // waits for the writer).
        drop(coming);
        drop(fence);
        pending.wait()?;
        // The batch's fdatasync may have failed on the devices holding the blob (each such
        // device is marked failed, and the batch counts as durable if one device took it): the
        // blob's bytes are then not on stable storage where its scheme needs them, so the put is
        // not acknowledged, and its record is undone rather than left as a blob that reads lost.
        if self.health(&loc) == BlobHealth::Lost {
            self.free(&loc, opts.durability)?;
            return Err(Error::InsufficientDevices { scheme: scheme.to_string(), healthy: self.devs.healthy() });
        }
        Ok((loc, tail))
    }

    /// Frees a live blob.
    pub(crate) fn free(&self, loc: &Location, durability: Durability) -> Result<()> {
        let pending = {
            let m = self.meta.mutation();
            if !self.space.remove_live(&m, loc) {
                return Err(Error::NotFound { seq: loc.seq });
            }
            self.resync.forget(&m, loc.seq);
            m.enqueue(durability == Durability::Sync, |w| Record::Free { seq: loc.seq, band: loc.band }.encode(w))?
        };
        self.stats.add(Stat::Frees, 1);
        pending.wait()
    }

    /// Lays out and writes the blob's chunks, segment by segment (see the module doc); returns
    /// device bytes written and the checksums of the short last row's chunks. A device whose
    /// write fails is marked failed.
    ///
    /// Side buffers come from the buffer pool with stale contents, so every byte written is set
    /// by the layout: data then zero padding in copied chunks, parity, trailer slots, and zeros
    /// in the columns of a row that no stripe uses (a narrow blob writes only its own columns).
    fn write_blob(&self, loc: &Location, data: &[u8]) -> Result<(u64, Vec<u32>)> {
        let n = self.n();
        let offset = self.layout.offset(loc.band, u64::from(loc.start));
        let shape = self.shape(loc);
        if !self.devs.stores_bytes() {
            // Nothing is kept, so nothing is verified: the record still has its tail's size.
            return Ok((self.write_blob_sized(loc, offset), vec![0; shape.tail_chunks()]));
        }
        if shape.sectors() == 0 {
            return Ok((0, Vec::new()));
        }
        let mut tail = Vec::with_capacity(shape.tail_chunks());
        let segment_bytes = (SEGMENT / self.layout.chunk as usize).max(1) as u64 * shape.full_row_bytes();
        // The devices take full chunk bodies straight from `data` when its address and the body
        // length meet every device's direct-I/O alignment (see `lay_out.rs`). Every other piece
        // then meets it too: blob offsets are multiples of the body, and side pieces are
        // multiples of 512 bytes in a 4 KiB-aligned buffer — with chunk sizes multiples of 4 KiB,
        // a body divisible by the alignment means an alignment dividing 512. (A part that missed
        // it would still be written correctly, through `FileMedia`'s bounce buffer.)
        let align = self.devs.vector_align();
        let body = self.layout.chunk as usize - crate::chunk::SLOT;
        let zero_copy = (data.as_ptr() as usize).is_multiple_of(align) && body.is_multiple_of(align);
        let errors: Vec<Mutex<Option<std::io::Error>>> = (0..n).map(|_| Mutex::new(None)).collect();
        let written = AtomicU64::new(0);
        let write = |d: usize, col: Column, len: usize, at: u64| {
            match self.devs.get(d).write_vectored_at(&col.parts(data), at) {
                Ok(()) => {
                    written.fetch_add(len as u64, Ordering::Relaxed);
                }
                Err(e) => {
                    errors[d].lock().get_or_insert(e);
                }
            }
            self.bufs.give(col.side);
        };
        self.devs.pool().scope(|s| {
            let mut from = 0;
            while from < loc.len {
                // The last segment takes a remainder under half a segment (typically the
                // blob's short tail row) rather than leave it to a tiny write of its own.
                let to =
                    if loc.len - from < segment_bytes + segment_bytes / 2 { loc.len } else { from + segment_bytes };
                let rows: Vec<Row> = shape.rows_between(u64::from(loc.start), from, to).collect();
                let at = offset + (rows[0].start - u64::from(loc.start)) * SECTOR;
                let (cols, len) = self.lay_out_rows(loc, data, &rows, zero_copy, &mut tail);
                let mut cols: Vec<_> = cols.into_iter().enumerate().collect();
                // The last segment's first write runs here: a one-segment blob on one device
                // (small isolated puts) is written without a hop to the pool.
                let mine = if to == loc.len {
                    cols.iter().position(|(d, c)| !c.is_empty() && !self.devs.is_failed(*d))
                } else {
                    None
                };
                let mine = mine.map(|i| cols.swap_remove(i));
                for (d, col) in cols {
                    if col.is_empty() || self.devs.is_failed(d) {
                        self.bufs.give(col.side);
                        continue;
                    }
                    let write = &write;
                    s.spawn(move || write(d, col, len, at));
                }
                if let Some((d, col)) = mine {
                    write(d, col, len, at);
                }
                from = to;
            }
        });
        for (d, e) in errors.into_iter().enumerate() {
            if let Some(e) = e.into_inner() {
                self.stats.add(Stat::WriteErrors, 1);
                self.mark_failed(d, &format!("write error: {e}"));
            }
        }
        debug_assert_eq!(tail.len(), shape.tail_chunks(), "a checksum per chunk of the short last row");
        Ok((written.into_inner(), tail))
    }

    /// The simulator's write of a blob on byte-less media: the same device writes as
    /// [`Inner::write_blob`] (one column per device the blob uses), with no layout, encoding or
    /// sealing, since no byte is kept. Returns device bytes written.
    fn write_blob_sized(&self, loc: &Location, offset: u64) -> u64 {
        let shape = self.shape(loc);
        let col_len = (shape.sectors() * SECTOR) as usize;
        if col_len == 0 {
            return 0;
        }
        let mut written = 0;
        for d in 0..self.n() {
            if !shape.uses_device(loc.band, u64::from(loc.start), loc.device, d) || self.devs.is_failed(d) {
                continue;
            }
            match self.devs.get(d).write_zeros(col_len, offset) {
                Ok(()) => written += col_len as u64,
                Err(e) => {
                    self.stats.add(Stat::WriteErrors, 1);
                    self.mark_failed(d, &format!("write error: {e}"));
                }
            }
        }
        written
    }
}
