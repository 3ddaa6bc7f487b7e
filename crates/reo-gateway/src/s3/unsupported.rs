//! Request features Reo does not implement, refused with S3's error rather than accepted and
//! ignored: a client that asked for them must not believe it got them.
//!
//! Server-side encryption of every kind (SSE-S3, SSE-KMS, SSE-C): the cache keeps objects in
//! plaintext on its devices and passes none of these to the backend, so a write asking for one
//! answers `NotImplemented`; a read carrying SSE-C keys answers S3's `InvalidRequest` for an
//! object that is not encrypted (none is).
//!
//! Per-object access control, tags and Object Lock on a write ([`object_features`]): ACLs other
//! than the private default, grants, `x-amz-tagging`, retention and legal holds answer
//! `NotImplemented` — an object is readable by the gateway's credentials and nobody else, has
//! no tags and can be deleted at any time, whatever the request asked.

use s3s::dto::{
    CopyObjectInput, CreateBucketInput, CreateMultipartUploadInput, GetObjectInput, HeadObjectInput, PutObjectInput,
    UploadPartCopyInput, UploadPartInput,
};
use s3s::{s3_error, S3Result};

/// The headers of `present` a request carried, joined for a message; `None` if none.
fn named(present: &[(&'static str, bool)]) -> Option<String> {
    let sent: Vec<_> = present.iter().filter(|(_, p)| *p).map(|(n, _)| *n).collect();
    (!sent.is_empty()).then(|| sent.join(", "))
}

fn refuse_write(present: &[(&'static str, bool)]) -> S3Result<()> {
    match named(present) {
        None => Ok(()),
        Some(sent) => Err(s3_error!(
            NotImplemented,
            "server-side encryption is not supported by this gateway (objects are stored unencrypted); \
             the request carried {sent}"
        )),
    }
}

fn refuse_read(present: &[(&'static str, bool)]) -> S3Result<()> {
    match named(present) {
        None => Ok(()),
        Some(sent) => Err(s3_error!(
            InvalidRequest,
            "The encryption parameters are not applicable to this object ({sent} sent; no object here is \
             encrypted)."
        )),
    }
}

const CUSTOMER: [&str; 3] = [
    "x-amz-server-side-encryption-customer-algorithm",
    "x-amz-server-side-encryption-customer-key",
    "x-amz-server-side-encryption-customer-key-MD5",
];

/// Which of SSE-C's three headers an input carries (the inputs name them alike).
macro_rules! customer {
    ($i:expr) => {
        [$i.sse_customer_algorithm.is_some(), $i.sse_customer_key.is_some(), $i.sse_customer_key_md5.is_some()]
    };
}

/// Which of a copy source's SSE-C headers an input carries.
macro_rules! source_customer {
    ($i:expr) => {
        [
            $i.copy_source_sse_customer_algorithm.is_some(),
            $i.copy_source_sse_customer_key.is_some(),
            $i.copy_source_sse_customer_key_md5.is_some(),
        ]
    };
}

/// Which of SSE-S3/KMS's four headers an input carries.
macro_rules! managed {
    ($i:expr) => {
        [
            $i.server_side_encryption.is_some(),
            $i.ssekms_key_id.is_some(),
            $i.ssekms_encryption_context.is_some(),
            $i.bucket_key_enabled.is_some(),
        ]
    };
}

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

/// The write features of [`object_features`] a request carried (three input types name them
/// alike).
macro_rules! object_features {
    ($i:expr) => {
        features(
            $i.acl.as_ref().map(|a| a.as_str()),
            &[
                ("x-amz-grant-full-control", $i.grant_full_control.is_some()),
                ("x-amz-grant-read", $i.grant_read.is_some()),
                ("x-amz-grant-read-acp", $i.grant_read_acp.is_some()),
                ("x-amz-grant-write-acp", $i.grant_write_acp.is_some()),
                ("x-amz-tagging", $i.tagging.is_some()),
                ("x-amz-object-lock-mode", $i.object_lock_mode.is_some()),
                ("x-amz-object-lock-retain-until-date", $i.object_lock_retain_until_date.is_some()),
                ("x-amz-object-lock-legal-hold", $i.object_lock_legal_hold_status.is_some()),
            ],
        )
    };
}

/// Refuses a canned ACL other than the private default (or its one-account equivalent,
/// `bucket-owner-full-control`) and any of `present`.
fn features(acl: Option<&str>, present: &[(&'static str, bool)]) -> S3Result<()> {
    if let Some(a) = acl.filter(|a| !matches!(*a, "private" | "bucket-owner-full-control")) {
        return Err(s3_error!(
            NotImplemented,
            "x-amz-acl {a:?}: access control lists are not supported (objects are private to this gateway's credentials)"
        ));
    }
    match named(present) {
        None => Ok(()),
        Some(sent) => Err(s3_error!(
            NotImplemented,
            "object grants, tags and Object Lock are not supported by this gateway; the request carried {sent}"
        )),
    }
}

pub fn put(i: &PutObjectInput) -> S3Result<()> {
    object_features!(i)?;
    if i.write_offset_bytes.is_some() {
        return Err(s3_error!(NotImplemented, "appending to an object (x-amz-write-offset-bytes) is not supported"));
    }
    write(managed!(i), customer!(i))
}

pub fn create_multipart(i: &CreateMultipartUploadInput) -> S3Result<()> {
    object_features!(i)?;
    write(managed!(i), customer!(i))
}

/// A copy's SSE-C headers for its source.
fn copy_source_keys(customer: [bool; 3]) -> S3Result<()> {
    const SOURCE: [&str; 3] = [
        "x-amz-copy-source-server-side-encryption-customer-algorithm",
        "x-amz-copy-source-server-side-encryption-customer-key",
        "x-amz-copy-source-server-side-encryption-customer-key-MD5",
    ];
    refuse_read(&SOURCE.into_iter().zip(customer).collect::<Vec<_>>())
}

pub fn copy(i: &CopyObjectInput) -> S3Result<()> {
    object_features!(i)?;
    if i.tagging_directive.as_ref().is_some_and(|d| d.as_str() == "REPLACE") {
        return Err(s3_error!(NotImplemented, "object tags are not supported (x-amz-tagging-directive: REPLACE)"));
    }
    copy_source_keys(source_customer!(i))?;
    write(managed!(i), customer!(i))
}

/// CreateBucket: the private default ACL only, no grants, no Object Lock.
pub fn create_bucket(i: &CreateBucketInput) -> S3Result<()> {
    features(
        i.acl.as_ref().map(|a| a.as_str()),
        &[
            ("x-amz-grant-full-control", i.grant_full_control.is_some()),
            ("x-amz-grant-read", i.grant_read.is_some()),
            ("x-amz-grant-read-acp", i.grant_read_acp.is_some()),
            ("x-amz-grant-write", i.grant_write.is_some()),
            ("x-amz-grant-write-acp", i.grant_write_acp.is_some()),
            ("x-amz-bucket-object-lock-enabled", i.object_lock_enabled_for_bucket == Some(true)),
        ],
    )
}

pub fn upload_part_copy(i: &UploadPartCopyInput) -> S3Result<()> {
    copy_source_keys(source_customer!(i))?;
    write([false; 4], customer!(i))
}

pub fn upload_part(i: &UploadPartInput) -> S3Result<()> {
    write([false; 4], customer!(i))
}

pub fn get(i: &GetObjectInput) -> S3Result<()> {
    read(customer!(i))
}

pub fn head(i: &HeadObjectInput) -> S3Result<()> {
    read(customer!(i))
}
