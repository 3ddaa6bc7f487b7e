//! The gateway's clock: nanoseconds since the epoch, as the backend and the pending records
//! stamp objects.

/// Now, in nanoseconds since the Unix epoch.
pub(crate) fn now_ns() -> u64 {
    crate::backend::local::now_ns()
}
