//! [`TraceReader`]: a streaming reader of any supported [`Format`], plain or compressed, yielding
//! [`Request`]s in constant memory (one line, or one record's lazy expansion, at a time).
//!
//! A bad line stops the reader with an error naming the file and line (`trace.csv:17: bad op
//! "xx"`), or, with [`ReadOptions::skip_bad`], is skipped and counted in
//! [`TraceReader::skipped`]. I/O errors and unusable headers always stop it.

use crate::error::TraceError;
use crate::expand::Expansion;
use crate::format::{Format, ReadOptions};
use crate::formats::oracle::{OracleParser, RECORD};
use crate::formats::{line_parser, LineError, LineParser};
use crate::input::{decompress, Compression};
use crate::request::Request;
use std::fs::File;
use std::io::{self, BufRead, Read};
use std::path::{Path, PathBuf};

/// Longest line accepted; a longer one is a bad line (so memory stays bounded).
pub const MAX_LINE: usize = 1 << 20;

enum Parser {
    Lines(Box<dyn LineParser>),
    Oracle(OracleParser),
}

/// Streams the requests of one trace file; see the module doc.
pub struct TraceReader {
    path: PathBuf,
    input: Box<dyn BufRead>,
    parser: Parser,
    skip_bad: bool,
    compression: Compression,
    line: u64,
    buf: Vec<u8>,
    pending: Option<Expansion>,
    skipped: u64,
    done: bool,
}

/// Opens `path` (plain, gzip or zstd, by magic bytes) as a trace of `format`.
pub fn open(path: &Path, format: Format, opts: &ReadOptions) -> Result<TraceReader, TraceError> {
    let file = File::open(path).map_err(|e| TraceError::io(path, e))?;
    TraceReader::from_reader(path, file, format, opts)
}

impl TraceReader {
    /// Reads a trace from any byte stream; `name` is what error messages call it.
    pub fn from_reader(
        name: impl Into<PathBuf>,
        input: impl Read + 'static,
        format: Format,
        opts: &ReadOptions,
    ) -> Result<TraceReader, TraceError> {
        let path = name.into();
        if format.is_block_trace() && opts.block_size == 0 {
            return Err(TraceError::Format { path, msg: "block size must be positive".into() });
        }
        let (input, compression) = decompress(input).map_err(|e| TraceError::io(&path, e))?;
        let parser = match line_parser(format, opts) {
            Some(p) => Parser::Lines(p),
            None => Parser::Oracle(OracleParser::default()),
        };
        Ok(TraceReader {
            path,
            input,
            parser,
            skip_bad: opts.skip_bad,
            compression,
            line: 0,
            buf: Vec::new(),
            pending: None,
            skipped: 0,
            done: false,
        })
    }

    /// Bad lines (or records) skipped so far (only with [`ReadOptions::skip_bad`]).
    pub fn skipped(&self) -> u64 {
        self.skipped
    }

    /// Lines (or records) read so far.
    pub fn lines_read(&self) -> u64 {
        self.line
    }

    /// How the input was compressed.
    pub fn compression(&self) -> Compression {
        self.compression
    }

    /// The next record's expansion, `Ok(None)` at end of trace; `Err((e, skippable))`.
    fn next_record(&mut self) -> Result<Option<Expansion>, (TraceError, bool)> {
        loop {
            match &mut self.parser {
                Parser::Oracle(p) => {
                    let mut rec = [0u8; RECORD];
                    let n = read_full(&mut self.input, &mut rec).map_err(|e| (TraceError::io(&self.path, e), false))?;
                    if n == 0 {
                        return Ok(None);
                    }
                    self.line += 1;
                    if n < RECORD {
                        return Err((
                            bad(&self.path, self.line, format!("truncated record ({n} of {RECORD} bytes)")),
                            true,
                        ));
                    }
                    return Ok(Some(Expansion::one(p.parse(&rec))));
                }
                Parser::Lines(_) => {
                    self.buf.clear();
                    let n = (&mut self.input)
                        .take(MAX_LINE as u64)
                        .read_until(b'\n', &mut self.buf)
                        .map_err(|e| (TraceError::io(&self.path, e), false))?;
                    if n == 0 {
                        return Ok(None);
                    }
                    self.line += 1;
                    if n == MAX_LINE && self.buf.last() != Some(&b'\n') {
                        discard_line(&mut self.input).map_err(|e| (TraceError::io(&self.path, e), false))?;
                        return Err((bad(&self.path, self.line, format!("line longer than {MAX_LINE} bytes")), true));
                    }
                    let text = match std::str::from_utf8(&self.buf) {
                        Ok(t) => t.trim_end_matches(['\n', '\r']),
                        Err(_) => return Err((bad(&self.path, self.line, "line is not UTF-8".into()), true)),
                    };
                    let Parser::Lines(p) = &mut self.parser else { unreachable!("matched above") };
                    match p.parse_line(text) {
                        Ok(Some(e)) => return Ok(Some(e)),
                        Ok(None) => continue,
                        Err(LineError::Bad(msg)) => return Err((bad(&self.path, self.line, msg), true)),
                        Err(LineError::Fatal(msg)) => return Err((bad(&self.path, self.line, msg), false)),
                    }
                }
            }
        }
    }
}

fn bad(path: &Path, line: u64, msg: String) -> TraceError {
    TraceError::Parse { path: path.to_path_buf(), line, msg }
}

/// Fills `buf` as far as the stream allows; returns the bytes read.
fn read_full(r: &mut dyn BufRead, buf: &mut [u8]) -> io::Result<usize> {
    let mut n = 0;
    while n < buf.len() {
        match r.read(&mut buf[n..]) {
            Ok(0) => break,
            Ok(k) => n += k,
            Err(e) if e.kind() == io::ErrorKind::Interrupted => {}
            Err(e) => return Err(e),
        }
    }
    Ok(n)
}

/// Consumes input up to and including the next newline.
fn discard_line(r: &mut dyn BufRead) -> io::Result<()> {
    loop {
        let buf = r.fill_buf()?;
        if buf.is_empty() {
            return Ok(());
        }
        if let Some(i) = buf.iter().position(|&b| b == b'\n') {
            r.consume(i + 1);
            return Ok(());
        }
        let len = buf.len();
        r.consume(len);
    }
}

impl Iterator for TraceReader {
    type Item = Result<Request, TraceError>;

    fn next(&mut self) -> Option<Self::Item> {
        loop {
            if let Some(req) = self.pending.as_mut().and_then(Iterator::next) {
                return Some(Ok(req));
            }
            self.pending = None;
            if self.done {
                return None;
            }
            match self.next_record() {
                Ok(Some(e)) => self.pending = Some(e),
                Ok(None) => self.done = true,
                Err((_, true)) if self.skip_bad => self.skipped += 1,
                Err((e, _)) => {
                    self.done = true;
                    return Some(Err(e));
                }
            }
        }
    }
}

#[cfg(test)]
#[path = "reader_tests.rs"]
mod tests;
