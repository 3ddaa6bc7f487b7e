//! [`GenError`]: why a generator spec (`KIND[:PRESET][,KEY=VALUE]…`) or one of its knobs was
//! refused. Each message names the generator, preset or knob to change and what it accepts.

use thiserror::Error;

/// A generator spec that cannot be built.
#[derive(Debug, Clone, PartialEq, Error)]
#[non_exhaustive]
pub enum GenError {
    /// No generator of that name.
    #[error("unknown generator {kind:?} (expected one of {expected})")]
    UnknownGenerator {
        /// The name given.
        kind: String,
        /// The known generators, comma-separated.
        expected: String,
    },
    /// The generator has no preset of that name.
    #[error("{kind} has no preset {name:?} (presets: {presets})")]
    UnknownPreset {
        /// The generator.
        kind: String,
        /// The preset name given.
        name: String,
        /// Its presets, comma-separated.
        presets: String,
    },
    /// The generator has no knob of that name.
    #[error("{kind} has no knob {key:?} (knobs: {knobs})")]
    UnknownKnob {
        /// The generator.
        kind: &'static str,
        /// The knob name given.
        key: String,
        /// Its knobs, comma-separated.
        knobs: String,
    },
    /// A knob item without `=`.
    #[error("expected KEY=VALUE, got {0:?}")]
    NotKeyValue(String),
    /// An integer knob whose value does not parse.
    #[error("{key}: bad integer {value:?}")]
    BadInteger {
        /// The knob.
        key: String,
        /// The value given.
        value: String,
    },
    /// An integer knob below its minimum.
    #[error("{key}: {value} is below {min}")]
    BelowMin {
        /// The knob.
        key: String,
        /// The value given.
        value: u64,
        /// The smallest value accepted.
        min: u64,
    },
    /// A number knob whose value does not parse.
    #[error("{key}: bad number {value:?}")]
    BadNumber {
        /// The knob.
        key: String,
        /// The value given.
        value: String,
    },
    /// A number knob outside its range.
    #[error("{key}: {value} is outside [{lo}, {hi}]")]
    OutOfRange {
        /// The knob.
        key: String,
        /// The value given.
        value: f64,
        /// The smallest value accepted.
        lo: f64,
        /// The largest value accepted.
        hi: f64,
    },
    /// A boolean knob whose value is not a boolean.
    #[error("{key}: bad boolean {value:?}")]
    BadBoolean {
        /// The knob.
        key: String,
        /// The value given.
        value: String,
    },
    /// MediSyn's size knobs contradict each other.
    #[error("medisyn: need min_size ≤ mean_size ≤ max_size, got {min} / {mean} / {max}")]
    MedisynSizes {
        /// `min_size`, bytes.
        min: u64,
        /// `mean_size`, bytes.
        mean: u64,
        /// `max_size`, bytes.
        max: u64,
    },
}
