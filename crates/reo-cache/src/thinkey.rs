//! [`ThinKey`]: an object key in one heap allocation behind an 8-byte pointer.
//!
//! `Box<[u8]>` costs a 16-byte fat pointer in every index entry; with millions of objects those
//! 8 extra bytes are a fifth of the entry. A thin key stores its length (u16: S3 keys are at most
//! 1,024 bytes plus a bucket name) in front of the bytes, in the same allocation.

use std::alloc::{alloc, dealloc, handle_alloc_error, Layout};
use std::ptr::NonNull;

/// Longest key a [`ThinKey`] holds.
pub const MAX_KEY_LEN: usize = u16::MAX as usize;

/// An owned byte string with a thin pointer (see the module documentation).
pub struct ThinKey(NonNull<u8>);

// SAFETY: a ThinKey owns its allocation exclusively and is immutable, like `Box<[u8]>`.
unsafe impl Send for ThinKey {}
// SAFETY: as above; shared access only reads.
unsafe impl Sync for ThinKey {}

fn layout(len: usize) -> Layout {
    Layout::from_size_align(2 + len, 2).expect("key layout")
}

impl ThinKey {
    /// Copies `bytes` (at most [`MAX_KEY_LEN`]; longer keys are refused by the callers).
    pub fn new(bytes: &[u8]) -> ThinKey {
        assert!(bytes.len() <= MAX_KEY_LEN, "key of {} bytes exceeds {MAX_KEY_LEN}", bytes.len());
        let l = layout(bytes.len());
        // SAFETY: the layout has a non-zero size (≥ 2); the writes stay within it.
        unsafe {
            let p = alloc(l);
            let Some(p) = NonNull::new(p) else { handle_alloc_error(l) };
            p.cast::<u16>().write(bytes.len() as u16);
            std::ptr::copy_nonoverlapping(bytes.as_ptr(), p.as_ptr().add(2), bytes.len());
            ThinKey(p)
        }
    }

    fn len_prefix(&self) -> usize {
        // SAFETY: the allocation starts with the u16 length, 2-aligned.
        unsafe { self.0.cast::<u16>().read() as usize }
    }

    /// The key's bytes.
    pub fn as_bytes(&self) -> &[u8] {
        // SAFETY: `len_prefix` bytes follow the prefix in the live allocation.
        unsafe { std::slice::from_raw_parts(self.0.as_ptr().add(2), self.len_prefix()) }
    }
}

impl Drop for ThinKey {
    fn drop(&mut self) {
        // SAFETY: allocated in `new` with this very layout.
        unsafe { dealloc(self.0.as_ptr(), layout(self.len_prefix())) }
    }
}

impl Clone for ThinKey {
    fn clone(&self) -> Self {
        ThinKey::new(self.as_bytes())
    }
}

impl std::ops::Deref for ThinKey {
    type Target = [u8];
    fn deref(&self) -> &[u8] {
        self.as_bytes()
    }
}

impl std::fmt::Debug for ThinKey {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "{:?}", String::from_utf8_lossy(self.as_bytes()))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn round_trips_and_is_thin() {
        assert_eq!(std::mem::size_of::<ThinKey>(), 8);
        assert_eq!(std::mem::size_of::<Option<ThinKey>>(), 8);
        for len in [0usize, 1, 2, 3, 17, 1024, MAX_KEY_LEN] {
            let b: Vec<u8> = (0..len).map(|i| (i * 31 % 251) as u8).collect();
            let k = ThinKey::new(&b);
            assert_eq!(k.as_bytes(), &b[..]);
            assert_eq!(&*k.clone(), &b[..]);
        }
    }
}
