//! Progress of long commands on stderr, the one way every command shows it: on a terminal an
//! indicatif bar (a count or bytes towards a total), or a spinner with the current step and the
//! time spent; piped or redirected, plain lines a log keeps readable — at most one every
//! [`PLAIN_EVERY`] for a bar, every step for a spinner — and no escape codes.

use std::io::IsTerminal;
use std::sync::Mutex;
use std::time::{Duration, Instant};

/// Least time between two plain progress lines of a bar: a log gets a heartbeat, not a flood.
pub const PLAIN_EVERY: Duration = Duration::from_secs(5);

/// What a bar counts.
#[derive(Clone, Copy, PartialEq, Eq)]
pub enum Unit {
    /// Items (requests, objects): shown as counts with a rate.
    Count,
    /// Bytes: shown in KiB/MiB/GiB.
    Bytes,
}

/// One command's progress: a bar, a spinner, or nothing.
pub struct Progress {
    what: String,
    unit: Unit,
    bar: Option<indicatif::ProgressBar>,
    /// Piped: when the last plain line was printed (none yet: `None`), and the total.
    plain: Option<Mutex<(Option<Instant>, Option<u64>)>>,
}

/// Whether progress goes to a terminal.
pub fn on_terminal() -> bool {
    std::io::stderr().is_terminal()
}

impl Progress {
    /// A bar labelled `what` towards `total` (unknown: a spinner with the count).
    pub fn bar(what: &str, total: Option<u64>, unit: Unit) -> Progress {
        if !on_terminal() {
            return Progress { what: what.into(), unit, bar: None, plain: Some(Mutex::new((None, total))) };
        }
        let (bar, template) = match (total, unit) {
            (Some(t), Unit::Count) => (
                indicatif::ProgressBar::new(t),
                "{bar:40} {percent:>3}% {human_pos}/{human_len} {prefix}, {per_sec}, ETA {eta} {msg}",
            ),
            (Some(t), Unit::Bytes) => (
                indicatif::ProgressBar::new(t),
                "{bar:40} {percent:>3}% {binary_bytes}/{binary_total_bytes} {prefix}, ETA {eta} {msg}",
            ),
            (None, Unit::Count) => {
                (indicatif::ProgressBar::new_spinner(), "{spinner} {human_pos} {prefix}, {per_sec} {msg}")
            }
            (None, Unit::Bytes) => (indicatif::ProgressBar::new_spinner(), "{spinner} {binary_bytes} {prefix} {msg}"),
        };
        if let Ok(style) = indicatif::ProgressStyle::with_template(template) {
            bar.set_style(style);
        }
        bar.set_prefix(what.to_string());
        Progress { what: what.into(), unit, bar: Some(bar), plain: None }
    }

    /// A spinner labelled `what` for work whose end is not known (a synchronous call, steps of a
    /// benchmark); it turns on its own while the caller blocks.
    pub fn spinner(what: &str) -> Progress {
        if !on_terminal() {
            return Progress { what: what.into(), unit: Unit::Count, bar: None, plain: None };
        }
        let bar = indicatif::ProgressBar::new_spinner();
        if let Ok(style) = indicatif::ProgressStyle::with_template("{spinner} {prefix} ({elapsed}) {msg}") {
            bar.set_style(style);
        }
        bar.set_prefix(what.to_string());
        bar.enable_steady_tick(Duration::from_millis(120));
        Progress { what: what.into(), unit: Unit::Count, bar: Some(bar), plain: None }
    }

    /// No progress at all (e.g. stderr reserved for something else).
    pub fn hidden() -> Progress {
        Progress { what: String::new(), unit: Unit::Count, bar: None, plain: None }
    }

    /// The bar's total is now `total`.
    pub fn set_total(&self, total: u64) {
        if let Some(b) = &self.bar {
            b.set_length(total);
        }
        if let Some(p) = &self.plain {
            p.lock().unwrap_or_else(std::sync::PoisonError::into_inner).1 = Some(total);
        }
    }

    /// `pos` done so far, with `msg` after the figures.
    pub fn set(&self, pos: u64, msg: &str) {
        if let Some(b) = &self.bar {
            b.set_position(pos);
            b.set_message(msg.to_string());
        }
        if let Some(p) = &self.plain {
            let mut p = p.lock().unwrap_or_else(std::sync::PoisonError::into_inner);
            if p.0.is_some_and(|t| t.elapsed() < PLAIN_EVERY) {
                return;
            }
            p.0 = Some(Instant::now());
            eprintln!("{}", self.line(pos, p.1, msg));
        }
    }

    /// A step of the work: a line of its own (above the bar or spinner on a terminal).
    pub fn step(&self, msg: &str) {
        match &self.bar {
            Some(b) => {
                b.println(format!("{}: {msg}", self.what));
                b.set_message(msg.to_string());
            }
            None if self.what.is_empty() => {}
            None => eprintln!("{}: {msg}", self.what),
        }
    }

    /// The work is over: the bar goes away (the caller says how it ended).
    pub fn finish(&self) {
        if let Some(b) = &self.bar {
            b.finish_and_clear();
        }
    }

    fn line(&self, pos: u64, total: Option<u64>, msg: &str) -> String {
        let fig = |n: u64| match self.unit {
            Unit::Count => n.to_string(),
            Unit::Bytes => format!("{:.1} MiB", n as f64 / f64::from(1 << 20)),
        };
        let figures = match total {
            Some(t) if t > 0 => format!("{} of {} ({:.0}%)", fig(pos), fig(t), pos as f64 * 100.0 / t as f64),
            _ => fig(pos),
        };
        let sep = if msg.is_empty() { "" } else { "; " };
        format!("{}: {figures}{sep}{msg}", self.what)
    }
}

/// The spinner of a command's steps ([`step`]), made at the first step.
static STEPS: Mutex<Option<Progress>> = Mutex::new(None);

/// A step of a long command that reports from many places (the benchmarks): a line of its own,
/// `what: msg`, under one spinner that shows the current step and the time spent on a terminal.
/// [`steps_done`] clears it.
pub fn step(what: &str, msg: &str) {
    let mut s = STEPS.lock().unwrap_or_else(std::sync::PoisonError::into_inner);
    s.get_or_insert_with(|| Progress::spinner(what)).step(msg);
}

/// The command's steps are over: their spinner goes away.
pub fn steps_done() {
    STEPS.lock().unwrap_or_else(std::sync::PoisonError::into_inner).take();
}

impl Drop for Progress {
    fn drop(&mut self) {
        self.finish();
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn plain_lines() {
        let p = Progress { what: "flush".into(), unit: Unit::Bytes, bar: None, plain: None };
        assert_eq!(p.line(1 << 20, Some(4 << 20), "3 objects"), "flush: 1.0 MiB of 4.0 MiB (25%); 3 objects");
        let p = Progress { what: "replay".into(), unit: Unit::Count, bar: None, plain: None };
        assert_eq!(p.line(7, None, ""), "replay: 7");
    }
}
