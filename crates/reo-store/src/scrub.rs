//! Scrub: a throttled pass that reads and verifies every chunk (data, parity and copies) of every
//! live blob, and repairs what redundancy allows.
//!
//! Repair is in place: when a blob has bad chunks, it is read whole through the verifying read
//! path (reconstructing from copies or parity), laid out again exactly as a put does, and the
//! columns of the devices holding bad chunks are rewritten at the same place. The location does
//! not change, so the layer above has nothing to update. A blob whose data cannot be
//! reconstructed is reported unrecoverable (and left alone: the layer above decides). Chunks on
//! failed devices, and chunks a running rebuild has not restored yet, are not scrubbed.
//!
//! Blobs a finished rebuild could not restore onto its device (`Unrestored`: their other chunks
//! were unreadable then, e.g. a peer's transient read errors) are tried again: if they read now,
//! their column is written onto that device like a repair and they leave its set; a checkpoint at
//! the end of the pass makes the smaller set durable (a crash before it only leaves them to the
//! next scrub — the set errs on the side of not reading the device).

use crate::handle::Store;
use crate::location::Location;
use crate::read::ChunkAt;
use crate::stats::Stat;
use crate::store::Inner;
use std::time::{Duration, Instant};

/// How a scrub runs.
#[derive(Debug, Clone, Default)]
pub struct ScrubOptions {
    /// At most this many bytes read per second (`None`: as fast as it goes).
    pub rate_limit: Option<u64>,
}

/// What a scrub found.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct ScrubReport {
    /// Live blobs checked.
    pub blobs: u64,
    /// Chunks read and checked.
    pub chunks_verified: u64,
    /// Chunks that were unreadable or failed their checksum.
    pub chunks_bad: u64,
    /// Bad chunks rewritten from redundancy.
    pub chunks_repaired: u64,
    /// Chunks not checked: on failed devices or awaiting the rebuild.
    pub chunks_skipped: u64,
    /// Device bytes read (the chunks' heights; what the rate limit counts).
    pub bytes_read: u64,
    /// Blobs with a bad chunk their redundancy cannot rebuild.
    pub unrecoverable: Vec<Location>,
    /// Blobs a rebuild had left off a device, restored onto it now (see the module doc).
    pub blobs_restored: u64,
}

impl Store {
    /// Verifies every chunk of every live blob, repairing what redundancy allows.
    pub fn scrub(&self, opts: &ScrubOptions) -> ScrubReport {
        let inner = &self.inner;
        let t0 = Instant::now();
        let mut rep = ScrubReport::default();
        for (loc, _) in self.blobs() {
            if let Some(rate) = opts.rate_limit {
                let due = Duration::from_secs_f64(rep.bytes_read as f64 / rate.max(1) as f64);
                if let Some(w) = due.checked_sub(t0.elapsed()) {
                    std::thread::sleep(w); // the throttle itself, not a wait for an event
                }
            }
            inner.scrub_blob(&loc, &mut rep);
        }
        if rep.blobs_restored > 0 {
            if let Err(e) = crate::persist::checkpoint(inner, false) {
                // The blobs stay restored; the set shrinks on disk with the next checkpoint.
                tracing::warn!(blobs = rep.blobs_restored, error = %e, "scrub restored blobs but its checkpoint failed");
            }
        }
        rep
    }
}

impl Inner {
    /// Every chunk of the blob (all columns of all stripes of all rows).
    pub(crate) fn blob_chunks(&self, loc: &Location) -> Vec<ChunkAt> {
        let shape = self.shape(loc);
        let g = shape.geom;
        let mut out = Vec::new();
        for row in shape.rows_between(u64::from(loc.start), 0, loc.len) {
            for s in 0..g.stripes_per_row {
                for c in 0..g.width {
                    out.push(self.chunk_at(loc, &shape, &row, s, c));
                }
            }
        }
        out
    }

    /// Do all the blob's chunks on device `d` read and verify? (Bypasses the rebuild's view.)
    pub(crate) fn column_verifies(&self, loc: &Location, d: usize) -> bool {
        let chunks: Vec<ChunkAt> = self.blob_chunks(loc).into_iter().filter(|c| c.device == d).collect();
        let media = &self.devs.get(d);
        let tail = self.space.tail_crcs(loc);
        chunks.iter().all(|c| {
            let mut b = self.bufs.take(c.height);
            let ok = media.read_at(&mut b[..c.height], c.offset).is_ok()
                && (!self.devs.stores_bytes() || c.verifies(&b[..c.height], loc.seq, tail.as_deref()));
            self.bufs.give(b);
            ok
        })
    }

    fn scrub_blob(&self, loc: &Location, rep: &mut ScrubReport) {
        let _gc = self.space.lock_cleaner();
        if !self.space.is_live(loc) {
            return;
        }
        rep.blobs += 1;
        let all = self.blob_chunks(loc);
        let (chunks, skipped): (Vec<ChunkAt>, Vec<ChunkAt>) =
            all.into_iter().partition(|c| !self.down(c.device, loc.seq));
        rep.chunks_skipped += skipped.len() as u64;
        // Never hedged: scrub verifies every chunk where it lies.
        let (bufs, got) = self.fetch(loc, &chunks, &crate::hedge::Hedge::off());
        for b in bufs {
            self.bufs.give(b);
        }
        rep.chunks_verified += chunks.len() as u64;
        rep.bytes_read += chunks.iter().map(|c| c.height as u64).sum::<u64>();
        // A chunk of a device that failed while the scrub read it was not verified: skipped, not
        // bad (and nothing is written to that device).
        let (bad, failed_meanwhile): (Vec<usize>, Vec<usize>) =
            (0..chunks.len()).filter(|&i| got[i].is_none()).partition(|&i| !self.down(chunks[i].device, loc.seq));
        rep.chunks_bad += bad.len() as u64;
        rep.chunks_skipped += failed_meanwhile.len() as u64;
        rep.chunks_verified -= failed_meanwhile.len() as u64;
        // Devices up and serving, but left without this blob by their rebuild.
        let mut unrestored: Vec<usize> =
            skipped.iter().map(|c| c.device).filter(|&d| self.restorable_onto(d, loc.seq)).collect();
        unrestored.sort_unstable();
        unrestored.dedup();
        if bad.is_empty() && unrestored.is_empty() {
            return;
        }
        let data = match self.read_verified_waiting(loc, 0, loc.len) {
            Ok(d) => d,
            Err(_) => {
                if !bad.is_empty() {
                    rep.unrecoverable.push(*loc);
                }
                return;
            }
        };
        let Some((cols, len)) = self.lay_out(loc, &data) else { return };
        let off = self.layout.offset(loc.band, u64::from(loc.start));
        let mut devs: Vec<usize> = bad.iter().map(|&i| chunks[i].device).chain(unrestored.iter().copied()).collect();
        devs.sort_unstable();
        devs.dedup();
        for dev in devs {
            match self.devs.get(dev).write_at(&cols[dev][..len], off).and_then(|_| self.devs.get(dev).sync()) {
                Ok(()) if unrestored.contains(&dev) => {
                    // Written and synced before it leaves the set: a checkpoint that sees the
                    // smaller set can only follow the bytes.
                    self.resync.restored(dev, loc.seq);
                    rep.blobs_restored += 1;
                }
                Ok(()) => rep.chunks_repaired += bad.iter().filter(|&&i| chunks[i].device == dev).count() as u64,
                Err(e) => {
                    self.stats.add(Stat::WriteErrors, 1);
                    self.mark_failed(dev, &format!("write error during scrub repair: {e}"));
                }
            }
        }
        for c in cols {
            self.bufs.give(c);
        }
    }

    /// Is `d` a serving device that lacks blob `seq` only because its rebuild could not restore
    /// it (not failed, not being rebuilt)?
    fn restorable_onto(&self, d: usize, seq: u64) -> bool {
        !self.devs.is_failed(d) && self.resync.restorable(d, seq)
    }
}
