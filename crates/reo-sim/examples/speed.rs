//! Replay speed on a Zipf trace of small objects: `cargo run --release -p reo-sim --example speed`.
use reo_cache::{CacheConfig, ClassSchemes, FailurePlan, PolicyKind, Redundancy, Rng, Zipf};
use reo_sim::{ArraySpec, LatencyModel, MediaKind, Replay, ReplayConfig};
use reo_trace::{Op, Request};

fn main() {
    let objects: u64 = std::env::args().nth(2).and_then(|a| a.parse().ok()).unwrap_or(1_000_000);
    let size = 4096u64;
    let n: u64 = std::env::args().nth(1).and_then(|a| a.parse().ok()).unwrap_or(2_000_000);
    let mut cache = CacheConfig::new(0);
    cache.policy = PolicyKind::Lru;
    cache.redundancy = Redundancy::ZeroParity;
    cache.fragment_size = 1 << 20;
    let none = reo_store::Scheme::None(reo_store::Placement::Isolated);
    let rep = reo_store::Scheme::Replicate(2);
    cache.class_schemes = Some(ClassSchemes([rep, rep, none, none]));
    let cfg = ReplayConfig {
        name: "lru".into(),
        array: ArraySpec { devices: 5, cache_bytes: objects * size / 10, chunk_size: 64 << 10, media: MediaKind::Sim },
        cache,
        failures: FailurePlan::default(),
        write_back: true,
        dirty_high: 0.05,
        dirty_low: 0.02,
        window: 100_000,
        object_hint: Some(size),
        fill: 0.85,
        model: LatencyModel::default(),
    };
    let mut r = Replay::new(cfg).unwrap();
    let zipf = Zipf::new(objects, 0.9);
    let mut rng = Rng::new(42);
    // Generated before the clock starts: the figure is the replay's speed, not the sampler's.
    let trace: Vec<_> = (0..n)
        .map(|i| {
            let key = zipf.sample(&mut rng);
            Ok::<_, String>(Request {
                time_ns: i,
                op: Op::Get,
                key,
                offset: 0,
                len: size,
                obj_size: size,
                fingerprint: None,
            })
        })
        .collect();
    r.run(trace.into_iter(), |_| {}).unwrap();
    let rep = r.finish();
    println!("{rep}");
}
