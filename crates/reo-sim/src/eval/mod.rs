//! `reo eval`: the seeds' experiments as named sweeps over the replay — each a list of replays
//! (workload × configuration × cache size …), run on all cores, written as `results.json` (one
//! [`Row`] per replay or per phase), `report.md` (tables) and PNG plots.
//!
//! Experiments: `reo-normal` (seed 000 Figs. 5–7), `reo-failures` (Fig. 8), `reo-dirty` (Fig. 9),
//! `dedup` (CacheDedup), `admission` (the Fusion-io study's tables), `selective` (SDCC's
//! watchlist). `--quick` runs a smaller version of each (for CI).

mod blocks;
mod output;
mod reo;
mod run;

use std::path::Path;

use serde::Serialize;

pub use run::{base, working_set, WorkingSet};

/// The experiments, by name.
pub const EXPERIMENTS: [&str; 6] = ["reo-normal", "reo-failures", "reo-dirty", "dedup", "admission", "selective"];

/// One result: a configuration on a workload at a cache size (and a phase of failures, or a write
/// ratio), with its figures.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Row {
    pub config: String,
    pub workload: String,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub cache_size_pct: Option<f64>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub failed_devices: Option<usize>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub write_ratio: Option<f64>,
    pub requests: u64,
    pub hit_ratio: f64,
    pub byte_hit_ratio: f64,
    pub bandwidth_mibps: f64,
    pub latency_ms: f64,
    pub space_efficiency: f64,
    pub clwa: Option<f64>,
    pub flwa: Option<f64>,
    pub multiplier: Option<f64>,
    pub flash_write_bytes: u64,
    pub cache_write_bytes: u64,
    pub gc_write_bytes: u64,
    pub backend_read_bytes: u64,
    pub dirty_lost: u64,
    /// Replay speed of the run this row comes from.
    pub requests_per_s: f64,
}

/// What an experiment produced: rows, and the report's sections (markdown with plots).
pub struct Outcome {
    pub rows: Vec<Row>,
    pub sections: Vec<output::Section>,
}

/// Runs experiment `name` and writes its results into `out`. Returns the rows.
pub fn run(name: &str, out: &Path, quick: bool, progress: &(dyn Fn(&str) + Sync)) -> Result<Vec<Row>, String> {
    std::fs::create_dir_all(out).map_err(|e| format!("{}: {e}", out.display()))?;
    let outcome = match name {
        "reo-normal" => reo::normal(quick, progress)?,
        "reo-failures" => reo::failures(quick, progress)?,
        "reo-dirty" => reo::dirty(quick, progress)?,
        "dedup" => blocks::dedup(quick, progress)?,
        "admission" => blocks::admission(quick, progress)?,
        "selective" => blocks::selective(quick, progress)?,
        other => return Err(format!("unknown experiment {other:?} (expected one of {})", EXPERIMENTS.join(", "))),
    };
    output::write(name, out, quick, &outcome)?;
    Ok(outcome.rows)
}
