//! The replacement-policy interface of the cache manager, and the policy registry.
//!
//! A [`Policy`] only keeps *metadata* (keys, sizes, recency/frequency state, ghosts); the cache
//! manager owns the data, the admission decision, leases (pinned objects) and dirty state.
//!
//! # Contract
//!
//! * **Lookups.** On a request the manager calls [`Policy::on_hit`]; `false` means a miss. A miss
//!   may be followed by [`Policy::insert`] if admission accepts it. [`Policy::is_ghost`] is a pure
//!   query (no state change) that admission may use: a ghost hit is evidence of reuse.
//! * **Ghost adaptation happens in `insert`.** ARC's `p` adaptation and S3-FIFO's "ghost hit goes to
//!   main" take effect when the key is inserted, so a miss that admission rejects leaves the policy
//!   untouched (no state is carried between two calls).
//! * **Eviction honours `evictable`.** Whenever the policy is about to evict a resident key it asks
//!   `evictable(key)`; on `false` (pinned by a lease, dirty and not yet flushed) the key stays
//!   resident and the policy moves on to its next candidate. Recency-ordered policies (LRU, ARC)
//!   skip such keys in place; FIFO/CLOCK-style ones (S3-FIFO, CLOCK) give them another round at the
//!   head of their queue; SIEVE's hand passes over them. The callback is only asked about real
//!   eviction candidates, possibly more than once per key and call; it must be cheap.
//! * **Bytes.** Capacity and occupancy are in bytes; [`Policy::used_bytes`] never exceeds
//!   [`Policy::capacity_bytes`]. A size of 0 is accounted as 1 byte (every entry costs a slot), sizes
//!   above the capacity (or above 2^48 − 1) are refused with [`InsertError::TooLarge`].
//! * **Insert** of a non-resident key evicts until the object fits and reports the evicted keys by
//!   appending them to `evicted` (a caller-owned buffer: no allocation per miss). If not enough
//!   evictable bytes exist it returns [`InsertError::Full`]: the key is not inserted, but the keys
//!   already appended to `evicted` *were* evicted and must be dropped by the caller.
//! * **Insert of a resident key** is an overwrite: it counts as a hit, the size is updated, and other
//!   keys are evicted if it grew. If it cannot fit any more, the key is removed and `Full` returned.
//! * [`Policy::remove`] (invalidation/delete) forgets the key, including any ghost entry.
//! * **Ghost keys.** [`Policy::rename_ghost`] re-keys a ghost entry, so a caller whose keys of
//!   resident entries are not the objects' lasting names (the cache manager's slot numbers, reused
//!   once an object leaves) can file each ghost under a lasting name on eviction and move it back
//!   under the new resident key just before inserting that object again.
//! * [`Policy::evict_one`] picks and removes the policy's next victim, for explicit shrinking or for
//!   GC-driven eviction; it feeds ghosts exactly like an eviction caused by an insert.

/// The `Policy` methods every single-list policy (LRU, SIEVE, CLOCK) implements the same way over
/// its `slab`, its `list` and the capacity field named here; expands inside `impl Policy for …`.
macro_rules! single_list_policy_methods {
    ($cap:ident) => {
        fn contains(&self, key: Key) -> bool {
            self.slab.find(key).is_some()
        }

        fn size_of(&self, key: Key) -> Option<u64> {
            self.slab.find(key).map(|i| self.slab.node(i).size())
        }

        fn len(&self) -> usize {
            self.list.len
        }

        fn used_bytes(&self) -> u64 {
            self.list.bytes
        }

        fn capacity_bytes(&self) -> u64 {
            self.$cap
        }

        fn evict_one(&mut self, evictable: &mut dyn FnMut(Key) -> bool) -> Option<Key> {
            self.evict(evictable)
        }

        fn reserve(&mut self, objects: usize) {
            self.slab.reserve(objects);
        }

        fn memory_bytes(&self) -> usize {
            self.slab.memory_bytes()
        }
    };
}

/// The invariants every single-list policy shares: a well-formed list holding exactly the index's
/// entries, within capacity.
pub(crate) fn check_single_list(slab: &slab::Slab, list: &slab::List, capacity: u64, name: &str) -> Result<(), String> {
    list.check(slab, 0, name)?;
    if slab.len() != list.len {
        return Err(format!("{name}: index and list sizes differ"));
    }
    if list.bytes > capacity {
        return Err(format!("{name}: used {} > capacity {capacity}", list.bytes));
    }
    Ok(())
}

mod arc;
mod clock;
mod lru;
mod s3fifo;
mod sieve;
pub(crate) mod slab;

#[cfg(test)]
mod conformance;

use std::fmt;
use std::str::FromStr;

pub use arc::Arc;
pub use clock::Clock;
pub use lru::Lru;
pub use s3fifo::S3Fifo;
pub use sieve::Sieve;

pub use slab::Key;

use slab::MAX_SIZE;

/// Why [`Policy::insert`] did not insert.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum InsertError {
    /// The object is larger than the whole cache (nothing was evicted).
    TooLarge,
    /// Not enough evictable bytes: everything else is pinned or dirty. Keys evicted while trying are
    /// in the caller's `evicted` buffer.
    Full,
}

impl fmt::Display for InsertError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(match self {
            InsertError::TooLarge => "object larger than the cache",
            InsertError::Full => "cache full of non-evictable (pinned or dirty) objects",
        })
    }
}

impl std::error::Error for InsertError {}

/// A byte-size-aware replacement policy. See the module documentation for the contract.
pub trait Policy: Send {
    /// Short name, as accepted by [`PolicyKind::from_str`].
    fn name(&self) -> &'static str;

    /// A request for `key`: if resident, update recency/frequency and return `true`; otherwise
    /// return `false` without changing anything (ghosts are not resident).
    fn on_hit(&mut self, key: Key) -> bool;

    /// Whether `key` is remembered in a ghost list (recently evicted). Pure query.
    fn is_ghost(&self, key: Key) -> bool {
        let _ = key;
        false
    }

    /// Files the ghost entry of `old` under `new` instead (see the module's "Ghost keys"); true if
    /// `old` was a ghost and `new` unknown. If `new` is already known, the ghost of `old` is
    /// dropped (false); if `old` is no ghost, nothing changes (false). Policies without ghosts
    /// have nothing to rename.
    fn rename_ghost(&mut self, old: Key, new: Key) -> bool {
        if !self.is_ghost(old) {
            return false;
        }
        // `new` taken: the ghost under `old` goes (one entry per name, the older one kept).
        self.rekey(old, new) || {
            self.remove(old);
            false
        }
    }

    /// Gives the entry of `old` (resident or ghost) the key `new` in place, its state unchanged;
    /// false, changing nothing, if `old` is unknown or `new` taken. What
    /// [`Policy::rename_ghost`] builds on; policies without ghosts need not implement it.
    fn rekey(&mut self, old: Key, new: Key) -> bool {
        let _ = (old, new);
        false
    }

    /// Admits `key` of `size` bytes, evicting (appending to `evicted`) until it fits and skipping keys
    /// for which `evictable` is `false`.
    fn insert(
        &mut self,
        key: Key,
        size: u64,
        evictable: &mut dyn FnMut(Key) -> bool,
        evicted: &mut Vec<Key>,
    ) -> Result<(), InsertError>;

    /// Forgets `key` (resident or ghost). Returns the size of the resident entry removed, if any.
    fn remove(&mut self, key: Key) -> Option<u64>;

    /// Whether `key` is resident.
    fn contains(&self, key: Key) -> bool;

    /// Accounted size of resident `key`.
    fn size_of(&self, key: Key) -> Option<u64>;

    /// Resident entries.
    fn len(&self) -> usize;

    /// No resident entry.
    fn is_empty(&self) -> bool {
        self.len() == 0
    }

    /// Bytes of resident entries (≤ [`Policy::capacity_bytes`]).
    fn used_bytes(&self) -> u64;

    /// Capacity in bytes.
    fn capacity_bytes(&self) -> u64;

    /// Picks, removes and returns the next victim among keys for which `evictable` is `true`.
    fn evict_one(&mut self, evictable: &mut dyn FnMut(Key) -> bool) -> Option<Key>;

    /// Pre-sizes internal tables for `objects` resident objects (and the ghosts that come with them).
    fn reserve(&mut self, objects: usize);

    /// Heap bytes used by the policy's metadata (node slab and key index, ghosts included).
    fn memory_bytes(&self) -> usize;

    /// O(n) consistency check of the internal structures and the policy's invariants.
    fn check_invariants(&self) -> Result<(), String>;
}

/// The available policies.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum PolicyKind {
    /// `lru`: least recently used ([`Lru`]).
    Lru,
    /// `arc`: Adaptive Replacement Cache, in bytes ([`Arc`]).
    Arc,
    /// `s3-fifo`: S3-FIFO with small, main and ghost FIFOs ([`S3Fifo`]).
    S3Fifo,
    /// `sieve`: SIEVE, one FIFO with visited bits and a moving hand ([`Sieve`]).
    Sieve,
    /// SDCC's generalized CLOCK with a 2-bit recency+frequency utility ([`Clock`]).
    Clock,
}

impl PolicyKind {
    /// Every policy, in a stable order.
    pub const ALL: [PolicyKind; 5] =
        [PolicyKind::Lru, PolicyKind::Arc, PolicyKind::S3Fifo, PolicyKind::Sieve, PolicyKind::Clock];

    /// Stable name (`lru`, `arc`, `s3-fifo`, `sieve`, `clock`), as parsed by [`FromStr`].
    pub fn as_str(self) -> &'static str {
        match self {
            PolicyKind::Lru => "lru",
            PolicyKind::Arc => "arc",
            PolicyKind::S3Fifo => "s3-fifo",
            PolicyKind::Sieve => "sieve",
            PolicyKind::Clock => "clock",
        }
    }
}

impl fmt::Display for PolicyKind {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.pad(self.as_str())
    }
}

/// Error of [`PolicyKind::from_str`].
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct UnknownPolicy(pub String);

impl fmt::Display for UnknownPolicy {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "unknown cache policy {:?} (expected lru, arc, s3-fifo, sieve or clock)", self.0)
    }
}

impl std::error::Error for UnknownPolicy {}

impl FromStr for PolicyKind {
    type Err = UnknownPolicy;
    fn from_str(s: &str) -> Result<Self, Self::Err> {
        PolicyKind::ALL.into_iter().find(|k| k.as_str() == s).ok_or_else(|| UnknownPolicy(s.to_string()))
    }
}

/// A policy of `kind` with default parameters and `capacity_bytes` of capacity.
pub fn new_policy(kind: PolicyKind, capacity_bytes: u64) -> Box<dyn Policy> {
    match kind {
        PolicyKind::Lru => Box::new(Lru::new(capacity_bytes)),
        PolicyKind::Arc => Box::new(Arc::new(capacity_bytes)),
        PolicyKind::S3Fifo => Box::new(S3Fifo::new(capacity_bytes)),
        PolicyKind::Sieve => Box::new(Sieve::new(capacity_bytes)),
        PolicyKind::Clock => Box::new(Clock::new(capacity_bytes)),
    }
}

/// Accounted size of an object of `size` bytes (0 counts as 1), or `TooLarge`.
#[inline]
pub(crate) fn accounted_size(size: u64, capacity: u64) -> Result<u64, InsertError> {
    let size = size.max(1);
    if size > capacity || size > MAX_SIZE {
        Err(InsertError::TooLarge)
    } else {
        Ok(size)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn kind_round_trips_through_strings() {
        for k in PolicyKind::ALL {
            assert_eq!(k.as_str().parse::<PolicyKind>(), Ok(k));
            assert_eq!(new_policy(k, 10).name(), k.as_str());
        }
        assert!("S3FIFO".parse::<PolicyKind>().is_err());
        assert_eq!(accounted_size(0, 10), Ok(1));
        assert_eq!(accounted_size(11, 10), Err(InsertError::TooLarge));
    }
}
