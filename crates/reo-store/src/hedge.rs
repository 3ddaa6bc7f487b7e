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
//!   completes on its lane and its buffer is dropped.
//! - Scrub never hedges: it verifies every chunk where it lies.
//!
//! A device with one read in service past `stuck_read_fail_after` (default 30 s) is marked
//! failed — stuck — by the reader that finds it, which then stops waiting for it whether or not
//! it hedges; its reads queued behind the stuck one are abandoned by their readers the same way.

use crate::location::Location;
use crate::scheme::Scheme;
use crate::store::Inner;
use std::cell::Cell;
use std::time::Duration;

/// One read's hedging: whether it may stop waiting for slow devices, and whether it did.
pub(crate) struct Hedge {
    on: bool,
    abandoned: Cell<bool>,
}

impl Hedge {
    /// A read that waits for every device (scrub, and the second try of a hedged read).
    pub fn off() -> Hedge {
        Hedge { on: false, abandoned: Cell::new(false) }
    }

    /// The hedging of a read of `loc`: on when configured and the blob has redundancy.
    pub fn for_blob(inner: &Inner, loc: &Location) -> Hedge {
        let redundant = !matches!(loc.scheme, Scheme::None(_));
        Hedge { on: redundant && inner.slow_reads.0.is_some(), abandoned: Cell::new(false) }
    }

    /// Whether the read left a device's chunks behind for slowness (then a failure is retried
    /// with [`Hedge::off`]).
    pub fn abandoned(&self) -> bool {
        self.abandoned.get()
    }

    pub(crate) fn note_abandoned(&self) {
        self.abandoned.set(true);
    }
}

impl Inner {
    /// Whether device `d` has a read in service past `slow_read_after`.
    pub(crate) fn slow(&self, d: usize) -> bool {
        self.slow_reads.0.is_some_and(|t| self.reads.busy_for(d) >= t)
    }

    /// Whether a read with `hedge` plans around device `d` for blob `seq`: it is down for the blob
    /// (or found stuck now, and marked failed), or slow while another device is not.
    pub(crate) fn avoid(&self, d: usize, seq: u64, hedge: &Hedge) -> bool {
        if hedge.on && self.slow(d) {
            // Reads that plan around a slow device never wait on it: look for a stuck one here.
            self.fail_if_stuck(d);
        }
        self.down(d, seq) || (hedge.on && self.slow(d) && self.another_is_prompt(d))
    }

    /// Whether some device other than `d` is up and has no read in service past
    /// `slow_read_after`.
    fn another_is_prompt(&self, d: usize) -> bool {
        (0..self.n()).any(|e| e != d && !self.is_failed(e) && !self.slow(e))
    }

    /// How often a reader waiting on the lanes looks for slow and stuck devices; `None`: it
    /// never does (both limits off).
    pub(crate) fn hedge_poll(&self) -> Option<Duration> {
        let (slow, stuck) = self.slow_reads;
        let every = match (slow, stuck) {
            (Some(s), _) => s / 2,
            (None, Some(s)) => s / 8,
            (None, None) => return None,
        };
        Some(every.max(Duration::from_millis(1)))
    }

    /// Whether a reader waiting for a read of device `d` stops waiting: the device failed (or
    /// is found stuck now, and marked failed), or `hedge` allows leaving a slow device behind.
    pub(crate) fn give_up_on(&self, d: usize, hedge: &Hedge) -> bool {
        self.fail_if_stuck(d);
        self.is_failed(d) || (hedge.on && self.slow(d) && self.another_is_prompt(d))
    }

    /// Marks device `d` failed if a read has been in service on it past `stuck_read_fail_after`.
    fn fail_if_stuck(&self, d: usize) {
        let Some(limit) = self.slow_reads.1 else { return };
        let busy = self.reads.busy_for(d);
        if busy >= limit
            && self.mark_failed(
                d,
                &format!(
                    "STUCK: a read has been in service for {busy:?}, past stuck_read_fail_after {limit:?}; \
                     replace the device"
                ),
            )
        {
            crate::stats::Counters::add(&self.stats.ejections, 1);
        }
    }
}
