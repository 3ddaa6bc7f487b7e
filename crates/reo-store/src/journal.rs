//! The metadata journal: a group-committing writer of record batches, replicated on every device.
//!
//! Mutations append encoded records to an in-memory queue (under the checkpoint gate, see
//! `store.rs`). One writer thread takes everything queued, frames it as one batch, writes the batch
//! at the same offset of every healthy device, fdatasyncs them all — which also makes the data the
//! records point to durable, since data was written before its record was queued — and only then
//! acknowledges the waiters. A batch is written only after the previous one is synced, so after a
//! crash at most the last batch can point at data that never reached the devices; recovery
//! verifies exactly that batch.
//!
//! When a batch does not fit in the journal region, the writer takes a checkpoint instead (the
//! state then already includes every queued record) and starts a new journal generation.

use crate::bytes::Writer;
use crate::error::{Error, Result};
use std::sync::mpsc;
use std::sync::{Condvar, Mutex};

/// A waiter's answer: the batch holding its records is durable, or why not.
pub type Ack = std::result::Result<(), String>;

/// Records waiting for the writer.
#[derive(Default)]
pub struct Queue {
    pub records: Writer,
    pub waiters: Vec<mpsc::Sender<Ack>>,
    pub stop: bool,
    /// Stop without writing what is queued (simulated crash).
    pub kill: bool,
    /// Checkpoints that took the queue ([`Journal::drain`]), and the latest of them whose
    /// checkpoint was written: a batch the writer took before such a checkpoint is in its
    /// snapshot, and must not be written after it (see [`Journal::covered_since`]).
    pub drains: u64,
    pub covered: u64,
}

/// Records the writer took, with their waiters and the drain count at the time.
pub struct Batch {
    pub records: Vec<u8>,
    pub waiters: Vec<mpsc::Sender<Ack>>,
    pub drains: u64,
}

/// The shared queue between mutators and the writer thread.
#[derive(Default)]
pub struct Journal {
    pub queue: Mutex<Queue>,
    pub wake: Condvar,
    /// 0: wake the writer for the first record after it drained the queue. Otherwise records
    /// without a waiter wake it only once this many bytes are queued — for byte-less (simulated)
    /// media, where nothing can crash and a wake-up per record would cost more than the replay.
    pub lazy_wake_bytes: usize,
}

/// A pending acknowledgement.
pub struct Pending(Option<mpsc::Receiver<Ack>>);

impl Pending {
    /// Waits until the records are durable (no-op for a non-waiting enqueue).
    pub fn wait(self) -> Result<()> {
        match self.0 {
            None => Ok(()),
            Some(rx) => match rx.recv() {
                Ok(Ok(())) => Ok(()),
                Ok(Err(m)) => Err(Error::Journal(m)),
                Err(_) => Err(Error::Closed),
            },
        }
    }
}

impl Journal {
    /// Queues records written by `f`; with `wait`, the returned [`Pending`] resolves when they
    /// are durable.
    pub fn enqueue(&self, wait: bool, f: impl FnOnce(&mut Writer)) -> Result<Pending> {
        let mut q = self.queue.lock().unwrap_or_else(|e| e.into_inner());
        if q.stop {
            return Err(Error::Closed);
        }
        // The writer sleeps only on an empty queue, so only the first record after it drained
        // the queue (or a waiter) needs to wake it: the others ride along with that wake-up.
        let before = q.records.0.len();
        f(&mut q.records);
        let due = if self.lazy_wake_bytes == 0 {
            before == 0
        } else {
            before < self.lazy_wake_bytes && q.records.0.len() >= self.lazy_wake_bytes
        };
        let rx = if wait {
            let (tx, rx) = mpsc::channel();
            q.waiters.push(tx);
            Some(rx)
        } else {
            None
        };
        drop(q);
        if due || wait {
            self.wake.notify_one();
        }
        Ok(Pending(rx))
    }

    /// Takes everything queued, waiting until there is something or the journal is stopping.
    /// Returns `None` when the writer must exit.
    pub fn take(&self) -> Option<Batch> {
        let mut q = self.queue.lock().unwrap_or_else(|e| e.into_inner());
        loop {
            if q.kill {
                q.waiters.clear();
                return None;
            }
            if !q.records.0.is_empty() || !q.waiters.is_empty() {
                // The next batch starts with this one's capacity: no regrowth from empty.
                let cap = q.records.0.capacity();
                let records = std::mem::replace(&mut q.records.0, Vec::with_capacity(cap));
                return Some(Batch { records, waiters: std::mem::take(&mut q.waiters), drains: q.drains });
            }
            if q.stop {
                return None;
            }
            q = self.wake.wait(q).unwrap_or_else(|e| e.into_inner());
        }
    }

    /// Takes whatever is queued without waiting, for a checkpoint; returns the drain's number
    /// (for [`Journal::covered`]).
    pub fn drain(&self) -> (Vec<u8>, Vec<mpsc::Sender<Ack>>, u64) {
        let mut q = self.queue.lock().unwrap_or_else(|e| e.into_inner());
        q.drains += 1;
        (std::mem::take(&mut q.records.0), std::mem::take(&mut q.waiters), q.drains)
    }

    /// The checkpoint of drain `n` is written.
    pub fn covered(&self, n: u64) {
        let mut q = self.queue.lock().unwrap_or_else(|e| e.into_inner());
        q.covered = q.covered.max(n);
    }

    /// Was a checkpoint that drained the queue after a batch was taken (at `drains`) written?
    /// Then the batch's records are in its snapshot. Asked by the writer holding the journal
    /// position, so no checkpoint is half-done.
    pub fn covered_since(&self, drains: u64) -> bool {
        self.queue.lock().unwrap_or_else(|e| e.into_inner()).covered > drains
    }

    /// Asks the writer to exit after writing what is queued (`kill`: without writing it).
    pub fn stop(&self, kill: bool) {
        let mut q = self.queue.lock().unwrap_or_else(|e| e.into_inner());
        q.stop = true;
        q.kill |= kill;
        drop(q);
        self.wake.notify_all();
    }
}

/// Sends `ack` to every waiter.
pub fn ack_all(waiters: Vec<mpsc::Sender<Ack>>, ack: &Ack) {
    for w in waiters {
        let _ = w.send(ack.clone());
    }
}
