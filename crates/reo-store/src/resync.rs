//! State of a device rebuild shared by the store's read path and the rebuild thread.
//!
//! While device `d` is being rebuilt it takes writes again (every blob with a sequence number at
//! or above `start_seq` is written to it in full), but its chunks of older blobs are trusted only
//! once the rebuild has restored them (`done`): until then reads treat `d` as down for those
//! blobs ([`Inner::down`]) and reconstruct, so a not-yet-rebuilt chunk costs no wasted I/O and
//! never counts against the device's error budget. A read of such a blob through the public API
//! queues it at the front of the rebuild (on-demand repair).

use crate::location::Location;
use crate::progress::{RebuildOptions, RebuildProgress, RebuildState};
use crate::store::Inner;
use parking_lot::{Condvar, Mutex, MutexGuard};
use std::collections::{HashSet, VecDeque};
use std::sync::atomic::{AtomicBool, AtomicU64, AtomicUsize, Ordering};
use std::sync::Arc;
use std::thread::JoinHandle;

const NONE: usize = usize::MAX;

/// Blobs a finished rebuild of one device could not restore onto it (beyond their redundancy):
/// the device never held their chunks, so reads treat it as down for them ([`Inner::down`])
/// rather than reading blank space and charging the healthy new device a checksum failure for
/// each (which could eject it). Kept until the device is replaced again or the blob is freed:
/// journaled (`Unrestored` records) when the rebuild finishes, and in every checkpoint for the
/// blobs still live, so a restart does not forget it.
#[derive(Default)]
pub(crate) struct Unrestored {
    /// Fast path of [`Inner::down`]: false while the set is empty.
    any: AtomicBool,
    seqs: Mutex<HashSet<u64>>,
}

impl Unrestored {
    /// True when some blob is in the set.
    pub fn any(&self) -> bool {
        self.any.load(Ordering::Acquire)
    }

    pub fn contains(&self, seq: u64) -> bool {
        self.any.load(Ordering::Acquire) && self.seqs.lock().contains(&seq)
    }

    pub fn extend(&self, seqs: impl IntoIterator<Item = u64>) {
        let mut s = self.seqs.lock();
        s.extend(seqs);
        self.any.store(!s.is_empty(), Ordering::Release);
    }

    pub fn clear(&self) {
        let mut s = self.seqs.lock();
        s.clear();
        self.any.store(false, Ordering::Release);
    }

    /// Drops `seq` (its blob was freed or moved).
    pub fn remove(&self, seq: u64) {
        if !self.any() {
            return;
        }
        let mut s = self.seqs.lock();
        s.remove(&seq);
        self.any.store(!s.is_empty(), Ordering::Release);
    }

    /// A copy of the set (for a checkpoint).
    pub fn seqs(&self) -> HashSet<u64> {
        self.seqs.lock().clone()
    }
}

/// The rebuild in progress, if any.
pub(crate) struct ResyncCell {
    dev: AtomicUsize,
    cur: Mutex<Option<Arc<Resync>>>,
}

/// Mutable state of a rebuild, under one mutex (paired with `Resync::wake`).
pub(crate) struct Ctl {
    /// Blobs a read needed, to repair before queued work.
    pub urgent: VecDeque<Location>,
    pub queued_urgent: HashSet<u64>,
    pub paused: bool,
    pub stop: bool,
    pub progress: RebuildProgress,
    pub opts: Option<RebuildOptions>,
}

/// One device's rebuild.
pub(crate) struct Resync {
    pub device: usize,
    /// Blobs at or above this sequence number were written to the device in full.
    pub start_seq: AtomicU64,
    /// Opened from a superblock marked rebuilding: verify a blob's chunks on the device before
    /// rewriting them.
    pub verify_first: bool,
    /// Sequence numbers whose chunks on the device are restored.
    pub done: Mutex<HashSet<u64>>,
    pub ctl: Mutex<Ctl>,
    pub wake: Condvar,
    pub thread: Mutex<Option<JoinHandle<()>>>,
    pub started: AtomicBool,
}

impl Resync {
    pub fn new(device: usize, start_seq: u64, verify_first: bool) -> Resync {
        Resync {
            device,
            start_seq: AtomicU64::new(start_seq),
            verify_first,
            done: Mutex::new(HashSet::new()),
            ctl: Mutex::new(Ctl {
                urgent: VecDeque::new(),
                queued_urgent: HashSet::new(),
                paused: false,
                stop: false,
                progress: RebuildProgress::new(device),
                opts: None,
            }),
            wake: Condvar::new(),
            thread: Mutex::new(None),
            started: AtomicBool::new(false),
        }
    }

    pub fn ctl(&self) -> MutexGuard<'_, Ctl> {
        self.ctl.lock()
    }

    /// Is the blob `seq`'s chunk on the device still to be restored?
    pub fn pending(&self, seq: u64) -> bool {
        seq < self.start_seq.load(Ordering::Acquire) && !self.done.lock().contains(&seq)
    }

    pub fn mark_done(&self, seq: u64) {
        self.done.lock().insert(seq);
    }

    /// Asks the thread to stop and waits for it.
    pub fn stop(&self, why: &str) {
        {
            let mut c = self.ctl();
            c.stop = true;
            if !c.progress.finished() {
                c.progress.state = RebuildState::Aborted(why.into());
            }
        }
        self.wake.notify_all();
        let h = self.thread.lock().take();
        if let Some(h) = h {
            let _ = h.join();
        }
    }
}

impl ResyncCell {
    /// The rebuild in progress.
    pub fn get(&self) -> Option<Arc<Resync>> {
        if self.dev.load(Ordering::Acquire) == NONE {
            return None;
        }
        self.cur.lock().clone()
    }

    pub fn install(&self, r: Arc<Resync>) {
        let d = r.device;
        *self.cur.lock() = Some(r);
        self.dev.store(d, Ordering::Release);
    }

    pub fn clear(&self) {
        self.dev.store(NONE, Ordering::Release);
        *self.cur.lock() = None;
    }

    /// The device being rebuilt, if any.
    pub fn device(&self) -> Option<usize> {
        Some(self.dev.load(Ordering::Acquire)).filter(|&d| d != NONE)
    }
}

impl Default for ResyncCell {
    fn default() -> Self {
        ResyncCell { dev: AtomicUsize::new(NONE), cur: Mutex::new(None) }
    }
}

impl Inner {
    /// No device failed, being rebuilt or missing blobs its rebuild lost: [`Inner::down`] is
    /// false for every device and blob.
    pub(crate) fn all_up(&self) -> bool {
        self.resync.device().is_none() && (0..self.n()).all(|d| !self.devs.is_failed(d) && !self.unrestored[d].any())
    }

    /// Is device `d` unusable for blob `seq`: failed, being rebuilt and this blob's chunk on it
    /// not restored yet, or rebuilt without it ([`Unrestored`]).
    /// Blob `seq` is gone from its place (freed, or moved by the cleaner to a new blob written
    /// in full): no device misses its chunks any more. Called under the gate with the blob's
    /// record, so that a checkpoint sees both or neither.
    pub(crate) fn forget_unrestored(&self, seq: u64) {
        for u in &self.unrestored {
            u.remove(seq);
        }
    }

    pub(crate) fn down(&self, d: usize, seq: u64) -> bool {
        if self.devs.is_failed(d) || self.unrestored[d].contains(seq) {
            return true;
        }
        if self.resync.device() != Some(d) {
            return false;
        }
        self.resync.get().is_some_and(|r| r.pending(seq))
    }

    /// A read through the public API: if the blob still waits for the rebuild, queue it first.
    pub(crate) fn on_demand(&self, loc: &Location) {
        let Some(d) = self.resync.device() else { return };
        if loc.scheme.is_isolated() && loc.device as usize != d {
            return;
        }
        let Some(r) = self.resync.get() else { return };
        if !r.pending(loc.seq) {
            return;
        }
        let mut c = r.ctl();
        if c.queued_urgent.insert(loc.seq) {
            c.urgent.push_back(*loc);
            drop(c);
            r.wake.notify_all();
        }
    }
}
