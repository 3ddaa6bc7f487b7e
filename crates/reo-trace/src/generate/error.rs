//! [`GenError`]: why a generator spec (`KIND[:PRESET][,KEY=VALUE]…`) or one of its knobs was
//! refused. Each message names the generator, preset or knob to change and what it accepts.

use thiserror::Error;

/// A generator spec that cannot be built.
#[derive(Debug, Clone, PartialEq, Error)]
#[non_exhaustive]
pub enum GenError {
    /// No generator of that name.
    #[error("unknown generator {kind:?} (expected one of {expected})")]
    UnknownGenerator { kind: String, expected: String },
    /// The generator has no preset of that name.
    #[error("{kind} has no preset {name:?} (presets: {presets})")]
    UnknownPreset { kind: String, name: String, presets: String },
    /// The generator has no knob of that name.
    #[error("{kind} has no knob {key:?} (knobs: {knobs})")]
    UnknownKnob { kind: &'static str, key: String, knobs: String },
    /// A knob item without `=`.
    #[error("expected KEY=VALUE, got {0:?}")]
    NotKeyValue(String),
    #[error("{key}: bad integer {value:?}")]
    BadInteger { key: String, value: String },
    #[error("{key}: {value} is below {min}")]
    BelowMin { key: String, value: u64, min: u64 },
    #[error("{key}: bad number {value:?}")]
    BadNumber { key: String, value: String },
    #[error("{key}: {value} is outside [{lo}, {hi}]")]
    OutOfRange { key: String, value: f64, lo: f64, hi: f64 },
    #[error("{key}: bad boolean {value:?}")]
    BadBoolean { key: String, value: String },
    /// MediSyn's size knobs contradict each other.
    #[error("medisyn: need min_size ≤ mean_size ≤ max_size, got {min} / {mean} / {max}")]
    MedisynSizes { min: u64, mean: u64, max: u64 },
}
