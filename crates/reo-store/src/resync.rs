//! [`ResyncState`]: what the store knows of device rebuilds — the rebuild in progress, if any
//! ([`Resync`]), and per device the blobs its last rebuild could not restore ([`Unrestored`]) —
//! shared by the read path, the rebuild thread (`rebuild_run.rs`) and its handle (`replace.rs`).
//!
//! While device `d` is being rebuilt it takes writes again (every blob with a sequence number at
//! or above `start_seq` is written to it in full), but its chunks of older blobs are trusted only
//! once the rebuild has restored them (`done`): until then reads treat `d` as down for those
//! blobs ([`ResyncState::misses`]) and reconstruct, so a not-yet-rebuilt chunk costs no wasted
//! I/O and never counts against the device's error budget. A read of such a blob through the
//! public API queues it at the front of the rebuild (on-demand repair).
//!
//! Locks owned, all leaves taken only inside the methods here (or through [`Control`], a
//! rebuild's control state): the rebuild cell, each rebuild's control state (then, inside it,
//! its set of restored blobs) and thread handle, each device's unrestored set.

use crate::location::Location;
use crate::metalog::Mutation;
use crate::progress::{LostFn, RebuildOptions, RebuildProgress, RebuildState, Restored};
use parking_lot::{Condvar, Mutex, MutexGuard};
use std::collections::{HashSet, VecDeque};
use std::sync::atomic::{AtomicBool, AtomicU64, AtomicUsize, Ordering};
use std::sync::Arc;
use std::thread::JoinHandle;
use std::time::{Duration, Instant};

const NONE: usize = usize::MAX;

/// The rebuilds of the store (see the module doc).
pub(crate) struct ResyncState {
    /// The device being rebuilt, or `NONE`: the fast path of [`ResyncState::current`].
    dev: AtomicUsize,
    cur: Mutex<Option<Arc<Resync>>>,
    /// Per device: blobs its last rebuild could not restore onto it.
    unrestored: Vec<Unrestored>,
}

impl ResyncState {
    /// No rebuild, and no blob missing from any of `devices` devices.
    pub fn new(devices: usize) -> ResyncState {
        ResyncState {
            dev: AtomicUsize::new(NONE),
            cur: Mutex::new(None),
            unrestored: (0..devices).map(|_| Unrestored::default()).collect(),
        }
    }

    /// The rebuild in progress.
    pub fn current(&self) -> Option<Arc<Resync>> {
        if self.dev.load(Ordering::Acquire) == NONE {
            return None;
        }
        self.cur.lock().clone()
    }

    /// The device being rebuilt, if any.
    pub fn device(&self) -> Option<usize> {
        Some(self.dev.load(Ordering::Acquire)).filter(|&d| d != NONE)
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

    /// No rebuild is running and no device misses blobs its rebuild lost: [`ResyncState::misses`]
    /// is false for every device and blob.
    pub fn idle(&self) -> bool {
        self.device().is_none() && self.unrestored.iter().all(|u| !u.any())
    }

    /// Does device `d` (not failed) lack blob `seq`'s chunks: rebuilt without them
    /// ([`Unrestored`]), or being rebuilt and this blob not restored yet?
    pub fn misses(&self, d: usize, seq: u64) -> bool {
        if self.unrestored[d].contains(seq) {
            return true;
        }
        if self.device() != Some(d) {
            return false;
        }
        self.current().is_some_and(|r| r.pending(seq))
    }

    /// A read through the public API: if the blob at `loc` still waits for the rebuild, queue it
    /// first. `holds(d)`: does the blob have chunks on device `d` (the rebuild restores no other)?
    pub fn on_demand(&self, loc: &Location, holds: impl FnOnce(usize) -> bool) {
        let Some(d) = self.device() else { return };
        if !holds(d) {
            return;
        }
        let Some(r) = self.current() else { return };
        if !r.pending(loc.seq) {
            return;
        }
        let mut c = r.ctl.lock();
        if c.queued_urgent.insert(loc.seq) {
            c.urgent.push_back(*loc);
            drop(c);
            r.wake.notify_all();
        }
    }

    /// Blob `seq` is gone from its place (freed, or moved by the cleaner to a new blob written
    /// in full): no device misses its chunks any more. Under the gate with the blob's record,
    /// so that a checkpoint sees both or neither.
    pub fn forget(&self, _m: &Mutation, seq: u64) {
        for u in &self.unrestored {
            u.remove(seq);
        }
    }

    /// Device `d`'s rebuild could not restore blobs `seqs`. Under the gate with their records.
    pub fn keep_unrestored(&self, _m: &Mutation, d: usize, seqs: impl IntoIterator<Item = u64>) {
        self.unrestored[d].extend(seqs);
    }

    /// At open: a journaled `Unrestored` record (a device index beyond the store is ignored).
    pub fn replay_unrestored(&self, d: usize, seq: u64) {
        if let Some(u) = self.unrestored.get(d) {
            u.extend([seq]);
        }
    }

    /// Keeps the marks of [`ResyncState::unrestored`] for which `keep(device, seq)` holds (at
    /// open, after the replay).
    pub fn retain_unrestored(&self, keep: impl Fn(usize, u64) -> bool) {
        for (d, u) in self.unrestored.iter().enumerate() {
            for seq in u.seqs() {
                if !keep(d, seq) {
                    u.remove(seq);
                }
            }
        }
    }

    /// Device `d` is replaced: it will be rebuilt from scratch.
    pub fn clear_unrestored(&self, d: usize) {
        self.unrestored[d].clear();
    }

    /// Does device `d` lack blob `seq` only because its finished rebuild could not restore it
    /// (not being rebuilt now)?
    pub fn restorable(&self, d: usize, seq: u64) -> bool {
        self.device() != Some(d) && self.unrestored[d].contains(seq)
    }

    /// Blob `seq` was written onto device `d` after all (scrub).
    pub fn restored(&self, d: usize, seq: u64) {
        self.unrestored[d].remove(seq);
    }

    /// Devices missing some blobs, with those blobs (usually none), for a checkpoint.
    pub fn unrestored(&self) -> Vec<(u16, HashSet<u64>)> {
        self.unrestored.iter().enumerate().filter(|(_, u)| u.any()).map(|(d, u)| (d as u16, u.seqs())).collect()
    }
}

/// Blobs a finished rebuild of one device could not restore onto it (beyond their redundancy):
/// the device never held their chunks, so reads treat it as down for them
/// ([`ResyncState::misses`]) rather than reading blank space and charging the healthy new device
/// a checksum failure for each (which could eject it). Kept until the device is replaced again or
/// the blob is freed: journaled (`Unrestored` records) when the rebuild finishes, and in every
/// checkpoint for the blobs still live, so a restart does not forget it.
#[derive(Default)]
struct Unrestored {
    /// Fast path of [`ResyncState::misses`]: false while the set is empty.
    any: AtomicBool,
    seqs: Mutex<HashSet<u64>>,
}

impl Unrestored {
    /// True when some blob is in the set.
    fn any(&self) -> bool {
        self.any.load(Ordering::Acquire)
    }

    fn contains(&self, seq: u64) -> bool {
        self.any.load(Ordering::Acquire) && self.seqs.lock().contains(&seq)
    }

    fn extend(&self, seqs: impl IntoIterator<Item = u64>) {
        let mut s = self.seqs.lock();
        s.extend(seqs);
        self.any.store(!s.is_empty(), Ordering::Release);
    }

    fn clear(&self) {
        let mut s = self.seqs.lock();
        s.clear();
        self.any.store(false, Ordering::Release);
    }

    /// Drops `seq` (its blob was freed or moved).
    fn remove(&self, seq: u64) {
        if !self.any() {
            return;
        }
        let mut s = self.seqs.lock();
        s.remove(&seq);
        self.any.store(!s.is_empty(), Ordering::Release);
    }

    /// A copy of the set (for a checkpoint).
    fn seqs(&self) -> HashSet<u64> {
        self.seqs.lock().clone()
    }
}

/// Mutable state of a rebuild, under one mutex (paired with `Resync::wake`).
struct Ctl {
    /// Blobs a read needed, to repair before queued work.
    urgent: VecDeque<Location>,
    queued_urgent: HashSet<u64>,
    paused: bool,
    stop: bool,
    progress: RebuildProgress,
    opts: Option<RebuildOptions>,
}

/// What became of one blob the rebuild handled.
pub(crate) enum Outcome {
    /// Its column was written: so many bytes.
    Written(u64),
    /// Its chunks on the device verified already (a resumed rebuild).
    Intact,
    /// Freed or moved before its turn.
    Skipped,
    /// Beyond its redundancy.
    Lost,
    /// The new device failed to take its column; the blob keeps its other chunks.
    Unwritten,
}

/// One device's rebuild.
pub(crate) struct Resync {
    device: usize,
    /// Blobs at or above this sequence number were written to the device in full.
    start_seq: AtomicU64,
    /// Opened from a superblock marked rebuilding: verify a blob's chunks on the device before
    /// rewriting them.
    verify_first: bool,
    /// Sequence numbers whose chunks on the device are restored.
    done: Mutex<HashSet<u64>>,
    ctl: Mutex<Ctl>,
    wake: Condvar,
    thread: Mutex<Option<JoinHandle<()>>>,
    started: AtomicBool,
}

/// A rebuild's control state, locked ([`Resync::ctl`]): what the rebuild thread's reader
/// consults to pick its next step.
pub(crate) struct Control<'a>(MutexGuard<'a, Ctl>);

impl Control<'_> {
    /// Asked to stop (the store closing, or the device failed).
    pub fn stopping(&self) -> bool {
        self.0.stop
    }

    /// Paused (started paused, or `pause_after_blobs` reached) until resumed.
    pub fn paused(&self) -> bool {
        self.0.paused
    }

    /// Stops the rebuild's progress as aborted, for `why`.
    pub fn abort(&mut self, why: String) {
        self.0.progress.state = RebuildState::Aborted(why);
    }

    /// The next blob a read is waiting for, if any.
    pub fn next_urgent(&mut self) -> Option<Location> {
        self.0.urgent.pop_front()
    }

    /// The I/O share: bytes per second of queued work.
    pub fn rate_limit(&self) -> Option<u64> {
        self.0.opts.as_ref().and_then(|o| o.rate_limit)
    }

    /// Whether the rebuild pauses after a number of blobs (the progress must then count every
    /// blob handed to the writer before the next is picked).
    pub fn pauses_after_blobs(&self) -> bool {
        self.0.opts.as_ref().is_some_and(|o| o.pause_after_blobs.is_some())
    }

    /// Blobs still to handle before that pause, if there is one.
    pub fn room(&self) -> Option<u64> {
        self.0.opts.as_ref().and_then(|o| o.pause_after_blobs).map(|n| n.saturating_sub(self.0.progress.blobs_done))
    }

    /// Who to tell of a lost blob.
    pub fn on_lost(&self) -> Option<LostFn> {
        self.0.opts.as_ref().and_then(|o| o.on_lost.clone())
    }
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

    /// The device being rebuilt.
    pub fn device(&self) -> usize {
        self.device
    }

    /// Whether a blob's chunks on the device are verified before they are rewritten.
    pub fn verify_first(&self) -> bool {
        self.verify_first
    }

    /// Blobs at or above this sequence number were written to the device in full.
    pub fn start_seq(&self) -> u64 {
        self.start_seq.load(Ordering::Acquire)
    }

    pub fn set_start_seq(&self, seq: u64) {
        self.start_seq.store(seq, Ordering::SeqCst);
    }

    /// Is the blob `seq`'s chunk on the device still to be restored?
    pub fn pending(&self, seq: u64) -> bool {
        seq < self.start_seq.load(Ordering::Acquire) && !self.done.lock().contains(&seq)
    }

    pub fn mark_done(&self, seq: u64) {
        self.done.lock().insert(seq);
    }

    /// The control state, locked.
    pub fn ctl(&self) -> Control<'_> {
        Control(self.ctl.lock())
    }

    /// Waits on `c` for a change of the control state, at most `w`.
    pub fn wait_for(&self, c: &mut Control<'_>, w: Duration) {
        self.wake.wait_for(&mut c.0, w);
    }

    /// Wakes whoever waits for a change of the control state or the progress.
    pub fn notify(&self) {
        self.wake.notify_all();
    }

    /// A snapshot of the progress.
    pub fn progress(&self) -> RebuildProgress {
        self.ctl.lock().progress.clone()
    }

    /// The blobs found lost so far.
    pub fn lost(&self) -> Vec<Location> {
        self.ctl.lock().progress.lost.clone()
    }

    /// Claims the rebuild for a thread; false if one was started already.
    pub fn claim(&self) -> bool {
        !self.started.swap(true, Ordering::AcqRel)
    }

    /// Gives up a claim (its thread could not start).
    pub fn unclaim(&self) {
        self.started.store(false, Ordering::Release);
    }

    /// Sets the rebuild going under `opts` (paused if they say so), over a queue of blobs given
    /// as (priority class, device bytes), and marks it started.
    pub fn start(&self, opts: RebuildOptions, queue: impl IntoIterator<Item = (u8, u64)>) {
        {
            let mut c = self.ctl.lock();
            c.paused = opts.start_paused;
            c.progress.state = if opts.start_paused { RebuildState::Paused } else { RebuildState::Running };
            for (prio, bytes) in queue {
                let e = c.progress.classes.entry(prio).or_default();
                e.blobs_total += 1;
                e.bytes_total += bytes;
                c.progress.blobs_total += 1;
                c.progress.bytes_total += bytes;
            }
            for e in c.progress.classes.values_mut().filter(|e| e.blobs_total == 0) {
                e.restored_at = Some(Duration::ZERO);
            }
            c.opts = Some(opts);
        }
        self.started.store(true, Ordering::Release);
    }

    /// Keeps the rebuild thread's handle, for [`Resync::stop`].
    pub fn set_thread(&self, h: JoinHandle<()>) {
        *self.thread.lock() = Some(h);
    }

    /// Starts a paused rebuild (`start_paused`, `pause_after_blobs`).
    pub fn resume(&self) {
        let mut c = self.ctl.lock();
        c.paused = false;
        if let Some(o) = c.opts.as_mut() {
            o.pause_after_blobs = None;
        }
        if c.progress.state == RebuildState::Paused {
            c.progress.state = RebuildState::Running;
        }
        drop(c);
        self.wake.notify_all();
    }

    /// Waits until `until` holds for the progress or the rebuild finished; returns the progress.
    pub fn wait_until(&self, until: impl Fn(&RebuildProgress) -> bool) -> RebuildProgress {
        let mut c = self.ctl.lock();
        while !until(&c.progress) && !c.progress.finished() {
            self.wake.wait(&mut c);
        }
        c.progress.clone()
    }

    /// Counts one handled blob of priority class `prio` in the progress, `t0` being the start of
    /// the rebuild; `urgent`: repaired because a read needed it. Pauses when `pause_after_blobs`
    /// is reached.
    pub fn account(&self, prio: u8, t0: Instant, loc: &Location, urgent: bool, outcome: Outcome) {
        let mut c = self.ctl.lock();
        let p = &mut c.progress;
        let class = p.classes.entry(prio).or_default();
        class.blobs_done += 1;
        match outcome {
            Outcome::Written(b) => {
                class.bytes_done += b;
                p.bytes_done += b;
            }
            Outcome::Intact => p.already_intact += 1,
            Outcome::Skipped => p.skipped += 1,
            Outcome::Lost => {
                class.blobs_lost += 1;
                p.lost.push(*loc);
            }
            Outcome::Unwritten => p.unwritten += 1,
        }
        if class.blobs_done >= class.blobs_total && class.restored_at.is_none() {
            class.restored_at = Some(t0.elapsed());
        }
        p.blobs_done += 1;
        if urgent {
            p.on_demand += 1;
        }
        p.elapsed = t0.elapsed();
        p.rate = p.bytes_done as f64 / p.elapsed.as_secs_f64().max(1e-9);
        p.eta =
            (p.rate > 0.0).then(|| Duration::from_secs_f64(p.bytes_total.saturating_sub(p.bytes_done) as f64 / p.rate));
        let record = c.opts.as_ref().is_some_and(|o| o.record_order);
        if record {
            c.progress.order.push(Restored { seq: loc.seq, priority: prio, on_demand: urgent });
        }
        if c.opts.as_ref().and_then(|o| o.pause_after_blobs).is_some_and(|n| c.progress.blobs_done >= n) {
            c.paused = true;
            c.progress.state = RebuildState::Paused;
        }
        drop(c);
        self.wake.notify_all();
    }

    /// Ends the rebuild started at `t0`: done (`Ok`), or aborted for the reason given.
    pub fn conclude(&self, t0: Instant, end: Result<(), String>) {
        let mut c = self.ctl.lock();
        c.progress.elapsed = t0.elapsed();
        match end {
            Ok(()) => {
                c.progress.state = RebuildState::Done;
                c.progress.eta = Some(Duration::ZERO);
                tracing::info!(
                    device = self.device,
                    blobs = c.progress.blobs_done,
                    bytes = c.progress.bytes_done,
                    elapsed = ?c.progress.elapsed,
                    lost = c.progress.lost.len(),
                    "device rebuilt"
                );
            }
            Err(why) => c.progress.state = RebuildState::Aborted(why),
        }
    }

    /// Asks the thread to stop and waits for it.
    pub fn stop(&self, why: &str) {
        {
            let mut c = self.ctl.lock();
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
