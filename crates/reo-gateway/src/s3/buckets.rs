//! Bucket operations: they pass through to the backend (a bucket with unflushed objects is not
//! empty).

use s3s::dto::*;
use s3s::{s3_error, S3Error, S3ErrorCode, S3Request, S3Response};

use super::convert::{key_of_token, owner_of, timestamp, token_of};
use super::{blocking, ReoS3, R};
use crate::gateway::errors::backend_err;

impl ReoS3 {
    /// ListBuckets, by name order: `prefix`, pages of `max-buckets` (1–10,000; all without it)
    /// and a continuation token after the last name of a page.
    pub(super) async fn op_list_buckets(&self, req: S3Request<ListBucketsInput>) -> R<ListBucketsOutput> {
        let i = req.input;
        let max = match i.max_buckets {
            None => usize::MAX,
            Some(n) if (1..=10_000).contains(&n) => n as usize,
            Some(n) => return Err(s3_error!(InvalidArgument, "max-buckets {n} is outside 1..=10000")),
        };
        let after = i.continuation_token.as_deref().map(key_of_token).transpose()?;
        let gw = self.gw.clone();
        let mut list = blocking(move || gw.backend.list_buckets().map_err(backend_err)).await?;
        list.sort_by(|a, b| a.name.cmp(&b.name));
        let prefix = i.prefix.clone().unwrap_or_default();
        let signer = req.credentials.as_ref().and_then(|c| self.users.user(&c.access_key));
        let mut matching = list
            .into_iter()
            .filter(|b| signer.as_ref().is_some_and(|u| u.sees_bucket(&b.name)))
            .filter(|b| b.name.starts_with(&prefix) && after.as_ref().is_none_or(|a| b.name > *a))
            .peekable();
        let page: Vec<_> = matching.by_ref().take(max).collect();
        let next = matching.peek().is_some().then(|| page.last().map(|b| token_of(&b.name))).flatten();
        let buckets = page
            .into_iter()
            .map(|b| Bucket { name: Some(b.name), creation_date: Some(timestamp(b.created_ns)), ..Default::default() })
            .collect();
        Ok(S3Response::new(ListBucketsOutput {
            buckets: Some(buckets),
            owner: Some(owner_of(&req.credentials)),
            continuation_token: next,
            prefix: i.prefix,
        }))
    }

    pub(super) async fn op_create_bucket(&self, req: S3Request<CreateBucketInput>) -> R<CreateBucketOutput> {
        super::unsupported::create_bucket(&req.input)?;
        // The bucket is where the backend puts it: a location other than the region the request
        // was signed for is refused, as S3 refuses one that is not its endpoint's.
        let asked = req.input.create_bucket_configuration.as_ref().and_then(|c| c.location_constraint.as_ref());
        if let Some(lc) = asked.map(|l| l.as_str()).filter(|l| !l.is_empty()) {
            let signed = req.region.as_ref().map(|r| r.as_str()).unwrap_or("us-east-1");
            if lc != signed {
                return Err(s3_error!(
                    IllegalLocationConstraintException,
                    "The {lc} location constraint is incompatible for the region specific endpoint this request was sent to ({signed})."
                ));
            }
        }
        let gw = self.gw.clone();
        let b = req.input.bucket;
        let loc = format!("/{b}");
        // AWS's us-east-1 answers 200 to re-creating a bucket its requester has (buckets here
        // have no owner, and the user may write the bucket); other regions 409.
        let recreate_ok = req.region.as_ref().is_none_or(|r| r.as_str() == "us-east-1");
        blocking(move || gw.create_bucket(&b, recreate_ok)).await?;
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

    /// A bucket configuration Reo does not keep (CORS, lifecycle, policy, tags, encryption,
    /// website): reading it answers S3's "there is none" for an existing bucket (setting it stays
    /// `NotImplemented`), so clients that probe for one carry on.
    pub(super) async fn no_configuration(&self, bucket: String, code: S3ErrorCode, what: &'static str) -> S3Error {
        let gw = self.gw.clone();
        let b = bucket.clone();
        match blocking(move || gw.backend.head_bucket(&b).map_err(backend_err)).await {
            Ok(_) => S3Error::with_message(code, format!("bucket {bucket:?} has no {what} configuration")),
            Err(e) => e,
        }
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
