//! [`DeviceSet`]: the store's N device positions and what the store knows of each — the media in
//! its slot, whether it failed or is stale, its decaying read-error count, a read suspected stuck
//! on it — with the two ways of doing I/O on them: the I/O pool (writes, syncs, metadata scans,
//! and CPU work split across the pool's threads) and the read lanes (the chunk reads of blob
//! reads, rebuilds, the cleaner and scrub: `read.rs`).
//!
//! Locks owned: each slot's media lock (`slot.rs`), each device's error budget and stuck-read
//! suspect; all leaves, held only inside a method here. The flags are atomics. What the store does
//! on top — marking a failure stale and journaling it (`stale.rs`), ejecting past the error
//! budget (`eject.rs`), failing a stuck device (`hedge.rs`) — is the caller's.

use crate::slot::Slot;
use parking_lot::Mutex;
use reo_media::{IoPool, Media, ReadBatch, ReadLanes};
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

/// The devices of the store (see the module doc).
pub(crate) struct DeviceSet {
    /// The device positions, whose media `replace` swaps.
    slots: Vec<Arc<Slot>>,
    /// The same slots, as media: every I/O of the store goes through them.
    media: Vec<Arc<dyn Media>>,
    failed: Vec<AtomicBool>,
    /// It missed writes while failed, and opens failed until replaced (`stale.rs`).
    stale: Vec<AtomicBool>,
    /// Stale marks set since open.
    stale_marks: AtomicU64,
    pool: IoPool,
    lanes: ReadLanes,
    /// Every device keeps bytes (false: byte-less simulated media).
    stores_bytes: bool,
    /// Decaying read-error counts (automatic ejection, `eject.rs`).
    budgets: Vec<ErrorBudget>,
    /// A read seen in service past `stuck_read_fail_after` (`hedge.rs`).
    stuck: Vec<StuckSuspect>,
}

impl DeviceSet {
    /// `devices` in their slots, those in `failed` marked failed. Byte-less media read on the
    /// caller (as the pool runs their jobs), others through lanes keeping `read_depth` reads in
    /// flight per device.
    pub fn new(devices: Vec<Arc<dyn Media>>, pool: IoPool, failed: &[usize], read_depth: usize) -> DeviceSet {
        let stores_bytes = devices.iter().all(|d| d.stores_bytes());
        let n = devices.len();
        let slots: Vec<Arc<Slot>> = devices.into_iter().map(|d| Arc::new(Slot::new(d))).collect();
        let media: Vec<Arc<dyn Media>> = slots.iter().map(|s| s.clone() as Arc<dyn Media>).collect();
        let lanes =
            if stores_bytes { ReadLanes::new(media.clone(), read_depth) } else { ReadLanes::inline(media.clone()) };
        DeviceSet {
            slots,
            media,
            failed: (0..n).map(|d| AtomicBool::new(failed.contains(&d))).collect(),
            stale: (0..n).map(|_| AtomicBool::new(false)).collect(),
            stale_marks: AtomicU64::new(0),
            pool,
            lanes,
            stores_bytes,
            budgets: (0..n).map(|_| ErrorBudget::default()).collect(),
            stuck: (0..n).map(|_| StuckSuspect::default()).collect(),
        }
    }

    /// Number of devices.
    #[inline]
    pub fn len(&self) -> usize {
        self.media.len()
    }

    /// Device `d` (its slot: I/O goes to the media installed now).
    #[inline]
    pub fn get(&self, d: usize) -> &dyn Media {
        self.media[d].as_ref()
    }

    /// The media installed in slot `d` now (not the slot).
    #[inline]
    pub fn installed(&self, d: usize) -> Arc<dyn Media> {
        self.slots[d].get()
    }

    /// How many times media was swapped into slot `d` (`slot.rs`): an I/O failure is charged to
    /// the device only if this did not change while it ran.
    #[inline]
    pub fn generation(&self, d: usize) -> u64 {
        self.slots[d].generation()
    }

    /// Whether every device keeps bytes (false: byte-less simulated media).
    #[inline]
    pub fn stores_bytes(&self) -> bool {
        self.stores_bytes
    }

    /// The largest direct-I/O alignment a vectored write needs on any device.
    #[inline]
    pub fn vector_align(&self) -> usize {
        self.media.iter().map(|d| d.vector_align()).max().unwrap_or(1)
    }

    /// The pool that runs device I/O (and the store's parallel CPU work) on its threads.
    #[inline]
    pub fn pool(&self) -> &IoPool {
        &self.pool
    }

    /// A batch of reads on the devices' lanes.
    #[inline]
    pub fn read_batch(&self) -> ReadBatch<'_> {
        self.lanes.batch()
    }

    /// A batch of reads served on the caller's thread as they are submitted.
    #[inline]
    pub fn read_batch_on_caller(&self) -> ReadBatch<'_> {
        self.lanes.batch_on_caller()
    }

    /// How long device `d`'s current read has been in service (zero when idle).
    #[inline]
    pub fn busy_for(&self, d: usize) -> Duration {
        self.lanes.busy_for(d)
    }

    /// Installs `media` in slot `d`, with new lane threads (a read stuck in the old media must
    /// neither block nor count against it) and a clean error budget.
    #[inline]
    pub fn replace(&self, d: usize, media: Arc<dyn Media>) {
        self.slots[d].swap(media);
        self.lanes.renew(d);
        self.budgets[d].reset();
    }

    #[inline]
    pub fn is_failed(&self, d: usize) -> bool {
        self.failed[d].load(Ordering::Acquire)
    }

    /// No device is failed.
    #[inline]
    pub fn none_failed(&self) -> bool {
        (0..self.len()).all(|d| !self.is_failed(d))
    }

    /// Devices not failed.
    #[inline]
    pub fn healthy(&self) -> usize {
        (0..self.len()).filter(|&d| !self.is_failed(d)).count()
    }

    /// Marks device `d` failed, logging why. Returns whether this call failed it (false: it was
    /// failed already).
    #[inline]
    pub fn set_failed(&self, d: usize, why: &str) -> bool {
        let newly = !self.failed[d].swap(true, Ordering::AcqRel);
        if newly {
            tracing::warn!(device = d, file = %self.media[d].describe(), reason = why, "device marked failed");
        }
        newly
    }

    /// Marks device `d` failed without a word (by command, or at open).
    #[inline]
    pub fn fail_quietly(&self, d: usize) {
        self.failed[d].store(true, Ordering::Release);
    }

    /// Brings a replaced device `d` back: neither failed nor stale.
    #[inline]
    pub fn bring_back(&self, d: usize) {
        self.stale[d].store(false, Ordering::SeqCst);
        self.failed[d].store(false, Ordering::SeqCst);
    }

    #[inline]
    pub fn is_stale(&self, d: usize) -> bool {
        self.stale[d].load(Ordering::Acquire)
    }

    /// Sets the stale mark of `d`, counting it; true if it was not set.
    #[inline]
    pub fn set_stale(&self, d: usize) -> bool {
        let new = !self.stale[d].swap(true, Ordering::AcqRel);
        if new {
            self.stale_marks.fetch_add(1, Ordering::AcqRel);
        }
        new
    }

    /// Sets the stale mark of `d` as the metadata replayed at open says (not counted; a device
    /// index beyond the store is ignored).
    #[inline]
    pub fn replay_stale(&self, d: usize) {
        if let Some(s) = self.stale.get(d) {
            s.store(true, Ordering::Release);
        }
    }

    /// Stale marks set since open.
    #[inline]
    pub fn stale_marks(&self) -> u64 {
        self.stale_marks.load(Ordering::Acquire)
    }

    /// Counts a read error on device `d` at `now` in its budget; returns its decayed count.
    #[inline]
    pub fn charge_error(&self, d: usize, now: Instant, halflife: Duration) -> f64 {
        self.budgets[d].add(now, halflife)
    }

    /// How long device `d`'s read has been in service, if it is stuck: in service past `limit`
    /// and, so that a paused process or machine fails nothing, still the same read a grace (a
    /// quarter of the limit, at most 1 s) after it was first seen so. A failed device is not.
    pub fn stuck_for(&self, d: usize, limit: Duration) -> Option<Duration> {
        let (read, busy) = self.lanes.in_service(d)?;
        if busy < limit || self.is_failed(d) {
            return None;
        }
        let grace = (limit / 4).min(Duration::from_secs(1));
        let mut suspect = self.stuck[d].0.lock();
        match *suspect {
            Some((r, seen)) if r == read && seen.elapsed() >= grace => Some(busy),
            Some((r, _)) if r == read => None,
            _ => {
                *suspect = Some((read, Instant::now()));
                None
            }
        }
    }
}

/// The error count of one device: each error adds 1, and the count decays by half every
/// half-life, computed exactly from the time since the last error (no timer thread).
#[derive(Default)]
struct ErrorBudget {
    state: Mutex<Option<(f64, Instant)>>,
}

impl ErrorBudget {
    /// Adds one error at `now`; returns the decayed count including it.
    fn add(&self, now: Instant, halflife: Duration) -> f64 {
        let mut s = self.state.lock();
        let count = match *s {
            Some((c, at)) => c * 0.5f64.powf(now.saturating_duration_since(at).as_secs_f64() / halflife.as_secs_f64()),
            None => 0.0,
        } + 1.0;
        *s = Some((count, now));
        count
    }

    /// Forgets every error (a replaced device starts with a clean budget).
    #[inline]
    fn reset(&self) {
        *self.state.lock() = None;
    }
}

/// A read seen in service past `stuck_read_fail_after`: (its identity in the lanes' clock, when
/// first seen so).
#[derive(Default)]
struct StuckSuspect(Mutex<Option<(u64, Instant)>>);

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn count_decays_by_half_each_halflife() {
        let b = ErrorBudget::default();
        let t = Instant::now();
        let h = Duration::from_secs(10);
        assert_eq!(b.add(t, h), 1.0);
        assert_eq!(b.add(t, h), 2.0);
        let c = b.add(t + h, h);
        assert!((c - 2.0).abs() < 1e-9, "{c}");
        let c = b.add(t + h * 3, h);
        assert!((c - 1.5).abs() < 1e-9, "{c}");
        b.reset();
        assert_eq!(b.add(t, h), 1.0);
    }
}
