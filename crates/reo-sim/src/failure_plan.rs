//! [`FailurePlan`]: failure points for repeatable experiments (the Reo paper, docs/REFERENCES.md
//! §P1, §VI: "we inject failure points in specified positions") — fail device `d` when request `n`
//! arrives, replace it when request `m` arrives.
//! `reo replay --fail-at 10000:0,20000:1 --replace-at 30000:0` parses its flags with
//! [`FailurePlan::parse`] and asks [`FailurePlan::due`] before each request.

use std::fmt;

use thiserror::Error;

/// What to do to a device.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum FailureAction {
    /// Fail the device: what it held is lost; protected fragments are read degraded, lost clean
    /// ones become misses and lost dirty ones are data-loss events.
    Fail,
    /// Replace the failed device with a blank one and rebuild onto it (to the end, before the
    /// next request).
    Replace,
}

/// One failure point.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct FailurePoint {
    /// Applied when this request (0-based count of requests so far) arrives.
    pub at_request: u64,
    /// Position of the device in the array (0-based).
    pub device: usize,
    /// Fail or replace.
    pub action: FailureAction,
}

impl fmt::Display for FailurePoint {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let what = match self.action {
            FailureAction::Fail => "fail",
            FailureAction::Replace => "replace",
        };
        write!(f, "{what} device {} at request {}", self.device, self.at_request)
    }
}

/// Why `--fail-at` / `--replace-at` lists were refused; each message names the flag and item.
#[derive(Debug, Clone, PartialEq, Eq, Error)]
#[non_exhaustive]
pub enum FailurePlanError {
    /// An item is not `REQUEST:DEVICE`.
    #[error("{flag}: {item:?} is not REQUEST:DEVICE (e.g. 10000:0)")]
    Syntax {
        /// `--fail-at` or `--replace-at`.
        flag: &'static str,
        /// The item as given.
        item: String,
    },
    /// The device number is beyond the array.
    #[error("{flag}: device {device} does not exist (the array has {devices})")]
    NoSuchDevice {
        /// `--fail-at` or `--replace-at`.
        flag: &'static str,
        /// The device number given.
        device: usize,
        /// Devices in the array.
        devices: usize,
    },
    /// A device fails again before it was replaced.
    #[error("{0}: the device is already failed (replace it first)")]
    AlreadyFailed(FailurePoint),
    /// A device is replaced while it is not failed.
    #[error("{0}: the device has not failed before that request")]
    NotFailed(FailurePoint),
}

/// Failure points in request order.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct FailurePlan {
    points: Vec<FailurePoint>,
    next: usize,
}

impl FailurePlan {
    /// Parses `--fail-at` and `--replace-at` lists (`N:D,N:D…`, either may be empty) for an
    /// array of `devices` devices. A device is replaced only after it failed.
    pub fn parse(fail_at: &str, replace_at: &str, devices: usize) -> Result<FailurePlan, FailurePlanError> {
        let mut points = Vec::new();
        for (list, action, flag) in
            [(fail_at, FailureAction::Fail, "--fail-at"), (replace_at, FailureAction::Replace, "--replace-at")]
        {
            for item in list.split(',').map(str::trim).filter(|s| !s.is_empty()) {
                let bad = || FailurePlanError::Syntax { flag, item: item.to_string() };
                let (n, d) = item.split_once(':').ok_or_else(bad)?;
                let at_request: u64 = n.trim().parse().map_err(|_| bad())?;
                let device: usize = d.trim().parse().map_err(|_| bad())?;
                if device >= devices {
                    return Err(FailurePlanError::NoSuchDevice { flag, device, devices });
                }
                points.push(FailurePoint { at_request, device, action });
            }
        }
        // Stable: a fail and a replace at the same request apply in the order fail, replace.
        points.sort_by_key(|p| (p.at_request, p.action == FailureAction::Replace));
        let mut failed = vec![false; devices];
        for p in &points {
            match p.action {
                FailureAction::Fail if failed[p.device] => return Err(FailurePlanError::AlreadyFailed(*p)),
                FailureAction::Replace if !failed[p.device] => return Err(FailurePlanError::NotFailed(*p)),
                FailureAction::Fail => failed[p.device] = true,
                FailureAction::Replace => failed[p.device] = false,
            }
        }
        Ok(FailurePlan { points, next: 0 })
    }

    /// The points due when request `request` arrives (each returned once, in order).
    pub fn due(&mut self, request: u64) -> &[FailurePoint] {
        let start = self.next;
        while self.next < self.points.len() && self.points[self.next].at_request <= request {
            self.next += 1;
        }
        &self.points[start..self.next]
    }

    /// All points, in the order they apply (request, then fail before replace).
    pub fn points(&self) -> &[FailurePoint] {
        &self.points
    }

    /// Whether the plan has no points at all.
    pub fn is_empty(&self) -> bool {
        self.points.is_empty()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn parses_orders_and_fires_once() {
        let mut p = FailurePlan::parse("20000:1, 10000:0", "30000:0", 4).unwrap();
        assert_eq!(p.points().len(), 3);
        assert!(p.due(9_999).is_empty());
        assert_eq!(p.due(10_000), &[FailurePoint { at_request: 10_000, device: 0, action: FailureAction::Fail }]);
        assert!(p.due(10_001).is_empty());
        let later: Vec<_> = p.due(40_000).to_vec();
        assert_eq!(
            later.iter().map(|x| (x.device, x.action)).collect::<Vec<_>>(),
            vec![(1, FailureAction::Fail), (0, FailureAction::Replace)]
        );
        assert!(p.due(u64::MAX).is_empty());
        assert!(FailurePlan::parse("", "", 4).unwrap().is_empty());
    }

    #[test]
    fn bad_plans_are_clear_errors() {
        for (f, r, want) in [
            ("10", "", "REQUEST:DEVICE"),
            ("x:1", "", "REQUEST:DEVICE"),
            ("10:9", "", "does not exist"),
            ("10:1,20:1", "", "already failed"),
            ("", "10:1", "has not failed"),
            ("20:1", "10:1", "has not failed"),
        ] {
            let e = FailurePlan::parse(f, r, 4).unwrap_err().to_string();
            assert!(e.contains(want), "{f} / {r}: {e}");
        }
    }
}
