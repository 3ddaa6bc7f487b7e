//! Device replacement through the cache: the store's rebuild, ordered by what the cache knows —
//! metadata first, then dirty data, then hot data hottest first, then cold data (the Reo paper
//! §IV.D, docs/REFERENCES.md §P1); on-demand reads jump the queue inside the store.
//!
//! The priority function runs on the store's rebuild thread, so it must not take the cache's lock
//! (the cache calls into the store under it): the hot objects' ranks are snapshotted here, by blob
//! sequence, and everything else is classed from the blob header alone.

use std::collections::HashMap;
use std::sync::Arc;

use reo_media::Media;
use reo_store::{RebuildHandle, RebuildOptions, RebuildState};

use super::cache::Cache;
use super::error::CacheError;
use super::objects::frag_count;
use crate::header::BlobHeader;
use crate::object::Class;

/// Rebuild priorities: 0 metadata, 1 dirty, 2–202 hot (hottest first), 255 cold or unknown.
pub const PRIORITY_COLD: u8 = 255;

impl Cache {
    /// Replaces failed device `d` with `media` and starts the rebuild in priority order, at most
    /// `rate_limit` bytes per second (`None`: as fast as the devices go).
    pub fn replace_device(
        &self,
        d: usize,
        media: Arc<dyn Media>,
        rate_limit: Option<u64>,
    ) -> Result<RebuildHandle, CacheError> {
        let opts = RebuildOptions { priority: self.rebuild_priorities(), rate_limit, ..Default::default() };
        let handle = self.store.replace_device(d, media, opts)?;
        let mut s = self.lock();
        s.recovery.replaced(d);
        // Fills the failure forced out of their class's scheme can go back into it now; the
        // re-encoder may be asleep after a sweep that could not move them.
        s.classes.wake_reencoder();
        Ok(handle)
    }

    /// Resumes the rebuild a restart interrupted (the store found a device still marked
    /// rebuilding), in the same priority order; `None` when there is none.
    pub fn resume_rebuild(&self, rate_limit: Option<u64>) -> Result<Option<RebuildHandle>, CacheError> {
        let opts = RebuildOptions { priority: self.rebuild_priorities(), rate_limit, ..Default::default() };
        Ok(self.store.resume_rebuild(opts)?)
    }

    /// The priority function for a rebuild starting now.
    pub fn rebuild_priorities(&self) -> reo_store::PriorityFn {
        let fs = self.cfg.fragment_size;
        let hot: HashMap<u64, u8> = {
            let s = self.lock();
            let mut hot: Vec<(f64, u32, u64)> = s
                .objects
                .iter()
                .filter(|(_, e)| !e.dirty() && e.class() == Class::Hot)
                .map(|(slot, e)| (e.hotness(), slot, e.size()))
                .collect();
            hot.sort_unstable_by(|a, b| b.0.total_cmp(&a.0));
            let n = hot.len().max(1);
            let mut m = HashMap::new();
            for (rank, (_, slot, size)) in hot.into_iter().enumerate() {
                let p = 2 + (rank * 200 / n) as u8;
                for f in 0..frag_count(size, fs) as u32 {
                    if let Some(l) = s.objects.location(slot, f, fs) {
                        m.insert(l.seq, p);
                    }
                }
            }
            m
        };
        Arc::new(move |loc, header| {
            if let Some(&p) = hot.get(&loc.seq) {
                return p;
            }
            match BlobHeader::decode(header) {
                Some(h) if h.dirty => 1,
                Some(h) if h.class == Class::Metadata => 0,
                Some(h) if h.class == Class::Hot => 202,
                _ => PRIORITY_COLD,
            }
        })
    }

    /// True while a rebuild is queued or running.
    pub fn rebuilding(&self) -> bool {
        self.store.rebuild_progress().is_some_and(|p| matches!(p.state, RebuildState::Running | RebuildState::Paused))
    }
}
