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

impl Inner {
    /// Marks device `d` failed (after a write or sync error, or by its error budget or a stuck
    /// read) and stale. Returns whether this call failed it (false: it was failed already).
    pub(crate) fn mark_failed(&self, d: usize, why: &str) -> bool {
        let newly = self.devs.set_failed(d, why);
        // Its last writes are suspect: it must not come back by itself.
        self.mark_stale(d);
        newly
    }

    /// Encodes the record of a blob written at `loc`, preceded by a `Missed` record for each
    /// failed device it makes stale (each marked once). Called inside the journal's enqueue
    /// closure, under the queue lock: a `Put` of another blob written without the device cannot
    /// get into the queue between the mark and its record, so no batch holds such a `Put`
    /// without the `Missed` before it. A blob makes stale only the failed devices it has
    /// columns on: never another device for an isolated blob, only its own columns of a shared
    /// row for a narrow one.
    pub(crate) fn encode_put_marking_stale(&self, w: &mut Writer, loc: &Location, header: &[u8], tail: &[u32]) {
        if !loc.scheme.is_isolated() && self.devs.healthy() < self.n() {
            for d in (0..self.n()).filter(|&d| self.devs.is_failed(d) && self.holds(loc, d)) {
                self.mark_stale_in(w, d);
            }
        }
        Record::encode_put(w, loc, header, tail);
    }

    /// Marks `d` stale (a failure the store detected) and journals it. No gate is needed: the
    /// mark is set-only, taken under the queue lock with its record, and a checkpoint reads the
    /// marks after draining the queue — it sees the flag or the record comes after it. A store
    /// closing takes no more records: `Store::close` checkpoints again if a mark came too late.
    /// The record does not wait out the group-commit delay (`Journal::enqueue_urgent`): the
    /// writer marks a device that failed a journal write itself, and a crash before the mark is
    /// durable would let the device back in at the next open.
    pub(crate) fn mark_stale(&self, d: usize) {
        if self.devs.is_stale(d) {
            return;
        }
        let queued = self.meta.enqueue_urgent(|w| self.mark_stale_in(w, d));
        if queued.is_err() {
            self.devs.set_stale(d);
        }
    }

    /// Sets the mark of `d` if it is new, with its record into `w`.
    fn mark_stale_in(&self, w: &mut Writer, d: usize) {
        if !self.devs.is_stale(d) && self.devs.set_stale(d) {
            Record::Missed { device: d as u16 }.encode(w);
        }
    }

    /// The stale devices, as records (for a checkpoint).
    pub(crate) fn stale_records(&self, w: &mut Writer) {
        for d in (0..self.n()).filter(|&d| self.devs.is_stale(d)) {
            Record::Missed { device: d as u16 }.encode(w);
        }
    }
}
