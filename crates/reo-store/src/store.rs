//! [`Inner`]: the state of an open store, shared by the handle ([`crate::Store`], `handle.rs`),
//! the journal writer and the cleaner: an aggregate of components, each owning its state behind
//! private fields, in its own file, with its locks. The files that do the store's work
//! (`write.rs`, `read.rs`, `persist.rs`, `recover.rs`, `gc.rs`, …) extend `Inner` with methods
//! that call the components' methods, never their fields:
//!
//! - `devs` ([`DeviceSet`], `devices.rs`): the devices in their slots, failed and stale flags,
//!   error budgets, stuck-read suspects, the I/O pool and the read lanes. Locks: each slot's
//!   media, error budget and stuck suspect (leaves).
//! - `space` ([`Space`], `space/`): the bands and their live blobs, their allocation, sequence
//!   numbers. Locks: the cleaner's lock, the allocation mutex, one `RwLock` per band.
//! - `meta` ([`MetaLog`], `metalog.rs`): the journal queue, the journal writer's position, the
//!   checkpoint gate and the put fence. Locks: all four.
//! - `resync` ([`ResyncState`], `resync.rs`): the rebuild in progress and the blobs rebuilds
//!   could not restore. Locks: the rebuild cell, a rebuild's control state (then its restored
//!   set) and thread handle, the unrestored sets (leaves).
//! - `tunables` ([`Tunables`], `config.rs`): the configured limits on device reads; `stats`
//!   (`stats.rs`): counters (atomics); `bufs`: the process-wide buffer pool (a leaf lock);
//!   `layout`: the geometry recorded in the superblocks.
//!
//! Locking: reads take a band's read lock only to check the blob is live, never during I/O.
//! Mutations (insert/remove of live blobs plus queueing their journal records) hold the *gate* in
//! read mode, which a checkpoint takes in write mode for the instant it snapshots the state, so a
//! checkpoint always equals "all queued records applied".
//!
//! Lock order (a lock is only taken while holding locks to its left): the cleaner's lock (cleaner,
//! `replace_device`, scrub per blob, the rebuild reader's windows; the cleaner's handler runs
//! under it) → put fence → journal position → gate → allocation → band locks → the journal queue;
//! then the leaves (rebuild control → restored set, the rebuild cell, error budgets, slots, buffer
//! pool). Types carry it: no component hands out a lock, and each step across components is a
//! guard of `metalog.rs` that the next step's methods require — [`Space::take_seq`] and
//! [`Space::allocate`] a `PutFence`; the methods that change live blobs or unrestored sets a
//! `Mutation` (the gate, shared), through which the mutation's records are queued; the
//! checkpoint's snapshot a `Frozen`, which only [`MetaLog::begin_checkpoint`] makes, taking the
//! position and then the gate. No band lock is held on return from [`Space`], so the journal
//! queue, taken only inside the journal, always comes after the band locks. The position and the
//! put fence, the gate and the allocation lock are never held together. Waits for durability
//! ([`crate::journal::Pending::wait`]) hold no store lock but the cleaner's (a put drops its
//! fence and its `Mutation` first); the journal writer and the pool's I/O jobs take only the
//! position, the gate, band read locks and leaves, so they never wait for a waiter. The layer
//! above may call in holding its own lock, except for what takes the cleaner's lock or waits
//! (`gc`, `replace_device`, `scrub`, `Sync` frees).

use crate::bufpool::BufPool;
use crate::config::Tunables;
use crate::devices::DeviceSet;
use crate::geometry::Shape;
use crate::location::Location;
use crate::metalog::MetaLog;
use crate::resync::ResyncState;
use crate::scheme::Scheme;
use crate::space::Space;
use crate::stats::Counters;
use crate::superblock::Layout;

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
    /// Redundancy scheme the blob is stored with.
    pub scheme: Scheme,
    /// When the put returns.
    pub durability: Durability,
    /// For isolated placement: blobs with the same key go to the same device.
    pub placement_key: u64,
}

impl PutOptions {
    /// Options with `scheme`, no durability wait and placement key 0.
    #[inline]
    pub fn new(scheme: Scheme) -> Self {
        PutOptions { scheme, durability: Durability::None, placement_key: 0 }
    }

    /// Same options with durability `d`.
    #[inline]
    pub fn durability(mut self, d: Durability) -> Self {
        self.durability = d;
        self
    }

    /// Same options with placement key `k`.
    #[inline]
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

/// The state of an open store, as its components (see the module doc).
pub(crate) struct Inner {
    /// The geometry recorded in the superblocks (fixed at format).
    pub layout: Layout,
    pub devs: DeviceSet,
    pub space: Space,
    pub meta: MetaLog,
    pub resync: ResyncState,
    pub tunables: Tunables,
    pub stats: Counters,
    /// Column and read buffers reused across operations (the process-wide pool).
    pub bufs: &'static BufPool,
}

impl Inner {
    #[inline]
    pub fn n(&self) -> usize {
        self.devs.len()
    }

    #[inline]
    pub fn chunk(&self) -> usize {
        self.layout.chunk as usize
    }

    #[inline]
    pub fn shape(&self, loc: &Location) -> Shape {
        Shape::of(loc, self.n(), self.chunk())
    }

    /// Does the blob at `loc` have chunks on device `d`?
    pub fn holds(&self, loc: &Location, d: usize) -> bool {
        self.shape(loc).uses_device(loc.band, u64::from(loc.start), loc.device, d)
    }

    #[inline]
    pub fn sectors(&self, loc: &Location) -> u64 {
        self.shape(loc).sectors()
    }

    /// Is device `d` unusable for blob `seq`: failed, or lacking its chunks (being rebuilt and
    /// this blob not restored yet, or rebuilt without it: `resync.rs`)?
    #[inline]
    pub fn down(&self, d: usize, seq: u64) -> bool {
        self.devs.is_failed(d) || self.resync.misses(d, seq)
    }

    /// No device failed, being rebuilt or missing blobs its rebuild lost: [`Inner::down`] is
    /// false for every device and blob.
    #[inline]
    pub fn all_up(&self) -> bool {
        self.resync.idle() && self.devs.none_failed()
    }
}
