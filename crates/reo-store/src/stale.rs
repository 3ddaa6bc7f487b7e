//! Stale devices: a failed device that missed writes, whose contents are therefore behind its
//! peers'. It must not come back as a member at the next open just because it is attached and
//! readable (its old chunks would fail verification one read at a time, charge its error budget,
//! and the blobs written without it would look whole when they are one failure from loss), so
//! the mark is persistent — a `Missed` record in the journal and in every checkpoint — and the
//! open fails a stale device until [`crate::Store::replace_device`] rebuilds it (the same
//! device may be given back).
//!
//! When a device becomes stale: when the record of a blob written without it is journaled (a
//! degraded `replicate` or `rs` put, or a cleaner move, while it is failed — the `Missed` record
//! goes into the same batch, ahead of the blob's), and at once when the store fails it itself (a
//! write or sync error, ejection by its error budget): its last writes are suspect. A device
//! failed by command and given back before anything was written without it is not stale: it
//! holds every blob, and the next open takes it back (the benchmark's degraded reads rely on that).

use crate::bytes::Writer;
use crate::location::Location;
use crate::record::Record;
use crate::store::Inner;
use std::sync::atomic::Ordering;

impl Inner {
    /// The failed devices that the record of `loc`, written without them, makes stale now: each
    /// is marked once; the caller journals their `Missed` records ([`encode_missed`]) with the
    /// blob's, under the gate. Isolated blobs never involve another device.
    pub(crate) fn newly_stale(&self, loc: &Location) -> Vec<u16> {
        if loc.scheme.is_isolated() || self.healthy() == self.n() {
            return Vec::new();
        }
        (0..self.n())
            .filter(|&d| self.is_failed(d) && !self.stale[d].swap(true, Ordering::AcqRel))
            .map(|d| d as u16)
            .collect()
    }

    /// Marks `d` stale (a failure the store detected) and journals it. The mark is a set-only
    /// fact, so no gate is needed: a checkpoint either sees the flag or gets the record after it.
    pub(crate) fn mark_stale(&self, d: usize) {
        if !self.stale[d].swap(true, Ordering::AcqRel) {
            // A closed journal is at a close, whose checkpoint carries the flag.
            let _ = self.journal.enqueue(false, |w| encode_missed(w, &[d as u16]));
        }
    }

    pub(crate) fn is_stale(&self, d: usize) -> bool {
        self.stale[d].load(Ordering::Acquire)
    }

    /// The stale devices, as records (for a checkpoint).
    pub(crate) fn stale_records(&self, w: &mut Writer) {
        let stale: Vec<u16> = (0..self.n()).filter(|&d| self.is_stale(d)).map(|d| d as u16).collect();
        encode_missed(w, &stale);
    }
}

/// Appends a `Missed` record per device.
pub(crate) fn encode_missed(w: &mut Writer, devices: &[u16]) {
    for &device in devices {
        Record::Missed { device }.encode(w);
    }
}
