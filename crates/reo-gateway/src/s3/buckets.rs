//! Bucket operations: they pass through to the backend (a bucket with unflushed objects is not
//! empty).

use s3s::dto::*;
use s3s::{S3Request, S3Response};

use super::convert::timestamp;
use super::{blocking, ReoS3, R};
use crate::gateway::errors::backend_err;

impl ReoS3 {
    pub(super) async fn op_list_buckets(&self, _req: S3Request<ListBucketsInput>) -> R<ListBucketsOutput> {
        let gw = self.gw.clone();
        let list = blocking(move || gw.backend.list_buckets().map_err(backend_err)).await?;
        let buckets = list
            .into_iter()
            .map(|b| Bucket { name: Some(b.name), creation_date: Some(timestamp(b.created_ns)), ..Default::default() })
            .collect();
        let owner = Owner { display_name: Some("reo".into()), id: Some("reo".into()) };
        Ok(S3Response::new(ListBucketsOutput { buckets: Some(buckets), owner: Some(owner), ..Default::default() }))
    }

    pub(super) async fn op_create_bucket(&self, req: S3Request<CreateBucketInput>) -> R<CreateBucketOutput> {
        let gw = self.gw.clone();
        let b = req.input.bucket;
        let loc = format!("/{b}");
        blocking(move || {
            gw.backend.create_bucket(&b).map_err(backend_err)?;
            gw.bucket_exists(&b); // objects stuck for want of it flush now
            Ok(())
        })
        .await?;
        Ok(S3Response::new(CreateBucketOutput { location: Some(loc) }))
    }

    pub(super) async fn op_head_bucket(&self, req: S3Request<HeadBucketInput>) -> R<HeadBucketOutput> {
        let gw = self.gw.clone();
        let b = req.input.bucket;
        blocking(move || gw.backend.head_bucket(&b).map_err(backend_err)).await?;
        Ok(S3Response::new(HeadBucketOutput::default()))
    }

    pub(super) async fn op_delete_bucket(&self, req: S3Request<DeleteBucketInput>) -> R<DeleteBucketOutput> {
        let gw = self.gw.clone();
        let b = req.input.bucket;
        blocking(move || gw.delete_bucket(&b)).await?;
        Ok(S3Response::new(DeleteBucketOutput::default()))
    }

    pub(super) async fn op_get_bucket_location(
        &self,
        req: S3Request<GetBucketLocationInput>,
    ) -> R<GetBucketLocationOutput> {
        let gw = self.gw.clone();
        let b = req.input.bucket;
        blocking(move || gw.backend.head_bucket(&b).map_err(backend_err)).await?;
        Ok(S3Response::new(GetBucketLocationOutput::default()))
    }

    pub(super) async fn op_get_bucket_versioning(
        &self,
        req: S3Request<GetBucketVersioningInput>,
    ) -> R<GetBucketVersioningOutput> {
        let gw = self.gw.clone();
        let b = req.input.bucket;
        blocking(move || gw.backend.head_bucket(&b).map_err(backend_err)).await?;
        // Never enabled: no Status element, as S3 answers for an unversioned bucket.
        Ok(S3Response::new(GetBucketVersioningOutput::default()))
    }
}
