//! Listings: ListObjects (v1), ListObjectsV2 and ListObjectVersions (every object is its own
//! current, "null" version). An empty delimiter means none; `encoding-type=url` encodes keys,
//! prefixes, delimiters and markers in the answer.

use s3s::dto::*;
use s3s::{s3_error, S3Request, S3Response, S3Result};

use super::convert::{etag, key_of_token, owner_of, timestamp, token_of, url_encode};
use super::{blocking, ReoS3, R};
use crate::backend::{ListPage, ListQuery};

fn max_keys(m: Option<i32>) -> S3Result<usize> {
    match m {
        None => Ok(1000),
        Some(n) if n < 0 => Err(s3_error!(InvalidArgument, "max-keys must not be negative")),
        Some(n) => Ok((n as usize).min(1000)),
    }
}

/// The delimiter as the answer echoes it: an empty one is no delimiter, and is not echoed.
fn echo_delimiter(d: &Option<String>, enc: fn(&str) -> String) -> Option<String> {
    d.as_deref().filter(|d| !d.is_empty()).map(enc)
}

fn encoder(enc: &Option<EncodingType>) -> S3Result<fn(&str) -> String> {
    match enc.as_ref().map(|e| e.as_str()) {
        None => Ok(str::to_owned),
        Some(EncodingType::URL) => Ok(url_encode),
        Some(other) => Err(s3_error!(InvalidArgument, "encoding-type {other:?}: only \"url\" is valid")),
    }
}

impl ReoS3 {
    async fn page(&self, bucket: String, q: ListQuery) -> S3Result<ListPage> {
        let gw = self.gw.clone();
        blocking(move || gw.list(&bucket, &q)).await
    }

    pub(super) async fn op_list_objects(&self, req: S3Request<ListObjectsInput>) -> R<ListObjectsOutput> {
        let i = req.input;
        let enc = encoder(&i.encoding_type)?;
        let q = ListQuery {
            prefix: i.prefix.clone().unwrap_or_default(),
            delimiter: i.delimiter.clone(),
            after: i.marker.clone().unwrap_or_default(),
            max_keys: max_keys(i.max_keys)?,
        };
        let owner = owner_of(&req.credentials);
        let p = self.page(i.bucket.clone(), q.clone()).await?;
        let delimited = q.delimiter.as_deref().is_some_and(|d| !d.is_empty());
        Ok(S3Response::new(ListObjectsOutput {
            name: Some(i.bucket),
            // Not encoded in v1's answer, as S3 does it (v2 encodes it).
            prefix: Some(q.prefix.clone()),
            marker: Some(enc(&q.after)),
            max_keys: Some(q.max_keys as i32),
            is_truncated: Some(p.truncated),
            // S3 sends NextMarker only with a delimiter; clients use the last key otherwise.
            next_marker: p.next_after.as_deref().filter(|_| delimited && p.truncated).map(enc),
            delimiter: echo_delimiter(&i.delimiter, enc),
            encoding_type: i.encoding_type,
            contents: Some(objects(&p, enc, Some(&owner))),
            common_prefixes: Some(prefixes(&p, enc)),
            ..Default::default()
        }))
    }

    pub(super) async fn op_list_objects_v2(&self, req: S3Request<ListObjectsV2Input>) -> R<ListObjectsV2Output> {
        let i = req.input;
        let enc = encoder(&i.encoding_type)?;
        let token = i.continuation_token.as_deref().map(key_of_token).transpose()?;
        let start_after = i.start_after.clone().unwrap_or_default();
        let after = token.clone().unwrap_or_default().max(start_after);
        let q = ListQuery {
            prefix: i.prefix.clone().unwrap_or_default(),
            delimiter: i.delimiter.clone(),
            after,
            max_keys: max_keys(i.max_keys)?,
        };
        let owner = i.fetch_owner.unwrap_or(false).then(|| owner_of(&req.credentials));
        let p = self.page(i.bucket.clone(), q.clone()).await?;
        Ok(S3Response::new(ListObjectsV2Output {
            name: Some(i.bucket),
            prefix: Some(enc(&q.prefix)),
            max_keys: Some(q.max_keys as i32),
            key_count: Some((p.contents.len() + p.common_prefixes.len()) as i32),
            continuation_token: i.continuation_token,
            is_truncated: Some(p.truncated),
            next_continuation_token: p.next_after.as_deref().filter(|_| p.truncated).map(token_of),
            delimiter: echo_delimiter(&i.delimiter, enc),
            encoding_type: i.encoding_type,
            start_after: i.start_after.as_deref().map(enc),
            contents: Some(objects(&p, enc, owner.as_ref())),
            common_prefixes: Some(prefixes(&p, enc)),
            ..Default::default()
        }))
    }

    pub(super) async fn op_list_object_versions(
        &self,
        req: S3Request<ListObjectVersionsInput>,
    ) -> R<ListObjectVersionsOutput> {
        let i = req.input;
        let enc = encoder(&i.encoding_type)?;
        let q = ListQuery {
            prefix: i.prefix.clone().unwrap_or_default(),
            delimiter: i.delimiter.clone(),
            after: i.key_marker.clone().unwrap_or_default(),
            max_keys: max_keys(i.max_keys)?,
        };
        let owner = owner_of(&req.credentials);
        let p = self.page(i.bucket.clone(), q.clone()).await?;
        let versions = p
            .contents
            .iter()
            .map(|e| ObjectVersion {
                key: Some(enc(&e.key)),
                e_tag: Some(etag(&e.info.etag)),
                size: Some(e.info.size as i64),
                last_modified: Some(timestamp(e.info.mtime_ns)),
                version_id: Some("null".into()),
                is_latest: Some(true),
                owner: Some(owner.clone()),
                storage_class: Some(ObjectVersionStorageClass::from_static(ObjectVersionStorageClass::STANDARD)),
                ..Default::default()
            })
            .collect();
        Ok(S3Response::new(ListObjectVersionsOutput {
            name: Some(i.bucket),
            prefix: Some(enc(&q.prefix)),
            key_marker: Some(enc(&q.after)),
            max_keys: Some(q.max_keys as i32),
            is_truncated: Some(p.truncated),
            next_key_marker: p.next_after.as_deref().filter(|_| p.truncated).map(enc),
            next_version_id_marker: p.truncated.then(|| "null".into()),
            delimiter: echo_delimiter(&i.delimiter, enc),
            encoding_type: i.encoding_type,
            versions: Some(versions),
            common_prefixes: Some(prefixes(&p, enc)),
            ..Default::default()
        }))
    }
}

fn objects(p: &ListPage, enc: fn(&str) -> String, owner: Option<&Owner>) -> Vec<Object> {
    p.contents
        .iter()
        .map(|e| Object {
            key: Some(enc(&e.key)),
            owner: owner.cloned(),
            e_tag: Some(etag(&e.info.etag)),
            size: Some(e.info.size as i64),
            last_modified: Some(timestamp(e.info.mtime_ns)),
            storage_class: Some(ObjectStorageClass::from_static(ObjectStorageClass::STANDARD)),
            ..Default::default()
        })
        .collect()
}

fn prefixes(p: &ListPage, enc: fn(&str) -> String) -> Vec<CommonPrefix> {
    p.common_prefixes.iter().map(|c| CommonPrefix { prefix: Some(enc(c)) }).collect()
}
