//! The simulator's errors: [`ArrayError`] (building the simulated or file-backed array) and
//! [`ReplayError`] (opening a replay, or a request or failure point it could not apply). Each
//! message names the device, request or failure point, as `reo replay` prints it.

use std::io;
use std::path::PathBuf;

use thiserror::Error;

use crate::failure_plan::FailurePoint;

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
    /// The cache configuration was refused, or the cache did not open over the array.
    #[error("{0}")]
    Cache(String),
    /// The trace yielded an error instead of a request.
    #[error("{0}")]
    Trace(String),
    /// The cache failed request number `request` (`op`: get, put or fill).
    #[error("request {request}: {op}: {message}")]
    Request { request: u64, op: &'static str, message: String },
    /// A failure point could not be applied.
    #[error("{point}: {message}")]
    Failure { point: FailurePoint, message: String },
}
