//! `reo gen-trace`: writes a deterministic synthetic workload (medisyn, dedup, scan, oltp; see
//! docs/TRACES.md) to a native CSV (`.csv`, `.csv.gz`, `.csv.zst`) or oracleGeneral (`.oracle`)
//! file, and prints a one-line summary: requests, objects, bytes, write ratio, unique content
//! ratio, and the popularity skew (top-10 % objects' share of requests) and mean object size.

use std::path::PathBuf;
use std::process::ExitCode;

use clap::Args;
use reo_trace::{GenSpec, TraceStats};

#[derive(Args, Debug)]
pub struct GenTraceArgs {
    /// Generator: medisyn, dedup, scan or oltp.
    #[arg(long)]
    kind: String,
    /// Preset (medisyn: weak|medium|strong; dedup: webvm|homes|mail; scan: tpce|light|heavy;
    /// oltp: sdcc|sdcc8k); default the first.
    #[arg(long)]
    preset: Option<String>,
    /// Zipf skew α (medisyn, dedup, scan).
    #[arg(long)]
    alpha: Option<f64>,
    /// Objects (medisyn) or working-set blocks (dedup, oltp; hot-set blocks for scan).
    #[arg(long)]
    objects: Option<u64>,
    /// Requests to generate.
    #[arg(long)]
    requests: Option<u64>,
    /// Fraction of requests that write.
    #[arg(long)]
    write_ratio: Option<f64>,
    /// Probability that new content duplicates existing content (medisyn, dedup).
    #[arg(long)]
    dedup_ratio: Option<f64>,
    /// PRNG seed (same seed, same trace).
    #[arg(long)]
    seed: Option<u64>,
    /// Any other knob of the generator, KEY=VALUE (repeatable), e.g. --set scan_fraction=0.3.
    #[arg(long = "set", value_name = "KEY=VALUE")]
    knobs: Vec<String>,
    /// Output file; format and compression by name: .csv, .csv.gz, .csv.zst, .oracle[.gz|.zst].
    #[arg(long)]
    out: PathBuf,
}

fn spec(a: &GenTraceArgs) -> Result<GenSpec, String> {
    let mut spec = GenSpec::preset(&a.kind, a.preset.as_deref()).map_err(|e| e.to_string())?;
    let common = [
        ("alpha", a.alpha.map(|v| v.to_string())),
        ("objects", a.objects.map(|v| v.to_string())),
        ("requests", a.requests.map(|v| v.to_string())),
        ("write_ratio", a.write_ratio.map(|v| v.to_string())),
        ("dedup_ratio", a.dedup_ratio.map(|v| v.to_string())),
        ("seed", a.seed.map(|v| v.to_string())),
    ];
    for (key, value) in common {
        if let Some(v) = value {
            spec.set(key, &v).map_err(|e| format!("--{}: {e}", key.replace('_', "-")))?;
        }
    }
    for kv in &a.knobs {
        let (k, v) = kv.split_once('=').ok_or_else(|| format!("--set {kv:?}: expected KEY=VALUE"))?;
        spec.set(k, v).map_err(|e| e.to_string())?;
    }
    spec.validate().map_err(|e| e.to_string())?;
    Ok(spec)
}

pub fn run(a: &GenTraceArgs) -> Result<ExitCode, String> {
    let spec = spec(a)?;
    let mut stats = TraceStats::default();
    let workload = spec.build().map_err(|e| e.to_string())?.inspect(|r| stats.add(r));
    let written = reo_trace::save(&a.out, workload).map_err(|e| e.to_string())?;
    let unique = stats.unique_content_ratio().map_or("n/a (no fingerprints)".to_string(), |u| format!("{u:.3}"));
    println!(
        "gen-trace: {spec} -> {}: {written} requests, {} objects, {} bytes ({:.2} GiB), write ratio {:.3}, \
         unique content ratio {unique}, top-10% objects get {:.1}% of requests, mean object size {:.0} B",
        a.out.display(),
        stats.objects(),
        stats.bytes,
        stats.bytes as f64 / f64::from(1u32 << 30),
        stats.write_ratio(),
        100.0 * stats.top_share(0.1),
        stats.mean_object_size(),
    );
    Ok(ExitCode::SUCCESS)
}
