//! Plots for the evaluation and `reo replay --plot`, drawn with plotters: [`LineChart`] (named
//! (x, y) series) and [`BarChart`] (grouped bars), each rendered to SVG or PNG. Text is drawn in
//! a font embedded in the crate, so a PNG is the same on every machine.

mod axis;
mod bar;
mod font;
mod frame;
mod line;

pub use axis::{tick_label, Axis};
pub use bar::BarChart;
pub use frame::{color, DrawResult, PALETTE};
pub use line::{LineChart, Series};

use std::io;
use std::path::Path;

use plotters::coord::Shift;
use plotters::prelude::*;

/// A chart: its size and how to draw it on any plotters backend; rendering comes with it.
pub trait Chart {
    /// Width and height in pixels.
    fn size(&self) -> (u32, u32);

    /// Draws the chart on `root` (of [`Chart::size`]); the caller presents it.
    fn draw<DB: DrawingBackend>(&self, root: &DrawingArea<DB, Shift>) -> DrawResult<(), DB>;

    /// The chart as an SVG document (its text left to the viewer's sans-serif font, so it
    /// scales with the document).
    fn to_svg(&self) -> io::Result<String> {
        font::ensure_registered()?;
        let mut svg = String::new();
        {
            let root = SVGBackend::with_string(&mut svg, self.size()).into_drawing_area();
            self.draw(&root).and_then(|()| root.present()).map_err(drawing)?;
        }
        Ok(svg)
    }

    /// The chart as an RGB image, 3 bytes a pixel, row by row.
    fn to_rgb(&self) -> io::Result<Vec<u8>> {
        font::ensure_registered()?;
        let (w, h) = self.size();
        let mut rgb = vec![0; w as usize * h as usize * 3];
        {
            let root = BitMapBackend::with_buffer(&mut rgb, (w, h)).into_drawing_area();
            self.draw(&root).and_then(|()| root.present()).map_err(drawing)?;
        }
        Ok(rgb)
    }

    /// The chart as a PNG file.
    fn to_png(&self) -> io::Result<Vec<u8>> {
        let rgb = self.to_rgb()?;
        let (w, h) = self.size();
        let mut out = Vec::new();
        let mut enc = png::Encoder::new(&mut out, w, h);
        enc.set_color(png::ColorType::Rgb);
        enc.set_depth(png::BitDepth::Eight);
        let mut writer = enc.write_header().map_err(io::Error::other)?;
        writer.write_image_data(&rgb).map_err(io::Error::other)?;
        writer.finish().map_err(io::Error::other)?;
        Ok(out)
    }

    /// Writes the chart to `path`: PNG if it ends in `.png`, else SVG.
    fn save(&self, path: &Path) -> io::Result<()> {
        let png = path.extension().is_some_and(|e| e.eq_ignore_ascii_case("png"));
        std::fs::write(path, if png { self.to_png()? } else { self.to_svg()?.into_bytes() })
    }
}

/// A drawing error as an I/O error: the one error type of rendering and saving.
fn drawing<E: std::error::Error + Send + Sync + 'static>(e: DrawingAreaErrorKind<E>) -> io::Error {
    io::Error::other(e.to_string())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn hit_ratio_chart() -> LineChart {
        LineChart::new("Hit ratio vs cache size", "cache size (GiB)", "hit ratio")
            .series("LRU", vec![(1.0, 0.2), (2.0, 0.35), (4.0, 0.5), (8.0, 0.62)])
            .series("Reo", vec![(1.0, 0.3), (2.0, 0.48), (4.0, 0.63), (8.0, 0.71)])
            .y_range(0.0, 1.0)
    }

    /// Width, height and RGB pixels of a PNG file.
    fn decode(png: &[u8]) -> (u32, u32, Vec<[u8; 3]>) {
        let mut reader = png::Decoder::new(std::io::Cursor::new(png)).read_info().unwrap();
        let mut buf = vec![0; reader.output_buffer_size().unwrap()];
        let info = reader.next_frame(&mut buf).unwrap();
        assert_eq!((info.color_type, info.bit_depth), (png::ColorType::Rgb, png::BitDepth::Eight));
        let px = buf[..info.buffer_size()].chunks(3).map(|p| [p[0], p[1], p[2]]).collect();
        (info.width, info.height, px)
    }

    fn count(px: &[[u8; 3]], c: RGBColor) -> usize {
        px.iter().filter(|p| **p == [c.0, c.1, c.2]).count()
    }

    /// The contents of every `<text>` element, in document order.
    fn texts(svg: &str) -> Vec<&str> {
        svg.split("<text").skip(1).filter_map(|t| Some(t[t.find('>')? + 1..t.find("</text>")?].trim())).collect()
    }

    #[test]
    fn line_chart_svg_has_title_axis_labels_legend_and_ticks() {
        let svg = hit_ratio_chart().to_svg().unwrap();
        assert!(svg.starts_with("<svg"));
        let texts = texts(&svg);
        for needle in ["Hit ratio vs cache size", "cache size (GiB)", "hit ratio", "LRU", "Reo", "0.4", "8"] {
            assert!(texts.contains(&needle), "no text {needle:?} in {texts:?}");
        }
        assert!(svg.contains("rotate(270") || svg.contains("rotate(-90"), "y label is vertical");
        let hex = |c: RGBColor| format!("#{:02X}{:02X}{:02X}", c.0, c.1, c.2);
        assert!(svg.contains(&hex(color(0))) && svg.contains(&hex(color(1))));
        assert!(!svg.contains(&hex(color(2))), "no third series");
    }

    #[test]
    fn line_chart_png_decodes_with_series_colors_and_text() {
        let png = hit_ratio_chart().size(640, 400).to_png().unwrap();
        let (w, h, px) = decode(&png);
        assert_eq!((w, h), (640, 400));
        assert!(count(&px, color(0)) > 200, "LRU's color");
        assert!(count(&px, color(1)) > 200, "Reo's color");
        assert_eq!(count(&px, color(2)), 0, "no third series");
        let drawn = px.iter().filter(|p| **p != [255, 255, 255]).count();
        assert!(drawn * 100 > px.len() * 3, "only {drawn} of {} pixels drawn", px.len());
        // The title is text in the embedded font: dark pixels in the top rows, none in the
        // corners beside it.
        let dark = |p: &[u8; 3]| p.iter().all(|&c| c < 100);
        let top = &px[..640 * 30];
        assert!(top.iter().filter(|p| dark(p)).count() > 100, "the title is drawn");
        assert!(top.chunks(640).all(|row| row[..40].iter().all(|p| !dark(p))), "title centred");
    }

    #[test]
    fn bar_chart_renders_groups_and_series() {
        let chart = BarChart::new("Hit ratio after failures", "failed devices", "hit ratio", &["0", "1", "2"])
            .series("replication", vec![0.6, 0.4, 0.2])
            .series("RS(4,2)", vec![0.6, 0.55, 0.5])
            .series("Reo", vec![0.7, 0.65, 0.6]);
        let svg = chart.to_svg().unwrap();
        let texts = texts(&svg);
        for needle in ["Hit ratio after failures", "replication", "RS(4,2)", "Reo", "failed devices", "hit ratio"] {
            assert!(texts.contains(&needle), "no text {needle:?} in {texts:?}");
        }
        for group in ["0", "1", "2"] {
            assert!(texts.contains(&group), "group {group}");
        }
        let (w, h, px) = decode(&chart.to_png().unwrap());
        assert_eq!((w, h), (800, 480));
        for i in 0..3 {
            assert!(count(&px, color(i)) > 1000, "series {i}");
        }
    }

    #[test]
    fn integer_x_gets_only_integer_ticks() {
        let chart = LineChart::new("Failures", "failed devices", "objects")
            .series("Reo", (1..=5).map(|d| (f64::from(d), f64::from(d * 10))).collect());
        let svg = chart.to_svg().unwrap();
        let labels = texts(&svg);
        let numbers: Vec<f64> = labels.iter().filter_map(|t| t.parse().ok()).collect();
        assert!(numbers.iter().all(|v| v.fract() == 0.0), "a fractional tick in {labels:?}");
        for d in ["1", "2", "3", "4", "5"] {
            assert!(labels.contains(&d), "x tick {d} in {labels:?}");
        }
        // The same points shifted by a half are not integers, and get fractional ticks.
        let half = LineChart::new("t", "x", "y").series("s", (1..=5).map(|d| (f64::from(d) + 0.5, 1.0)).collect());
        assert!(texts(&half.to_svg().unwrap()).iter().any(|t| t.parse::<f64>().is_ok_and(|v| v.fract() != 0.0)));
    }

    #[test]
    fn large_counts_get_si_labels() {
        let chart = LineChart::new("t", "requests", "ratio")
            .series("s", (1..=10).map(|i| (f64::from(i) * 500_000.0, 0.5)).collect());
        let texts = texts(&chart.to_svg().unwrap()).join(" ");
        assert!(texts.contains("5M") && texts.contains("1M"), "{texts}");
        assert!(!texts.contains("000000"), "{texts}");
    }

    #[test]
    fn degenerate_charts_do_not_panic() {
        let empty = LineChart::new("", "", "");
        assert_eq!(decode(&empty.to_png().unwrap()).0, 800);
        let odd = LineChart::new("t", "x", "y").series("s", vec![(f64::NAN, 1.0), (1.0, f64::INFINITY), (2.0, 2.0)]);
        assert!(texts(&odd.to_svg().unwrap()).contains(&"s"));
        let tiny = BarChart::new("t", "x", "y", &[]).size(50, 40);
        assert_eq!(decode(&tiny.to_png().unwrap()).0, 50);
    }

    #[test]
    fn save_picks_format_by_extension() {
        let tmp = tempfile::TempDir::new().unwrap();
        let dir = tmp.path();
        hit_ratio_chart().save(&dir.join("a.png")).unwrap();
        hit_ratio_chart().save(&dir.join("a.svg")).unwrap();
        assert!(std::fs::read(dir.join("a.png")).unwrap().starts_with(&[0x89, b'P', b'N', b'G']));
        assert!(std::fs::read_to_string(dir.join("a.svg")).unwrap().starts_with("<svg"));
    }
}
