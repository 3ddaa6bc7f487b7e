//! Deleting a bucket while objects are being written to it.
//!
//! A write-back PUT (or delete) checks that its bucket exists, then records the object in the
//! pending map; DeleteBucket checks that the pending map holds nothing of the bucket, then deletes
//! it in the backend. Interleaved, a write acknowledged between the two checks would be left
//! pending for a bucket that is gone: never flushable, and its retries would mark the backend
//! down. [`BucketGuards`] orders the two without either waiting for the other: every object write
//! holds a [`WriteTicket`] from before its bucket check until it is recorded (or has failed), and
//! a deletion holds a [`DeleteTicket`] from before its emptiness check until the backend answered.
//! A deletion while tickets are out answers `BucketNotEmpty` (the objects are landing); a write
//! while a deletion runs answers `OperationAborted` (S3's "a conflicting operation is in
//! progress", which clients retry). The guard's mutex is a leaf: taken with no other lock held,
//! never held across another lock or any I/O.

use std::collections::{HashMap, HashSet};

use parking_lot::{Mutex, MutexGuard};
use s3s::{s3_error, S3Result};

#[derive(Default)]
struct State {
    /// Object writes in progress, per bucket.
    writers: HashMap<String, usize>,
    /// Buckets being deleted.
    deleting: HashSet<String>,
}

/// See the module doc.
#[derive(Default)]
pub(crate) struct BucketGuards(Mutex<State>);

/// An object write in progress in a bucket (see the module doc).
pub(crate) struct WriteTicket<'a> {
    guards: &'a BucketGuards,
    bucket: String,
}

/// A deletion of a bucket in progress (see the module doc).
pub(crate) struct DeleteTicket<'a> {
    guards: &'a BucketGuards,
    bucket: String,
}

impl BucketGuards {
    fn lock(&self) -> MutexGuard<'_, State> {
        self.0.lock()
    }

    /// An object write into `bucket` begins; refused while the bucket is being deleted.
    pub fn begin_write(&self, bucket: &str) -> S3Result<WriteTicket<'_>> {
        let mut s = self.lock();
        if s.deleting.contains(bucket) {
            return Err(s3_error!(OperationAborted, "bucket {bucket:?} is being deleted; retry"));
        }
        *s.writers.entry(bucket.to_string()).or_default() += 1;
        Ok(WriteTicket { guards: self, bucket: bucket.to_string() })
    }

    /// A deletion of `bucket` begins; refused while objects are being written to it.
    pub fn begin_delete(&self, bucket: &str) -> S3Result<DeleteTicket<'_>> {
        let mut s = self.lock();
        if s.writers.get(bucket).is_some_and(|&n| n > 0) {
            return Err(s3_error!(BucketNotEmpty, "objects are being written to bucket {bucket:?}"));
        }
        if !s.deleting.insert(bucket.to_string()) {
            return Err(s3_error!(OperationAborted, "bucket {bucket:?} is being deleted already"));
        }
        Ok(DeleteTicket { guards: self, bucket: bucket.to_string() })
    }
}

impl Drop for WriteTicket<'_> {
    fn drop(&mut self) {
        let mut s = self.guards.lock();
        if let Some(n) = s.writers.get_mut(&self.bucket) {
            *n -= 1;
            if *n == 0 {
                s.writers.remove(&self.bucket);
            }
        }
    }
}

impl Drop for DeleteTicket<'_> {
    fn drop(&mut self) {
        self.guards.lock().deleting.remove(&self.bucket);
    }
}
