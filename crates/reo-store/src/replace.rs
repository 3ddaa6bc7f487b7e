//! Replacing a failed device and rebuilding it: [`Store::replace_device`] installs fresh media
//! in the failed device's slot (superblock marked *rebuilding*, metadata regions blanked, a
//! checkpoint written so the new device holds the metadata too), brings the slot back for writes
//! at a clean sequence boundary, and starts the rebuild thread (`rebuild_run.rs`). A rebuild
//! found at open (a superblock still marked rebuilding) is resumed by [`Store::resume_rebuild`].

use crate::error::{Error, Result};
use crate::handle::Store;
use crate::location::Location;
use crate::progress::{RebuildOptions, RebuildProgress};
use crate::resync::Resync;
use crate::store::Inner;
use crate::superblock::FLAG_REBUILDING;
use reo_media::{AlignedBuf, Media};
use std::sync::Arc;

/// A running (or finished) rebuild: progress, resume, wait.
pub struct RebuildHandle {
    r: Arc<Resync>,
}

impl std::fmt::Debug for RebuildHandle {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "RebuildHandle(device {})", self.r.device())
    }
}

impl RebuildHandle {
    /// The device being rebuilt.
    pub fn device(&self) -> usize {
        self.r.device()
    }

    /// A snapshot of the progress.
    pub fn progress(&self) -> RebuildProgress {
        self.r.progress()
    }

    /// Starts a rebuild that is paused (`start_paused`, `pause_after_blobs`).
    pub fn resume(&self) {
        self.r.resume();
    }

    /// Waits until `until` holds for the progress or the rebuild finished; returns the progress.
    pub fn wait_until(&self, until: impl Fn(&RebuildProgress) -> bool) -> RebuildProgress {
        self.r.wait_until(until)
    }

    /// Waits until the rebuild is done or aborted.
    pub fn wait(&self) -> RebuildProgress {
        self.wait_until(|_| false)
    }
}

impl Store {
    /// Replaces failed device `d` with `media` and starts rebuilding onto it, in the order of
    /// `opts.priority`, on a background thread. Fails (with nothing changed) if `d` is not a failed
    /// device of this store, another rebuild is running, or `media` is too small or of a
    /// different kind (byte-storing vs simulated) from the other devices.
    pub fn replace_device(&self, d: usize, media: Arc<dyn Media>, opts: RebuildOptions) -> Result<RebuildHandle> {
        let inner = &self.inner;
        let n = inner.n();
        if d >= n {
            return Err(Error::Config(format!("no device {d}: the store has {n} devices")));
        }
        if media.len() < inner.layout.device_len {
            return Err(Error::Devices(format!(
                "replacement {} has {} bytes; the store's devices need {}",
                media.describe(),
                media.len(),
                inner.layout.device_len
            )));
        }
        if media.stores_bytes() != inner.devs.stores_bytes() {
            return Err(Error::Devices(format!(
                "replacement {} is {} but the store's devices are {}",
                media.describe(),
                kind(media.stores_bytes()),
                kind(inner.devs.stores_bytes())
            )));
        }
        // No cleaner move is half-done while the slot comes back. The lock also serialises
        // replacements: the checks below must hold until the new rebuild is installed, or two
        // concurrent calls could both pass them and swap two media into one slot, the first
        // rebuild writing to the second's device and clearing its state when it finishes.
        let _gc = inner.space.lock_cleaner();
        if let Some(r) = inner.resync.device() {
            return Err(Error::Config(format!(
                "device {r} is being rebuilt; wait for that rebuild to finish before replacing another device"
            )));
        }
        if !inner.devs.is_failed(d) {
            return Err(Error::Config(format!(
                "device {d} is healthy: only a failed device can be replaced (fail it first with fail_device)"
            )));
        }
        prepare(inner, d, &media).map_err(|e| Error::Io { device: d, op: "replace", source: e })?;
        inner.devs.replace(d, media);
        inner.resync.clear_unrestored(d);
        let r = Arc::new(Resync::new(d, u64::MAX, false));
        inner.resync.install(r.clone());
        {
            // No put is between taking its sequence number and recording its blob: every blob
            // below `start` is recorded (and rebuilt), every later one is written to `d` in full.
            let fence = inner.meta.fence_all_puts();
            // Not stale any more: the rebuild gives it every blob below `start`, and no put
            // records a blob written without it from here on (it is up).
            inner.devs.bring_back(d);
            r.set_start_seq(inner.space.seq_boundary(&fence));
        }
        tracing::info!(device = d, by = %inner.devs.get(d).describe(), "device replaced; rebuilding");
        // The new device gets the whole metadata (a checkpoint), not only later journal batches.
        // Without it the device must not stay up: it holds none of the blobs older than `start`
        // and no rebuild will write them, so its reads would fail their checksums (charging a
        // sound device) and a restart would not find the metadata on it. A checkpoint *write*
        // that failed on it failed it already; one that failed before writing (a snapshot larger
        // than the slot) or everywhere is failed here. The caller may replace it again later.
        if let Err(e) = crate::persist::checkpoint(inner, false) {
            inner.mark_failed(d, &format!("its first checkpoint failed, the replacement is abandoned: {e}"));
            inner.resync.clear();
            return Err(e);
        }
        self.start_rebuild(r, opts)
    }

    /// Resumes the rebuild of a device whose superblock was still marked rebuilding at open
    /// (`OpenReport::rebuilding_device`). Blobs whose chunks on it verify are kept; the others
    /// are rebuilt. `Ok(None)` when there is nothing to resume.
    pub fn resume_rebuild(&self, opts: RebuildOptions) -> Result<Option<RebuildHandle>> {
        let Some(r) = self.inner.resync.current() else { return Ok(None) };
        // Claimed atomically: two concurrent calls must not both start a rebuild thread.
        if !r.claim() {
            return Err(Error::Config(format!("the rebuild of device {} is already running", r.device())));
        }
        let h = self.start_rebuild(r.clone(), opts);
        if h.is_err() {
            r.unclaim();
        }
        h.map(Some)
    }

    /// Progress of the rebuild in progress, if any.
    pub fn rebuild_progress(&self) -> Option<RebuildProgress> {
        self.inner.resync.current().map(|r| r.progress())
    }

    fn start_rebuild(&self, r: Arc<Resync>, opts: RebuildOptions) -> Result<RebuildHandle> {
        let queue = queue(&self.inner, &r, &opts);
        r.start(opts, queue.iter().map(|&(prio, _, bytes)| (prio, bytes)));
        let (inner, rr) = (self.inner.clone(), r.clone());
        let h = std::thread::Builder::new()
            .name("reo-rebuild".into())
            .spawn(move || crate::rebuild_run::run(inner, rr, queue))
            .map_err(|e| Error::Config(format!("cannot start the rebuild thread: {e}")))?;
        r.set_thread(h);
        Ok(RebuildHandle { r })
    }
}

fn kind(stores_bytes: bool) -> &'static str {
    if stores_bytes {
        "a byte-storing device"
    } else {
        "a simulated device (stores no bytes)"
    }
}

/// Blanks the new device's journal head and checkpoint slots and writes its superblocks marked
/// rebuilding, synced, before it joins.
fn prepare(inner: &Inner, d: usize, media: &Arc<dyn Media>) -> std::io::Result<()> {
    let l = &inner.layout;
    let zero = AlignedBuf::zeroed(4096);
    for off in [l.journal_off, l.ckpt_slot(0), l.ckpt_slot(1)] {
        media.write_at(&zero, off)?;
    }
    l.write_superblocks(media.as_ref(), d, FLAG_REBUILDING)
}

/// The blobs to rebuild: live, older than the replacement, with a chunk on the device; as
/// (priority, location, device bytes to write on it), in priority order and, within a class, in device
/// order (sequential writes on the new device).
fn queue(inner: &Inner, r: &Resync, opts: &RebuildOptions) -> Vec<(u8, Location, u64)> {
    let start = r.start_seq();
    let mut q: Vec<(u8, Location, u64)> = Vec::new();
    for band in 0..inner.space.band_count() {
        let (entries, _) = inner.space.contents(band as u32);
        for e in entries {
            let loc = e.loc;
            if loc.seq >= start || !inner.holds(&loc, r.device()) {
                continue;
            }
            // Blobs already beyond their redundancy count no bytes: none will be written.
            let lost = inner.health(&loc) == crate::store::BlobHealth::Lost;
            let bytes = if lost { 0 } else { inner.sectors(&loc) * crate::geometry::SECTOR };
            q.push(((opts.priority)(&loc, e.header()), loc, bytes));
        }
    }
    q.sort_by_key(|(p, l, _)| (*p, l.band, l.start, l.seq));
    q
}
