//! Sequential-stream detection and the two Fusion-io policies built on it (the Fusion-io study,
//! docs/REFERENCES.md §P4, "Memory efficient admission policies"): SEQR (window, gap) and SSEQR(L).
//!
//! # Stream detection ([`StreamTable`])
//!
//! The table remembers the last `window` streams (least recently extended one replaced). The
//! study's "window" is tuned to the number of cores / database processes, i.e. to how many streams
//! run at once, so it is read here as the number of concurrently tracked streams. A request
//! *continues* a stream when either
//!
//! * it is the same object and starts at most `gap` bytes after the end of the stream's last range
//!   (consecutive fragments or ranges of one object), or
//! * with `key_gap = Some(g)`, it starts at offset 0 of a key 1..=g+1 above the stream's last key
//!   (adjacent keys, e.g. LBA-like ids or numbered parts).
//!
//! Otherwise it starts a new stream. A request is *sequential* once its stream has at least
//! `min_run` requests (this one included): short coincidental runs are not streams, the same way
//! bcache only cuts off a stream past a size.
//!
//! # Policies
//!
//! * [`Seqr`] rejects every sequential request ([`Reason::Sequential`]).
//! * [`Sseqr`] admits the first `L` bytes of every stream (a request that starts before byte `L` of
//!   its stream is admitted whole) and rejects the rest ([`Reason::SequentialPastLimit`]). The
//!   study only gives "admitted sequential lengths, x MB"; docs/REFERENCES.md §A4 adds "only under
//!   pressure". Both readings are supported: with `pressure = p > 0` the rejection only applies
//!   while occupancy ≥ p (Open CAS's `full` cutoff policy); the default `p = 0` always applies it
//!   (the study's reading).

use super::{Admission, Decision, Reason, Request};
use crate::policy::Key;

/// Parameters of stream detection; see the module documentation.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct SeqrConfig {
    /// Streams tracked at once. Default 32.
    pub window: usize,
    /// Largest hole in bytes between the end of a stream and the next range of the same object.
    /// Default 64 KiB.
    pub gap: u64,
    /// Adjacent-key detection: `Some(g)` lets key k+1..=k+1+g at offset 0 continue a stream ending
    /// in key k. Default `Some(0)` (exactly the next key).
    pub key_gap: Option<u64>,
    /// Requests in a stream (this one included) from which it counts as sequential. Default 4.
    pub min_run: u32,
}

impl Default for SeqrConfig {
    fn default() -> Self {
        SeqrConfig { window: 32, gap: 64 << 10, key_gap: Some(0), min_run: 4 }
    }
}

#[derive(Clone, Copy, Debug)]
struct Stream {
    key: Key,
    end: u64,
    run: u32,
    bytes: u64,
    stamp: u64,
}

/// Where a request falls in its stream.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct StreamPos {
    /// Requests in the stream so far, this one included (1 = a new stream).
    pub run: u32,
    /// Bytes of the stream before this request.
    pub bytes_before: u64,
    /// `run >= min_run`.
    pub sequential: bool,
}

/// The table of recent streams.
#[derive(Clone, Debug)]
pub struct StreamTable {
    cfg: SeqrConfig,
    streams: Vec<Stream>,
    tick: u64,
}

impl StreamTable {
    /// An empty table; `window` and `min_run` are raised to at least 1.
    pub fn new(cfg: SeqrConfig) -> Self {
        let cfg = SeqrConfig { window: cfg.window.max(1), min_run: cfg.min_run.max(1), ..cfg };
        StreamTable { cfg, streams: Vec::with_capacity(cfg.window), tick: 0 }
    }

    fn continues(&self, s: &Stream, req: &Request) -> bool {
        let same_object = req.key == s.key && req.offset >= s.end && req.offset - s.end <= self.cfg.gap;
        let next_key = self
            .cfg
            .key_gap
            .is_some_and(|g| req.offset == 0 && req.key > s.key && req.key - s.key <= g.saturating_add(1));
        same_object || next_key
    }

    /// Records `req` in its stream (or a new one) and returns its position.
    pub fn observe(&mut self, req: &Request) -> StreamPos {
        self.tick += 1;
        let tick = self.tick;
        let found = self.streams.iter().position(|s| self.continues(s, req));
        let s = match found {
            Some(i) => {
                let s = &mut self.streams[i];
                s.run = s.run.saturating_add(1);
                s
            }
            None => {
                let fresh = Stream { key: req.key, end: 0, run: 1, bytes: 0, stamp: tick };
                if self.streams.len() < self.cfg.window {
                    self.streams.push(fresh);
                    self.streams.last_mut().expect("just pushed")
                } else {
                    let lru = self.streams.iter_mut().min_by_key(|s| s.stamp).expect("window ≥ 1");
                    *lru = fresh;
                    lru
                }
            }
        };
        let pos = StreamPos { run: s.run, bytes_before: s.bytes, sequential: s.run >= self.cfg.min_run };
        s.key = req.key;
        s.end = req.end();
        s.bytes = s.bytes.saturating_add(req.len);
        s.stamp = tick;
        pos
    }
}

/// SEQR: rejects requests of detected sequential streams.
#[derive(Clone, Debug)]
pub struct Seqr {
    table: StreamTable,
}

impl Seqr {
    /// SEQR with stream detection `cfg`.
    pub fn new(cfg: SeqrConfig) -> Self {
        Seqr { table: StreamTable::new(cfg) }
    }
}

impl Admission for Seqr {
    fn name(&self) -> String {
        "seqr".into()
    }

    fn decide(&mut self, req: &Request) -> Decision {
        if self.table.observe(req).sequential {
            Decision::Reject(Reason::Sequential)
        } else {
            Decision::Admit
        }
    }
}

/// SSEQR(L): admits the first `limit` bytes of a sequential stream, rejects the rest (optionally
/// only under pressure).
#[derive(Clone, Debug)]
pub struct Sseqr {
    table: StreamTable,
    limit: u64,
    pressure: f64,
}

impl Sseqr {
    /// Default `limit` (L).
    pub const DEFAULT_LIMIT: u64 = 4 << 20;

    /// `limit` = L in bytes; `pressure` = occupancy from which the rejection applies (0 = always).
    pub fn new(cfg: SeqrConfig, limit: u64, pressure: f64) -> Self {
        Sseqr { table: StreamTable::new(cfg), limit, pressure }
    }
}

impl Admission for Sseqr {
    fn name(&self) -> String {
        "sseqr".into()
    }

    fn decide(&mut self, req: &Request) -> Decision {
        let pos = self.table.observe(req);
        let under_pressure = self.pressure <= 0.0 || req.occupancy() >= self.pressure;
        if pos.sequential && pos.bytes_before >= self.limit && under_pressure {
            Decision::Reject(Reason::SequentialPastLimit)
        } else {
            Decision::Admit
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const ADMIT: Decision = Decision::Admit;
    const SEQ: Decision = Decision::Reject(Reason::Sequential);

    fn rd(key: Key, offset: u64, len: u64) -> Request {
        Request::read_miss(key, offset, len, 0)
    }

    fn cfg(window: usize, gap: u64, min_run: u32) -> SeqrConfig {
        SeqrConfig { window, gap, key_gap: Some(0), min_run }
    }

    #[test]
    fn seqr_rejects_consecutive_fragments_from_min_run_on() {
        let mut s = Seqr::new(cfg(4, 0, 3));
        // Fragments 0, 1, 2, 3 of object 7 (1 KiB each): the third one makes it a stream.
        let got: Vec<_> = (0..4).map(|i| s.decide(&rd(7, i * 1024, 1024))).collect();
        assert_eq!(got, [ADMIT, ADMIT, SEQ, SEQ]);
        // A jump back to the start is a new stream; a hole larger than gap (0) too.
        assert_eq!(s.decide(&rd(7, 0, 1024)), ADMIT);
        assert_eq!(s.decide(&rd(7, 8192, 1024)), ADMIT);
        // The old stream (ending at 4096) is still tracked: its next fragment is sequential.
        assert_eq!(s.decide(&rd(7, 4096, 1024)), SEQ);
    }

    #[test]
    fn gap_allows_small_holes() {
        let mut s = Seqr::new(cfg(4, 512, 2));
        assert_eq!(s.decide(&rd(1, 0, 1000)), ADMIT);
        assert_eq!(s.decide(&rd(1, 1500, 1000)), SEQ, "hole of 500 ≤ gap 512");
        assert_eq!(s.decide(&rd(1, 3100, 1000)), ADMIT, "hole of 600 > gap: a new stream");
    }

    #[test]
    fn adjacent_keys_form_a_stream_unless_disabled() {
        let mut s = Seqr::new(cfg(4, 0, 3));
        let got: Vec<_> = (100..104).map(|k| s.decide(&rd(k, 0, 4096))).collect();
        assert_eq!(got, [ADMIT, ADMIT, SEQ, SEQ]);
        let mut off = Seqr::new(SeqrConfig { key_gap: None, ..cfg(4, 0, 3) });
        assert!((100..110).all(|k| off.decide(&rd(k, 0, 4096)) == ADMIT));
        // Next key, but not from offset 0: not a continuation.
        let mut s = Seqr::new(cfg(4, 0, 2));
        assert_eq!(s.decide(&rd(5, 0, 10)), ADMIT);
        assert_eq!(s.decide(&rd(6, 10, 10)), ADMIT);
    }

    #[test]
    fn window_tracks_interleaved_streams_and_forgets_the_oldest() {
        // Two interleaved streams fit a window of 2.
        let mut s = Seqr::new(cfg(2, 0, 2));
        let d: Vec<_> = (0..3).flat_map(|i| [rd(1, i * 10, 10), rd(50, i * 10, 10)]).map(|r| s.decide(&r)).collect();
        assert_eq!(d, [ADMIT, ADMIT, SEQ, SEQ, SEQ, SEQ]);
        // Three interleaved streams in a window of 2 evict each other: never detected.
        let mut s = Seqr::new(cfg(2, 0, 2));
        let d: Vec<_> = (0..3)
            .flat_map(|i| [rd(1, i * 10, 10), rd(50, i * 10, 10), rd(99, i * 10, 10)])
            .map(|r| s.decide(&r))
            .collect();
        assert!(d.iter().all(|&x| x == ADMIT), "{d:?}");
    }

    #[test]
    fn sseqr_admits_the_first_l_bytes_of_a_stream() {
        let mut s = Sseqr::new(cfg(4, 0, 2), 3000, 0.0);
        // 1000-byte fragments: stream bytes before each = 0, 1000, 2000, 3000, 4000.
        let got: Vec<_> = (0..5).map(|i| s.decide(&rd(9, i * 1000, 1000))).collect();
        let past = Decision::Reject(Reason::SequentialPastLimit);
        assert_eq!(got, [ADMIT, ADMIT, ADMIT, past, past]);
    }

    #[test]
    fn sseqr_with_pressure_rejects_only_when_occupied() {
        let mut s = Sseqr::new(cfg(4, 0, 2), 1000, 0.9);
        let past = Decision::Reject(Reason::SequentialPastLimit);
        assert_eq!(s.decide(&rd(9, 0, 1000).with_occupancy(95, 100)), ADMIT, "first L bytes");
        assert_eq!(s.decide(&rd(9, 1000, 1000).with_occupancy(50, 100)), ADMIT, "no pressure");
        assert_eq!(s.decide(&rd(9, 2000, 1000).with_occupancy(90, 100)), past);
        assert_eq!(s.decide(&rd(9, 3000, 1000)), ADMIT, "unknown occupancy: no pressure");
    }

    #[test]
    fn repeated_reads_of_one_range_are_not_sequential() {
        let mut s = Seqr::new(cfg(8, 1 << 20, 2));
        assert!((0..10).all(|_| s.decide(&rd(3, 0, 4096)) == ADMIT));
    }
}
