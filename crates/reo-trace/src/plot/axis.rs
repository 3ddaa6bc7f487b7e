//! Axis scales: "nice" ranges and ticks (steps of 1, 2 or 5 × 10^k, whole numbers only for
//! integer data) and compact tick labels (SI suffixes k/M/G/T for large values).

use std::ops::Range;

use plotters::coord::ranged1d::{KeyPointHint, NoDefaultFormatting, Ranged, ValueFormatter};

/// A numeric axis: its range and tick positions.
#[derive(Debug, Clone, PartialEq)]
pub struct Axis {
    /// Low end of the axis (data units).
    pub lo: f64,
    /// High end of the axis (data units).
    pub hi: f64,
    /// Distance between ticks: 1, 2 or 5 × 10^k.
    pub step: f64,
    /// Tick positions within `[lo, hi]`, ascending.
    pub ticks: Vec<f64>,
}

fn nice_step(span: f64, target: usize) -> f64 {
    let raw = span / target.max(1) as f64;
    let mag = 10f64.powf(raw.log10().floor());
    let norm = raw / mag;
    let mult = [1.0, 2.0, 5.0, 10.0].into_iter().find(|&m| m >= norm - 1e-9).unwrap_or(10.0);
    mult * mag
}

impl Axis {
    /// An axis covering `[min, max]`, widened to whole steps, with about `target` ticks.
    pub fn auto(min: f64, max: f64, target: usize) -> Axis {
        let (min, max) = match (min.is_finite() && max.is_finite(), min == max) {
            (false, _) => (0.0, 1.0),
            (true, true) if min == 0.0 => (0.0, 1.0),
            (true, true) => (min - min.abs() * 0.5, max + max.abs() * 0.5),
            _ => (min, max),
        };
        let step = nice_step(max - min, target);
        let lo = (min / step).floor() * step;
        let hi = (max / step).ceil() * step;
        Axis::fixed_with_step(lo, hi, step)
    }

    /// An axis over exactly `[lo, hi]` with nice ticks inside it.
    pub fn fixed(lo: f64, hi: f64, target: usize) -> Axis {
        if !(lo.is_finite() && hi.is_finite() && hi > lo) {
            return Axis::auto(lo, hi, target);
        }
        Axis::fixed_with_step(lo, hi, nice_step(hi - lo, target))
    }

    /// The axis with ticks only at whole numbers, for values that are all integers (device
    /// counts): a step under 1 becomes 1, and the range is kept.
    pub fn integers(self) -> Axis {
        if self.step >= 1.0 {
            return self;
        }
        Axis::fixed_with_step(self.lo, self.hi, 1.0)
    }

    fn fixed_with_step(lo: f64, hi: f64, step: f64) -> Axis {
        let first = (lo / step - 1e-9).ceil() as i64;
        let last = (hi / step + 1e-9).floor() as i64;
        let ticks = (first..=last).map(|i| i as f64 * step).map(|t| if t == 0.0 { 0.0 } else { t }).collect();
        Axis { lo, hi, step, ticks }
    }

    /// Where `v` falls on the axis, 0 at `lo` and 1 at `hi`.
    pub fn frac(&self, v: f64) -> f64 {
        (v - self.lo) / (self.hi - self.lo)
    }

    /// The label of tick `v`.
    pub fn label(&self, v: f64) -> String {
        tick_label(v, self.step)
    }
}

/// The axis as a plotters coordinate: linear over `[lo, hi]`, with grid lines and labels at its
/// own ticks only (no finer grid), labelled by [`Axis::label`].
impl Ranged for Axis {
    type FormatOption = NoDefaultFormatting;
    type ValueType = f64;

    fn map(&self, v: &f64, limit: (i32, i32)) -> i32 {
        let span = self.hi - self.lo;
        if span <= 0.0 || !span.is_finite() {
            return limit.0;
        }
        let px = (v - self.lo) / span * f64::from(limit.1 - limit.0);
        limit.0 + (px + 1e-3).floor() as i32
    }

    fn key_points<H: KeyPointHint>(&self, hint: H) -> Vec<f64> {
        if hint.weight().allow_light_points() {
            Vec::new()
        } else {
            self.ticks.clone()
        }
    }

    fn range(&self) -> Range<f64> {
        self.lo..self.hi
    }
}

impl ValueFormatter<f64> for Axis {
    fn format_ext(&self, v: &f64) -> String {
        self.label(*v)
    }
}

/// `v` printed with just the precision a tick step of `step` needs.
pub fn tick_label(v: f64, step: f64) -> String {
    if v.abs() < step * 1e-9 {
        return "0".into();
    }
    // M, G and T once the step is a tenth of the unit; k only for whole thousands.
    let (unit, suffix) = [(1e12, "T"), (1e9, "G"), (1e6, "M"), (1e4, "k")]
        .into_iter()
        .find(|&(u, _)| step >= u / 10.0)
        .map(|(u, s)| if s == "k" { (1e3, s) } else { (u, s) })
        .unwrap_or((1.0, ""));
    let s = step / unit;
    let decimals = if s >= 1.0 { 0 } else { (-s.log10().floor()) as usize };
    format!("{:.*}{suffix}", decimals.min(9), v / unit)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn auto_axes_are_nice() {
        let a = Axis::auto(0.03, 0.97, 5);
        assert_eq!((a.lo, a.hi, a.step), (0.0, 1.0, 0.2));
        assert_eq!(a.ticks.len(), 6);
        let b = Axis::auto(3.0, 97.0, 5);
        assert_eq!((b.lo, b.hi, b.step), (0.0, 100.0, 20.0));
        let c = Axis::auto(5.0, 5.0, 5);
        assert!(c.lo < 5.0 && c.hi > 5.0);
        assert_eq!(Axis::auto(f64::NAN, 1.0, 5).lo, 0.0);
    }

    #[test]
    fn fixed_keeps_range() {
        let a = Axis::fixed(0.0, 1.0, 4);
        assert_eq!((a.lo, a.hi), (0.0, 1.0));
        assert!((a.frac(0.25) - 0.25).abs() < 1e-12);
        assert_eq!(a.ticks.first(), Some(&0.0));
        assert!((a.ticks.last().unwrap() - 1.0).abs() < 1e-9);
    }

    #[test]
    fn integer_axes_tick_whole_numbers() {
        let a = Axis::auto(1.0, 5.0, 8).integers();
        assert_eq!((a.lo, a.hi, a.step), (1.0, 5.0, 1.0));
        assert_eq!(a.ticks, [1.0, 2.0, 3.0, 4.0, 5.0]);
        let one = Axis::auto(3.0, 3.0, 8).integers();
        assert!(one.ticks.contains(&3.0) && one.ticks.iter().all(|t| t.fract() == 0.0));
        let wide = Axis::auto(0.0, 40.0, 8).integers();
        assert_eq!(wide.step, 5.0);
    }

    #[test]
    fn labels() {
        assert_eq!(tick_label(0.4, 0.2), "0.4");
        assert_eq!(tick_label(0.05, 0.05), "0.05");
        assert_eq!(tick_label(40.0, 20.0), "40");
        assert_eq!(tick_label(2_000_000.0, 1_000_000.0), "2M");
        assert_eq!(tick_label(2_500_000.0, 500_000.0), "2.5M");
        assert_eq!(tick_label(6000.0, 2000.0), "6k");
        assert_eq!(tick_label(600.0, 200.0), "600");
        assert_eq!(tick_label(4.4e9, 2e8), "4.4G");
        assert_eq!(tick_label(1e-17, 0.2), "0");
    }
}
