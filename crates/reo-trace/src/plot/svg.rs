//! [`SvgCanvas`]: a [`Canvas`] that writes an SVG document by hand (no crate): lines, rects and
//! monospace text sized to match the bitmap font's metrics.

use super::canvas::{Anchor, Canvas, Rgb, TextStyle};
use super::font::ADVANCE;
use std::fmt::Write;

/// Accumulates SVG elements; [`SvgCanvas::finish`] returns the document.
pub struct SvgCanvas {
    out: String,
}

/// Escapes text for SVG content and attribute values.
pub fn escape(s: &str) -> String {
    let mut e = String::with_capacity(s.len());
    for c in s.chars() {
        match c {
            '&' => e.push_str("&amp;"),
            '<' => e.push_str("&lt;"),
            '>' => e.push_str("&gt;"),
            '"' => e.push_str("&quot;"),
            c => e.push(c),
        }
    }
    e
}

impl SvgCanvas {
    /// An SVG document of `width × height` pixels on a white background.
    pub fn new(width: u32, height: u32) -> Self {
        let mut out = String::new();
        let _ = writeln!(
            out,
            r#"<svg xmlns="http://www.w3.org/2000/svg" width="{width}" height="{height}" viewBox="0 0 {width} {height}">"#
        );
        let _ = writeln!(out, r#"<rect width="{width}" height="{height}" fill="white"/>"#);
        SvgCanvas { out }
    }

    /// Closes the document and returns its text.
    pub fn finish(mut self) -> String {
        self.out.push_str("</svg>\n");
        self.out
    }
}

impl Canvas for SvgCanvas {
    fn line(&mut self, from: (f64, f64), to: (f64, f64), color: Rgb, width: f64) {
        let _ = writeln!(
            self.out,
            r#"<line x1="{:.1}" y1="{:.1}" x2="{:.1}" y2="{:.1}" stroke="{}" stroke-width="{width}" stroke-linecap="round"/>"#,
            from.0,
            from.1,
            to.0,
            to.1,
            color.hex()
        );
    }

    fn rect(&mut self, x: f64, y: f64, w: f64, h: f64, color: Rgb) {
        let _ = writeln!(
            self.out,
            r#"<rect x="{x:.1}" y="{y:.1}" width="{w:.1}" height="{h:.1}" fill="{}"/>"#,
            color.hex()
        );
    }

    fn text(&mut self, x: f64, y: f64, s: &str, style: TextStyle) {
        let anchor = match style.anchor {
            Anchor::Start => "start",
            Anchor::Middle => "middle",
            Anchor::End => "end",
        };
        // Monospace at font-size f advances ~0.6 f per character; match the bitmap font.
        let size = f64::from(ADVANCE * style.scale) / 0.6;
        let rotate = if style.vertical { format!(r#" transform="rotate(-90 {x:.1} {y:.1})""#) } else { String::new() };
        let _ = writeln!(
            self.out,
            r#"<text x="{x:.1}" y="{y:.1}" font-family="monospace" font-size="{size:.1}" text-anchor="{anchor}" dominant-baseline="middle" fill="{}"{rotate}>{}</text>"#,
            style.color.hex(),
            escape(s)
        );
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn document_has_elements_and_escapes_text() {
        let mut c = SvgCanvas::new(100, 50);
        c.line((0.0, 0.0), (10.0, 10.0), Rgb(1, 2, 3), 2.0);
        c.rect(1.0, 2.0, 3.0, 4.0, Rgb::BLACK);
        c.text(5.0, 5.0, "a<b & \"c\"", TextStyle::new(1, Anchor::Middle));
        let s = c.finish();
        assert!(s.starts_with("<svg") && s.ends_with("</svg>\n"));
        assert!(s.contains(r##"stroke="#010203""##));
        assert!(s.contains("a&lt;b &amp; &quot;c&quot;"));
        assert!(s.contains(r#"text-anchor="middle""#));
    }
}
