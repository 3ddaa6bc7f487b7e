//! Running an experiment's replays: the working set of a workload (to size caches as a share of
//! it), the base configuration every experiment starts from, and a pool that runs replays on
//! all cores, each regenerating its (deterministic) workload.

use parking_lot::Mutex;
use std::collections::HashMap;
use std::sync::atomic::{AtomicUsize, Ordering};

use reo_cache::{CacheConfig, PolicyKind};
use reo_trace::generate::GenSpec;

use super::outcome::Row;
use crate::array::{ArraySpec, MediaKind};
use crate::error::EvalError;
use crate::failure_plan::FailurePlan;
use crate::flusher::FlushPace;
use crate::model::LatencyModel;
use crate::replay::{Replay, ReplayConfig};
use crate::report::ReplayReport;

/// Distinct objects of a workload and their bytes.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct WorkingSet {
    /// Distinct object keys.
    pub objects: u64,
    /// Sum of their sizes (each at its largest size seen), bytes.
    pub bytes: u64,
}

/// The working set of `spec` (one pass over the workload; memory per distinct object).
pub fn working_set(spec: &GenSpec) -> Result<WorkingSet, EvalError> {
    let mut sizes: HashMap<u64, u64> = HashMap::new();
    for r in spec.build()? {
        let s = sizes.entry(r.key).or_insert(0);
        *s = (*s).max(r.obj_size);
    }
    Ok(WorkingSet { objects: sizes.len() as u64, bytes: sizes.values().sum() })
}

/// The age at which the experiments' flusher writes a dirty object back, modelled seconds. The
/// Reo paper does not describe its flush policy; this is the delay at which the replay's model
/// of `reo serve`'s flusher keeps the dirty share the paper's Fig. 9 implies at 50 % writes
/// (Reo's hit ratio falls to 56.8 %; docs/EVALUATION.md, "Dirty data"). `reo eval --flush-delay`
/// overrides it.
pub const FLUSH_DELAY_SECS: f64 = 8.0;

/// The configuration experiments start from: 5 simulated devices, 64 KiB chunks, LRU,
/// admit-all, numeric keys, write-back flushed as `reo serve` flushes ([`FLUSH_DELAY_SECS`],
/// dirty limit half the cache), the default device and backend model.
pub fn base(name: &str, cache_bytes: u64) -> ReplayConfig {
    let mut cache = CacheConfig::new(0);
    cache.policy = PolicyKind::Lru;
    cache.numeric_keys = true;
    ReplayConfig {
        name: name.to_string(),
        array: ArraySpec { devices: 5, cache_bytes, chunk_size: 64 << 10, media: MediaKind::Sim },
        capacity: crate::Capacity::Flash,
        cache,
        failures: FailurePlan::default(),
        write_back: true,
        // `reo serve`'s flusher: an object is flushed once FLUSH_DELAY_SECS old, as fast as the
        // backend takes it; writes past the gateway's default dirty limit (half the cache) are
        // refused.
        flush_pace: FlushPace::Backend,
        dirty_high: 0.5,
        dirty_low: 0.5,
        flush_delay_secs: FLUSH_DELAY_SECS,
        window: 0,
        object_hint: None,
        object_sizes: Vec::new(),
        fill: 0.85,
        model: LatencyModel::default(),
    }
}

/// One replay of an experiment and how its rows are labelled.
pub struct Job {
    pub spec: GenSpec,
    pub cfg: ReplayConfig,
    pub workload: String,
    pub cache_size_pct: Option<f64>,
    pub write_ratio: Option<f64>,
}

/// Runs `jobs` on all cores; reports in job order.
pub fn run_all(jobs: &[Job], progress: &(dyn Fn(&str) + Sync)) -> Result<Vec<ReplayReport>, EvalError> {
    let next = AtomicUsize::new(0);
    let results: Mutex<Vec<Option<Result<ReplayReport, EvalError>>>> =
        Mutex::new((0..jobs.len()).map(|_| None).collect());
    let workers = std::thread::available_parallelism().map_or(1, |n| n.get()).min(jobs.len().max(1));
    std::thread::scope(|sc| {
        for _ in 0..workers {
            sc.spawn(|| loop {
                let i = next.fetch_add(1, Ordering::Relaxed);
                let Some(job) = jobs.get(i) else { break };
                let r = replay_one(job);
                if let Ok(rep) = &r {
                    progress(&format!(
                        "[{}/{}] {} {} {}: hit {:.3} ({:.0} req/s)",
                        i + 1,
                        jobs.len(),
                        job.workload,
                        job.cfg.name,
                        job.cache_size_pct.map_or(String::new(), |p| format!("{p}%")),
                        rep.hit_ratio,
                        rep.requests_per_s
                    ));
                }
                results.lock()[i] = Some(r);
            });
        }
    });
    results.into_inner().into_iter().map(|r| r.expect("every job ran")).collect()
}

fn replay_one(job: &Job) -> Result<ReplayReport, EvalError> {
    let mut replay =
        Replay::new(job.cfg.clone()).map_err(|source| EvalError::Open { name: job.cfg.name.clone(), source })?;
    let trace = job.spec.build()?.map(Ok::<_, String>);
    replay.run(trace, |_| {})?;
    Ok(replay.finish())
}

/// The row of a whole replay.
pub fn row(job: &Job, r: &ReplayReport) -> Row {
    let cache = |k: &str| r.cache.get(k).and_then(|v| v.as_u64()).unwrap_or(0);
    Row {
        config: job.cfg.name.clone(),
        workload: job.workload.clone(),
        cache_size_pct: job.cache_size_pct,
        failed_devices: None,
        write_ratio: job.write_ratio,
        requests: r.requests,
        hit_ratio: r.hit_ratio,
        byte_hit_ratio: r.byte_hit_ratio,
        bandwidth_mibps: r.bandwidth_mibps,
        latency_ms: r.mean_latency_ms,
        space_efficiency: r.space_efficiency,
        clwa: r.clwa,
        flwa: r.flwa,
        multiplier: r.cache.get("multiplier").and_then(|v| v.as_f64()),
        flash_write_bytes: r.flash_write_bytes,
        cache_write_bytes: cache("cache_write_bytes"),
        gc_write_bytes: cache("gc_write_bytes"),
        backend_read_bytes: r.backend_read_bytes,
        dirty_lost: r.dirty_lost,
        failed_reads: r.dirty_lost_reads,
        refused_puts: r.refused_puts,
        refused_at_limit: r.refused_at_limit,
        refused_share: if r.puts == 0 { 0.0 } else { r.refused_puts as f64 / r.puts as f64 },
        requests_per_s: r.requests_per_s,
    }
}

/// Cache bytes for `pct` % of `ws`.
pub fn share(ws: &WorkingSet, pct: f64) -> u64 {
    (ws.bytes as f64 * pct / 100.0) as u64
}
