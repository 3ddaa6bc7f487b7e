//! `reo eval`: the experiments of the papers Reo follows (docs/REFERENCES.md §P) as named sweeps
//! over the replay — each a list of replays (workload × configuration × cache size …), run on all
//! cores, written as `results.json` (one [`Row`] per replay or per phase), `report.md` (tables) and
//! PNG plots.
//!
//! Experiments: `reo-normal` (the Reo paper, docs/REFERENCES.md §P1, Figs. 5–7), `reo-failures`
//! (Fig. 8), `reo-dirty` (Fig. 9), `dedup` (CacheDedup), `admission` (the Fusion-io study's
//! tables), `selective` (SDCC's watchlist). `--quick` runs a smaller version of each (for CI).

mod blocks;
mod options;
mod outcome;
mod output;
mod reo;
mod run;

use std::path::Path;

use crate::error::EvalError;
pub use options::EvalOptions;
pub use outcome::Row;
pub use run::{base, working_set, WorkingSet, FLUSH_DELAY_SECS};

/// The experiments, by name.
pub const EXPERIMENTS: [&str; 6] = ["reo-normal", "reo-failures", "reo-dirty", "dedup", "admission", "selective"];

/// Runs experiment `name` with the default options and writes its results into `out`. Returns
/// the rows.
pub fn run(name: &str, out: &Path, quick: bool, progress: &(dyn Fn(&str) + Sync)) -> Result<Vec<Row>, EvalError> {
    run_with(name, out, &EvalOptions::new(quick), progress)
}

/// Runs experiment `name` with `opts` and writes its results into `out`. Returns the rows.
pub fn run_with(
    name: &str,
    out: &Path,
    opts: &EvalOptions,
    progress: &(dyn Fn(&str) + Sync),
) -> Result<Vec<Row>, EvalError> {
    std::fs::create_dir_all(out).map_err(|source| EvalError::Io { path: out.to_path_buf(), source })?;
    let quick = opts.quick;
    let outcome = match name {
        "reo-normal" => reo::normal(quick, progress)?,
        "reo-failures" => reo::failures(quick, progress)?,
        "reo-dirty" => reo::dirty(quick, opts.flush_delay_secs, progress)?,
        "dedup" => blocks::dedup(quick, progress)?,
        "admission" => blocks::admission(quick, progress)?,
        "selective" => blocks::selective(quick, progress)?,
        other => return Err(EvalError::UnknownExperiment { name: other.into(), expected: EXPERIMENTS.join(", ") }),
    };
    output::write(name, out, opts, &outcome)?;
    Ok(outcome.rows)
}
