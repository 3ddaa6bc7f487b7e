//! Writing a trace's bytes: plain, gzip or zstd, chosen by the output file's extension
//! (`.gz`, `.zst`/`.zstd`, anything else plain). zstd output is a sequence of independent frames
//! of at most [`ZSTD_FRAME`] input bytes each, which any zstd decoder (and ours) reads as one
//! stream; memory stays bounded by one frame.

use crate::input::Compression;
use std::fs::File;
use std::io::{self, BufWriter, Write};
use std::path::Path;

/// Uncompressed bytes per zstd frame.
pub const ZSTD_FRAME: usize = 1 << 20;

/// The compression an output path's extension asks for.
pub fn compression_for(path: &Path) -> Compression {
    match path.extension().and_then(|e| e.to_str()) {
        Some("gz") => Compression::Gzip,
        Some("zst" | "zstd") => Compression::Zstd,
        _ => Compression::Plain,
    }
}

/// A compressing writer; call [`Output::finish`] to write the trailer and flush.
pub enum Output<W: Write> {
    /// Bytes written as they are.
    Plain(W),
    /// gzip at the default level.
    Gzip(flate2::write::GzEncoder<W>),
    /// Zstandard, in frames of buffered bytes.
    Zstd(ZstdWriter<W>),
}

impl<W: Write> Output<W> {
    /// A writer into `inner` compressing with `compression`.
    pub fn new(inner: W, compression: Compression) -> Self {
        match compression {
            Compression::Plain => Output::Plain(inner),
            Compression::Gzip => Output::Gzip(flate2::write::GzEncoder::new(inner, flate2::Compression::default())),
            Compression::Zstd => Output::Zstd(ZstdWriter { inner, pending: Vec::with_capacity(ZSTD_FRAME) }),
        }
    }

    /// Writes what is buffered and the compression trailer, flushes, and returns the inner writer.
    pub fn finish(self) -> io::Result<W> {
        let mut inner = match self {
            Output::Plain(w) => w,
            Output::Gzip(gz) => gz.finish()?,
            Output::Zstd(mut z) => {
                z.emit_frame()?;
                z.inner
            }
        };
        inner.flush()?;
        Ok(inner)
    }
}

/// Creates `path` (truncating it) compressed as its extension says.
pub fn create(path: &Path) -> io::Result<Output<BufWriter<File>>> {
    let file = BufWriter::with_capacity(256 * 1024, File::create(path)?);
    Ok(Output::new(file, compression_for(path)))
}

impl<W: Write> Write for Output<W> {
    fn write(&mut self, buf: &[u8]) -> io::Result<usize> {
        match self {
            Output::Plain(w) => w.write(buf),
            Output::Gzip(w) => w.write(buf),
            Output::Zstd(w) => w.write(buf),
        }
    }

    fn flush(&mut self) -> io::Result<()> {
        match self {
            Output::Plain(w) => w.flush(),
            Output::Gzip(w) => w.flush(),
            Output::Zstd(w) => w.flush(),
        }
    }
}

/// Buffers up to [`ZSTD_FRAME`] bytes and writes each full buffer as one zstd frame.
pub struct ZstdWriter<W: Write> {
    inner: W,
    pending: Vec<u8>,
}

impl<W: Write> ZstdWriter<W> {
    fn emit_frame(&mut self) -> io::Result<()> {
        if self.pending.is_empty() {
            return Ok(());
        }
        let frame = ruzstd::encoding::compress_to_vec(&self.pending[..], ruzstd::encoding::CompressionLevel::Fastest);
        self.pending.clear();
        self.inner.write_all(&frame)
    }
}

impl<W: Write> Write for ZstdWriter<W> {
    fn write(&mut self, buf: &[u8]) -> io::Result<usize> {
        let n = buf.len().min(ZSTD_FRAME - self.pending.len());
        self.pending.extend_from_slice(&buf[..n]);
        if self.pending.len() == ZSTD_FRAME {
            self.emit_frame()?;
        }
        Ok(n)
    }

    /// Flushes only the inner writer: cutting a frame at every flush would hurt the ratio.
    fn flush(&mut self) -> io::Result<()> {
        self.inner.flush()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::io::Read;

    fn roundtrip(compression: Compression, data: &[u8]) {
        let mut out = Output::new(Vec::new(), compression);
        out.write_all(data).unwrap();
        let bytes = out.finish().unwrap();
        let (mut r, detected) = crate::input::decompress(io::Cursor::new(bytes)).unwrap();
        // An empty zstd stream has no frame, so it reads back as an empty plain file.
        if !data.is_empty() {
            assert_eq!(detected, compression);
        }
        let mut back = Vec::new();
        r.read_to_end(&mut back).unwrap();
        assert_eq!(back, data);
    }

    #[test]
    fn every_compression_roundtrips_through_the_reader() {
        let data: Vec<u8> = (0..3 * ZSTD_FRAME + 17).map(|i| (i % 251) as u8 ^ (i / 4096) as u8).collect();
        for c in [Compression::Plain, Compression::Gzip, Compression::Zstd] {
            roundtrip(c, b"");
            roundtrip(c, b"0,get,1,0,10\n");
            roundtrip(c, &data);
        }
    }

    #[test]
    fn extension_picks_compression() {
        assert_eq!(compression_for(Path::new("t.csv.gz")), Compression::Gzip);
        assert_eq!(compression_for(Path::new("t.csv.zst")), Compression::Zstd);
        assert_eq!(compression_for(Path::new("t.csv")), Compression::Plain);
        assert_eq!(compression_for(Path::new("t.oracle")), Compression::Plain);
    }
}
