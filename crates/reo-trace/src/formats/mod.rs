//! The per-format parsers behind [`crate::TraceReader`]: each turns one line (text formats) or
//! one record (oracleGeneral) into an `Expansion`; the field helpers they share
//! are in `fields`.

mod fields;
pub(crate) mod fiu;
pub(crate) mod kvcache;
pub(crate) mod msr;
pub(crate) mod native;
pub(crate) mod oracle;

pub(crate) use fields::{LineError, LineParser};

use crate::format::{Format, ReadOptions};

/// The parser of a text format (`None` for the binary oracleGeneral).
pub(crate) fn line_parser(format: Format, opts: &ReadOptions) -> Option<Box<dyn LineParser>> {
    match format {
        Format::Native => Some(Box::new(native::NativeParser::default())),
        Format::Msr => Some(Box::new(msr::MsrParser::new(opts.block_size))),
        Format::Fiu => Some(Box::new(fiu::FiuParser::new(opts.block_size))),
        Format::Kvcache => Some(Box::new(kvcache::KvcacheParser::default())),
        Format::Oracle => None,
    }
}
