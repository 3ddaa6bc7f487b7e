//! Object operations: GetObject (Range, conditionals), HeadObject, PutObject (If-None-Match: *),
//! DeleteObject, DeleteObjects, CopyObject.

use s3s::dto::*;
use s3s::{s3_error, S3Request, S3Response, S3Result};

use super::convert::{check_conditions, collect, etag, metadata, timestamp, user_meta};
use super::integrity::{Claims, Sent};
use super::{blocking, unsupported, ReoS3, R};
use crate::backend::ObjectInfo;

/// The `[start, end)` byte range a Range header asks of an object of `size` bytes.
fn byte_range(range: Option<&Range>, size: u64) -> S3Result<Option<(u64, u64)>> {
    let Some(r) = range else { return Ok(None) };
    match r.check(size) {
        Ok(r) => Ok(Some((r.start, r.end))),
        Err(_) => Err(s3_error!(InvalidRange, "the range is outside the object's {size} bytes")),
    }
}

/// `partNumber` of a GET or HEAD: part 1 of an object stored by a single PUT is all of it; a
/// completed multipart upload's part boundaries are not kept, so its parts cannot be told apart
/// and asking for one is refused rather than answered with the whole object.
fn check_part(part: Option<i32>, range: bool, info: &ObjectInfo) -> S3Result<()> {
    let Some(n) = part else { return Ok(()) };
    if range {
        return Err(s3_error!(InvalidRequest, "Cannot specify both Range header and partNumber query parameter"));
    }
    if info.etag.contains('-') {
        return Err(s3_error!(
            NotImplemented,
            "this gateway does not keep the part boundaries of a completed multipart upload: ask for a Range"
        ));
    }
    if n != 1 {
        let mut e = s3s::S3Error::with_message(
            s3s::S3ErrorCode::Custom("InvalidPartNumber".into()),
            "The requested partnumber is not satisfiable",
        );
        e.set_status_code(http::StatusCode::RANGE_NOT_SATISFIABLE);
        return Err(e);
    }
    Ok(())
}

impl ReoS3 {
    pub(super) async fn op_get_object(&self, req: S3Request<GetObjectInput>) -> R<GetObjectOutput> {
        let gw = self.gw.clone();
        let i = req.input;
        unsupported::get(&i)?;
        let (info, plan, range) = blocking(move || {
            let _r = gw.read_lock(&i.bucket, &i.key);
            let info = gw.head(&i.bucket, &i.key)?;
            check_part(i.part_number, i.range.is_some(), &info)?;
            check_conditions(
                &info,
                i.if_match.as_ref(),
                i.if_none_match.as_ref(),
                i.if_modified_since.as_ref(),
                i.if_unmodified_since.as_ref(),
            )?;
            let range = byte_range(i.range.as_ref(), info.size)?;
            let (start, end) = range.unwrap_or((0, info.size));
            let plan = gw.read_plan(&i.bucket, &i.key, &info, start, end)?;
            Ok((info, plan, range))
        })
        .await?;
        // A backend failure before the first byte is still an error status; after it, the body is
        // cut off (the client sees a short read).
        plan.opened().await?;
        let out = GetObjectOutput {
            content_length: Some(plan.len as i64),
            content_range: range.map(|(s, e)| format!("bytes {s}-{}/{}", e.saturating_sub(1), info.size)),
            accept_ranges: Some("bytes".into()),
            content_type: Some(info.content_type.clone()),
            e_tag: Some(etag(&info.etag)),
            last_modified: Some(timestamp(info.mtime_ns)),
            metadata: metadata(&info.user_meta),
            body: Some(StreamingBlob::wrap(plan.into_stream())),
            ..Default::default()
        };
        Ok(S3Response::new(out))
    }

    pub(super) async fn op_head_object(&self, req: S3Request<HeadObjectInput>) -> R<HeadObjectOutput> {
        let gw = self.gw.clone();
        let i = req.input;
        unsupported::head(&i)?;
        let info = blocking(move || {
            let _r = gw.read_lock(&i.bucket, &i.key);
            let info = gw.head(&i.bucket, &i.key)?;
            check_part(i.part_number, i.range.is_some(), &info)?;
            check_conditions(
                &info,
                i.if_match.as_ref(),
                i.if_none_match.as_ref(),
                i.if_modified_since.as_ref(),
                i.if_unmodified_since.as_ref(),
            )?;
            Ok(info)
        })
        .await?;
        Ok(S3Response::new(HeadObjectOutput {
            content_length: Some(info.size as i64),
            accept_ranges: Some("bytes".into()),
            content_type: Some(info.content_type.clone()),
            e_tag: Some(etag(&info.etag)),
            last_modified: Some(timestamp(info.mtime_ns)),
            metadata: metadata(&info.user_meta),
            ..Default::default()
        }))
    }

    pub(super) async fn op_put_object(&self, req: S3Request<PutObjectInput>) -> R<PutObjectOutput> {
        let mut i = req.input;
        unsupported::put(&i)?;
        let claims = Claims::parse(&Sent::of_put(&i), &req.headers)?;
        let data = collect(i.body.take(), self.limits.max_body).await?;
        let verified = claims.verify(&data, req.trailing_headers.as_ref())?;
        let info = ObjectInfo {
            content_type: i.content_type.unwrap_or_else(|| "binary/octet-stream".into()),
            user_meta: user_meta(i.metadata),
            // Computed by the Content-MD5 check: not a second time.
            etag: verified.md5_hex.clone().unwrap_or_default(),
            ..Default::default()
        };
        let gw = self.gw.clone();
        let (bucket, key) = (i.bucket, i.key);
        let (if_none, if_match) = (i.if_none_match, i.if_match);
        let info = blocking(move || {
            if if_none.is_none() && if_match.is_none() {
                return gw.put(&bucket, &key, &data, info);
            }
            // Checked by the gateway under the key's lock, so no other write lands in between.
            let check = |cur: Option<&ObjectInfo>| {
                if let (Some(c), Some(cur)) = (&if_none, cur) {
                    if c.is_any() || c.as_etag().is_some_and(|e| e.value() == cur.etag) {
                        return Err(s3_error!(PreconditionFailed, "If-None-Match: {key:?} already exists"));
                    }
                }
                if let Some(c) = &if_match {
                    let ok = cur.is_some_and(|cur| c.is_any() || c.as_etag().is_some_and(|e| e.value() == cur.etag));
                    if !ok {
                        return Err(s3_error!(PreconditionFailed, "If-Match: {key:?} does not match"));
                    }
                }
                Ok(())
            };
            gw.put_if(&bucket, &key, &data, info, Some(check))
        })
        .await?;
        let [checksum_crc32, checksum_crc32c, checksum_crc64nvme, checksum_sha1, checksum_sha256] = verified.fields();
        Ok(S3Response::new(PutObjectOutput {
            e_tag: Some(etag(&info.etag)),
            checksum_crc32,
            checksum_crc32c,
            checksum_crc64nvme,
            checksum_sha1,
            checksum_sha256,
            ..Default::default()
        }))
    }

    pub(super) async fn op_delete_object(&self, req: S3Request<DeleteObjectInput>) -> R<DeleteObjectOutput> {
        let gw = self.gw.clone();
        let i = req.input;
        blocking(move || gw.delete(&i.bucket, &i.key)).await?;
        Ok(S3Response::new(DeleteObjectOutput::default()))
    }

    pub(super) async fn op_delete_objects(&self, req: S3Request<DeleteObjectsInput>) -> R<DeleteObjectsOutput> {
        let gw = self.gw.clone();
        let i = req.input;
        if i.delete.objects.len() > 1000 {
            return Err(s3_error!(MalformedXML, "DeleteObjects takes at most 1000 keys"));
        }
        let quiet = i.delete.quiet.unwrap_or(false);
        let (deleted, errors) = blocking(move || {
            let (mut deleted, mut errors) = (Vec::new(), Vec::new());
            for o in i.delete.objects {
                match gw.delete(&i.bucket, &o.key) {
                    Ok(()) => deleted.push(DeletedObject { key: Some(o.key), ..Default::default() }),
                    Err(e) => errors.push(Error {
                        key: Some(o.key),
                        code: Some(e.code().as_str().to_owned()),
                        message: e.message().map(str::to_owned),
                        ..Default::default()
                    }),
                }
            }
            Ok((deleted, errors))
        })
        .await?;
        Ok(S3Response::new(DeleteObjectsOutput {
            deleted: (!quiet).then_some(deleted),
            errors: Some(errors),
            ..Default::default()
        }))
    }

    pub(super) async fn op_copy_object(&self, req: S3Request<CopyObjectInput>) -> R<CopyObjectOutput> {
        let gw = self.gw.clone();
        let i = req.input;
        unsupported::copy(&i)?;
        let CopySource::Bucket { bucket: sb, key: sk, .. } = &i.copy_source else {
            return Err(s3_error!(InvalidArgument, "x-amz-copy-source must be bucket/key"));
        };
        let (sb, sk) = (sb.to_string(), sk.to_string());
        let replace = i.metadata_directive.as_ref().is_some_and(|d| d.as_str() == MetadataDirective::REPLACE);
        if !replace && sb == i.bucket && sk == i.key {
            return Err(s3_error!(
                InvalidRequest,
                "copying an object onto itself needs a metadata change (x-amz-metadata-directive: REPLACE)"
            ));
        }
        let limit = self.limits.max_body;
        let info = blocking(move || {
            let read = gw.read_lock(&sb, &sk);
            let src = gw.head(&sb, &sk)?;
            check_conditions(
                &src,
                i.copy_source_if_match.as_ref(),
                i.copy_source_if_none_match.as_ref(),
                i.copy_source_if_modified_since.as_ref(),
                i.copy_source_if_unmodified_since.as_ref(),
            )
            .map_err(|e| {
                if *e.code() == s3s::S3ErrorCode::NotModified {
                    s3_error!(PreconditionFailed)
                } else {
                    e
                }
            })?;
            if src.size > limit {
                return Err(s3_error!(
                    EntityTooLarge,
                    "the source is larger than this gateway's copy limit of {limit} bytes"
                ));
            }
            let data = gw.read(&sb, &sk, &src, 0, src.size)?;
            drop(read);
            let info = if replace {
                ObjectInfo {
                    content_type: i.content_type.unwrap_or_else(|| "binary/octet-stream".into()),
                    user_meta: user_meta(i.metadata),
                    ..Default::default()
                }
            } else {
                ObjectInfo { content_type: src.content_type, user_meta: src.user_meta, ..Default::default() }
            };
            gw.put(&i.bucket, &i.key, &data, info)
        })
        .await?;
        let result = CopyObjectResult {
            e_tag: Some(etag(&info.etag)),
            last_modified: Some(timestamp(info.mtime_ns)),
            ..Default::default()
        };
        Ok(S3Response::new(CopyObjectOutput { copy_object_result: Some(result), ..Default::default() }))
    }
}
