//! What an experiment produces: [`Row`]s of figures, and the report's [`Section`]s (markdown
//! with [`Plot`]s). The experiments build them; `output` writes them.

use serde::Serialize;

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
    pub sections: Vec<Section>,
}

/// A line chart of an experiment: series of (x, y) points.
#[derive(Debug, Clone, PartialEq)]
pub struct Plot {
    /// File stem (`<name>.png`, `<name>.svg`).
    pub name: String,
    pub title: String,
    pub x_label: String,
    pub y_label: String,
    pub series: Vec<(String, Vec<(f64, f64)>)>,
}

impl Plot {
    pub fn line(name: &str, title: &str, x_label: &str, y_label: &str, series: Vec<(String, Vec<(f64, f64)>)>) -> Plot {
        Plot { name: name.into(), title: title.into(), x_label: x_label.into(), y_label: y_label.into(), series }
    }
}

/// A part of the report: a heading, a markdown table, plots.
#[derive(Debug, Clone, PartialEq)]
pub struct Section {
    pub title: String,
    pub text: String,
    pub plots: Vec<Plot>,
}
