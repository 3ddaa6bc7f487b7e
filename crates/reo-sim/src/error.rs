//! The simulator's errors: [`ArrayError`] (building the simulated or file-backed array),
//! [`ReplayError`] (opening a replay, or a request or failure point it could not apply) and
//! [`EvalError`] (an experiment of `reo eval`). Each message names the device, request, failure
//! point, file or setting, as `reo replay` and `reo eval` print it.

use std::io;
use std::path::PathBuf;

use thiserror::Error;

use reo_trace::generate::GenError;

use crate::failure_plan::{FailurePlanError, FailurePoint};

/// The devices or the store of a replay's array could not be created.
#[derive(Debug, Error)]
#[non_exhaustive]
pub enum ArrayError {
    #[error("the array needs at least one device")]
    NoDevices,
    /// A device file (or its directory) could not be created or opened.
    #[error("{}: {source}", path.display())]
    Device { path: PathBuf, source: io::Error },
    #[error("cannot create the array: {0}")]
    Store(#[source] reo_store::Error),
}

/// A replay that could not open or go on.
#[derive(Debug, Error)]
#[non_exhaustive]
pub enum ReplayError {
    #[error(transparent)]
    Array(#[from] ArrayError),
    /// The cache configuration was refused.
    #[error(transparent)]
    CacheConfig(#[from] reo_cache::ConfigError),
    /// The cache did not open over the array.
    #[error(transparent)]
    CacheOpen(#[from] reo_cache::CacheError),
    /// The trace yielded an error instead of a request.
    #[error("{0}")]
    Trace(String),
    /// The cache failed request number `request` (`op`: get, put or fill).
    #[error("request {request}: {op}: {source}")]
    Request { request: u64, op: &'static str, source: reo_cache::WriteError },
    /// A failure point could not be applied.
    #[error("{point}: {source}")]
    Failure { point: FailurePoint, source: reo_cache::CacheError },
}

/// An experiment of `reo eval` that could not run or write its results.
#[derive(Debug, Error)]
#[non_exhaustive]
pub enum EvalError {
    #[error("unknown experiment {name:?} (expected one of {expected})")]
    UnknownExperiment { name: String, expected: String },
    /// The output directory or a result file (JSON, report, plot) could not be written.
    #[error("{}: {source}", path.display())]
    Io { path: PathBuf, source: io::Error },
    #[error(transparent)]
    Gen(#[from] GenError),
    #[error(transparent)]
    FailurePlan(#[from] FailurePlanError),
    /// A cache setting of an experiment's configuration was refused (redundancy, dedup,
    /// admission).
    #[error("{0}")]
    Config(String),
    /// The replay of configuration `name` did not open.
    #[error("{name}: {source}")]
    Open { name: String, source: ReplayError },
    /// A replay stopped on an error.
    #[error(transparent)]
    Replay(#[from] ReplayError),
}
