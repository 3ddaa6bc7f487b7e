//! Multipart upload operations over [`crate::gateway::multipart`].

use s3s::dto::*;
use s3s::{s3_error, S3Request, S3Response};

use super::convert::{etag, timestamp, url_encode};
use super::copy_source::{parse_range, source_of};
use super::headers::{user_meta, Standard};
use super::integrity::{stored_checksums, with_checksums, Claims, Sent};
use super::objects::write_precondition;
use super::receive::receive;
use super::{blocking, unsupported, ReoS3, R};
use crate::backend::ObjectInfo;
use crate::checksum::Algo;
use crate::gateway::complete::Claimed;
use crate::gateway::errors::backend_err;
use crate::gateway::multipart::UploadChecksum;

/// The checksum an upload is created with (`x-amz-checksum-algorithm`, `x-amz-checksum-type`):
/// COMPOSITE by default, FULL_OBJECT for the CRCs that combine (CRC64NVME has nothing else).
fn upload_checksum(i: &CreateMultipartUploadInput) -> S3Result<Option<UploadChecksum>> {
    let ty = i.checksum_type.as_ref().map(|t| t.as_str().to_ascii_uppercase());
    let Some(a) = &i.checksum_algorithm else {
        return match ty {
            Some(_) => Err(s3_error!(InvalidRequest, "x-amz-checksum-type needs x-amz-checksum-algorithm")),
            None => Ok(None),
        };
    };
    let algorithm = Algo::named(a.as_str())?;
    let full_object = match ty.as_deref() {
        None => algorithm == Algo::Crc64Nvme,
        Some("FULL_OBJECT") if algorithm.full_object_capable() => true,
        Some("COMPOSITE") if algorithm != Algo::Crc64Nvme => false,
        Some(t) => {
            return Err(s3_error!(InvalidRequest, "checksum type {t} is not offered with {}", algorithm.name()));
        }
    };
    Ok(Some(UploadChecksum { algorithm, full_object }))
}

/// The checksum fields in the order of [`Algo::ALL`] carrying `value` in `algorithm`'s field.
fn fields_of(algorithm: Algo, value: Option<String>) -> [Option<String>; 5] {
    Algo::ALL.map(|a| value.clone().filter(|_| a == algorithm))
}

/// The one checksum among five fields (in the order of [`Algo::ALL`]), if any; two are refused.
fn one_checksum(fields: [&Option<String>; 5]) -> S3Result<Option<(Algo, String)>> {
    let mut given = Algo::ALL.into_iter().zip(fields).filter_map(|(a, v)| Some((a, v.clone()?)));
    let first = given.next();
    if given.next().is_some() {
        return Err(s3_error!(InvalidRequest, "Expecting a single checksum per part or object."));
    }
    Ok(first)
}

type S3Result<T> = s3s::S3Result<T>;

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
        let checksum = upload_checksum(&i)?;
        let (bucket, key) = (i.bucket.clone(), i.key.clone());
        let id = blocking(move || {
            gw.check_bucket(&i.bucket)?;
            gw.policy(&i.bucket, &i.key)?;
            crate::keys::validate_key(&i.key).map_err(|m| s3_error!(KeyTooLongError, "{m}"))?;
            gw.backend.check_key(&i.key).map_err(backend_err)?;
            meta.content_type = i.content_type.unwrap_or_else(|| "binary/octet-stream".into());
            gw.uploads.create(&i.bucket, &i.key, meta, checksum)
        })
        .await?;
        Ok(S3Response::new(CreateMultipartUploadOutput {
            bucket: Some(bucket),
            key: Some(key),
            upload_id: Some(id),
            checksum_algorithm: checksum.map(|c| ChecksumAlgorithm::from(c.algorithm.name().to_string())),
            checksum_type: checksum.map(|c| ChecksumType::from(c.type_name().to_string())),
            ..Default::default()
        }))
    }

    pub(super) async fn op_upload_part(&self, req: S3Request<UploadPartInput>) -> R<UploadPartOutput> {
        let mut i = req.input;
        unsupported::upload_part(&i)?;
        let claims = Claims::parse(&Sent::of_part(&i), &req.headers)?;
        let gw = self.gw.clone();
        let sent = claims.algo();
        let (bucket, key, id, n) = (i.bucket.clone(), i.key.clone(), i.upload_id.clone(), i.part_number);
        // The upload and the part's checksum algorithm are checked before the body is read; the
        // body goes to the part's staging file as it arrives.
        let (writer, algorithm) = blocking(move || {
            let u = gw.uploads.get(&bucket, &key, &id)?;
            let algorithm = u.checksum.map(|c| c.algorithm);
            if let (Some(a), Some(s)) = (algorithm, sent) {
                if a != s {
                    return Err(s3_error!(
                        InvalidRequest,
                        "the upload's checksum algorithm is {}; this part carries {}",
                        a.name(),
                        s.header()
                    ));
                }
            }
            Ok((gw.uploads.begin_part(&u, n)?, algorithm))
        })
        .await?;
        let (writer, digested) =
            receive(i.body.take(), self.limits.max_body, &self.budget, writer, sent.or(algorithm)).await?;
        let verified = claims.check(&digested, req.trailing_headers.as_ref())?;
        let e = digested.md5_hex();
        let sum = algorithm.and(digested.checksum.as_ref()).map(|(_, d)| crate::checksum::b64_encode(d));
        let (tag, sum2) = (e.clone(), sum.clone());
        blocking(move || writer.commit(&tag, sum2.as_deref())).await?;
        let fields = match algorithm {
            Some(a) => fields_of(a, sum),
            None => verified.fields(),
        };
        Ok(S3Response::new(with_checksums!(UploadPartOutput { e_tag: Some(etag(&e)) }, fields)))
    }

    /// UploadPartCopy: a part from a range of an object (`x-amz-copy-source-range`, inclusive
    /// `bytes=first-last`; the whole object without one), read from the cache or the backend
    /// under the source's read lock, after its `x-amz-copy-source-if-*` conditions.
    pub(super) async fn op_upload_part_copy(&self, req: S3Request<UploadPartCopyInput>) -> R<UploadPartCopyOutput> {
        let i = req.input;
        unsupported::upload_part_copy(&i)?;
        let mut source = source_of!(i)?;
        source.range = i.copy_source_range.as_deref().map(parse_range).transpose()?;
        let (gw, limit, budget) = (self.gw.clone(), self.limits.max_body, self.budget.clone());
        let e = blocking(move || {
            let u = gw.uploads.get(&i.bucket, &i.key, &i.upload_id)?;
            // Counted in the memory budget before it is read, while it is staged (refused at
            // once past it).
            let mut held = budget.reserve();
            let (_, data) = source.read(&gw, limit, &mut held)?;
            let (e, sum) = gw.uploads.put_part(&u, i.part_number, &data)?;
            Ok((e, u.checksum.map(|c| fields_of(c.algorithm, sum)).unwrap_or_default()))
        })
        .await?;
        let (e, sums) = e;
        let result = with_checksums!(
            CopyPartResult { e_tag: Some(etag(&e)), last_modified: Some(timestamp(crate::gateway::now_ns())) },
            sums
        );
        Ok(S3Response::new(UploadPartCopyOutput { copy_part_result: Some(result), ..Default::default() }))
    }

    pub(super) async fn op_complete_multipart_upload(
        &self,
        req: S3Request<CompleteMultipartUploadInput>,
    ) -> R<CompleteMultipartUploadOutput> {
        let gw = self.gw.clone();
        let mut i = req.input;
        let parts = i.multipart_upload.take().and_then(|m| m.parts).unwrap_or_default();
        let mut claimed = Claimed {
            object: one_checksum([
                &i.checksum_crc32,
                &i.checksum_crc32c,
                &i.checksum_crc64nvme,
                &i.checksum_sha1,
                &i.checksum_sha256,
            ])?,
            size: i.mpu_object_size.map(|s| s.max(0) as u64),
            ..Default::default()
        };
        let mut listed = Vec::with_capacity(parts.len());
        for p in parts {
            let sums =
                [&p.checksum_crc32, &p.checksum_crc32c, &p.checksum_crc64nvme, &p.checksum_sha1, &p.checksum_sha256];
            claimed.parts.push(one_checksum(sums)?);
            listed.push((p.part_number.unwrap_or(0), p.e_tag.map(|e| e.value().to_owned()).unwrap_or_default()));
        }
        let (bucket, key) = (i.bucket.clone(), i.key.clone());
        let (max, budget) = (self.limits.max_body, self.budget.clone());
        let info = blocking(move || {
            let conditional = i.if_none_match.is_some() || i.if_match.is_some();
            let check = write_precondition(i.if_none_match.as_ref(), i.if_match.as_ref(), &i.key);
            let limits = (max, &budget);
            gw.complete_upload_if(
                &i.bucket,
                &i.key,
                &i.upload_id,
                &listed,
                &claimed,
                limits,
                conditional.then_some(check),
            )
        })
        .await?;
        let checksum_type = info.system.get("x-amz-checksum-type").map(|t| ChecksumType::from(t.clone()));
        Ok(S3Response::new(with_checksums!(
            CompleteMultipartUploadOutput {
                location: Some(format!("/{bucket}/{key}")),
                bucket: Some(bucket),
                key: Some(key),
                e_tag: Some(etag(&info.etag)),
                checksum_type: checksum_type,
            },
            stored_checksums(&info.system)
        )))
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
        let (parts, checksum) = blocking(move || {
            let u = gw.uploads.get(&i.bucket, &i.key, &i.upload_id)?;
            Ok((gw.uploads.parts(&u)?, u.checksum))
        })
        .await?;
        let algorithm = checksum.map(|c| c.algorithm);
        let rest: Vec<_> = parts.into_iter().filter(|p| p.number > marker).collect();
        let truncated = rest.len() > max;
        let page: Vec<Part> = rest
            .into_iter()
            .take(max)
            .map(|p| {
                let sums = algorithm.map(|a| fields_of(a, p.checksum.clone())).unwrap_or_default();
                with_checksums!(
                    Part {
                        part_number: Some(p.number),
                        e_tag: Some(etag(&p.etag)),
                        size: Some(p.size as i64),
                        last_modified: Some(timestamp(p.mtime_ns)),
                    },
                    sums
                )
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
            checksum_algorithm: checksum.map(|c| ChecksumAlgorithm::from(c.algorithm.name().to_string())),
            checksum_type: checksum.map(|c| ChecksumType::from(c.type_name().to_string())),
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
