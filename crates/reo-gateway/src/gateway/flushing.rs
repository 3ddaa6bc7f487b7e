//! [`Flushing`]: the keys whose flush is talking to the backend right now.
//!
//! The flusher calls the backend holding no lock (a slow or hung backend must not hold up the
//! reads and writes the cache can answer: see [`super::flusher`]). A path that writes the
//! backend itself — write-through, write-around, a delete outside write-back, the tombstones a
//! bucket deletion applies — must not overtake such a call on the same key (the flusher's older
//! version would land after it): it waits here for the key, holding the key's stripe lock
//! exclusively, so no new flush of the key can begin meanwhile (a flush begins under the stripe,
//! shared). The flusher ends its call before it takes the stripe again, so the wait cannot
//! deadlock.

use std::collections::HashSet;

use parking_lot::{Condvar, Mutex, MutexGuard};

/// See the module doc.
#[derive(Default)]
pub(crate) struct Flushing {
    keys: Mutex<HashSet<String>>,
    ended: Condvar,
    /// Callers of [`Flushing::wait`] that found their key busy (tests wait for them).
    #[cfg(test)]
    waiters: Mutex<usize>,
    /// A flush stops (as if the process died) after marking its object clean, before removing
    /// its record (tests of that crash point).
    #[cfg(test)]
    pub crash_before_retire: std::sync::atomic::AtomicBool,
}

impl Flushing {
    fn keys(&self) -> MutexGuard<'_, HashSet<String>> {
        self.keys.lock()
    }

    /// The flusher is about to call the backend for `ck` (it holds `ck`'s stripe, shared); the
    /// call is over when the returned guard is dropped (a panic in it ends it too: else the
    /// key's writers would wait for ever).
    pub fn begin<'a>(&'a self, ck: &'a str) -> FlushCall<'a> {
        self.keys().insert(ck.to_string());
        FlushCall { flushing: self, ck }
    }

    fn end(&self, ck: &str) {
        self.keys().remove(ck);
        self.ended.notify_all();
    }

    /// Blocks while the flusher's backend call for `ck` runs. The caller holds `ck`'s stripe
    /// exclusively (see the module doc).
    pub fn wait(&self, ck: &str) {
        let mut keys = self.keys();
        #[cfg(test)]
        if keys.contains(ck) {
            *self.waiters.lock() += 1;
            self.ended.notify_all();
        }
        while keys.contains(ck) {
            self.ended.wait(&mut keys);
        }
    }

    /// Blocks until `n` callers of [`Flushing::wait`] in all found their key busy.
    #[cfg(test)]
    pub fn wait_for_waiters(&self, n: usize) {
        let mut keys = self.keys();
        while *self.waiters.lock() < n {
            self.ended.wait(&mut keys);
        }
    }
}

/// The flusher's backend call on one key ([`Flushing::begin`]).
pub(crate) struct FlushCall<'a> {
    flushing: &'a Flushing,
    ck: &'a str,
}

impl Drop for FlushCall<'_> {
    fn drop(&mut self) {
        self.flushing.end(self.ck);
    }
}

/// Bytes the flusher reads from flash at a time (whole fragments; [`Gateway`]'s
/// `flush_window`): an object up to this size is written to the backend in one call, a larger
/// one streamed a window at a time. Each window's fragments are read from the devices at once.
pub(crate) const WINDOW: u64 = 4 << 20;
