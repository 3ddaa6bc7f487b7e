//! Flash admission control: whether a candidate write to flash (an admitted read miss or a client
//! write) is worth its flash write.
//!
//! This module owns the [`Admission`] trait, the [`Request`] it judges, the [`Decision`] it returns,
//! and a [`Chain`] that runs policies cheap → expensive; `stats` holds the per-reason
//! [`AdmissionStats`] and the stats-keeping front end [`Admitter`]. The policies live in submodules:
//!
//! * [`AdmitAll`] (`aa`), here;
//! * [`seqr`]: sequential-stream detection, SEQR and SSEQR(L) (the Fusion-io study,
//!   docs/REFERENCES.md §P4);
//! * [`tc`]: the touch-count bitmap with rotating generations (the Fusion-io study);
//! * [`watchlist`]: SDCC's shadow watchlist with utility-based promotion (SDCC,
//!   docs/REFERENCES.md §P3);
//! * [`budget`]: a flash write budget, CacheLib's DynamicRandomAP under a hard token-bucket cap;
//! * [`config`]: [`AdmissionKind`] names (`aa`, `seqr`, `sseqr`, `tc`, `seqr+tc`, `sseqr+tc`,
//!   `watchlist`) and the option string parser that builds an [`Admitter`].
//!
//! # Contract
//!
//! The cache manager calls [`Admission::decide`] once per candidate write, *after* the replacement
//! policy reported a miss (or for a client write), and writes to flash only on [`Decision::Admit`].
//! It then reports what happened through the feedback hooks: [`Admission::on_insert`] when the
//! object was actually inserted, [`Admission::on_evict`] with the victim's utility for every
//! eviction, [`Admission::on_hit`] for hits. Time is the caller's: `now` is in nanoseconds of any
//! monotonic clock (a logical clock counting in ns works; nothing here reads the system clock), and
//! a `now` that goes backwards is treated as no time passing.

pub mod budget;
pub mod config;
pub mod seqr;
mod stats;
pub mod tc;
pub mod watchlist;

#[cfg(test)]
mod scan_tests;

use serde::Serialize;

use crate::policy::Key;

pub use budget::{BudgetConfig, WriteBudget};
pub use config::{AdmissionConfig, AdmissionConfigError, AdmissionKind};
pub use seqr::{Seqr, SeqrConfig, Sseqr, StreamTable};
pub use stats::{AdmissionStats, Admitter, RejectCounts, ThrottleCounts};
pub use tc::{TcConfig, TouchCount};
pub use watchlist::{Utility, Watchlist, WatchlistConfig};

/// Nanoseconds in a day (the unit of write budgets).
pub const DAY_NS: u64 = 86_400 * 1_000_000_000;

/// What produced the candidate write.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum Access {
    /// A read that missed; admitting it copies the backend's bytes to flash.
    ReadMiss,
    /// A client write (write-through / write-back of new data).
    Write,
}

/// A candidate write to flash: `len` bytes at byte `offset` of object `key` (a fragment or range).
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct Request {
    /// Object the range belongs to.
    pub key: Key,
    /// Byte offset of the range in the object (fragment index × fragment size for fragments).
    pub offset: u64,
    /// Bytes that would be written to flash.
    pub len: u64,
    /// What produced the write (a read miss or a client write).
    pub access: Access,
    /// Caller-supplied time in nanoseconds.
    pub now: u64,
    /// Cache occupancy in bytes (for "under pressure" decisions); 0/0 means unknown (no pressure).
    pub used_bytes: u64,
    /// Cache capacity in bytes, the denominator of [`Request::occupancy`]; 0 = unknown.
    pub capacity_bytes: u64,
    /// Utility of the replacement policy's next eviction candidate, if admitting would evict one
    /// (same unit as [`Utility`]); `None` when there is free space.
    pub victim_utility: Option<f64>,
}

impl Request {
    /// A read miss of `len` bytes at `offset` of `key`, at time `now`; no occupancy, no victim.
    pub fn read_miss(key: Key, offset: u64, len: u64, now: u64) -> Self {
        Request {
            key,
            offset,
            len,
            access: Access::ReadMiss,
            now,
            used_bytes: 0,
            capacity_bytes: 0,
            victim_utility: None,
        }
    }

    /// A client write of `len` bytes at `offset` of `key`, at time `now`.
    pub fn write(key: Key, offset: u64, len: u64, now: u64) -> Self {
        Request { access: Access::Write, ..Self::read_miss(key, offset, len, now) }
    }

    /// The same request with the cache's occupancy.
    pub fn with_occupancy(self, used_bytes: u64, capacity_bytes: u64) -> Self {
        Request { used_bytes, capacity_bytes, ..self }
    }

    /// The same request with the eviction candidate's utility.
    pub fn with_victim(self, utility: f64) -> Self {
        Request { victim_utility: Some(utility), ..self }
    }

    /// Used / capacity, 0.0 when the capacity is unknown (0).
    pub fn occupancy(&self) -> f64 {
        if self.capacity_bytes == 0 {
            0.0
        } else {
            self.used_bytes as f64 / self.capacity_bytes as f64
        }
    }

    /// End of the byte range (exclusive); an empty range counts as one byte so it still advances.
    pub fn end(&self) -> u64 {
        self.offset.saturating_add(self.len.max(1))
    }
}

/// Why a request was rejected (a policy judged it not worth caching).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum Reason {
    /// SEQR: part of a detected sequential stream.
    Sequential,
    /// SSEQR: part of a sequential stream past its first L bytes.
    SequentialPastLimit,
    /// TC: the segment has not been touched often enough yet.
    Cold,
    /// Watchlist: watched, but not enough pseudo-hits yet.
    Watching,
    /// Watchlist: hot, but its utility does not beat the eviction candidate's.
    BelowVictim,
    /// Watchlist: hot, but its utility does not beat the average of recently evicted items.
    BelowEvictedAverage,
}

impl Reason {
    /// Stable lower-case name (metrics labels, replay reports).
    pub fn as_str(self) -> &'static str {
        match self {
            Reason::Sequential => "sequential",
            Reason::SequentialPastLimit => "sequential_past_limit",
            Reason::Cold => "cold",
            Reason::Watching => "watching",
            Reason::BelowVictim => "below_victim",
            Reason::BelowEvictedAverage => "below_evicted_average",
        }
    }
}

/// Why the write budget held a request back (the request may be worth caching).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum Throttle {
    /// DynamicRandomAP's probabilistic rate said no.
    Rate,
    /// The hard token bucket has not enough bytes left.
    Cap,
}

/// The outcome of [`Admission::decide`].
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum Decision {
    /// Write the request to flash.
    Admit,
    /// Do not cache it: a policy judged it not worth the flash write.
    Reject(Reason),
    /// Hold it back: the write budget is short (the request may be worth caching).
    Throttled(Throttle),
}

/// An admission policy. Hooks default to no-ops; see the module documentation for the contract.
pub trait Admission: Send {
    /// Short name (`aa`, `seqr`, …; a chain joins its stages with `+`).
    fn name(&self) -> String;

    /// Judges one candidate write.
    fn decide(&mut self, req: &Request) -> Decision;

    /// `req` was admitted and written to flash.
    fn on_insert(&mut self, req: &Request) {
        let _ = req;
    }

    /// A resident `key` was hit at `now`.
    fn on_hit(&mut self, key: Key, now: u64) {
        let _ = (key, now);
    }

    /// `key` was evicted at `now` with `utility` (same unit as [`Utility`]).
    fn on_evict(&mut self, key: Key, utility: f64, now: u64) {
        let _ = (key, utility, now);
    }
}

/// Admit-all (`aa`): every candidate is written.
#[derive(Clone, Copy, Debug, Default)]
pub struct AdmitAll;

impl Admission for AdmitAll {
    fn name(&self) -> String {
        "aa".into()
    }

    fn decide(&mut self, _req: &Request) -> Decision {
        Decision::Admit
    }
}

/// Runs its stages in order (put cheap ones first) and returns the first non-`Admit` decision;
/// later stages do not see a request an earlier one refused. Hooks go to every stage.
pub struct Chain {
    stages: Vec<Box<dyn Admission>>,
}

impl Chain {
    /// A chain of `stages`, run in the given order; with no stage it admits everything (`aa`).
    pub fn new(stages: Vec<Box<dyn Admission>>) -> Self {
        Chain { stages }
    }
}

impl Admission for Chain {
    fn name(&self) -> String {
        let names: Vec<String> = self.stages.iter().map(|s| s.name()).collect();
        if names.is_empty() {
            "aa".into()
        } else {
            names.join("+")
        }
    }

    fn decide(&mut self, req: &Request) -> Decision {
        for s in &mut self.stages {
            let d = s.decide(req);
            if d != Decision::Admit {
                return d;
            }
        }
        Decision::Admit
    }

    fn on_insert(&mut self, req: &Request) {
        self.stages.iter_mut().for_each(|s| s.on_insert(req));
    }

    fn on_hit(&mut self, key: Key, now: u64) {
        self.stages.iter_mut().for_each(|s| s.on_hit(key, now));
    }

    fn on_evict(&mut self, key: Key, utility: f64, now: u64) {
        self.stages.iter_mut().for_each(|s| s.on_evict(key, utility, now));
    }
}

/// A scripted policy for tests: rejects odd keys as `Cold`, throttles keys ≡ 2 (mod 4).
#[cfg(test)]
pub(crate) struct Fake;

#[cfg(test)]
impl Admission for Fake {
    fn name(&self) -> String {
        "fake".into()
    }
    fn decide(&mut self, req: &Request) -> Decision {
        match req.key % 4 {
            1 | 3 => Decision::Reject(Reason::Cold),
            2 => Decision::Throttled(Throttle::Cap),
            _ => Decision::Admit,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn chain_stops_at_first_refusal_and_names_its_stages() {
        let mut c = Chain::new(vec![Box::new(AdmitAll), Box::new(Fake), Box::new(AdmitAll)]);
        assert_eq!(c.name(), "aa+fake+aa");
        assert_eq!(c.decide(&Request::read_miss(4, 0, 1, 0)), Decision::Admit);
        assert_eq!(c.decide(&Request::read_miss(5, 0, 1, 0)), Decision::Reject(Reason::Cold));
        assert_eq!(c.decide(&Request::write(6, 0, 1, 0)), Decision::Throttled(Throttle::Cap));
        assert_eq!(Chain::new(vec![]).decide(&Request::read_miss(1, 0, 1, 0)), Decision::Admit);
    }

    #[test]
    fn request_helpers() {
        let r = Request::read_miss(1, 10, 0, 5).with_occupancy(30, 40).with_victim(1.5);
        assert_eq!(r.end(), 11);
        assert_eq!(r.occupancy(), 0.75);
        assert_eq!(r.victim_utility, Some(1.5));
        assert_eq!(Request::write(1, 0, 1, 0).occupancy(), 0.0);
        assert_eq!(Request::write(1, 0, 1, 0).access, Access::Write);
    }
}
