//! The objects the cache holds: the geometry of an object cut into fragments, and new entries.

use crate::object::{Class, ObjectEntry};

/// Bytes of fragment `frag` of an object of `size` bytes.
pub(crate) fn frag_len(size: u64, frag: u32, frag_size: u64) -> u64 {
    size.saturating_sub(u64::from(frag) * frag_size).min(frag_size)
}

/// Number of fragments of an object of `size` bytes (an empty object has one, empty, fragment).
pub(crate) fn frag_count(size: u64, frag_size: u64) -> u64 {
    size.div_ceil(frag_size).max(1)
}

/// A new entry for `key`.
pub(crate) fn new_entry(key: &[u8], size: u64, class: Class, frag_size: u64) -> ObjectEntry {
    let mut e = ObjectEntry::new(key, size, class);
    e.set_fragmented(frag_count(size, frag_size) > 1);
    e
}
