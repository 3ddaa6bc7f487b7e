//! [`Capacity`]: what a replay's cache size counts — the flash the cache fills with data and
//! redundancy (what an operator buys), or the user bytes the replacement policy holds (what a
//! policy study compares against a reference simulator such as libCacheSim, which has no flash).

use std::fmt;
use std::str::FromStr;

/// What [`crate::ArraySpec::cache_bytes`] counts.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub enum Capacity {
    /// `flash`: device bytes for cached data and its redundancy, chunk trailers and padding
    /// included; the policy's share follows from the objects' footprint
    /// ([`crate::ReplayConfig::policy_capacity`]).
    #[default]
    Flash,
    /// `logical`: user bytes only. The policy holds exactly this many bytes, over flash sized
    /// [`LOGICAL_FLASH_FACTOR`] times larger so that the store never fills before the policy does
    /// (for objects of 512 bytes or more): the hit ratios are the policy's alone.
    Logical,
}

/// Flash per user byte under [`Capacity::Logical`]: the worst footprint the sizing must cover is
/// a 512-byte object in a 4 KiB sector (8×), with the cleaner's headroom on top; simulated
/// devices keep no bytes, so the excess costs nothing.
pub const LOGICAL_FLASH_FACTOR: u64 = 10;

impl Capacity {
    /// The name `--capacity` takes.
    pub fn as_str(self) -> &'static str {
        match self {
            Capacity::Flash => "flash",
            Capacity::Logical => "logical",
        }
    }
}

impl fmt::Display for Capacity {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.pad(self.as_str())
    }
}

impl FromStr for Capacity {
    type Err = String;
    fn from_str(s: &str) -> Result<Self, String> {
        match s {
            "flash" => Ok(Capacity::Flash),
            "logical" => Ok(Capacity::Logical),
            _ => Err(format!("unknown capacity {s:?} (expected flash or logical)")),
        }
    }
}
