//! The decorations every chart shares, laid out once: title, plot area, grid, axes, y ticks and
//! labels, axis labels, and the legend to the right of the plot area.

use super::axis::Axis;
use super::canvas::{text_width, Anchor, Canvas, Rgb, TextStyle};

/// The plot area in pixels, and the y axis it maps.
#[derive(Debug, Clone)]
pub struct Frame {
    pub x0: f64,
    pub y0: f64,
    pub x1: f64,
    pub y1: f64,
    pub y: Axis,
}

impl Frame {
    /// The pixel row of value `v` on the y axis (clamped to the plot area).
    pub fn py(&self, v: f64) -> f64 {
        (self.y1 - self.y.frac(v) * (self.y1 - self.y0)).clamp(self.y0, self.y1)
    }

    /// The pixel column of fraction `f` (0 = left edge, 1 = right edge) of the plot area.
    pub fn px(&self, f: f64) -> f64 {
        (self.x0 + f * (self.x1 - self.x0)).clamp(self.x0, self.x1)
    }
}

/// What a chart's frame shows.
pub struct Decor<'a> {
    pub width: u32,
    pub height: u32,
    pub title: &'a str,
    pub x_label: &'a str,
    pub y_label: &'a str,
    /// Series names and colors, in order.
    pub legend: &'a [(&'a str, Rgb)],
}

/// Draws the frame and returns the plot area; the caller draws x ticks and the data.
pub fn draw(c: &mut dyn Canvas, d: &Decor<'_>, y: Axis) -> Frame {
    let (w, h) = (f64::from(d.width), f64::from(d.height));
    let tick_w = y.ticks.iter().map(|&t| text_width(&y.label(t), 1)).fold(0.0, f64::max);
    let legend_w = d.legend.iter().map(|(n, _)| text_width(n, 1)).fold(0.0, f64::max);
    let right = if d.legend.is_empty() { 20.0 } else { legend_w + 50.0 };
    let (x0, y0) = (30.0 + tick_w + 10.0, 45.0);
    // Tiny images still get a (degenerate) plot area rather than an inverted one.
    let f = Frame { x0, y0, x1: (w - right).max(x0 + 1.0), y1: (h - 50.0).max(y0 + 1.0), y };
    c.text(w / 2.0, 20.0, d.title, TextStyle::new(2, Anchor::Middle));
    for &t in &f.y.ticks {
        let py = f.py(t);
        c.line((f.x0, py), (f.x1, py), Rgb::GRID, 1.0);
        c.line((f.x0 - 5.0, py), (f.x0, py), Rgb::BLACK, 1.0);
        c.text(f.x0 - 8.0, py, &f.y.label(t), TextStyle::new(1, Anchor::End));
    }
    c.line((f.x0, f.y0), (f.x0, f.y1), Rgb::BLACK, 1.0);
    c.line((f.x0, f.y1), (f.x1, f.y1), Rgb::BLACK, 1.0);
    c.text((f.x0 + f.x1) / 2.0, h - 15.0, d.x_label, TextStyle::new(1, Anchor::Middle));
    let vertical = TextStyle { vertical: true, ..TextStyle::new(1, Anchor::Middle) };
    c.text(12.0, (f.y0 + f.y1) / 2.0, d.y_label, vertical);
    for (i, (name, color)) in d.legend.iter().enumerate() {
        let ly = f.y0 + 8.0 + 18.0 * i as f64;
        c.rect(f.x1 + 15.0, ly - 3.0, 16.0, 6.0, *color);
        c.text(f.x1 + 37.0, ly, name, TextStyle::new(1, Anchor::Start));
    }
    f
}
