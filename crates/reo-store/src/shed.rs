//! Shedding copies: a small replicated blob becomes one isolated copy of itself, in place.
//!
//! Dirty data is replicated; once the layer above has written it back, the same bytes are clean
//! and need no redundancy (the isolated scheme). Rewriting them costs a device write per flushed
//! blob, and for small objects that write is as large as the object. A replicated blob whose
//! copies are each one short row of one chunk (a blob of up to a sector) already *is*, in its
//! first copy, an isolated blob: the chunk holds the same body, and its checksum binds the same
//! sequence number, chunk index (0) and place (band and row start) an isolated blob at that
//! device would bind (`chunk.rs`, `geometry.rs`). So the transition is two records — free the
//! replicated blob, put the isolated one with the same sequence number — and the other copies'
//! sectors become dead space in their band for the cleaner.
//!
//! The kept copy lives in a row band of the replicated scheme: the band's records and
//! checkpoints carry an isolated blob there (format 9), which the replay accepts only in a
//! `replicate` band and only one short row tall; its space is reported under the isolated scheme.
//! A blob that is not eligible (larger, another scheme, or its first copy's device down for it)
//! is left alone, and the caller rewrites it.

use crate::config::MAX_HEADER_LEN;
use crate::error::{Error, Result};
use crate::location::Location;
use crate::record::Record;
use crate::scheme::{Placement, Scheme};
use crate::space::Shed;
use crate::store::{Durability, Inner};

impl Inner {
    /// The isolated blob the replicated blob at `loc` becomes when it sheds its other copies: its
    /// first copy, at the same sequence number, band and start. `None` when the blob's copies
    /// are not one short row of one stripe each (or it is not replicated).
    pub(crate) fn kept_copy(&self, loc: &Location) -> Option<Location> {
        if !matches!(loc.scheme, Scheme::Replicate(_)) || loc.len == 0 {
            return None;
        }
        let shape = self.shape(loc);
        if shape.geom.stripes_per_row != 1 || shape.row_count() != 1 {
            return None;
        }
        let row = shape.row(u64::from(loc.start), 0);
        let device = shape.device_of(loc.band, &row, 0, 0, loc.device) as u16;
        let kept = Location { device, scheme: Scheme::None(Placement::Isolated), ..*loc };
        // The copy reads back as that isolated blob only if their rows are the same.
        let iso = self.shape(&kept);
        (iso.row_count() == 1 && iso.row(u64::from(kept.start), 0) == row).then_some(kept)
    }

    /// Would a shed of the blob at `loc` keep a good copy: is it eligible, its first copy's
    /// device up for it, and does that copy read back and verify? One device read; on
    /// byte-less media nothing is kept to verify. Asked before the caller takes its own locks:
    /// a latent bad sector in the first copy is then rewritten from a good one rather than
    /// kept while the good ones are dropped.
    pub(crate) fn kept_copy_verifies(&self, loc: &Location) -> bool {
        let Some(kept) = self.kept_copy(loc) else { return false };
        let d = usize::from(kept.device);
        !self.down(d, loc.seq) && (!self.devs.stores_bytes() || self.column_verifies(loc, d))
    }

    /// Sheds the copies of the replicated blob at `loc` but its first (see the module doc),
    /// recording `header` for the kept copy: its location, or `None` if the blob is not eligible,
    /// that copy's device is down for it, or a checkpoint holds the gate (the caller rewrites it
    /// instead). `NotFound` if no
    /// blob is live at `loc` (freed, or moved by the cleaner).
    pub(crate) fn shed(&self, loc: &Location, header: &[u8], durability: Durability) -> Result<Option<Location>> {
        if header.len() > MAX_HEADER_LEN {
            return Err(Error::HeaderTooLarge { len: header.len(), max: MAX_HEADER_LEN });
        }
        let Some(kept) = self.kept_copy(loc) else { return Ok(None) };
        let pending = {
            // Never waits out a checkpoint's snapshot: the cache calls this under its own lock,
            // which every read takes. Declined then, like an ineligible blob (it is rewritten).
            let Some(m) = self.meta.try_mutation() else { return Ok(None) };
            // Under the gate: a replacement or a rebuild's loss of this blob is decided under it
            // too, so the kept copy's device cannot start lacking it in between.
            if self.down(usize::from(kept.device), loc.seq) {
                return Ok(None);
            }
            let tails = self.shape(&kept).tail_chunks();
            let tail = match self.space.shed(&m, loc, &kept, header, tails) {
                Shed::Done(tail) => tail,
                Shed::NotLive => return Err(Error::NotFound { seq: loc.seq }),
                Shed::Refused => return Ok(None),
            };
            // Devices that lack the shed copies (a rebuild's unrestored ones) no longer matter.
            self.resync.forget(&m, loc.seq);
            m.enqueue(durability == Durability::Sync, |w| {
                Record::Free { seq: loc.seq, band: loc.band }.encode(w);
                Record::encode_put(w, &kept, header, &tail);
            })?
        };
        pending.wait()?;
        Ok(Some(kept))
    }
}
