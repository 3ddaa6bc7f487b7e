//! Replays of small hand-made traces whose outcome is known: hits after warm-up, what a device
//! failure takes under each redundancy, write-back flushing, and the eval's result rows.

use reo_cache::Redundancy;
use reo_sim::{FailurePlan, FlushPace, Replay, ReplayConfig};
use reo_trace::{Op, Request};

/// The experiments' base configuration with `redundancy` on `cache_bytes` of flash.
fn cfg(name: &str, cache_bytes: u64, redundancy: Redundancy) -> ReplayConfig {
    let mut c = reo_sim::eval::base(name, cache_bytes);
    c.cache.redundancy = redundancy;
    c
}

fn get(key: u64, size: u64) -> Request {
    Request { time_ns: 0, op: Op::Get, key, offset: 0, len: size, obj_size: size, fingerprint: None }
}

fn run(cfg: ReplayConfig, trace: Vec<Request>) -> reo_sim::ReplayReport {
    let mut r = Replay::new(cfg).unwrap();
    r.run(trace.into_iter().map(Ok::<_, String>), |_| {}).unwrap();
    r.finish()
}

const SIZE: u64 = 256 << 10;

/// Two passes over 100 objects in a cache that holds them all: the first misses, the second
/// hits, byte for byte; the backend is read exactly once per object.
#[test]
fn a_second_pass_over_a_cached_working_set_hits() {
    let trace: Vec<Request> = (0..2).flat_map(|_| (0..100).map(|k| get(k, SIZE))).collect();
    let rep = run(cfg("reo-20%", 400 << 20, Redundancy::default()), trace);
    assert_eq!(rep.requests, 200);
    assert_eq!(rep.hits, 100);
    assert_eq!(rep.hit_ratio, 0.5);
    assert_eq!(rep.backend_read_bytes, 100 * SIZE);
    assert!(rep.flash_read_bytes >= 100 * SIZE, "hits read flash: {}", rep.flash_read_bytes);
    assert!(rep.flash_write_bytes >= 100 * SIZE);
    assert!(rep.mean_latency_ms > 0.0 && rep.bandwidth_mibps > 0.0);
}

/// Three passes with a memory tier that holds every object: the first misses, the second hits
/// flash (and copies each object), the third is served from memory without a device read. The
/// tier is inclusive: the hit ratio is the same as without it.
#[test]
fn a_memory_tier_serves_the_third_pass_without_device_reads() {
    let trace = |passes| (0..passes).flat_map(|_| (0..100).map(|k| get(k, SIZE))).collect::<Vec<Request>>();
    let mut with = cfg("reo-20%", 400 << 20, Redundancy::default());
    with.cache.memory_bytes = 64 << 20;
    let two = run(with.clone(), trace(2));
    let three = run(with, trace(3));
    let without = run(cfg("reo-20%", 400 << 20, Redundancy::default()), trace(3));
    assert_eq!((three.hits, three.memory_hits, three.memory_bytes), (200, 100, 64 << 20));
    assert!((three.memory_hit_ratio - 1.0 / 3.0).abs() < 1e-9, "{}", three.memory_hit_ratio);
    assert_eq!(three.hit_ratio, without.hit_ratio);
    assert_eq!(three.flash_read_bytes, two.flash_read_bytes, "memory hits read the devices");
    assert!(without.flash_read_bytes > two.flash_read_bytes);
    assert!(three.mean_latency_ms < without.mean_latency_ms);
}

/// Warm 100 objects, fail device 0, read them again: 0-parity (striped) loses all, 1-parity
/// none, Reo's isolated cold data about the failed device's fifth.
#[test]
fn a_device_failure_takes_what_the_redundancy_predicts() {
    let trace: Vec<Request> = (0..2).flat_map(|_| (0..100).map(|k| get(k, SIZE))).collect();
    let second_pass = |r: Redundancy| {
        let mut c = cfg(&r.to_string(), 400 << 20, r);
        c.failures = FailurePlan::parse("100:0", "", 5).unwrap();
        c.window = 100;
        let rep = run(c, trace.clone());
        assert_eq!(rep.windows.len(), 2);
        assert_eq!(rep.windows[1].failed_devices, 1);
        rep.windows[1].hit_ratio
    };
    assert_eq!(second_pass(Redundancy::ZeroParity), 0.0);
    assert_eq!(second_pass(Redundancy::OneParity), 1.0);
    let reo = second_pass(Redundancy::default());
    assert!((0.6..0.95).contains(&reo), "reo kept {reo} of its cold data after one failure");
}

fn put(key: u64, size: u64) -> Request {
    Request { op: Op::Put, fingerprint: Some(key), ..get(key, size) }
}

/// Write-back puts beyond the dirty watermark are flushed to the backend; nothing is lost.
#[test]
fn write_back_puts_are_flushed_past_the_watermark() {
    let trace: Vec<Request> = (0..200).map(|k| put(k % 50, SIZE)).collect();
    let mut c = cfg("reo-20%", 200 << 20, Redundancy::default());
    (c.flush_pace, c.dirty_high, c.dirty_low) = (FlushPace::Watermarks, 0.05, 0.02);
    let rep = run(c, trace);
    assert_eq!(rep.puts, 200);
    assert!(rep.backend_write_bytes >= 100 * SIZE, "flushed {}", rep.backend_write_bytes);
    assert_eq!(rep.dirty_lost, 0);
}

/// The backend pace flushes an object only once it is the delay old, one object per backend
/// write time: puts of distinct objects each followed by enough hits to leave the backend idle
/// for one flush are all flushed once due; puts back to back, or separated by misses (which keep
/// the backend busy), leave a backlog of what the backend had no time for.
#[test]
fn the_backend_pace_flushes_what_the_backend_has_time_for() {
    let mut c = cfg("reo-20%", 400 << 20, Redundancy::default());
    c.flush_delay_secs = 0.05;
    let model = c.model;
    let flush_secs = model.backend_secs(1, SIZE);
    // A hit's time: the network and one device's read, at least.
    let hit_secs = model.network_secs(SIZE);
    let gets_per_flush = (flush_secs / hit_secs).ceil() as usize + 1;
    let warm = get(1_000, SIZE);
    let mut spaced = vec![warm, warm];
    for k in 0..20 {
        spaced.push(put(k, SIZE));
        spaced.extend(std::iter::repeat_n(warm, gets_per_flush));
    }
    // Enough trailing hits for every object to come due and be written.
    let tail = (c.flush_delay_secs / hit_secs).ceil() as usize + 20 * gets_per_flush;
    spaced.extend(std::iter::repeat_n(warm, tail));
    let rep = run(c.clone(), spaced);
    assert_eq!(rep.backend_write_bytes, 20 * SIZE, "every distinct put flushed once");
    assert_eq!(rep.refused_puts, 0);

    // Puts back to back: the backend writes one object per flush time from the moment the
    // first comes due, so only that many are flushed by the end.
    let back_to_back: Vec<Request> = (0..100).map(|k| put(k, SIZE)).collect();
    let mut quick = c.clone();
    quick.flush_delay_secs = 0.01;
    let rep = run(quick.clone(), back_to_back);
    let elapsed = rep.mean_latency_ms * 1e-3 * rep.requests as f64;
    let can = ((elapsed - 0.01) / flush_secs).floor() as u64;
    assert!(can < 50, "the test needs a backlog: {elapsed} s of puts");
    let flushed = rep.backend_write_bytes / SIZE;
    assert!(
        flushed + 1 >= can && flushed <= can,
        "{flushed} objects flushed in {elapsed:.3} s of puts, the backend had time for {can}"
    );

    // Puts each followed by a miss: the fetch takes the backend for as long as a flush, so
    // only the puts' and the misses' other time (network, flash) is the flusher's.
    let mut busy = Vec::new();
    for k in 0..20 {
        busy.push(put(k, SIZE));
        busy.push(get(10_000 + k, SIZE));
    }
    let rep = run(quick, busy);
    let elapsed = rep.mean_latency_ms * 1e-3 * rep.requests as f64;
    let idle = elapsed - 20.0 * flush_secs;
    let flushed = rep.backend_write_bytes / SIZE;
    assert!(
        flushed <= (idle / flush_secs).floor() as u64 + 1 && flushed < 10,
        "{flushed} objects flushed with {idle:.3} s of {elapsed:.3} s left by the misses"
    );

    // Ten rewrites of one key, spaced by time for a flush each: within the delay, one backend
    // write of the last version; without a delay, one per version.
    let rewrites = |delay: f64| {
        let mut c = c.clone();
        c.flush_delay_secs = delay;
        let mut trace = vec![warm, warm];
        for _ in 0..10 {
            trace.push(put(7, SIZE));
            trace.extend(std::iter::repeat_n(warm, gets_per_flush));
        }
        trace.extend(std::iter::repeat_n(warm, (1.0 / hit_secs).ceil() as usize + 20 * gets_per_flush));
        run(c, trace).backend_write_bytes
    };
    assert_eq!(rewrites(1.0), SIZE, "ten rewrites within the delay");
    assert_eq!(rewrites(0.0), 10 * SIZE, "ten versions, each flushed before the next");
}

/// Under the backend pace a put that would take dirty bytes past the dirty limit is refused
/// (`503 SlowDown`): counted, written around to the backend on the request's path (its latency
/// includes the backend write), and the cached copy of its key dropped (it is stale). Rewrites
/// of one key count its bytes once.
#[test]
fn the_backend_pace_refuses_puts_past_the_dirty_limit() {
    let mut c = cfg("reo-20%", 400 << 20, Redundancy::default());
    c.flush_delay_secs = 3600.0;
    c.dirty_high = 0.02;
    let model = c.model;
    // Every key cached clean first, then a write-back put of each, then a get of each.
    let mut trace: Vec<Request> = (0..40).map(|k| get(k, SIZE)).collect();
    trace.extend((0..40).map(|k| put(k, SIZE)));
    let gets_from = trace.len();
    trace.extend((0..40).map(|k| get(k, SIZE)));
    let rep = run(c.clone(), trace.clone());
    let limit = (rep.policy_capacity_bytes as f64 * 0.02) as u64;
    let taken = limit / SIZE;
    assert!(taken < 40, "the limit ({limit} bytes) must bind for this test");
    assert_eq!(rep.refused_puts, 40 - taken, "puts past {taken} objects refused");
    assert_eq!(rep.refused_at_limit, rep.refused_puts);
    assert_eq!(rep.backend_write_bytes, (40 - taken) * SIZE, "refused puts written around, nothing flushed yet");
    assert_eq!(rep.hits, taken, "the last pass hits only the keys whose put was taken");
    let written_around = (40 - taken) as f64 * model.backend_secs(1, SIZE);
    let only_gets = run(c.clone(), trace[..gets_from].to_vec());
    let total = |r: &reo_sim::ReplayReport| r.mean_latency_ms * 1e-3 * r.requests as f64;
    assert!(
        total(&rep) - total(&only_gets) > written_around,
        "the refused puts' backend writes ({written_around:.3} s) are on their path"
    );

    // A hundred rewrites of one key stay within a limit of a few objects.
    let rewrites: Vec<Request> = (0..100).map(|_| put(3, SIZE)).collect();
    let rep = run(c, rewrites);
    assert_eq!(rep.refused_puts, 0, "one key's bytes counted once");
}

/// `reo eval selective --quick` writes rows with the fields the issue names.
#[test]
fn eval_rows_carry_the_named_fields() {
    let tmp = tempfile::TempDir::new().unwrap();
    let dir = tmp.path();
    let rows = reo_sim::eval::run("selective", dir, true, &|_| {}).unwrap();
    assert_eq!(rows.len(), 2);
    let json: Vec<serde_json::Value> =
        serde_json::from_str(&std::fs::read_to_string(dir.join("results.json")).unwrap()).unwrap();
    for row in &json {
        for f in [
            "config",
            "cache_size_pct",
            "hit_ratio",
            "bandwidth_mibps",
            "latency_ms",
            "space_efficiency",
            "clwa",
            "flwa",
            "flash_write_bytes",
            "refused_puts",
            "refused_share",
            "failed_reads",
        ] {
            assert!(row.get(f).is_some(), "{f} missing in {row}");
        }
    }
    assert_eq!(json[0]["config"], "aa");
    assert_eq!(json[1]["config"], "watchlist");
    let png = std::fs::read(dir.join("selective-hit-ratio.png")).unwrap();
    assert_eq!(&png[..8], b"\x89PNG\r\n\x1a\n");
    assert!(std::fs::read_to_string(dir.join("report.md")).unwrap().contains("| watchlist |"));
}

/// A miss costs the client the backend fetch and the network, not the flash write of the fill
/// (the gateway admits after replying): one cold miss's latency is exactly the model's
/// backend + network time.
#[test]
fn a_miss_is_not_charged_the_fill_write() {
    let c = cfg("reo-20%", 400 << 20, Redundancy::default());
    let model = c.model;
    let rep = run(c, vec![get(1, SIZE)]);
    assert_eq!(rep.hits, 0);
    assert!(rep.flash_write_bytes >= SIZE, "the miss was admitted");
    let want = model.backend_secs(1, SIZE) + model.network_secs(SIZE);
    assert!(
        (rep.mean_latency_ms - want * 1e3).abs() < 1e-9,
        "latency {} ms, backend + network {} ms",
        rep.mean_latency_ms,
        want * 1e3
    );
}

/// Through the cache manager (`--capacity logical`: the policy holds exactly the given bytes),
/// every policy makes exactly the decisions it makes alone ([`reo_sim::miss_ratio`]) on a Zipf
/// trace whose objects leave and come back: ghost hits (ARC's adaptation, S3-FIFO's
/// ghost-to-main) survive the object's slot going to another object in between.
#[test]
fn through_the_manager_each_policy_decides_as_alone() {
    use reo_cache::policy::{new_policy, PolicyKind};
    let keys = reo_trace::generate::zipf_trace(5_000, 40_000, 1.0, 3);
    let (size, objects) = (4096u64, 250u64);
    for kind in PolicyKind::ALL {
        let alone = reo_sim::miss_ratio(new_policy(kind, objects * size).as_mut(), keys.iter().map(|&k| (k, size)));
        let alone_hits = ((1.0 - alone) * keys.len() as f64).round() as u64;
        let mut c = cfg(kind.as_str(), objects * size, Redundancy::ZeroParity);
        c.capacity = reo_sim::Capacity::Logical;
        c.cache.policy = kind;
        let rep = run(c, keys.iter().map(|&k| get(k, size)).collect());
        assert_eq!(rep.policy_capacity_bytes, objects * size);
        assert_eq!(rep.hits, alone_hits, "{kind}: hits through the manager vs alone");
        assert!(rep.held_objects <= objects && rep.held_objects > objects * 9 / 10, "{kind}: {}", rep.held_objects);
    }
}

/// A read of dirty data lost with a device fails: it is counted, and it neither costs nor
/// flatters the latency of the requests served (the mean is the puts' alone).
#[test]
fn a_read_of_lost_dirty_data_fails_and_is_not_a_free_request() {
    let puts: Vec<Request> = (0..10).map(|k| Request { op: Op::Put, fingerprint: Some(k), ..get(k, SIZE) }).collect();
    let only_puts = run(cfg("0-parity", 400 << 20, Redundancy::ZeroParity), puts.clone());
    let mut c = cfg("0-parity", 400 << 20, Redundancy::ZeroParity);
    c.failures = FailurePlan::parse("10:0", "", 5).unwrap();
    let trace: Vec<Request> = puts.into_iter().chain((0..10).map(|k| get(k, SIZE))).collect();
    let rep = run(c, trace);
    assert_eq!(rep.requests, 20);
    assert_eq!(rep.dirty_lost_reads, 10, "every object had a fragment on the failed device");
    assert_eq!(rep.hits, 0);
    assert!(
        (rep.mean_latency_ms - only_puts.mean_latency_ms).abs() < 1e-9,
        "mean latency {} ms with the failed reads, {} ms of the puts alone",
        rep.mean_latency_ms,
        only_puts.mean_latency_ms
    );
}

/// The `medisyn:medium` preset is calibrated on the Reo paper's Fig. 9 at 10 % writes and a cache
/// of 10 % of the data set (docs/TRACES.md): full replication 27.2 % and Reo 85.6 %, each within
/// 3 points, as `reo eval reo-dirty` replays them; and the experiments' flush delay on its third
/// anchor, Reo 56.8 % at 50 % writes.
#[test]
fn the_medium_preset_meets_the_papers_fig9_anchors() {
    for (write_ratio, redundancy, paper) in
        [(0.1, "reo-20%", 0.856), (0.1, "full-replication", 0.272), (0.5, "reo-20%", 0.568)]
    {
        let spec: reo_trace::generate::GenSpec = format!("medisyn:medium,write_ratio={write_ratio}").parse().unwrap();
        let ws = reo_sim::eval::working_set(&spec).unwrap();
        let cache = ws.bytes / 10;
        let c = cfg(redundancy, cache, redundancy.parse().unwrap());
        let trace: Vec<Request> = spec.build().unwrap().collect();
        let hit = run(c, trace).hit_ratio;
        assert!(
            (hit - paper).abs() <= 0.03,
            "{redundancy} at {write_ratio} writes: hit ratio {hit:.3}, the paper's {paper}"
        );
    }
}

/// A replay repeats itself: the same trace and configuration give the same report, figure for
/// figure (but the wall-clock speed). The store's journal thread writes its batches whenever
/// they fall due; were that I/O charged to the request running at the time, the modelled clock,
/// and with it the flusher's pace, the refusals and the hits, would change from run to run.
#[test]
fn a_write_heavy_replay_repeats_itself() {
    let spec: reo_trace::generate::GenSpec = "medisyn:medium,requests=20000,write_ratio=0.5".parse().unwrap();
    let ws = reo_sim::eval::working_set(&spec).unwrap();
    let c = cfg("reo-20%", ws.bytes / 10, Redundancy::default());
    let trace: Vec<Request> = spec.build().unwrap().collect();
    let figures = |r: reo_sim::ReplayReport| {
        let mut v = serde_json::to_value(r).unwrap();
        let o = v.as_object_mut().unwrap();
        o.remove("elapsed_s");
        o.remove("requests_per_s");
        v
    };
    let first = figures(run(c.clone(), trace.clone()));
    assert!(first["puts"].as_u64().unwrap() > 2000, "a write-heavy trace");
    assert!(first["backend_write_bytes"].as_u64().unwrap() > 0, "the flusher wrote back");
    let again = figures(run(c, trace));
    let differ: Vec<_> = first.as_object().unwrap().keys().filter(|k| first[k.as_str()] != again[k.as_str()]).collect();
    assert!(differ.is_empty(), "a second replay of the same trace differs in {differ:?}");
}
