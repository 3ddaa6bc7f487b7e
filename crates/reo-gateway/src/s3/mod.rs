//! The S3 API ([`ReoS3`], an `s3s::S3`): each operation converts its DTOs and runs the
//! [`Gateway`] on tokio's blocking pool. Operations not listed here answer s3s's
//! `NotImplemented`. Files: `objects.rs` (get, head, put, delete, copy), `buckets.rs`,
//! `list.rs` (list v1/v2, versions), `multipart.rs`, `convert.rs`, `integrity.rs` (payload
//! digests).

mod buckets;
pub mod convert;
mod copy_source;
pub mod delete_route;
mod headers;
mod integrity;
mod list;
mod multipart;
mod objects;
pub mod parts;
mod receive;
mod unsupported;

use std::sync::Arc;

use s3s::dto::*;
use s3s::{s3_error, S3ErrorCode, S3Request, S3Response, S3Result, S3};

use crate::gateway::Gateway;

/// Limits on what clients may send.
#[derive(Debug, Clone, Copy)]
pub struct Limits {
    /// Largest single PUT or part body.
    pub max_body: u64,
}

impl Default for Limits {
    fn default() -> Self {
        Limits { max_body: 1 << 30 }
    }
}

/// The default memory budget of request bodies: 2 GiB, at least twice the body limit.
pub fn default_memory_budget(max_body: u64) -> u64 {
    (2u64 << 30).max(2 * max_body)
}

/// The S3 service over a gateway.
#[derive(Clone)]
pub struct ReoS3 {
    /// The gateway's data path.
    pub gw: Arc<Gateway>,
    /// What clients may send.
    pub limits: Limits,
    /// Who signed a request (ListBuckets shows a user the buckets of its scopes).
    pub users: Arc<crate::users::Users>,
    /// Bytes of bodies and assembled objects held in memory at once.
    pub budget: Arc<crate::budget::MemoryBudget>,
}

/// Runs blocking gateway work off the async threads.
pub(crate) async fn blocking<T: Send + 'static>(f: impl FnOnce() -> S3Result<T> + Send + 'static) -> S3Result<T> {
    tokio::task::spawn_blocking(f).await.map_err(|e| s3_error!(InternalError, "worker failed: {e}"))?
}

type R<T> = S3Result<S3Response<T>>;

#[async_trait::async_trait]
impl S3 for ReoS3 {
    async fn list_buckets(&self, req: S3Request<ListBucketsInput>) -> R<ListBucketsOutput> {
        self.op_list_buckets(req).await
    }
    async fn create_bucket(&self, req: S3Request<CreateBucketInput>) -> R<CreateBucketOutput> {
        self.op_create_bucket(req).await
    }
    async fn head_bucket(&self, req: S3Request<HeadBucketInput>) -> R<HeadBucketOutput> {
        self.op_head_bucket(req).await
    }
    async fn delete_bucket(&self, req: S3Request<DeleteBucketInput>) -> R<DeleteBucketOutput> {
        self.op_delete_bucket(req).await
    }
    async fn get_bucket_location(&self, req: S3Request<GetBucketLocationInput>) -> R<GetBucketLocationOutput> {
        self.op_get_bucket_location(req).await
    }
    async fn get_bucket_versioning(&self, req: S3Request<GetBucketVersioningInput>) -> R<GetBucketVersioningOutput> {
        self.op_get_bucket_versioning(req).await
    }
    async fn get_bucket_cors(&self, req: S3Request<GetBucketCorsInput>) -> R<GetBucketCorsOutput> {
        Err(self.no_configuration(req.input.bucket, S3ErrorCode::NoSuchCORSConfiguration, "CORS").await)
    }
    async fn get_bucket_lifecycle_configuration(
        &self,
        req: S3Request<GetBucketLifecycleConfigurationInput>,
    ) -> R<GetBucketLifecycleConfigurationOutput> {
        Err(self.no_configuration(req.input.bucket, S3ErrorCode::NoSuchLifecycleConfiguration, "lifecycle").await)
    }
    async fn get_bucket_policy(&self, req: S3Request<GetBucketPolicyInput>) -> R<GetBucketPolicyOutput> {
        Err(self.no_configuration(req.input.bucket, S3ErrorCode::NoSuchBucketPolicy, "policy").await)
    }
    async fn get_bucket_tagging(&self, req: S3Request<GetBucketTaggingInput>) -> R<GetBucketTaggingOutput> {
        Err(self.no_configuration(req.input.bucket, S3ErrorCode::NoSuchTagSet, "tag").await)
    }
    async fn get_bucket_encryption(&self, req: S3Request<GetBucketEncryptionInput>) -> R<GetBucketEncryptionOutput> {
        let code = S3ErrorCode::ServerSideEncryptionConfigurationNotFoundError;
        Err(self.no_configuration(req.input.bucket, code, "encryption").await)
    }
    async fn get_bucket_website(&self, req: S3Request<GetBucketWebsiteInput>) -> R<GetBucketWebsiteOutput> {
        Err(self.no_configuration(req.input.bucket, S3ErrorCode::NoSuchWebsiteConfiguration, "website").await)
    }
    async fn get_object(&self, req: S3Request<GetObjectInput>) -> R<GetObjectOutput> {
        self.op_get_object(req).await
    }
    async fn head_object(&self, req: S3Request<HeadObjectInput>) -> R<HeadObjectOutput> {
        self.op_head_object(req).await
    }
    async fn get_object_attributes(&self, req: S3Request<GetObjectAttributesInput>) -> R<GetObjectAttributesOutput> {
        self.op_get_object_attributes(req).await
    }
    async fn put_object(&self, req: S3Request<PutObjectInput>) -> R<PutObjectOutput> {
        self.op_put_object(req).await
    }
    async fn delete_object(&self, req: S3Request<DeleteObjectInput>) -> R<DeleteObjectOutput> {
        self.op_delete_object(req).await
    }
    async fn delete_objects(&self, req: S3Request<DeleteObjectsInput>) -> R<DeleteObjectsOutput> {
        self.op_delete_objects(req).await
    }
    async fn copy_object(&self, req: S3Request<CopyObjectInput>) -> R<CopyObjectOutput> {
        self.op_copy_object(req).await
    }
    async fn list_objects(&self, req: S3Request<ListObjectsInput>) -> R<ListObjectsOutput> {
        self.op_list_objects(req).await
    }
    async fn list_objects_v2(&self, req: S3Request<ListObjectsV2Input>) -> R<ListObjectsV2Output> {
        self.op_list_objects_v2(req).await
    }
    async fn list_object_versions(&self, req: S3Request<ListObjectVersionsInput>) -> R<ListObjectVersionsOutput> {
        self.op_list_object_versions(req).await
    }
    async fn create_multipart_upload(
        &self,
        req: S3Request<CreateMultipartUploadInput>,
    ) -> R<CreateMultipartUploadOutput> {
        self.op_create_multipart_upload(req).await
    }
    async fn upload_part(&self, req: S3Request<UploadPartInput>) -> R<UploadPartOutput> {
        self.op_upload_part(req).await
    }
    async fn upload_part_copy(&self, req: S3Request<UploadPartCopyInput>) -> R<UploadPartCopyOutput> {
        self.op_upload_part_copy(req).await
    }
    async fn complete_multipart_upload(
        &self,
        req: S3Request<CompleteMultipartUploadInput>,
    ) -> R<CompleteMultipartUploadOutput> {
        self.op_complete_multipart_upload(req).await
    }
    async fn abort_multipart_upload(&self, req: S3Request<AbortMultipartUploadInput>) -> R<AbortMultipartUploadOutput> {
        self.op_abort_multipart_upload(req).await
    }
    async fn list_parts(&self, req: S3Request<ListPartsInput>) -> R<ListPartsOutput> {
        self.op_list_parts(req).await
    }
    async fn list_multipart_uploads(&self, req: S3Request<ListMultipartUploadsInput>) -> R<ListMultipartUploadsOutput> {
        self.op_list_multipart_uploads(req).await
    }
}
