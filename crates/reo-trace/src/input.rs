//! Opening a trace's bytes: plain, gzip or zstd, detected by the magic bytes at the start of the
//! stream (never by the file name), decompressed as a stream so memory stays constant.

use ruzstd::decoding::FrameDecoder;
use std::io::{self, BufRead, BufReader, Read};

const GZIP_MAGIC: [u8; 2] = [0x1f, 0x8b];
const ZSTD_MAGIC: [u8; 4] = [0x28, 0xb5, 0x2f, 0xfd];

/// How a stream is compressed.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Compression {
    /// Not compressed.
    Plain,
    /// gzip (RFC 1952).
    Gzip,
    /// Zstandard frames.
    Zstd,
}

/// Wraps `input` in the decompressor its first bytes call for.
pub fn decompress(mut input: impl Read + 'static) -> io::Result<(Box<dyn BufRead>, Compression)> {
    let mut head = [0u8; 4];
    let mut n = 0;
    while n < head.len() {
        match input.read(&mut head[n..]) {
            Ok(0) => break,
            Ok(k) => n += k,
            Err(e) if e.kind() == io::ErrorKind::Interrupted => {}
            Err(e) => return Err(e),
        }
    }
    let head = &head[..n];
    let compression = if head.starts_with(&GZIP_MAGIC) {
        Compression::Gzip
    } else if head.starts_with(&ZSTD_MAGIC) {
        Compression::Zstd
    } else {
        Compression::Plain
    };
    let input = BufReader::with_capacity(64 * 1024, io::Cursor::new(head.to_vec()).chain(input));
    let reader: Box<dyn BufRead> = match compression {
        Compression::Plain => Box::new(input),
        Compression::Gzip => Box::new(BufReader::with_capacity(64 * 1024, flate2::bufread::MultiGzDecoder::new(input))),
        Compression::Zstd => {
            let zst = ZstdReader { source: input, frame: FrameDecoder::new(), in_frame: false };
            Box::new(BufReader::with_capacity(64 * 1024, zst))
        }
    };
    Ok((reader, compression))
}

/// A zstd stream of one or more concatenated frames (as `zstd`, `pzstd` and our writer emit).
struct ZstdReader<R: BufRead> {
    source: R,
    frame: FrameDecoder,
    in_frame: bool,
}

impl<R: BufRead> Read for ZstdReader<R> {
    fn read(&mut self, buf: &mut [u8]) -> io::Result<usize> {
        loop {
            if !self.in_frame {
                if self.source.fill_buf()?.is_empty() {
                    return Ok(0);
                }
                self.frame.reset(&mut self.source).map_err(io::Error::other)?;
                self.in_frame = true;
            }
            while self.frame.can_collect() == 0 && !self.frame.is_finished() {
                self.frame
                    .decode_blocks(&mut self.source, ruzstd::decoding::BlockDecodingStrategy::UptoBlocks(1))
                    .map_err(io::Error::other)?;
            }
            let n = self.frame.read(buf)?;
            if n > 0 || buf.is_empty() {
                return Ok(n);
            }
            if self.frame.is_finished() && self.frame.can_collect() == 0 {
                self.in_frame = false;
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::io::Write;

    fn read_all(bytes: Vec<u8>) -> (String, Compression) {
        let (mut r, c) = decompress(io::Cursor::new(bytes)).unwrap();
        let mut s = String::new();
        r.read_to_string(&mut s).unwrap();
        (s, c)
    }

    #[test]
    fn plain_passes_through() {
        assert_eq!(read_all(b"hello\n".to_vec()), ("hello\n".to_string(), Compression::Plain));
        assert_eq!(read_all(Vec::new()), (String::new(), Compression::Plain));
    }

    #[test]
    fn gzip_multi_member_is_detected_and_decoded() {
        let mut out = Vec::new();
        for part in ["a,b\n", "c,d\n"] {
            let mut gz = flate2::write::GzEncoder::new(Vec::new(), flate2::Compression::fast());
            gz.write_all(part.as_bytes()).unwrap();
            out.extend(gz.finish().unwrap());
        }
        assert_eq!(read_all(out), ("a,b\nc,d\n".to_string(), Compression::Gzip));
    }

    #[test]
    fn zstd_multi_frame_is_detected_and_decoded() {
        let mut out = Vec::new();
        for part in ["first frame\n", "second frame\n"] {
            out.extend(ruzstd::encoding::compress_to_vec(part.as_bytes(), ruzstd::encoding::CompressionLevel::Fastest));
        }
        assert_eq!(read_all(out), ("first frame\nsecond frame\n".to_string(), Compression::Zstd));
    }

    #[test]
    fn corrupt_zstd_is_an_error_not_a_panic() {
        let mut bytes = ZSTD_MAGIC.to_vec();
        bytes.extend([0xff; 16]);
        let (mut r, _) = decompress(io::Cursor::new(bytes)).unwrap();
        assert!(r.read_to_end(&mut Vec::new()).is_err());
    }
}
