//! The read path: [`Cache::get`] of a byte range — hits from flash, misses reported per fragment
//! for the caller to fetch from the backend (and offer back with `fill`).

use parking_lot::MutexGuard;
use reo_store::{Error as StoreError, Location, ReadBytes};

use super::dedup_cache::ContentRef;
use super::memory_read::{count_memory_hit, pieces_of, FromMemory};
use std::cell::Cell;

/// Turns the bytes of a concurrent blob read into the get's piece type.
type Convert<T> = fn(ReadBytes) -> T;

/// Per fragment of a get: (start, end, fragment, its own blob, or its dedup content).
type Step = (u64, u64, u32, Option<Location>, Option<ContentRef>);

thread_local! {
    /// The plan buffer of this thread's last get (taken while in use, so never shared).
    static PLAN: Cell<Vec<Step>> = const { Cell::new(Vec::new()) };
}
use super::cache::Cache;
use super::objects::frag_len;
use super::pieces::{GetResult, Piece, Pieces};
use super::state::State;
use super::write::WriteError;
use crate::index::frag_key;

impl Cache {
    /// Reads `[start, end)` of `key` (`end` = `u64::MAX`: to the end of the object) at time
    /// `now_ns` on the caller's clock. Counts one request. Misses are not fetched here: the caller
    /// fetches the missing ranges and offers them with [`Cache::fill`].
    ///
    /// Errors only when a *dirty* fragment cannot be read (its redundancy is exhausted): that data
    /// is nowhere else, so it must not be replaced by the backend's older copy.
    pub fn get(&self, key: &[u8], start: u64, end: u64, now_ns: u64) -> Result<GetResult, WriteError> {
        self.get_with(
            self.lock(),
            key,
            None,
            (start, end),
            now_ns,
            (Some(ReadBytes::into_vec), true),
            |loc, a, b| self.store.read(loc, a, b),
            |c, len, a, b| self.read_content(c, len, a, b),
        )
    }

    /// [`Cache::get`] with zero-copy pieces: the verified chunk bodies where the devices read them
    /// ([`reo_store::Store::read_bytes`]), for a caller that streams them on (the gateway's GET)
    /// instead of needing one buffer.
    ///
    /// Not `first`: the rest of a request begun by an earlier call (a reader that fetches a long
    /// range window by window): the same lookup, reads and byte counts, but not another request —
    /// no request or hit count, no touch of the object's read counter, no admission `on_hit`.
    pub fn get_shared(
        &self,
        key: &[u8],
        start: u64,
        end: u64,
        now_ns: u64,
        first: bool,
    ) -> Result<GetResult<ReadBytes>, WriteError> {
        self.get_with(
            self.lock(),
            key,
            None,
            (start, end),
            now_ns,
            (Some(std::convert::identity), first),
            |loc, a, b| self.store.read_bytes(loc, a, b),
            |c, len, a, b| self.read_content(c, len, a, b).map(ReadBytes::from),
        )
    }

    /// [`Cache::get_shared`] of the version whose ETag is `etag` only: if the cache holds
    /// another version of `key` (the backend changed, another node wrote it), the range is
    /// reported missing, as for an object not cached, and nothing of the other version is read.
    /// For a caller that sends the object's metadata it looked up before (its checksum, length
    /// and ETag): the bytes must be of that version.
    pub fn get_version(
        &self,
        key: &[u8],
        etag: &str,
        (start, end): (u64, u64),
        now_ns: u64,
        first: bool,
    ) -> Result<GetResult<ReadBytes>, WriteError> {
        self.get_with(
            self.lock(),
            key,
            Some(etag),
            (start, end),
            now_ns,
            (Some(std::convert::identity), first),
            |loc, a, b| self.store.read_bytes(loc, a, b),
            |c, len, a, b| self.read_content(c, len, a, b).map(ReadBytes::from),
        )
    }

    /// [`Cache::get_version`] of a first call with every device read made on the calling thread
    /// ([`reo_store::Store::read_bytes_on_caller`]) and the fragments read one after another:
    /// for a small object whose caller must not hand off to the device lanes. The caller blocks
    /// for the reads and bounds how many such calls it has in flight.
    /// `None`, with nothing counted, where that could wait for more than the reads: the cache's
    /// lock taken, a recompute of the hot class due (a pass over the index, made by a get under
    /// the lock), dedup on (contents are read through the device lanes), or a device of the
    /// store slow to answer (a read on the caller cannot leave it behind).
    pub fn get_version_on_caller(
        &self,
        key: &[u8],
        etag: &str,
        (start, end): (u64, u64),
        now_ns: u64,
    ) -> Option<Result<GetResult<ReadBytes>, WriteError>> {
        let s = self.try_lock()?;
        if s.classes.due(self.cfg.hot_recompute_every) || s.dedup.is_some() || self.store.has_slow_device() {
            return None;
        }
        Some(self.get_with(
            s,
            key,
            Some(etag),
            (start, end),
            now_ns,
            (None, true),
            |loc, a, b| self.store.read_bytes_on_caller(loc, a, b),
            |c, len, a, b| self.read_content(c, len, a, b).map(ReadBytes::from),
        ))
    }

    /// [`Cache::get`] for the simulator: the same lookup, policy updates, statistics and device
    /// reads, but the pieces carry byte counts instead of bytes (see [`reo_store::Store::read_sized`]),
    /// so replaying a trace over byte-less media copies and allocates nothing per byte.
    pub fn get_sized(&self, key: &[u8], start: u64, end: u64, now_ns: u64) -> Result<GetResult<u64>, WriteError> {
        self.get_with(
            self.lock(),
            key,
            None,
            (start, end),
            now_ns,
            (None, true),
            |loc, a, b| self.store.read_sized(loc, a, b),
            |c, len, a, b| self.read_content_sized(c, len, a, b),
        )
    }

    /// The get path, with the reads of a cached fragment blob (`read(loc, a, b)`) and of a
    /// deduplicated content (`content(c, fragment length, a, b)`) supplied by the caller. With
    /// `concurrent` (`Some(bytes to T)`), the blob reads of a multi-fragment range are all begun
    /// before the first is finished ([`reo_store::Store::begin_read_bytes`]): every device they
    /// touch works on them at once (a fragment's blob may sit on a single device), with no thread
    /// per fragment. Without `counted` the call continues a request already counted (the later
    /// windows of [`Cache::get_shared`]). With `expect` (an ETag), a cached object of another
    /// version is a miss ([`Cache::get_version`]).
    #[allow(clippy::too_many_arguments)]
    fn get_with<T: FromMemory>(
        &self,
        mut s: MutexGuard<'_, State>,
        key: &[u8],
        expect: Option<&str>,
        (start, end): (u64, u64),
        now_ns: u64,
        (concurrent, counted): (Option<Convert<T>>, bool),
        read: impl Fn(&Location, u64, u64) -> reo_store::Result<T>,
        read_content: impl Fn(&ContentRef, u64, u64, u64) -> reo_store::Result<T>,
    ) -> Result<GetResult<T>, WriteError> {
        let fs = self.cfg.fragment_size;
        s.objects.advance(now_ns);
        if counted {
            s.stats.request();
            self.tick_classes(&mut s);
        }
        let Some(slot) = s.objects.find(key) else {
            if end != u64::MAX {
                s.stats.requested(end.saturating_sub(start));
            }
            return Ok(GetResult {
                size: None,
                token: s.invalidations.epoch(),
                pieces: smallvec::smallvec![Piece { start, end, data: None }],
            });
        };
        if expect.is_some_and(|etag| !self.holds_version(&s, slot, etag)) {
            // Another version: a miss of the one asked for, as if the key were not cached.
            if end != u64::MAX {
                s.stats.requested(end.saturating_sub(start));
            }
            let token = s.invalidations.epoch();
            return Ok(GetResult { size: None, token, pieces: smallvec::smallvec![Piece { start, end, data: None }] });
        }
        if counted {
            s.objects.get_mut(slot).expect("found").touch();
            s.admitter.on_hit(self.admission_key(key), now_ns);
        }
        let e = s.objects.get(slot).expect("found");
        let (size, dirty, class) = (e.size(), e.dirty(), s.classes.class_of(e));
        let end = end.min(size);
        if start >= end {
            if counted {
                s.stats.hit(class);
            }
            return Ok(GetResult { size: Some(size), token: s.invalidations.epoch(), pieces: Pieces::new() });
        }
        s.stats.requested(end - start);
        if let Some(copy) = s.memory.get(slot, T::BYTES, size) {
            let token = count_memory_hit(&mut s, slot, class, (start, end), fs, counted);
            drop(s);
            // Outside the lock: a reader of owned bytes copies them.
            return Ok(GetResult { size: Some(size), token, pieces: pieces_of(&copy, start, end, fs) });
        }
        // A whole object read flash serves is copied into memory (if the tier takes its size).
        let keep = counted && start == 0 && end == size && s.memory.admits(size);
        // Reused across gets (every request plans; the simulator makes millions).
        let mut plan = PLAN.take();
        plan.clear();
        for f in (start / fs) as u32..=((end - 1) / fs) as u32 {
            let (fstart, fend) = (u64::from(f) * fs, (u64::from(f) + 1) * fs);
            let loc = s.objects.location(slot, f, fs);
            if loc.is_none() && dirty {
                // A dirty object is cached whole: a hole is a lost fragment, and the backend's
                // older bytes must not stand in for it.
                return Err(WriteError::DirtyLost(format!(
                    "dirty fragment {f} of {:?} was lost beyond its redundancy",
                    String::from_utf8_lossy(key)
                )));
            }
            let content = if loc.is_some() {
                s.policy.on_hit(slot, f);
                None
            } else {
                s.dedup_lookup(frag_key(slot, f))
            };
            plan.push((start.max(fstart), end.min(fend), f, loc, content));
        }
        if s.dedup.is_some() && !dirty && plan.iter().all(|p| p.3.is_none() && p.4.is_none()) {
            // Dedup keeps the entry while any fragment may be cached; none is: forget it.
            let whole = frag_len(size, 0, fs) == size || (start == 0 && end == size);
            if whole {
                let locs = s.forget_object(slot, fs);
                debug_assert!(locs.is_empty());
            }
        }
        let token = s.invalidations.epoch();
        drop(s);

        let mut pieces = Pieces::with_capacity(plan.len());
        let mut hit_bytes = 0;
        let mut raced = 0;
        let mut dedup_hits = 0;
        let read_one =
            |&(a, b, f, loc, _): &Step| loc.map(|loc| read(&loc, a - u64::from(f) * fs, b - u64::from(f) * fs));
        // Concurrent: every blob read is begun here and finished in the loop below; otherwise each
        // is done in the loop (no list to allocate: the simulator makes millions of gets).
        let mut begun: Vec<Option<reo_store::Result<reo_store::PendingRead<'_>>>> = match concurrent {
            Some(_) if plan.iter().filter(|p| p.3.is_some()).count() > 1 => plan
                .iter()
                .map(|&(a, b, f, loc, _)| {
                    let base = u64::from(f) * fs;
                    loc.map(|loc| self.store.begin_read_bytes(&loc, a - base, b - base))
                })
                .collect(),
            _ => Vec::new(),
        };
        for (i, step) in plan.iter().enumerate() {
            let &(a, b, f, loc, content) = step;
            let fbase = u64::from(f) * fs;
            let data = match loc {
                None => content.and_then(|c| {
                    let d = read_content(&c, frag_len(size, f, fs), a - fbase, b - fbase).ok();
                    if d.is_some() {
                        dedup_hits += 1;
                    }
                    d
                }),
                Some(loc) => {
                    let read = match (begun.get_mut(i), concurrent) {
                        (Some(r), Some(conv)) => r.take().map(|r| r.and_then(|p| p.finish()).map(conv)),
                        _ => read_one(step),
                    };
                    match read.expect("a cached fragment has a read") {
                        Ok(d) => Some(d),
                        Err(StoreError::NotFound { .. }) => {
                            // Evicted or relocated meanwhile. Looking again could find a slot
                            // reused by another object or another version: report a miss.
                            raced += 1;
                            None
                        }
                        Err(err) if dirty => {
                            // The only copy: keep it (the error may be transient) and say so.
                            return Err(WriteError::DirtyLost(format!(
                                "dirty fragment {f} of {:?} is unreadable: {err}",
                                String::from_utf8_lossy(key)
                            )));
                        }
                        Err(_) => {
                            self.drop_lost_fragment(key, f, &loc);
                            None
                        }
                    }
                }
            };
            if data.is_some() {
                hit_bytes += b - a;
            }
            pieces.push(Piece { start: a, end: b, data });
        }
        // Only bytes read from the object's own blobs (not through dedup) are copied.
        let keep = keep && plan.iter().all(|p| p.3.is_some());
        let copy = (keep && pieces.iter().all(|p| p.data.is_some())).then(|| T::copy_of(&pieces, size));
        // A reader that can share the copy gets its bytes from it, and the read's own buffers
        // go now: a slow client holds the object once, not twice.
        let pieces = match &copy {
            Some(c) if T::SHARES => pieces_of(c, start, end, fs),
            _ => pieces,
        };
        let mut s = self.lock();
        if let Some(copy) = copy {
            // Only if the object is still the one read: the key not written or deleted since the
            // lookup, and every fragment still in the blob it was read from (a blob's sequence
            // number is never reused, so the same locations are the same bytes). The slot alone
            // proves nothing: one freed by an eviction or a fill of another version is handed to
            // the next new entry, often the same key's.
            let same = !s.invalidations.changed_since(key, token)
                && s.objects.find(key) == Some(slot)
                && s.objects.get(slot).is_some_and(|e| e.size() == size)
                && plan.iter().all(|&(_, _, f, loc, _)| loc.is_some() && s.objects.location(slot, f, fs) == loc);
            if same {
                let evicted = s.memory.insert(slot, copy);
                s.stats.memory_admitted(evicted);
            }
        }
        PLAN.set(plan);
        s.stats.raced_reads(raced);
        s.stats.dedup_hits(dedup_hits);
        s.stats.served(class, hit_bytes);
        let result = GetResult { size: Some(size), token, pieces };
        if result.is_hit() && counted {
            s.stats.hit(class);
        }
        Ok(result)
    }

    /// Notes bytes fetched from the backend by the caller after a miss.
    pub fn record_backend_read(&self, bytes: u64) {
        self.lock().stats.backend_read(bytes);
    }

    /// Forgets a clean fragment whose blob could not be read beyond its redundancy.
    fn drop_lost_fragment(&self, key: &[u8], frag: u32, loc: &Location) {
        let mut s = self.lock();
        let Some(slot) = s.objects.find(key) else { return };
        if s.objects.location(slot, frag, self.cfg.fragment_size).as_ref() == Some(loc) {
            s.forget_fragment(slot, frag);
        }
        drop(s);
        let _ = self.store.free(loc, reo_store::Durability::None);
    }
}
