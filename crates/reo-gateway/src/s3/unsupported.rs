//! Request features Reo does not implement, refused with S3's error rather than accepted and
//! ignored: a client that asked for them must not believe it got them.
//!
//! Server-side encryption of every kind (SSE-S3, SSE-KMS, SSE-C): the cache keeps objects in
//! plaintext on its devices and passes none of these to the backend, so a write asking for one
//! answers `NotImplemented`; a read carrying SSE-C keys answers S3's `InvalidRequest` for an
//! object that is not encrypted (none is).

use s3s::dto::{
    CopyObjectInput, CreateMultipartUploadInput, GetObjectInput, HeadObjectInput, PutObjectInput, UploadPartInput,
};
use s3s::{s3_error, S3Result};

/// The SSE headers a request carried, by name.
fn named(present: &[(&'static str, bool)]) -> Vec<&'static str> {
    present.iter().filter(|(_, p)| *p).map(|(n, _)| *n).collect()
}

fn refuse_write(present: &[(&'static str, bool)]) -> S3Result<()> {
    let sent = named(present);
    if sent.is_empty() {
        return Ok(());
    }
    Err(s3_error!(
        NotImplemented,
        "server-side encryption is not supported by this gateway (objects are stored unencrypted); \
         the request carried {}",
        sent.join(", ")
    ))
}

fn refuse_read(present: &[(&'static str, bool)]) -> S3Result<()> {
    let sent = named(present);
    if sent.is_empty() {
        return Ok(());
    }
    Err(s3_error!(
        InvalidRequest,
        "The encryption parameters are not applicable to this object ({} sent; no object here is \
         encrypted).",
        sent.join(", ")
    ))
}

const CUSTOMER: [&str; 3] = [
    "x-amz-server-side-encryption-customer-algorithm",
    "x-amz-server-side-encryption-customer-key",
    "x-amz-server-side-encryption-customer-key-MD5",
];

/// A write's SSE headers: `managed` are SSE-S3/KMS's four (`x-amz-server-side-encryption`, its
/// KMS key id, context and bucket key), `customer` SSE-C's three.
fn write(managed: [bool; 4], customer: [bool; 3]) -> S3Result<()> {
    const MANAGED: [&str; 4] = [
        "x-amz-server-side-encryption",
        "x-amz-server-side-encryption-aws-kms-key-id",
        "x-amz-server-side-encryption-context",
        "x-amz-server-side-encryption-bucket-key-enabled",
    ];
    let present: Vec<_> = MANAGED.into_iter().zip(managed).chain(CUSTOMER.into_iter().zip(customer)).collect();
    refuse_write(&present)
}

/// A read's SSE-C headers.
fn read(customer: [bool; 3]) -> S3Result<()> {
    refuse_read(&CUSTOMER.into_iter().zip(customer).collect::<Vec<_>>())
}

pub fn put(i: &PutObjectInput) -> S3Result<()> {
    write(
        [
            i.server_side_encryption.is_some(),
            i.ssekms_key_id.is_some(),
            i.ssekms_encryption_context.is_some(),
            i.bucket_key_enabled.is_some(),
        ],
        [i.sse_customer_algorithm.is_some(), i.sse_customer_key.is_some(), i.sse_customer_key_md5.is_some()],
    )
}

pub fn create_multipart(i: &CreateMultipartUploadInput) -> S3Result<()> {
    write(
        [
            i.server_side_encryption.is_some(),
            i.ssekms_key_id.is_some(),
            i.ssekms_encryption_context.is_some(),
            i.bucket_key_enabled.is_some(),
        ],
        [i.sse_customer_algorithm.is_some(), i.sse_customer_key.is_some(), i.sse_customer_key_md5.is_some()],
    )
}

pub fn copy(i: &CopyObjectInput) -> S3Result<()> {
    refuse_read(&[
        ("x-amz-copy-source-server-side-encryption-customer-algorithm", i.copy_source_sse_customer_algorithm.is_some()),
        ("x-amz-copy-source-server-side-encryption-customer-key", i.copy_source_sse_customer_key.is_some()),
        ("x-amz-copy-source-server-side-encryption-customer-key-MD5", i.copy_source_sse_customer_key_md5.is_some()),
    ])?;
    write(
        [
            i.server_side_encryption.is_some(),
            i.ssekms_key_id.is_some(),
            i.ssekms_encryption_context.is_some(),
            i.bucket_key_enabled.is_some(),
        ],
        [i.sse_customer_algorithm.is_some(), i.sse_customer_key.is_some(), i.sse_customer_key_md5.is_some()],
    )
}

pub fn upload_part(i: &UploadPartInput) -> S3Result<()> {
    write(
        [false; 4],
        [i.sse_customer_algorithm.is_some(), i.sse_customer_key.is_some(), i.sse_customer_key_md5.is_some()],
    )
}

pub fn get(i: &GetObjectInput) -> S3Result<()> {
    read([i.sse_customer_algorithm.is_some(), i.sse_customer_key.is_some(), i.sse_customer_key_md5.is_some()])
}

pub fn head(i: &HeadObjectInput) -> S3Result<()> {
    read([i.sse_customer_algorithm.is_some(), i.sse_customer_key.is_some(), i.sse_customer_key_md5.is_some()])
}
