//! Replay speed on a Zipf trace of small objects:
//! `cargo run --release -p reo-sim --example speed -- [REQUESTS] [OBJECTS] [POLICY]`.
//!
//! POLICY is a replacement policy (`lru` default, `arc`, `s3-fifo`, `sieve`, `clock`) or a dedup
//! policy (`d-lru`, `d-arc`, `cd-arc`: requests then carry content fingerprints, two addresses per
//! content on average). No redundancy for clean data (isolated, unprotected), as the target
//! says; `REO_SPEED_REDUNDANCY=reo-20%` measures Reo's default redundancy instead.
use reo_cache::{CacheConfig, ClassSchemes, DedupKind, PolicyKind, Redundancy};
use reo_media::rng::Xoshiro256pp;
use reo_sim::{ArraySpec, FailurePlan, FlushPace, LatencyModel, MediaKind, Replay, ReplayConfig};
use reo_trace::generate::Zipf;
use reo_trace::{Op, Request};

fn main() {
    let arg = |i: usize| std::env::args().nth(i);
    let n: u64 = arg(1).and_then(|a| a.parse().ok()).unwrap_or(2_000_000);
    let objects: u64 = arg(2).and_then(|a| a.parse().ok()).unwrap_or(1_000_000);
    let policy = arg(3).unwrap_or_else(|| "lru".into());
    let size = 4096u64;
    let mut cache = CacheConfig::new(0);
    match (policy.parse::<PolicyKind>(), policy.parse::<DedupKind>()) {
        (Ok(p), _) => cache.policy = p,
        (_, Ok(d)) => cache.dedup = d,
        _ => panic!("unknown policy {policy:?}"),
    }
    let dedup = cache.dedup != DedupKind::Off;
    // One fragment per object; dedup sizes its metadata cache in fragments of this size.
    cache.fragment_size = size;
    match std::env::var("REO_SPEED_REDUNDANCY").ok().as_deref() {
        None => {
            cache.redundancy = Redundancy::ZeroParity;
            let none = reo_store::Scheme::None(reo_store::Placement::Isolated);
            let rep = reo_store::Scheme::Replicate(2);
            cache.class_schemes = Some(ClassSchemes([rep, rep, none, none]));
        }
        Some(r) => cache.redundancy = r.parse().expect("a redundancy name, e.g. reo-20%"),
    }
    let cfg = ReplayConfig {
        name: policy.clone(),
        array: ArraySpec { devices: 5, cache_bytes: objects * size / 10, chunk_size: 64 << 10, media: MediaKind::Sim },
        capacity: reo_sim::Capacity::Flash,
        cache,
        failures: FailurePlan::default(),
        write_back: true,
        flush_pace: FlushPace::Watermarks,
        dirty_high: 0.05,
        dirty_low: 0.02,
        flush_delay_secs: 0.0,
        window: 100_000,
        object_hint: Some(size),
        object_sizes: Vec::new(),
        fill: 0.85,
        model: LatencyModel::default(),
    };
    let mut r = Replay::new(cfg).unwrap();
    let zipf = Zipf::new(objects, 0.9, 0.0);
    let mut rng = Xoshiro256pp::new(42);
    // Generated before the clock starts: the figure is the replay's speed, not the sampler's.
    let trace: Vec<_> = (0..n)
        .map(|i| {
            let key = zipf.sample(&mut rng) + 1;
            Ok::<_, String>(Request {
                time_ns: i,
                op: Op::Get,
                key,
                offset: 0,
                len: size,
                obj_size: size,
                // Two addresses per content: key k and k + objects/2 hold the same bytes.
                fingerprint: dedup.then_some(key % (objects / 2).max(1)),
            })
        })
        .collect();
    let cpu0 = process_cpu_secs();
    r.run(trace.into_iter(), |_| {}).unwrap();
    let cpu = process_cpu_secs() - cpu0;
    let rep = r.finish();
    println!("{rep}");
    // CPU time of all the process's threads: the figure that does not depend on what else the
    // machine runs (wall-clock requests/s above does).
    println!("cpu                 {:.2} s, {:.0} requests per CPU-second", cpu, n as f64 / cpu);
}

fn process_cpu_secs() -> f64 {
    let mut ts = libc::timespec { tv_sec: 0, tv_nsec: 0 };
    // SAFETY: a valid out-pointer to a timespec.
    unsafe { libc::clock_gettime(libc::CLOCK_PROCESS_CPUTIME_ID, &mut ts) };
    ts.tv_sec as f64 + ts.tv_nsec as f64 * 1e-9
}
