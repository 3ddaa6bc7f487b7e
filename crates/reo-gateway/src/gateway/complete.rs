//! CompleteMultipartUpload: the listed parts streamed from their files into the normal write
//! path ([`Gateway::incoming_put`]: write-back into the cache as they are read) with ETag `md5(part md5s)-N`; for an upload created with a checksum algorithm, the
//! object's checksum is the parts' composite (`digest(part digests)-N`) or, for a CRC asked as
//! FULL_OBJECT, the CRC of the whole object, checked against what the request states before
//! anything is written. The part boundaries and checksums go to the part tables
//! ([`super::part_table`]) before the answer.
//!
//! Crash-safe and repeatable. The steps, under the upload's lock ([`super::multipart::Uploads::lock`],
//! so a concurrent completion of the same upload waits and then finds the answer):
//!
//! 1. the object is written (acknowledged write-back: durable on flash and in the pending map);
//! 2. the answer (`done.json`: info and part list) is written durably;
//! 3. the part files are removed.
//!
//! A crash before 2 leaves the parts: a repeated completion writes the same object again (same
//! bytes, same ETag). A crash between 2 and 3 leaves an answer: a repeat returns it, and the next
//! start-up removes the leftover parts. The parts are never removed before the answer is durable
//! (a repeat would then find neither). A repeat with the same part list answers the same ETag; a
//! different list after completion gets `NoSuchUpload`, as S3 answers for an upload that "may
//! have been aborted or completed".

use super::multipart::Step;
use std::collections::BTreeMap;
use std::fs;
use std::io::Read;
use std::path::Path;
use std::sync::Arc;

use reo_media::AlignedBuf;

use s3s::{s3_error, S3Result};

use super::handle::Gateway;
use super::incoming::IncomingPut;
use super::multipart::{Done, PartInfo, Upload, MIN_PART};
use super::part_table::{PartEntry, PartTable};
use super::staging::io;
use crate::backend::ObjectInfo;
use crate::body::BodySink;
use crate::budget::MemoryBudget;
use crate::checksum::{Algo, Hasher};

/// The checksums a CompleteMultipartUpload request states: one per listed part (in the list's
/// order; `None` where the list gives none) and the object's.
#[derive(Debug, Default, Clone)]
pub struct Claimed {
    /// Per listed part, its stated checksum (algorithm, base64).
    pub parts: Vec<Option<(Algo, String)>>,
    /// The object's stated checksum (algorithm, base64), if any.
    pub object: Option<(Algo, String)>,
    /// The object's size (`x-amz-mp-object-size`).
    pub size: Option<u64>,
}

/// The object's checksum entries (`x-amz-checksum-<algorithm>`, `x-amz-checksum-type`) from the
/// upload's algorithm, checked against the request's claims.
/// `full`: the whole object's digest in the upload's algorithm, for a FULL_OBJECT checksum.
fn object_checksum(
    u: &Upload,
    used: &[&PartInfo],
    full: Option<Vec<u8>>,
    claimed: &Claimed,
) -> S3Result<Vec<(String, String)>> {
    let Some(c) = u.checksum else {
        if claimed.object.is_some() || claimed.parts.iter().any(Option::is_some) {
            return Err(s3_error!(
                InvalidRequest,
                "the upload was created without a checksum algorithm: its parts and object have no checksum to compare"
            ));
        }
        return Ok(Vec::new());
    };
    let a = c.algorithm;
    for (i, p) in used.iter().enumerate() {
        let Some(have) = &p.checksum else {
            return Err(s3_error!(InvalidPart, "part {} has no {} checksum", p.number, a.name()));
        };
        match claimed.parts.get(i).cloned().flatten() {
            Some((b, _)) if b != a => {
                return Err(s3_error!(
                    InvalidRequest,
                    "part {}: the upload's checksum algorithm is {}",
                    p.number,
                    a.name()
                ))
            }
            Some((_, v)) if v != *have => {
                return Err(s3_error!(
                    InvalidPart,
                    "part {}: its {} checksum differs from the one listed",
                    p.number,
                    a.name()
                ))
            }
            _ => {}
        }
    }
    let value = if c.full_object {
        crate::checksum::b64_encode(&full.unwrap_or_default())
    } else {
        a.composite(used.iter().filter_map(|p| p.checksum.as_deref()))
            .ok_or_else(|| s3_error!(InternalError, "a staged part checksum is not a {} digest", a.name()))?
    };
    match &claimed.object {
        Some((b, _)) if *b != a => {
            return Err(s3_error!(InvalidRequest, "the upload's checksum algorithm is {}, not {}", a.name(), b.name()))
        }
        Some((_, v)) if *v != value => {
            return Err(s3_error!(BadDigest, "The {} you specified did not match the calculated checksum.", a.name()))
        }
        _ => {}
    }
    Ok(vec![(a.header().to_string(), value), ("x-amz-checksum-type".to_string(), c.type_name().to_string())])
}

/// Feeds the files of `parts` (in the upload directory `dir`) to `sink` in its pieces, and to
/// `full` (the whole object's checksum) if given.
fn feed(dir: &Path, parts: &[&PartInfo], sink: &mut IncomingPut, full: &mut Option<Hasher>) -> S3Result<()> {
    let plen = sink.piece_len();
    let mut buf = AlignedBuf::zeroed(plen);
    let (mut fill, mut wrote) = (0, false);
    let mut emit = |piece: &[u8], sink: &mut IncomingPut| {
        if let Some(h) = full.as_mut() {
            h.update(piece);
        }
        sink.write(piece)
    };
    for p in parts {
        let mut f = fs::File::open(dir.join(format!("part-{:05}", p.number))).map_err(io)?;
        loop {
            let n = f.read(&mut buf[fill..]).map_err(io)?;
            if n == 0 {
                break;
            }
            fill += n;
            if fill == plen {
                emit(&buf[..], sink)?;
                (fill, wrote) = (0, true);
            }
        }
    }
    if fill > 0 || !wrote {
        emit(&buf[..fill], sink)?;
    }
    Ok(())
}

impl Gateway {
    /// Completes upload `id` with the listed (number, etag) parts; repeating a completed upload
    /// with the same parts returns the same info (see the module doc). The object may not exceed
    /// `max_object` bytes.
    pub fn complete_upload(
        &self,
        bucket: &str,
        key: &str,
        id: &str,
        listed: &[(i32, String)],
        max_object: u64,
    ) -> S3Result<ObjectInfo> {
        let none = None::<fn(Option<&ObjectInfo>) -> S3Result<()>>;
        let budget = MemoryBudget::new(u64::MAX);
        self.complete_upload_if(bucket, key, id, listed, &Claimed::default(), (max_object, &budget), none)
    }

    /// [`Gateway::complete_upload`] with the request's `claimed` checksums, writing the object
    /// only if `check` accepts the key's current info (a conditional completion, If-Match /
    /// If-None-Match; see [`Gateway::put_if`]). A refused completion leaves the upload as it was.
    /// `limits`: the object's maximum size, and the memory budget of an object collected for
    /// the backend ([`Gateway::incoming_put`]).
    #[allow(clippy::too_many_arguments)] // the request's parts, claims, limits and condition
    pub fn complete_upload_if<F>(
        &self,
        bucket: &str,
        key: &str,
        id: &str,
        listed: &[(i32, String)],
        claimed: &Claimed,
        limits: (u64, &Arc<MemoryBudget>),
        check: Option<F>,
    ) -> S3Result<ObjectInfo>
    where
        F: FnOnce(Option<&ObjectInfo>) -> S3Result<()>,
    {
        let (max_object, budget) = limits;
        let _one_at_a_time = self.uploads.lock(id)?;
        let u = self.uploads.load(bucket, key, id)?;
        let parts: Vec<(i32, String)> = listed.iter().map(|(n, e)| (*n, e.trim_matches('"').to_string())).collect();
        if let Some(done) = self.uploads.done(id) {
            return match done.parts {
                Some(p) if p != parts => Err(s3_error!(
                    NoSuchUpload,
                    "upload {id:?} was completed with another part list; the upload no longer exists"
                )),
                _ => Ok(done.info),
            };
        }
        if parts.is_empty() {
            return Err(s3_error!(MalformedXML, "CompleteMultipartUpload lists no parts"));
        }
        let have: BTreeMap<i32, PartInfo> = self.uploads.parts(&u)?.into_iter().map(|p| (p.number, p)).collect();
        let total: u64 = parts.iter().filter_map(|(n, _)| have.get(n)).map(|p| p.size).sum();
        if total > max_object {
            return Err(s3_error!(
                EntityTooLarge,
                "the parts add up to {total} bytes; this gateway's object limit is {max_object} (--max-body-mib)"
            ));
        }
        if claimed.size.is_some_and(|s| s != total) {
            return Err(s3_error!(
                InvalidRequest,
                "x-amz-mp-object-size says {} bytes; the listed parts add up to {total}",
                claimed.size.unwrap_or_default()
            ));
        }
        if parts.windows(2).any(|w| w[1].0 <= w[0].0) {
            return Err(s3_error!(InvalidPartOrder, "parts must be listed in ascending order, each once"));
        }
        let d = self.uploads.path(id)?;
        let mut md5s = Vec::new();
        let mut used = Vec::with_capacity(parts.len());
        for (i, (n, etag)) in parts.iter().enumerate() {
            let Some(p) = have.get(n).filter(|p| p.etag == *etag) else {
                return Err(s3_error!(InvalidPart, "part {n} was not uploaded or its ETag differs"));
            };
            if i + 1 < parts.len() && p.size < MIN_PART {
                return Err(s3_error!(
                    EntityTooSmall,
                    "part {n} is {} bytes; every part but the last must be at least 5 MiB",
                    p.size
                ));
            }
            let raw: Vec<u8> =
                (0..p.etag.len() / 2).filter_map(|i| u8::from_str_radix(&p.etag[2 * i..2 * i + 2], 16).ok()).collect();
            md5s.extend_from_slice(&raw);
            used.push(p);
        }
        // The parts stream into the object's write (write-back: the cache, as they are read).
        let etag = format!("{}-{}", crate::keys::md5_hex(&md5s), parts.len());
        let meta = ObjectInfo {
            etag: etag.clone(),
            content_type: u.content_type.clone(),
            user_meta: u.user_meta.clone(),
            system: u.system.clone(),
            ..Default::default()
        };
        let mut sink = self.incoming_put(bucket, key, &meta, Some(total), budget, max_object)?;
        // The piece being read and what the sink keeps (a collected object reserves its own).
        let mut held = budget.reserve();
        held.grow(sink.piece_len().saturating_add(sink.kept()) as u64)?;
        let mut full = u.checksum.filter(|c| c.full_object).map(|c| c.algorithm.hasher());
        feed(&d, &used, &mut sink, &mut full)?;
        let mut system = u.system.clone();
        system.extend(object_checksum(&u, &used, full.map(Hasher::finalize), claimed)?);
        let info = ObjectInfo {
            etag,
            content_type: u.content_type.clone(),
            user_meta: u.user_meta.clone(),
            system,
            ..Default::default()
        };
        let info = self.put_incoming(bucket, key, sink, info, check)?;
        let table = PartTable {
            bucket: bucket.to_string(),
            key: key.to_string(),
            etag: info.etag.clone(),
            checksum_type: u.checksum.map(|c| c.type_name().to_string()),
            parts: used.iter().map(|p| PartEntry { size: p.size, checksum: p.checksum.clone() }).collect(),
        };
        self.part_tables.save(&table).map_err(io)?;
        self.crash_point(Step::Stored)?;
        self.uploads.finish(id, &Done { info: info.clone(), parts: Some(parts) })?;
        self.crash_point(Step::Recorded)?;
        self.uploads.remove_parts(id);
        Ok(info)
    }

    /// Stops a completion after `step` when a test asked for it.
    #[cfg(test)]
    fn crash_point(&self, step: Step) -> S3Result<()> {
        match *self.uploads.crash_after.lock() {
            Some(s) if s == step => Err(s3_error!(InternalError, "simulated crash after {step:?}")),
            _ => Ok(()),
        }
    }

    #[cfg(not(test))]
    #[inline]
    fn crash_point(&self, _step: Step) -> S3Result<()> {
        Ok(())
    }
}
