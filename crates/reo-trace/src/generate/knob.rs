//! Parsing generator knobs (`key=value`) with range checks, shared by every generator's params.

use super::error::GenError;

/// A `u64` knob, at least `min`.
pub fn u64_knob(key: &str, value: &str, min: u64) -> Result<u64, GenError> {
    let v: u64 = value
        .trim()
        .replace('_', "")
        .parse()
        .map_err(|_| GenError::BadInteger { key: key.into(), value: value.into() })?;
    if v < min {
        return Err(GenError::BelowMin { key: key.into(), value: v, min });
    }
    Ok(v)
}

/// An `f64` knob within `[lo, hi]`.
pub fn f64_knob(key: &str, value: &str, lo: f64, hi: f64) -> Result<f64, GenError> {
    let v: f64 = value.trim().parse().map_err(|_| GenError::BadNumber { key: key.into(), value: value.into() })?;
    if !(lo..=hi).contains(&v) {
        return Err(GenError::OutOfRange { key: key.into(), value: v, lo, hi });
    }
    Ok(v)
}

/// A boolean knob: true/false, yes/no, on/off, 1/0.
pub fn bool_knob(key: &str, value: &str) -> Result<bool, GenError> {
    match value.trim().to_ascii_lowercase().as_str() {
        "true" | "yes" | "on" | "1" => Ok(true),
        "false" | "no" | "off" | "0" => Ok(false),
        _ => Err(GenError::BadBoolean { key: key.into(), value: value.into() }),
    }
}

/// The error for a key a generator does not have.
pub fn unknown(kind: &'static str, key: &str, known: &[&str]) -> GenError {
    GenError::UnknownKnob { kind, key: key.into(), knobs: known.join(", ") }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn ranges_are_checked() {
        assert_eq!(u64_knob("n", "1_000", 1), Ok(1000));
        assert!(u64_knob("n", "0", 1).is_err());
        assert!(u64_knob("n", "x", 0).is_err());
        assert_eq!(f64_knob("a", "0.5", 0.0, 1.0), Ok(0.5));
        assert!(f64_knob("a", "1.5", 0.0, 1.0).is_err());
        assert_eq!(bool_knob("c", "Off"), Ok(false));
        assert!(bool_knob("c", "maybe").is_err());
    }
}
