//! The write paths: [`Cache::fill`] (a fetched fragment offered to the cache), [`Cache::put`]
//! (a client write: write-back dirty, or write-through clean), [`Cache::mark_clean`] (after the
//! flusher wrote the backend), [`Cache::delete`].

use std::cell::Cell;
use std::fmt;
use std::time::Duration;

use reo_store::{Durability, Location, Placement, PutOptions, Scheme};

use super::cache::{free_all, Cache};
use super::memory::MemCopy;
use super::objects::{frag_count, frag_len, new_entry};
use super::placement::{object_version, placement_of, version_tag};
use super::state::State;
use crate::admission::{Decision, Request};
use crate::header::{BlobHeader, BlobKind, HeaderRef};
use crate::index::{frag_key, MAX_FRAGMENTS};
use crate::object::{Class, MAX_OBJECT_SIZE};

/// What the cache keeps about an object besides its bytes (written into its blob headers).
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct ObjectMeta {
    /// The object's ETag (S3: changes with the content).
    pub etag: String,
    /// The object's content type.
    pub content_type: String,
    /// Last-modified time, ns since the Unix epoch.
    pub mtime_ns: u64,
    /// User metadata (S3 `x-amz-meta-*`), at most [`crate::header::MAX_USER_META`] bytes.
    pub user: Vec<(String, String)>,
    /// System metadata: standard headers and checksum by lower-case header name, within the same
    /// limits as `user`.
    pub system: Vec<(String, String)>,
}

/// Longest object key the cache stores (S3 keys are at most 1,024 bytes, plus the bucket name);
/// the key also goes into every blob header.
pub const MAX_KEY_LEN: usize = 4096;

/// Why a write was not taken. Nothing is lost: the caller still holds the data.
#[derive(Debug)]
pub enum WriteError {
    /// Sense code 0x64: no evictable space (everything else is dirty or pinned). Retry later
    /// (the gateway answers 503 SlowDown).
    Full(String),
    /// The object is larger than the cache or the format allows.
    TooLarge(String),
    /// The store refused (no healthy devices, I/O errors, out of space after cleaning).
    Store(reo_store::Error),
    /// A dirty object's bytes could not be read back beyond its redundancy: data loss.
    DirtyLost(String),
}

impl fmt::Display for WriteError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            WriteError::Full(m) => write!(f, "cache full (0x64): {m}"),
            WriteError::TooLarge(m) => write!(f, "object too large: {m}"),
            WriteError::Store(e) => write!(f, "flash store: {e}"),
            WriteError::DirtyLost(m) => write!(f, "DATA LOSS: {m}"),
        }
    }
}

impl std::error::Error for WriteError {}

impl From<reo_store::Error> for WriteError {
    fn from(e: reo_store::Error) -> Self {
        WriteError::Store(e)
    }
}

/// What became of a fill.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum FillOutcome {
    /// Written to flash.
    Admitted,
    /// Not written; the reason (an admission policy's, or "full").
    Rejected(&'static str),
    /// The fragment was already cached (a concurrent fill won).
    AlreadyCached,
    /// The cache holds a newer (dirty) version of the object: the backend's bytes are older.
    Stale,
    /// The cache holds another clean version of the object, which [`Cache::fill_same_version`]
    /// leaves in place: nothing changed.
    OtherVersion,
}

/// Receipt of a client write: the version to pass to [`Cache::mark_clean`].
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct PutReceipt {
    /// [`object_version`] of the written object; 0 for a clean write that admission refused or that
    /// went to the dedup cache (nothing to mark clean).
    pub version: u64,
}

thread_local! {
    /// The buffer of this thread's last encoded header (a put encodes one per blob).
    static SPARE_HEADER: Cell<Vec<u8>> = const { Cell::new(Vec::new()) };
}

/// An encoded blob header whose buffer returns to [`SPARE_HEADER`] when dropped.
pub(crate) struct EncodedHeader(Vec<u8>);

impl std::ops::Deref for EncodedHeader {
    type Target = [u8];
    fn deref(&self) -> &[u8] {
        &self.0
    }
}

impl Drop for EncodedHeader {
    fn drop(&mut self) {
        SPARE_HEADER.set(std::mem::take(&mut self.0));
    }
}

/// The encoded header of fragment `frag` of `key` (an object of `size` bytes), of streamed
/// write `write` (0: none; see [`crate::header`]).
pub(crate) fn encode_header(
    key: &[u8],
    size: u64,
    frag: u32,
    state: (bool, Class),
    meta: &ObjectMeta,
    write: u64,
) -> EncodedHeader {
    let mut buf = EncodedHeader(SPARE_HEADER.take());
    let (dirty, class) = state;
    HeaderRef {
        kind: BlobKind::Fragment,
        dirty,
        class,
        object_size: size,
        fragment: frag,
        mtime_ns: meta.mtime_ns,
        key,
        etag: &meta.etag,
        content_type: &meta.content_type,
        user: &meta.user,
        system: &meta.system,
        write,
    }
    .encode_into(&mut buf.0);
    buf
}

impl Cache {
    fn header(&self, key: &[u8], size: u64, frag: u32, dirty: bool, class: Class, meta: &ObjectMeta) -> EncodedHeader {
        encode_header(key, size, frag, (dirty, class), meta, 0)
    }

    pub(crate) fn check_size(&self, key: &[u8], size: u64, meta: &ObjectMeta) -> Result<(), WriteError> {
        if key.len() > MAX_KEY_LEN {
            return Err(WriteError::TooLarge(format!(
                "key of {} bytes exceeds the cache's limit of {MAX_KEY_LEN}",
                key.len()
            )));
        }
        for (what, pairs) in [("user", &meta.user), ("system", &meta.system)] {
            let bytes: usize = pairs.iter().map(|(k, v)| k.len() + v.len()).sum();
            if bytes > crate::header::MAX_USER_META || pairs.len() > 255 {
                return Err(WriteError::TooLarge(format!(
                    "{} {what} metadata entries of {bytes} bytes exceed the cache's limit of 255 entries and {} bytes",
                    pairs.len(),
                    crate::header::MAX_USER_META
                )));
            }
        }
        if size > MAX_OBJECT_SIZE || frag_count(size, self.cfg.fragment_size) > MAX_FRAGMENTS {
            return Err(WriteError::TooLarge(format!("{size} bytes exceeds the cache's object limit")));
        }
        Ok(())
    }

    /// Writes one blob, cleaning (and in cache-based mode evicting) when the store is full, and
    /// evicting when its metadata room is (`Cache::make_metadata_room`).
    pub(crate) fn put_blob(
        &self,
        header: &[u8],
        data: &[u8],
        scheme: Scheme,
        sync: bool,
        placement: u64,
    ) -> Result<Location, WriteError> {
        let opts = PutOptions::new(scheme)
            .durability(if sync { Durability::Sync } else { Durability::None })
            .placement(placement);
        // A record past the store's metadata room would fail its next checkpoint: evict first.
        let fits = || self.store.record_fits(header.len(), data.len() as u64, scheme);
        if !fits() {
            self.make_metadata_room(self.store.record_len(header.len(), data.len() as u64, scheme));
            if !fits() {
                return Err(WriteError::Full(
                    "the store's metadata room is full of objects that cannot be evicted (dirty, leased or being written)"
                        .into(),
                ));
            }
        }
        let mut attempts = 0;
        loop {
            match self.store.put(header, data, &opts) {
                Err(reo_store::Error::OutOfSpace { .. }) if attempts < 64 => {
                    attempts += 1;
                    if !self.make_room() {
                        return Err(WriteError::Full("flash full of dirty or pinned data".into()));
                    }
                }
                r => return r.map_err(WriteError::from),
            }
        }
    }

    /// Offers fragment `frag` of `key` (an object of `object_size` bytes, fetched from the backend
    /// after a miss) to the cache. Admission decides; an admitted fragment is written to flash.
    ///
    /// `token` is [`GetResult::token`](super::GetResult::token) of the miss (or [`Cache::token`]
    /// taken before the fetch): if `key` was written or deleted since, the fetched bytes may be
    /// older than the backend's and the fill is refused as stale.
    ///
    /// A clean copy of another version (the backend changed since it was cached) is replaced.
    #[allow(clippy::too_many_arguments)]
    pub fn fill(
        &self,
        key: &[u8],
        object_size: u64,
        frag: u32,
        data: &[u8],
        meta: &ObjectMeta,
        token: u64,
        now_ns: u64,
    ) -> Result<FillOutcome, WriteError> {
        self.fill_inner(key, object_size, frag, data, meta, token, now_ns, true)
    }

    /// [`Cache::fill`] that leaves a cached copy of another version alone
    /// ([`FillOutcome::OtherVersion`]). For a caller that lets readers look at the object's
    /// metadata and then its bytes under a shared lock: adding fragments of the version they
    /// saw cannot change what they read, replacing the version could (the caller then fills
    /// again under its exclusive lock).
    #[allow(clippy::too_many_arguments)]
    pub fn fill_same_version(
        &self,
        key: &[u8],
        object_size: u64,
        frag: u32,
        data: &[u8],
        meta: &ObjectMeta,
        token: u64,
        now_ns: u64,
    ) -> Result<FillOutcome, WriteError> {
        self.fill_inner(key, object_size, frag, data, meta, token, now_ns, false)
    }

    #[allow(clippy::too_many_arguments)]
    fn fill_inner(
        &self,
        key: &[u8],
        object_size: u64,
        frag: u32,
        data: &[u8],
        meta: &ObjectMeta,
        token: u64,
        now_ns: u64,
        replace: bool,
    ) -> Result<FillOutcome, WriteError> {
        self.check_size(key, object_size, meta)?;
        let fs = self.cfg.fragment_size;
        if u64::from(frag) >= frag_count(object_size, fs) || data.len() as u64 != frag_len(object_size, frag, fs) {
            return Err(WriteError::TooLarge(format!(
                "fragment {frag} of {} bytes does not fit an object of {object_size} bytes",
                data.len()
            )));
        }
        let (class, req, dedup, seen) = {
            let mut s = self.lock();
            s.objects.advance(now_ns);
            s.stats.backend_read(data.len() as u64);
            if s.invalidations.changed_since(key, token) {
                return Ok(FillOutcome::Stale);
            }
            // The class of the cached part of the object, if any (a new object's is the budget's).
            let mut class = None;
            if let Some(slot) = s.objects.find(key) {
                let e = s.objects.get(slot).expect("found");
                if e.dirty() {
                    // Cached whole and newer than anything the backend holds.
                    return Ok(FillOutcome::Stale);
                }
                // Another version of the object (the backend changed, or a write raced this fetch):
                // its fragments must not mix with these bytes, and a one-fragment copy of it
                // must not stay as if it were this one (a get of this version misses it).
                let other = !self.holds_version(&s, slot, &meta.etag);
                if (e.size() != object_size || other) && !replace {
                    return Ok(FillOutcome::OtherVersion);
                }
                if e.size() != object_size || other {
                    let locs = s.forget_object(slot, self.cfg.fragment_size);
                    drop(s);
                    free_all(&self.store, &locs, Durability::None);
                    s = self.lock();
                    // Unlocked meanwhile: another fill may have made a new entry.
                    class = s.objects.find(key).and_then(|slot| s.objects.get(slot)).map(|e| e.class());
                } else if s.objects.location(slot, frag, fs).is_some() {
                    return Ok(FillOutcome::AlreadyCached);
                } else {
                    class = Some(e.class());
                }
            }
            let req = Request::read_miss(self.admission_key(key), u64::from(frag) * fs, data.len() as u64, now_ns)
                .with_occupancy(s.policy.used_bytes(), self.cfg.capacity_bytes);
            if let Some(why) = admission_refusal(s.admitter.decide(&req)) {
                return Ok(FillOutcome::Rejected(why));
            }
            let class = match class {
                Some(c) => c,
                None => s.classes.new_object_class(object_size),
            };
            (class, req, s.dedup.is_some(), s.inflight.orphans_freed())
        };
        if dedup {
            let slot = {
                let mut s = self.lock();
                s.objects.find_or_insert(key, object_size, class, fs)
            };
            return Ok(if self.dedup_insert(key, slot, frag, object_size, data, Some(token), false) {
                self.lock().admitter.on_insert(&req);
                FillOutcome::Admitted
            } else {
                FillOutcome::Rejected("full")
            });
        }
        let header = self.header(key, object_size, frag, false, class, meta);
        let mut put = self.put_blob(&header, data, self.classes.of(class), false, placement_of(key));
        // Too few devices left for the class's scheme (rs(3,2) on 2 devices; a stripe without
        // parity over a failed device): clean data can always be refetched, so it is cached cold,
        // and if the cold scheme cannot be written either, on one surviving device (with
        // `degraded_fills`), rather than not at all — a cache keeps serving while one device works.
        let mut tried = self.classes.of(class);
        let one_device = self.cfg.degraded_fills.then_some(Scheme::None(Placement::Isolated));
        for fallback in std::iter::once(self.classes.of(Class::Cold)).chain(one_device) {
            if !matches!(put, Err(WriteError::Store(reo_store::Error::InsufficientDevices { .. }))) || fallback == tried
            {
                continue;
            }
            let header = self.header(key, object_size, frag, false, Class::Cold, meta);
            put = self.put_blob(&header, data, fallback, false, placement_of(key));
            tried = fallback;
        }
        let loc = match put {
            Ok(l) => l,
            Err(WriteError::Store(reo_store::Error::InsufficientDevices { .. })) => {
                return Ok(FillOutcome::Rejected("devices"));
            }
            // A fill is optional: a full flash is a rejection, not an error.
            Err(WriteError::Full(_)) | Err(WriteError::Store(reo_store::Error::OutOfSpace { .. })) => {
                let mut s = self.lock();
                s.stats.full_rejection();
                return Ok(FillOutcome::Rejected("full"));
            }
            Err(e) => return Err(e),
        };
        let (outcome, to_free) = {
            let mut s = self.lock();
            let slot = s.objects.find_or_insert(key, object_size, class, fs);
            let e = s.objects.get(slot).expect("live");
            // Re-check what may have changed while the blob was written.
            let stale = s.invalidations.changed_since(key, token)
                || e.dirty()
                || e.size() != object_size
                || s.objects.version_tag(slot).is_some_and(|t| t != version_tag(&meta.etag));
            if self.lost_to_cleaner(&s, seen, &[loc]) {
                // The cleaner took the blob for a leftover and freed it: nothing to install.
                s.stats.wasted(loc.len);
                s.drop_entry_if_empty(slot);
                (FillOutcome::Rejected("full"), smallvec::smallvec![])
            } else if stale || s.objects.location(slot, frag, fs).is_some() {
                s.stats.wasted(loc.len);
                s.drop_entry_if_empty(slot);
                (if stale { FillOutcome::Stale } else { FillOutcome::AlreadyCached }, smallvec::smallvec![loc])
            } else {
                match s.policy_insert(slot, frag, data.len() as u64, fs) {
                    Ok(evicted) => {
                        s.objects.set_location(slot, frag, Some(&loc));
                        s.objects.set_version_tag(slot, version_tag(&meta.etag));
                        s.admitter.on_insert(&req);
                        s.stats.cache_write(loc.len);
                        (FillOutcome::Admitted, evicted)
                    }
                    Err(mut evicted) => {
                        s.stats.full_rejection();
                        s.stats.wasted(loc.len);
                        s.drop_entry_if_empty(slot);
                        evicted.push(loc);
                        (FillOutcome::Rejected("full"), evicted)
                    }
                }
            }
        };
        free_all(&self.store, &to_free, Durability::None);
        Ok(outcome)
    }

    /// A client write of the whole object `key`. `dirty` (write-back): class 1, on every device its
    /// scheme needs and fdatasync'ed before returning; it is never evicted before
    /// [`Cache::mark_clean`]. Not dirty (write-through): stored clean like a fill.
    pub fn put(
        &self,
        key: &[u8],
        data: &[u8],
        meta: &ObjectMeta,
        dirty: bool,
        now_ns: u64,
    ) -> Result<PutReceipt, WriteError> {
        let size = data.len() as u64;
        self.check_size(key, size, meta)?;
        if dirty && size > self.cfg.capacity_bytes && self.cfg.eviction == crate::config::EvictionMode::CacheBased {
            return Err(WriteError::TooLarge(format!(
                "{size} bytes exceeds the cache capacity {}",
                self.cfg.capacity_bytes
            )));
        }
        let fs = self.cfg.fragment_size;
        let (class, mut seen, in_memory) = {
            let mut s = self.lock();
            s.objects.advance(now_ns);
            s.stats.original_write(size);
            // Dirty data is the only copy: always cached. A clean write is a candidate like a fill.
            if !dirty {
                let req = Request::write(self.admission_key(key), 0, size, now_ns)
                    .with_occupancy(s.policy.used_bytes(), self.cfg.capacity_bytes);
                if admission_refusal(s.admitter.decide(&req)).is_some() {
                    drop(s);
                    self.delete(key); // the cached copy, if any, is now stale
                    return Ok(PutReceipt { version: 0 });
                }
            }
            // A clean write replaces what is cached: a new object to the budget.
            let class = if dirty { Class::Dirty } else { s.classes.new_object_class(size) };
            (class, s.inflight.orphans_freed(), s.memory.admits(size))
        };
        // A recently written object is likely read soon: the memory tier takes a copy with it.
        // (Only its length on the simulator's byte-less media: a replay must not hold the trace's
        // bytes.)
        let copy = in_memory.then(|| match self.store.stores_bytes() {
            true => MemCopy::Bytes(bytes::Bytes::copy_from_slice(data)),
            false => MemCopy::Sized(size),
        });
        let n = frag_count(size, fs) as u32;
        if !dirty && self.lock().dedup.is_some() {
            self.delete(key);
            let slot = self.lock().objects.insert(new_entry(key, size, class, fs));
            for f in 0..n {
                let a = (u64::from(f) * fs) as usize;
                self.dedup_insert(key, slot, f, size, &data[a..a + frag_len(size, f, fs) as usize], None, false);
            }
            return Ok(PutReceipt { version: 0 });
        }
        let mut locs = Vec::with_capacity(n as usize);
        let mut attempts = 0;
        // The blobs of a dirty write that is not installed are freed durably: a complete dirty
        // version is the newest on flash, and after a crash it would win over the acknowledged
        // one (restart recovery keeps the newest complete dirty version).
        let undo = if dirty { Durability::Sync } else { Durability::None };
        let (to_free, old_dirty) = loop {
            for f in 0..n {
                let a = (u64::from(f) * fs) as usize;
                let b = a + frag_len(size, f, fs) as usize;
                let header = self.header(key, size, f, dirty, class, meta);
                match self.put_blob(&header, &data[a..b], self.classes.of(class), dirty, placement_of(key)) {
                    Ok(l) => locs.push(l),
                    Err(e) => {
                        free_all(&self.store, &locs, undo);
                        return Err(e);
                    }
                }
            }
            match self.install(
                key,
                size,
                class,
                dirty,
                locs.clone(),
                version_tag(&meta.etag),
                seen,
                None,
                copy.clone(),
            )? {
                Some(done) => break done,
                None => {
                    // The cleaner (run by a later fragment's `make_room`, or by another thread)
                    // freed an earlier fragment before it was installed: write the object again.
                    free_all(&self.store, &locs, undo);
                    locs.clear();
                    attempts += 1;
                    if attempts >= 4 {
                        return Err(WriteError::Full("the cleaner kept reclaiming the write's own blobs".into()));
                    }
                    seen = self.lock().inflight.orphans_freed();
                }
            }
        };
        // A replaced dirty version must not come back after a crash (its flush would overwrite
        // newer data): its frees are durable.
        free_all(&self.store, &to_free, if dirty || old_dirty { Durability::Sync } else { Durability::None });
        Ok(PutReceipt { version: object_version(&meta.etag, size, meta.mtime_ns) })
    }

    /// Installs a new version of `key` made of `locs` (followed by the fragments of streamed
    /// write `staged`, taken from [`InFlight`](super::inflight::InFlight) under the lock); returns the blobs to free
    /// (the old version's and evicted ones). On failure the old version is kept and the new
    /// blobs freed. `None` (nothing changed, nothing freed, `staged` still staged) if the cleaner
    /// freed one of `locs` as an orphan since the writer saw `seen`.
    #[allow(clippy::too_many_arguments)]
    pub(crate) fn install(
        &self,
        key: &[u8],
        size: u64,
        class: Class,
        dirty: bool,
        mut locs: Vec<Location>,
        tag: u32,
        seen: u64,
        staged: Option<u64>,
        copy: Option<MemCopy>,
    ) -> Result<Option<(Vec<Location>, bool)>, WriteError> {
        let fs = self.cfg.fragment_size;
        let mut s = self.lock();
        if self.lost_to_cleaner(&s, seen, &locs) {
            s.stats.wasted(locs.iter().map(|l| l.len).sum::<u64>());
            return Ok(None);
        }
        if let Some(w) = staged {
            let rest = s.inflight.take(w);
            // A fragment unreadable when the cleaner moved it, or lost with its devices while
            // the body arrived (a device sweep or a scrub only sees indexed blobs): the write is
            // refused whole, before it is acknowledged (the caller frees the rest).
            let lost =
                |l: &Option<Location>| l.as_ref().is_none_or(|l| self.store.health(l) == reo_store::BlobHealth::Lost);
            if rest.iter().any(lost) {
                s.inflight.restore(w, rest);
                return Err(WriteError::Full(
                    "a fragment of the write was unreadable when the cleaner moved it".into(),
                ));
            }
            locs.extend(rest.into_iter().flatten());
        }
        let locs = &locs[..];
        s.invalidate(key);
        let slot = s.objects.find_or_insert(key, 0, class, fs);
        let old_size = s.objects.get(slot).expect("live").size();
        let old: Vec<(u32, Location)> = (0..frag_count(old_size, fs) as u32)
            .filter_map(|f| s.objects.location(slot, f, fs).map(|l| (f, l)))
            .collect();
        for &(f, _) in &old {
            s.policy.remove(slot, f);
        }
        for f in 0..frag_count(old_size, fs) as u32 {
            s.dedup_forget(frag_key(slot, f));
        }
        // The object's own fragments are not candidates while it is being replaced.
        let was_dirty = s.objects.get(slot).expect("live").dirty();
        s.objects.get_mut(slot).expect("live").set_dirty(true);
        let mut freed = Vec::new();
        let mut inserted = Vec::new();
        let mut failed = false;
        for (f, l) in locs.iter().enumerate() {
            match s.policy_insert(slot, f as u32, l.len, fs) {
                Ok(ev) => {
                    freed.extend(ev);
                    inserted.push(f as u32);
                }
                Err(ev) => {
                    freed.extend(ev);
                    failed = true;
                    break;
                }
            }
        }
        if failed {
            for f in inserted {
                s.policy.remove(slot, f);
            }
            s.objects.get_mut(slot).expect("live").set_dirty(was_dirty);
            for &(f, l) in &old {
                let _ = s.policy_insert(slot, f, l.len, fs);
            }
            s.stats.full_rejection();
            s.stats.wasted(locs.iter().map(|l| l.len).sum::<u64>());
            s.drop_entry_if_empty(slot);
            drop(s);
            free_all(&self.store, &freed, Durability::None);
            // A refused dirty write must not come back after a crash (see `put`).
            free_all(&self.store, locs, if dirty { Durability::Sync } else { Durability::None });
            return Err(WriteError::Full("the rest of the cache is dirty or pinned".into()));
        }
        for &(f, _) in &old {
            s.objects.set_location(slot, f, None);
        }
        let e = s.objects.get_mut(slot).expect("live");
        e.set_blob(None);
        // A new version is classified afresh (a command's class applied to the old bytes).
        e.set_explicit_class(false);
        e.set_size(size);
        e.set_class(class);
        e.set_dirty(dirty);
        e.set_fragmented(frag_count(size, fs) > 1);
        for (f, l) in locs.iter().enumerate() {
            s.objects.set_location(slot, f as u32, Some(l));
            s.stats.cache_write(l.len);
        }
        s.objects.set_version_tag(slot, tag);
        if let Some(copy) = copy {
            let evicted = s.memory.insert(slot, copy);
            s.stats.memory_admitted(evicted);
        }
        freed.extend(old.into_iter().map(|(_, l)| l));
        Ok(Some((freed, was_dirty)))
    }

    /// The version of the dirty object in `slot` (from its first fragment's header).
    pub(crate) fn dirty_version(&self, s: &State, slot: u32) -> Option<u64> {
        let loc = s.objects.location(slot, 0, self.cfg.fragment_size)?;
        let h = BlobHeader::decode(&self.store.header(&loc)?)?;
        Some(object_version(&h.etag, h.object_size, h.mtime_ns))
    }

    /// The dirty object `key` at `version`: (slot, every fragment's location). `Ok(None)` if it
    /// is gone, clean or another version; `DirtyLost` if a fragment is missing.
    fn dirty_fragments(&self, s: &State, key: &[u8], version: u64) -> Result<Option<(u32, Vec<Location>)>, WriteError> {
        let fs = self.cfg.fragment_size;
        let Some(slot) = s.objects.find(key) else { return Ok(None) };
        let e = s.objects.get(slot).expect("found");
        if !e.dirty() || self.dirty_version(s, slot) != Some(version) {
            return Ok(None);
        }
        let mut locs = Vec::new();
        for f in 0..frag_count(e.size(), fs) as u32 {
            match s.objects.location(slot, f, fs) {
                Some(l) => locs.push(l),
                None => {
                    return Err(WriteError::DirtyLost(format!(
                        "dirty fragment {f} of {:?} was lost beyond its redundancy",
                        String::from_utf8_lossy(key)
                    )))
                }
            }
        }
        Ok(Some((slot, locs)))
    }

    /// The version of `key`'s dirty data, if it is dirty (a flusher whose `mark_clean` returned
    /// false uses it to tell "rewritten since" from "moved under the rewrite: retry").
    pub fn dirty_version_of(&self, key: &[u8]) -> Option<u64> {
        let s = self.lock();
        let slot = s.objects.find(key)?;
        if !s.objects.get(slot)?.dirty() {
            return None;
        }
        self.dirty_version(&s, slot)
    }

    /// The flusher wrote version `version` of `key` (from [`PutReceipt`] or [`Cache::dirty_keys`])
    /// to the backend: the object becomes clean and its blobs move to the clean scheme (the extra
    /// replicas of dirty data are dropped). Returns false if the object changed since (a newer
    /// write is still dirty), is gone, is pinned and found no room, or (with dedup) moved under
    /// the rewrite (the flusher retries later).
    ///
    /// When the clean copy finds no room, or keeps losing races with the cleaner (a flash under
    /// pressure), the object is dropped from the cache instead: the backend holds it, and a flush
    /// must always free space.
    ///
    /// The change is durable on return: a crash cannot bring the dirty version back, to be
    /// flushed again over a newer state of the backend.
    pub fn mark_clean(&self, key: &[u8], version: u64) -> Result<bool, WriteError> {
        self.mark_clean_within(key, version, Duration::ZERO)
    }

    /// [`Cache::mark_clean`], its change made durable by the store's next journal batch, which
    /// is due `within` at the latest (`Store::flush_within`): concurrent flushes (the gateway's
    /// flusher workers) share one batch, one journal sector on every device, instead of a batch
    /// each. Durable on return all the same.
    pub fn mark_clean_within(&self, key: &[u8], version: u64, within: Duration) -> Result<bool, WriteError> {
        let clean = self.mark_clean_as(key, version, Durability::None)?;
        self.store.flush_within(Some(within))?;
        Ok(clean)
    }

    fn mark_clean_as(&self, key: &[u8], version: u64, durability: Durability) -> Result<bool, WriteError> {
        for _ in 0..4 {
            match self.rewrite_clean(key, version, durability)? {
                Some(done) => return Ok(done),
                None => continue, // moved under the rewrite
            }
        }
        Ok(self.drop_flushed(key, version, durability))
    }

    /// One attempt of [`Cache::mark_clean`]: `None` if a blob moved under the rewrite.
    fn rewrite_clean(&self, key: &[u8], version: u64, durability: Durability) -> Result<Option<bool>, WriteError> {
        let Some((slot, old)) = self.dirty_fragments(&self.lock(), key, version)? else { return Ok(Some(false)) };
        if self.lock().dedup.is_some() {
            return self.mark_clean_into_dedup(key, slot, version, &old, durability).map(Some);
        }
        // Clean now: hot (parity) or cold (isolated) by its H, or the class a command set.
        let (class, seen) = {
            let s = self.lock();
            let mut e = s.objects.get(slot).expect("found").clone();
            e.set_dirty(false);
            (s.classes.class_of(&e), s.inflight.orphans_freed())
        };
        let scheme = self.classes.of(class);
        if scheme.is_isolated() {
            if let [one] = old[..] {
                if let Some(done) = self.clean_in_place(key, version, slot, one, class, durability)? {
                    return Ok(Some(done));
                }
            }
        }
        let mut new = Vec::with_capacity(old.len());
        for l in &old {
            let moved = (|| {
                let data = self.store.read_all(l)?;
                let hdr = self.store.header(l).ok_or(reo_store::Error::NotFound { seq: l.seq })?;
                let mut h = BlobHeader::decode(&hdr).ok_or(reo_store::Error::NotFound { seq: l.seq })?;
                h.dirty = false;
                h.class = class;
                self.put_blob(&h.encode(), &data, scheme, false, placement_of(key))
            })();
            match moved {
                Ok(n) => new.push(n),
                Err(WriteError::Store(reo_store::Error::NotFound { .. })) => {
                    // Relocated by the cleaner meanwhile: try again later.
                    self.lock().stats.wasted(new.iter().map(|l| l.len).sum::<u64>());
                    free_all(&self.store, &new, Durability::None);
                    return Ok(None);
                }
                Err(WriteError::Full(_)) | Err(WriteError::Store(reo_store::Error::OutOfSpace { .. })) => {
                    // The flash is full of dirty (or pinned) data, so the clean copy has no room.
                    // The object is safe in the backend now: drop its dirty replicas instead, so
                    // that flushing always frees space (else a flash full of dirty data could
                    // never drain, and every fill and put after it would be refused).
                    free_all(&self.store, &new, Durability::None);
                    return Ok(Some(self.drop_flushed(key, version, durability)));
                }
                Err(e) => {
                    free_all(&self.store, &new, Durability::None);
                    return Err(e);
                }
            }
        }
        let mut s = self.lock();
        let still =
            matches!(self.dirty_fragments(&s, key, version), Ok(Some((sl, ref now))) if sl == slot && *now == old);
        if still && self.lost_to_cleaner(&s, seen, &new) {
            // A clean copy was freed by the cleaner before it was installed: retry.
            s.stats.wasted(new.iter().map(|l| l.len).sum::<u64>());
            drop(s);
            free_all(&self.store, &new, Durability::None);
            return Ok(None);
        }
        if !still {
            s.stats.wasted(new.iter().map(|l| l.len).sum::<u64>());
            let rewritten = !matches!(self.dirty_fragments(&s, key, version), Ok(Some(_)));
            drop(s);
            free_all(&self.store, &new, Durability::None);
            // A newer write (or a delete) replaced this version: done; else it moved: retry.
            return Ok(if rewritten { Some(false) } else { None });
        }
        for (f, l) in new.iter().enumerate() {
            s.objects.set_location(slot, f as u32, Some(l));
            s.stats.gc_write(l.len);
        }
        set_clean(&mut s, slot, class);
        drop(s);
        free_all(&self.store, &old, durability);
        Ok(Some(true))
    }

    /// [`Cache::mark_clean`] without a rewrite, for a one-blob object going to the isolated
    /// scheme: the store keeps the first of its dirty copies as the clean copy and sheds the
    /// others (`Store::shed_copies`), under the cache's lock (so no write, delete or cleaner
    /// decision on the object comes in between). `None` when the store cannot (the blob is not
    /// eligible, or moved): the caller rewrites it.
    fn clean_in_place(
        &self,
        key: &[u8],
        version: u64,
        slot: u32,
        old: Location,
        class: Class,
        durability: Durability,
    ) -> Result<Option<bool>, WriteError> {
        // The copy kept must be good: checked (a device read) before the lock is taken.
        if !self.store.can_shed(&old) {
            return Ok(None);
        }
        let mut s = self.lock();
        let still =
            matches!(self.dirty_fragments(&s, key, version), Ok(Some((sl, ref now))) if sl == slot && now[..] == [old]);
        let header = self.store.header(&old).and_then(|h| BlobHeader::decode(&h));
        let (true, Some(mut h)) = (still, header) else { return Ok(None) };
        h.dirty = false;
        h.class = class;
        // Lock order: the cache's state, then the store's gate and band (as the cleaner's
        // orphan frees); no durability wait under the lock.
        let kept = match self.store.shed_copies(&old, &h.encode(), Durability::None) {
            Ok(Some(kept)) => kept,
            Ok(None) | Err(reo_store::Error::NotFound { .. }) => return Ok(None),
            Err(e) => return Err(e.into()),
        };
        s.objects.set_location(slot, 0, Some(&kept));
        s.stats.cleaned_in_place(kept.len);
        set_clean(&mut s, slot, class);
        drop(s);
        if durability == Durability::Sync {
            self.store.flush()?;
        }
        Ok(Some(true))
    }

    /// Forgets a flushed dirty object whose clean copy found no room; false if it is no longer
    /// dirty at `version` or is pinned by a live lease (it then stays dirty; the flusher retries).
    fn drop_flushed(&self, key: &[u8], version: u64, durability: Durability) -> bool {
        let mut s = self.lock();
        let Ok(Some((slot, _))) = self.dirty_fragments(&s, key, version) else { return false };
        let leased = s.objects.leased(slot);
        if leased {
            return false;
        }
        s.stats.flushed_dropped();
        let locs = s.forget_object(slot, self.cfg.fragment_size);
        drop(s);
        // Durable frees (unless queued by the caller): the dropped dirty version must not come
        // back as dirty after a crash.
        free_all(&self.store, &locs, durability);
        true
    }

    /// `mark_clean` with dedup on: the flushed fragments enter the dedup cache (written once if
    /// their content is new, counted as GC writes like any rewrite) and the dirty replicas are
    /// freed.
    fn mark_clean_into_dedup(
        &self,
        key: &[u8],
        slot: u32,
        version: u64,
        old: &[Location],
        durability: Durability,
    ) -> Result<bool, WriteError> {
        let mut datas = Vec::with_capacity(old.len());
        for l in old {
            match self.store.read_all(l) {
                Ok(d) => datas.push(d),
                Err(reo_store::Error::NotFound { .. }) => return Ok(false), // moved: retry later
                Err(e) => return Err(e.into()),
            }
        }
        let size = {
            let mut s = self.lock();
            let still =
                matches!(self.dirty_fragments(&s, key, version), Ok(Some((sl, ref now))) if sl == slot && now == old);
            if !still {
                return Ok(false);
            }
            for f in 0..old.len() as u32 {
                s.policy.remove(slot, f);
                s.objects.set_location(slot, f, None);
            }
            let e = s.objects.get_mut(slot).expect("live");
            e.set_dirty(false);
            e.set_class(Class::Cold);
            e.size()
        };
        for (f, d) in datas.iter().enumerate() {
            self.dedup_insert(key, slot, f as u32, size, d, None, true);
        }
        free_all(&self.store, old, durability);
        Ok(true)
    }

    /// Forgets `key` (delete or invalidation). A dirty object's frees are made durable so that it
    /// cannot come back after a crash. Returns whether it was cached.
    pub fn delete(&self, key: &[u8]) -> bool {
        let mut s = self.lock();
        s.invalidate(key);
        let Some(slot) = s.objects.find(key) else { return false };
        let dirty = s.objects.get(slot).expect("found").dirty();
        let locs = s.forget_object(slot, self.cfg.fragment_size);
        drop(s);
        free_all(&self.store, &locs, if dirty { Durability::Sync } else { Durability::None });
        true
    }

    /// Forgets `key` for good: [`Cache::delete`], then every free queued so far is made durable,
    /// so that neither this copy nor one dropped earlier (evicted, invalidated: those frees are
    /// not durable at once) comes back after a crash. For a client's delete or overwrite that
    /// goes to the backend: a clean copy surviving it would be served in place of the backend's
    /// newer state. Returns whether it was cached.
    pub fn discard(&self, key: &[u8]) -> Result<bool, reo_store::Error> {
        let cached = self.delete(key);
        self.store.flush()?;
        Ok(cached)
    }
}

/// The flushed object in `slot` is clean now, in `class`, its blobs installed by the caller.
fn set_clean(s: &mut State, slot: u32, class: Class) {
    let e = s.objects.get_mut(slot).expect("live");
    e.set_dirty(false);
    e.set_class(class);
    // The class was decided before the blobs moved; a recomputation since may disagree.
    s.classes.wake_reencoder();
}

/// `None` to admit, or the refusal's name (as counted in the admission stats).
pub(crate) fn admission_refusal(d: Decision) -> Option<&'static str> {
    match d {
        Decision::Admit => None,
        Decision::Reject(r) => Some(r.as_str()),
        Decision::Throttled(_) => Some("throttled"),
    }
}

impl Cache {
    /// The object's id for admission policies: the key's number with
    /// [`CacheConfig::numeric_keys`](crate::CacheConfig::numeric_keys) (so SEQR sees adjacent
    /// blocks as adjacent), else its hash.
    pub(crate) fn admission_key(&self, key: &[u8]) -> u64 {
        match <[u8; 8]>::try_from(key) {
            Ok(k) if self.cfg.numeric_keys => u64::from_le_bytes(k),
            _ => placement_of(key),
        }
    }
}
