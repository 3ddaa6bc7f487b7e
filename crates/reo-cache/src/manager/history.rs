//! Access history of an object, so it can follow the object to a new key (the hint API's
//! `reorganize {from, to}`: "move the cached data and the access history").
//!
//! What moves: Freq (reads since the object entered the cache, and with the size, H = Freq /
//! Size, which decides the hot class) and the referenced bit (GC-based eviction's second chance).
//! The replacement policy's position cannot be copied — policies expose no "insert at" — so
//! [`Cache::set_access_history`] gives each of the new key's cached fragments one policy hit
//! when the old object had been read: in LRU it is most recent (it was just read to be moved), in
//! ARC / S3-FIFO it counts as reused, as the old key was. The old key's entry is not touched here.

use super::cache::Cache;
use super::objects::frag_count;

/// What [`Cache::access_history`] returns and [`Cache::set_access_history`] applies.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct AccessHistory {
    /// Reads since the object entered the cache (Freq of H = Freq / Size).
    pub freq: u32,
    /// The referenced bit: GC-based eviction's second chance.
    pub referenced: bool,
}

impl Cache {
    /// The access history of `key`, without counting as an access. `None` if not cached.
    pub fn access_history(&self, key: &[u8]) -> Option<AccessHistory> {
        let s = self.lock();
        let e = s.objects.get(s.objects.find(key)?)?;
        Some(AccessHistory { freq: e.freq(), referenced: e.referenced() })
    }

    /// Gives `key` the access history `h` (taken from another key with
    /// [`Cache::access_history`]). Returns false if `key` is not cached.
    pub fn set_access_history(&self, key: &[u8], h: &AccessHistory) -> bool {
        let mut s = self.lock();
        let Some(slot) = s.objects.find(key) else { return false };
        let e = s.objects.get_mut(slot).expect("found");
        e.set_freq(h.freq);
        e.set_referenced(h.referenced);
        let fragments = frag_count(e.size(), self.cfg.fragment_size) as u32;
        if h.freq > 0 {
            for f in 0..fragments {
                if s.objects.location(slot, f, self.cfg.fragment_size).is_some() {
                    s.policy.on_hit(slot, f);
                }
            }
        }
        true
    }
}
