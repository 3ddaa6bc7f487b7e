//! The standard object headers an object keeps as its client sent them and returns on GET and
//! HEAD ([`Standard`]), and S3's limit on user metadata ([`user_meta`]).
//!
//! They live in [`ObjectInfo::system`] by lower-case header name (`backend::SYSTEM_HEADERS`);
//! `Content-Type` has its own field. `x-amz-storage-class` takes S3's names; the archive classes
//! are refused because an archived object cannot be read back through the cache without a
//! restore, which Reo does not do. STANDARD is not stored (it is what no class means).

use std::collections::BTreeMap;

use s3s::dto::{
    CopyObjectInput, CreateMultipartUploadInput, Metadata, PutObjectInput, StorageClass, Timestamp, TimestampFormat,
};
use s3s::{s3_error, S3Result};

use crate::backend::ObjectInfo;

/// Most bytes of user metadata (names plus values, UTF-8) a PUT may carry, as S3 allows.
pub const MAX_USER_META: usize = 2 << 10;

/// `x-amz-meta-*` of a request, names in lower case, within [`MAX_USER_META`].
pub fn user_meta(m: Option<Metadata>) -> S3Result<BTreeMap<String, String>> {
    let m: BTreeMap<String, String> =
        m.unwrap_or_default().into_iter().map(|(k, v)| (k.to_ascii_lowercase(), v)).collect();
    let bytes: usize = m.iter().map(|(k, v)| k.len() + v.len()).sum();
    if bytes > MAX_USER_META {
        return Err(s3_error!(
            MetadataTooLarge,
            "Your metadata headers exceed the maximum allowed metadata size ({bytes} bytes of at most {MAX_USER_META})."
        ));
    }
    Ok(m)
}

/// [`Standard::new`] from an s3s input with the standard header fields (three input types name
/// them alike).
macro_rules! standard_of {
    ($i:expr) => {
        Standard::new(
            &$i.cache_control,
            &$i.content_disposition,
            &$i.content_encoding,
            &$i.content_language,
            &$i.expires,
            &$i.website_redirect_location,
            &$i.storage_class,
        )
    };
}

/// A GET or HEAD output (`$ty`, two s3s types with the same field names) with everything an
/// object keeps: type, ETag, time, user metadata, standard headers, and its checksum when
/// `$checksums` (the client asked for it).
macro_rules! object_output {
    ($ty:ident, $info:expr, $checksums:expr) => {{
        let info: &$crate::backend::ObjectInfo = $info;
        let std = $crate::s3::headers::Standard::of_info(info);
        let sums = if $checksums { $crate::s3::integrity::stored_checksums(&info.system) } else { Default::default() };
        $crate::s3::integrity::with_checksums!(
            $ty {
                accept_ranges: Some("bytes".into()),
                content_type: Some(info.content_type.clone()),
                e_tag: Some($crate::s3::convert::etag(&info.etag)),
                last_modified: Some($crate::s3::convert::timestamp(info.mtime_ns)),
                metadata: $crate::s3::convert::metadata(&info.user_meta),
                expires: std.expires_timestamp(),
                storage_class: std.storage_class(),
                cache_control: std.cache_control,
                content_disposition: std.content_disposition,
                content_encoding: std.content_encoding,
                content_language: std.content_language,
                website_redirect_location: std.website_redirect_location,
            },
            sums
        )
    }};
}
pub(crate) use object_output;

/// A GET's `response-*` parameters: the headers to answer instead of the object's own.
#[derive(Debug, Default)]
pub struct Overrides {
    pub cache_control: Option<String>,
    pub content_disposition: Option<String>,
    pub content_encoding: Option<String>,
    pub content_language: Option<String>,
    pub content_type: Option<String>,
    pub expires: Option<Timestamp>,
}

/// The standard headers of one object.
#[derive(Debug, Default, Clone, PartialEq, Eq)]
pub struct Standard {
    pub cache_control: Option<String>,
    pub content_disposition: Option<String>,
    pub content_encoding: Option<String>,
    pub content_language: Option<String>,
    /// An HTTP date, as sent.
    pub expires: Option<String>,
    pub website_redirect_location: Option<String>,
    pub storage_class: Option<String>,
}

/// Storage classes an object can be written with and still be read at once.
const READABLE_CLASSES: [&str; 7] = [
    "STANDARD",
    "REDUCED_REDUNDANCY",
    "STANDARD_IA",
    "ONEZONE_IA",
    "INTELLIGENT_TIERING",
    "GLACIER_IR",
    "EXPRESS_ONEZONE",
];

fn http_date(t: &Timestamp) -> Option<String> {
    let mut b = Vec::new();
    t.format(TimestampFormat::HttpDate, &mut b).ok()?;
    String::from_utf8(b).ok()
}

/// A Content-Encoding without `aws-chunked`, which names how the request's body was sent, not
/// how the object is encoded (S3 drops it); `None` when nothing else is left.
fn without_aws_chunked(v: &str) -> Option<String> {
    let kept: Vec<&str> = v.split(',').map(str::trim).filter(|e| !e.is_empty() && *e != "aws-chunked").collect();
    (!kept.is_empty()).then(|| kept.join(", "))
}

impl Standard {
    #[allow(clippy::too_many_arguments)] // one per header, from [`standard_of`]
    fn new(
        cache_control: &Option<String>,
        content_disposition: &Option<String>,
        content_encoding: &Option<String>,
        content_language: &Option<String>,
        expires: &Option<Timestamp>,
        website_redirect_location: &Option<String>,
        storage_class: &Option<StorageClass>,
    ) -> S3Result<Standard> {
        if let Some(l) = website_redirect_location {
            if !(l.starts_with('/') || l.starts_with("http://") || l.starts_with("https://")) || l.len() > 2048 {
                return Err(super::convert::custom_error(
                    "InvalidRedirectLocation",
                    http::StatusCode::BAD_REQUEST,
                    "The website redirect location must be non-empty and start with http://, https:// or /",
                ));
            }
        }
        let storage_class = match storage_class.as_ref().map(|c| c.as_str()) {
            None | Some("STANDARD") => None,
            Some(c) if READABLE_CLASSES.contains(&c) => Some(c.to_owned()),
            Some(c @ ("GLACIER" | "DEEP_ARCHIVE")) => {
                return Err(s3_error!(
                    NotImplemented,
                    "storage class {c} archives objects, which then cannot be read through this cache"
                ));
            }
            Some(c) => {
                return Err(s3_error!(InvalidStorageClass, "The storage class you specified ({c}) is not valid"))
            }
        };
        Ok(Standard {
            cache_control: cache_control.clone(),
            content_disposition: content_disposition.clone(),
            content_encoding: content_encoding.as_deref().and_then(without_aws_chunked),
            content_language: content_language.clone(),
            expires: expires.as_ref().and_then(http_date),
            website_redirect_location: website_redirect_location.clone(),
            storage_class,
        })
    }

    pub fn of_put(i: &PutObjectInput) -> S3Result<Standard> {
        standard_of!(i)
    }

    pub fn of_create(i: &CreateMultipartUploadInput) -> S3Result<Standard> {
        standard_of!(i)
    }

    pub fn of_copy(i: &CopyObjectInput) -> S3Result<Standard> {
        standard_of!(i)
    }

    fn fields(&self) -> [(&'static str, &Option<String>); 7] {
        [
            ("cache-control", &self.cache_control),
            ("content-disposition", &self.content_disposition),
            ("content-encoding", &self.content_encoding),
            ("content-language", &self.content_language),
            ("expires", &self.expires),
            ("x-amz-website-redirect-location", &self.website_redirect_location),
            ("x-amz-storage-class", &self.storage_class),
        ]
    }

    /// Into `system` (an object's [`ObjectInfo::system`]), replacing the standard headers there.
    pub fn store(&self, system: &mut BTreeMap<String, String>) {
        for (name, value) in self.fields() {
            match value {
                Some(v) => system.insert(name.to_owned(), v.clone()),
                None => system.remove(name),
            };
        }
    }

    /// The headers an object keeps.
    pub fn of_info(info: &ObjectInfo) -> Standard {
        let get = |n: &str| info.system.get(n).cloned();
        Standard {
            cache_control: get("cache-control"),
            content_disposition: get("content-disposition"),
            content_encoding: get("content-encoding"),
            content_language: get("content-language"),
            expires: get("expires"),
            website_redirect_location: get("x-amz-website-redirect-location"),
            storage_class: get("x-amz-storage-class"),
        }
    }

    /// `Expires` as the output's timestamp (a stored date that does not parse is left out).
    pub fn expires_timestamp(&self) -> Option<Timestamp> {
        Timestamp::parse(TimestampFormat::HttpDate, self.expires.as_deref()?).ok()
    }

    pub fn storage_class(&self) -> Option<StorageClass> {
        self.storage_class.clone().map(StorageClass::from)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::backend::SYSTEM_HEADERS;

    #[test]
    fn aws_chunked_is_not_an_object_encoding() {
        assert_eq!(without_aws_chunked("gzip, aws-chunked").as_deref(), Some("gzip"));
        assert_eq!(without_aws_chunked("aws-chunked,gzip").as_deref(), Some("gzip"));
        assert_eq!(without_aws_chunked("deflate, gzip").as_deref(), Some("deflate, gzip"));
        assert_eq!(without_aws_chunked("aws-chunked, aws-chunked"), None);
    }

    #[test]
    fn stored_headers_come_back_and_cover_every_system_header() {
        let s = Standard {
            cache_control: Some("max-age=60".into()),
            content_disposition: Some("attachment; filename=\"a.txt\"".into()),
            content_encoding: Some("gzip".into()),
            content_language: Some("fr".into()),
            expires: Some("Thu, 01 Dec 2033 16:00:00 GMT".into()),
            website_redirect_location: Some("/elsewhere".into()),
            storage_class: Some("STANDARD_IA".into()),
        };
        let mut info = ObjectInfo::default();
        s.store(&mut info.system);
        assert_eq!(info.system.keys().cloned().collect::<Vec<_>>().len(), SYSTEM_HEADERS.len());
        assert!(SYSTEM_HEADERS.iter().all(|h| info.system.contains_key(*h)));
        assert_eq!(Standard::of_info(&info), s);
        assert!(s.expires_timestamp().is_some());
        Standard::default().store(&mut info.system);
        assert!(info.system.is_empty());
    }

    #[test]
    fn classes_redirects_and_metadata_follow_s3_rules() {
        let class = |c: &'static str| {
            let i = PutObjectInput::builder()
                .bucket("b".into())
                .key("k".into())
                .storage_class(Some(StorageClass::from_static(c)))
                .build()
                .unwrap();
            Standard::of_put(&i).map(|s| s.storage_class)
        };
        assert_eq!(class("STANDARD").unwrap(), None);
        assert_eq!(class("ONEZONE_IA").unwrap().as_deref(), Some("ONEZONE_IA"));
        assert_eq!(class("GLACIER").unwrap_err().code().as_str(), "NotImplemented");
        assert_eq!(class("CHEAPEST").unwrap_err().code().as_str(), "InvalidStorageClass");
        let redirect = |l: &str| {
            let i = PutObjectInput::builder()
                .bucket("b".into())
                .key("k".into())
                .website_redirect_location(Some(l.into()))
                .build()
                .unwrap();
            Standard::of_put(&i)
        };
        assert!(redirect("https://example.com/x").is_ok());
        assert_eq!(redirect("ftp://x").unwrap_err().code().as_str(), "InvalidRedirectLocation");
        let mut m = Metadata::default();
        m.insert("Name".into(), "v".repeat(MAX_USER_META - 4));
        assert_eq!(user_meta(Some(m.clone())).unwrap()["name"].len(), MAX_USER_META - 4);
        m.insert("x".into(), "y".into());
        assert_eq!(user_meta(Some(m)).unwrap_err().code().as_str(), "MetadataTooLarge");
    }
}
