//! Reads served by the memory tier (`memory.rs`): the piece types a copy turns into
//! ([`FromMemory`]), the accounting of a memory hit, and [`Cache::get_memory`], the get that
//! answers only from memory and never waits for a device — the gateway's hot path, which runs it
//! on the task that received the request and falls back to [`Cache::get_shared`] otherwise.

use bytes::Bytes;
use reo_store::ReadBytes;

use super::cache::Cache;
use super::memory::MemCopy;
use super::pieces::{GetResult, Piece, Pieces};
use super::state::State;
use super::write::ObjectMeta;
use crate::object::Class;

/// The piece types a get returns, made from and into a memory tier's copy.
pub(crate) trait FromMemory: Sized {
    /// Whether this type needs the copy's bytes (a byte-less copy cannot serve it).
    const BYTES: bool;
    /// Whether a whole read of the copy shares its buffer rather than copying it.
    const SHARES: bool;
    /// Bytes `[a, b)` of `copy`, a piece of a read of `asked` bytes, or `None` if the copy
    /// cannot give this type (a byte-less copy for a reader of bytes).
    fn from_copy(copy: &MemCopy, a: u64, b: u64, asked: u64) -> Option<Self>;
    /// A copy of a whole object of `size` bytes from the pieces a get read of it, in order.
    fn copy_of(pieces: &[Piece<Self>], size: u64) -> MemCopy;
}

/// A copy of the pieces' bytes, in order.
fn concat<'a>(size: u64, slices: impl Iterator<Item = &'a [u8]>) -> MemCopy {
    let mut v = Vec::with_capacity(size as usize);
    slices.for_each(|s| v.extend_from_slice(s));
    MemCopy::Bytes(Bytes::from(v))
}

impl FromMemory for Vec<u8> {
    const BYTES: bool = true;
    const SHARES: bool = false;
    fn from_copy(copy: &MemCopy, a: u64, b: u64, _: u64) -> Option<Self> {
        match copy {
            MemCopy::Bytes(bytes) => Some(bytes[a as usize..b as usize].to_vec()),
            MemCopy::Sized(_) => None,
        }
    }
    fn copy_of(pieces: &[Piece<Self>], size: u64) -> MemCopy {
        concat(size, pieces.iter().filter_map(|p| p.data.as_deref()))
    }
}

impl FromMemory for ReadBytes {
    const BYTES: bool = true;
    const SHARES: bool = true;
    fn from_copy(copy: &MemCopy, a: u64, b: u64, asked: u64) -> Option<Self> {
        let (a, b) = (a as usize, b as usize);
        match copy {
            // A read of a small part of a large copy gets its bytes copied out: a slice would
            // keep the whole copy alive for as long as a slow client holds it, outside the tier's
            // bound once it is evicted. A read of most of the copy shares it.
            MemCopy::Bytes(bytes) if asked.saturating_mul(4) <= bytes.len() as u64 => {
                Some(ReadBytes::from(bytes[a..b].to_vec()))
            }
            MemCopy::Bytes(bytes) => Some(ReadBytes::from(bytes.slice(a..b))),
            MemCopy::Sized(_) => None,
        }
    }
    fn copy_of(pieces: &[Piece<Self>], size: u64) -> MemCopy {
        concat(size, pieces.iter().filter_map(|p| p.data.as_ref()).flat_map(ReadBytes::slices))
    }
}

impl FromMemory for u64 {
    const BYTES: bool = false;
    const SHARES: bool = false;
    fn from_copy(_: &MemCopy, a: u64, b: u64, _: u64) -> Option<Self> {
        Some(b - a)
    }
    fn copy_of(_: &[Piece<Self>], size: u64) -> MemCopy {
        MemCopy::Sized(size)
    }
}

/// Counts bytes `[start, end)` of the object in `slot` (of `class`) as served by its memory copy
/// (and a hit when `counted`: the first call of a request); returns the get's token.
pub(super) fn count_memory_hit(
    s: &mut State,
    slot: u32,
    class: Class,
    (start, end): (u64, u64),
    fs: u64,
    counted: bool,
) -> u64 {
    // Flash ranks the object as read: the tier is inclusive, and an object hot in memory must
    // not look cold to flash's policy and leave (taking its copy along).
    for f in (start / fs) as u32..=((end - 1) / fs) as u32 {
        s.policy.on_hit(slot, f);
    }
    s.stats.served(class, end - start);
    s.stats.memory_served(end - start);
    if counted {
        s.stats.hit(class);
        s.stats.memory_hit();
    }
    s.invalidations.epoch()
}

/// The fragment-aligned pieces of bytes `[start, end)` of `copy` (made outside the cache's lock:
/// a reader of owned bytes copies them).
pub(super) fn pieces_of<T: FromMemory>(copy: &MemCopy, start: u64, end: u64, fs: u64) -> Pieces<T> {
    ((start / fs) as u32..=((end - 1) / fs) as u32)
        .map(|f| {
            let (a, b) = (start.max(u64::from(f) * fs), end.min((u64::from(f) + 1) * fs));
            Piece { start: a, end: b, data: T::from_copy(copy, a, b, end - start) }
        })
        .collect()
}

/// What [`Cache::peek_now`] knows of a cached object.
#[derive(Debug, Clone)]
pub struct Peeked {
    /// Its size in bytes.
    pub size: u64,
    /// Whether it holds writes not yet on the backend.
    pub dirty: bool,
    /// Its metadata, from its first fragment's blob header.
    pub meta: ObjectMeta,
}

impl Cache {
    /// [`Cache::info`]'s size and dirtiness with [`Cache::meta`], if they can be had without
    /// waiting: `None` when the object or its first fragment is not cached, or the cache's lock
    /// is taken. No device I/O.
    pub fn peek_now(&self, key: &[u8]) -> Option<Peeked> {
        let s = self.try_lock()?;
        let slot = s.objects.find(key)?;
        let e = s.objects.get(slot)?;
        let (size, dirty) = (e.size(), e.dirty());
        let loc = s.objects.location(slot, 0, self.cfg.fragment_size)?;
        drop(s);
        Some(Peeked { size, dirty, meta: self.meta_at(&loc)? })
    }

    /// Whether the memory tier would keep a copy of an object of `size` bytes (it is on, and
    /// the object is at most 16 MiB and a sixteenth of it): a reader of the whole object may
    /// then read it in one get, which leaves the copy, rather than window by window.
    pub fn memory_admits(&self, size: u64) -> bool {
        self.lock().memory.admits(size)
    }

    /// [`Cache::get_version`] of a first call, if the memory tier holds the object at version
    /// `etag`: the same counts, policy updates and pieces. `None` (nothing counted, nothing
    /// changed) when it does not (or holds another version), for an empty range, when the
    /// cache's lock is taken, or when this request would be the one to recompute the hot
    /// threshold (a pass over the index): the caller then makes the full get, which may wait.
    /// Never waits for the cache's lock (the version check reads a blob header under the
    /// store's band lock, held by others only for an index update).
    pub fn get_memory(
        &self,
        key: &[u8],
        etag: &str,
        (start, end): (u64, u64),
        now_ns: u64,
    ) -> Option<GetResult<ReadBytes>> {
        let fs = self.cfg.fragment_size;
        let mut s = self.try_lock()?;
        if s.classes.due(self.cfg.hot_recompute_every) {
            return None;
        }
        let slot = s.objects.find(key)?;
        let size = s.objects.get(slot)?.size();
        let end = end.min(size);
        if start >= end || !self.holds_version(&s, slot, etag) {
            return None;
        }
        let copy = s.memory.get(slot, true, size)?;
        s.objects.advance(now_ns);
        s.stats.request();
        self.tick_classes(&mut s);
        s.objects.get_mut(slot).expect("found").touch();
        let class = s.classes.class_of(s.objects.get(slot).expect("found"));
        s.admitter.on_hit(self.admission_key(key), now_ns);
        s.stats.requested(end - start);
        let token = count_memory_hit(&mut s, slot, class, (start, end), fs, true);
        drop(s);
        Some(GetResult { size: Some(size), token, pieces: pieces_of(&copy, start, end, fs) })
    }
}
