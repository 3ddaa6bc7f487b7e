//! `reo bench cache`: the cache manager's DRAM hot path on one core — lookup+update operations
//! per second of each replacement policy with 1 M objects (Zipf 1.0 over 10 M keys), the object
//! index's lookups per second, and bytes of DRAM per object of the policy and of the index.

use std::hint::black_box;
use std::process::ExitCode;
use std::time::Instant;

use clap::Args;

use crate::bench_policy::bench_policy;
use reo_cache::index::ObjectIndex;
use reo_cache::object::{Class, ObjectEntry, PackedLoc};
use reo_cache::PolicyKind;
use reo_media::rng::Xoshiro256pp;
use reo_store::{Location, Placement, Scheme};
use reo_trace::generate::zipf_trace;
use serde_json::json;

#[derive(Args, Debug)]
pub struct BenchCacheArgs {
    /// Resident objects.
    #[arg(long, default_value_t = 1_000_000)]
    objects: usize,
    /// Requests per policy (default 10 M; 2 M with --quick).
    #[arg(long)]
    requests: Option<usize>,
    /// Fewer requests (a few seconds in all).
    #[arg(long)]
    quick: bool,
    /// Print one JSON object on the last line.
    #[arg(long)]
    json: bool,
}

pub fn run(args: &BenchCacheArgs) -> Result<ExitCode, String> {
    if args.objects == 0 {
        return Err("--objects must be > 0".into());
    }
    if args.requests == Some(0) {
        return Err("--requests must be > 0".into());
    }
    let requests = args.requests.unwrap_or(if args.quick { 2_000_000 } else { 10_000_000 });
    let mut policies = serde_json::Map::new();
    for kind in PolicyKind::ALL {
        let run = bench_policy(kind, args.objects, requests);
        eprintln!(
            "bench cache: {kind:>8}: {:6.2} M lookup+update/s over {} timed requests ({} misses), \
             {:5.1} B/object (policy metadata)",
            run.ops_per_sec() / 1e6,
            run.timed,
            run.misses,
            run.bytes_per_object
        );
        policies.insert(
            kind.as_str().into(),
            json!({
                "ops_per_s": run.ops_per_sec().round(),
                "timed_requests": run.timed,
                "misses": run.misses,
                "bytes_per_object": round1(run.bytes_per_object),
            }),
        );
    }
    let ix = bench_index(args.objects, requests, INDEX_TRACE_KEYS);
    eprintln!(
        "bench cache: object index: {:6.2} M lookups/s over {} timed lookups, {:5.1} B/object beyond key bytes",
        ix.lookups_per_sec() / 1e6,
        ix.timed,
        ix.bytes_per_object
    );
    let out = json!({
        "bench": "cache",
        "objects": args.objects,
        "requests": requests,
        "policies": policies,
        "index": {
            "lookups_per_s": ix.lookups_per_sec().round(),
            "timed_lookups": ix.timed,
            "found": ix.found,
            "bytes_per_object": round1(ix.bytes_per_object),
        },
        "machine": { "cores": std::thread::available_parallelism().map(|n| n.get()).unwrap_or(1) },
    });
    if args.json {
        println!("{out}");
    } else {
        println!("{}", serde_json::to_string_pretty(&out).expect("json"));
    }
    Ok(ExitCode::SUCCESS)
}

fn round1(x: f64) -> f64 {
    (x * 10.0).round() / 10.0
}

fn key_of(i: u64) -> Vec<u8> {
    format!("bucket/object-{i:010}").into_bytes()
}

/// What [`bench_index`] timed.
struct IndexRun {
    /// Lookups the clock covered.
    timed: u64,
    /// Of them, keys found (all of them: the trace draws only resident keys).
    found: u64,
    secs: f64,
    /// Index bytes per object beyond the key bytes.
    bytes_per_object: f64,
}

impl IndexRun {
    fn lookups_per_sec(&self) -> f64 {
        self.timed as f64 / self.secs
    }
}

/// Distinct keys prepared for [`bench_index`]: each is an allocation of its own, so a longer
/// request count cycles through them instead of holding one per request.
const INDEX_TRACE_KEYS: usize = 4_000_000;

/// Builds an index of `objects` single-fragment objects with their blob locations, then times
/// `requests` Zipf lookups (find + read counter update), cycling through a prepared trace of at
/// most `trace_keys` keys.
fn bench_index(objects: usize, requests: usize, trace_keys: usize) -> IndexRun {
    let mut ix = ObjectIndex::new();
    let scheme = Scheme::None(Placement::Isolated);
    for i in 0..objects as u64 {
        let mut e = ObjectEntry::new(&key_of(i), 4096 + i % 100_000, Class::Cold);
        let loc = Location {
            seq: i + 1,
            band: (i % 4096) as u32,
            start: (i % 16384) as u32,
            device: (i % 4) as u16,
            scheme,
            len: 0,
        };
        e.set_blob(PackedLoc::pack(&loc, 0));
        ix.insert(e);
    }
    let bytes = ix.memory_bytes() as f64 / objects as f64;
    // Keys prepared before the clock starts; Zipf over the resident objects.
    let mut rng = Xoshiro256pp::new(5);
    let trace: Vec<Vec<u8>> = zipf_trace(objects as u64, requests.min(trace_keys), 1.0, rng.next_u64())
        .into_iter()
        .map(|k| key_of(k - 1))
        .collect();
    let start = Instant::now();
    let (mut timed, mut found) = (0u64, 0u64);
    for k in trace.iter().cycle().take(requests) {
        timed += 1;
        if let Some(slot) = ix.find(k) {
            ix.get_mut(slot).expect("found").touch();
            found += 1;
        }
    }
    let secs = start.elapsed().as_secs_f64().max(1e-9);
    IndexRun { timed: black_box(timed), found, secs, bytes_per_object: bytes }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_index_bench_times_every_lookup_asked_for() {
        // More lookups than prepared keys would hold: the trace is cycled, not truncated.
        let run = bench_index(1_000, 25_000, 10_000);
        assert_eq!(run.timed, 25_000);
        assert_eq!(run.found, 25_000, "every key of the trace is resident");
        assert!(run.bytes_per_object > 0.0);
    }
}
