//! [`TraceError`]: what can go wrong opening, reading or writing a trace, always naming the file
//! (and, for a bad line or record, its number) so the message alone locates the problem.

use std::fmt;
use std::io;
use std::path::{Path, PathBuf};

/// An error reading or writing a trace.
#[derive(Debug)]
pub enum TraceError {
    /// The file could not be opened, read or written.
    Io {
        /// The trace file.
        path: PathBuf,
        /// What the file system (or decompressor) said.
        source: io::Error,
    },
    /// A line (text formats) or record (binary formats) that does not parse; `line` is 1-based.
    Parse {
        /// The trace file.
        path: PathBuf,
        /// 1-based line or record number.
        line: u64,
        /// What is wrong with it.
        msg: String,
    },
    /// The trace as a whole is unusable (e.g. a required header column is missing).
    Format {
        /// The trace file.
        path: PathBuf,
        /// What is wrong with it.
        msg: String,
    },
}

impl TraceError {
    pub(crate) fn io(path: &Path, source: io::Error) -> Self {
        TraceError::Io { path: path.to_path_buf(), source }
    }

    /// The 1-based line (or record) number of a parse error.
    pub fn line(&self) -> Option<u64> {
        match self {
            TraceError::Parse { line, .. } => Some(*line),
            _ => None,
        }
    }
}

impl fmt::Display for TraceError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            TraceError::Io { path, source } => write!(f, "{}: {source}", path.display()),
            TraceError::Parse { path, line, msg } => write!(f, "{}:{line}: {msg}", path.display()),
            TraceError::Format { path, msg } => write!(f, "{}: {msg}", path.display()),
        }
    }
}

impl std::error::Error for TraceError {
    fn source(&self) -> Option<&(dyn std::error::Error + 'static)> {
        match self {
            TraceError::Io { source, .. } => Some(source),
            _ => None,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn parse_error_names_file_and_line() {
        let e = TraceError::Parse { path: "trace.csv".into(), line: 17, msg: "bad op \"xx\"".into() };
        assert_eq!(e.to_string(), "trace.csv:17: bad op \"xx\"");
        assert_eq!(e.line(), Some(17));
    }
}
