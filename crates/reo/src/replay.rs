//! `reo replay`: one trace (a file in any supported format, or a generator spec) through the
//! cache manager and store over simulated devices (or real device files), printing a summary
//! table, or with `--json` one JSON object on the last line; `--plot` draws the time series.

use std::path::{Path, PathBuf};
use std::process::ExitCode;

use clap::Args;
use reo_cache::{AdmissionConfig, CacheConfig, DedupKind, EvictionMode, PolicyKind, Redundancy};
use reo_sim::{ArraySpec, Capacity, FailurePlan, FlushPace, LatencyModel, MediaKind, Replay, ReplayConfig};
use reo_trace::generate::GenSpec;
use reo_trace::{Format, ReadOptions, Request};

use crate::progress::{Progress, Unit};

/// Most object sizes [`ReplayArgs::object_sizes`] keeps for sizing.
const SIZE_SAMPLE: usize = 1 << 16;

#[derive(Args, Debug)]
pub struct ReplayArgs {
    /// Trace file (plain, .gz or .zst; detected by content).
    trace: Option<PathBuf>,
    /// Trace format: native, msr, fiu, oracle, kvcache.
    #[arg(long, default_value = "native")]
    format: String,
    /// Replay a generated workload instead of a file: KIND[:PRESET][,KEY=VALUE]… (see `reo gen-trace`).
    #[arg(long, conflicts_with = "trace")]
    gen: Option<String>,
    /// Block size block traces are cut into.
    #[arg(long, default_value_t = 4096)]
    block_size: u64,
    /// Skip (and count) malformed trace lines instead of stopping at the first.
    #[arg(long)]
    skip_bad: bool,
    /// Flash for cached data and redundancy: bytes (4GiB, 512MiB…) or a share of the working set (10%).
    #[arg(long, default_value = "10%")]
    cache: String,
    /// What --cache counts: `flash` (data and redundancy on the devices) or `logical` (user
    /// bytes only: the policy holds exactly this, for policy studies against reference simulators).
    #[arg(long, default_value = "flash")]
    capacity: String,
    /// DRAM tier in front of the flash (whole objects up to 16 MiB, SIEVE): bytes (64MiB…), a
    /// share of the working set (1%), or 0 (off).
    #[arg(long, default_value = "0")]
    memory: String,
    /// Replacement policy: lru, arc, s3-fifo, sieve, clock.
    #[arg(long, default_value = "lru")]
    policy: String,
    /// Admission: aa, seqr, sseqr, tc, seqr+tc, sseqr+tc, watchlist[,options].
    #[arg(long, default_value = "aa")]
    admission: String,
    /// Dedup: off, d-lru, d-arc, cd-arc.
    #[arg(long, default_value = "off")]
    dedup: String,
    /// Redundancy: reo-N% (e.g. reo-20%), 0-parity, 1-parity, 2-parity, full-replication.
    #[arg(long, default_value = "reo-20%")]
    redundancy: String,
    /// Eviction: cache (the policy evicts) or gc (the cleaner drops unreferenced blobs).
    #[arg(long, default_value = "cache")]
    eviction: String,
    #[arg(long, default_value_t = 5)]
    devices: usize,
    /// Store chunk size (4KiB–4MiB).
    #[arg(long, default_value = "64KiB")]
    chunk: String,
    /// Cache fragment size.
    #[arg(long, default_value = "1MiB")]
    fragment: String,
    /// Fail device D when request N arrives: N:D[,N:D…].
    #[arg(long, default_value = "")]
    fail_at: String,
    /// Replace device D (rebuild) when request N arrives: N:D[,N:D…].
    #[arg(long, default_value = "")]
    replace_at: String,
    /// Puts are write-through instead of write-back.
    #[arg(long)]
    write_through: bool,
    /// When write-back data is flushed: `watermarks` (past `--dirty-high` down to
    /// `--dirty-low`, instantly) or `backend` (as `reo serve`: as fast as the modelled backend
    /// takes it in the time requests leave it idle; puts past `--dirty-high` are refused).
    #[arg(long, default_value = "watermarks")]
    flush_pace: String,
    /// Dirty user bytes, as a share of the cache's user capacity: the high watermark (default
    /// 0.05), or the dirty limit of `--flush-pace backend` (default 0.5, `reo serve`'s).
    #[arg(long)]
    dirty_high: Option<f64>,
    /// The low watermark (`--flush-pace watermarks`).
    #[arg(long, default_value_t = 0.02)]
    dirty_low: f64,
    /// With `--flush-pace backend`: the age at which a dirty object is flushed, in modelled
    /// time (as `reo serve`'s `flush.delay_ms`), e.g. 500ms, 30s. Default 0s.
    #[arg(long)]
    flush_delay: Option<String>,
    /// Devices: `sim` (no bytes kept, every I/O counted) or `files:DIR` (real device files).
    #[arg(long, default_value = "sim")]
    media: String,
    /// With real files: divide every object size and offset by this (so big traces fit).
    #[arg(long, default_value_t = 1)]
    scale: u64,
    /// Requests per point of the time series.
    #[arg(long, default_value_t = 10_000)]
    window: u64,
    /// Print one JSON object on the last line instead of the table.
    #[arg(long)]
    json: bool,
    /// Draw hit ratio and latency per window into FILE.png or FILE.svg.
    #[arg(long)]
    plot: Option<PathBuf>,
    /// Bad lines skipped so far (with `--skip-bad`).
    #[arg(skip)]
    skipped: std::rc::Rc<std::cell::Cell<u64>>,
}

impl ReplayArgs {
    /// The trace's requests (a fresh pass each call), scaled for real files.
    fn trace(&self) -> Result<Box<dyn Iterator<Item = Result<Request, String>>>, String> {
        let scale = self.scale.max(1);
        let scaled = move |mut r: Request| {
            if scale > 1 {
                r.offset /= scale;
                r.len = (r.len / scale).max(1);
                r.obj_size = (r.obj_size / scale).max(r.offset + r.len);
            }
            r
        };
        if let Some(spec) = &self.gen {
            let spec: GenSpec = spec.parse().map_err(|e| format!("--gen: {e}"))?;
            return Ok(Box::new(spec.build().map_err(|e| e.to_string())?.map(move |r| Ok(scaled(r)))));
        }
        let path = self.trace.as_deref().ok_or("give a trace file or --gen SPEC")?;
        let format: Format = self.format.parse().map_err(|e| format!("--format: {e}"))?;
        let opts = ReadOptions { block_size: self.block_size, skip_bad: self.skip_bad };
        let mut reader = reo_trace::open(path, format, &opts).map_err(|e| e.to_string())?;
        let skipped = self.skipped.clone();
        Ok(Box::new(
            std::iter::from_fn(move || {
                let r = reader.next();
                skipped.set(reader.skipped());
                r
            })
            .map(move |r| r.map(scaled).map_err(|e| e.to_string())),
        ))
    }

    /// One pass over the trace: the working set's bytes (each object at its largest size) and a
    /// sample of the distinct objects' sizes (all of them up to [`SIZE_SAMPLE`], else an even
    /// spread), for sizing the policy's share of the flash.
    fn object_sizes(&self) -> Result<(u64, Vec<u64>), String> {
        let mut objects = std::collections::HashMap::<u64, u64>::new();
        let mut bytes = 0u64;
        for r in self.trace()? {
            let r = r?;
            let s = objects.entry(r.key).or_insert(0);
            if r.obj_size > *s {
                bytes += r.obj_size - *s;
                *s = r.obj_size;
            }
        }
        // In key order, so that the sample (and the sizing) is the same on every run.
        let mut objects: Vec<(u64, u64)> = objects.into_iter().collect();
        objects.sort_unstable();
        let step = objects.len().div_ceil(SIZE_SAMPLE).max(1);
        Ok((bytes, objects.iter().step_by(step).map(|&(_, size)| size).collect()))
    }

    fn config(&self) -> Result<ReplayConfig, String> {
        let media = match self.media.as_str() {
            "sim" => MediaKind::Sim,
            m => match m.strip_prefix("files:") {
                Some(dir) => MediaKind::Files(PathBuf::from(dir)),
                None => return Err(format!("--media {m:?}: expected sim or files:DIR")),
            },
        };
        let capacity = self.capacity.parse::<Capacity>().map_err(|e| format!("--capacity: {e}"))?;
        let share = |flag: &str, v: &str| match v.strip_suffix('%') {
            Some(pct) => pct.trim().parse::<f64>().map(Some).map_err(|_| format!("--{flag} {v:?}: bad percentage")),
            None => Ok(None),
        };
        let pct = share("cache", &self.cache)?;
        let memory_pct = share("memory", &self.memory)?;
        // A pass over the trace when the size depends on it: a share of the working set, or
        // flash, whose share the policy may fill depends on the objects' sizes (their footprint).
        let (working_set, object_sizes) = if pct.is_some() || memory_pct.is_some() || capacity == Capacity::Flash {
            let (bytes, sizes) = self.object_sizes()?;
            (bytes, if capacity == Capacity::Flash { sizes } else { Vec::new() })
        } else {
            (0, Vec::new())
        };
        let cache_bytes = match pct {
            Some(pct) => (working_set as f64 * pct / 100.0) as u64,
            None => reo_cache::units::parse_size(&self.cache).map_err(|e| format!("--cache: {e}"))?,
        };
        let mut cache = CacheConfig::new(0);
        cache.memory_bytes = match memory_pct {
            Some(pct) => (working_set as f64 * pct / 100.0) as u64,
            None => reo_cache::units::parse_size(&self.memory).map_err(|e| format!("--memory: {e}"))?,
        };
        cache.policy = self.policy.parse::<PolicyKind>().map_err(|e| format!("--policy: {e}"))?;
        cache.admission = self.admission.parse::<AdmissionConfig>().map_err(|e| format!("--admission: {e}"))?;
        cache.dedup = self.dedup.parse::<DedupKind>().map_err(|e| format!("--dedup: {e}"))?;
        cache.redundancy = self.redundancy.parse::<Redundancy>().map_err(|e| format!("--redundancy: {e}"))?;
        cache.eviction = match self.eviction.as_str() {
            "cache" => EvictionMode::CacheBased,
            "gc" => EvictionMode::GcBased,
            e => return Err(format!("--eviction {e:?}: expected cache or gc")),
        };
        cache.fragment_size = reo_cache::units::parse_size(&self.fragment).map_err(|e| format!("--fragment: {e}"))?;
        cache.numeric_keys = true;
        let chunk = reo_cache::units::parse_size(&self.chunk).map_err(|e| format!("--chunk: {e}"))?;
        let name = format!("{}/{}/{}", self.redundancy, self.policy, self.admission);
        let flush_pace = self.flush_pace.parse::<FlushPace>().map_err(|e| format!("--flush-pace: {e}"))?;
        let flush_delay_secs = match (&self.flush_delay, flush_pace) {
            (None, _) => 0.0,
            (Some(d), FlushPace::Backend) => {
                reo_cache::units::parse_duration(d).map_err(|e| format!("--flush-delay: {e}"))?.as_secs_f64()
            }
            (Some(_), FlushPace::Watermarks) => {
                return Err("--flush-delay: only with --flush-pace backend (watermarks flush at once)".into())
            }
        };
        let dirty_high = self.dirty_high.unwrap_or(match flush_pace {
            FlushPace::Watermarks => 0.05,
            FlushPace::Backend => 0.5,
        });
        Ok(ReplayConfig {
            name,
            array: ArraySpec { devices: self.devices, cache_bytes, chunk_size: chunk as u32, media },
            capacity,
            cache,
            failures: FailurePlan::parse(&self.fail_at, &self.replace_at, self.devices).map_err(|e| e.to_string())?,
            write_back: !self.write_through,
            flush_pace,
            dirty_high: share_of_capacity("dirty-high", dirty_high)?,
            dirty_low: share_of_capacity("dirty-low", self.dirty_low)?,
            flush_delay_secs,
            window: self.window,
            object_hint: None,
            object_sizes,
            fill: 0.85,
            model: LatencyModel::default(),
        })
    }
}

/// A share of the cache's capacity given on the command line: finite and in [0, 1].
fn share_of_capacity(flag: &str, v: f64) -> Result<f64, String> {
    if (0.0..=1.0).contains(&v) {
        Ok(v)
    } else {
        Err(format!("--{flag} {v}: expected a share of the cache's capacity from 0 to 1"))
    }
}

pub fn run(args: &ReplayArgs) -> Result<ExitCode, String> {
    let cfg = args.config()?;
    let total = match &args.gen {
        Some(spec) => spec.parse::<GenSpec>().map(|s| s.requests()).ok(),
        None => None,
    };
    let mut replay = Replay::new(cfg).map_err(|e| e.to_string())?;
    // With --json, stderr stays clean for whoever parses the output.
    let bar = if args.json { Progress::hidden() } else { Progress::bar("requests", total, Unit::Count) };
    replay.run(args.trace()?, |n| bar.set(n, "")).map_err(|e| e.to_string())?;
    bar.finish();
    let report = replay.finish();
    if let Some(path) = &args.plot {
        plot(&report, path)?;
    }
    let skipped = args.skipped.get();
    if args.json {
        let mut v = serde_json::to_value(&report).expect("report serializes");
        v["skipped_lines"] = skipped.into();
        println!("{v}");
    } else {
        println!("{report}");
        println!("skipped lines       {skipped}");
    }
    Ok(ExitCode::SUCCESS)
}

fn plot(report: &reo_sim::ReplayReport, path: &Path) -> Result<(), String> {
    use reo_trace::plot::Chart;
    if !matches!(path.extension().and_then(|e| e.to_str()), Some("png" | "svg")) {
        return Err(format!("--plot {}: use a .png or .svg file", path.display()));
    }
    let pts = |f: fn(&reo_sim::Window) -> f64| report.windows.iter().map(|w| (w.end_request as f64, f(w))).collect();
    reo_trace::plot::LineChart::new(&format!("{}: hit ratio per window", report.config), "requests", "ratio")
        .series("hit ratio", pts(|w| w.hit_ratio))
        .series("byte hit ratio", pts(|w| w.byte_hit_ratio))
        .save(path)
        .map_err(|e| format!("{}: {e}", path.display()))
}
