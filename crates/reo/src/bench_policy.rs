//! Single-thread throughput of a policy on its hot path, for `reo bench cache`.

use std::hint::black_box;
use std::time::Instant;

use reo_cache::policy::{new_policy, PolicyKind};
use reo_trace::generate::zipf_trace;

/// Ratio of the key universe to the cache size in [`bench_policy`] (the reference's 100 k / 1 M).
pub const BENCH_UNIVERSE_FACTOR: usize = 10;

/// Measures `kind` on one thread: a cache of `objects` unit-size objects, pre-filled with the
/// hottest keys, then `requests` Zipf(1.0) requests over `10 · objects` keys, each a lookup
/// (`on_hit`) plus, on a miss, an insert with eviction. The trace is generated before the clock
/// starts. Returns what was timed (see [`PolicyRun`]).
pub fn bench_policy(kind: PolicyKind, objects: usize, requests: usize) -> PolicyRun {
    let objects = objects.max(1);
    let trace = zipf_trace((objects * BENCH_UNIVERSE_FACTOR) as u64, requests, 1.0, 0x5eed);
    let mut p = new_policy(kind, objects as u64);
    p.reserve(objects);
    let mut evicted = Vec::with_capacity(16);
    for k in 1..=objects as u64 {
        p.insert(k, 1, &mut |_| true, &mut evicted).expect("pre-fill fits");
    }
    let start = Instant::now();
    let mut misses = 0u64;
    for &k in &trace {
        if !p.on_hit(k) {
            misses += 1;
            let _ = p.insert(k, 1, &mut |_| true, &mut evicted);
            evicted.clear();
        }
    }
    let secs = start.elapsed().as_secs_f64().max(1e-9);
    PolicyRun {
        timed: trace.len() as u64,
        misses: black_box(misses),
        secs,
        bytes_per_object: p.memory_bytes() as f64 / p.len().max(1) as f64,
    }
}

/// One timed run of [`bench_policy`]: the operations the clock covered, not the ones asked for.
#[derive(Debug, Clone, Copy)]
pub struct PolicyRun {
    /// Requests timed (lookups; every miss also an insert with eviction).
    pub timed: u64,
    /// Of them, misses.
    pub misses: u64,
    /// Seconds the timed loop took.
    pub secs: f64,
    /// [`reo_cache::Policy::memory_bytes`] (node slab + key index, ghosts included) over resident
    /// objects.
    pub bytes_per_object: f64,
}

impl PolicyRun {
    /// Timed requests per second.
    pub fn ops_per_sec(&self) -> f64 {
        self.timed as f64 / self.secs
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn bench_runs_on_a_tiny_size() {
        for kind in PolicyKind::ALL {
            let run = bench_policy(kind, 1000, 20_000);
            let (ops, bytes) = (run.ops_per_sec(), run.bytes_per_object);
            assert_eq!(run.timed, 20_000, "{kind}: every request asked for is timed");
            // Zipf over ten times the cache: some requests miss, most of the hot ones hit.
            assert!(run.misses > 0 && run.misses < run.timed, "{kind}: {} misses", run.misses);
            assert!(ops > 0.0 && ops.is_finite(), "{kind}: {ops}");
            // At least a 24-byte node plus an index slot per object, and not absurdly more.
            assert!((28.0..200.0).contains(&bytes), "{kind}: {bytes} B/object");
        }
    }

    /// The `reo bench cache` configuration: `cargo test -p reo --release -- --ignored --nocapture`.
    #[test]
    #[ignore = "benchmark: 1 M objects, run in release"]
    fn bench_one_million_objects() {
        for kind in PolicyKind::ALL {
            let run = bench_policy(kind, 1_000_000, 10_000_000);
            eprintln!("{kind:>8}: {:6.2} M ops/s  {:5.1} B/object", run.ops_per_sec() / 1e6, run.bytes_per_object);
        }
    }
}
