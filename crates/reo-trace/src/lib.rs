//! Traces for `reo replay`, `reo gen-trace` and `reo eval`: the [`Request`] every reader and
//! generator yields, streaming readers of the supported formats ([`open`], [`TraceReader`]),
//! writers ([`write_native`], [`write_oracle`], [`save`]), deterministic generators, and the
//! plots of the evaluation. Formats and generators are documented in `docs/TRACES.md`.

mod error;
mod expand;
mod format;
mod formats;
pub mod generate;
pub mod hash;
mod input;
pub mod output;
pub mod plot;
mod reader;
mod request;
mod stats;
mod write;

pub use error::TraceError;
pub use format::{Format, FormatError, ReadOptions};
pub use generate::{GenSpec, Workload};
pub use input::{decompress, Compression};
pub use reader::{open, TraceReader, MAX_LINE};
pub use request::{Op, Request};
pub use stats::TraceStats;
pub use write::{format_for, save, write_native, write_oracle};
