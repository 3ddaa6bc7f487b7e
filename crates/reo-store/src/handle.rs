//! [`Store`]: the public face of the flash array store — put, read, free, status, failure
//! marking, space and stats, shutdown. The work is done in `write.rs`, `read.rs`, `persist.rs`,
//! `recover.rs` and `gc.rs`, all on the shared [`Inner`] (`store.rs`), which also describes the
//! store's components and its lock order.

use crate::error::{Error, Result};
use crate::location::Location;
use crate::persist;
use crate::read_bytes::{PendingRead, ReadBytes};
use crate::scheme::Scheme;
use crate::space::{BandInfo, SpaceReport};
use crate::stats::StoreStats;
use crate::store::{BlobHealth, Durability, Inner, PutOptions};
use crate::superblock::Layout;
use parking_lot::Mutex;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::thread::JoinHandle;

/// The flash array store. Cheap to share: clone the `Arc` it lives in.
pub struct Store {
    pub(crate) inner: Arc<Inner>,
    pub(crate) writer: Mutex<Option<JoinHandle<()>>>,
    closed: AtomicBool,
}

impl Store {
    /// A handle on `inner`, with its journal writer thread started.
    pub(crate) fn start(inner: Inner) -> Store {
        let inner = Arc::new(inner);
        let w = inner.clone();
        let handle = std::thread::Builder::new()
            .name("reo-journal".into())
            .spawn(move || persist::writer_loop(w))
            .expect("cannot start the journal writer thread");
        Store { inner, writer: Mutex::new(Some(handle)), closed: AtomicBool::new(false) }
    }

    /// Stores `data` with `header` (kept in metadata, returned by [`Store::blobs`] after a restart)
    /// under `opts`, and returns where it lives. No byte is acknowledged before its redundancy is
    /// on the devices; with [`Durability::Sync`] it is also fdatasync'ed with its metadata.
    pub fn put(&self, header: &[u8], data: &[u8], opts: &PutOptions) -> Result<Location> {
        self.inner.put(header, data, opts, false).map(|(loc, _)| loc)
    }

    /// Reads bytes `[start, end)` of the blob at `loc`, verifying every chunk and reconstructing
    /// what redundancy allows. Never returns wrong bytes.
    /// During a rebuild, a blob whose chunk on the new device is not restored yet is queued for
    /// repair ahead of the rebuild's queue (on-demand repair); the read itself reconstructs.
    pub fn read(&self, loc: &Location, start: u64, end: u64) -> Result<Vec<u8>> {
        self.inner.resync.on_demand(loc, |d| self.inner.holds(loc, d));
        self.inner.read(loc, start, end)
    }

    /// [`Store::read`] without copying the bytes into one buffer: the verified chunk bodies as
    /// slices of the buffers the devices read them into (see [`ReadBytes`] for why). For callers
    /// that stream or compare the bytes; the buffers return to the store's pool on drop.
    pub fn read_bytes(&self, loc: &Location, start: u64, end: u64) -> Result<ReadBytes> {
        self.inner.resync.on_demand(loc, |d| self.inner.holds(loc, d));
        self.inner.read_bytes(loc, start, end)
    }

    /// [`Store::read_bytes`] with every device read made on the calling thread instead of the
    /// devices' read lanes: no hand-off, for a short read whose caller would otherwise wait for
    /// a lane thread (two thread wake-ups for one device read). The caller blocks in the device
    /// for the read's time and the read does not hedge (it waits for a device that stalls in
    /// service), so the caller bounds how many such reads it has in flight and checks
    /// [`Store::has_slow_device`] first. Such reads count in their devices' time in service as
    /// the lanes' reads do: one that stalls makes its device slow, and past the stuck-read limit
    /// the device is failed by the next reader that finds it.
    pub fn read_bytes_on_caller(&self, loc: &Location, start: u64, end: u64) -> Result<ReadBytes> {
        self.inner.resync.on_demand(loc, |d| self.inner.holds(loc, d));
        self.inner.read_bytes_on_caller(loc, start, end)
    }

    /// Whether a device has a read in service past `slow_read_after` (a stall, or a device slow to
    /// answer): reads that cannot hedge ([`Store::read_bytes_on_caller`]) should go elsewhere.
    pub fn has_slow_device(&self) -> bool {
        (0..self.inner.n()).any(|d| self.inner.slow(d))
    }

    /// [`Store::read_bytes`] in two steps: this checks the read and queues its device reads;
    /// [`PendingRead::finish`] waits for them and verifies. A caller reading many blobs begins
    /// the next ones before finishing the first, so that every device always has a read queued
    /// (see [`PendingRead`]).
    pub fn begin_read_bytes(&self, loc: &Location, start: u64, end: u64) -> Result<PendingRead<'_>> {
        self.inner.resync.on_demand(loc, |d| self.inner.holds(loc, d));
        self.inner.begin_read_bytes(loc, start, end)
    }

    /// Whether the devices keep the bytes written to them (false for the simulator's byte-less
    /// media, whose reads return nothing meaningful).
    pub fn stores_bytes(&self) -> bool {
        self.inner.devs.stores_bytes()
    }

    /// Reads bytes `[start, end)` of the blob at `loc` for their device I/O only and returns how
    /// many were read. On byte-less media (simulation) nothing is copied, checked or decoded, but
    /// exactly the I/O of [`Store::read`] is issued (degraded reads included); on real media it
    /// is a verified read whose bytes are dropped. Fails where [`Store::read`] would.
    pub fn read_sized(&self, loc: &Location, start: u64, end: u64) -> Result<u64> {
        self.inner.resync.on_demand(loc, |d| self.inner.holds(loc, d));
        self.inner.read_sized(loc, start, end)
    }

    /// Device bytes (all devices) a blob of `len` bytes occupies under `scheme`: data,
    /// redundancy, chunk trailers and padding — what the cache's sizing needs to know.
    pub fn footprint(&self, len: u64, scheme: Scheme) -> u64 {
        let loc = Location { seq: 0, band: 0, start: 0, device: 0, scheme, len };
        let shape = self.inner.shape(&loc);
        shape.sectors() * crate::geometry::SECTOR * shape.columns() as u64
    }

    /// Reads the whole blob.
    pub fn read_all(&self, loc: &Location) -> Result<Vec<u8>> {
        self.read(loc, 0, loc.len)
    }

    /// Frees the blob at `loc`. With [`Durability::Sync`] the free is durable on return.
    pub fn free(&self, loc: &Location, durability: Durability) -> Result<()> {
        self.inner.free(loc, durability)
    }

    /// Turns the small replicated blob at `loc` into one isolated copy of itself, in place, with
    /// `header`: its first copy is kept, the others become dead space, and nothing is written
    /// but two metadata records (the dirty → clean transition without a rewrite). Eligible: a
    /// `replicate` blob of one row of one stripe (up to a sector when narrowed, up to a chunk
    /// body under `replicate(N)` over N devices), whose first copy's device is up for it.
    /// Never waits for a checkpoint being taken (callers hold their own locks). Returns the kept
    /// copy's location, `None` if the blob is not eligible or a checkpoint is being taken
    /// (rewrite it instead), `NotFound` if it is not live. With [`Durability::Sync`] the change is durable
    /// on return.
    pub fn shed_copies(&self, loc: &Location, header: &[u8], durability: Durability) -> Result<Option<Location>> {
        self.inner.shed(loc, header, durability)
    }

    /// Whether [`Store::shed_copies`] of the blob at `loc` would keep a good copy: eligible, the
    /// first copy's device up for it, and that copy read back and verified (one device read).
    pub fn can_shed(&self, loc: &Location) -> bool {
        self.inner.kept_copy_verifies(loc)
    }

    /// Waits until every record queued so far is durable.
    pub fn flush(&self) -> Result<()> {
        self.inner.meta.flush()?.wait()
    }

    /// Waits until every record queued so far is durable, without a journal write of its own:
    /// they go with the next batch a `Sync` operation, a flush or the group-commit delay
    /// (`StoreConfig::journal_delay`) makes due, or with the batch due `within` from now at the
    /// latest. For callers that can wait that long and would otherwise cost a journal write on
    /// every device per call: concurrent callers share one batch.
    pub fn flush_within(&self, within: Option<std::time::Duration>) -> Result<()> {
        self.inner.meta.flush_riding(within)?.wait()
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

    /// Whether the header of the live blob at `loc` satisfies `f` (checked in place, without a
    /// copy; `false` if no blob is live there).
    pub fn header_is(&self, loc: &Location, f: impl FnOnce(&[u8]) -> bool) -> bool {
        self.inner.space.header_is(loc, f)
    }

    /// The devices the blob at `loc` has chunks on: its device for isolated placement, its own
    /// columns of a shared row for a narrow blob, else every device (rows and their parity rotate
    /// over the whole array).
    pub fn devices_of(&self, loc: &Location) -> Vec<usize> {
        (0..self.inner.n()).filter(|&d| self.inner.holds(loc, d)).collect()
    }

    /// Bands on the free list (cheap: the cleaner's trigger).
    pub fn free_bands(&self) -> usize {
        self.inner.space.free_bands()
    }

    /// How much of a checkpoint slot the live set takes, and how much puts may fill
    /// (`room.rs`): a live set past the slot fails its checkpoints with `MetadataFull`.
    pub fn metadata_room(&self) -> crate::MetadataRoom {
        self.inner.metadata_room()
    }

    /// Does the record of a put of `len` bytes in `scheme` with a header of `header_len` bytes
    /// fit within [`Store::metadata_room`]'s bound? A caller that can drop blobs drops some first
    /// when it does not.
    pub fn record_fits(&self, header_len: usize, len: u64, scheme: Scheme) -> bool {
        self.inner.record_fits(header_len, len, scheme)
    }

    /// Bytes of the checkpoint record of such a put.
    pub fn record_len(&self, header_len: usize, len: u64, scheme: Scheme) -> u64 {
        self.inner.record_len(header_len, len, scheme)
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
            r = persist::checkpoint(&self.inner, true);
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
