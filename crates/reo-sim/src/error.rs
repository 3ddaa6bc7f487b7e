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
    /// The array was configured with zero devices.
    #[error("the array needs at least one device")]
    NoDevices,
    /// A device file (or its directory) could not be created or opened.
    #[error("{}: {source}", path.display())]
    Device {
        /// The device file.
        path: PathBuf,
        /// What the file system said.
        source: io::Error,
    },
    /// The store refused to format or open over the devices.
    #[error("cannot create the array: {0}")]
    Store(#[source] reo_store::Error),
}

/// A replay that could not open or go on.
#[derive(Debug, Error)]
#[non_exhaustive]
pub enum ReplayError {
    /// The array could not be built.
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
    Request {
        /// 0-based number of the request in the trace.
        request: u64,
        /// `get`, `put` or `fill`.
        op: &'static str,
        /// The cache's error.
        source: reo_cache::WriteError,
    },
    /// A failure point could not be applied.
    #[error("{point}: {source}")]
    Failure {
        /// The failure point.
        point: FailurePoint,
        /// The cache's error failing or replacing the device.
        source: reo_cache::CacheError,
    },
}

/// An experiment of `reo eval` that could not run or write its results.
#[derive(Debug, Error)]
#[non_exhaustive]
pub enum EvalError {
    /// No experiment has this name.
    #[error("unknown experiment {name:?} (expected one of {expected})")]
    UnknownExperiment {
        /// The name asked for.
        name: String,
        /// The known names, comma-separated.
        expected: String,
    },
    /// The output directory or a result file (JSON, report, plot) could not be written.
    #[error("{}: {source}", path.display())]
    Io {
        /// The file or directory.
        path: PathBuf,
        /// What the file system said.
        source: io::Error,
    },
    /// The experiment's trace generator refused its parameters.
    #[error(transparent)]
    Gen(#[from] GenError),
    /// The experiment's failure points were refused.
    #[error(transparent)]
    FailurePlan(#[from] FailurePlanError),
    /// A cache setting of an experiment's configuration was refused (redundancy, dedup,
    /// admission).
    #[error("{0}")]
    Config(String),
    /// The replay of configuration `name` did not open.
    #[error("{name}: {source}")]
    Open {
        /// The configuration's name (as in the results).
        name: String,
        /// Why the replay did not open.
        source: ReplayError,
    },
    /// A replay stopped on an error.
    #[error(transparent)]
    Replay(#[from] ReplayError),
}
