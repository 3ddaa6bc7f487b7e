//! [`MetaLog`]: the metadata log of the store — the journal queue (`journal.rs`), where its writer
//! is, the checkpoint *gate* and the *put fence* — and the guards through which every other file
//! takes those locks, which carry the store's lock order (`store.rs`) in their types:
//!
//! - [`PutFence`] (fence, read): held by a put from taking its sequence number until its blob
//!   is recorded; [`PutsFenced`] (fence, write): a replacement bringing a device back at a clean
//!   sequence boundary.
//! - [`Mutation`] (gate, read): a change of the live state and the journal records that describe
//!   it, queued through the guard ([`Mutation::enqueue`]), so that a checkpoint sees both or
//!   neither. The space component changes live blobs only on a `&Mutation`.
//! - [`Frozen`] (journal position, then the gate in write mode: [`MetaLog::begin_checkpoint`] is
//!   the one place that takes both, in that order): a checkpoint's snapshot; [`Frozen::thaw`]
//!   lets mutations go on, keeping the position ([`Checkpointing`]) until the checkpoint is
//!   written or given up.
//! - [`Appending`] (journal position): the writer appending a batch.
//!
//! The journal queue's own lock is taken only inside the journal's methods, last.

use crate::bytes::Writer;
use crate::error::Result;
use crate::journal::{Batch, Drained, Expected, Journal, Pending, WriterGuard};
use parking_lot::{Mutex, MutexGuard, RwLock, RwLockReadGuard, RwLockWriteGuard};

/// The metadata log (see the module doc).
pub(crate) struct MetaLog {
    journal: Journal,
    pos: Mutex<JournalPos>,
    gate: RwLock<()>,
    put_fence: RwLock<()>,
}

/// Where the journal writer is.
#[derive(Debug, Clone, Copy, Default)]
struct JournalPos {
    gen: u64,
    pos: u64,
    batch: u64,
    ckpt_number: u64,
    /// No batch may be appended in this generation; every batch goes through a checkpoint until
    /// one succeeds, which starts a new generation. Two causes: a batch did not fit and the
    /// checkpoint that was to replace it failed (that batch's records are in no journal, and a
    /// crash would keep newer records without the older ones); or an open replayed this
    /// generation and the journal writer has not yet written the checkpoint that ends it
    /// (`recover.rs`: a batch at `pos` 0 would overwrite the replayed journal's first batch and
    /// be followed by its stale successors).
    wedged: bool,
}

impl MetaLog {
    #[inline]
    pub fn new(journal: Journal) -> MetaLog {
        MetaLog { journal, pos: Mutex::new(JournalPos::default()), gate: RwLock::new(()), put_fence: RwLock::new(()) }
    }

    /// At open: the journal follows checkpoint `ckpt_number` of generation `gen`; `wedged`: no
    /// batch may be appended before a checkpoint starts a new generation (see [`JournalPos`]).
    #[inline]
    pub fn recovered(&self, gen: u64, ckpt_number: u64, wedged: bool) {
        *self.pos.lock() = JournalPos { gen, pos: 0, batch: 0, ckpt_number, wedged };
    }

    /// Whether every batch must go through a checkpoint (see [`JournalPos`]).
    #[inline]
    pub fn wedged(&self) -> bool {
        self.pos.lock().wedged
    }

    /// Queues a waiter and no record: the returned [`Pending`] resolves once every record queued
    /// so far is durable.
    #[inline]
    pub fn flush(&self) -> Result<Pending> {
        self.journal.enqueue(true, |_| {})
    }

    /// Announces the `Sync` record of a put about to write its data ([`Journal::expect`]).
    #[inline]
    pub fn expect(&self) -> Expected<'_> {
        self.journal.expect()
    }

    /// Queues a rider and no record: the returned [`Pending`] resolves once every record queued
    /// so far is durable, in the next batch something else makes due, or at `within` at the
    /// latest (`journal.rs`).
    #[inline]
    pub fn flush_riding(&self, within: Option<std::time::Duration>) -> Result<Pending> {
        self.journal.enqueue_riding(within, |_| {})
    }

    /// Queues records that change no live state and need no gate (a device's stale mark, set
    /// with its record under the queue lock), without the group-commit delay.
    #[inline]
    pub fn enqueue_urgent(&self, f: impl FnOnce(&mut Writer)) -> Result<()> {
        self.journal.enqueue_urgent(f)
    }

    /// The writer thread's next batch ([`Journal::take`]).
    #[inline]
    pub fn take(&self) -> Option<Batch> {
        self.journal.take()
    }

    /// Asks the writer to exit ([`Journal::stop`]).
    #[inline]
    pub fn stop(&self, kill: bool) {
        self.journal.stop(kill);
    }

    /// Held by the writer thread: closes the journal if the thread panics.
    #[inline]
    pub fn writer_guard(&self) -> WriterGuard<'_> {
        self.journal.writer_guard()
    }

    /// Reopens a stopped journal (tests standing in for the writer thread).
    #[cfg(test)]
    #[inline]
    pub fn reopen(&self) {
        self.journal.reopen();
    }

    /// The put fence, shared: taken by a put before its sequence number.
    #[inline]
    pub fn fence_put(&self) -> PutFence<'_> {
        PutFence { _fence: self.put_fence.read() }
    }

    /// The put fence, exclusive: no put is between taking its sequence number and recording its
    /// blob while this is held.
    #[inline]
    pub fn fence_all_puts(&self) -> PutsFenced<'_> {
        PutsFenced { _fence: self.put_fence.write() }
    }

    /// The gate, shared: a mutation of the live state and its records.
    #[inline]
    pub fn mutation(&self) -> Mutation<'_> {
        Mutation { log: self, _gate: self.gate.read() }
    }

    /// The gate, shared, if no checkpoint holds it or waits for it (a caller that must not wait
    /// out a checkpoint's snapshot under its own locks).
    #[inline]
    pub fn try_mutation(&self) -> Option<Mutation<'_>> {
        Some(Mutation { log: self, _gate: self.gate.try_read()? })
    }

    /// The journal position: the writer appending a batch.
    #[inline]
    pub fn append(&self) -> Appending<'_> {
        Appending { log: self, pos: self.pos.lock() }
    }

    /// Starts a checkpoint: takes the journal position, then the gate in write mode (the one
    /// place both are taken, and in this order): no mutation is half-done while the state is
    /// snapshot, and no batch is appended until the checkpoint is written or given up.
    #[inline]
    pub fn begin_checkpoint(&self) -> Frozen<'_> {
        let pos = self.pos.lock();
        let gate = self.gate.write();
        Frozen { log: self, pos, _gate: gate }
    }
}

/// Proof that the put fence is held shared ([`MetaLog::fence_put`]).
pub(crate) struct PutFence<'a> {
    _fence: RwLockReadGuard<'a, ()>,
}

/// Proof that the put fence is held exclusively ([`MetaLog::fence_all_puts`]).
pub(crate) struct PutsFenced<'a> {
    _fence: RwLockWriteGuard<'a, ()>,
}

/// The gate held shared by a mutation ([`MetaLog::mutation`]).
pub(crate) struct Mutation<'a> {
    log: &'a MetaLog,
    _gate: RwLockReadGuard<'a, ()>,
}

impl Mutation<'_> {
    /// Queues the mutation's records, written by `f`; with `wait`, the returned [`Pending`]
    /// resolves when they are durable. Wait for it after dropping the guard: the journal
    /// writer's checkpoints take the gate.
    #[inline]
    pub fn enqueue(&self, wait: bool, f: impl FnOnce(&mut Writer)) -> Result<Pending> {
        self.log.journal.enqueue(wait, f)
    }
}

/// The journal position held by the writer appending a batch ([`MetaLog::append`]).
pub(crate) struct Appending<'a> {
    log: &'a MetaLog,
    pos: MutexGuard<'a, JournalPos>,
}

impl Appending<'_> {
    /// Was a checkpoint that drained the queue after a batch was taken (at `drains`) written?
    /// Then the batch's records are in its snapshot. No checkpoint is half-done meanwhile: it
    /// would hold the position.
    #[inline]
    pub fn covered_since(&self, drains: u64) -> bool {
        self.log.journal.covered_since(drains)
    }

    /// The (generation, number) of the next batch.
    #[inline]
    pub fn next_batch(&self) -> (u64, u64) {
        (self.pos.gen, self.pos.batch)
    }

    /// Where in the journal region a batch of `len` bytes goes, if it may be appended to a
    /// region of `journal_len` bytes: not when wedged, nor when it does not fit.
    #[inline]
    pub fn room(&self, len: u64, journal_len: u64) -> Option<u64> {
        (!self.pos.wedged && self.pos.pos + len <= journal_len).then_some(self.pos.pos)
    }

    /// A batch of `len` bytes was appended.
    #[inline]
    pub fn appended(&mut self, len: u64) {
        self.pos.pos += len;
        self.pos.batch += 1;
    }
}

/// A checkpoint taking its snapshot ([`MetaLog::begin_checkpoint`]): the journal position and
/// the gate, exclusive. The space component encodes its snapshot only on a `&Frozen`.
pub(crate) struct Frozen<'a> {
    log: &'a MetaLog,
    pos: MutexGuard<'a, JournalPos>,
    _gate: RwLockWriteGuard<'a, ()>,
}

impl<'a> Frozen<'a> {
    /// Takes every record queued: the snapshot holds their effect.
    #[inline]
    pub fn drain(&self) -> Drained {
        self.log.journal.drain()
    }

    /// Releases the gate, keeping the journal position until the checkpoint is written.
    #[inline]
    pub fn thaw(self) -> Checkpointing<'a> {
        Checkpointing { log: self.log, pos: self.pos }
    }
}

/// A checkpoint being written, holding the journal position ([`Frozen::thaw`]).
pub(crate) struct Checkpointing<'a> {
    log: &'a MetaLog,
    pos: MutexGuard<'a, JournalPos>,
}

impl Checkpointing<'_> {
    /// The checkpoint's (generation, number): the next of each.
    #[inline]
    pub fn next(&self) -> (u64, u64) {
        (self.pos.gen + 1, self.pos.ckpt_number + 1)
    }

    /// The checkpoint is written: its generation starts with an empty journal, and the records
    /// it drained are acknowledged.
    #[inline]
    pub fn written(mut self, drained: Drained) {
        let (gen, number) = self.next();
        *self.pos = JournalPos { gen, pos: 0, batch: 0, ckpt_number: number, wedged: false };
        self.log.journal.covered(drained);
    }

    /// The checkpoint failed. The journal goes on in its generation (or, wedged, through
    /// checkpoints): the drained records go back to the front of the queue for its next batch.
    /// Dropped, they would be missing from the journal while newer records are not, and a crash
    /// could lose an older `None` put or free than a newer acknowledged one. `journal_full`: it
    /// was taken because a batch did not fit, whose records are now in no journal, so that the
    /// generation takes no more batches.
    #[inline]
    pub fn failed(mut self, drained: Drained, journal_full: bool) {
        self.pos.wedged |= journal_full;
        self.log.journal.undrain(drained);
    }
}
