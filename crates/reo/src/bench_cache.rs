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
    let requests = args.requests.unwrap_or(if args.quick { 2_000_000 } else { 10_000_000 });
    let mut policies = serde_json::Map::new();
    for kind in PolicyKind::ALL {
        let (ops, bytes) = bench_policy(kind, args.objects, requests);
        eprintln!(
            "bench cache: {kind:>8}: {:6.2} M lookup+update/s, {bytes:5.1} B/object (policy metadata)",
            ops / 1e6
        );
        policies.insert(kind.as_str().into(), json!({ "ops_per_s": ops.round(), "bytes_per_object": round1(bytes) }));
    }
    let (lookups, index_bytes) = bench_index(args.objects, requests);
    eprintln!(
        "bench cache: object index: {:6.2} M lookups/s, {index_bytes:5.1} B/object beyond key bytes",
        lookups / 1e6
    );
    let out = json!({
        "bench": "cache",
        "objects": args.objects,
        "requests": requests,
        "policies": policies,
        "index": { "lookups_per_s": lookups.round(), "bytes_per_object": round1(index_bytes) },
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

/// Builds an index of `objects` single-fragment objects with their blob locations, then times
/// Zipf lookups (find + read counter update). Returns (lookups/s, index bytes per object).
fn bench_index(objects: usize, requests: usize) -> (f64, f64) {
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
    let trace: Vec<Vec<u8>> = zipf_trace(objects as u64, requests.min(4_000_000), 1.0, rng.next_u64())
        .into_iter()
        .map(|k| key_of(k - 1))
        .collect();
    let start = Instant::now();
    let mut found = 0u64;
    for k in &trace {
        if let Some(slot) = ix.find(k) {
            ix.get_mut(slot).expect("found").touch();
            found += 1;
        }
    }
    let secs = start.elapsed().as_secs_f64().max(1e-9);
    black_box(found);
    (trace.len() as f64 / secs, bytes)
}
