//! SDCC's selective caching with a watchlist (the SDCC paper, docs/REFERENCES.md §P3, "Selective
//! caching" and "Cache organization"): missed fragments are not cached right away but watched as
//! shadow entries.
//!
//! From the paper: fragments recently accessed are inserted into the watchlist, "where their
//! accesses are being monitored for some time. Once a fragment becomes hot in the watchlist (i.e.
//! once it has seen a sufficient number of pseudo-hits), it becomes candidate for promotion. At that
//! point, the cache directory will compare its utility against the utility of the candidate(s) for
//! eviction from the cache and the average utility of recently evicted fragments: if the candidate
//! for promotion is deemed more worthy of caching, it will be promoted; otherwise it will stay in
//! the watchlist until it becomes hotter than what is to be evicted (or until it gets cold and is
//! dropped from the watchlist altogether)."
//!
//! Here:
//!
//! * **Entries** are per fragment: (key, offset / `fragment_len`). The watchlist holds at most
//!   `capacity` of them in LRU order ([`crate::policy::Lru`] with unit sizes); the least recently
//!   accessed is dropped ("gets cold and is dropped"). Every candidate request for a watched
//!   fragment is a pseudo-hit (the first miss creates the entry with one). An entry leaves the
//!   watchlist when [`Admission::on_insert`] reports the promotion.
//! * **Hot enough**: at least `min_hits` pseudo-hits while watched ([`Reason::Watching`] before).
//! * **Utility** (SDCC gives no formula, "computed based on the recency and frequency of
//!   accesses"): an exponentially decayed access count, `u(t) = Σᵢ 2^(−(t − tᵢ)/H)` over the access
//!   times `tᵢ`, with half-life `H` (LRFU/CRF). Each access adds 1 (frequency); every `H` halves it
//!   (recency). See [`Utility`]. The caller passes the eviction candidate's utility in the same unit
//!   ([`Request::victim_utility`]); a cache keeping a [`Utility`] per resident object gives an exact
//!   comparison, and GCLOCK's counter (hits minus hand passes, [`crate::policy::Clock::utility`]) is
//!   a coarse integer approximation of it.
//! * **Promotion** needs `u > victim utility` (when admitting evicts something) **and** `u > the
//!   moving average of evicted utilities` (when any eviction was reported). That average is an
//!   exponential moving average with weight `evicted_weight`, fed by [`Admission::on_evict`]
//!   ([`Reason::BelowVictim`], [`Reason::BelowEvictedAverage`] otherwise).

use std::collections::HashMap;

use super::{Admission, Decision, Reason, Request};
use crate::hash::{hash_key, KeyBuildHasher};
use crate::policy::{Key, Lru, Policy};

/// Recency+frequency utility: an access count decaying by half every half-life.
#[derive(Clone, Copy, Debug, Default, PartialEq)]
pub struct Utility {
    value: f64,
    last: u64,
}

impl Utility {
    /// Value at `now` (no change); times before the last access count as no time passing.
    pub fn at(&self, now: u64, half_life_ns: u64) -> f64 {
        let dt = now.saturating_sub(self.last) as f64;
        self.value * (-dt / half_life_ns.max(1) as f64).exp2()
    }

    /// Records an access at `now`: decays to `now`, then adds 1.
    pub fn touch(&mut self, now: u64, half_life_ns: u64) {
        self.value = self.at(now, half_life_ns) + 1.0;
        self.last = self.last.max(now);
    }
}

/// Parameters of [`Watchlist`]; see the module documentation.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct WatchlistConfig {
    /// Watched fragments at most. Default 65 536.
    pub capacity: usize,
    /// Pseudo-hits (the creating miss included) to be hot. Default 3.
    pub min_hits: u32,
    /// Half-life of [`Utility`] in ns. Default 60 s.
    pub half_life_ns: u64,
    /// Weight of a new eviction in the evicted-utility average. Default 1/32.
    pub evicted_weight: f64,
    /// Fragment length in bytes (watch granularity). Default 1 MiB.
    pub fragment_len: u64,
}

impl Default for WatchlistConfig {
    fn default() -> Self {
        WatchlistConfig {
            capacity: 1 << 16,
            min_hits: 3,
            half_life_ns: 60_000_000_000,
            evicted_weight: 1.0 / 32.0,
            fragment_len: 1 << 20,
        }
    }
}

#[derive(Clone, Copy, Debug)]
struct Shadow {
    hits: u32,
    utility: Utility,
}

/// The watchlist admission policy.
pub struct Watchlist {
    cfg: WatchlistConfig,
    order: Lru,
    entries: HashMap<Key, Shadow, KeyBuildHasher>,
    evicted_avg: Option<f64>,
    dropped: Vec<Key>,
}

impl Watchlist {
    /// An empty watchlist; `capacity` and `fragment_len` are raised to at least 1.
    pub fn new(cfg: WatchlistConfig) -> Self {
        let cfg = WatchlistConfig { capacity: cfg.capacity.max(1), fragment_len: cfg.fragment_len.max(1), ..cfg };
        Watchlist {
            cfg,
            order: Lru::new(cfg.capacity as u64),
            entries: HashMap::with_capacity_and_hasher(cfg.capacity.min(1 << 16), KeyBuildHasher),
            evicted_avg: None,
            dropped: Vec::new(),
        }
    }

    fn id(&self, req: &Request) -> Key {
        hash_key(req.key ^ hash_key(req.offset / self.cfg.fragment_len).rotate_left(17))
    }

    /// Watched fragments.
    pub fn len(&self) -> usize {
        self.entries.len()
    }

    /// Whether no fragment is watched.
    pub fn is_empty(&self) -> bool {
        self.entries.is_empty()
    }

    /// Whether `req`'s fragment is watched.
    pub fn is_watched(&self, req: &Request) -> bool {
        self.entries.contains_key(&self.id(req))
    }

    /// Pseudo-hits and utility at `req.now` of `req`'s fragment, if watched.
    pub fn entry(&self, req: &Request) -> Option<(u32, f64)> {
        let e = self.entries.get(&self.id(req))?;
        Some((e.hits, e.utility.at(req.now, self.cfg.half_life_ns)))
    }

    /// The moving average of evicted utilities, once an eviction was reported.
    pub fn evicted_average(&self) -> Option<f64> {
        self.evicted_avg
    }

    /// Records a pseudo-hit; returns the entry after it.
    fn pseudo_hit(&mut self, id: Key, now: u64) -> Shadow {
        let hl = self.cfg.half_life_ns;
        if self.order.on_hit(id) {
            let e = self.entries.get_mut(&id).expect("watched key has an entry");
            e.hits = e.hits.saturating_add(1);
            e.utility.touch(now, hl);
            return *e;
        }
        self.dropped.clear();
        self.order.insert(id, 1, &mut |_| true, &mut self.dropped).expect("unit entry fits a non-empty watchlist");
        for k in self.dropped.drain(..) {
            self.entries.remove(&k);
        }
        let mut utility = Utility::default();
        utility.touch(now, hl);
        let e = Shadow { hits: 1, utility };
        self.entries.insert(id, e);
        e
    }
}

impl Admission for Watchlist {
    fn name(&self) -> String {
        "watchlist".into()
    }

    fn decide(&mut self, req: &Request) -> Decision {
        let e = self.pseudo_hit(self.id(req), req.now);
        if e.hits < self.cfg.min_hits {
            return Decision::Reject(Reason::Watching);
        }
        let u = e.utility.at(req.now, self.cfg.half_life_ns);
        if req.victim_utility.is_some_and(|v| u <= v) {
            Decision::Reject(Reason::BelowVictim)
        } else if self.evicted_avg.is_some_and(|a| u <= a) {
            Decision::Reject(Reason::BelowEvictedAverage)
        } else {
            Decision::Admit
        }
    }

    fn on_insert(&mut self, req: &Request) {
        let id = self.id(req);
        if self.entries.remove(&id).is_some() {
            self.order.remove(id);
        }
    }

    fn on_evict(&mut self, _key: Key, utility: f64, _now: u64) {
        let w = self.cfg.evicted_weight.clamp(0.0, 1.0);
        self.evicted_avg = Some(match self.evicted_avg {
            None => utility,
            Some(a) => a + w * (utility - a),
        });
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const SEC: u64 = 1_000_000_000;

    fn wl(capacity: usize, min_hits: u32) -> Watchlist {
        Watchlist::new(WatchlistConfig { capacity, min_hits, half_life_ns: 10 * SEC, ..WatchlistConfig::default() })
    }

    fn rd(key: Key, now: u64) -> Request {
        Request::read_miss(key, 0, 4096, now)
    }

    #[test]
    fn utility_decays_by_half_per_half_life_and_adds_one_per_access() {
        let mut u = Utility::default();
        u.touch(0, 10);
        u.touch(0, 10);
        assert_eq!(u.at(0, 10), 2.0);
        assert_eq!(u.at(10, 10), 1.0);
        assert_eq!(u.at(20, 10), 0.5);
        u.touch(10, 10);
        assert_eq!(u.at(10, 10), 2.0);
        assert_eq!(u.at(5, 10), 2.0, "time going backwards is no time");
    }

    #[test]
    fn repeatedly_missed_hot_item_is_promoted_and_a_one_off_is_not() {
        let mut w = wl(1000, 3);
        let mut one_off = Vec::new();
        // Key 7 misses every 10 requests; keys 1000.. are one-off misses in between.
        for i in 0..30u64 {
            let d = w.decide(&rd(1000 + i, i * SEC));
            one_off.push(d);
            if i % 10 == 9 {
                let d = w.decide(&rd(7, i * SEC));
                let want = if i == 29 { Decision::Admit } else { Decision::Reject(Reason::Watching) };
                assert_eq!(d, want, "hot key at its pseudo-hit #{}", i / 10 + 1);
            }
        }
        assert!(one_off.iter().all(|&d| d == Decision::Reject(Reason::Watching)));
        // Promotion is reported: the entry leaves the watchlist.
        w.on_insert(&rd(7, 29 * SEC));
        assert!(!w.is_watched(&rd(7, 0)));
        assert_eq!(w.len(), 30);
    }

    #[test]
    fn hot_item_must_beat_the_victim_and_the_evicted_average() {
        let mut w = wl(100, 2);
        assert_eq!(w.decide(&rd(1, 0)), Decision::Reject(Reason::Watching));
        // Second pseudo-hit at the same time: utility 2.0.
        assert_eq!(w.decide(&rd(1, 0).with_victim(2.0)), Decision::Reject(Reason::BelowVictim), "2 ≤ 2");
        // Third: utility 3.0 beats a victim of 2.0; no eviction reported yet.
        assert_eq!(w.decide(&rd(1, 0).with_victim(2.0)), Decision::Admit);
        // Evictions of utility 8 and 4 (weight 1/32): average 8 − 4/32 = 7.875.
        w.on_evict(50, 8.0, 0);
        w.on_evict(51, 4.0, 0);
        assert_eq!(w.evicted_average(), Some(7.875));
        assert_eq!(w.decide(&rd(1, 0)), Decision::Reject(Reason::BelowEvictedAverage), "4 ≤ 7.875");
        // Ten half-lives later the utility has decayed to 4 / 1024.
        let (hits, u) = w.entry(&rd(1, 100 * SEC)).unwrap();
        assert_eq!(hits, 4);
        assert!(u < 0.01, "{u}");
    }

    #[test]
    fn watchlist_is_bounded_and_drops_the_coldest() {
        let mut w = wl(3, 2);
        for k in 1..=3 {
            w.decide(&rd(k, 0));
        }
        w.decide(&rd(1, 0)); // 1 becomes most recent; 2 is the coldest
        w.decide(&rd(4, 0)); // drops 2
        assert_eq!(w.len(), 3);
        assert!(!w.is_watched(&rd(2, 0)));
        assert!(w.is_watched(&rd(1, 0)) && w.is_watched(&rd(3, 0)) && w.is_watched(&rd(4, 0)));
        // 2 lost its pseudo-hit: its next miss starts over.
        assert_eq!(w.decide(&rd(2, 0)), Decision::Reject(Reason::Watching));
    }

    #[test]
    fn fragments_of_one_object_are_watched_separately() {
        let mut w = wl(10, 2);
        let frag = |i: u64| Request::read_miss(5, i << 20, 1 << 20, 0);
        assert_eq!(w.decide(&frag(0)), Decision::Reject(Reason::Watching));
        assert_eq!(w.decide(&frag(1)), Decision::Reject(Reason::Watching));
        assert_eq!(w.decide(&frag(0)), Decision::Admit);
    }
}
