//! Backend errors as S3 errors, with messages that say what went wrong; an unreachable or failing
//! backend is `503 SlowDown` with `Retry-After` ([`unavailable`]).

use s3s::{S3Error, S3ErrorCode};

use crate::backend::BackendError;

/// The S3 error for a backend error (`Io` becomes `503 SlowDown`, see [`unavailable`]).
pub fn backend_err(e: BackendError) -> S3Error {
    let code = match &e {
        BackendError::NoSuchBucket(_) => S3ErrorCode::NoSuchBucket,
        BackendError::NoSuchKey(_) => S3ErrorCode::NoSuchKey,
        BackendError::BucketExists(_) => S3ErrorCode::BucketAlreadyOwnedByYou,
        BackendError::BucketNotEmpty(_) => S3ErrorCode::BucketNotEmpty,
        BackendError::Invalid(m) if m.contains("bucket name") => S3ErrorCode::InvalidBucketName,
        BackendError::Invalid(m) if m.contains("bytes long") => S3ErrorCode::KeyTooLongError,
        BackendError::Invalid(_) => S3ErrorCode::InvalidArgument,
        BackendError::Precondition(_) => S3ErrorCode::PreconditionFailed,
        BackendError::Io(_) | BackendError::Busy(_) => return unavailable(e.to_string()),
    };
    S3Error::with_message(code, e.to_string())
}

/// Seconds a client is told to wait before retrying a request the backend could not serve (the
/// prober asks a backend that is down once a second).
pub const RETRY_AFTER_SECS: u64 = 1;

/// `503 SlowDown` with `Retry-After`: the backend is unreachable, failing or too slow (its
/// deadline passed); the request can be retried as is. (S3 clients back off and retry it.)
pub fn unavailable(message: String) -> S3Error {
    let mut e = S3Error::with_message(S3ErrorCode::SlowDown, message);
    let mut h = http::HeaderMap::new();
    h.insert(http::header::RETRY_AFTER, http::HeaderValue::from(RETRY_AFTER_SECS));
    e.set_headers(h);
    e
}
