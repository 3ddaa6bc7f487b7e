//! Public types of a device rebuild: its options (priority function, lost-blob callback, I/O
//! share) and its progress report (per priority class, rate, ETA, lost blobs).

use crate::location::Location;
use std::collections::BTreeMap;
use std::sync::Arc;
use std::time::Duration;

/// Priority of a blob for the rebuild, from its location and header: lower is rebuilt first.
pub type PriorityFn = Arc<dyn Fn(&Location, &[u8]) -> u8 + Send + Sync>;
/// Called once per blob the rebuild found unrecoverable (beyond its redundancy).
pub type LostFn = Arc<dyn Fn(&Location) + Send + Sync>;

/// How a rebuild runs.
#[derive(Clone)]
pub struct RebuildOptions {
    /// Priority class of each blob (lower first). Default: every blob 0.
    pub priority: PriorityFn,
    /// Told of every lost blob as it is found (the layer above drops it from its index and
    /// frees it). Lost blobs are also listed in the progress report.
    pub on_lost: Option<LostFn>,
    /// I/O share: at most this many bytes per second written to the new device by queued work
    /// (a token bucket; on-demand repairs are not throttled). `None`: as fast as it goes.
    pub rate_limit: Option<u64>,
    /// Start paused ([`crate::RebuildHandle::resume`] starts it). For experiments and tests.
    pub start_paused: bool,
    /// Pause after this many blobs were handled (experiments: "crash in the middle").
    pub pause_after_blobs: Option<u64>,
    /// Keep the order in which blobs were restored in [`RebuildProgress::order`].
    pub record_order: bool,
}

impl Default for RebuildOptions {
    fn default() -> Self {
        RebuildOptions {
            priority: Arc::new(|_, _| 0),
            on_lost: None,
            rate_limit: None,
            start_paused: false,
            pause_after_blobs: None,
            record_order: false,
        }
    }
}

/// Progress of one priority class.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct ClassProgress {
    /// Blobs of the class with a chunk on the device, at the start of the rebuild.
    pub blobs_total: u64,
    /// Blobs handled: restored, found already intact, freed meanwhile, or lost.
    pub blobs_done: u64,
    /// Device bytes the class's blobs occupy on the rebuilt device.
    pub bytes_total: u64,
    /// Device bytes of the class written to the rebuilt device so far.
    pub bytes_done: u64,
    /// Blobs of the class found beyond their redundancy (not restorable).
    pub blobs_lost: u64,
    /// Time from the start of the rebuild until every blob of the class was handled.
    pub restored_at: Option<Duration>,
}

/// Where a rebuild is.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum RebuildState {
    /// Waiting for `resume` (started paused, or `pause_after_blobs` reached).
    Paused,
    /// Restoring blobs from the queue (and on demand for reads).
    Running,
    /// Every blob handled; the device has its full redundancy role back.
    Done,
    /// Stopped: the new device failed, or the store was closed (a reopen resumes it).
    Aborted(String),
}

/// One restored blob, in order (when `record_order` is set).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Restored {
    /// Sequence number of the blob.
    pub seq: u64,
    /// Its priority class (from [`RebuildOptions::priority`]).
    pub priority: u8,
    /// Repaired because a read needed it (ahead of the queue).
    pub on_demand: bool,
}

/// A rebuild's progress.
#[derive(Debug, Clone)]
pub struct RebuildProgress {
    /// Index of the device being rebuilt.
    pub device: usize,
    /// Where the rebuild is.
    pub state: RebuildState,
    /// Per priority class.
    pub classes: BTreeMap<u8, ClassProgress>,
    /// Blobs with a chunk on the device, at the start of the rebuild (all classes).
    pub blobs_total: u64,
    /// Blobs handled: restored, found already intact, freed meanwhile, or lost.
    pub blobs_done: u64,
    /// Device bytes the queued blobs occupy on the rebuilt device.
    pub bytes_total: u64,
    /// Device bytes written to the new device.
    pub bytes_done: u64,
    /// Blobs repaired ahead of the queue because a read needed them.
    pub on_demand: u64,
    /// Blobs whose chunks on the device verified already (a resumed rebuild) and were kept.
    pub already_intact: u64,
    /// Blobs freed or moved before their turn (nothing to do).
    pub skipped: u64,
    /// Time since the rebuild started (as of the last blob handled, or its end).
    pub elapsed: Duration,
    /// Bytes written per second so far.
    pub rate: f64,
    /// Estimated time to finish at the current rate.
    pub eta: Option<Duration>,
    /// Blobs beyond their redundancy: not restorable.
    pub lost: Vec<Location>,
    /// Blobs whose column the new device failed to take (it is then failed again): not lost,
    /// their other chunks still hold them, and a later replacement restores them.
    pub unwritten: u64,
    /// Blobs in the order they were handled; empty unless [`RebuildOptions::record_order`].
    pub order: Vec<Restored>,
}

impl RebuildProgress {
    pub(crate) fn new(device: usize) -> RebuildProgress {
        RebuildProgress {
            device,
            state: RebuildState::Paused,
            classes: BTreeMap::new(),
            blobs_total: 0,
            blobs_done: 0,
            bytes_total: 0,
            bytes_done: 0,
            on_demand: 0,
            already_intact: 0,
            skipped: 0,
            elapsed: Duration::ZERO,
            rate: 0.0,
            eta: None,
            lost: Vec::new(),
            unwritten: 0,
            order: Vec::new(),
        }
    }

    /// True once the rebuild is done or aborted.
    pub fn finished(&self) -> bool {
        matches!(self.state, RebuildState::Done | RebuildState::Aborted(_))
    }
}
