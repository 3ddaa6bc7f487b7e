//! [`Stripes`]: the per-key ordering locks — 256 reader-writer locks, a key's chosen by a hash of
//! its cache key. Writers of a key (PUT, DELETE, the flusher retiring a state) hold its stripe
//! exclusively; readers (the metadata and bytes of one GET, a flush's snapshot, a miss's fill of
//! the cache) hold it shared, so a read never mixes two versions and a fill never lands between
//! a write's checks and its install. A fill that would replace a cached copy of another version
//! (the backend changed) holds it exclusively, as a write does. Shared (`Arc`) with the miss path's producers, which fill
//! the cache on their own threads.

use parking_lot::{RwLock, RwLockReadGuard, RwLockWriteGuard};

use md5::{Digest, Md5};

const STRIPES: usize = 256;

/// See the module doc.
pub struct Stripes(Vec<RwLock<()>>);

impl Default for Stripes {
    fn default() -> Self {
        Stripes((0..STRIPES).map(|_| RwLock::new(())).collect())
    }
}

impl Stripes {
    pub(crate) fn of(&self, ckey: &str) -> &RwLock<()> {
        let h = Md5::digest(ckey.as_bytes());
        &self.0[h[0] as usize % STRIPES]
    }

    /// Whether two keys share a stripe (taking both would deadlock).
    pub fn same(&self, a: &str, b: &str) -> bool {
        std::ptr::eq(self.of(a), self.of(b))
    }

    /// `ckey`'s stripe, exclusive (a writer).
    pub fn exclusive(&self, ckey: &str) -> RwLockWriteGuard<'_, ()> {
        self.of(ckey).write()
    }

    /// `ckey`'s stripe, shared, if no writer holds or waits for it.
    pub fn try_shared(&self, ckey: &str) -> Option<RwLockReadGuard<'_, ()>> {
        self.of(ckey).try_read()
    }

    /// `ckey`'s stripe, shared (a reader).
    pub fn shared(&self, ckey: &str) -> RwLockReadGuard<'_, ()> {
        self.of(ckey).read()
    }
}
