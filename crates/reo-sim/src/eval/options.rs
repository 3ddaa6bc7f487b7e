//! [`EvalOptions`]: what `reo eval` may change in how an experiment runs.

use super::run::FLUSH_DELAY_SECS;

/// How an experiment runs.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct EvalOptions {
    /// A smaller version of the experiment (for CI).
    pub quick: bool,
    /// The flush delay of write-back experiments (`reo-dirty`), modelled seconds; default
    /// [`FLUSH_DELAY_SECS`].
    pub flush_delay_secs: f64,
}

impl EvalOptions {
    /// The defaults, full or quick.
    pub fn new(quick: bool) -> EvalOptions {
        EvalOptions { quick, flush_delay_secs: FLUSH_DELAY_SECS }
    }
}
