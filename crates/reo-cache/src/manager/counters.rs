//! [`Counters`]: the manager's accounting ([`CacheStats`]), counted event by event under the
//! cache's lock and read as a snapshot.

use crate::object::Class;
use crate::stats::CacheStats;

/// The counters since open (see [`CacheStats`] for what each one means).
#[derive(Default)]
pub(crate) struct Counters(CacheStats);

/// One method per event: `name(n) => field` adds `n` to the field, `name() => field` adds 1.
macro_rules! events {
    ($($(#[$doc:meta])* $name:ident($($n:ident)?) => $field:ident;)*) => {
        $(
            $(#[$doc])*
            pub fn $name(&mut self $(, $n: u64)?) {
                self.0.$field += events!(@amount $($n)?);
            }
        )*
    };
    (@amount $n:ident) => { $n };
    (@amount) => { 1 };
}

impl Counters {
    /// The counters as they are now.
    #[inline]
    pub fn snapshot(&self) -> CacheStats {
        self.0.clone()
    }

    /// Back to zero (rebuilding the index at open is not traffic).
    #[inline]
    pub fn reset(&mut self) {
        self.0 = CacheStats::default();
    }

    /// One blob of `bytes` user bytes written for the cache.
    #[inline]
    pub fn cache_write(&mut self, bytes: u64) {
        self.0.cache_write_bytes += bytes;
        self.0.cache_writes += 1;
    }

    /// A read request of an object of `class` served wholly from flash.
    #[inline]
    pub fn hit(&mut self, class: Class) {
        self.0.hits += 1;
        *self.0.hits_by_class.get_mut(class) += 1;
    }

    /// Bytes of an object of `class` served from flash.
    #[inline]
    pub fn served(&mut self, class: Class, bytes: u64) {
        self.0.hit_bytes += bytes;
        *self.0.hit_bytes_by_class.get_mut(class) += bytes;
    }

    /// A copy kept in memory, and the `evicted` copies it pushed out.
    #[inline]
    pub fn memory_admitted(&mut self, evicted: u64) {
        self.0.memory_admissions += 1;
        self.0.memory_evictions += evicted;
    }

    events! {
        /// A read request.
        request() => requests;
        /// A read request served wholly from the memory tier.
        memory_hit() => memory_hits;
        /// Bytes served from the memory tier.
        memory_served(bytes) => memory_hit_bytes;
        /// Bytes a read request asked for.
        requested(bytes) => request_bytes;
        /// Fragments served from flash through the dedup cache.
        dedup_hits(fragments) => dedup_hits;
        /// Reads whose blob vanished under them.
        raced_reads(reads) => raced_reads;
        /// Bytes fetched from the backend.
        backend_read(bytes) => backend_read_bytes;
        /// Bytes a client wrote.
        original_write(bytes) => original_write_bytes;
        /// User bytes the cleaner, the re-encoder or a flush rewrote.
        gc_write(bytes) => gc_write_bytes;
        /// User bytes the re-encoder moved to their class's scheme.
        reencoded(bytes) => reencoded_bytes;
        /// User bytes written and freed without being installed.
        wasted(bytes) => wasted_write_bytes;
        /// An insert that found everything pinned or dirty.
        full_rejection() => full_rejections;
        /// Fragments (or dedup contents) evicted by the replacement policy.
        evicted(fragments) => evictions;
        /// A fragment dropped by GC-based eviction.
        gc_evicted() => gc_evictions;
        /// A write whose content was already on flash (dedup).
        dedup_saved_write() => dedup_saved_writes;
        /// An object whose class changed when H_hot was recomputed.
        class_changed() => class_changes;
        /// A flushed dirty object dropped because its clean copy found no room.
        flushed_dropped() => flushed_dropped;
        /// User bytes of a flushed object made clean in place (no rewrite).
        cleaned_in_place(bytes) => cleaned_in_place_bytes;
        /// Clean fragments dropped because their devices failed or a scrub could not repair them.
        lost_clean(fragments) => lost_clean_fragments;
        /// A dirty fragment unreadable beyond its redundancy: a data-loss event.
        dirty_lost() => dirty_lost;
    }
}
