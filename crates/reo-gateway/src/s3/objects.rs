//! Object operations: GetObject (Range, conditionals), HeadObject, PutObject (If-None-Match: *),
//! DeleteObject, DeleteObjects, CopyObject.

use s3s::dto::*;
use s3s::{s3_error, S3Request, S3Response, S3Result};

use super::convert::{check_conditions, etag, timestamp};
use super::copy_source::source_of;
use super::headers::{object_output, user_meta, Overrides, Standard};
use super::integrity::{checksums_of, wants_checksum, with_checksums, Algo, Claims, Sent};
use super::parts::PartRead;
use super::parts::{apply_part, part_of};
use super::receive::receive;
use super::{blocking, unsupported, ReoS3, R};
use crate::backend::ObjectInfo;
use crate::gateway::stream::ReadPlan;
use crate::gateway::Gateway;
use s3s::stream::ByteStream;
use std::sync::Arc;

/// The `[start, end)` byte range a Range header asks of an object of `size` bytes.
fn byte_range(range: Option<&Range>, size: u64) -> S3Result<Option<(u64, u64)>> {
    let Some(r) = range else { return Ok(None) };
    match r.check(size) {
        Ok(r) => Ok(Some((r.start, r.end))),
        Err(_) => Err(s3_error!(InvalidRange, "the range is outside the object's {size} bytes")),
    }
}

/// The type of an object's stored checksum (`COMPOSITE` for a multipart object's, else
/// `FULL_OBJECT`), if it has one.
fn checksum_type(info: &ObjectInfo) -> Option<ChecksumType> {
    let has = Algo::ALL.iter().any(|a| info.system.contains_key(a.header()));
    let t = info.system.get("x-amz-checksum-type").cloned().unwrap_or_else(|| "FULL_OBJECT".into());
    has.then(|| ChecksumType::from(t))
}

/// The check of a conditional write (PutObject, CompleteMultipartUpload) against the key's
/// current object (`None`: absent), as S3 answers it: If-None-Match (`*` or an ETag) fails with
/// 412 when it matches; If-Match needs the object (404 `NoSuchKey` without it) and fails with 412
/// when it does not match.
pub(super) fn write_precondition<'a>(
    if_none: Option<&'a ETagCondition>,
    if_match: Option<&'a ETagCondition>,
    key: &'a str,
) -> impl FnOnce(Option<&ObjectInfo>) -> S3Result<()> + 'a {
    move |cur: Option<&ObjectInfo>| {
        let matches =
            |c: &ETagCondition, cur: &ObjectInfo| c.is_any() || c.as_etag().is_some_and(|e| e.value() == cur.etag);
        if let (Some(c), Some(cur)) = (if_none, cur) {
            if matches(c, cur) {
                return Err(s3_error!(PreconditionFailed, "If-None-Match: {key:?} already exists"));
            }
        }
        if let Some(c) = if_match {
            let Some(cur) = cur else {
                return Err(s3_error!(NoSuchKey, "If-Match: {key:?} does not exist"));
            };
            if !matches(c, cur) {
                return Err(s3_error!(PreconditionFailed, "If-Match: {key:?} does not match"));
            }
        }
        Ok(())
    }
}

/// What a GetObject is to send: the object's info, the body, the byte range asked (if any) and
/// the part asked (if any).
type Planned = (ObjectInfo, ReadPlan, Option<(u64, u64)>, Option<PartRead>);

/// The conditional headers of a read (a GetObject's or HeadObject's input `$i`) checked
/// against the object's `$info`.
macro_rules! read_conditions {
    ($info:expr, $i:expr) => {
        check_conditions(
            $info,
            $i.if_match.as_ref(),
            $i.if_none_match.as_ref(),
            $i.if_modified_since.as_ref(),
            $i.if_unmodified_since.as_ref(),
        )
    };
}

/// [`Planned`] of a GetObject, waiting for locks, the backend and devices as needed (on the
/// blocking pool).
fn plan_get(gw: &Arc<Gateway>, i: &GetObjectInput) -> S3Result<Planned> {
    let _r = gw.read_lock(&i.bucket, &i.key);
    let info = gw.head(&i.bucket, &i.key)?;
    let part = part_of(gw, &i.bucket, &i.key, i.part_number, i.range.is_some(), &info)?;
    read_conditions!(&info, i)?;
    let range = match &part {
        Some(p) => Some(p.range),
        None => byte_range(i.range.as_ref(), info.size)?,
    };
    let (start, end) = range.unwrap_or((0, info.size));
    let plan = gw.read_plan(&i.bucket, &i.key, &info, start, end)?;
    Ok((info, plan, range, part))
}

/// [`plan_get`] if it needs no wait: the object's metadata in DRAM and its bytes in the memory
/// tier (see `gateway/hot.rs`); `None`: take the blocking path.
fn plan_get_now(gw: &Gateway, i: &GetObjectInput) -> Option<S3Result<Planned>> {
    if i.part_number.is_some() {
        return None;
    }
    let hot = gw.try_hot(&i.bucket, &i.key)?;
    let checked = hot.head()?.and_then(|info| {
        read_conditions!(&info, i)?;
        let range = byte_range(i.range.as_ref(), info.size)?;
        Ok((info, range))
    });
    let (info, range) = match checked {
        Ok(c) => c,
        Err(e) => return Some(Err(e)),
    };
    let (start, end) = range.unwrap_or((0, info.size));
    Some(hot.read_plan(&info, start, end)?.map(|plan| (info, plan, range, None)))
}

impl ReoS3 {
    pub(super) async fn op_get_object(&self, req: S3Request<GetObjectInput>) -> R<GetObjectOutput> {
        let gw = self.gw.clone();
        let mut i = req.input;
        unsupported::get(&i)?;
        let overrides = Overrides {
            cache_control: i.response_cache_control.take(),
            content_disposition: i.response_content_disposition.take(),
            content_encoding: i.response_content_encoding.take(),
            content_language: i.response_content_language.take(),
            content_type: i.response_content_type.take(),
            expires: i.response_expires.take(),
        };
        let checksums = wants_checksum(i.checksum_mode.as_ref());
        // A hit the task can answer by itself is not handed to the blocking pool.
        let (info, plan, range, part) = match plan_get_now(&gw, &i) {
            Some(planned) => planned?,
            None => blocking(move || plan_get(&gw, &i)).await?,
        };
        // A backend failure before the first byte is still an error status; after it, the body is
        // cut off (the client sees a short read).
        plan.opened().await?;
        // A checksum is of the whole object (or of the part asked for): a range's bytes cannot be
        // checked against it.
        let whole = checksums && range.is_none();
        let mut out = GetObjectOutput {
            content_length: Some(plan.len as i64),
            content_range: range.map(|(s, e)| format!("bytes {s}-{}/{}", e.saturating_sub(1), info.size)),
            body: Some(StreamingBlob::wrap(plan.into_stream())),
            checksum_type: whole.then(|| checksum_type(&info)).flatten(),
            ..object_output!(GetObjectOutput, &info, whole)
        };
        if let Some(p) = part {
            apply_part!(out, p, checksums);
        }
        let o = overrides;
        out.content_type = o.content_type.or(out.content_type);
        out.cache_control = o.cache_control.or(out.cache_control);
        out.content_disposition = o.content_disposition.or(out.content_disposition);
        out.content_encoding = o.content_encoding.or(out.content_encoding);
        out.content_language = o.content_language.or(out.content_language);
        out.expires = o.expires.or(out.expires);
        Ok(S3Response::new(out))
    }

    pub(super) async fn op_head_object(&self, req: S3Request<HeadObjectInput>) -> R<HeadObjectOutput> {
        let gw = self.gw.clone();
        let i = req.input;
        unsupported::head(&i)?;
        let checksums = wants_checksum(i.checksum_mode.as_ref());
        let now = (i.part_number.is_none())
            .then(|| {
                let hot = gw.try_hot(&i.bucket, &i.key)?;
                Some(hot.head()?.and_then(|info| read_conditions!(&info, i).map(|()| (info, None))))
            })
            .flatten();
        let (info, part) = match now {
            Some(r) => r?,
            None => {
                blocking(move || {
                    let _r = gw.read_lock(&i.bucket, &i.key);
                    let info = gw.head(&i.bucket, &i.key)?;
                    let part = part_of(&gw, &i.bucket, &i.key, i.part_number, i.range.is_some(), &info)?;
                    read_conditions!(&info, i)?;
                    Ok((info, part))
                })
                .await?
            }
        };
        let mut out = HeadObjectOutput {
            content_length: Some(info.size as i64),
            checksum_type: checksums.then(|| checksum_type(&info)).flatten(),
            ..object_output!(HeadObjectOutput, &info, checksums && part.is_none())
        };
        if let Some(p) = part {
            out.content_length = Some((p.range.1 - p.range.0) as i64);
            apply_part!(out, p, checksums);
        }
        Ok(S3Response::new(out))
    }

    pub(super) async fn op_put_object(&self, req: S3Request<PutObjectInput>) -> R<PutObjectOutput> {
        let mut i = req.input;
        unsupported::put(&i)?;
        // Everything about the request is checked before its body is read.
        let claims = Claims::parse(&Sent::of_put(&i), &req.headers)?;
        let mut info = ObjectInfo { user_meta: user_meta(i.metadata.take())?, ..Default::default() };
        Standard::of_put(&i)?.store(&mut info.system);
        info.content_type = i.content_type.take().unwrap_or_else(|| "binary/octet-stream".into());
        let (bucket, key) = (i.bucket, i.key);
        // Where the body goes is decided before it is read (write-back: into the cache as it
        // arrives; see `gateway::incoming`), and so is everything it could be refused for.
        let size = i.body.as_ref().and_then(|b| b.remaining_length().exact()).map(|n| n as u64);
        // Known before the body if the client sent it (a backend may need it up front).
        info.etag = claims.md5_hex().unwrap_or_default();
        claims.store_claimed(&mut info.system);
        let sink = self.gw.incoming_put(&bucket, &key, &info, size, &self.budget, self.limits.max_body)?;
        let (sink, digested) = receive(i.body.take(), self.limits.max_body, &self.budget, sink, claims.algo()).await?;
        let verified = claims.check(&digested, req.trailing_headers.as_ref())?;
        info.etag = digested.md5_hex();
        verified.store(&mut info.system);
        let gw = self.gw.clone();
        let (if_none, if_match) = (i.if_none_match, i.if_match);
        let info = blocking(move || {
            // Checked by the gateway under the key's lock, so no other write lands in between.
            let conditional = if_none.is_some() || if_match.is_some();
            let check = write_precondition(if_none.as_ref(), if_match.as_ref(), &key);
            gw.put_incoming(&bucket, &key, sink, info, conditional.then_some(check))
        })
        .await?;
        Ok(S3Response::new(with_checksums!(PutObjectOutput { e_tag: Some(etag(&info.etag)) }, verified.fields())))
    }

    pub(super) async fn op_delete_object(&self, req: S3Request<DeleteObjectInput>) -> R<DeleteObjectOutput> {
        let gw = self.gw.clone();
        let i = req.input;
        blocking(move || gw.delete(&i.bucket, &i.key)).await?;
        Ok(S3Response::new(DeleteObjectOutput::default()))
    }

    pub(crate) async fn op_delete_objects(&self, req: S3Request<DeleteObjectsInput>) -> R<DeleteObjectsOutput> {
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
        let mut i = req.input;
        unsupported::copy(&i)?;
        let source = source_of!(i)?;
        let replace = i.metadata_directive.as_ref().is_some_and(|d| d.as_str() == MetadataDirective::REPLACE);
        if !replace && source.bucket == i.bucket && source.key == i.key {
            return Err(s3_error!(
                InvalidRequest,
                "copying an object onto itself needs a metadata change (x-amz-metadata-directive: REPLACE)"
            ));
        }
        // REPLACE: the request's content type, user metadata and standard headers; COPY: the
        // source's, with a storage class the request names. Checksums are of the bytes: kept,
        // unless the request asks for another algorithm.
        let standard = Standard::of_copy(&i)?;
        let replacement = if replace {
            let mut r = ObjectInfo {
                content_type: i.content_type.take().unwrap_or_else(|| "binary/octet-stream".into()),
                user_meta: user_meta(i.metadata.take())?,
                ..Default::default()
            };
            standard.store(&mut r.system);
            Some(r)
        } else {
            None
        };
        let new_checksum = i.checksum_algorithm.as_ref().map(|a| Algo::named(a.as_str())).transpose()?;
        let (limit, budget) = (self.limits.max_body, self.budget.clone());
        let info = blocking(move || {
            // Counted in the memory budget before it is read, while it is stored (refused at
            // once past it).
            let mut held = budget.reserve();
            let (src, data) = source.read(&gw, limit, &mut held)?;
            let mut info = ObjectInfo {
                content_type: src.content_type,
                user_meta: src.user_meta,
                system: src.system,
                ..Default::default()
            };
            match replacement {
                Some(r) => {
                    let checksums = checksums_of(&info.system);
                    info = ObjectInfo { system: checksums, ..r };
                    standard.store(&mut info.system);
                }
                None => {
                    if let Some(class) = &standard.storage_class {
                        info.system.insert("x-amz-storage-class".into(), class.clone());
                    }
                }
            }
            if let Some(a) = new_checksum {
                info.system.retain(|k, _| !k.starts_with("x-amz-checksum-"));
                info.system.insert(a.header().into(), a.digest_b64(&data));
            }
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
