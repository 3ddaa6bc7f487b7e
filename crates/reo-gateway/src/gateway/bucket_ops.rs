//! The gateway's operations on buckets: DeleteBucket (ordered with object writes by the bucket
//! guards, `buckets.rs`), the existence check before a write and forgetting a bucket (with the
//! backend's health, `outage.rs`), and the report of objects stuck for a bucket missing in the
//! backend (`stuck.rs`).

use s3s::{s3_error, S3Result};

use super::clock::now_ns;
use super::errors::backend_err;
use super::handle::Gateway;
use super::pending::cache_key;
use super::stuck::{StuckBucket, StuckReport, REASON};
use crate::backend::BackendError;

impl Gateway {
    /// Creates a bucket in the backend; with `recreate_ok`, one that exists already is no error
    /// (AWS us-east-1 answers 200 to re-creating a bucket its requester has).
    pub fn create_bucket(&self, bucket: &str, recreate_ok: bool) -> S3Result<()> {
        match self.backend.create_bucket(bucket) {
            Err(BackendError::BucketExists(_)) if recreate_ok => {}
            r => r.map_err(backend_err)?,
        }
        self.bucket_exists(bucket);
        Ok(())
    }

    /// Deletes a bucket: refused while it holds objects, flushed or not, or objects are being
    /// written to it (see the module doc).
    pub fn delete_bucket(&self, bucket: &str) -> S3Result<()> {
        let _deleting = self.buckets.begin_delete(bucket)?;
        if !self.pending().in_bucket(bucket, "").is_empty() {
            return Err(s3_error!(BucketNotEmpty, "the bucket holds objects not yet written to the backend"));
        }
        // Deletes not yet applied in the backend are applied now: the bucket is empty for the
        // client, so the backend must be too. The list is taken first so that the pending lock is
        // not held across the loop (a `for` keeps its iterator expression's temporaries alive,
        // and the loop takes stripe locks, which writers take before the pending lock).
        let tombstones = self.pending().deleted_in_bucket(bucket, "");
        for key in tombstones {
            let ck = cache_key(bucket, &key);
            let _g = self.stripe(&ck);
            // Still a tombstone (a write may have replaced it since the list was taken)?
            if self.pending().map.get(&ck).is_some_and(|x| x.deleted) {
                self.write_backend(&ck, || self.backend.delete(bucket, &key))?;
            }
        }
        self.backend.delete_bucket(bucket).map_err(backend_err)?;
        self.forget_bucket(bucket);
        Ok(())
    }
}

impl Gateway {
    /// Checks that `bucket` exists before a write; while the backend cannot answer (an I/O
    /// error, or it is not known to be up), a bucket known to exist passes (see the module doc).
    pub(crate) fn check_bucket(&self, bucket: &str) -> S3Result<()> {
        // Not asked while it is not known to answer (down, or not yet since start: it may be
        // hung, and every write would wait out its deadline) when the bucket can be assumed.
        if !self.health.is_known_up() && self.assume_bucket_exists(bucket) {
            return Ok(());
        }
        match self.backend.head_bucket(bucket) {
            Ok(_) => {
                self.bucket_exists(bucket);
                Ok(())
            }
            Err(BackendError::Io(m)) if self.assume_bucket_exists(bucket) => {
                tracing::debug!("bucket {bucket:?} taken as existing while the backend cannot answer: {m}");
                Ok(())
            }
            Err(e) => {
                if matches!(e, BackendError::NoSuchBucket(_)) {
                    self.forget_bucket(bucket);
                }
                Err(backend_err(e))
            }
        }
    }

    /// Whether `bucket` was seen to exist or holds unflushed objects.
    fn assume_bucket_exists(&self, bucket: &str) -> bool {
        let known = self.health.knows_bucket(bucket);
        known || self.pending().any_in_bucket(bucket)
    }

    /// The bucket is gone (deleted, or the backend says it does not exist).
    pub(crate) fn forget_bucket(&self, bucket: &str) {
        self.health.forget_bucket(bucket);
    }
}

impl Gateway {
    /// The objects stuck because their bucket is missing in the backend (see the module doc).
    pub fn stuck(&self) -> StuckReport {
        let gone = self.gone.list();
        let mut r = StuckReport::default();
        for (bucket, since_ns, key) in gone {
            let (objects, bytes) = {
                let p = self.pending();
                let start = cache_key(&bucket, "");
                p.map
                    .range(start.clone()..)
                    .take_while(|(k, _)| k.starts_with(&start))
                    .filter(|(_, x)| !x.deleted)
                    .fold((0u64, 0u64), |(n, b), (_, x)| (n + 1, b + x.info.size))
            };
            if objects == 0 {
                continue; // flushed or deleted meanwhile; the flusher forgets the bucket later
            }
            r.objects += objects;
            r.bytes += bytes;
            let since_seconds = now_ns().saturating_sub(since_ns) as f64 / 1e9;
            r.buckets.push(StuckBucket { bucket, objects, bytes, reason: REASON.into(), since_seconds, key });
        }
        r
    }

    /// `bucket` exists in the backend (created through the gateway, or seen by a bucket check):
    /// it is taken as existing while the backend cannot answer, and objects stuck for want of it
    /// are flushed now.
    pub(crate) fn bucket_exists(&self, bucket: &str) {
        self.health.learn_bucket(bucket);
        if self.gone.exists(bucket) {
            tracing::info!("bucket {bucket:?} exists again in the backend; flushing its stuck objects");
            self.kick_flusher();
        }
    }
}
