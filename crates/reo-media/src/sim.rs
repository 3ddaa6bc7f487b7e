//! [`SimMedia`]: a device that stores no bytes but counts every read, write and sync exactly
//! ([`MediaStats`]); the simulator's device. Counters are lock-free atomics.

use crate::{check_range, Media};
use std::io;
use std::sync::atomic::{AtomicU64, Ordering::Relaxed};

/// Operation counts of a [`SimMedia`]. Only successful operations are counted.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct MediaStats {
    /// Number of reads.
    pub reads: u64,
    /// Bytes read.
    pub read_bytes: u64,
    /// Number of writes.
    pub writes: u64,
    /// Bytes written.
    pub write_bytes: u64,
    /// Number of syncs.
    pub syncs: u64,
}

/// A byte-less device of fixed size: writes are discarded, reads return zeros, everything is
/// counted.
#[derive(Debug, Default)]
pub struct SimMedia {
    len: u64,
    reads: AtomicU64,
    read_bytes: AtomicU64,
    writes: AtomicU64,
    write_bytes: AtomicU64,
    syncs: AtomicU64,
}

impl SimMedia {
    /// A simulated device of `len` bytes.
    pub fn new(len: u64) -> Self {
        SimMedia { len, ..Default::default() }
    }

    /// The counts so far. Each counter is exact; a snapshot taken while other threads issue I/O
    /// may mix counters from slightly different instants.
    pub fn stats(&self) -> MediaStats {
        MediaStats {
            reads: self.reads.load(Relaxed),
            read_bytes: self.read_bytes.load(Relaxed),
            writes: self.writes.load(Relaxed),
            write_bytes: self.write_bytes.load(Relaxed),
            syncs: self.syncs.load(Relaxed),
        }
    }

    /// Sets every counter back to zero.
    pub fn reset_stats(&self) {
        for c in [&self.reads, &self.read_bytes, &self.writes, &self.write_bytes, &self.syncs] {
            c.store(0, Relaxed);
        }
    }
}

impl Media for SimMedia {
    fn len(&self) -> u64 {
        self.len
    }

    fn read_at(&self, buf: &mut [u8], offset: u64) -> io::Result<()> {
        check_range(self.len, offset, buf.len())?;
        buf.fill(0);
        self.reads.fetch_add(1, Relaxed);
        self.read_bytes.fetch_add(buf.len() as u64, Relaxed);
        Ok(())
    }

    fn write_at(&self, buf: &[u8], offset: u64) -> io::Result<()> {
        check_range(self.len, offset, buf.len())?;
        self.writes.fetch_add(1, Relaxed);
        self.write_bytes.fetch_add(buf.len() as u64, Relaxed);
        Ok(())
    }

    fn sync(&self) -> io::Result<()> {
        self.syncs.fetch_add(1, Relaxed);
        Ok(())
    }

    fn stores_bytes(&self) -> bool {
        false
    }

    fn read_discard(&self, len: usize, offset: u64) -> io::Result<()> {
        check_range(self.len, offset, len)?;
        self.reads.fetch_add(1, Relaxed);
        self.read_bytes.fetch_add(len as u64, Relaxed);
        Ok(())
    }

    fn write_zeros(&self, len: usize, offset: u64) -> io::Result<()> {
        check_range(self.len, offset, len)?;
        self.writes.fetch_add(1, Relaxed);
        self.write_bytes.fetch_add(len as u64, Relaxed);
        Ok(())
    }

    fn describe(&self) -> String {
        format!("sim({} bytes)", self.len)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn counts_exactly_and_skips_failed_ops() {
        let m = SimMedia::new(1 << 20);
        assert!(!m.stores_bytes());
        assert_eq!(m.len(), 1 << 20);
        m.write_at(&[7u8; 4096], 0).unwrap();
        m.write_at(&[7u8; 100], 8192).unwrap();
        let mut buf = vec![0xAAu8; 3000];
        m.read_at(&mut buf, 0).unwrap();
        assert!(buf.iter().all(|&b| b == 0), "reads return zeros");
        m.sync().unwrap();
        m.sync().unwrap();
        // Out of range: errors, not counted.
        assert!(m.write_at(&[0u8; 2], (1 << 20) - 1).is_err());
        assert!(m.read_at(&mut buf, 1 << 20).is_err());
        assert!(m.read_at(&mut [0u8; 1], u64::MAX).is_err());
        let want = MediaStats { reads: 1, read_bytes: 3000, writes: 2, write_bytes: 4196, syncs: 2 };
        assert_eq!(m.stats(), want);
        m.reset_stats();
        assert_eq!(m.stats(), MediaStats::default());
        m.read_at(&mut [0u8; 5], 10).unwrap();
        assert_eq!(m.stats().reads, 1);
        assert_eq!(m.stats().read_bytes, 5);
    }

    #[test]
    fn exact_under_concurrency() {
        let m = SimMedia::new(1 << 30);
        std::thread::scope(|s| {
            for t in 0..4u64 {
                let m = &m;
                s.spawn(move || {
                    for i in 0..1000u64 {
                        let len = 1 + (t * 1000 + i) as usize % 512;
                        m.write_at(&vec![1u8; len], i * 4096).unwrap();
                    }
                    m.sync().unwrap();
                });
            }
        });
        let want_bytes: u64 = (0..4000u64).map(|k| 1 + k % 512).sum();
        let s = m.stats();
        assert_eq!(s.writes, 4000);
        assert_eq!(s.write_bytes, want_bytes);
        assert_eq!(s.syncs, 4);
        assert_eq!((s.reads, s.read_bytes), (0, 0));
    }
}
