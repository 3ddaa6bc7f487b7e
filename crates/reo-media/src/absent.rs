//! [`AbsentMedia`]: a configured device that is not there — its file, or the target of the link
//! that names it, is missing (a replacement on a disk that is gone). It has the size the device
//! should have and fails every I/O with the reason, so a store opens it as a failed member
//! (degraded service, a replacement later) instead of refusing to open at all.

use crate::Media;
use std::io;

/// A missing device of `len` bytes: every read, write and sync fails.
pub struct AbsentMedia {
    len: u64,
    why: String,
}

impl AbsentMedia {
    /// A stand-in for the device `why` describes (e.g. "dev1.img: link to /mnt/x.img, missing").
    pub fn new(len: u64, why: impl Into<String>) -> AbsentMedia {
        AbsentMedia { len, why: why.into() }
    }

    fn error(&self) -> io::Error {
        io::Error::new(io::ErrorKind::NotFound, format!("device absent: {}", self.why))
    }
}

impl Media for AbsentMedia {
    fn len(&self) -> u64 {
        self.len
    }

    fn read_at(&self, _buf: &mut [u8], _offset: u64) -> io::Result<()> {
        Err(self.error())
    }

    fn write_at(&self, _buf: &[u8], _offset: u64) -> io::Result<()> {
        Err(self.error())
    }

    fn sync(&self) -> io::Result<()> {
        Err(self.error())
    }

    fn describe(&self) -> String {
        format!("absent ({})", self.why)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_io_fails_with_the_reason() {
        let m = AbsentMedia::new(1 << 20, "dev1.img: link to /gone.img, missing");
        assert_eq!(m.len(), 1 << 20);
        assert!(m.stores_bytes(), "stands in for a byte-storing device");
        let e = m.read_at(&mut [0u8; 8], 0).unwrap_err().to_string();
        assert!(e.contains("/gone.img"), "{e}");
        assert!(m.write_at(&[0u8; 8], 0).is_err() && m.sync().is_err());
    }
}
