//! `reo eval <experiment> --out DIR`: runs one of the named experiments (or `all`) and writes
//! `DIR/report.md`, `DIR/results.json` and PNG/SVG plots.

use std::path::PathBuf;
use std::process::ExitCode;

use clap::Args;

use crate::progress::Progress;

#[derive(Args, Debug)]
pub struct EvalArgs {
    /// reo-normal, reo-failures, reo-dirty, dedup, admission, selective, or all.
    experiment: String,
    /// Output directory (created); with `all`, one subdirectory per experiment.
    #[arg(long)]
    out: PathBuf,
    /// A smaller version of each experiment (CI).
    #[arg(long)]
    quick: bool,
    /// The age at which write-back experiments (reo-dirty) flush a dirty object, in modelled
    /// time, e.g. 8s, 7500ms. Default: the delay fitted to the Reo paper's Fig. 9.
    #[arg(long)]
    flush_delay: Option<String>,
}

pub fn run(args: &EvalArgs) -> Result<ExitCode, String> {
    let mut opts = reo_sim::eval::EvalOptions::new(args.quick);
    if let Some(d) = &args.flush_delay {
        opts.flush_delay_secs =
            reo_cache::units::parse_duration(d).map_err(|e| format!("--flush-delay: {e}"))?.as_secs_f64();
    }
    let names: Vec<&str> =
        if args.experiment == "all" { reo_sim::eval::EXPERIMENTS.to_vec() } else { vec![args.experiment.as_str()] };
    for name in names {
        let out = if args.experiment == "all" { args.out.join(name) } else { args.out.clone() };
        let started = std::time::Instant::now();
        // Each run of the experiment is a step: a line of its own, under a spinner on a terminal.
        let spin = Progress::spinner(name);
        let rows = reo_sim::eval::run_with(name, &out, &opts, &|line| spin.step(line)).map_err(|e| e.to_string())?;
        spin.finish();
        println!(
            "{name}: {} rows in {:.1} s → {}",
            rows.len(),
            started.elapsed().as_secs_f64(),
            out.join("report.md").display()
        );
    }
    Ok(ExitCode::SUCCESS)
}
