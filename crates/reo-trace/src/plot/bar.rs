//! [`BarChart`]: grouped bars — one group per category on the x axis (e.g. number of failed
//! devices), one bar per series in each group (e.g. per redundancy scheme); y starts at 0.

use plotters::coord::Shift;
use plotters::prelude::*;

use super::axis::Axis;
use super::frame::{self, color, DrawResult};
use super::Chart;

/// A grouped bar chart; build with [`BarChart::new`] and [`BarChart::series`].
#[derive(Debug, Clone, PartialEq)]
pub struct BarChart {
    /// Title above the chart.
    pub title: String,
    /// Label under the x axis.
    pub x_label: String,
    /// Label along the y axis.
    pub y_label: String,
    /// Category names, left to right.
    pub groups: Vec<String>,
    /// Series names and one value per group (missing or non-finite values draw no bar).
    pub series: Vec<(String, Vec<f64>)>,
    /// Image width, pixels (default 800).
    pub width: u32,
    /// Image height, pixels (default 480).
    pub height: u32,
    /// Fixed y range; `None` fits the data (always including 0).
    pub y_range: Option<(f64, f64)>,
}

impl BarChart {
    /// An empty 800 × 480 chart with these groups, left to right.
    pub fn new(title: &str, x_label: &str, y_label: &str, groups: &[&str]) -> Self {
        BarChart {
            title: title.into(),
            x_label: x_label.into(),
            y_label: y_label.into(),
            groups: groups.iter().map(|g| g.to_string()).collect(),
            series: Vec::new(),
            width: 800,
            height: 480,
            y_range: None,
        }
    }

    /// Adds a series: its value in each group, in group order.
    pub fn series(mut self, name: &str, values: Vec<f64>) -> Self {
        self.series.push((name.into(), values));
        self
    }

    /// Fixes the y range instead of fitting the data.
    pub fn y_range(mut self, lo: f64, hi: f64) -> Self {
        self.y_range = Some((lo, hi));
        self
    }

    /// Sets the image size in pixels.
    pub fn size(mut self, width: u32, height: u32) -> Self {
        (self.width, self.height) = (width, height);
        self
    }
}

impl Chart for BarChart {
    fn size(&self) -> (u32, u32) {
        (self.width, self.height)
    }

    fn draw<DB: DrawingBackend>(&self, root: &DrawingArea<DB, Shift>) -> DrawResult<(), DB> {
        let values = self.series.iter().flat_map(|(_, v)| v.iter().copied()).filter(|v| v.is_finite());
        let y = match self.y_range {
            Some((lo, hi)) => Axis::fixed(lo, hi, 6),
            None => {
                let (lo, hi) = values.fold((0.0f64, 0.0f64), |(a, b), v| (a.min(v), b.max(v)));
                Axis::auto(lo, hi, 6)
            }
        };
        let legend: Vec<(&str, RGBColor)> =
            self.series.iter().enumerate().map(|(i, (n, _))| (n.as_str(), color(i))).collect();
        let area = frame::draw(root, &self.title, &legend)?;
        let y_ticks: Vec<String> = y.ticks.iter().map(|&t| y.label(t)).collect();
        // Group g spans [g, g + 1) on the x axis; its tick, and name, sit at its middle.
        let groups = self.groups.len().max(1) as f64;
        let ticks = (0..self.groups.len()).map(|g| g as f64 + 0.5).collect();
        let x = Axis { lo: 0.0, hi: groups, step: 1.0, ticks };
        let mut chart = frame::builder(&area, &y_ticks)?.build_cartesian_2d(x, y.clone())?;
        let x_fmt = |v: &f64| self.groups.get(v.floor() as usize).cloned().unwrap_or_default();
        let mut mesh = chart.configure_mesh();
        frame::style_mesh(&mut mesh, &self.x_label, &self.y_label);
        mesh.disable_x_mesh().x_label_formatter(&x_fmt).draw()?;
        let bar_w = 0.8 / self.series.len().max(1) as f64;
        let base = 0.0f64.clamp(y.lo, y.hi);
        for (i, (_, vals)) in self.series.iter().enumerate() {
            let bars = vals.iter().take(self.groups.len()).enumerate().filter(|(_, v)| v.is_finite()).map(|(g, &v)| {
                let x0 = g as f64 + 0.1 + bar_w * i as f64;
                // A sliver between neighbouring bars keeps same-height bars apart.
                Rectangle::new([(x0, base), (x0 + bar_w * 0.95, v.clamp(y.lo, y.hi))], color(i).filled())
            });
            chart.draw_series(bars)?;
        }
        Ok(())
    }
}
