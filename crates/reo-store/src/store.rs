//! [`Store`]: the public face of the flash array store — put, read, free, status, failure
//! marking, space and stats, shutdown. The work is done in `write.rs`, `read.rs`, `persist.rs`,
//! `recover.rs` and `gc.rs`, all on the shared [`Inner`].
//!
//! Locking: each band has its own `RwLock`; allocation takes a short mutex for the open bands;
//! reads take a band's read lock only to check the blob is live, never during I/O. Mutations
//! (insert/remove of live blobs plus queueing their journal records) hold the *gate* in read mode,
//! which a checkpoint takes in write mode for the instant it snapshots the state, so a checkpoint
//! always equals "all queued records applied".
//!
//! Lock order (a lock is only taken while holding locks to its left): `gc_lock` (cleaner,
//! `replace_device`, scrub per blob, the rebuild reader's windows; the cleaner's handler runs
//! under it) → `put_fence` → `jpos` → `gate` → `alloc` → band locks → the journal queue; then the
//! leaves (rebuild `ctl` → `done`, the resync cell, error budgets, slots, buffer pool). `jpos` and
//! `put_fence`, `gate` and `alloc` are never held together. One band lock at a time, except that
//! allocation opens a free band while holding the full one. Waits for durability
//! ([`crate::journal::Pending::wait`]) hold no store lock but `gc_lock` (a put drops its fence
//! first); the journal writer and the pool's I/O jobs take only `jpos`, `gate`, band read locks
//! and leaves, so they never wait for a waiter. The layer above may call in holding its own lock,
//! except for what takes `gc_lock` or waits (`gc`, `replace_device`, `scrub`, `Sync` frees).

use crate::bufpool::BufPool;
use crate::config::Tunables;
use crate::devices::DeviceSet;
use crate::error::{Error, Result};
use crate::geometry::Shape;
use crate::location::Location;
use crate::metalog::MetaLog;
use crate::read_bytes::{PendingRead, ReadBytes};
use crate::resync::ResyncState;
use crate::scheme::Scheme;
use crate::space::{BandInfo, Space, SpaceReport};
use crate::stats::{Counters, StoreStats};
use crate::superblock::Layout;
use parking_lot::Mutex;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::thread::JoinHandle;

/// When a put or free returns.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Durability {
    /// Returns once data and the metadata that finds it are fdatasync'ed on every device the
    /// scheme uses (and the metadata on every healthy device).
    Sync,
    /// Returns once the data is written; metadata follows in the next journal batch.
    None,
}

/// Options of one put.
#[derive(Debug, Clone, Copy)]
pub struct PutOptions {
    pub scheme: Scheme,
    pub durability: Durability,
    /// For isolated placement: blobs with the same key go to the same device.
    pub placement_key: u64,
}

impl PutOptions {
    /// Options with `scheme`, no durability wait and placement key 0.
    pub fn new(scheme: Scheme) -> Self {
        PutOptions { scheme, durability: Durability::None, placement_key: 0 }
    }

    /// Same options with durability `d`.
    pub fn durability(mut self, d: Durability) -> Self {
        self.durability = d;
        self
    }

    /// Same options with placement key `k`.
    pub fn placement(mut self, k: u64) -> Self {
        self.placement_key = k;
        self
    }
}

/// Health of one blob given the devices currently failed.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum BlobHealth {
    /// Every chunk is on a healthy device.
    Healthy,
    /// Some chunks are on failed devices but every stripe is recoverable.
    Degraded,
    /// Some stripe lost more chunks than its redundancy covers.
    Lost,
}

/// State shared by the store handle, the journal writer and the cleaner.
pub(crate) struct Inner {
    pub layout: Layout,
    pub devs: DeviceSet,
    pub tunables: Tunables,
    pub space: Space,
    pub meta: MetaLog,
    pub stats: Counters,
    /// Column and read buffers reused across operations (the process-wide pool).
    pub bufs: &'static BufPool,
    pub resync: ResyncState,
}

impl Inner {
    pub fn n(&self) -> usize {
        self.devs.len()
    }

    pub fn chunk(&self) -> usize {
        self.layout.chunk as usize
    }

    pub fn shape(&self, loc: &Location) -> Shape {
        Shape::of(loc, self.n(), self.chunk())
    }

    pub fn sectors(&self, loc: &Location) -> u64 {
        self.shape(loc).sectors()
    }

    /// Is device `d` unusable for blob `seq`: failed, or lacking its chunks (being rebuilt and
    /// this blob not restored yet, or rebuilt without it: `resync.rs`)?
    pub fn down(&self, d: usize, seq: u64) -> bool {
        self.devs.is_failed(d) || self.resync.misses(d, seq)
    }

    /// No device failed, being rebuilt or missing blobs its rebuild lost: [`Inner::down`] is
    /// false for every device and blob.
    pub fn all_up(&self) -> bool {
        self.resync.idle() && self.devs.none_failed()
    }
}

/// The flash array store. Cheap to share: clone the `Arc` it lives in.
pub struct Store {
    pub(crate) inner: Arc<Inner>,
    pub(crate) writer: Mutex<Option<JoinHandle<()>>>,
    pub(crate) closed: AtomicBool,
}

impl Store {
    /// Stores `data` with `header` (kept in metadata, returned by [`Store::blobs`] after a restart)
    /// under `opts`, and returns where it lives. No byte is acknowledged before its redundancy is
    /// on the devices; with [`Durability::Sync`] it is also fdatasync'ed with its metadata.
    pub fn put(&self, header: &[u8], data: &[u8], opts: &PutOptions) -> Result<Location> {
        self.inner.put(header, data, opts, false)
    }

    /// Reads bytes `[start, end)` of the blob at `loc`, verifying every chunk and reconstructing
    /// what redundancy allows. Never returns wrong bytes.
    /// During a rebuild, a blob whose chunk on the new device is not restored yet is queued for
    /// repair ahead of the rebuild's queue (on-demand repair); the read itself reconstructs.
    pub fn read(&self, loc: &Location, start: u64, end: u64) -> Result<Vec<u8>> {
        self.inner.resync.on_demand(loc);
        self.inner.read(loc, start, end)
    }

    /// [`Store::read`] without copying the bytes into one buffer: the verified chunk bodies as
    /// slices of the buffers the devices read them into (see [`ReadBytes`] for why). For callers
    /// that stream or compare the bytes; the buffers return to the store's pool on drop.
    pub fn read_bytes(&self, loc: &Location, start: u64, end: u64) -> Result<ReadBytes> {
        self.inner.resync.on_demand(loc);
        self.inner.read_bytes(loc, start, end)
    }

    /// [`Store::read_bytes`] in two steps: this checks the read and queues its device reads;
    /// [`PendingRead::finish`] waits for them and verifies. A caller reading many blobs begins
    /// the next ones before finishing the first, so that every device always has a read queued
    /// (see [`PendingRead`]).
    pub fn begin_read_bytes(&self, loc: &Location, start: u64, end: u64) -> Result<PendingRead<'_>> {
        self.inner.resync.on_demand(loc);
        self.inner.begin_read_bytes(loc, start, end)
    }

    /// Reads bytes `[start, end)` of the blob at `loc` for their device I/O only and returns how
    /// many were read. On byte-less media (simulation) nothing is copied, checked or decoded, but
    /// exactly the I/O of [`Store::read`] is issued (degraded reads included); on real media it
    /// is a verified read whose bytes are dropped. Fails where [`Store::read`] would.
    pub fn read_sized(&self, loc: &Location, start: u64, end: u64) -> Result<u64> {
        self.inner.resync.on_demand(loc);
        self.inner.read_sized(loc, start, end)
    }

    /// Device bytes (all devices) a blob of `len` bytes occupies under `scheme`: data,
    /// redundancy, chunk trailers and padding — what the cache's sizing needs to know.
    pub fn footprint(&self, len: u64, scheme: Scheme) -> u64 {
        let loc = Location { seq: 0, band: 0, start: 0, device: 0, scheme, len };
        let cols = if scheme.is_isolated() { 1 } else { self.inner.n() as u64 };
        self.inner.sectors(&loc) * crate::geometry::SECTOR * cols
    }

    /// Reads the whole blob.
    pub fn read_all(&self, loc: &Location) -> Result<Vec<u8>> {
        self.read(loc, 0, loc.len)
    }

    /// Frees the blob at `loc`. With [`Durability::Sync`] the free is durable on return.
    pub fn free(&self, loc: &Location, durability: Durability) -> Result<()> {
        self.inner.free(loc, durability)
    }

    /// Waits until every record queued so far is durable.
    pub fn flush(&self) -> Result<()> {
        self.inner.meta.flush()?.wait()
    }

    /// Health of the blob at `loc` given the failed devices (no I/O).
    pub fn health(&self, loc: &Location) -> BlobHealth {
        self.inner.health(loc)
    }

    /// Every live blob with its header, in sequence order.
    pub fn blobs(&self) -> Vec<(Location, Vec<u8>)> {
        self.inner.space.blobs()
    }

    /// Is `loc` a live blob? (The store's metadata, no device I/O.)
    pub fn contains(&self, loc: &Location) -> bool {
        self.inner.space.is_live(loc)
    }

    /// The header of the live blob at `loc` (from the store's metadata, no device I/O).
    pub fn header(&self, loc: &Location) -> Option<Vec<u8>> {
        self.inner.space.header(loc)
    }

    /// Bands on the free list (cheap: the cleaner's trigger).
    pub fn free_bands(&self) -> usize {
        self.inner.space.free_bands()
    }

    /// Number of live blobs.
    pub fn blob_count(&self) -> usize {
        self.inner.space.blob_count()
    }

    /// Marks device `d` failed: no more I/O goes to it; reads of its chunks reconstruct.
    /// Unlike a failure the store detects itself (an I/O error, always logged on stderr), a
    /// failure by command is not logged: the caller asked for it.
    pub fn fail_device(&self, d: usize) -> Result<()> {
        if d >= self.inner.n() {
            return Err(Error::Config(format!("no device {d}: the store has {} devices", self.inner.n())));
        }
        self.inner.devs.fail_quietly(d);
        Ok(())
    }

    /// Indices of failed devices.
    pub fn failed_devices(&self) -> Vec<usize> {
        (0..self.inner.n()).filter(|&d| self.inner.devs.is_failed(d)).collect()
    }

    /// The layout recorded in the superblocks.
    pub fn layout(&self) -> Layout {
        self.inner.layout
    }

    /// Counters since open.
    pub fn stats(&self) -> StoreStats {
        self.inner.stats.snapshot()
    }

    /// Live, used and free space, per scheme.
    pub fn space(&self) -> SpaceReport {
        self.inner.space.report()
    }

    /// Per-band state and space.
    pub fn bands(&self) -> Vec<BandInfo> {
        self.inner.space.band_infos()
    }

    /// Clean shutdown: writes what is queued, then a checkpoint, so the next open scans nothing.
    pub fn close(self) -> Result<()> {
        self.stop_writer(false);
        // A device failing the checkpoint's own writes is marked stale after the snapshot, and
        // the stopped journal takes no record of it: the next checkpoint carries it.
        let mut r;
        let mut tries = 0;
        loop {
            let marks = self.inner.devs.stale_marks();
            r = crate::persist::checkpoint(&self.inner, true);
            tries += 1;
            if r.is_err() || self.inner.devs.stale_marks() == marks || tries == 3 {
                break;
            }
        }
        self.closed.store(true, Ordering::Release);
        r
    }

    /// Simulated crash for tests: stops the journal writer without writing what is queued and
    /// without a checkpoint. Pair with a power cut of the media to drop unsynced writes.
    pub fn kill(self) {
        self.stop_writer(true);
        self.closed.store(true, Ordering::Release);
    }

    fn stop_writer(&self, kill: bool) {
        if let Some(r) = self.inner.resync.current() {
            r.stop("the store was closed; reopening resumes the rebuild");
        }
        self.inner.meta.stop(kill);
        // Taken in its own statement: an `if let` would keep the guard for the join.
        let writer = self.writer.lock().take();
        if let Some(h) = writer {
            let _ = h.join();
        }
    }
}

impl Drop for Store {
    /// Dropping without `close` writes what is queued but takes no checkpoint: the next open
    /// replays the journal (as after a crash).
    fn drop(&mut self) {
        if !self.closed.load(Ordering::Acquire) {
            self.stop_writer(false);
        }
    }
}
