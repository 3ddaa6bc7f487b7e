//! [`Format`]: the trace formats the readers understand, by name, and [`ReadOptions`]: how a
//! trace is read (block size for block traces, skip or stop at bad lines).

use std::fmt;
use std::str::FromStr;

use thiserror::Error;

/// A supported trace format; see `docs/TRACES.md` for each one's mapping to [`crate::Request`].
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Format {
    /// Reo's own CSV `time_ns,op,key,offset,size[,obj_size][,fingerprint]`.
    Native,
    /// MSR Cambridge block CSV `Timestamp,Hostname,DiskNumber,Type,Offset,Size,ResponseTime`.
    Msr,
    /// FIU IODedup block trace `ts pid process lba nblocks R/W major minor md5`.
    Fiu,
    /// libCacheSim oracleGeneral binary: 24-byte little-endian records.
    Oracle,
    /// CacheLib kvcache CSV `key,op,size,op_count,key_size[,…]` with a header.
    Kvcache,
}

impl Format {
    /// Every format, in the order help texts list them.
    pub const ALL: [Format; 5] = [Format::Native, Format::Msr, Format::Fiu, Format::Oracle, Format::Kvcache];

    /// The format's name on the command line (`--format`).
    pub fn name(self) -> &'static str {
        match self {
            Format::Native => "native",
            Format::Msr => "msr",
            Format::Fiu => "fiu",
            Format::Oracle => "oracle",
            Format::Kvcache => "kvcache",
        }
    }

    /// Whether the format addresses disk blocks (cut into [`ReadOptions::block_size`] objects).
    pub fn is_block_trace(self) -> bool {
        matches!(self, Format::Msr | Format::Fiu)
    }
}

impl fmt::Display for Format {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.name())
    }
}

impl FromStr for Format {
    type Err = FormatError;

    fn from_str(s: &str) -> Result<Self, FormatError> {
        let lower = s.to_ascii_lowercase();
        let alias = match lower.as_str() {
            "csv" | "reo" => "native",
            "oraclegeneral" | "oracle-general" => "oracle",
            "iodedup" => "fiu",
            other => other,
        };
        Format::ALL.into_iter().find(|f| f.name() == alias).ok_or_else(|| {
            let names: Vec<_> = Format::ALL.iter().map(|f| f.name()).collect();
            FormatError::Unknown { name: s.into(), expected: names.join(", ") }
        })
    }
}

/// A trace format name that is not one of [`Format::ALL`] (nor an alias).
#[derive(Debug, Clone, PartialEq, Eq, Error)]
#[non_exhaustive]
pub enum FormatError {
    /// No format has this name.
    #[error("unknown trace format {name:?} (expected one of {expected})")]
    Unknown {
        /// The name given.
        name: String,
        /// The known names, comma-separated.
        expected: String,
    },
}

/// How a trace is read.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct ReadOptions {
    /// Block traces (MSR, FIU) are cut into blocks of this many bytes, one object each.
    pub block_size: u64,
    /// Skip (and count) bad lines instead of stopping at the first with an error.
    pub skip_bad: bool,
}

impl Default for ReadOptions {
    fn default() -> Self {
        ReadOptions { block_size: 4096, skip_bad: false }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names_roundtrip_and_unknown_is_rejected() {
        for f in Format::ALL {
            assert_eq!(f.name().parse::<Format>().unwrap(), f);
            assert_eq!(f.to_string().to_uppercase().parse::<Format>().unwrap(), f);
        }
        assert_eq!("oracleGeneral".parse::<Format>().unwrap(), Format::Oracle);
        let e = "twitter".parse::<Format>().unwrap_err().to_string();
        assert!(e.contains("native, msr, fiu, oracle, kvcache"), "{e}");
    }
}
