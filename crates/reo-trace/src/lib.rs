//! Traces for `reo replay`, `reo gen-trace` and `reo eval`: the [`Request`] every reader and
//! generator yields, streaming readers of the supported formats, deterministic generators, and
//! the plots of the evaluation.

mod request;

pub use request::{Op, Request};
