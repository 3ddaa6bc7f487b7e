//! [`S3Backend`]: the gateway's backend in an S3-compatible object store (AWS S3, MinIO, Ceph RGW,
//! moto, …) through the `object_store` crate: one `AmazonS3` client per bucket (object_store binds
//! a client to a bucket), driven from the gateway's blocking threads on the backend's own small
//! tokio runtime. Object operations are object_store's; bucket operations, which object_store has
//! no API for, are SigV4-signed by object_store's `AwsAuthorizer` and sent with reqwest
//! ([`buckets`]).
//!
//! * The gateway's ETag (an MD5, or `md5-of-part-md5s-N` for multipart uploads) is stored with
//!   the object as user metadata `x-amz-meta-reo-etag` and reported instead of the backend's, so
//!   a client sees the same ETag before and after its write is flushed (S3 computes its own ETag
//!   for the single PUT or multipart upload the flusher sends). Objects written to the bucket by
//!   others have no such metadata: their S3 ETag is used, without quotes. The name `reo-etag` is
//!   reserved. Listings report S3's ETag (S3 lists no metadata).
//! * Every write goes through [`writer`]: objects above one part ([`writer::STREAM_PART`]) are
//!   uploaded in parts (S3 refuses single PUTs above 5 GiB), as they come for a streamed write
//!   ([`Backend::put_stream`]).
//! * Keys an object_store path cannot hold unchanged (`a//b`, `/a`, `a/`, `.`/`..` segments,
//!   control characters) are refused with a message saying so.

mod buckets;
mod client;
mod convert;
pub mod errors;
#[cfg(test)]
mod moto_tests;
pub mod settings;
mod writer;
mod xml;

use std::collections::BTreeMap;
use std::sync::Arc;
use std::time::Duration;

use bytes::Bytes;
use futures::StreamExt;
use object_store::path::Path;
use object_store::ObjectStore;

use super::advice::{self, Address, Advice, AdviceReport};
use super::{BResult, Backend, BackendError, BucketInfo, ListEntry, ObjectInfo, ObjectWriter};
pub use client::{OpenError, S3Backend};
pub use convert::ETAG_META;
use errors::{key_path, list_dir, map_err, normalize_etag, raw};
pub use settings::{Credentials, Deadlines, S3Settings, SettingsError};

impl Backend for S3Backend {
    fn list_buckets(&self) -> BResult<Vec<BucketInfo>> {
        buckets::list_buckets(self)
    }

    fn create_bucket(&self, bucket: &str) -> BResult<()> {
        buckets::create_bucket(self, bucket)
    }

    fn head_bucket(&self, bucket: &str) -> BResult<BucketInfo> {
        buckets::head_bucket(self, bucket)
    }

    fn delete_bucket(&self, bucket: &str) -> BResult<()> {
        buckets::delete_bucket(self, bucket)
    }

    fn check_key(&self, key: &str) -> BResult<()> {
        key_path(key).map(|_| ())
    }

    fn probe(&self) -> BResult<()> {
        buckets::probe(self)
    }

    fn put(&self, bucket: &str, key: &str, data: &[u8], info: &ObjectInfo) -> BResult<()> {
        self.put_owned(bucket, key, Bytes::copy_from_slice(data), info)
    }

    /// One streamed write of the whole object ([`writer`]): one PUT up to a part, else a
    /// multipart upload.
    fn put_owned(&self, bucket: &str, key: &str, data: Bytes, info: &ObjectInfo) -> BResult<()> {
        let store = self.store(bucket)?;
        let path = key_path(key)?;
        let rt = self.rt.as_ref().expect("present until drop").handle().clone();
        let mut w = Box::new(writer::S3Writer::new(rt, store, path, (bucket, key), info, self.settings.deadlines));
        let r = w.write(data).and_then(|_| w.commit(info));
        r.map(|_| ()).map_err(|e| self.not_found(bucket, e))
    }

    fn put_stream(self: Arc<Self>, bucket: &str, key: &str, info: &ObjectInfo) -> BResult<Box<dyn ObjectWriter>> {
        let store = self.store(bucket)?;
        let path = key_path(key)?;
        // Checked now: a missing bucket would otherwise be found only at the first part.
        self.head_bucket(bucket)?;
        let rt = self.rt.as_ref().expect("present until drop").handle().clone();
        Ok(Box::new(writer::S3Writer::new(rt, store, path, (bucket, key), info, self.settings.deadlines)))
    }

    fn head(&self, bucket: &str, key: &str) -> BResult<ObjectInfo> {
        self.get(bucket, key, None).map(|(_, i)| i)
    }

    fn get_range(&self, bucket: &str, key: &str, start: u64, end: u64) -> BResult<(Vec<u8>, ObjectInfo)> {
        if start >= end {
            return self.head(bucket, key).map(|i| (Vec::new(), i));
        }
        match self.get(bucket, key, Some((start, end))) {
            Ok((b, i)) => Ok((b.to_vec(), i)),
            // A range starting at or past the end (S3 answers 416): empty, as the trait promises.
            Err(BackendError::Io(m)) if m.contains("416") || m.contains("Range") => {
                let i = self.head(bucket, key)?;
                if start >= i.size {
                    Ok((Vec::new(), i))
                } else {
                    Err(BackendError::Io(m))
                }
            }
            Err(e) => Err(e),
        }
    }

    fn delete(&self, bucket: &str, key: &str) -> BResult<()> {
        let store = self.store(bucket)?;
        let path = key_path(key)?;
        let r = self.run(self.settings.deadlines.call, async move {
            object_store::ObjectStoreExt::delete(store.as_ref(), &path).await
        })?;
        match r {
            Ok(()) => Ok(()),
            Err(e) => match map_err(e, bucket, key) {
                BackendError::NoSuchKey(_) => self.head_bucket(bucket).map(|_| ()),
                other => Err(other),
            },
        }
    }

    fn list(&self, bucket: &str, prefix: &str, after: &str, limit: usize) -> BResult<Vec<ListEntry>> {
        let store = self.store(bucket)?;
        let dir = list_dir(prefix);
        // S3's start-after, when `after` has a path form not beyond it (the filter does the rest).
        let offset = Path::parse(after).ok().filter(|p| !after.is_empty() && raw(p) <= after);
        let (prefix, after) = (prefix.to_string(), after.to_string());
        // A listing may take many pages: the deadline is per page (a stalled one ends it).
        let page = self.settings.deadlines.call;
        let r = self.run(Duration::from_secs(86_400), async move {
            let mut stream = match &offset {
                Some(o) => store.list_with_offset(dir.as_ref(), o),
                None => store.list(dir.as_ref()),
            };
            let mut out = Vec::new();
            while out.len() < limit {
                let next =
                    tokio::time::timeout(page, stream.next()).await.map_err(|_| object_store::Error::Generic {
                        store: "S3",
                        source: format!(
                            "a listing page did not come within {:.1} s (backend.timeout)",
                            page.as_secs_f64()
                        )
                        .into(),
                    })?;
                let Some(m) = next else { break };
                let m = m?;
                let key = raw(&m.location);
                if key <= after.as_str() {
                    continue;
                }
                if !key.starts_with(&prefix) {
                    if key > prefix.as_str() {
                        break; // sorted: nothing later starts with the prefix
                    }
                    continue;
                }
                let info = ObjectInfo {
                    size: m.size,
                    etag: normalize_etag(m.e_tag.as_deref().unwrap_or_default()),
                    content_type: String::new(),
                    user_meta: BTreeMap::new(),
                    mtime_ns: m.last_modified.timestamp_nanos_opt().unwrap_or(0).max(0) as u64,
                    system: BTreeMap::new(),
                };
                out.push(ListEntry { key: key.to_string(), info });
            }
            Ok::<_, object_store::Error>(out)
        })?;
        r.map_err(|e| self.not_found(bucket, map_err(e, bucket, "")))
    }

    /// S3 has no read-ahead or cache to steer: every advice validates its address (a HEAD per
    /// key or range, a listing for a prefix) and reports what it found.
    fn advise(&self, bucket: &str, address: &Address, advice: Advice) -> BResult<AdviceReport> {
        let targets = advice::resolve(self, bucket, address)?;
        let action = match advice {
            Advice::WillNeed | Advice::Pin => "checked it exists (S3 has no read-ahead to request)",
            Advice::Unpin | Advice::DontNeed => "checked it exists (S3 keeps no cache to drop)",
        };
        Ok(advice::report(action, &targets))
    }
}
