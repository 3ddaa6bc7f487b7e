//! [`LineChart`]: named series of (x, y) points on numeric axes, with markers at the points
//! when a series has few of them.

use plotters::coord::Shift;
use plotters::prelude::*;

use super::axis::Axis;
use super::frame::{self, color, DrawResult};
use super::Chart;

/// One named series of points (non-finite points are skipped).
#[derive(Debug, Clone, PartialEq)]
pub struct Series {
    /// Name in the legend.
    pub name: String,
    /// (x, y) points, joined in this order.
    pub points: Vec<(f64, f64)>,
}

/// A line chart; build with [`LineChart::new`] and [`LineChart::series`].
#[derive(Debug, Clone, PartialEq)]
pub struct LineChart {
    /// Title above the chart.
    pub title: String,
    /// Label under the x axis.
    pub x_label: String,
    /// Label along the y axis.
    pub y_label: String,
    /// The series, drawn in palette order.
    pub series: Vec<Series>,
    /// Image width, pixels (default 800).
    pub width: u32,
    /// Image height, pixels (default 480).
    pub height: u32,
    /// Fixed x range; `None` fits the data.
    pub x_range: Option<(f64, f64)>,
    /// Fixed y range; `None` fits the data.
    pub y_range: Option<(f64, f64)>,
}

/// Series with at most this many points get a marker on each point.
const MARKERS_UP_TO: usize = 60;

impl LineChart {
    /// An empty 800 × 480 chart fitting its ranges to the data.
    pub fn new(title: &str, x_label: &str, y_label: &str) -> Self {
        LineChart {
            title: title.into(),
            x_label: x_label.into(),
            y_label: y_label.into(),
            series: Vec::new(),
            width: 800,
            height: 480,
            x_range: None,
            y_range: None,
        }
    }

    /// Adds a series.
    pub fn series(mut self, name: &str, points: Vec<(f64, f64)>) -> Self {
        self.series.push(Series { name: name.into(), points });
        self
    }

    /// Fixes the y range instead of fitting the data.
    pub fn y_range(mut self, lo: f64, hi: f64) -> Self {
        self.y_range = Some((lo, hi));
        self
    }

    /// Fixes the x range instead of fitting the data.
    pub fn x_range(mut self, lo: f64, hi: f64) -> Self {
        self.x_range = Some((lo, hi));
        self
    }

    /// Sets the image size in pixels.
    pub fn size(mut self, width: u32, height: u32) -> Self {
        (self.width, self.height) = (width, height);
        self
    }

    fn points(&self) -> impl Iterator<Item = (f64, f64)> + '_ {
        self.series.iter().flat_map(|s| s.points.iter().copied()).filter(|(x, y)| x.is_finite() && y.is_finite())
    }

    fn axis(range: Option<(f64, f64)>, values: impl Iterator<Item = f64>, target: usize) -> Axis {
        match range {
            Some((lo, hi)) => Axis::fixed(lo, hi, target),
            None => {
                let (lo, hi) = values.fold((f64::INFINITY, f64::NEG_INFINITY), |(a, b), v| (a.min(v), b.max(v)));
                Axis::auto(lo, hi, target)
            }
        }
    }
}

impl Chart for LineChart {
    fn size(&self) -> (u32, u32) {
        (self.width, self.height)
    }

    fn draw<DB: DrawingBackend>(&self, root: &DrawingArea<DB, Shift>) -> DrawResult<(), DB> {
        let x = Self::axis(self.x_range, self.points().map(|p| p.0), 8);
        // Device counts, request counts: whole-number data gets whole-number ticks only.
        let x = if self.points().all(|p| p.0.fract() == 0.0) { x.integers() } else { x };
        let y = Self::axis(self.y_range, self.points().map(|p| p.1), 6);
        let legend: Vec<(&str, RGBColor)> =
            self.series.iter().enumerate().map(|(i, s)| (s.name.as_str(), color(i))).collect();
        let area = frame::draw(root, &self.title, &legend)?;
        let y_ticks: Vec<String> = y.ticks.iter().map(|&t| y.label(t)).collect();
        let mut chart = frame::builder(&area, &y_ticks)?.build_cartesian_2d(x.clone(), y.clone())?;
        let mut mesh = chart.configure_mesh();
        frame::style_mesh(&mut mesh, &self.x_label, &self.y_label);
        mesh.draw()?;
        for (i, s) in self.series.iter().enumerate() {
            // Points outside a fixed range sit on its edge rather than off the plot.
            let pts: Vec<(f64, f64)> = s
                .points
                .iter()
                .filter(|(a, b)| a.is_finite() && b.is_finite())
                .map(|&(a, b)| (a.clamp(x.lo, x.hi), b.clamp(y.lo, y.hi)))
                .collect();
            let marker = if pts.len() <= MARKERS_UP_TO { 3 } else { 0 };
            chart.draw_series(LineSeries::new(pts, color(i).stroke_width(2)).point_size(marker))?;
        }
        Ok(())
    }
}
