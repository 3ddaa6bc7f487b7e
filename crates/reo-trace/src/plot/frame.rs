//! The decorations every chart shares, laid out once: white background, title, the legend in a
//! column right of the plot, the series palette, and the style of the mesh (grid, ticks, axis
//! labels) that each chart then fills with its own tick labels.

use plotters::chart::MeshStyle;
use plotters::coord::Shift;
use plotters::prelude::*;
use plotters::style::text_anchor::{HPos, Pos, VPos};

use super::font::FAMILY;

/// What drawing on a backend `DB` returns.
pub type DrawResult<T, DB> = Result<T, DrawingAreaErrorKind<<DB as DrawingBackend>::ErrorType>>;

/// The series colors, in order (matplotlib's "tab10": distinct, and readable on white).
pub const PALETTE: [RGBColor; 10] = [
    RGBColor(31, 119, 180),
    RGBColor(255, 127, 14),
    RGBColor(44, 160, 44),
    RGBColor(214, 39, 40),
    RGBColor(148, 103, 189),
    RGBColor(140, 86, 75),
    RGBColor(227, 119, 194),
    RGBColor(127, 127, 127),
    RGBColor(188, 189, 34),
    RGBColor(23, 190, 207),
];

/// The color of series `i`.
pub fn color(i: usize) -> RGBColor {
    PALETTE[i % PALETTE.len()]
}

/// The grid lines behind the data: light enough not to be taken for a series.
const GRID: RGBColor = RGBColor(225, 225, 225);

/// Pixel sizes of the chart's text.
const TITLE_SIZE: f64 = 20.0;
const LABEL_SIZE: f64 = 13.0;
const DESC_SIZE: f64 = 15.0;

/// Space around the plot and its labels, pixels.
const MARGIN: u32 = 12;

/// The text style of tick labels and the legend.
pub fn label_style() -> TextStyle<'static> {
    (FAMILY, LABEL_SIZE).into_font().color(&BLACK)
}

/// Draws background, title and legend (`(name, color)` per series) on `root` and returns the
/// area left for the plot with its axes.
pub fn draw<DB: DrawingBackend>(
    root: &DrawingArea<DB, Shift>,
    title: &str,
    legend: &[(&str, RGBColor)],
) -> DrawResult<DrawingArea<DB, Shift>, DB> {
    root.fill(&WHITE)?;
    let area = if title.is_empty() {
        root.clone()
    } else {
        root.titled(title, (FAMILY, TITLE_SIZE).into_font().color(&BLACK))?
    };
    if legend.is_empty() {
        return Ok(area);
    }
    let style = label_style();
    let mut widest = 0;
    for (name, _) in legend {
        widest = widest.max(area.estimate_text_size(name, &style)?.0);
    }
    let (w, _) = area.dim_in_pixel();
    let (plot, key) = area.split_horizontally(w.saturating_sub(widest + 45));
    let text = style.pos(Pos::new(HPos::Left, VPos::Center));
    for (i, (name, color)) in legend.iter().enumerate() {
        let y = (MARGIN + 10 + 20 * i as u32) as i32;
        key.draw(&Rectangle::new([(5, y - 3), (25, y + 3)], color.filled()))?;
        key.draw(&Text::new(name.to_string(), (31, y), text.clone()))?;
    }
    Ok(plot)
}

/// A chart builder on `area` with room for the x labels below and, left, for the widest of
/// `y_ticks` and the rotated y axis label.
pub fn builder<'a, 'b, DB: DrawingBackend>(
    area: &'a DrawingArea<DB, Shift>,
    y_ticks: &[String],
) -> DrawResult<ChartBuilder<'a, 'b, DB>, DB> {
    let style = label_style();
    let mut widest = 0;
    for t in y_ticks {
        widest = widest.max(area.estimate_text_size(t, &style)?.0);
    }
    let mut b = ChartBuilder::on(area);
    b.margin(MARGIN).x_label_area_size(45).y_label_area_size(widest + 40);
    Ok(b)
}

/// Grid, axis and label styles of every chart, with the axis labels `x_desc` and `y_desc`.
pub fn style_mesh<X: Ranged, Y: Ranged, DB: DrawingBackend>(
    m: &mut MeshStyle<'_, '_, X, Y, DB>,
    x_desc: &str,
    y_desc: &str,
) {
    m.x_desc(x_desc)
        .y_desc(y_desc)
        .axis_desc_style((FAMILY, DESC_SIZE).into_font().color(&BLACK))
        .label_style(label_style())
        .bold_line_style(GRID)
        .light_line_style(TRANSPARENT)
        .axis_style(BLACK);
}
