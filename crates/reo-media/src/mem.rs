//! [`MemMedia`]: a device whose bytes live in memory. Real bytes, no persistence beyond the
//! process: used by tests, and as the durable image under [`crate::FaultyMedia`].

use crate::{check_range, Media};
use parking_lot::RwLock;
use std::io;

/// Bytes are kept in segments with their own locks so that threads touching different parts of
/// the device do not contend.
const SEGMENT: usize = 1 << 20;

/// An in-memory device of fixed size.
pub struct MemMedia {
    len: u64,
    segments: Vec<RwLock<Vec<u8>>>,
}

impl MemMedia {
    /// A zero-filled device of `len` bytes.
    pub fn new(len: u64) -> Self {
        let n = (len as usize).div_ceil(SEGMENT);
        let segments = (0..n)
            .map(|i| {
                let size = SEGMENT.min(len as usize - i * SEGMENT);
                RwLock::new(vec![0u8; size])
            })
            .collect();
        MemMedia { len, segments }
    }

    fn for_each_piece(&self, offset: u64, len: usize, mut f: impl FnMut(usize, usize, usize, usize)) {
        // f(segment index, offset in segment, offset in caller buffer, piece length)
        let mut done = 0;
        while done < len {
            let pos = offset as usize + done;
            let (seg, off) = (pos / SEGMENT, pos % SEGMENT);
            let piece = (SEGMENT - off).min(len - done);
            f(seg, off, done, piece);
            done += piece;
        }
    }
}

impl Media for MemMedia {
    fn len(&self) -> u64 {
        self.len
    }

    fn read_at(&self, buf: &mut [u8], offset: u64) -> io::Result<()> {
        check_range(self.len, offset, buf.len())?;
        self.for_each_piece(offset, buf.len(), |seg, off, at, n| {
            let s = self.segments[seg].read();
            buf[at..at + n].copy_from_slice(&s[off..off + n]);
        });
        Ok(())
    }

    fn write_at(&self, buf: &[u8], offset: u64) -> io::Result<()> {
        check_range(self.len, offset, buf.len())?;
        self.for_each_piece(offset, buf.len(), |seg, off, at, n| {
            let mut s = self.segments[seg].write();
            s[off..off + n].copy_from_slice(&buf[at..at + n]);
        });
        Ok(())
    }

    fn sync(&self) -> io::Result<()> {
        Ok(())
    }

    fn describe(&self) -> String {
        format!("mem({} bytes)", self.len)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn write_read_across_segments() {
        let m = MemMedia::new(3 * SEGMENT as u64 + 100);
        let data: Vec<u8> = (0..SEGMENT + 5000).map(|i| (i % 251) as u8).collect();
        m.write_at(&data, SEGMENT as u64 - 77).unwrap();
        let mut back = vec![0u8; data.len()];
        m.read_at(&mut back, SEGMENT as u64 - 77).unwrap();
        assert_eq!(back, data);
    }

    #[test]
    fn out_of_range_is_an_error() {
        let m = MemMedia::new(8192);
        assert!(m.write_at(&[0u8; 10], 8190).is_err());
        assert!(m.read_at(&mut [0u8; 1], 8192).is_err());
    }
}
