//! What an experiment produces: [`Row`]s of figures, and the report's [`Section`]s (markdown
//! with [`Plot`]s). The experiments build them; `output` writes them.

use serde::Serialize;

/// One result: a configuration on a workload at a cache size (and a phase of failures, or a write
/// ratio), with its figures. A phase row takes its hit ratios, bandwidth, latency and flash writes
/// from the phase's [`crate::Window`]; its other figures are the whole replay's.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Row {
    /// Configuration name (e.g. `reo-20%`).
    pub config: String,
    /// Workload name.
    pub workload: String,
    /// Cache size as a percentage of the workload's working set, when the experiment sweeps it.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub cache_size_pct: Option<f64>,
    /// Devices failed at the end of the phase, for rows of a failure phase.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub failed_devices: Option<usize>,
    /// Share of puts in the workload, when the experiment sweeps it.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub write_ratio: Option<f64>,
    /// Requests of the whole replay.
    pub requests: u64,
    /// Hit ratio ([`crate::ReplayReport::hit_ratio`], or the phase's [`crate::Window::hit_ratio`]).
    pub hit_ratio: f64,
    /// Byte hit ratio of gets.
    pub byte_hit_ratio: f64,
    /// Modelled bandwidth, MiB/s.
    pub bandwidth_mibps: f64,
    /// Mean modelled request latency, milliseconds.
    pub latency_ms: f64,
    /// User bytes cached / device bytes they occupy, at the end.
    pub space_efficiency: f64,
    /// Cache-level write amplification ([`crate::ReplayReport::clwa`]), when there were client
    /// writes.
    pub clwa: Option<f64>,
    /// Flash-level write amplification, when the cache wrote anything.
    pub flwa: Option<f64>,
    /// CLWA × FLWA, when both are defined.
    pub multiplier: Option<f64>,
    /// Device bytes written for cached data (redundancy and GC included).
    pub flash_write_bytes: u64,
    /// User bytes the cache wrote to flash: admitted fills and client writes (no redundancy).
    pub cache_write_bytes: u64,
    /// User bytes the store's cleaner relocated.
    pub gc_write_bytes: u64,
    /// Bytes fetched from the backend for misses.
    pub backend_read_bytes: u64,
    /// Dirty fragments lost beyond their redundancy.
    pub dirty_lost: u64,
    /// Gets that failed because their dirty data was lost (not counted in the latency).
    pub failed_reads: u64,
    /// Puts refused (the gateway answers `503 SlowDown`): past the dirty limit, or the cache
    /// could not take them (flash full of dirty data, too few devices to protect them).
    pub refused_puts: u64,
    /// Of `refused_puts`, those past the dirty limit.
    pub refused_at_limit: u64,
    /// Refused puts / puts.
    pub refused_share: f64,
    /// Replay speed of the run this row comes from.
    pub requests_per_s: f64,
}

/// What an experiment produced: rows, and the report's sections (markdown with plots).
pub struct Outcome {
    /// One row per replay (or per phase of a replay).
    pub rows: Vec<Row>,
    /// The report, in order.
    pub sections: Vec<Section>,
}

/// A line chart of an experiment: series of (x, y) points.
#[derive(Debug, Clone, PartialEq)]
pub struct Plot {
    /// File stem (`<name>.png`, `<name>.svg`).
    pub name: String,
    /// Chart title.
    pub title: String,
    /// Label of the x axis.
    pub x_label: String,
    /// Label of the y axis.
    pub y_label: String,
    /// Named series of (x, y) points, one line each.
    pub series: Vec<(String, Vec<(f64, f64)>)>,
}

impl Plot {
    /// A line chart from borrowed strings.
    pub fn line(name: &str, title: &str, x_label: &str, y_label: &str, series: Vec<(String, Vec<(f64, f64)>)>) -> Plot {
        Plot { name: name.into(), title: title.into(), x_label: x_label.into(), y_label: y_label.into(), series }
    }
}

/// A part of the report: a heading, a markdown table, plots.
#[derive(Debug, Clone, PartialEq)]
pub struct Section {
    /// Heading.
    pub title: String,
    /// Markdown body (usually a table).
    pub text: String,
    /// Plots drawn below the text.
    pub plots: Vec<Plot>,
}
