//! What `reo eval` writes: `results.json` (every [`Row`]), `report.md` (each section's table and
//! its plots), and the plots as PNG (and SVG, for documents that scale).

use std::path::Path;

use super::options::EvalOptions;
use super::outcome::{Outcome, Plot};
use super::run::FLUSH_DELAY_SECS;
use crate::error::EvalError;

/// Writes results.json, report.md and the plots of `outcome` into `out`.
pub fn write(name: &str, out: &Path, opts: &EvalOptions, outcome: &Outcome) -> Result<(), EvalError> {
    let quick = opts.quick;
    // The delay changes only write-back experiments; the command names it when not the default.
    let delay = if opts.flush_delay_secs == FLUSH_DELAY_SECS || name != "reo-dirty" {
        String::new()
    } else {
        format!(" --flush-delay {}ms", (opts.flush_delay_secs * 1e3).round())
    };
    let io = |p: &Path, source: std::io::Error| EvalError::Io { path: p.to_path_buf(), source };
    let json = serde_json::to_string_pretty(&outcome.rows).expect("rows serialize");
    let results = out.join("results.json");
    std::fs::write(&results, json + "\n").map_err(|e| io(&results, e))?;
    let mut md = format!(
        "# reo eval {name}{}\n\nProduced by `reo eval {name} --out {}{}{delay}`. Rows: `results.json`.\n\n",
        if quick { " (quick)" } else { "" },
        out.display(),
        if quick { " --quick" } else { "" }
    );
    for s in &outcome.sections {
        md += &format!("## {}\n\n{}\n", s.title, s.text);
        for p in &s.plots {
            render(p, out)?;
            md += &format!("![{}]({}.png)\n\n", p.title, p.name);
        }
    }
    let report = out.join("report.md");
    std::fs::write(&report, md).map_err(|e| io(&report, e))
}

fn render(p: &Plot, out: &Path) -> Result<(), EvalError> {
    use reo_trace::plot::Chart;
    let chart =
        p.series.iter().fold(reo_trace::plot::LineChart::new(&p.title, &p.x_label, &p.y_label), |c, (n, pts)| {
            c.series(n, pts.clone())
        });
    for ext in ["png", "svg"] {
        let path = out.join(format!("{}.{ext}", p.name));
        chart.save(&path).map_err(|source| EvalError::Io { path: path.clone(), source })?;
    }
    Ok(())
}
