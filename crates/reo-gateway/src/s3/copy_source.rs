//! [`Source`]: what a copy (CopyObject, UploadPartCopy) reads — `x-amz-copy-source`, its
//! `x-amz-copy-source-if-*` conditions and, for a part, `x-amz-copy-source-range` — and the read
//! itself: the source's info and bytes from the cache or the backend under its read lock, after
//! the conditions (any failing one is `412 PreconditionFailed`, a GET's 304 cases included, as S3
//! answers a copy).

use crate::budget::Reservation;
use s3s::dto::{CopySource, ETagCondition, Timestamp};
use s3s::{s3_error, S3ErrorCode, S3Result};

use super::convert::check_conditions;
use crate::backend::ObjectInfo;
use crate::gateway::Gateway;

/// See the module doc.
pub struct Source {
    pub bucket: String,
    pub key: String,
    if_match: Option<ETagCondition>,
    if_none_match: Option<ETagCondition>,
    if_modified_since: Option<Timestamp>,
    if_unmodified_since: Option<Timestamp>,
    /// `[first, last]`, inclusive; the whole object when `None`.
    pub range: Option<(u64, u64)>,
}

/// The [`Source`] of an s3s copy input (two input types name the fields alike).
macro_rules! source_of {
    ($i:expr) => {
        $crate::s3::copy_source::Source::new(
            &$i.copy_source,
            $i.copy_source_if_match.clone(),
            $i.copy_source_if_none_match.clone(),
            $i.copy_source_if_modified_since.clone(),
            $i.copy_source_if_unmodified_since.clone(),
        )
    };
}
pub(crate) use source_of;

impl Source {
    /// Objects have one version, `null`: another version id is refused rather than ignored.
    pub fn new(
        src: &CopySource,
        if_match: Option<ETagCondition>,
        if_none_match: Option<ETagCondition>,
        if_modified_since: Option<Timestamp>,
        if_unmodified_since: Option<Timestamp>,
    ) -> S3Result<Source> {
        let CopySource::Bucket { bucket, key, version_id } = src else {
            return Err(s3_error!(InvalidArgument, "x-amz-copy-source must be bucket/key"));
        };
        if let Some(v) = version_id.as_deref().filter(|v| *v != "null") {
            return Err(s3_error!(
                NoSuchVersion,
                "version {v:?} of {bucket}/{key}: objects here have only the version null"
            ));
        }
        Ok(Source {
            bucket: bucket.to_string(),
            key: key.to_string(),
            if_match,
            if_none_match,
            if_modified_since,
            if_unmodified_since,
            range: None,
        })
    }

    /// The source's info and the bytes of its range (at most `limit` of them), reserved in
    /// `held` before they are read.
    pub fn read(&self, gw: &Gateway, limit: u64, held: &mut Reservation) -> S3Result<(ObjectInfo, Vec<u8>)> {
        let _read = gw.read_lock(&self.bucket, &self.key);
        let src = gw.head(&self.bucket, &self.key)?;
        check_conditions(
            &src,
            self.if_match.as_ref(),
            self.if_none_match.as_ref(),
            self.if_modified_since.as_ref(),
            self.if_unmodified_since.as_ref(),
        )
        .map_err(|e| {
            if *e.code() == S3ErrorCode::NotModified {
                s3_error!(PreconditionFailed, "a copy-source condition failed")
            } else {
                e
            }
        })?;
        let (start, end) = match self.range {
            None => (0, src.size),
            Some((first, last)) if last < src.size => (first, last + 1),
            Some(_) => {
                return Err(s3_error!(
                    InvalidRange,
                    "The x-amz-copy-source-range is not valid for a source object of {} bytes",
                    src.size
                ));
            }
        };
        if end - start > limit {
            return Err(s3_error!(
                EntityTooLarge,
                "the copy's {} bytes exceed this gateway's limit of {limit}",
                end - start
            ));
        }
        held.grow(end - start)?;
        let data = gw.read(&self.bucket, &self.key, &src, start, end)?;
        Ok((src, data))
    }
}

/// `bytes=first-last` (inclusive, first ≤ last) of `x-amz-copy-source-range`.
pub fn parse_range(r: &str) -> S3Result<(u64, u64)> {
    let parsed = r.strip_prefix("bytes=").and_then(|s| s.split_once('-')).and_then(|(a, b)| {
        let (a, b) = (a.trim().parse::<u64>().ok()?, b.trim().parse::<u64>().ok()?);
        (a <= b).then_some((a, b))
    });
    parsed.ok_or_else(|| {
        s3_error!(
            InvalidArgument,
            "The x-amz-copy-source-range value must be of the form bytes=first-last where first and last are the \
             zero-based offsets of the first and last bytes to copy"
        )
    })
}

#[cfg(test)]
mod tests {
    use super::parse_range;

    #[test]
    fn copy_ranges_are_inclusive_and_well_formed() {
        assert_eq!(parse_range("bytes=0-0").unwrap(), (0, 0));
        assert_eq!(parse_range("bytes=5-1048575").unwrap(), (5, 1_048_575));
        for bad in ["bytes=5-4", "bytes=-5", "bytes=5-", "5-10", "bytes=a-b", "bytes=1-2,4-5"] {
            assert_eq!(parse_range(bad).unwrap_err().code().as_str(), "InvalidArgument", "{bad}");
        }
    }
}
