//! s3s's hooks over [`Users`]: [`KeyAuth`] gives SigV4 the secret of an access key;
//! [`RoleAccess`] decides, once the signature is verified and before the input is read, whether
//! the signer's role and scopes allow the operation on its bucket or key, and for operations
//! whose input names more (a listing's prefix, DeleteObjects' keys, a copy's source) checks that
//! too. A denial is S3's `403 AccessDenied`, naming the user and what it may not do.

use std::sync::Arc;

use s3s::access::{S3Access, S3AccessContext};
use s3s::auth::{S3Auth, SecretKey};
use s3s::dto::*;
use s3s::path::S3Path;
use s3s::{s3_error, S3Error, S3Request, S3Result};

use super::{Access, User, Users};

/// Authentication: the secret of a known access key; an unknown key is S3's
/// `InvalidAccessKeyId`, as AWS answers it.
pub struct KeyAuth(pub Arc<Users>);

#[async_trait::async_trait]
impl S3Auth for KeyAuth {
    async fn get_secret_key(&self, access_key: &str) -> S3Result<SecretKey> {
        match self.0.lookup(access_key) {
            Some((_, secret)) => Ok(SecretKey::from(secret)),
            None => Err(s3_error!(InvalidAccessKeyId, "the access key {access_key:?} is not known to this gateway")),
        }
    }
}

/// Authorization by role and scope (see the module doc).
pub struct RoleAccess(pub Arc<Users>);

/// Whether an S3 operation only reads.
fn reads(op: &str) -> bool {
    op.starts_with("Get") || op.starts_with("Head") || op.starts_with("List")
}

fn denied(u: &User, what: impl std::fmt::Display) -> S3Error {
    s3_error!(AccessDenied, "user {} may not {what}", u.describe())
}

impl RoleAccess {
    /// The signer of a request (s3s has verified the signature).
    fn signer(&self, creds: Option<&s3s::auth::Credentials>) -> S3Result<Arc<User>> {
        let Some(c) = creds else { return Err(s3_error!(AccessDenied, "a signed request is needed")) };
        self.0.user(&c.access_key).ok_or_else(|| s3_error!(InvalidAccessKeyId, "the access key is no longer known"))
    }

    fn listing<T>(&self, req: &S3Request<T>, bucket: &str, prefix: Option<&str>) -> S3Result<()> {
        let u = self.signer(req.credentials.as_ref())?;
        let prefix = prefix.unwrap_or("");
        if u.may_prefix(Access::Read, bucket, prefix) {
            Ok(())
        } else {
            Err(denied(&u, format_args!("list {bucket}/{prefix}* (a listing must stay within the user's scopes)")))
        }
    }

    /// Whether the signer may delete objects in `bucket` at all (DeleteObjects before its keys
    /// are read; each key is checked by [`S3Access::delete_objects`]).
    pub fn may_delete_in(&self, creds: Option<&s3s::auth::Credentials>, bucket: &str) -> S3Result<()> {
        let u = self.signer(creds)?;
        if u.sees_bucket(bucket) && u.role_allows(Access::Write) {
            Ok(())
        } else {
            Err(denied(&u, format_args!("DeleteObjects on {bucket}")))
        }
    }

    fn copy_from(&self, creds: Option<&s3s::auth::Credentials>, src: &CopySource) -> S3Result<()> {
        let u = self.signer(creds)?;
        if let CopySource::Bucket { bucket, key, .. } = src {
            if !u.may_object(Access::Read, bucket, key) {
                return Err(denied(&u, format_args!("read the copy source {bucket}/{key}")));
            }
        }
        Ok(())
    }
}

#[async_trait::async_trait]
impl S3Access for RoleAccess {
    async fn check(&self, cx: &mut S3AccessContext<'_>) -> S3Result<()> {
        let u = self.signer(cx.credentials())?;
        let op = cx.s3_op().name();
        let access = if reads(op) { Access::Read } else { Access::Write };
        let ok = match cx.s3_path() {
            S3Path::Root => access == Access::Read, // ListBuckets (filtered by scope)
            S3Path::Bucket { bucket } => match op {
                // What these name is checked per key or prefix below; here, that the user sees the
                // bucket and, for DeleteObjects, may write.
                "ListObjects"
                | "ListObjectsV2"
                | "ListObjectVersions"
                | "ListMultipartUploads"
                | "HeadBucket"
                | "GetBucketLocation" => u.sees_bucket(bucket),
                "DeleteObjects" => u.sees_bucket(bucket) && u.role_allows(Access::Write),
                _ => u.may_bucket(access, bucket),
            },
            S3Path::Object { bucket, key } => u.may_object(access, bucket, key),
        };
        if ok {
            Ok(())
        } else {
            let target = match cx.s3_path() {
                S3Path::Root => String::new(),
                S3Path::Bucket { bucket } => format!(" on {bucket}"),
                S3Path::Object { bucket, key } => format!(" on {bucket}/{key}"),
            };
            Err(denied(&u, format_args!("{op}{target}")))
        }
    }

    async fn list_objects(&self, req: &mut S3Request<ListObjectsInput>) -> S3Result<()> {
        self.listing(req, &req.input.bucket, req.input.prefix.as_deref())
    }

    async fn list_objects_v2(&self, req: &mut S3Request<ListObjectsV2Input>) -> S3Result<()> {
        self.listing(req, &req.input.bucket, req.input.prefix.as_deref())
    }

    async fn list_object_versions(&self, req: &mut S3Request<ListObjectVersionsInput>) -> S3Result<()> {
        self.listing(req, &req.input.bucket, req.input.prefix.as_deref())
    }

    async fn list_multipart_uploads(&self, req: &mut S3Request<ListMultipartUploadsInput>) -> S3Result<()> {
        self.listing(req, &req.input.bucket, req.input.prefix.as_deref())
    }

    async fn delete_objects(&self, req: &mut S3Request<DeleteObjectsInput>) -> S3Result<()> {
        let u = self.signer(req.credentials.as_ref())?;
        let bucket = &req.input.bucket;
        match req.input.delete.objects.iter().find(|o| !u.may_object(Access::Write, bucket, &o.key)) {
            Some(o) => Err(denied(&u, format_args!("delete {bucket}/{}", o.key))),
            None => Ok(()),
        }
    }

    async fn copy_object(&self, req: &mut S3Request<CopyObjectInput>) -> S3Result<()> {
        self.copy_from(req.credentials.as_ref(), &req.input.copy_source)
    }

    async fn upload_part_copy(&self, req: &mut S3Request<UploadPartCopyInput>) -> S3Result<()> {
        self.copy_from(req.credentials.as_ref(), &req.input.copy_source)
    }
}
