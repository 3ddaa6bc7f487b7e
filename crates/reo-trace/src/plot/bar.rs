//! [`BarChart`]: grouped bars — one group per category on the x axis (e.g. number of failed
//! devices), one bar per series in each group (e.g. per redundancy scheme); y starts at 0.

use super::axis::Axis;
use super::canvas::{color, Anchor, Canvas, Rgb, TextStyle};
use super::frame::{draw, Decor};
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

    fn draw(&self, c: &mut dyn Canvas) {
        let values = self.series.iter().flat_map(|(_, v)| v.iter().copied()).filter(|v| v.is_finite());
        let y = match self.y_range {
            Some((lo, hi)) => Axis::fixed(lo, hi, 6),
            None => {
                let (lo, hi) = values.fold((0.0f64, 0.0f64), |(a, b), v| (a.min(v), b.max(v)));
                Axis::auto(lo, hi, 6)
            }
        };
        let legend: Vec<(&str, Rgb)> =
            self.series.iter().enumerate().map(|(i, (n, _))| (n.as_str(), color(i))).collect();
        let decor = Decor {
            width: self.width,
            height: self.height,
            title: &self.title,
            x_label: &self.x_label,
            y_label: &self.y_label,
            legend: &legend,
        };
        let f = draw(c, &decor, y);
        let groups = self.groups.len().max(1) as f64;
        let group_w = (f.x1 - f.x0) / groups;
        let bar_w = group_w * 0.8 / self.series.len().max(1) as f64;
        let base = f.py(0.0);
        for (g, name) in self.groups.iter().enumerate() {
            let gx = f.x0 + group_w * g as f64;
            c.text(gx + group_w / 2.0, f.y1 + 14.0, name, TextStyle::new(1, Anchor::Middle));
            for (i, (_, vals)) in self.series.iter().enumerate() {
                let Some(&v) = vals.get(g).filter(|v| v.is_finite()) else { continue };
                let (top, bottom) = (f.py(v).min(base), f.py(v).max(base));
                let x = gx + group_w * 0.1 + bar_w * i as f64;
                c.rect(x, top, (bar_w - 1.0).max(1.0), (bottom - top).max(1.0), color(i));
            }
        }
    }
}
