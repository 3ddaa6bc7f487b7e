//! Failures as the cache sees them, and the Reo paper's query interface, §IV.C.2 and Table III
//! (docs/REFERENCES.md §P1):
//! per-object status (accessible, degraded, corrupted), engine sense codes, and the sweep that
//! drops lost clean objects after a device dies (they are refetched from the backend on demand)
//! while a lost dirty object is a loud, counted data-loss event.

use reo_store::{BlobHealth, Durability, Scheme};
use serde::Serialize;

use super::cache::free_all;
use super::cache::Cache;
use super::error::CacheError;
use super::objects::frag_count;
use super::sense::SenseCode;
use crate::object::Class;

/// Whether an object can be read from flash.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "kebab-case")]
pub enum Access {
    /// Every cached fragment is on healthy devices.
    Accessible,
    /// Some chunks are on failed devices but every fragment can be reconstructed.
    Degraded,
    /// Some cached fragment is lost (sense 0x63).
    Corrupted,
}

/// The status of one object (the query API's answer).
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct ObjectStatus {
    /// Whether its cached fragments are readable, readable only by reconstruction, or lost.
    pub access: Access,
    /// Its class (metadata, dirty, hot or cold).
    pub class: Class,
    /// Holds acknowledged writes not yet on the backend.
    pub dirty: bool,
    /// Object size in bytes.
    pub size: u64,
    /// Fragments of the object that are cached.
    pub cached_fragments: u64,
    /// Redundancy schemes of its cached fragments, each once, as [`reo_store::Scheme`] prints them.
    pub schemes: Vec<String>,
    /// Devices holding its blobs.
    pub devices: Vec<usize>,
    /// Reads since the object entered the cache (Freq).
    pub freq: u32,
    /// H = Freq / Size, reads per byte.
    pub hotness: f64,
    /// Sense code of the answer: corrupted, recovery in progress, or success.
    pub sense: SenseCode,
}

/// What a sweep after a failure found, in fragments.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize)]
pub struct SweepReport {
    /// Fragments whose every chunk is on a healthy device.
    pub healthy: u64,
    /// Fragments with chunks on failed devices that redundancy can still reconstruct.
    pub degraded: u64,
    /// Clean fragments lost and dropped from the index (refetched on demand).
    pub lost_clean: u64,
    /// Dirty fragments lost: data-loss events.
    pub lost_dirty: u64,
}

impl Cache {
    /// Marks device `d` failed (by command) and sweeps: lost clean fragments leave the index.
    pub fn fail_device(&self, d: usize) -> Result<SweepReport, CacheError> {
        self.store.fail_device(d)?;
        Ok(self.sweep_lost())
    }

    /// Checks every cached fragment against the failed devices (no I/O): lost clean fragments are
    /// forgotten and freed; lost dirty fragments are counted and logged as data loss (the object
    /// stays indexed so reads report the loss instead of serving the backend's older bytes).
    pub fn sweep_lost(&self) -> SweepReport {
        let fs = self.cfg.fragment_size;
        let mut rep = SweepReport::default();
        let mut to_free = Vec::new();
        let mut s = self.lock();
        s.recovery.swept(&self.store.failed_devices());
        let slots: Vec<(u32, u64)> = s.objects.iter().map(|(slot, e)| (slot, e.size())).collect();
        for (slot, size) in slots {
            for f in 0..frag_count(size, fs) as u32 {
                let Some(loc) = s.objects.location(slot, f, fs) else { continue };
                match self.store.health(&loc) {
                    BlobHealth::Healthy => rep.healthy += 1,
                    BlobHealth::Degraded => rep.degraded += 1,
                    BlobHealth::Lost => {
                        if s.objects.get(slot).is_some_and(|e| e.dirty()) {
                            rep.lost_dirty += 1;
                            s.stats.dirty_lost();
                            // Reads report the loss (the flusher cannot make it clean): a copy
                            // in memory does not stand in for flash.
                            s.memory.remove(slot);
                            let key = String::from_utf8_lossy(s.objects.get(slot).expect("listed").key()).into_owned();
                            tracing::error!(key = %key, fragment = f, "DATA LOSS: dirty fragment lost with the failed devices");
                        } else {
                            rep.lost_clean += 1;
                            s.forget_fragment(slot, f);
                            to_free.push(loc);
                        }
                    }
                }
            }
        }
        s.stats.lost_clean(rep.lost_clean);
        drop(s);
        free_all(&self.store, &to_free, Durability::None);
        rep
    }

    /// Scrubs the store (every chunk verified, what redundancy allows repaired) and settles what
    /// it could not repair: clean fragments are forgotten and freed (refetched on demand), dirty
    /// ones are counted and logged as data loss (reads report it). `rate_limit` in bytes per second.
    pub fn scrub(&self, rate_limit: Option<u64>) -> reo_store::ScrubReport {
        let rep = self.store.scrub(&reo_store::ScrubOptions { rate_limit });
        let fs = self.cfg.fragment_size;
        let mut to_free = Vec::new();
        let mut s = self.lock();
        for loc in &rep.unrecoverable {
            let Some(h) = self.store.header(loc).and_then(|h| crate::header::BlobHeader::decode(&h)) else { continue };
            if h.kind == crate::header::BlobKind::Content {
                if s.dedup.as_mut().is_some_and(|d| d.forget_content(&h.key, loc)) {
                    to_free.push(*loc);
                }
                continue;
            }
            let Some(slot) = s.objects.find(&h.key) else { continue };
            if s.objects.location(slot, h.fragment, fs).as_ref() != Some(loc) {
                continue;
            }
            if s.objects.get(slot).is_some_and(|e| e.dirty()) {
                s.stats.dirty_lost();
                s.memory.remove(slot);
                tracing::error!(
                    key = %String::from_utf8_lossy(&h.key),
                    fragment = h.fragment,
                    "DATA LOSS: scrub found a dirty fragment unrecoverable"
                );
            } else {
                s.forget_fragment(slot, h.fragment);
                s.stats.lost_clean(1);
                to_free.push(*loc);
            }
        }
        drop(s);
        free_all(&self.store, &to_free, Durability::None);
        rep
    }

    /// Status of `key`, or `None` when it is not cached.
    pub fn status(&self, key: &[u8]) -> Option<ObjectStatus> {
        let fs = self.cfg.fragment_size;
        let s = self.lock();
        let slot = s.objects.find(key)?;
        let e = s.objects.get(slot)?;
        let mut access = Access::Accessible;
        let mut schemes: Vec<Scheme> = Vec::new();
        let mut devices: Vec<usize> = Vec::new();
        let mut cached = 0;
        for f in 0..frag_count(e.size(), fs) as u32 {
            let Some(loc) = s.objects.location(slot, f, fs) else {
                if e.dirty() {
                    access = Access::Corrupted; // a dirty object is cached whole
                }
                continue;
            };
            cached += 1;
            match self.store.health(&loc) {
                BlobHealth::Healthy => {}
                BlobHealth::Degraded => access = access.max_with(Access::Degraded),
                BlobHealth::Lost => access = Access::Corrupted,
            }
            if !schemes.contains(&loc.scheme) {
                schemes.push(loc.scheme);
            }
            for d in self.store.devices_of(&loc) {
                if !devices.contains(&d) {
                    devices.push(d);
                }
            }
        }
        devices.sort_unstable();
        let sense = match access {
            Access::Corrupted => SenseCode::Corrupted,
            _ if !self.store.failed_devices().is_empty() || self.rebuilding() => SenseCode::RecoveryStarts,
            _ => SenseCode::Success,
        };
        Some(ObjectStatus {
            access,
            class: e.class(),
            dirty: e.dirty(),
            size: e.size(),
            cached_fragments: cached,
            schemes: schemes.iter().map(|x| x.to_string()).collect(),
            devices,
            freq: e.freq(),
            hotness: e.hotness(),
            sense,
        })
    }

    /// The engine's sense code for a request of `size` bytes (`write`: would it fit?): 0x65 while a
    /// device is failed or being rebuilt, 0x66 once after every device is healthy again, 0x64 when a write could
    /// not find evictable space, 0x67 when dirty data's redundancy exceeds the budget, else 0.
    pub fn engine_sense(&self, write: bool, size: u64) -> SenseCode {
        let failed = self.store.failed_devices().len();
        let rebuilding = self.rebuilding();
        let mut s = self.lock();
        if let Some(sense) = s.recovery.sense(failed, rebuilding) {
            return sense;
        }
        if write {
            let pinned_or_dirty: u64 =
                s.objects.iter().filter(|(_, e)| e.dirty() || e.pinned()).map(|(_, e)| e.size()).sum();
            if pinned_or_dirty + size > self.cfg.capacity_bytes {
                return SenseCode::CacheFull;
            }
            if s.classes.over_budget() {
                return SenseCode::RedundancyFull;
            }
        }
        SenseCode::Success
    }
}

impl Access {
    fn max_with(self, other: Access) -> Access {
        let rank = |a: Access| match a {
            Access::Accessible => 0,
            Access::Degraded => 1,
            Access::Corrupted => 2,
        };
        if rank(other) > rank(self) {
            other
        } else {
            self
        }
    }
}
