//! `reo bench replay`: `reo replay`'s speed beside libCacheSim's on the same trace, in the same run.
//!
//! Writes a Zipf trace of equal-sized objects as an oracleGeneral file (the format both read),
//! then alternates, `--runs` times: this binary's `reo replay` over it (0-parity, admit-all,
//! simulated devices, `--capacity logical` so that both hold the same bytes and so do the same
//! work), and libCacheSim's `process_trace` through its Python binding (`pip install
//! libcachesim`). Each side times its own replay loop, trace reading included and process start
//! excluded. Prints a table, or with `--json` one JSON object: both speeds of every run, both miss
//! ratios, and the median of reo / libCacheSim with its spread.

use std::path::Path;
use std::process::{Command, ExitCode};

use clap::Args;
use reo_media::rng::Xoshiro256pp;
use reo_trace::generate::Zipf;
use reo_trace::{Op, Request};

#[derive(Args, Debug)]
pub struct BenchReplayArgs {
    /// Requests in the trace.
    #[arg(long, default_value_t = 2_000_000)]
    requests: u64,
    /// Distinct objects (4 KiB each).
    #[arg(long, default_value_t = 200_000)]
    objects: u64,
    /// Zipf skew of the popularity.
    #[arg(long, default_value_t = 1.0)]
    alpha: f64,
    /// Cache size as a share of the working set.
    #[arg(long, default_value_t = 0.05)]
    share: f64,
    /// Replacement policy (reo's name): lru, arc, s3-fifo, sieve, clock.
    #[arg(long, default_value = "lru")]
    policy: String,
    /// Runs of each side (alternating); the ratio's median and spread are over them.
    #[arg(long, default_value_t = 5)]
    runs: usize,
    /// Python interpreter with libcachesim installed.
    #[arg(long, default_value = "python3")]
    python: String,
    /// Print one JSON object instead of the table.
    #[arg(long)]
    json: bool,
}

const SIZE: u64 = 4096;

/// libCacheSim's side: the cache class and its parameters for reo's policy name (reo's `clock`
/// is a 2-bit utility CLOCK).
fn lcs_cache(policy: &str) -> Result<&'static str, String> {
    Ok(match policy {
        "lru" => "LRU(cache_size=c)",
        "arc" => "ARC(cache_size=c)",
        "s3-fifo" => "S3FIFO(cache_size=c, small_size_ratio=0.1, ghost_size_ratio=0.9, move_to_main_threshold=2)",
        "sieve" => "Sieve(cache_size=c)",
        "clock" => "Clock(cache_size=c, n_bit_counter=2)",
        p => return Err(format!("--policy {p:?}: expected lru, arc, s3-fifo, sieve or clock")),
    })
}

fn write_trace(path: &Path, a: &BenchReplayArgs) -> Result<(), String> {
    let zipf = Zipf::new(a.objects, a.alpha, 0.0);
    let mut rng = Xoshiro256pp::new(0x5eed);
    let reqs = (0..a.requests).map(|i| {
        let key = zipf.sample(&mut rng) + 1;
        Request { time_ns: i * 1000, op: Op::Get, key, offset: 0, len: SIZE, obj_size: SIZE, fingerprint: None }
    });
    let f = std::fs::File::create(path).map_err(|e| format!("{}: {e}", path.display()))?;
    reo_trace::write_oracle(std::io::BufWriter::new(f), reqs).map_err(|e| format!("{}: {e}", path.display()))?;
    Ok(())
}

/// One reo run: (requests/s, miss ratio).
fn run_reo(trace: &Path, a: &BenchReplayArgs, cache: u64) -> Result<(f64, f64), String> {
    let exe = std::env::current_exe().map_err(|e| e.to_string())?;
    let out = Command::new(exe)
        .args(["replay", &trace.to_string_lossy(), "--format", "oracle", "--policy", &a.policy])
        .args(["--redundancy", "0-parity", "--admission", "aa", "--capacity", "logical", "--json"])
        .args(["--cache", &cache.to_string()])
        .env("RUST_LOG", "error")
        .output()
        .map_err(|e| format!("reo replay: {e}"))?;
    if !out.status.success() {
        return Err(format!("reo replay failed: {}", String::from_utf8_lossy(&out.stderr)));
    }
    let last = String::from_utf8_lossy(&out.stdout).lines().last().unwrap_or_default().to_string();
    let v: serde_json::Value = serde_json::from_str(&last).map_err(|e| format!("reo replay output: {e}"))?;
    let f = |k: &str| v[k].as_f64().ok_or_else(|| format!("reo replay output: no {k}"));
    Ok((f("requests_per_s")?, 1.0 - f("hit_ratio")?))
}

/// One libCacheSim run: (requests/s, miss ratio).
fn run_lcs(trace: &Path, a: &BenchReplayArgs, cache: u64) -> Result<(f64, f64), String> {
    let script = format!(
        "import json, time, libcachesim as l\n\
         c = {cache}\n\
         r = l.TraceReader({path:?}, l.TraceType.ORACLE_GENERAL_TRACE)\n\
         cache = l.{ctor}\n\
         t = time.perf_counter()\n\
         m, _ = cache.process_trace(r)\n\
         t = time.perf_counter() - t\n\
         print(json.dumps({{'seconds': t, 'miss_ratio': m}}))\n",
        path = trace.to_string_lossy(),
        ctor = lcs_cache(&a.policy)?,
    );
    let out = Command::new(&a.python)
        .args(["-c", &script])
        .output()
        .map_err(|e| format!("{}: {e} (libCacheSim runs under Python: pip install libcachesim)", a.python))?;
    if !out.status.success() {
        return Err(format!(
            "libCacheSim failed (pip install libcachesim==0.3.5?): {}",
            String::from_utf8_lossy(&out.stderr)
        ));
    }
    let v: serde_json::Value = serde_json::from_slice(&out.stdout).map_err(|e| format!("libCacheSim output: {e}"))?;
    let secs = v["seconds"].as_f64().ok_or("libCacheSim output: no seconds")?;
    Ok((a.requests as f64 / secs.max(1e-9), v["miss_ratio"].as_f64().ok_or("libCacheSim output: no miss_ratio")?))
}

fn median(v: &mut [f64]) -> f64 {
    v.sort_by(f64::total_cmp);
    let n = v.len();
    if n % 2 == 1 {
        v[n / 2]
    } else {
        (v[n / 2 - 1] + v[n / 2]) / 2.0
    }
}

/// The trace file, removed when the bench ends (on errors too).
struct TraceFile(std::path::PathBuf);

impl Drop for TraceFile {
    fn drop(&mut self) {
        let _ = std::fs::remove_file(&self.0);
    }
}

pub fn run(a: &BenchReplayArgs) -> Result<ExitCode, String> {
    let file = TraceFile(std::env::temp_dir().join(format!("reo-bench-replay-{}.oracle", std::process::id())));
    let trace = file.0.as_path();
    write_trace(trace, a)?;
    let cache = ((a.objects as f64 * a.share).round() as u64).max(1) * SIZE;
    let (mut reo, mut lcs) = (Vec::new(), Vec::new());
    let (mut reo_miss, mut lcs_miss) = (0.0, 0.0);
    for i in 0..a.runs.max(1) {
        let (r, m) = run_reo(trace, a, cache)?;
        reo.push(r);
        reo_miss = m;
        let (l, m) = run_lcs(trace, a, cache)?;
        lcs.push(l);
        lcs_miss = m;
        if !a.json {
            eprintln!("run {}: reo {:.0} requests/s, libCacheSim {:.0} requests/s", i + 1, r, l);
        }
    }
    let mut ratios: Vec<f64> = reo.iter().zip(&lcs).map(|(r, l)| r / l).collect();
    let med = median(&mut ratios);
    let (lo, hi) = (ratios[0], ratios[ratios.len() - 1]);
    let (reo_med, lcs_med) = (median(&mut reo.clone()), median(&mut lcs.clone()));
    if a.json {
        let v = serde_json::json!({
            "policy": a.policy,
            "requests": a.requests,
            "objects": a.objects,
            "object_size": SIZE,
            "cache_bytes": cache,
            "reo_requests_per_s": reo,
            "libcachesim_requests_per_s": lcs,
            "reo_median": reo_med,
            "libcachesim_median": lcs_med,
            "ratio_median": med,
            "ratio_min": lo,
            "ratio_max": hi,
            "reo_miss_ratio": reo_miss,
            "libcachesim_miss_ratio": lcs_miss,
        });
        println!("{v}");
    } else {
        println!(
            "{}: {} requests over {} objects of 4 KiB, cache {} objects",
            a.policy,
            a.requests,
            a.objects,
            cache / SIZE
        );
        println!("reo replay     {reo_med:>12.0} requests/s (median), miss ratio {reo_miss:.4}");
        println!("libCacheSim    {lcs_med:>12.0} requests/s (median), miss ratio {lcs_miss:.4}");
        println!("reo / libCacheSim  {med:.2} (median of {}, {lo:.2}–{hi:.2})", ratios.len());
    }
    Ok(ExitCode::SUCCESS)
}
