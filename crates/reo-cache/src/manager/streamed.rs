//! [`StreamedPut`]: a client write whose body arrives in pieces, so that the caller never holds
//! more than a fragment or two of it: a write-back write ([`Cache::start_put`], dirty) or the
//! clean copy of a write-through write ([`Cache::start_clean_put`], finished once the backend
//! holds the object).
//!
//! The fragments after the first are written (durable, if dirty) as they arrive, before the
//! object's ETag and checksums are known: their headers carry the write's id and no metadata
//! ([`crate::header`]). The first fragment is kept in memory and written last, by
//! [`StreamedPut::finish`], with the object's metadata; then the whole version is installed at
//! once, exactly as [`Cache::put`] installs one. Until then:
//!
//! - readers see the previous version (nothing is indexed);
//! - the cleaner keeps the staged blobs ([`super::inflight::InFlight`]) and moves them if it must;
//! - a crash leaves a version without its first fragment, which restart recovery drops, dirty
//!   or clean, and keeps the acknowledged one (`restart.rs`);
//! - an abandoned write (the client went away, a digest did not match) frees its blobs when the
//!   [`StreamedPut`] is dropped.

use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;

use reo_media::AlignedBuf;
use reo_store::Durability;

use super::cache::free_all;
use super::cache::Cache;
use super::objects::{frag_count, frag_len};
use super::placement::{object_version, placement_of, version_tag};
use super::write::{admission_refusal, encode_header, ObjectMeta, PutReceipt, WriteError};
use crate::admission::Request;
use crate::object::Class;

/// Distinguishes the write ids of one process (mixed with the start time and the key).
static WRITES: AtomicU64 = AtomicU64::new(0);

/// A streamed write in progress: push its fragments in order with [`StreamedPut::push`], then
/// [`StreamedPut::finish`] it with the object's metadata. Dropped unfinished, it leaves no trace.
pub struct StreamedPut {
    cache: Arc<Cache>,
    key: Vec<u8>,
    size: u64,
    /// Dirty (write-back) or clean (a write-through copy).
    dirty: bool,
    /// Its class: dirty, or the budget's class for a new clean object (decided at the start,
    /// when the clean copy takes its room).
    class: Class,
    write: u64,
    /// Fragment 0's bytes, written last (sector-aligned: the store writes its full chunks from
    /// them without a copy).
    first: AlignedBuf,
    /// The next fragment [`StreamedPut::push`] takes.
    next: u32,
    finished: bool,
}

impl Cache {
    /// Starts a write-back write of `size` bytes to `key` (see the module doc). Refused at once
    /// if the object cannot be cached dirty (too large for the cache or the format).
    pub fn start_put(self: &Arc<Self>, key: &[u8], size: u64, now_ns: u64) -> Result<StreamedPut, WriteError> {
        self.check_size(key, size, &ObjectMeta::default())?;
        if size > self.cfg.capacity_bytes && self.cfg.eviction == crate::config::EvictionMode::CacheBased {
            return Err(WriteError::TooLarge(format!(
                "{size} bytes exceeds the cache capacity {}",
                self.cfg.capacity_bytes
            )));
        }
        Ok(self.staged_put(key, size, Class::Dirty, now_ns))
    }

    /// Starts the clean copy of a write-through write of `size` bytes to `key`, to be finished
    /// once the backend holds the object. `None` if the cache does not take it: admission
    /// refuses it, it cannot be cached, or the cache deduplicates (whose clean writes go through
    /// [`Cache::put`]). The caller drops the key's cached copy either way: it is stale.
    pub fn start_clean_put(self: &Arc<Self>, key: &[u8], size: u64, now_ns: u64) -> Option<StreamedPut> {
        self.check_size(key, size, &ObjectMeta::default()).ok()?;
        let class = {
            let mut s = self.lock();
            if s.dedup.is_some() {
                return None;
            }
            s.objects.advance(now_ns);
            let req = Request::write(self.admission_key(key), 0, size, now_ns)
                .with_occupancy(s.policy.used_bytes(), self.cfg.capacity_bytes);
            if admission_refusal(s.admitter.decide(&req)).is_some() {
                return None;
            }
            s.classes.new_object_class(size)
        };
        Some(self.staged_put(key, size, class, now_ns))
    }

    fn staged_put(self: &Arc<Self>, key: &[u8], size: u64, class: Class, now_ns: u64) -> StreamedPut {
        let n = frag_count(size, self.cfg.fragment_size) as usize;
        let mut mix = Vec::with_capacity(key.len() + 16);
        mix.extend_from_slice(&now_ns.to_le_bytes());
        mix.extend_from_slice(&WRITES.fetch_add(1, Ordering::Relaxed).to_le_bytes());
        mix.extend_from_slice(key);
        let mut s = self.lock();
        let write = s.inflight.stage(placement_of(&mix), n);
        drop(s);
        StreamedPut {
            cache: self.clone(),
            key: key.to_vec(),
            size,
            dirty: class == Class::Dirty,
            class,
            write,
            first: AlignedBuf::with_capacity(0),
            next: 0,
            finished: false,
        }
    }
}

impl StreamedPut {
    /// How many bytes the next [`StreamedPut::push`] takes (0 when all have been pushed).
    pub fn next_len(&self) -> usize {
        let fs = self.cache.cfg.fragment_size;
        if u64::from(self.next) >= frag_count(self.size, fs) {
            return 0;
        }
        frag_len(self.size, self.next, fs) as usize
    }

    /// The cache's fragment size: the length of every piece but the last.
    pub fn fragment_len(&self) -> usize {
        self.cache.cfg.fragment_size as usize
    }

    /// Whether the next [`StreamedPut::push`] is of the first fragment, which is only kept in
    /// memory (no I/O).
    pub fn next_is_kept(&self) -> bool {
        self.next == 0
    }

    /// The object's size.
    pub fn size(&self) -> u64 {
        self.size
    }

    /// The next fragment's bytes: exactly [`StreamedPut::next_len`] of them. Fragments after
    /// the first are written now (if dirty, durable on every device their class needs).
    pub fn push(&mut self, piece: &[u8]) -> Result<(), WriteError> {
        let want = self.next_len();
        if piece.len() != want || (want == 0 && self.next > 0) {
            return Err(WriteError::TooLarge(format!(
                "fragment {} of a {}-byte write is {} bytes, not {want}",
                self.next,
                self.size,
                piece.len()
            )));
        }
        if self.next == 0 {
            self.first = AlignedBuf::with_capacity(piece.len());
            self.first.extend_from_slice(piece);
            self.next = 1;
            return Ok(());
        }
        let c = &self.cache;
        let class = self.class();
        let header =
            encode_header(&self.key, self.size, self.next, (self.dirty, class), &ObjectMeta::default(), self.write);
        let scheme = c.classes.of(class);
        for _ in 0..4 {
            let seen = c.lock().inflight.orphans_freed();
            let loc = c.put_blob(&header, piece, scheme, self.dirty, placement_of(&self.key))?;
            let mut s = c.lock();
            // Freed as an orphan before it was staged: written again.
            if c.lost_to_cleaner(&s, seen, &[loc]) {
                s.stats.wasted(loc.len);
                continue;
            }
            s.inflight.record(self.write, self.next, loc);
            self.next += 1;
            return Ok(());
        }
        Err(WriteError::Full("the cleaner kept reclaiming the write's own blobs".into()))
    }

    fn class(&self) -> Class {
        self.class
    }

    /// Writes the first fragment with `meta` (the object's ETag, checksums, …) and installs the
    /// version: from here it is the object, as after [`Cache::put`] (if dirty, durable).
    pub fn finish(mut self, meta: &ObjectMeta, now_ns: u64) -> Result<PutReceipt, WriteError> {
        if self.next_len() != 0 || self.next == 0 {
            return Err(WriteError::TooLarge(format!(
                "the write of {} bytes was finished after {} of its fragments",
                self.size, self.next
            )));
        }
        let c = self.cache.clone();
        c.check_size(&self.key, self.size, meta)?;
        let class = self.class();
        let header = encode_header(&self.key, self.size, 0, (self.dirty, class), meta, self.write);
        let scheme = c.classes.of(class);
        for _ in 0..4 {
            let seen = {
                let mut s = c.lock();
                s.objects.advance(now_ns);
                s.inflight.orphans_freed()
            };
            let loc = c.put_blob(&header, &self.first, scheme, self.dirty, placement_of(&self.key))?;
            let installed = c.install(
                &self.key,
                self.size,
                class,
                self.dirty,
                vec![loc],
                version_tag(&meta.etag),
                seen,
                Some(self.write),
                // The body went to flash piece by piece and is not held whole here.
                None,
            );
            match installed {
                Ok(Some((to_free, old_dirty))) => {
                    self.finished = true;
                    c.lock().stats.original_write(self.size);
                    // A replaced dirty version must not come back after a crash.
                    let durability = if self.dirty || old_dirty { Durability::Sync } else { Durability::None };
                    free_all(&c.store, &to_free, durability);
                    return Ok(PutReceipt { version: object_version(&meta.etag, self.size, meta.mtime_ns) });
                }
                // The first fragment was freed as an orphan before its install: written again.
                Ok(None) => free_all(&c.store, &[loc], self.undo()),
                // Refused whole: `install` freed what it took (the staged fragments and this one)
                // unless a staged fragment was lost, in which case they are still staged.
                Err(e) => {
                    self.finished = !c.lock().inflight.is_staged(self.write);
                    if !self.finished {
                        free_all(&c.store, &[loc], self.undo());
                    }
                    return Err(e);
                }
            }
        }
        Err(WriteError::Full("the cleaner kept reclaiming the write's own blobs".into()))
    }
}

impl StreamedPut {
    /// How an uninstalled first fragment is freed: durably if dirty (a complete dirty version
    /// would win over the acknowledged one after a crash).
    fn undo(&self) -> Durability {
        if self.dirty {
            Durability::Sync
        } else {
            Durability::None
        }
    }
}

impl Drop for StreamedPut {
    fn drop(&mut self) {
        if self.finished {
            return;
        }
        let c = &self.cache;
        let staged: Vec<_> = {
            let mut s = c.lock();
            let v = s.inflight.take(self.write);
            let v: Vec<_> = v.into_iter().flatten().collect();
            s.stats.wasted(v.iter().map(|l| l.len).sum::<u64>());
            v
        };
        // Without its first fragment the version is incomplete: restart recovery drops it even
        // if these frees are lost in a crash.
        free_all(&c.store, &staged, Durability::None);
    }
}
