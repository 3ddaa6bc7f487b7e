//! Multipart upload operations over [`crate::gateway::multipart`].

use s3s::dto::*;
use s3s::{s3_error, S3Request, S3Response};

use super::convert::{collect, etag, timestamp, url_encode};
use super::copy_source::{parse_range, source_of};
use super::headers::{user_meta, Standard};
use super::integrity::{with_checksums, Claims, Sent};
use super::objects::write_precondition;
use super::{blocking, unsupported, ReoS3, R};
use crate::backend::ObjectInfo;
use crate::gateway::errors::backend_err;

impl ReoS3 {
    pub(super) async fn op_create_multipart_upload(
        &self,
        req: S3Request<CreateMultipartUploadInput>,
    ) -> R<CreateMultipartUploadOutput> {
        let gw = self.gw.clone();
        let mut i = req.input;
        unsupported::create_multipart(&i)?;
        let mut meta = ObjectInfo { user_meta: user_meta(i.metadata.take())?, ..Default::default() };
        Standard::of_create(&i)?.store(&mut meta.system);
        let (bucket, key) = (i.bucket.clone(), i.key.clone());
        let id = blocking(move || {
            gw.check_bucket(&i.bucket)?;
            gw.policy(&i.bucket, &i.key)?;
            crate::keys::validate_key(&i.key).map_err(|m| s3_error!(KeyTooLongError, "{m}"))?;
            gw.backend.check_key(&i.key).map_err(backend_err)?;
            meta.content_type = i.content_type.unwrap_or_else(|| "binary/octet-stream".into());
            gw.uploads.create(&i.bucket, &i.key, meta)
        })
        .await?;
        Ok(S3Response::new(CreateMultipartUploadOutput {
            bucket: Some(bucket),
            key: Some(key),
            upload_id: Some(id),
            ..Default::default()
        }))
    }

    pub(super) async fn op_upload_part(&self, req: S3Request<UploadPartInput>) -> R<UploadPartOutput> {
        let mut i = req.input;
        unsupported::upload_part(&i)?;
        let claims = Claims::parse(&Sent::of_part(&i), &req.headers)?;
        let data = collect(i.body.take(), self.limits.max_body).await?;
        let verified = claims.verify(&data, req.trailing_headers.as_ref())?;
        let gw = self.gw.clone();
        let e = blocking(move || {
            let u = gw.uploads.get(&i.bucket, &i.key, &i.upload_id)?;
            gw.uploads.put_part(&u, i.part_number, &data)
        })
        .await?;
        Ok(S3Response::new(with_checksums!(UploadPartOutput { e_tag: Some(etag(&e)) }, verified.fields())))
    }

    /// UploadPartCopy: a part from a range of an object (`x-amz-copy-source-range`, inclusive
    /// `bytes=first-last`; the whole object without one), read from the cache or the backend
    /// under the source's read lock, after its `x-amz-copy-source-if-*` conditions.
    pub(super) async fn op_upload_part_copy(&self, req: S3Request<UploadPartCopyInput>) -> R<UploadPartCopyOutput> {
        let i = req.input;
        unsupported::upload_part_copy(&i)?;
        let mut source = source_of!(i)?;
        source.range = i.copy_source_range.as_deref().map(parse_range).transpose()?;
        let (gw, limit) = (self.gw.clone(), self.limits.max_body);
        let e = blocking(move || {
            let u = gw.uploads.get(&i.bucket, &i.key, &i.upload_id)?;
            let (_, data) = source.read(&gw, limit)?;
            gw.uploads.put_part(&u, i.part_number, &data)
        })
        .await?;
        let result = CopyPartResult {
            e_tag: Some(etag(&e)),
            last_modified: Some(timestamp(crate::gateway::now_ns())),
            ..Default::default()
        };
        Ok(S3Response::new(UploadPartCopyOutput { copy_part_result: Some(result), ..Default::default() }))
    }

    pub(super) async fn op_complete_multipart_upload(
        &self,
        req: S3Request<CompleteMultipartUploadInput>,
    ) -> R<CompleteMultipartUploadOutput> {
        let gw = self.gw.clone();
        let i = req.input;
        let listed: Vec<(i32, String)> = i
            .multipart_upload
            .and_then(|m| m.parts)
            .unwrap_or_default()
            .into_iter()
            .map(|p| (p.part_number.unwrap_or(0), p.e_tag.map(|e| e.value().to_owned()).unwrap_or_default()))
            .collect();
        let (bucket, key) = (i.bucket.clone(), i.key.clone());
        let max = self.limits.max_body;
        let info = blocking(move || {
            let conditional = i.if_none_match.is_some() || i.if_match.is_some();
            let check = write_precondition(i.if_none_match.as_ref(), i.if_match.as_ref(), &i.key);
            gw.complete_upload_if(&i.bucket, &i.key, &i.upload_id, &listed, max, conditional.then_some(check))
        })
        .await?;
        Ok(S3Response::new(CompleteMultipartUploadOutput {
            location: Some(format!("/{bucket}/{key}")),
            bucket: Some(bucket),
            key: Some(key),
            e_tag: Some(etag(&info.etag)),
            ..Default::default()
        }))
    }

    pub(super) async fn op_abort_multipart_upload(
        &self,
        req: S3Request<AbortMultipartUploadInput>,
    ) -> R<AbortMultipartUploadOutput> {
        let gw = self.gw.clone();
        let i = req.input;
        blocking(move || gw.uploads.abort(&i.bucket, &i.key, &i.upload_id)).await?;
        Ok(S3Response::new(AbortMultipartUploadOutput::default()))
    }

    pub(super) async fn op_list_parts(&self, req: S3Request<ListPartsInput>) -> R<ListPartsOutput> {
        let gw = self.gw.clone();
        let i = req.input;
        let marker = i.part_number_marker.unwrap_or(0);
        let max = i.max_parts.unwrap_or(1000).clamp(0, 1000) as usize;
        let (bucket, key, id) = (i.bucket.clone(), i.key.clone(), i.upload_id.clone());
        let parts = blocking(move || {
            let u = gw.uploads.get(&i.bucket, &i.key, &i.upload_id)?;
            gw.uploads.parts(&u)
        })
        .await?;
        let rest: Vec<_> = parts.into_iter().filter(|p| p.number > marker).collect();
        let truncated = rest.len() > max;
        let page: Vec<Part> = rest
            .into_iter()
            .take(max)
            .map(|p| Part {
                part_number: Some(p.number),
                e_tag: Some(etag(&p.etag)),
                size: Some(p.size as i64),
                last_modified: Some(timestamp(p.mtime_ns)),
                ..Default::default()
            })
            .collect();
        Ok(S3Response::new(ListPartsOutput {
            bucket: Some(bucket),
            key: Some(key),
            upload_id: Some(id),
            part_number_marker: Some(marker),
            next_part_number_marker: page.last().and_then(|p| p.part_number).filter(|_| truncated),
            max_parts: Some(max as i32),
            is_truncated: Some(truncated),
            parts: Some(page),
            ..Default::default()
        }))
    }

    pub(super) async fn op_list_multipart_uploads(
        &self,
        req: S3Request<ListMultipartUploadsInput>,
    ) -> R<ListMultipartUploadsOutput> {
        let gw = self.gw.clone();
        let i = req.input;
        let url = i.encoding_type.as_ref().is_some_and(|e| e.as_str() == EncodingType::URL);
        let enc = |s: &str| if url { url_encode(s) } else { s.to_owned() };
        let prefix = i.prefix.clone().unwrap_or_default();
        let (b, p) = (i.bucket.clone(), prefix.clone());
        let ups = blocking(move || {
            gw.backend.head_bucket(&b).map_err(backend_err)?;
            Ok(gw.uploads.list(&b, &p))
        })
        .await?;
        let after = i.key_marker.clone().unwrap_or_default();
        let max = i.max_uploads.unwrap_or(1000).clamp(0, 1000) as usize;
        let rest: Vec<_> = ups.into_iter().filter(|u| u.key > after).collect();
        let truncated = rest.len() > max;
        let page: Vec<_> = rest.into_iter().take(max).collect();
        let uploads = page
            .iter()
            .map(|u| MultipartUpload {
                key: Some(enc(&u.key)),
                upload_id: Some(u.id.clone()),
                initiated: Some(timestamp(u.initiated_ns)),
                ..Default::default()
            })
            .collect();
        Ok(S3Response::new(ListMultipartUploadsOutput {
            bucket: Some(i.bucket),
            prefix: Some(enc(&prefix)),
            key_marker: Some(enc(&after)),
            max_uploads: Some(max as i32),
            is_truncated: Some(truncated),
            next_key_marker: page.last().filter(|_| truncated).map(|u| enc(&u.key)),
            next_upload_id_marker: page.last().filter(|_| truncated).map(|u| u.id.clone()),
            encoding_type: i.encoding_type,
            uploads: Some(uploads),
            ..Default::default()
        }))
    }
}
