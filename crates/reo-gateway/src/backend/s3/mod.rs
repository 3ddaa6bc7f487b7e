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
mod convert;
pub mod errors;
#[cfg(test)]
mod moto_tests;
pub mod settings;
mod writer;
mod xml;

use std::collections::{BTreeMap, HashMap};
use std::future::Future;
use std::sync::Arc;
use std::time::Duration;

use bytes::Bytes;
use futures::StreamExt;
use object_store::aws::{AmazonS3, AmazonS3Builder};
use object_store::path::Path;
use object_store::{ClientOptions, GetOptions, GetRange, ObjectStore, RetryConfig};
use parking_lot::Mutex;

use super::advice::{self, Address, Advice, AdviceReport};
use super::{BResult, Backend, BackendError, BucketInfo, ListEntry, ObjectInfo, ObjectWriter};
use crate::keys::validate_bucket;
use convert::object_info;
use errors::{key_path, list_dir, map_err, normalize_etag, raw};
pub use settings::{Credentials, Deadlines, S3Settings, SettingsError};

/// The user-metadata name holding the gateway's ETag.
pub const ETAG_META: &str = "reo-etag";

/// Runs `fut` on the runtime of `rt` and waits for it (from a thread outside it), at most
/// `deadline`: then the call fails with `Io` (and `fut` is dropped, closing its connection).
fn run_on<T: Send + 'static>(
    rt: &tokio::runtime::Handle,
    deadline: Duration,
    fut: impl Future<Output = T> + Send + 'static,
) -> BResult<T> {
    let (tx, rx) = std::sync::mpsc::sync_channel(1);
    rt.spawn(async move {
        let _ = tx.send(tokio::time::timeout(deadline, fut).await);
    });
    match rx.recv() {
        Ok(Ok(v)) => Ok(v),
        Ok(Err(_)) => Err(BackendError::Io(format!(
            "the S3 backend did not answer within {:.1} s (backend.timeout)",
            deadline.as_secs_f64()
        ))),
        Err(_) => Err(BackendError::Io("the S3 request was abandoned (shutting down?)".into())),
    }
}

/// An S3-compatible object store as the gateway's backend.
pub struct S3Backend {
    settings: S3Settings,
    region: String,
    creds: Credentials,
    rt: Option<tokio::runtime::Runtime>,
    stores: Mutex<HashMap<String, Arc<AmazonS3>>>,
    http: reqwest::Client,
    /// Buckets seen to exist, and when (see [`buckets`]).
    known: Mutex<HashMap<String, (u64, std::time::Instant)>>,
}

/// Why the S3 backend could not be set up (nothing was sent yet).
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum OpenError {
    /// The settings are refused.
    #[error(transparent)]
    Settings(#[from] SettingsError),
    /// The backend's tokio runtime could not be built.
    #[error("cannot start the S3 backend's runtime: {0}")]
    Runtime(std::io::Error),
    /// The HTTP client could not be built (e.g. its TLS setup).
    #[error("cannot build the S3 backend's HTTP client: {0}")]
    Client(reqwest::Error),
}

impl S3Backend {
    /// A backend with `settings` (validated here); credentials and region fall back to the
    /// process environment. Nothing is sent yet.
    pub fn open(settings: &S3Settings) -> Result<S3Backend, OpenError> {
        Self::open_with_env(settings, &|k| std::env::var(k).ok())
    }

    /// [`S3Backend::open`] with the environment given by `env`.
    pub fn open_with_env(settings: &S3Settings, env: &dyn Fn(&str) -> Option<String>) -> Result<S3Backend, OpenError> {
        settings.validate()?;
        let creds = settings.credentials(env)?;
        let region = settings.region_or(env);
        let rt = tokio::runtime::Builder::new_multi_thread()
            .worker_threads(2)
            .thread_name("reo-s3")
            .enable_all()
            .build()
            .map_err(OpenError::Runtime)?;
        let d = settings.deadlines;
        let http =
            reqwest::Client::builder().connect_timeout(d.connect).timeout(d.call).build().map_err(OpenError::Client)?;
        Ok(S3Backend {
            settings: settings.clone(),
            region,
            creds,
            rt: Some(rt),
            stores: Mutex::new(HashMap::new()),
            http,
            known: Mutex::new(HashMap::new()),
        })
    }

    /// A one-line description for logs.
    pub fn describe(&self) -> String {
        self.settings.describe(&self.region)
    }

    /// Runs `fut` on the backend's runtime and waits for it (callable from any thread), at most
    /// `deadline`: then the call fails with `Io` (and `fut` is dropped, closing its connection).
    fn run<T: Send + 'static>(&self, deadline: Duration, fut: impl Future<Output = T> + Send + 'static) -> BResult<T> {
        run_on(self.rt.as_ref().expect("present until drop").handle(), deadline, fut)
    }

    /// The object_store client of `bucket`.
    fn store(&self, bucket: &str) -> BResult<Arc<AmazonS3>> {
        validate_bucket(bucket).map_err(BackendError::from)?;
        let mut stores = self.stores.lock();
        if let Some(s) = stores.get(bucket) {
            return Ok(s.clone());
        }
        // Always "virtual-hosted" for object_store: the endpoint given is then the bucket's URL
        // as is, which [`S3Settings::bucket_url`] builds for both addressing styles.
        // Each call's own deadline ([`S3Backend::run`]) bounds it whole; these bound its parts:
        // retries stop within one call's deadline, and a body read may not stall longer.
        let d = self.settings.deadlines;
        let retry = RetryConfig { max_retries: 2, retry_timeout: d.call, ..Default::default() };
        let options = ClientOptions::new()
            .with_allow_http(self.settings.allow_http)
            .with_connect_timeout(d.connect)
            .with_read_timeout(d.call)
            .with_timeout_disabled();
        let mut b = AmazonS3Builder::new()
            .with_bucket_name(bucket)
            .with_region(&self.region)
            .with_endpoint(self.settings.bucket_url(bucket, &self.region))
            .with_virtual_hosted_style_request(true)
            .with_access_key_id(&self.creds.key_id)
            .with_secret_access_key(&self.creds.secret)
            .with_retry(retry)
            .with_client_options(options);
        if !self.settings.no_upload_checksum {
            b = b.with_checksum_algorithm(object_store::aws::Checksum::SHA256);
        }
        if let Some(t) = &self.creds.token {
            b = b.with_token(t);
        }
        let s = Arc::new(b.build().map_err(|e| BackendError::Invalid(format!("S3 backend for {bucket:?}: {e}")))?);
        stores.insert(bucket.to_string(), s.clone());
        Ok(s)
    }

    /// A missing key of `bucket`: `NoSuchBucket` if the bucket is the one missing.
    fn not_found(&self, bucket: &str, e: BackendError) -> BackendError {
        if matches!(e, BackendError::NoSuchKey(_)) {
            if let Err(b @ BackendError::NoSuchBucket(_)) = self.head_bucket(bucket) {
                return b;
            }
        }
        e
    }

    fn get(&self, bucket: &str, key: &str, range: Option<(u64, u64)>) -> BResult<(Bytes, ObjectInfo)> {
        let store = self.store(bucket)?;
        let path = key_path(key)?;
        let opts = GetOptions {
            range: range.map(|(s, e)| GetRange::Bounded(s..e)),
            head: range.is_none(),
            ..Default::default()
        };
        let head = range.is_none();
        let deadline = self.settings.deadlines.transfer(range.map_or(0, |(s, e)| e.saturating_sub(s)));
        let r = self.run(deadline, async move {
            let r = store.get_opts(&path, opts).await?;
            let info = object_info(&r);
            let bytes = if head || r.meta.size == 0 { Bytes::new() } else { r.bytes().await? };
            Ok::<_, object_store::Error>((bytes, info))
        })?;
        r.map_err(|e| self.not_found(bucket, map_err(e, bucket, key)))
    }
}

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

impl Drop for S3Backend {
    fn drop(&mut self) {
        // Dropping a runtime blocks; from an async context that would panic.
        if let Some(rt) = self.rt.take() {
            rt.shutdown_background();
        }
    }
}
