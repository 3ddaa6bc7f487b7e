//! The cleaner: picks a sealed band (greedy: least live; or cost-benefit: Rosenblum & Ousterhout's
//! (1 − u) · age / (1 + u)), asks the layer above what to do with each live blob — relocate,
//! relocate into another scheme, or drop (GC-based eviction) — moves or frees them, and returns
//! the band to the free list once the moves are durable. Relocated bytes are counted apart from
//! user writes.

use crate::error::{Error, Result};
use crate::handle::Store;
use crate::location::Location;
use crate::record::Record;
use crate::scheme::Scheme;
use crate::stats::Stat;
use crate::store::{BlobHealth, Durability, Inner, PutOptions};

/// How the cleaner chooses its victim band.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum VictimPolicy {
    /// The sealed band with the fewest live device bytes.
    Greedy,
    /// The sealed band maximising (1 − u) · age / (1 + u), u = live / used.
    CostBenefit,
}

/// What to do with one live blob of the victim band.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum GcDecision {
    /// Move it, same scheme.
    Relocate,
    /// Move it into another scheme (its class changed).
    Reencode(Scheme),
    /// Free it (the cache evicts it instead of paying for the move).
    Drop,
}

/// The layer above's say in cleaning.
pub trait GcHandler {
    /// Decides the fate of a live blob.
    fn decide(&mut self, loc: &Location, header: &[u8]) -> GcDecision;
    /// The blob moved from `old` to `new`.
    fn relocated(&mut self, _old: &Location, _new: &Location) {}
    /// The blob was dropped as decided.
    fn dropped(&mut self, _loc: &Location) {}
    /// The blob could not be read (beyond its redundancy) and was freed.
    fn lost(&mut self, _loc: &Location, _err: &Error) {}
}

/// A handler that relocates everything.
pub struct KeepAll;

impl GcHandler for KeepAll {
    fn decide(&mut self, _: &Location, _: &[u8]) -> GcDecision {
        GcDecision::Relocate
    }
}

/// What one cleaning pass did.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct GcReport {
    /// The band cleaned (its zone index).
    pub band: u32,
    /// Live blobs moved (or re-encoded) out of the band.
    pub relocated: u64,
    /// User bytes (blob lengths) of the relocated blobs.
    pub relocated_bytes: u64,
    /// Blobs freed because the handler said [`GcDecision::Drop`].
    pub dropped: u64,
    /// Blobs freed because they could not be read (beyond their redundancy).
    pub lost: u64,
    /// Device bytes the band returns to the free pool.
    pub reclaimed_device_bytes: u64,
}

impl Store {
    /// Cleans one band chosen by `policy`. `Ok(None)` when no sealed band exists.
    pub fn gc(&self, policy: VictimPolicy, handler: &mut dyn GcHandler) -> Result<Option<GcReport>> {
        let _one = self.inner.space.lock_cleaner();
        match self.inner.pick_victim(policy) {
            None => Ok(None),
            Some(band) => self.inner.clean(band, handler).map(Some),
        }
    }

    /// Seals the open bands, so that a following `gc` may clean them too.
    pub fn seal_open_bands(&self) {
        self.inner.space.seal_open();
    }
}

/// Ends a cleaning pass's hold on its band, however the pass ends.
struct Cleaning<'a>(&'a crate::space::Space, u32);

impl Drop for Cleaning<'_> {
    fn drop(&mut self) {
        self.0.set_cleaning(self.1, false);
    }
}

impl Inner {
    fn pick_victim(&self, policy: VictimPolicy) -> Option<u32> {
        let now = self.space.next_seq();
        self.space.best_sealed(|b| {
            let used = b.used.max(1) as f64;
            let u = b.live as f64 / used;
            match policy {
                VictimPolicy::Greedy => -(b.live as f64),
                VictimPolicy::CostBenefit => (1.0 - u) * (now.saturating_sub(b.last_write) + 1) as f64 / (1.0 + u),
            }
        })
    }

    fn clean(&self, band: u32, handler: &mut dyn GcHandler) -> Result<GcReport> {
        self.stats.add(Stat::GcRuns, 1);
        // Nothing is shed into the band while its blobs are moved out (it must end empty).
        self.space.set_cleaning(band, true);
        let _done = Cleaning(&self.space, band);
        let mut report = GcReport { band, ..Default::default() };
        let (mut entries, used) = self.space.contents(band);
        entries.sort_by_key(|e| e.loc.seq);
        // Live blobs copied, committed (moved) only once every copy is durable (below).
        let mut copies = Vec::new();
        for e in entries {
            let decision = handler.decide(&e.loc, e.header());
            let target = match decision {
                GcDecision::Drop => {
                    if self.free(&e.loc, Durability::None).is_ok() {
                        report.dropped += 1;
                        self.stats.add(Stat::GcDroppedBlobs, 1);
                        handler.dropped(&e.loc);
                    }
                    continue;
                }
                GcDecision::Relocate => e.loc.scheme,
                GcDecision::Reencode(s) => s,
            };
            // Byte-less media: the relocation's I/O without bytes (nothing is kept to move).
            let read = if self.devs.stores_bytes() {
                self.read(&e.loc, 0, e.loc.len)
            } else {
                self.read_sized(&e.loc, 0, e.loc.len).map(|len| vec![0u8; len as usize])
            };
            let data = match read {
                Ok(d) => d,
                Err(Error::NotFound { .. }) => continue, // freed meanwhile
                Err(err) => {
                    if self.free(&e.loc, Durability::None).is_ok() {
                        report.lost += 1;
                        handler.lost(&e.loc, &err);
                    }
                    continue;
                }
            };
            let opts =
                PutOptions::new(target).placement(if e.loc.scheme.is_isolated() { u64::from(e.loc.device) } else { 0 });
            match self.put(e.header(), &data, &opts, true) {
                Ok((new, tail)) => copies.push((e, new, tail)),
                Err(err) => {
                    self.discard_copies(copies);
                    return Err(err);
                }
            }
        }
        // The copies reach stable storage before the records that free their originals are
        // queued. Why: `Put(copy) + Free(original)` go into one journal batch, and a power cut
        // during that batch's fdatasync can keep the batch and lose the copy's unsynced data;
        // the replay then drops the copy (it fails verification) and frees the original — an
        // acknowledged blob gone. One fdatasync of every device per cleaned band.
        if self.devs.stores_bytes() && !copies.is_empty() {
            if let Err(err) = self.sync_everywhere("cleaner") {
                self.discard_copies(copies);
                return Err(Error::Journal(err));
            }
        }
        for (e, new, tail) in copies {
            // A device that failed the sync may have taken the copy past its redundancy: keep
            // the original (the band then cannot be reclaimed this time).
            if self.health(&new) == BlobHealth::Lost {
                self.space.release(new.band);
                continue;
            }
            if self.commit_move(&e.loc, &new, e.header(), &tail)? {
                report.relocated += 1;
                report.relocated_bytes += e.loc.len;
                handler.relocated(&e.loc, &new);
            }
        }
        // Every move and free above must be durable before the band can be overwritten.
        let pending = {
            let m = self.meta.mutation();
            if !self.space.reset_if_empty(&m, band) {
                return Err(Error::Journal(format!("band {band} gained blobs while being cleaned")));
            }
            m.enqueue(self.devs.stores_bytes(), |w| Record::BandReset { band }.encode(w))?
        };
        // On byte-less (simulated) media nothing can be overwritten or recovered, so the cleaner
        // does not wait for the journal writer: the records are still written (and counted) in
        // order, but the replay does not stall on every reclaimed band.
        pending.wait()?;
        self.space.reclaim(band);
        report.reclaimed_device_bytes = used;
        Ok(report)
    }

    /// Gives up copies not committed: their space stays dead until cleaned.
    fn discard_copies(&self, copies: Vec<(crate::space::Entry, Location, Vec<u32>)>) {
        for (_, new, _) in copies {
            self.space.release(new.band);
        }
    }

    /// Swaps `old` for its relocated copy `new` in one journal batch. If `old` was freed while
    /// being copied, the copy is discarded and false is returned.
    fn commit_move(&self, old: &Location, new: &Location, header: &[u8], tail: &[u32]) -> Result<bool> {
        let m = self.meta.mutation();
        if !self.space.remove_live(&m, old) {
            self.space.release(new.band); // the copy's space stays dead until cleaned
            return Ok(false);
        }
        self.resync.forget(&m, old.seq);
        self.space.land(&m, new.band, new, header, tail);
        m.enqueue(false, |w| {
            self.encode_put_marking_stale(w, new, header, tail);
            Record::Free { seq: old.seq, band: old.band }.encode(w);
        })?;
        Ok(true)
    }
}
