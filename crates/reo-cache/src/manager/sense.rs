//! [`SenseCode`]: the engine's answers of the Reo paper's query interface, §IV.C.2 and Table III
//! (docs/REFERENCES.md §P1).

use serde::Serialize;

/// Sense codes of Table III.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
pub enum SenseCode {
    /// 0x00: the command is successful (the object is accessible).
    Success,
    /// −1: the command is unsuccessful (malformed, unknown object…).
    Unsuccessful,
    /// 0x63: data is corrupted (lost beyond its redundancy).
    Corrupted,
    /// 0x64: the cache is full (no evictable space for the request).
    CacheFull,
    /// 0x65: recovery starts (a device failed; degraded service, rebuild pending or running).
    RecoveryStarts,
    /// 0x66: recovery ends (every device healthy again since the last failure).
    RecoveryEnds,
    /// 0x67: the space allocated for redundancy is full.
    RedundancyFull,
}

impl SenseCode {
    /// The numeric code of Table III (0, −1, 0x63–0x67).
    pub fn code(self) -> i32 {
        match self {
            SenseCode::Success => 0,
            SenseCode::Unsuccessful => -1,
            SenseCode::Corrupted => 0x63,
            SenseCode::CacheFull => 0x64,
            SenseCode::RecoveryStarts => 0x65,
            SenseCode::RecoveryEnds => 0x66,
            SenseCode::RedundancyFull => 0x67,
        }
    }
}
