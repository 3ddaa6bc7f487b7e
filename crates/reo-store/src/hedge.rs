//! Hedged reads: not waiting for a slow or stuck device when the other devices can rebuild what
//! it holds.
//!
//! A device that stalls (firmware garbage collection, a drive retrying a bad sector, a hung
//! path) would hold up every read with a chunk on it, and through them every client. The read
//! lanes record when each device's current read began (`reo_media::ReadLanes::busy_for`); a
//! reader waiting on a device whose read has been in service past `slow_read_after` stops waiting
//! for it and the read goes on as if the device had failed: its chunks are rebuilt from copies or
//! parity (`rebuild.rs`). While the device stays that slow, later reads plan around it from the
//! start (its chunks are not even queued; the rebuilding columns are fetched in the same round).
//!
//! What keeps this safe:
//! - Only time *in service* counts, not time queued behind other reads: load is not a stall.
//! - If no other device is free of such a read, the whole array stalls (a host, not a device);
//!   reads keep waiting rather than piling reconstructions onto devices just as slow.
//! - Blobs without redundancy never hedge: waiting is their only way to the bytes.
//! - A hedged read that cannot be rebuilt without the slow device (more devices down than the
//!   scheme tolerates) is read again waiting for every device: slowness never turns into a
//!   `Corrupt` answer ([`Hedge::abandoned`]).
//! - A read left behind is not a device error (nothing is charged to its error budget); it still
//!   completes on its lane and its buffer is dropped. The second try charges only the devices the
//!   first one left behind: the others' errors were charged once already.
//! - Scrub never hedges: it verifies every chunk where it lies.
//!
//! A device with one read in service past `stuck_read_fail_after` (default 30 s) is marked failed
//! — stuck — by a reader that finds it, which then stops waiting for it whether or not it hedges;
//! its reads queued behind the stuck one are abandoned by their readers the same way. Not at the
//! first sight: the same read must still be in service a grace later (a quarter of the limit, at
//! most 1 s), so that a process or machine paused for longer than the limit — every read in
//! service looks stuck the moment it resumes — fails nothing; and, as for hedging, only while
//! another device is prompt (a whole array that hangs is waited for, not failed). A replacement
//! gets new lane threads (`ReadLanes::renew`): the stuck read neither blocks nor counts against it.

use crate::location::Location;
use crate::scheme::Scheme;
use crate::stats::Stat;
use crate::store::Inner;
use std::cell::Cell;

/// One read's hedging: whether it may stop waiting for slow devices, which devices it left
/// behind, and which devices' errors it charges.
pub(crate) struct Hedge {
    on: bool,
    /// Bit d: device d's chunks were left behind (or planned around) for slowness.
    left: Cell<u64>,
    /// `Some(mask)`: charge read errors and checksum mismatches only to these devices.
    charge_only: Option<u64>,
    /// The devices this read plans around for slowness, found once at its first question
    /// ([`Inner::avoid`]): one look at each lane per read, not one per chunk.
    planned: Cell<Option<u64>>,
    /// The read runs on its caller's thread, not on the device lanes ([`Hedge::on_caller`]).
    on_caller: bool,
}

/// A device's bit in a mask (devices past 63 share the top bit: charged, never skipped).
fn bit(d: usize) -> u64 {
    1 << d.min(63)
}

impl Hedge {
    /// A read that waits for every device (scrub).
    pub fn off() -> Hedge {
        Hedge { on: false, left: Cell::new(0), charge_only: None, planned: Cell::new(None), on_caller: false }
    }

    /// The hedging of a read of `loc`: on when configured and the blob has redundancy.
    pub fn for_blob(inner: &Inner, loc: &Location) -> Hedge {
        let redundant = !matches!(loc.scheme, Scheme::None(_));
        let on = redundant && inner.tunables.slow_read_after().is_some();
        Hedge { on, left: Cell::new(0), charge_only: None, planned: Cell::new(None), on_caller: false }
    }

    /// The second try of a read whose hedged try (`self`) failed: waits for every device, and
    /// charges errors only to the devices the first try did not read.
    pub fn retry(&self) -> Hedge {
        let charge_only = Some(self.left.get() | bit(63));
        Hedge { on: false, left: Cell::new(0), charge_only, planned: Cell::new(None), on_caller: self.on_caller }
    }

    /// This read with its device reads served on the caller's thread, as they are submitted
    /// (`reo_media::ReadLanes::batch_on_caller`): for a short read whose caller must not hand
    /// off to the lanes and wait. It does not hedge: a read begun on the caller cannot be left
    /// behind, and one that planned around a slow device would, failing, retry on that device,
    /// so its caller checks that no device is slow first ([`crate::Store::has_slow_device`]).
    pub fn on_caller(self) -> Hedge {
        Hedge { on_caller: true, on: false, ..self }
    }

    /// Whether the read's device reads run on its caller's thread.
    pub(crate) fn reads_on_caller(&self) -> bool {
        self.on_caller
    }

    /// Whether the read left a device's chunks behind for slowness (then a failure is retried
    /// with [`Hedge::retry`]).
    pub fn abandoned(&self) -> bool {
        self.left.get() != 0
    }

    pub(crate) fn note_left(&self, d: usize) {
        self.left.set(self.left.get() | bit(d));
    }

    /// Whether a read error or checksum mismatch on device `d` counts against it.
    pub(crate) fn charges(&self, d: usize) -> bool {
        self.charge_only.is_none_or(|m| m & bit(d) != 0)
    }
}

impl Inner {
    /// Whether device `d` has a read in service past `slow_read_after`.
    pub(crate) fn slow(&self, d: usize) -> bool {
        self.tunables.slow_read_after().is_some_and(|t| self.devs.busy_for(d) >= t)
    }

    /// Whether a read with `hedge` plans around device `d` for blob `seq`: it is down for the blob,
    /// or was slow while another device was not when the read first asked.
    pub(crate) fn avoid(&self, d: usize, seq: u64, hedge: &Hedge) -> bool {
        self.down(d, seq) || (d < 63 && self.planned_around(hedge) & bit(d) != 0)
    }

    /// The devices (below 63) a read with `hedge` plans around: those slow while another is
    /// prompt, looked at once per read. Reads that plan around a slow device never wait on it,
    /// so this is also where a stuck one is found (and marked failed).
    fn planned_around(&self, hedge: &Hedge) -> u64 {
        if !hedge.on {
            return 0;
        }
        if let Some(m) = hedge.planned.get() {
            return m;
        }
        let n = self.n().min(63);
        let slow = (0..n).filter(|&d| self.slow(d)).fold(0u64, |m, d| m | bit(d));
        let mut planned = 0;
        for d in (0..n).filter(|&d| slow & bit(d) != 0) {
            self.fail_if_stuck(d);
            if (0..self.n()).any(|e| e != d && !self.devs.is_failed(e) && (e >= 63 || slow & bit(e) == 0)) {
                planned |= bit(d);
            }
        }
        hedge.planned.set(Some(planned));
        planned
    }

    /// Whether some device other than `d` is up and has no read in service past
    /// `slow_read_after`.
    fn another_is_prompt(&self, d: usize) -> bool {
        (0..self.n()).any(|e| e != d && !self.devs.is_failed(e) && !self.slow(e))
    }

    /// Whether a reader waiting for a read of device `d` stops waiting: the device failed (or
    /// is found stuck now, and marked failed), or `hedge` allows leaving a slow device behind.
    pub(crate) fn give_up_on(&self, d: usize, hedge: &Hedge) -> bool {
        self.fail_if_stuck(d);
        self.devs.is_failed(d) || (hedge.on && self.slow(d) && self.another_is_prompt(d))
    }

    /// Marks device `d` failed if the same read has been in service on it past
    /// `stuck_read_fail_after` at two sights a grace apart, while another device is prompt.
    fn fail_if_stuck(&self, d: usize) {
        let Some(limit) = self.tunables.stuck_read_fail_after() else { return };
        let Some(busy) = self.devs.stuck_for(d, limit) else { return };
        if self.another_is_prompt(d)
            && self.mark_failed(
                d,
                &format!(
                    "STUCK: a read has been in service for {busy:?}, past stuck_read_fail_after {limit:?}; \
                     replace the device"
                ),
            )
        {
            self.stats.add(Stat::Ejections, 1);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::config::StoreConfig;
    use crate::handle::Store;
    use crate::scheme::Placement;
    use crate::store::PutOptions;
    use reo_media::{Media, MemMedia};
    use std::sync::Arc;

    fn store(cfg: StoreConfig) -> Store {
        let cfg = StoreConfig {
            chunk_size: 16 << 10,
            zone_size: Some(1 << 20),
            journal_size: Some(256 << 10),
            checkpoint_size: Some(256 << 10),
            ..cfg
        };
        let devs: Vec<Arc<dyn Media>> = (0..4).map(|_| Arc::new(MemMedia::new(16 << 20)) as Arc<dyn Media>).collect();
        Store::open(devs, &cfg).unwrap().0
    }

    /// Only blobs with redundancy hedge, and only when `slow_read_after` is set.
    #[test]
    fn only_redundant_blobs_hedge() {
        let on = store(StoreConfig::default());
        let off = store(StoreConfig { slow_read_after: None, ..StoreConfig::default() });
        for s in [&on, &off] {
            for (scheme, redundant) in [
                (Scheme::None(Placement::Isolated), false),
                (Scheme::None(Placement::Striped), false),
                (Scheme::Replicate(2), true),
                (Scheme::Rs { k: 2, p: 2 }, true),
            ] {
                let loc = s.put(b"h", &[7u8; 40_000], &PutOptions::new(scheme)).unwrap();
                let configured = s.inner.tunables.slow_read_after().is_some();
                assert_eq!(Hedge::for_blob(&s.inner, &loc).on, redundant && configured, "{scheme:?}");
            }
        }
        assert!(!Hedge::off().on);
    }

    /// The second try charges only the devices the first one left behind.
    #[test]
    fn a_retry_charges_only_the_devices_left_behind() {
        let first =
            Hedge { on: true, left: Cell::new(0), charge_only: None, planned: Cell::new(None), on_caller: false };
        assert!((0..8).all(|d| first.charges(d)) && !first.abandoned());
        first.note_left(2);
        first.note_left(70); // past 63: the shared top bit
        let retry = first.retry();
        assert!(first.abandoned() && !retry.on);
        assert_eq!((0..5).map(|d| retry.charges(d)).collect::<Vec<_>>(), [false, false, true, false, false]);
        assert!(retry.charges(63) && retry.charges(100), "devices past 63 are always charged");
    }
}
