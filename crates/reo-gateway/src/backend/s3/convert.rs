//! Conversions between the gateway's [`ObjectInfo`] and object_store's answers and options:
//! GET/HEAD results to info (the gateway's ETag from `x-amz-meta-reo-etag`, else S3's without
//! quotes; Content-Type; the other `x-amz-meta-*` as user metadata) and info to the attributes
//! of a PUT or multipart upload (sent by [`super::writer`]).
//!
//! System metadata travel as the headers object_store sends (Cache-Control, Content-Disposition,
//! Content-Encoding, Content-Language, x-amz-storage-class); the others (Expires, the website
//! redirect, the client's checksum) as `x-amz-meta-reo-sys-<name>`: object_store has no
//! attribute for them, and the backend's own checksum of a multipart upload would differ anyway.

use std::collections::BTreeMap;

use object_store::{Attribute, Attributes, GetResult};

use super::errors::normalize_etag;
use crate::backend::ObjectInfo;

/// The user-metadata name holding the gateway's ETag.
pub const ETAG_META: &str = "reo-etag";

/// The [`ObjectInfo`] of a GET or HEAD answer.
pub(super) fn object_info(r: &GetResult) -> ObjectInfo {
    let mut user_meta = BTreeMap::new();
    let mut content_type = String::from("binary/octet-stream");
    let mut reo_etag = None;
    let mut system = BTreeMap::new();
    for (k, v) in r.attributes.iter() {
        match k {
            Attribute::ContentType => content_type = v.as_ref().to_string(),
            Attribute::Metadata(name) if name.eq_ignore_ascii_case(ETAG_META) => {
                reo_etag = Some(v.as_ref().to_string())
            }
            Attribute::Metadata(name) => {
                let name = name.to_ascii_lowercase();
                match name.strip_prefix(SYSTEM_META) {
                    Some(header) => system.insert(header.to_owned(), v.as_ref().to_string()),
                    None => user_meta.insert(name, v.as_ref().to_string()),
                };
            }
            other => {
                if let Some(header) = header_of(other) {
                    system.insert(header.to_owned(), v.as_ref().to_string());
                }
            }
        }
    }
    // What no class means.
    if system.get("x-amz-storage-class").is_some_and(|c| c == "STANDARD") {
        system.remove("x-amz-storage-class");
    }
    let etag = reo_etag.unwrap_or_else(|| normalize_etag(r.meta.e_tag.as_deref().unwrap_or_default()));
    ObjectInfo {
        size: r.meta.size,
        etag,
        content_type,
        user_meta,
        mtime_ns: r.meta.last_modified.timestamp_nanos_opt().unwrap_or(0).max(0) as u64,
        system,
    }
}

/// Prefix of the user metadata that carry system metadata object_store has no attribute for.
const SYSTEM_META: &str = "reo-sys-";

/// The object_store attribute of a system header, if it has one.
fn attribute_of(header: &str) -> Option<Attribute> {
    Some(match header {
        "cache-control" => Attribute::CacheControl,
        "content-disposition" => Attribute::ContentDisposition,
        "content-encoding" => Attribute::ContentEncoding,
        "content-language" => Attribute::ContentLanguage,
        "x-amz-storage-class" => Attribute::StorageClass,
        _ => return None,
    })
}

/// The system header of an object_store attribute (not content type or metadata).
fn header_of(a: &Attribute) -> Option<&'static str> {
    Some(match a {
        Attribute::CacheControl => "cache-control",
        Attribute::ContentDisposition => "content-disposition",
        Attribute::ContentEncoding => "content-encoding",
        Attribute::ContentLanguage => "content-language",
        Attribute::StorageClass => "x-amz-storage-class",
        _ => return None,
    })
}

/// The attributes a PUT of `info` carries.
pub(super) fn attributes(info: &ObjectInfo) -> Attributes {
    let mut a = Attributes::new();
    if !info.content_type.is_empty() {
        a.insert(Attribute::ContentType, info.content_type.clone().into());
    }
    for (k, v) in &info.user_meta {
        // Names Reo itself uses would read back as something else.
        if !k.eq_ignore_ascii_case(ETAG_META) && !k.to_ascii_lowercase().starts_with(SYSTEM_META) {
            a.insert(Attribute::Metadata(k.clone().into()), v.clone().into());
        }
    }
    for (k, v) in &info.system {
        match attribute_of(k) {
            Some(attr) => a.insert(attr, v.clone().into()),
            None => a.insert(Attribute::Metadata(format!("{SYSTEM_META}{k}").into()), v.clone().into()),
        };
    }
    // Not known when a streamed write's upload begins ([`super::writer`]).
    if !info.etag.is_empty() {
        a.insert(Attribute::Metadata(ETAG_META.into()), info.etag.clone().into());
    }
    a
}
