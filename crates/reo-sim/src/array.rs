//! The simulated (or real) device array of a replay: sizing devices so that the flash holds
//! the configured cache size, and counting every device's I/O for the latency model.
//!
//! Sizing: the cache size is the flash the cache may fill with data *and* redundancy (as the Reo
//! paper's "cache size = x % of the data set", docs/REFERENCES.md §P1). Each of the N devices gets
//! `cache / N` bytes of zones plus the cleaner's reserve and open bands (8 zones) and the store's
//! journal and checkpoints, which are metadata, not cache space. Zones are sized so each device has
//! at least 32 of them (4–64 MiB).

use std::path::PathBuf;
use std::sync::atomic::{
    AtomicU64,
    Ordering::{Acquire, Relaxed, Release},
};
use std::sync::Arc;

use reo_media::{FileMedia, FileOptions, Media, SimMedia};
use reo_store::{Store, StoreConfig};

use crate::error::ArrayError;
use crate::model::DeviceIo;

/// Where the array's bytes go.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum MediaKind {
    /// Byte-less simulated devices (the default): every read and write is counted, nothing kept.
    Sim,
    /// Real device files in this directory (created, fdatasync'ed, removed with the directory).
    Files(PathBuf),
}

/// The array of a replay.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ArraySpec {
    /// Number of devices (SSDs) in the array.
    pub devices: usize,
    /// Flash bytes for cached data and its redundancy, over all devices.
    pub cache_bytes: u64,
    /// Store chunk size (default 64 KiB, as the paper's normal-run experiments).
    pub chunk_size: u32,
    /// Simulated devices or real files.
    pub media: MediaKind,
}

/// Zones kept beyond the cache share: the cleaner's reserve, its free-band target and the open
/// bands of the schemes in use.
const EXTRA_ZONES: u64 = 8;

impl ArraySpec {
    /// Zone size for this array.
    pub fn zone_size(&self) -> u64 {
        let per_dev = self.cache_bytes / self.devices.max(1) as u64;
        let mut zone = 4u64 << 20;
        while zone * 2 <= per_dev / 32 && zone < (64 << 20) {
            zone *= 2;
        }
        zone
    }

    /// Opens a fresh store over new devices; returns it with the devices' I/O counters.
    pub fn build(&self) -> Result<(Arc<Store>, Vec<Arc<Counted>>), ArrayError> {
        if self.devices == 0 {
            return Err(ArrayError::NoDevices);
        }
        let n = self.devices as u64;
        let zone = self.zone_size();
        let zones = self.cache_bytes.div_ceil(n).div_ceil(zone) + EXTRA_ZONES;
        // Journal and checkpoints: room for every blob record of a cache full of 4 KiB blobs
        // with their headers (~160 B each), at least 8 MiB.
        let meta = (self.cache_bytes / 4096 * 160).next_multiple_of(1 << 20).max(8 << 20);
        let len = (1 << 20) + meta * 3 + zones * zone;
        let cfg = StoreConfig {
            chunk_size: self.chunk_size,
            zone_size: Some(zone),
            journal_size: Some(meta),
            checkpoint_size: Some(meta),
            create: true,
            ..Default::default()
        };
        let mut counted = Vec::new();
        let ops = Arc::new(AtomicU64::new(0));
        for d in 0..self.devices {
            let media: Arc<dyn Media> = match &self.media {
                MediaKind::Sim => Arc::new(SimMedia::new(len)),
                MediaKind::Files(dir) => {
                    std::fs::create_dir_all(dir).map_err(|source| ArrayError::Device { path: dir.clone(), source })?;
                    let path = dir.join(format!("dev{d}"));
                    let _ = std::fs::remove_file(&path);
                    let opts = FileOptions { create_len: Some(len), ..Default::default() };
                    Arc::new(FileMedia::open(&path, &opts).map_err(|source| ArrayError::Device { path, source })?)
                }
            };
            counted.push(Arc::new(Counted::new(media, ops.clone())));
        }
        let devs: Vec<Arc<dyn Media>> = counted.iter().map(|c| c.clone() as Arc<dyn Media>).collect();
        let (store, _) = Store::open(devs, &cfg).map_err(ArrayError::Store)?;
        let data_off = store.layout().data_off;
        counted.iter().for_each(|c| c.set_data_offset(data_off));
        Ok((Arc::new(store), counted))
    }

    /// A replacement device like the others (for `--replace-at`).
    pub fn replacement(&self, like: &Counted, d: usize) -> Result<Arc<Counted>, ArrayError> {
        let len = like.len();
        let media: Arc<dyn Media> = match &self.media {
            MediaKind::Sim => Arc::new(SimMedia::new(len)),
            MediaKind::Files(dir) => {
                let path = dir.join(format!("dev{d}.new"));
                let _ = std::fs::remove_file(&path);
                let opts = FileOptions { create_len: Some(len), ..Default::default() };
                Arc::new(FileMedia::open(&path, &opts).map_err(|source| ArrayError::Device { path, source })?)
            }
        };
        let counted = Counted::new(media, like.array_ops.clone());
        counted.set_data_offset(like.data_off.load(Relaxed));
        Ok(Arc::new(counted))
    }
}

/// One set of I/O counters.
#[derive(Default)]
struct Tally {
    reads: AtomicU64,
    read_bytes: AtomicU64,
    writes: AtomicU64,
    write_bytes: AtomicU64,
}

impl Tally {
    fn get(&self) -> DeviceIo {
        DeviceIo {
            reads: self.reads.load(Relaxed),
            read_bytes: self.read_bytes.load(Relaxed),
            writes: self.writes.load(Relaxed),
            write_bytes: self.write_bytes.load(Relaxed),
        }
    }

    fn read(&self, len: usize) {
        self.reads.fetch_add(1, Relaxed);
        self.read_bytes.fetch_add(len as u64, Relaxed);
    }

    fn wrote(&self, len: usize) {
        self.writes.fetch_add(1, Relaxed);
        self.write_bytes.fetch_add(len as u64, Relaxed);
    }
}

/// A device that counts its I/O (reads, writes, bytes) on top of any media.
///
/// I/O in the data region (the zones, from [`Counted::set_data_offset`] on) is also counted
/// apart: it is the I/O the replay's thread causes, when it causes it. The metadata region's
/// (superblock, journal, checkpoints) is written by the store's journal thread whenever a batch
/// falls due, on the machine's clock, so a request that happened to be running then would be
/// charged for it and the replay would not repeat itself.
pub struct Counted {
    inner: Arc<dyn Media>,
    /// Data-region I/Os of the whole array, shared by its devices: the replay looks at every
    /// device's counters only when this moved (three looks a request, most of them finding
    /// nothing).
    array_ops: Arc<AtomicU64>,
    /// Where the data region starts; until it is set, everything is metadata.
    data_off: AtomicU64,
    all: Tally,
    data: Tally,
}

impl Counted {
    /// Counts `inner`'s I/O, and every data-region I/O also in `array_ops` (shared by the
    /// array's devices).
    pub fn new(inner: Arc<dyn Media>, array_ops: Arc<AtomicU64>) -> Counted {
        Counted { inner, array_ops, data_off: AtomicU64::new(u64::MAX), all: Tally::default(), data: Tally::default() }
    }

    /// Sets where the data region starts (the store's layout).
    pub fn set_data_offset(&self, off: u64) {
        self.data_off.store(off, Relaxed);
    }

    /// All the I/O so far, metadata included.
    pub fn io(&self) -> DeviceIo {
        self.all.get()
    }

    /// The data region's I/O so far.
    pub fn data_io(&self) -> DeviceIo {
        self.data.get()
    }

    /// Data-region I/Os of the whole array so far (see [`Counted::new`]).
    pub fn array_ops(&self) -> u64 {
        self.array_ops.load(Acquire)
    }

    fn in_data(&self, offset: u64) -> bool {
        offset >= self.data_off.load(Relaxed)
    }

    fn read(&self, len: usize, offset: u64) {
        self.all.read(len);
        if self.in_data(offset) {
            self.data.read(len);
            self.array_ops.fetch_add(1, Release);
        }
    }

    fn wrote(&self, len: usize, offset: u64) {
        self.all.wrote(len);
        if self.in_data(offset) {
            self.data.wrote(len);
            self.array_ops.fetch_add(1, Release);
        }
    }
}

impl Media for Counted {
    fn len(&self) -> u64 {
        self.inner.len()
    }

    fn read_at(&self, buf: &mut [u8], offset: u64) -> std::io::Result<()> {
        self.inner.read_at(buf, offset).inspect(|_| self.read(buf.len(), offset))
    }

    fn write_at(&self, buf: &[u8], offset: u64) -> std::io::Result<()> {
        self.inner.write_at(buf, offset).inspect(|_| self.wrote(buf.len(), offset))
    }

    fn write_vectored_at(&self, parts: &[&[u8]], offset: u64) -> std::io::Result<()> {
        let len = parts.iter().map(|p| p.len()).sum();
        self.inner.write_vectored_at(parts, offset).inspect(|_| self.wrote(len, offset))
    }

    fn vector_align(&self) -> usize {
        self.inner.vector_align()
    }

    fn sync(&self) -> std::io::Result<()> {
        self.inner.sync()
    }

    fn stores_bytes(&self) -> bool {
        self.inner.stores_bytes()
    }

    fn describe(&self) -> String {
        self.inner.describe()
    }

    fn read_discard(&self, len: usize, offset: u64) -> std::io::Result<()> {
        self.inner.read_discard(len, offset).inspect(|_| self.read(len, offset))
    }

    fn write_zeros(&self, len: usize, offset: u64) -> std::io::Result<()> {
        self.inner.write_zeros(len, offset).inspect(|_| self.wrote(len, offset))
    }
}
