//! [`RasterCanvas`]: a [`Canvas`] on an RGB pixel buffer — thick lines by stamping squares
//! along the segment, filled rectangles, and text from the bitmap font — for PNG output.

use super::canvas::{text_height, text_width, Anchor, Canvas, Rgb, TextStyle};
use super::font::{pixel, ADVANCE, GLYPH_H, GLYPH_W};

/// An RGB image, row-major, 3 bytes per pixel, white to start.
pub struct RasterCanvas {
    /// Width, pixels.
    pub width: u32,
    /// Height, pixels.
    pub height: u32,
    /// `width × height × 3` bytes, R, G, B per pixel.
    pub pixels: Vec<u8>,
}

impl RasterCanvas {
    /// A white image of `width × height` pixels.
    pub fn new(width: u32, height: u32) -> Self {
        RasterCanvas { width, height, pixels: vec![255; width as usize * height as usize * 3] }
    }

    /// Sets one pixel (ignored outside the image).
    pub fn set(&mut self, x: i64, y: i64, c: Rgb) {
        if x < 0 || y < 0 || x >= i64::from(self.width) || y >= i64::from(self.height) {
            return;
        }
        let i = (y as usize * self.width as usize + x as usize) * 3;
        self.pixels[i..i + 3].copy_from_slice(&[c.0, c.1, c.2]);
    }

    /// The color of pixel (x, y); panics outside the image.
    pub fn get(&self, x: u32, y: u32) -> Rgb {
        let i = (y as usize * self.width as usize + x as usize) * 3;
        Rgb(self.pixels[i], self.pixels[i + 1], self.pixels[i + 2])
    }

    fn fill(&mut self, x0: i64, y0: i64, x1: i64, y1: i64, c: Rgb) {
        let (x0, x1) = (x0.max(0), x1.min(i64::from(self.width)));
        let (y0, y1) = (y0.max(0), y1.min(i64::from(self.height)));
        for y in y0..y1 {
            for x in x0..x1 {
                self.set(x, y, c);
            }
        }
    }
}

impl Canvas for RasterCanvas {
    fn line(&mut self, from: (f64, f64), to: (f64, f64), color: Rgb, width: f64) {
        let (dx, dy) = (to.0 - from.0, to.1 - from.1);
        let steps = dx.abs().max(dy.abs()).ceil().clamp(1.0, 1e6) as u32;
        let w = width.round().max(1.0) as i64;
        let half = (w - 1) / 2;
        for i in 0..=steps {
            let t = f64::from(i) / f64::from(steps);
            let x = (from.0 + dx * t).round() as i64 - half;
            let y = (from.1 + dy * t).round() as i64 - half;
            self.fill(x, y, x + w, y + w, color);
        }
    }

    fn rect(&mut self, x: f64, y: f64, w: f64, h: f64, color: Rgb) {
        self.fill(x.round() as i64, y.round() as i64, (x + w).round() as i64, (y + h).round() as i64, color);
    }

    fn text(&mut self, x: f64, y: f64, s: &str, style: TextStyle) {
        let len = text_width(s, style.scale);
        let start = match style.anchor {
            Anchor::Start => 0.0,
            Anchor::Middle => -len / 2.0,
            Anchor::End => -len,
        };
        let top = -text_height(style.scale) / 2.0;
        let k = i64::from(style.scale);
        for (i, c) in s.chars().enumerate() {
            for col in 0..GLYPH_W {
                for row in 0..GLYPH_H {
                    if !pixel(c, col, row) {
                        continue;
                    }
                    // (u, v): position along and across the reading direction.
                    let u = (start + f64::from(i as u32 * ADVANCE * style.scale)) as i64 + i64::from(col) * k;
                    let v = top as i64 + i64::from(row) * k;
                    let (px, py) = if style.vertical {
                        (x as i64 + v, y as i64 - u - k + 1)
                    } else {
                        (x as i64 + u, y as i64 + v)
                    };
                    self.fill(px, py, px + k, py + k, style.color);
                }
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn lines_rects_and_text_set_pixels() {
        let mut c = RasterCanvas::new(40, 30);
        c.line((0.0, 0.0), (39.0, 0.0), Rgb(255, 0, 0), 1.0);
        assert_eq!(c.get(20, 0), Rgb(255, 0, 0));
        c.line((5.0, 5.0), (5.0, 25.0), Rgb(0, 0, 255), 3.0);
        assert_eq!((c.get(4, 15), c.get(6, 15), c.get(8, 15)), (Rgb(0, 0, 255), Rgb(0, 0, 255), Rgb::WHITE));
        c.rect(30.0, 20.0, 5.0, 5.0, Rgb(0, 255, 0));
        assert_eq!(c.get(32, 22), Rgb(0, 255, 0));
        c.rect(35.0, 25.0, 100.0, 100.0, Rgb(0, 255, 0)); // clipped, no panic
        let before = c.pixels.iter().filter(|&&b| b == 0).count();
        c.text(20.0, 15.0, "Hi", TextStyle::new(1, Anchor::Middle));
        c.text(2.0, 15.0, "V", TextStyle { vertical: true, ..TextStyle::new(1, Anchor::Middle) });
        assert!(c.pixels.iter().filter(|&&b| b == 0).count() > before + 20);
    }
}
