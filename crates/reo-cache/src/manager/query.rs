//! Queries about single objects (status, metadata, leases) and the snapshots the flusher and the
//! hot-threshold computation take.

use reo_store::Scheme;

use super::cache::Cache;
use super::objects::frag_count;
use super::state::State;
use super::write::ObjectMeta;
use crate::index::frag_key;
use crate::object::Class;

/// The state of one object, for queries (the Reo paper's per-object status, docs/REFERENCES.md
/// §P1; SDCC's query API, §P3).
#[derive(Debug, Clone, PartialEq)]
pub struct ObjectInfo {
    /// Object size in bytes.
    pub size: u64,
    /// Its class (metadata, dirty, hot or cold).
    pub class: Class,
    /// Holds acknowledged writes not yet on the backend.
    pub dirty: bool,
    /// Under a lease (pinned): not evicted while it lasts.
    pub pinned: bool,
    /// Reads since the object entered the cache.
    pub freq: u32,
    /// H = Freq / Size.
    pub hotness: f64,
    /// Fragments of the object (its size over the fragment size, rounded up).
    pub fragments: u64,
    /// Fragments on flash (its own blobs or, with dedup, content blobs).
    pub cached_fragments: u64,
    /// The redundancy schemes that hold the cached fragments, each once.
    pub schemes: Vec<Scheme>,
}

impl Cache {
    /// Status of one object.
    pub fn info(&self, key: &[u8]) -> Option<ObjectInfo> {
        let s = self.lock();
        let slot = s.objects.find(key)?;
        let e = s.objects.get(slot)?;
        let fragments = frag_count(e.size(), self.cfg.fragment_size);
        let mut schemes = Vec::new();
        let mut cached = 0;
        for f in 0..fragments as u32 {
            let content = s.dedup.as_ref().and_then(|d| d.content_of(frag_key(slot, f)));
            if let Some(l) = s.objects.location(slot, f, self.cfg.fragment_size).or(content) {
                cached += 1;
                if !schemes.contains(&l.scheme) {
                    schemes.push(l.scheme);
                }
            }
        }
        Some(ObjectInfo {
            size: e.size(),
            class: e.class(),
            dirty: e.dirty(),
            pinned: s.objects.leased(slot),
            freq: e.freq(),
            hotness: e.hotness(),
            fragments,
            cached_fragments: cached,
            schemes,
        })
    }

    /// Whether `key` was (possibly) written or deleted since `token` (the `token` of an
    /// earlier get) was taken: bytes read after it may be of another version.
    pub fn changed_since(&self, key: &[u8], token: u64) -> bool {
        self.lock().invalidations.changed_since(key, token)
    }

    /// The metadata of a cached object (ETag, content type, mtime, user metadata), from its first
    /// fragment's blob header — no device I/O. `None` if that fragment is not on flash.
    pub fn meta(&self, key: &[u8]) -> Option<ObjectMeta> {
        let s = self.lock();
        let slot = s.objects.find(key)?;
        let loc = s.objects.location(slot, 0, self.cfg.fragment_size)?;
        drop(s);
        self.meta_at(&loc)
    }

    /// Whether the object in `slot` is the version whose ETag is `etag`: by the version tag of a
    /// multi-fragment object, else by its first fragment's blob header (exact). An object with
    /// neither (nothing cached of its own; with dedup, clean fragments live in the dedup cache)
    /// cannot be told apart. Under the cache's lock (which orders before the store's).
    pub(super) fn holds_version(&self, s: &State, slot: u32, etag: &str) -> bool {
        if let Some(tag) = s.objects.version_tag(slot) {
            return tag == super::placement::version_tag(etag);
        }
        let Some(loc) = s.objects.location(slot, 0, self.cfg.fragment_size) else { return true };
        self.store.header_is(&loc, |h| crate::header::BlobHeader::has_etag(h, etag))
    }

    /// The metadata in the header of the blob at `loc` (DRAM), if it is live.
    pub(super) fn meta_at(&self, loc: &reo_store::Location) -> Option<ObjectMeta> {
        let h = crate::header::BlobHeader::decode(&self.store.header(loc)?)?;
        Some(ObjectMeta {
            etag: h.etag,
            content_type: h.content_type,
            mtime_ns: h.mtime_ns,
            user: h.user,
            system: h.system,
        })
    }

    /// Pins `key` until `until_ns` on the caller's clock (a lease): it is not evicted before.
    /// Returns false if the object is not cached.
    pub fn pin(&self, key: &[u8], until_ns: u64) -> bool {
        let mut s = self.lock();
        let Some(slot) = s.objects.find(key) else { return false };
        s.objects.pin(slot, until_ns);
        true
    }

    /// Ends `key`'s lease.
    pub fn unpin(&self, key: &[u8]) {
        let mut s = self.lock();
        if let Some(slot) = s.objects.find(key) {
            s.objects.unpin(slot);
        }
    }

    /// Dirty objects (for the flusher): key and the version to pass to [`Cache::mark_clean`],
    /// in no particular order. After a restart this is how the flusher resumes.
    pub fn dirty_keys(&self) -> Vec<(Vec<u8>, u64)> {
        let s = self.lock();
        s.objects
            .iter()
            .filter(|(_, e)| e.dirty())
            .map(|(slot, e)| (e.key().to_vec(), self.dirty_version(&s, slot).unwrap_or(0)))
            .collect()
    }

    /// (freq, size) of every cached object: the input of the hot-threshold computation (the Reo
    /// paper §IV.C.1, H = Freq / Size).
    pub fn hotness_snapshot(&self) -> Vec<(u32, u64)> {
        self.lock().objects.iter().map(|(_, e)| (e.freq(), e.size())).collect()
    }

    /// Bytes of DRAM the index and the policy use (key bytes excluded), and objects indexed.
    pub fn memory(&self) -> (usize, usize, usize) {
        let s = self.lock();
        (s.objects.memory_bytes(), s.policy.memory_bytes(), s.objects.len())
    }
}
