//! The latency and bandwidth model: the simulator counts each request's device and backend I/O
//! exactly; this turns the counts into time, as the paper reports bandwidth and latency.
//!
//! A request's latency is its client transfer, plus the slowest device's share of the flash
//! reads (devices work in parallel), plus the backend fetch of what missed, plus for a
//! write-back put the slowest device's share of its writes. Fills after a miss, evictions, the
//! cleaner and the flusher run in the background and are not on a request's path. Requests are
//! replayed one at a time (one outstanding request, as a single client), so bandwidth = request
//! bytes / sum of latencies.
//!
//! Defaults follow the Reo paper's testbed (docs/REFERENCES.md §P1): five Intel 540s SATA SSDs
//! (560 MB/s read, 480 MB/s write), a 7,200 RPM hard disk as the backend store (8 ms per request,
//! 150 MB/s), a 10 Gbps network between client and cache.

use serde::Serialize;

/// One SSD's service time.
#[derive(Debug, Clone, Copy, PartialEq, Serialize)]
pub struct DeviceModel {
    /// Fixed cost of one read, microseconds.
    pub read_us: f64,
    /// Fixed cost of one write, microseconds.
    pub write_us: f64,
    /// Sequential read bandwidth, MB/s (10^6 bytes).
    pub read_mbps: f64,
    /// Sequential write bandwidth, MB/s.
    pub write_mbps: f64,
}

impl Default for DeviceModel {
    /// An Intel 540s-class SATA SSD.
    fn default() -> Self {
        DeviceModel { read_us: 80.0, write_us: 60.0, read_mbps: 560.0, write_mbps: 480.0 }
    }
}

/// The backend store's service time.
#[derive(Debug, Clone, Copy, PartialEq, Serialize)]
pub struct BackendModel {
    /// Fixed cost of one fetch (seek + rotation + request), milliseconds.
    pub latency_ms: f64,
    /// Transfer bandwidth, MB/s.
    pub mbps: f64,
}

impl Default for BackendModel {
    /// A 7,200 RPM hard disk.
    fn default() -> Self {
        BackendModel { latency_ms: 8.0, mbps: 150.0 }
    }
}

/// Devices, backend and the client link.
#[derive(Debug, Clone, Copy, PartialEq, Serialize)]
pub struct LatencyModel {
    /// Every SSD of the array (all alike).
    pub device: DeviceModel,
    /// The backend store behind the cache.
    pub backend: BackendModel,
    /// Client ↔ cache link, MB/s (10 Gbps = 1,250 MB/s).
    pub network_mbps: f64,
}

impl Default for LatencyModel {
    fn default() -> Self {
        LatencyModel { device: DeviceModel::default(), backend: BackendModel::default(), network_mbps: 1250.0 }
    }
}

/// One device's I/O during a request.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct DeviceIo {
    /// Read operations.
    pub reads: u64,
    /// Bytes read.
    pub read_bytes: u64,
    /// Write operations.
    pub writes: u64,
    /// Bytes written.
    pub write_bytes: u64,
}

impl DeviceIo {
    /// The I/O done between snapshot `earlier` and this one.
    pub fn since(&self, earlier: &DeviceIo) -> DeviceIo {
        DeviceIo {
            reads: self.reads - earlier.reads,
            read_bytes: self.read_bytes - earlier.read_bytes,
            writes: self.writes - earlier.writes,
            write_bytes: self.write_bytes - earlier.write_bytes,
        }
    }
}

impl LatencyModel {
    /// Seconds a device spends on `io`.
    pub fn device_secs(&self, io: &DeviceIo) -> f64 {
        let d = &self.device;
        io.reads as f64 * d.read_us * 1e-6
            + io.read_bytes as f64 / (d.read_mbps * 1e6)
            + io.writes as f64 * d.write_us * 1e-6
            + io.write_bytes as f64 / (d.write_mbps * 1e6)
    }

    /// Seconds of the journal commit an acknowledged dirty write waits for: one batch of a
    /// sector, written at the same offset of every device at once. The store's journal thread
    /// does that write whenever the batch falls due, so the replay does not count its device I/O
    /// on a request's path (see `Counted`) but this figure.
    pub fn commit_secs(&self) -> f64 {
        self.device_secs(&DeviceIo { reads: 0, read_bytes: 0, writes: 1, write_bytes: 4096 })
    }

    /// Seconds of `fetches` backend requests moving `bytes`.
    pub fn backend_secs(&self, fetches: u64, bytes: u64) -> f64 {
        fetches as f64 * self.backend.latency_ms * 1e-3 + bytes as f64 / (self.backend.mbps * 1e6)
    }

    /// Seconds to move `bytes` between client and cache.
    pub fn network_secs(&self, bytes: u64) -> f64 {
        bytes as f64 / (self.network_mbps * 1e6)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn times_add_up_from_the_documented_rates() {
        let m = LatencyModel::default();
        // 1 read of 560 MB: 80 µs + 1 s.
        let io = DeviceIo { reads: 1, read_bytes: 560_000_000, ..Default::default() };
        assert!((m.device_secs(&io) - 1.000_08).abs() < 1e-9);
        // 2 fetches of 150 MB in all: 16 ms + 1 s.
        assert!((m.backend_secs(2, 150_000_000) - 1.016).abs() < 1e-9);
        assert!((m.network_secs(1_250_000_000) - 1.0).abs() < 1e-9);
    }
}
