//! Sized reads: the device I/O of a read without its bytes — what the simulator needs to replay
//! millions of requests over byte-less media ([`reo_media::SimMedia`]). The same chunks are
//! chosen as by a real read (data chunks of the range; on a failed device, a replica or the
//! stripe's other columns), merged into the same runs, and issued as [`reo_media::Media::read_discard`];
//! nothing is copied, checked or decoded. On media that store bytes a sized read is a real,
//! verified read whose bytes are dropped, so its answer is the same either way.

use crate::error::{Error, Result};
use crate::geometry::Row;
use crate::location::Location;
use crate::read::{ChunkAt, Want};
use crate::scheme::Scheme;
use crate::stats::Stat;
use crate::store::Inner;
use std::cell::RefCell;

/// Buffers a sized read reuses: the simulator issues millions, and four allocations each were a
/// tenth of a replay's time.
#[derive(Default)]
struct Scratch {
    rows: Vec<Row>,
    want: Vec<Want>,
    chunks: Vec<ChunkAt>,
    /// Replicas standing in for chunks on failed devices, with their copy number.
    copies: Vec<(usize, ChunkAt)>,
}

thread_local! {
    static SCRATCH: RefCell<Scratch> = RefCell::default();
}

impl Inner {
    /// Reads blob bytes `[from, to)` for their I/O only; returns the byte count. Fails as
    /// [`Inner::read`] would: a bad range, a freed blob, or a wanted chunk beyond redundancy.
    pub(crate) fn read_sized(&self, loc: &Location, from: u64, to: u64) -> Result<u64> {
        if self.devs.stores_bytes() {
            return self.read(loc, from, to).map(|v| v.len() as u64);
        }
        SCRATCH.with_borrow_mut(|scratch| self.read_sized_with(scratch, loc, from, to))
    }

    fn read_sized_with(&self, scratch: &mut Scratch, loc: &Location, from: u64, to: u64) -> Result<u64> {
        if from > to || to > loc.len {
            return Err(Error::BadRange { start: from, end: to, len: loc.len });
        }
        if !self.space.is_live(loc) {
            return Err(Error::NotFound { seq: loc.seq });
        }
        self.stats.add(Stat::Reads, 1);
        self.stats.add(Stat::ReadBytes, to - from);
        let shape = self.shape(loc);
        let Scratch { rows, want, chunks, copies } = scratch;
        rows.clear();
        rows.extend(shape.rows_between(u64::from(loc.start), from, to));
        self.wanted_into(loc, &shape, rows, from, to, want, None);
        let (rows, want) = (&*rows, &*want);
        chunks.clear();
        copies.clear();
        let mut degraded = false;
        let g = shape.geom;
        for &(at, ri, j) in want {
            if !self.down(at.device, loc.seq) {
                chunks.push(at);
                continue;
            }
            degraded = true;
            let lost = || Error::Corrupt {
                seq: loc.seq,
                detail: format!("chunk {} on failed device {}: beyond the scheme's redundancy", at.index, at.device),
            };
            match loc.scheme {
                Scheme::None(_) => return Err(lost()),
                Scheme::Replicate(r) => {
                    let copy = (1..r as usize)
                        .map(|c| (c, self.chunk_at(loc, &shape, &rows[ri], j / g.data, c)))
                        .find(|(_, c)| !self.down(c.device, loc.seq))
                        .ok_or_else(lost)?;
                    copies.push(copy);
                }
                // The stripe's other columns come from `prefetch_columns` below.
                Scheme::Rs { .. } => {}
            }
        }
        if let Scheme::Rs { k, .. } = loc.scheme {
            let extra = self.prefetch_columns(loc, &shape, rows, want, &crate::hedge::Hedge::off());
            // Every stripe with a wanted chunk down needs k healthy columns in all.
            let mut i = 0;
            while i < want.len() {
                let (ri, s) = (want[i].1, want[i].2 / g.data);
                let end = (i..want.len()).find(|&e| (want[e].1, want[e].2 / g.data) != (ri, s)).unwrap_or(want.len());
                if want[i..end].iter().any(|w| self.down(w.0.device, loc.seq)) {
                    let healthy = want[i..end].iter().filter(|w| !self.down(w.0.device, loc.seq)).count()
                        + extra.iter().filter(|e| (e.0, e.1) == (ri, s)).count();
                    if healthy < k as usize {
                        return Err(Error::Corrupt {
                            seq: loc.seq,
                            detail: format!("a stripe has {healthy} healthy columns, {k} needed"),
                        });
                    }
                }
                i = end;
            }
            chunks.extend(extra.iter().map(|&(ri, s, c)| self.chunk_at(loc, &shape, &rows[ri], s, c)));
        }
        self.discard_runs(chunks)?;
        // A real read fetches the replicas of chunks on failed devices after its first round,
        // one round per copy number (`rebuild.rs`).
        copies.sort_by_key(|&(c, _)| c);
        let mut rest = &copies[..];
        while let Some(&(copy, _)) = rest.first() {
            let n = rest.iter().take_while(|(c, _)| *c == copy).count();
            chunks.clear();
            chunks.extend(rest[..n].iter().map(|&(_, c)| c));
            self.discard_runs(chunks)?;
            rest = &rest[n..];
        }
        if degraded {
            self.stats.add(Stat::DegradedReads, 1);
        }
        Ok(to - from)
    }

    /// Issues the runs a real fetch of `chunks` issues: adjacent chunks of a device merged up
    /// as [`Inner::joins_run`] says.
    fn discard_runs(&self, chunks: &mut [ChunkAt]) -> Result<()> {
        chunks.sort_by_key(|c| (c.device, c.offset));
        let mut run: Option<(usize, u64, usize)> = None;
        for c in chunks.iter().map(Some).chain([None]) {
            match (run.as_mut(), c) {
                (Some(r), Some(c)) if r.0 == c.device && r.1 + r.2 as u64 == c.offset && self.joins_run(r.2, c) => {
                    r.2 += c.height;
                }
                (r, c) => {
                    if let Some(&mut (d, off, len)) = r {
                        self.devs.get(d).read_discard(len, off).map_err(|source| {
                            self.stats.add(Stat::ReadErrors, 1);
                            Error::Io { device: d, op: "read", source }
                        })?;
                    }
                    run = c.map(|c| (c.device, c.offset, c.height));
                }
            }
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use crate::config::StoreConfig;
    use crate::handle::Store;
    use crate::scheme::{Placement, Scheme};
    use crate::store::PutOptions;
    use reo_media::{Media, MediaStats, MemMedia, SimMedia};
    use std::sync::Arc;

    fn cfg() -> StoreConfig {
        StoreConfig {
            chunk_size: 16 << 10,
            zone_size: Some(16 << 20),
            journal_size: Some(1 << 20),
            checkpoint_size: Some(1 << 20),
            create: true,
            ..Default::default()
        }
    }

    const SCHEMES: [Scheme; 6] = [
        Scheme::None(Placement::Isolated),
        Scheme::None(Placement::Striped),
        Scheme::Replicate(2),
        Scheme::Replicate(4),
        Scheme::Rs { k: 2, p: 2 },
        Scheme::Rs { k: 3, p: 1 },
    ];

    /// Per device (reads, bytes read): the journal's background writes are not the read's.
    fn snapshot(sims: &[Arc<SimMedia>]) -> Vec<(u64, u64)> {
        sims.iter().map(|s| s.stats()).map(|s: MediaStats| (s.reads, s.read_bytes)).collect()
    }

    fn reset(sims: &[Arc<SimMedia>]) {
        sims.iter().for_each(|s| s.reset_stats());
    }

    /// On byte-less media a sized read issues exactly the device reads of a real read (same
    /// devices, same number of reads, same bytes), healthy and with each device failed, and
    /// fails exactly where the real read fails.
    #[test]
    fn sized_reads_issue_the_io_of_real_reads() {
        let n = 4;
        for scheme in SCHEMES {
            let sims: Vec<Arc<SimMedia>> = (0..n).map(|_| Arc::new(SimMedia::new(96 << 20))).collect();
            let devs: Vec<Arc<dyn Media>> = sims.iter().map(|m| m.clone() as Arc<dyn Media>).collect();
            let (store, _) = Store::open(devs, &cfg()).unwrap();
            let zeros = vec![0u8; 3 << 20];
            let lens = [100usize, 15_872, 16_000, 40_000, (1 << 20) + 12_345, 3 << 20];
            let locs: Vec<_> = lens
                .iter()
                .enumerate()
                .map(|(i, &l)| store.put(b"h", &zeros[..l], &PutOptions::new(scheme).placement(i as u64)).unwrap())
                .collect();
            for failed in [None, Some(0), Some(1), Some(3)] {
                if let Some(d) = failed {
                    store.fail_device(d).unwrap();
                }
                for loc in &locs {
                    for (a, b) in [(0, loc.len), (loc.len / 3, loc.len / 3 * 2 + 1), (loc.len - 1, loc.len)] {
                        reset(&sims);
                        let real = store.read(loc, a, b).map(|v| v.len() as u64);
                        let real_io = snapshot(&sims);
                        reset(&sims);
                        let sized = store.read_sized(loc, a, b);
                        let sized_io = snapshot(&sims);
                        let what = format!("{scheme} len {} [{a},{b}) failed {failed:?}", loc.len);
                        assert_eq!(real.is_ok(), sized.is_ok(), "{what}: {real:?} vs {sized:?}");
                        if let Ok(r) = real {
                            assert_eq!(sized.unwrap(), r, "{what}");
                            assert_eq!(real_io, sized_io, "{what}");
                        }
                    }
                }
                if failed.is_some() {
                    // One failure at a time: a fresh store for the next device.
                    break;
                }
            }
        }
    }

    /// A put on byte-less media writes the same device bytes as on real media.
    #[test]
    fn sized_writes_write_what_real_writes_write() {
        let n = 4;
        for scheme in SCHEMES {
            let sims: Vec<Arc<dyn Media>> =
                (0..n).map(|_| Arc::new(SimMedia::new(96 << 20)) as Arc<dyn Media>).collect();
            let mems: Vec<Arc<dyn Media>> =
                (0..n).map(|_| Arc::new(MemMedia::new(96 << 20)) as Arc<dyn Media>).collect();
            let (sim, _) = Store::open(sims, &cfg()).unwrap();
            let (mem, _) = Store::open(mems, &cfg()).unwrap();
            for (i, len) in [1usize, 100, 15_872, 16_368, 40_000, (1 << 20) + 12_345].into_iter().enumerate() {
                let data = vec![7u8; len];
                let opts = PutOptions::new(scheme).placement(i as u64);
                let a = sim.put(b"h", &data, &opts).unwrap();
                let b = mem.put(b"h", &data, &opts).unwrap();
                assert_eq!((a.band, a.start, a.device), (b.band, b.start, b.device), "{scheme} len {len}");
            }
            assert_eq!(sim.stats().put_device_bytes, mem.stats().put_device_bytes, "{scheme}");
        }
    }
}
