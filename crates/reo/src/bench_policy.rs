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
/// starts. Returns `(operations per second, metadata bytes per resident object)`, the latter being
/// [`reo_cache::Policy::memory_bytes`] (node slab + key index, ghosts included) over resident objects.
pub fn bench_policy(kind: PolicyKind, objects: usize, requests: usize) -> (f64, f64) {
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
    black_box(misses);
    (requests as f64 / secs, p.memory_bytes() as f64 / p.len().max(1) as f64)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn bench_runs_on_a_tiny_size() {
        for kind in PolicyKind::ALL {
            let (ops, bytes) = bench_policy(kind, 1000, 20_000);
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
            let (ops, bytes) = bench_policy(kind, 1_000_000, 10_000_000);
            eprintln!("{kind:>8}: {:6.2} M ops/s  {bytes:5.1} B/object", ops / 1e6);
        }
    }
}
