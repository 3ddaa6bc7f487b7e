//! Plots for the evaluation, with no plotting crate: [`LineChart`] (named (x, y) series) and
//! [`BarChart`] (grouped bars), each rendered to SVG (hand-written) or PNG (own rasterizer with
//! an embedded 5×8 bitmap font, own PNG chunk writer, flate2 for the zlib stream).

mod axis;
mod bar;
mod canvas;
mod font;
mod frame;
mod line;
mod png;
mod raster;
mod svg;

pub use axis::{tick_label, Axis};
pub use bar::BarChart;
pub use canvas::{color, Anchor, Canvas, Rgb, TextStyle, PALETTE};
pub use line::{LineChart, Series};
pub use png::{decode_rgb, encode_rgb};
pub use raster::RasterCanvas;
pub use svg::SvgCanvas;

use std::io;
use std::path::Path;

/// A chart: its size and how to draw it on any [`Canvas`]; rendering comes with it.
pub trait Chart {
    /// Width and height in pixels.
    fn size(&self) -> (u32, u32);

    /// Draws the chart on `c` (of [`Chart::size`]).
    fn draw(&self, c: &mut dyn Canvas);

    /// The chart as an SVG document.
    fn to_svg(&self) -> String {
        let (w, h) = self.size();
        let mut c = SvgCanvas::new(w, h);
        self.draw(&mut c);
        c.finish()
    }

    /// The chart as an RGB image.
    fn to_raster(&self) -> RasterCanvas {
        let (w, h) = self.size();
        let mut c = RasterCanvas::new(w, h);
        self.draw(&mut c);
        c
    }

    /// The chart as a PNG file.
    fn to_png(&self) -> Vec<u8> {
        let r = self.to_raster();
        encode_rgb(r.width, r.height, &r.pixels)
    }

    /// Writes the chart to `path`: PNG if it ends in `.png`, else SVG.
    fn save(&self, path: &Path) -> io::Result<()> {
        let png = path.extension().is_some_and(|e| e.eq_ignore_ascii_case("png"));
        std::fs::write(path, if png { self.to_png() } else { self.to_svg().into_bytes() })
    }
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

    fn has_color(r: &RasterCanvas, c: Rgb) -> usize {
        r.pixels.chunks(3).filter(|p| *p == [c.0, c.1, c.2]).count()
    }

    #[test]
    fn line_chart_svg_names_series_and_ticks() {
        let svg = hit_ratio_chart().to_svg();
        for needle in [">LRU<", ">Reo<", ">Hit ratio vs cache size<", ">hit ratio<", ">0.4<", ">8<", "rotate(-90"] {
            assert!(svg.contains(needle), "missing {needle}");
        }
        assert!(svg.contains(&color(1).hex()));
    }

    #[test]
    fn line_chart_png_decodes_with_series_colors() {
        let chart = hit_ratio_chart().size(640, 400);
        let png = chart.to_png();
        assert!(png.starts_with(&[0x89, b'P', b'N', b'G']));
        assert_eq!(&png[12..16], b"IHDR");
        let (w, h, rgb) = decode_rgb(&png).unwrap();
        assert_eq!((w, h), (640, 400));
        let r = RasterCanvas { width: w, height: h, pixels: rgb };
        assert!(has_color(&r, color(0)) > 200, "LRU's color");
        assert!(has_color(&r, color(1)) > 200, "Reo's color");
        assert_eq!(has_color(&r, color(2)), 0, "no third series");
        assert!(has_color(&r, Rgb::BLACK) > 500, "axes and text");
    }

    #[test]
    fn bar_chart_renders_groups_and_series() {
        let chart = BarChart::new("Hit ratio after failures", "failed devices", "hit ratio", &["0", "1", "2"])
            .series("replication", vec![0.6, 0.4, 0.2])
            .series("RS(4,2)", vec![0.6, 0.55, 0.5])
            .series("Reo", vec![0.7, 0.65, 0.6]);
        let svg = chart.to_svg();
        for needle in [">replication<", ">RS(4,2)<", ">Reo<", ">failed devices<"] {
            assert!(svg.contains(needle), "missing {needle}");
        }
        let r = chart.to_raster();
        for i in 0..3 {
            assert!(has_color(&r, color(i)) > 1000, "series {i}");
        }
        let (w, h, _) = decode_rgb(&chart.to_png()).unwrap();
        assert_eq!((w, h), (800, 480));
    }

    #[test]
    fn degenerate_charts_do_not_panic() {
        let empty = LineChart::new("", "", "");
        assert!(decode_rgb(&empty.to_png()).is_ok());
        let odd = LineChart::new("t", "x", "y").series("s", vec![(f64::NAN, 1.0), (1.0, f64::INFINITY), (2.0, 2.0)]);
        assert!(odd.to_svg().contains(">s<"));
        let tiny = BarChart::new("t", "x", "y", &[]).size(50, 40);
        assert!(decode_rgb(&tiny.to_png()).is_ok());
    }

    #[test]
    fn save_picks_format_by_extension() {
        let tmp = tempfile::TempDir::new().unwrap();
        let dir = tmp.path();
        hit_ratio_chart().save(&dir.join("a.png")).unwrap();
        hit_ratio_chart().save(&dir.join("a.svg")).unwrap();
        assert!(std::fs::read(dir.join("a.png")).unwrap().starts_with(&png::SIGNATURE));
        assert!(std::fs::read_to_string(dir.join("a.svg")).unwrap().starts_with("<svg"));
    }
}
