//! Backend errors as S3 errors, with messages that say what went wrong.

use s3s::{S3Error, S3ErrorCode};

use crate::backend::BackendError;

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
        BackendError::Io(_) => S3ErrorCode::ServiceUnavailable,
    };
    S3Error::with_message(code, e.to_string())
}
