//! Bucket operations of the S3 backend, passed through to the store: object_store has no bucket
//! API, so each request (ListBuckets, CreateBucket, HeadBucket, DeleteBucket) is signed with
//! object_store's public SigV4 signer (`AwsAuthorizer`, the one its own requests use) and sent
//! with reqwest (already built for object_store). S3's error codes become [`BackendError`]s.
//!
//! Buckets seen to exist are remembered: the gateway checks the bucket before every PUT and
//! DELETE, so a fresh answer (under [`FRESH`]) is reused without a request. An unreachable store
//! is an `Io` error even for a bucket seen before: the gateway then takes the buckets it knows as
//! existing (write-back PUTs keep being accepted and stay dirty on flash while it is down).

use std::time::{Duration, Instant};

use object_store::aws::{AwsAuthorizer, AwsCredential};
use object_store::client::{HttpRequest, HttpRequestBody};

use super::client::S3Backend;
use super::xml;
use crate::backend::{BResult, BackendError, BucketInfo};
use crate::keys::validate_bucket;

/// How long a bucket seen to exist is taken as existing without asking again.
const FRESH: Duration = Duration::from_secs(30);

/// One answer: status and body.
struct Answer {
    status: u16,
    body: String,
}

impl Answer {
    /// The S3 error code of the body (`<Code>…</Code>`), if any.
    fn code(&self) -> &str {
        xml::element(&self.body, "Code").unwrap_or("")
    }
}

/// Signs and sends one request; an unreachable store is `Io`.
fn send(b: &S3Backend, method: http::Method, url: String, body: Vec<u8>) -> BResult<Answer> {
    let cred = AwsCredential {
        key_id: b.creds.key_id.clone(),
        secret_key: b.creds.secret.clone(),
        token: b.creds.token.clone(),
    };
    let mut req: HttpRequest = http::Request::builder()
        .method(method.clone())
        .uri(&url)
        .body(HttpRequestBody::from(body.clone()))
        .map_err(|e| BackendError::Invalid(format!("S3 backend request {url}: {e}")))?;
    AwsAuthorizer::new(&cred, "s3", &b.region)
        .try_authorize(&mut req, None)
        .map_err(|e| BackendError::Io(format!("signing {method} {url}: {e}")))?;
    let mut rb = b.http.request(method.clone(), &url).body(body);
    for (k, v) in req.headers() {
        rb = rb.header(k, v);
    }
    let what = format!("{method} {url}");
    b.run(b.settings.deadlines.call, async move {
        let resp = rb
            .send()
            .await
            .map_err(|e| BackendError::Io(format!("S3 backend unreachable ({what}): {}", super::errors::chain(&e))))?;
        let status = resp.status().as_u16();
        let body = resp.text().await.unwrap_or_default();
        Ok::<_, BackendError>(Answer { status, body })
    })?
}

/// An unexpected answer as an error naming the request.
fn unexpected(what: &str, a: &Answer) -> BackendError {
    let code = a.code();
    if a.status == 403 {
        return BackendError::Io(format!("the S3 backend refused {what}: {code} (check the backend's credentials)"));
    }
    BackendError::Io(format!("the S3 backend answered {what} with {} {code}", a.status))
}

fn remember(b: &S3Backend, bucket: &str, created_ns: u64) {
    b.known.lock().insert(bucket.to_string(), (created_ns, Instant::now()));
}

fn forget(b: &S3Backend, bucket: &str) {
    b.known.lock().remove(bucket);
}

pub(super) fn list_buckets(b: &S3Backend) -> BResult<Vec<BucketInfo>> {
    let a = send(b, http::Method::GET, format!("{}/", b.settings.service_url(&b.region)), Vec::new())?;
    if a.status != 200 {
        return Err(unexpected("ListBuckets", &a));
    }
    let mut out: Vec<BucketInfo> =
        xml::buckets(&a.body).into_iter().map(|(name, created_ns)| BucketInfo { name, created_ns }).collect();
    for bi in &out {
        remember(b, &bi.name, bi.created_ns);
    }
    out.sort_by(|x, y| x.name.cmp(&y.name));
    Ok(out)
}

/// Whether the store serves these credentials: a HeadBucket of a bucket seen before answering
/// 200 or 404, else a ListBuckets answering 200. A 403 or a 5xx (a load balancer with no
/// healthy store behind it) is not serving.
pub(super) fn probe(b: &S3Backend) -> BResult<()> {
    let seen = b.known.lock().keys().next().cloned();
    let (what, a) = match seen {
        Some(bucket) => {
            let a = send(b, http::Method::HEAD, b.settings.bucket_url(&bucket, &b.region), Vec::new())?;
            (format!("HeadBucket {bucket}"), a)
        }
        None => (
            "ListBuckets".to_string(),
            send(b, http::Method::GET, format!("{}/", b.settings.service_url(&b.region)), Vec::new())?,
        ),
    };
    match a.status {
        200..=299 | 404 => Ok(()),
        _ => Err(unexpected(&what, &a)),
    }
}

pub(super) fn create_bucket(b: &S3Backend, bucket: &str) -> BResult<()> {
    validate_bucket(bucket).map_err(BackendError::from)?;
    // us-east-1 takes no location constraint (and refuses one naming itself).
    let body = if b.region == "us-east-1" {
        Vec::new()
    } else {
        format!(
            "<CreateBucketConfiguration xmlns=\"http://s3.amazonaws.com/doc/2006-03-01/\">\
             <LocationConstraint>{}</LocationConstraint></CreateBucketConfiguration>",
            b.region
        )
        .into_bytes()
    };
    let a = send(b, http::Method::PUT, format!("{}/", b.settings.bucket_url(bucket, &b.region)), body)?;
    match (a.status, a.code()) {
        (200, _) => {
            remember(b, bucket, crate::backend::local::now_ns());
            Ok(())
        }
        (409, "BucketAlreadyOwnedByYou" | "BucketAlreadyExists") => Err(BackendError::BucketExists(bucket.into())),
        (400, "InvalidBucketName") => {
            Err(BackendError::Invalid(format!("bucket name {bucket:?} refused by the S3 backend")))
        }
        _ => Err(unexpected(&format!("CreateBucket {bucket}"), &a)),
    }
}

pub(super) fn head_bucket(b: &S3Backend, bucket: &str) -> BResult<BucketInfo> {
    validate_bucket(bucket).map_err(BackendError::from)?;
    let seen = b.known.lock().get(bucket).copied();
    if let Some((created_ns, at)) = seen {
        if at.elapsed() < FRESH {
            return Ok(BucketInfo { name: bucket.into(), created_ns });
        }
    }
    match send(b, http::Method::HEAD, b.settings.bucket_url(bucket, &b.region), Vec::new()) {
        Ok(a) if a.status == 200 => {
            let created_ns = seen.map_or(0, |s| s.0);
            remember(b, bucket, created_ns);
            Ok(BucketInfo { name: bucket.into(), created_ns })
        }
        Ok(a) if a.status == 404 => {
            forget(b, bucket);
            Err(BackendError::NoSuchBucket(bucket.into()))
        }
        Ok(a) => Err(unexpected(&format!("HeadBucket {bucket}"), &a)),
        // Unreachable is an error, also for a bucket seen before: the gateway decides what to
        // assume (a hidden failure would mark a hung store up, and every write would wait out
        // its deadline again).
        Err(e) => Err(e),
    }
}

pub(super) fn delete_bucket(b: &S3Backend, bucket: &str) -> BResult<()> {
    validate_bucket(bucket).map_err(BackendError::from)?;
    let a = send(b, http::Method::DELETE, format!("{}/", b.settings.bucket_url(bucket, &b.region)), Vec::new())?;
    match (a.status, a.code()) {
        (200 | 204, _) => {
            forget(b, bucket);
            b.stores.lock().remove(bucket);
            Ok(())
        }
        (404, _) => {
            forget(b, bucket);
            Err(BackendError::NoSuchBucket(bucket.into()))
        }
        (409, "BucketNotEmpty") => Err(BackendError::BucketNotEmpty(bucket.into())),
        _ => Err(unexpected(&format!("DeleteBucket {bucket}"), &a)),
    }
}
