//! Conversions between the gateway's [`ObjectInfo`] and object_store's answers and options:
//! GET/HEAD results to info (the gateway's ETag from `x-amz-meta-reo-etag`, else S3's without
//! quotes; Content-Type; the other `x-amz-meta-*` as user metadata), info to PUT attributes, and
//! the multipart upload of large objects.

use std::collections::BTreeMap;
use std::sync::Arc;

use bytes::Bytes;
use object_store::aws::AmazonS3;
use object_store::path::Path;
use object_store::{Attribute, Attributes, GetResult, MultipartUpload, ObjectStore, PutMultipartOptions, PutPayload};

use super::errors::normalize_etag;
use super::{ETAG_META, PART_SIZE};
use crate::backend::ObjectInfo;

/// The [`ObjectInfo`] of a GET or HEAD answer.
pub(super) fn object_info(r: &GetResult) -> ObjectInfo {
    let mut user_meta = BTreeMap::new();
    let mut content_type = String::from("binary/octet-stream");
    let mut reo_etag = None;
    for (k, v) in r.attributes.iter() {
        match k {
            Attribute::ContentType => content_type = v.as_ref().to_string(),
            Attribute::Metadata(name) if name.eq_ignore_ascii_case(ETAG_META) => {
                reo_etag = Some(v.as_ref().to_string())
            }
            Attribute::Metadata(name) => {
                user_meta.insert(name.to_ascii_lowercase(), v.as_ref().to_string());
            }
            _ => {}
        }
    }
    let etag = reo_etag.unwrap_or_else(|| normalize_etag(r.meta.e_tag.as_deref().unwrap_or_default()));
    ObjectInfo {
        size: r.meta.size,
        etag,
        content_type,
        user_meta,
        mtime_ns: r.meta.last_modified.timestamp_nanos_opt().unwrap_or(0).max(0) as u64,
    }
}

/// The attributes a PUT of `info` carries.
pub(super) fn attributes(info: &ObjectInfo) -> Attributes {
    let mut a = Attributes::new();
    if !info.content_type.is_empty() {
        a.insert(Attribute::ContentType, info.content_type.clone().into());
    }
    for (k, v) in &info.user_meta {
        if !k.eq_ignore_ascii_case(ETAG_META) {
            a.insert(Attribute::Metadata(k.clone().into()), v.clone().into());
        }
    }
    a.insert(Attribute::Metadata(ETAG_META.into()), info.etag.clone().into());
    a
}

/// Uploads `data` in parts of [`PART_SIZE`]; the upload is aborted if a part fails.
pub(super) async fn put_multipart(
    store: Arc<AmazonS3>,
    path: Path,
    data: Bytes,
    attributes: Attributes,
) -> object_store::Result<()> {
    let opts = PutMultipartOptions { attributes, ..Default::default() };
    let mut upload = store.put_multipart_opts(&path, opts).await?;
    for chunk in data.chunks(PART_SIZE) {
        if let Err(e) = upload.put_part(PutPayload::from(data.slice_ref(chunk))).await {
            let _ = upload.abort().await;
            return Err(e);
        }
    }
    match upload.complete().await {
        Ok(_) => Ok(()),
        Err(e) => {
            let _ = upload.abort().await;
            Err(e)
        }
    }
}
