//! Reo's simulator: [`Replay`] drives the very cache manager and store that `reo serve` runs, over
//! simulated devices that keep no bytes but count every read and write (or over real device
//! files), request by request from a trace; [`model`] turns the counted I/O into latency and
//! bandwidth; [`ReplayReport`] is what `reo replay` prints. `eval` runs the named experiments.

mod array;
mod content;
pub mod eval;
mod flusher;
mod histogram;
pub mod model;
mod replay;
mod report;

pub use array::{ArraySpec, MediaKind};
pub use model::{BackendModel, DeviceModel, LatencyModel};
pub use replay::{Replay, ReplayConfig};
pub use report::{ReplayReport, Window};
