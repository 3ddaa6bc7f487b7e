//! Per-device I/O counters: every device the server opens (and every replacement) is wrapped in
//! [`CountedMedia`], which counts reads, writes, bytes, syncs and errors into that device's
//! [`DeviceIo`] (the store counts I/O for the whole array only), and times each call into a
//! latency histogram per kind (read, write, sync). `reo admin status` and `/metrics` show them
//! per device.

use std::io;
use std::sync::atomic::{AtomicU64, Ordering::Relaxed};
use std::sync::Arc;

use parking_lot::Mutex;
use prometheus_client::metrics::histogram::{exponential_buckets, Histogram};
use reo_media::Media;

/// The kinds of device call timed, in [`DeviceIo::latency`]'s order.
pub const CALLS: [&str; 3] = ["read", "write", "sync"];

/// A latency histogram of one kind of call: 50 µs to 3.3 s, ×4 per bucket.
fn latency_histogram() -> Histogram {
    Histogram::new(exponential_buckets(0.000_05, 4.0, 9))
}

/// One device's counters.
#[derive(Debug)]
pub struct DeviceIo {
    /// Read calls (failed ones included).
    pub reads: AtomicU64,
    /// Bytes asked for by those reads.
    pub read_bytes: AtomicU64,
    /// Write calls, vectored ones included (failed ones too).
    pub writes: AtomicU64,
    /// Bytes handed to those writes.
    pub write_bytes: AtomicU64,
    /// Sync calls.
    pub syncs: AtomicU64,
    /// Reads, writes and syncs that failed.
    pub errors: AtomicU64,
    /// Seconds per call, by kind ([`CALLS`]).
    latency: [Histogram; 3],
}

impl Default for DeviceIo {
    fn default() -> Self {
        DeviceIo {
            reads: AtomicU64::new(0),
            read_bytes: AtomicU64::new(0),
            writes: AtomicU64::new(0),
            write_bytes: AtomicU64::new(0),
            syncs: AtomicU64::new(0),
            errors: AtomicU64::new(0),
            latency: [latency_histogram(), latency_histogram(), latency_histogram()],
        }
    }
}

impl DeviceIo {
    /// `(reads, read_bytes, writes, write_bytes, syncs, errors)`.
    pub fn snapshot(&self) -> [u64; 6] {
        [&self.reads, &self.read_bytes, &self.writes, &self.write_bytes, &self.syncs, &self.errors]
            .map(|c| c.load(Relaxed))
    }

    /// The latency histograms, by kind ([`CALLS`]); clones share the counts.
    pub fn latency(&self) -> [Histogram; 3] {
        self.latency.clone()
    }
}

/// The names of [`DeviceIo::snapshot`]'s fields.
pub const FIELDS: [&str; 6] = ["reads", "read_bytes", "writes", "write_bytes", "syncs", "errors"];

/// A device whose I/O is counted.
pub struct CountedMedia {
    inner: Arc<dyn Media>,
    io: Arc<DeviceIo>,
}

impl CountedMedia {
    /// `inner`, its I/O counted into `io`.
    pub fn new(inner: Arc<dyn Media>, io: Arc<DeviceIo>) -> CountedMedia {
        CountedMedia { inner, io }
    }

    /// Runs one call of kind `kind` (an index into [`CALLS`]): timed, its failure counted.
    fn count<T>(&self, kind: usize, call: impl FnOnce() -> io::Result<T>) -> io::Result<T> {
        let t = std::time::Instant::now();
        let r = call();
        self.io.latency[kind].observe(t.elapsed().as_secs_f64());
        if r.is_err() {
            self.io.errors.fetch_add(1, Relaxed);
        }
        r
    }
}

impl Media for CountedMedia {
    fn len(&self) -> u64 {
        self.inner.len()
    }

    fn read_at(&self, buf: &mut [u8], offset: u64) -> io::Result<()> {
        self.io.reads.fetch_add(1, Relaxed);
        self.io.read_bytes.fetch_add(buf.len() as u64, Relaxed);
        self.count(0, || self.inner.read_at(buf, offset))
    }

    fn write_at(&self, buf: &[u8], offset: u64) -> io::Result<()> {
        self.io.writes.fetch_add(1, Relaxed);
        self.io.write_bytes.fetch_add(buf.len() as u64, Relaxed);
        self.count(1, || self.inner.write_at(buf, offset))
    }

    fn write_vectored_at(&self, parts: &[&[u8]], offset: u64) -> io::Result<()> {
        self.io.writes.fetch_add(1, Relaxed);
        self.io.write_bytes.fetch_add(parts.iter().map(|p| p.len() as u64).sum(), Relaxed);
        self.count(1, || self.inner.write_vectored_at(parts, offset))
    }

    fn vector_align(&self) -> usize {
        self.inner.vector_align()
    }

    fn sync(&self) -> io::Result<()> {
        self.io.syncs.fetch_add(1, Relaxed);
        self.count(2, || self.inner.sync())
    }

    fn stores_bytes(&self) -> bool {
        self.inner.stores_bytes()
    }

    fn describe(&self) -> String {
        self.inner.describe()
    }
}

/// The counters of every device slot; a replacement device starts a fresh set.
#[derive(Debug, Default)]
pub struct DeviceIoTable(Mutex<Vec<Arc<DeviceIo>>>);

impl DeviceIoTable {
    /// Wraps `media` as device `d`, with fresh counters.
    pub fn wrap(&self, d: usize, media: Arc<dyn Media>) -> Arc<dyn Media> {
        let io = Arc::new(DeviceIo::default());
        let mut t = self.0.lock();
        if t.len() <= d {
            t.resize_with(d + 1, Default::default);
        }
        t[d] = io.clone();
        Arc::new(CountedMedia::new(media, io))
    }

    /// Every device's counters, by device.
    pub fn snapshot(&self) -> Vec<[u64; 6]> {
        self.0.lock().iter().map(|io| io.snapshot()).collect()
    }

    /// Every device's latency histograms, by device.
    pub fn latency(&self) -> Vec<[Histogram; 3]> {
        self.0.lock().iter().map(|io| io.latency()).collect()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use reo_media::MemMedia;

    #[test]
    fn io_is_counted_per_device_and_replacements_start_afresh() {
        let t = DeviceIoTable::default();
        let a = t.wrap(0, Arc::new(MemMedia::new(1 << 16)));
        let b = t.wrap(1, Arc::new(MemMedia::new(1 << 16)));
        a.write_at(&[1; 512], 0).unwrap();
        let mut buf = [0u8; 512];
        a.read_at(&mut buf, 0).unwrap();
        assert!(b.read_at(&mut buf, 1 << 16).is_err());
        b.sync().unwrap();
        assert_eq!(t.snapshot(), vec![[1, 512, 1, 512, 0, 0], [1, 512, 0, 0, 1, 1]]);
        let _ = t.wrap(1, Arc::new(MemMedia::new(1 << 16)));
        assert_eq!(t.snapshot()[1], [0; 6]);
    }
}
