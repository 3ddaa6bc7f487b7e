//! Admission statistics and the stats-keeping front end.
//!
//! [`AdmissionStats`] counts every decision (requests and bytes), every rejection by [`Reason`] and
//! every throttle by [`Throttle`]; it serializes to JSON (serde) for metrics and replay reports.
//! [`Admitter`] wraps the configured policy (usually a [`super::Chain`]) and records each decision.

use serde::Serialize;

use super::{Admission, Decision, Reason, Request, Throttle};
use crate::policy::Key;

/// Rejections by [`Reason`].
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize)]
pub struct RejectCounts {
    /// [`Reason::Sequential`] (SEQR).
    pub sequential: u64,
    /// [`Reason::SequentialPastLimit`] (SSEQR).
    pub sequential_past_limit: u64,
    /// [`Reason::Cold`] (touch count).
    pub cold: u64,
    /// [`Reason::Watching`] (watchlist).
    pub watching: u64,
    /// [`Reason::BelowVictim`] (watchlist).
    pub below_victim: u64,
    /// [`Reason::BelowEvictedAverage`] (watchlist).
    pub below_evicted_average: u64,
}

impl RejectCounts {
    fn slot(&mut self, r: Reason) -> &mut u64 {
        match r {
            Reason::Sequential => &mut self.sequential,
            Reason::SequentialPastLimit => &mut self.sequential_past_limit,
            Reason::Cold => &mut self.cold,
            Reason::Watching => &mut self.watching,
            Reason::BelowVictim => &mut self.below_victim,
            Reason::BelowEvictedAverage => &mut self.below_evicted_average,
        }
    }

    /// Sum over all reasons.
    pub fn total(&self) -> u64 {
        self.sequential
            + self.sequential_past_limit
            + self.cold
            + self.watching
            + self.below_victim
            + self.below_evicted_average
    }
}

/// Throttles by [`Throttle`] kind.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize)]
pub struct ThrottleCounts {
    /// [`Throttle::Rate`]: DynamicRandomAP's probabilistic rate said no.
    pub rate: u64,
    /// [`Throttle::Cap`]: the hard token bucket was short.
    pub cap: u64,
}

/// Admission counters (requests and bytes); `admitted + rejected + throttled == requests`.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize)]
pub struct AdmissionStats {
    /// Decisions taken.
    pub requests: u64,
    /// Requests admitted.
    pub admitted: u64,
    /// Requests rejected (any [`Reason`]).
    pub rejected: u64,
    /// Requests throttled by the write budget (any [`Throttle`]).
    pub throttled: u64,
    /// Bytes of the admitted requests.
    pub admitted_bytes: u64,
    /// Bytes of the rejected requests.
    pub rejected_bytes: u64,
    /// Bytes of the throttled requests.
    pub throttled_bytes: u64,
    /// Rejections by reason; sums to `rejected`.
    pub rejected_by: RejectCounts,
    /// Throttles by kind; sums to `throttled`.
    pub throttled_by: ThrottleCounts,
}

impl AdmissionStats {
    /// Counts one decision on a request of `len` bytes.
    pub fn record(&mut self, d: Decision, len: u64) {
        self.requests += 1;
        match d {
            Decision::Admit => {
                self.admitted += 1;
                self.admitted_bytes += len;
            }
            Decision::Reject(r) => {
                self.rejected += 1;
                self.rejected_bytes += len;
                *self.rejected_by.slot(r) += 1;
            }
            Decision::Throttled(t) => {
                self.throttled += 1;
                self.throttled_bytes += len;
                match t {
                    Throttle::Rate => self.throttled_by.rate += 1,
                    Throttle::Cap => self.throttled_by.cap += 1,
                }
            }
        }
    }
}

/// An admission policy plus its [`AdmissionStats`]: what the cache manager holds.
pub struct Admitter {
    policy: Box<dyn Admission>,
    stats: AdmissionStats,
}

impl Admitter {
    /// Wraps `policy` with zeroed stats.
    pub fn new(policy: Box<dyn Admission>) -> Self {
        Admitter { policy, stats: AdmissionStats::default() }
    }

    /// The policy's name ([`Admission::name`]).
    pub fn name(&self) -> String {
        self.policy.name()
    }

    /// Decides and counts.
    pub fn decide(&mut self, req: &Request) -> Decision {
        let d = self.policy.decide(req);
        self.stats.record(d, req.len);
        d
    }

    /// Forwards [`Admission::on_insert`]: `req` was admitted and written to flash.
    pub fn on_insert(&mut self, req: &Request) {
        self.policy.on_insert(req);
    }

    /// Forwards [`Admission::on_hit`]: resident `key` was hit at `now` (ns).
    pub fn on_hit(&mut self, key: Key, now: u64) {
        self.policy.on_hit(key, now);
    }

    /// Forwards [`Admission::on_evict`]: `key` was evicted at `now` (ns) with `utility`.
    pub fn on_evict(&mut self, key: Key, utility: f64, now: u64) {
        self.policy.on_evict(key, utility, now);
    }

    /// Counters of every decision so far.
    pub fn stats(&self) -> &AdmissionStats {
        &self.stats
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    use crate::admission::Fake;

    #[test]
    fn stats_add_up_and_serialize() {
        let mut a = Admitter::new(Box::new(Fake));
        for k in 0..10u64 {
            a.decide(&Request::read_miss(k, 0, 100 + k, 0));
        }
        let s = *a.stats();
        assert_eq!(s.requests, 10);
        assert_eq!((s.admitted, s.rejected, s.throttled), (3, 5, 2)); // 0,4,8 | 1,3,5,7,9 | 2,6
        assert_eq!(s.admitted + s.rejected + s.throttled, s.requests);
        assert_eq!(s.rejected_by.total(), s.rejected);
        assert_eq!(s.throttled_by.rate + s.throttled_by.cap, s.throttled);
        assert_eq!(s.admitted_bytes, 100 + 104 + 108);
        let json = serde_json::to_value(s).unwrap();
        assert_eq!(json["rejected_by"]["cold"], 5);
        assert_eq!(json["throttled_by"]["cap"], 2);
    }
}
