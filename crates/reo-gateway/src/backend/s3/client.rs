//! The S3 client behind [`S3Backend`]: one object_store client per bucket, the reqwest client for
//! bucket operations and the small tokio runtime both run on, and [`run_on`], which drives a call
//! on that runtime from a gateway thread with a deadline. The [`Backend`](crate::backend::Backend)
//! operations are in `mod.rs`, bucket requests in `buckets.rs`, uploads in `writer.rs`.

use std::collections::HashMap;
use std::future::Future;
use std::sync::Arc;
use std::time::Duration;

use bytes::Bytes;
use object_store::aws::{AmazonS3, AmazonS3Builder};
use object_store::{ClientOptions, GetOptions, GetRange, ObjectStore, RetryConfig};
use parking_lot::Mutex;

use super::convert::object_info;
use super::errors::{key_path, map_err};
use super::settings::{Credentials, S3Settings, SettingsError};
use crate::backend::{BResult, Backend, BackendError, ObjectInfo};
use crate::keys::validate_bucket;

/// Runs `fut` on the runtime of `rt` and waits for it (from a thread outside it), at most
/// `deadline`: then the call fails with `Io` (and `fut` is dropped, closing its connection).
pub(super) fn run_on<T: Send + 'static>(
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
    pub(super) settings: S3Settings,
    pub(super) region: String,
    pub(super) creds: Credentials,
    pub(super) rt: Option<tokio::runtime::Runtime>,
    pub(super) stores: Mutex<HashMap<String, Arc<AmazonS3>>>,
    pub(super) http: reqwest::Client,
    /// Buckets seen to exist, and when (see [`buckets`]).
    pub(super) known: Mutex<HashMap<String, (u64, std::time::Instant)>>,
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
    pub(super) fn run<T: Send + 'static>(
        &self,
        deadline: Duration,
        fut: impl Future<Output = T> + Send + 'static,
    ) -> BResult<T> {
        run_on(self.rt.as_ref().expect("present until drop").handle(), deadline, fut)
    }

    /// The object_store client of `bucket`.
    pub(super) fn store(&self, bucket: &str) -> BResult<Arc<AmazonS3>> {
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
    pub(super) fn not_found(&self, bucket: &str, e: BackendError) -> BackendError {
        if matches!(e, BackendError::NoSuchKey(_)) {
            if let Err(b @ BackendError::NoSuchBucket(_)) = self.head_bucket(bucket) {
                return b;
            }
        }
        e
    }

    pub(super) fn get(&self, bucket: &str, key: &str, range: Option<(u64, u64)>) -> BResult<(Bytes, ObjectInfo)> {
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

impl Drop for S3Backend {
    fn drop(&mut self) {
        // Dropping a runtime blocks; from an async context that would panic.
        if let Some(rt) = self.rt.take() {
            rt.shutdown_background();
        }
    }
}
