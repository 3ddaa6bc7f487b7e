//! The parts of an object: `partNumber` on a GET or HEAD ([`part_of`]) and GetObjectAttributes.
//! An object stored by a single PUT is its own part 1; one completed from a multipart upload has
//! the parts its part table records ([`crate::gateway::part_table`]), with their checksums when
//! the upload had a checksum algorithm. An object whose table is gone (completed by an older
//! version, or written behind the gateway) cannot be split: asking for one of its parts is
//! refused (`NotImplemented`) rather than answered with the whole object.

use s3s::dto::*;
use s3s::{s3_error, S3Request, S3Response, S3Result};

use super::convert::{custom_error, timestamp};
use super::headers::Standard;
use super::integrity::{stored_checksums, with_checksums};
use super::{blocking, ReoS3, R};
use crate::backend::ObjectInfo;
use crate::checksum::Algo;
use crate::gateway::part_table::PartTable;
use crate::gateway::Gateway;

/// One part of an object, as a read answers it.
#[derive(Debug)]
pub struct PartRead {
    /// `[start, end)` of the object.
    pub range: (u64, u64),
    /// How many parts the object has.
    pub count: usize,
    /// Its checksum fields (in the order of [`Algo::ALL`]) and type, when known.
    pub checksums: [Option<String>; 5],
    /// `COMPOSITE` or `FULL_OBJECT`, when the upload had a checksum.
    pub checksum_type: Option<String>,
}

/// Sets a GET's or HEAD's output (`$out`) to answer for part `$p`: its count and, if
/// `$checksums` (the request's checksum mode), the part's checksum and type.
macro_rules! apply_part {
    ($out:expr, $p:expr, $checksums:expr) => {{
        let p: $crate::s3::parts::PartRead = $p;
        $out.parts_count = Some(p.count as i32);
        if $checksums {
            let [c32, c32c, c64, s1, s256] = p.checksums;
            ($out.checksum_crc32, $out.checksum_crc32c, $out.checksum_crc64nvme) = (c32, c32c, c64);
            ($out.checksum_sha1, $out.checksum_sha256) = (s1, s256);
            $out.checksum_type = p.checksum_type.map(ChecksumType::from);
        }
    }};
}
pub(crate) use apply_part;

/// The algorithm of an object's stored checksum.
fn algorithm_of(info: &ObjectInfo) -> Option<Algo> {
    Algo::ALL.into_iter().find(|a| info.system.contains_key(a.header()))
}

/// The part table of a multipart object, or the refusal.
fn table_of(gw: &Gateway, bucket: &str, key: &str, info: &ObjectInfo) -> S3Result<PartTable> {
    gw.part_tables.get(bucket, key, &info.etag).ok_or_else(|| {
        s3_error!(
            NotImplemented,
            "the part boundaries of {bucket}/{key} are not known to this gateway: ask for a Range"
        )
    })
}

/// Part `part` of `bucket/key` (a GET's or HEAD's `partNumber`); `None` when none is asked for
/// or the object is a single PUT's (part 1 is all of it).
pub fn part_of(
    gw: &Gateway,
    bucket: &str,
    key: &str,
    part: Option<i32>,
    range: bool,
    info: &ObjectInfo,
) -> S3Result<Option<PartRead>> {
    let Some(n) = part else { return Ok(None) };
    if range {
        return Err(s3_error!(InvalidRequest, "Cannot specify both Range header and partNumber query parameter"));
    }
    if !(1..=10_000).contains(&n) {
        return Err(s3_error!(InvalidArgument, "Part number must be an integer between 1 and 10000, inclusive"));
    }
    let beyond = || {
        custom_error(
            "InvalidPartNumber",
            http::StatusCode::RANGE_NOT_SATISFIABLE,
            "The requested partnumber is not satisfiable",
        )
    };
    if !info.etag.contains('-') {
        return if n == 1 { Ok(None) } else { Err(beyond()) };
    }
    let t = table_of(gw, bucket, key, info)?;
    let Some(range) = t.range(n as usize) else { return Err(beyond()) };
    let sum = t.parts[n as usize - 1].checksum.clone();
    let checksums = match algorithm_of(info) {
        Some(a) => Algo::ALL.map(|b| sum.clone().filter(|_| a == b)),
        None => Default::default(),
    };
    Ok(Some(PartRead { range, count: t.parts.len(), checksums, checksum_type: t.checksum_type }))
}

/// Whether a request is a GetObjectAttributes (`GET /bucket/key?attributes`).
pub fn is_attributes_request(method: &http::Method, uri: &http::Uri) -> bool {
    method == http::Method::GET
        && uri.query().is_some_and(|q| q.split('&').any(|p| p == "attributes" || p == "attributes="))
}

/// GetObjectAttributes' XML with its ETag unquoted: S3 answers `<ETag>hex-N</ETag>` there (the
/// ETag as a value, not as a header), but s3s 0.14.1 quotes every ETag it serializes. ETags
/// here are hex digits and `-`, so the quotes are the only `"` around them.
pub fn unquote_etag(xml: &[u8]) -> Vec<u8> {
    let s = String::from_utf8_lossy(xml);
    s.replace("<ETag>\"", "<ETag>").replace("\"</ETag>", "</ETag>").into_bytes()
}

impl ReoS3 {
    /// GetObjectAttributes: ETag (unquoted by [`unquote_etag`], as S3 answers it), Checksum, ObjectParts
    /// (paged by `max-parts` and `part-number-marker`), StorageClass, ObjectSize — whichever are
    /// asked for.
    pub(super) async fn op_get_object_attributes(
        &self,
        req: S3Request<GetObjectAttributesInput>,
    ) -> R<GetObjectAttributesOutput> {
        let i = req.input;
        if i.sse_customer_algorithm.is_some() || i.sse_customer_key.is_some() {
            return Err(s3_error!(InvalidRequest, "objects here are not encrypted with a customer key"));
        }
        if let Some(v) = i.version_id.as_deref().filter(|v| *v != "null") {
            return Err(s3_error!(NoSuchVersion, "version {v:?}: objects here have only the version null"));
        }
        // One `x-amz-object-attributes` header may list them all, comma-separated.
        let asked: Vec<String> = i
            .object_attributes
            .iter()
            .flat_map(|x| x.as_str().split(',').map(|a| a.trim().to_ascii_lowercase()))
            .collect();
        let wants = |a: &str| asked.iter().any(|x| x.eq_ignore_ascii_case(a));
        let (want_etag, want_sum, want_parts) = (wants("ETag"), wants("Checksum"), wants("ObjectParts"));
        let (want_class, want_size) = (wants("StorageClass"), wants("ObjectSize"));
        let max = i.max_parts.unwrap_or(1000).clamp(0, 1000) as usize;
        let marker = i.part_number_marker.unwrap_or(0).max(0) as usize;
        let gw = self.gw.clone();
        let (bucket, key) = (i.bucket.clone(), i.key.clone());
        let (info, table) = blocking(move || {
            let _r = gw.read_lock(&bucket, &key);
            let info = gw.head(&bucket, &key)?;
            let table = info.etag.contains('-').then(|| gw.part_tables.get(&bucket, &key, &info.etag)).flatten();
            Ok((info, table))
        })
        .await?;
        let checksum_type = info.system.get("x-amz-checksum-type").cloned();
        let checksum = (want_sum && algorithm_of(&info).is_some()).then(|| {
            with_checksums!(
                Checksum {
                    checksum_type: Some(ChecksumType::from(checksum_type.unwrap_or_else(|| "FULL_OBJECT".into())))
                },
                stored_checksums(&info.system)
            )
        });
        let object_parts = table.filter(|_| want_parts).map(|t| {
            let a = algorithm_of(&info);
            let rest: Vec<(usize, &crate::gateway::part_table::PartEntry)> =
                t.parts.iter().enumerate().map(|(k, p)| (k + 1, p)).filter(|(n, _)| *n > marker).collect();
            let truncated = rest.len() > max;
            let parts: Vec<ObjectPart> = rest
                .iter()
                .take(max)
                .map(|(n, p)| {
                    let sums = Algo::ALL.map(|b| p.checksum.clone().filter(|_| a == Some(b)));
                    with_checksums!(ObjectPart { part_number: Some(*n as i32), size: Some(p.size as i64) }, sums)
                })
                .collect();
            GetObjectAttributesParts {
                total_parts_count: Some(t.parts.len() as i32),
                part_number_marker: Some(marker as i32),
                next_part_number_marker: parts.last().and_then(|p| p.part_number).filter(|_| truncated),
                max_parts: Some(max as i32),
                is_truncated: Some(truncated),
                parts: Some(parts),
            }
        });
        let class = Standard::of_info(&info).storage_class().unwrap_or_else(|| StorageClass::from_static("STANDARD"));
        Ok(S3Response::new(GetObjectAttributesOutput {
            e_tag: want_etag.then(|| super::convert::etag(&info.etag)),
            checksum,
            object_parts,
            storage_class: want_class.then_some(class),
            object_size: want_size.then_some(info.size as i64),
            last_modified: Some(timestamp(info.mtime_ns)),
            ..Default::default()
        }))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn attributes_etags_lose_their_quotes() {
        let xml = br#"<GetObjectAttributesResponse><ETag>"abc-2"</ETag><ObjectSize>3</ObjectSize></GetObjectAttributesResponse>"#;
        assert_eq!(unquote_etag(xml), br#"<GetObjectAttributesResponse><ETag>abc-2</ETag><ObjectSize>3</ObjectSize></GetObjectAttributesResponse>"#.to_vec());
        assert!(is_attributes_request(&http::Method::GET, &"/b/k?attributes".parse().unwrap()));
        assert!(!is_attributes_request(&http::Method::GET, &"/b/k?attributesx".parse().unwrap()));
    }
}
