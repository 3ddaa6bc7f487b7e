//! Reo's simulator: [`Replay`] drives the very cache manager and store that `reo serve` runs, over
//! simulated devices that keep no bytes but count every read and write (or over real device
//! files), request by request from a trace; [`model`] turns the counted I/O into latency and
//! bandwidth; [`ReplayReport`] is what `reo replay` prints. `eval` runs the named experiments.
//!
//! Experiments outside the manager: [`FailurePlan`] (failure points of `reo replay` and `eval`),
//! [`miss_ratio()`] (the policies' miss ratios on a key trace) and [`dedup_sim`] (the dedup
//! policies' hit ratios and flash writes on dedup traces).

mod array;
mod capacity;
mod content;
pub mod dedup_sim;
mod error;
pub mod eval;
mod failure_plan;
mod flusher;
mod histogram;
pub mod miss_ratio;
pub mod model;
mod replay;
mod report;

pub use array::{ArraySpec, MediaKind};
pub use capacity::{Capacity, LOGICAL_FLASH_FACTOR};
pub use error::{ArrayError, EvalError, ReplayError};
pub use failure_plan::{FailureAction, FailurePlan, FailurePlanError, FailurePoint};
pub use flusher::FlushPace;
pub use miss_ratio::miss_ratio;
pub use model::{BackendModel, DeviceModel, LatencyModel};
pub use replay::{Replay, ReplayConfig};
pub use report::{ReplayReport, Window};
