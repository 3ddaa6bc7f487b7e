//! [`Canvas`]: the few drawing primitives a chart needs (lines, filled rectangles, text), so the
//! chart layout is written once and rendered by both the SVG and the raster (PNG) backends.
//! Coordinates are pixels, origin top-left. Text metrics are those of the bitmap font
//! ([`crate::plot::font`]) at an integer scale, for both backends.

use super::font::{ADVANCE, GLYPH_H};

/// An sRGB color.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Rgb(pub u8, pub u8, pub u8);

impl Rgb {
    /// White, the background of both backends.
    pub const WHITE: Rgb = Rgb(255, 255, 255);
    /// Black, the default text color.
    pub const BLACK: Rgb = Rgb(0, 0, 0);
    /// Light grey, the grid lines.
    pub const GRID: Rgb = Rgb(225, 225, 225);

    /// `#rrggbb`.
    pub fn hex(self) -> String {
        format!("#{:02x}{:02x}{:02x}", self.0, self.1, self.2)
    }
}

/// Series colors, in order (the matplotlib "tab10" palette; repeats after ten series).
pub const PALETTE: [Rgb; 10] = [
    Rgb(31, 119, 180),
    Rgb(255, 127, 14),
    Rgb(44, 160, 44),
    Rgb(214, 39, 40),
    Rgb(148, 103, 189),
    Rgb(140, 86, 75),
    Rgb(227, 119, 194),
    Rgb(127, 127, 127),
    Rgb(188, 189, 34),
    Rgb(23, 190, 207),
];

/// The color of series `i`.
pub fn color(i: usize) -> Rgb {
    PALETTE[i % PALETTE.len()]
}

/// Where a text's anchor point is, horizontally (it is always at the text's vertical middle).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Anchor {
    /// The anchor is at the text's start (left for horizontal text).
    Start,
    /// The anchor is at the text's centre.
    Middle,
    /// The anchor is at the text's end.
    End,
}

/// How text is drawn.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct TextStyle {
    /// Integer multiple of the 5×8 font (1 = labels and ticks, 2 = titles).
    pub scale: u32,
    /// Where the anchor point is along the text.
    pub anchor: Anchor,
    /// Rotated 90° counter-clockwise (reads bottom to top), for the y-axis label.
    pub vertical: bool,
    /// Text color.
    pub color: Rgb,
}

impl TextStyle {
    /// Horizontal black text at `scale`, anchored at `anchor`.
    pub fn new(scale: u32, anchor: Anchor) -> Self {
        TextStyle { scale, anchor, vertical: false, color: Rgb::BLACK }
    }
}

/// Width in pixels of `s` in `style` (along its reading direction).
pub fn text_width(s: &str, scale: u32) -> f64 {
    f64::from(s.chars().count() as u32 * ADVANCE * scale)
}

/// Height in pixels of a line of text.
pub fn text_height(scale: u32) -> f64 {
    f64::from(GLYPH_H * scale)
}

/// A drawing surface.
pub trait Canvas {
    /// A straight line `width` pixels wide.
    fn line(&mut self, from: (f64, f64), to: (f64, f64), color: Rgb, width: f64);
    /// A filled axis-aligned rectangle.
    fn rect(&mut self, x: f64, y: f64, w: f64, h: f64, color: Rgb);
    /// Text anchored at (`x`, `y`).
    fn text(&mut self, x: f64, y: f64, s: &str, style: TextStyle);
}
