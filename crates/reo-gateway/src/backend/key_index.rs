//! [`KeyIndex`]: the keys of a local backend's buckets in S3 order, so that a listing page costs
//! in proportion to the page (a range of an ordered set, then one sidecar read per entry) and not
//! to the bucket. On-disk names are percent-encoded and chunked per segment, so they do not sort
//! like keys: without the index each page would walk and sort the whole bucket.
//!
//! A bucket's index is built by one walk the first time the bucket is listed, and kept current by
//! the backend's own writes and deletes, which update it after the file system. The build and the
//! updates of one bucket hold the same lock, so a key written during a build is in the index
//! either way. The backend's directory belongs to the gateway: files another process adds or
//! removes there are seen by listings after the next start (or once the bucket is dropped from the
//! index by [`KeyIndex::forget`], which a backend opened as shared with other writers does before
//! every listing).
//!
//! Memory: about 100 bytes per key of each listed bucket (the key and the tree's overhead).

use std::collections::{BTreeSet, HashMap};
use std::ops::Bound;
use std::sync::Arc;

use parking_lot::{Mutex, MutexGuard};

use super::BResult;

/// One bucket's keys (`None` until its first listing walks it).
type BucketKeys = Arc<Mutex<Option<BTreeSet<String>>>>;

/// See the module doc.
#[derive(Default)]
pub struct KeyIndex {
    buckets: Mutex<HashMap<String, BucketKeys>>,
}

fn lock<T>(m: &Mutex<T>) -> MutexGuard<'_, T> {
    m.lock()
}

impl KeyIndex {
    fn bucket(&self, bucket: &str) -> BucketKeys {
        lock(&self.buckets).entry(bucket.to_string()).or_default().clone()
    }

    /// Up to `limit` keys of `bucket` that start with `prefix` and sort after `after`, in
    /// order; `build` walks the bucket if its index is not loaded yet.
    pub fn page(
        &self,
        bucket: &str,
        prefix: &str,
        after: &str,
        limit: usize,
        build: impl FnOnce() -> BResult<BTreeSet<String>>,
    ) -> BResult<Vec<String>> {
        let b = self.bucket(bucket);
        let mut keys = lock(&b);
        if keys.is_none() {
            *keys = Some(build()?);
        }
        let keys = keys.as_ref().expect("built");
        let start = if after >= prefix { Bound::Excluded(after) } else { Bound::Included(prefix) };
        Ok(keys
            .range::<str, _>((start, Bound::Unbounded))
            .take_while(|k| k.starts_with(prefix))
            .take(limit)
            .cloned()
            .collect())
    }

    /// `key` was written to `bucket`.
    pub fn insert(&self, bucket: &str, key: &str) {
        if let Some(keys) = lock(&self.bucket(bucket)).as_mut() {
            if !keys.contains(key) {
                keys.insert(key.to_string());
            }
        }
    }

    /// `key` was deleted from `bucket`.
    pub fn remove(&self, bucket: &str, key: &str) {
        if let Some(keys) = lock(&self.bucket(bucket)).as_mut() {
            keys.remove(key);
        }
    }

    /// Drops `bucket`'s index (the bucket was deleted, or a listing found it stale): the next
    /// listing walks it again.
    pub fn forget(&self, bucket: &str) {
        lock(&self.buckets).remove(bucket);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn pages_are_ranges_and_updates_after_a_build_show() {
        let idx = KeyIndex::default();
        let walk = || Ok(["a/1", "a/2", "b", "c/x"].iter().map(|s| s.to_string()).collect());
        assert_eq!(idx.page("bk", "", "", 2, walk).unwrap(), ["a/1", "a/2"]);
        let unused = || panic!("built once");
        assert_eq!(idx.page("bk", "", "a/2", 10, unused).unwrap(), ["b", "c/x"]);
        assert_eq!(idx.page("bk", "a/", "", 10, unused).unwrap(), ["a/1", "a/2"]);
        assert_eq!(idx.page("bk", "c/", "b", 10, unused).unwrap(), ["c/x"]);
        idx.insert("bk", "a/15");
        idx.remove("bk", "b");
        assert_eq!(idx.page("bk", "", "a/1", 10, unused).unwrap(), ["a/15", "a/2", "c/x"]);
        // Updates of a bucket not listed yet wait for its first walk.
        idx.insert("other", "k");
        assert!(idx.page("other", "", "", 10, || Ok(BTreeSet::new())).unwrap().is_empty());
        idx.forget("bk");
        assert_eq!(idx.page("bk", "", "", 10, || Ok(BTreeSet::from(["z".to_string()]))).unwrap(), ["z"]);
    }
}
