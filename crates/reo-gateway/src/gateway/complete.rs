//! CompleteMultipartUpload: the listed parts concatenated and stored through the normal write
//! path with ETag `md5(part md5s)-N`.
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

use std::collections::BTreeMap;
use std::fs;

use s3s::{s3_error, S3Result};

use super::multipart::{io, Done, PartInfo, MIN_PART};
use super::Gateway;
use crate::backend::ObjectInfo;

/// A step of a completion after which a test makes it stop, as if the process had died.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Step {
    /// The object is written, its answer is not.
    Stored,
    /// The answer is written, the parts are not removed yet.
    Recorded,
}

impl Gateway {
    /// Completes upload `id` with the listed (number, etag) parts; repeating a completed upload
    /// with the same parts returns the same info (see the module doc). The assembled object may
    /// not exceed `max_object` bytes (it is assembled in memory).
    pub fn complete_upload(
        &self,
        bucket: &str,
        key: &str,
        id: &str,
        listed: &[(i32, String)],
        max_object: u64,
    ) -> S3Result<ObjectInfo> {
        self.complete_upload_if(bucket, key, id, listed, max_object, None::<fn(Option<&ObjectInfo>) -> S3Result<()>>)
    }

    /// [`Gateway::complete_upload`], writing the object only if `check` accepts the key's
    /// current info (a conditional completion, If-Match / If-None-Match; see
    /// [`Gateway::put_if`]). A refused completion leaves the upload as it was.
    pub fn complete_upload_if<F>(
        &self,
        bucket: &str,
        key: &str,
        id: &str,
        listed: &[(i32, String)],
        max_object: u64,
        check: Option<F>,
    ) -> S3Result<ObjectInfo>
    where
        F: FnOnce(Option<&ObjectInfo>) -> S3Result<()>,
    {
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
        if parts.windows(2).any(|w| w[1].0 <= w[0].0) {
            return Err(s3_error!(InvalidPartOrder, "parts must be listed in ascending order, each once"));
        }
        let d = self.uploads.path(id)?;
        let mut data = Vec::with_capacity(total as usize);
        let mut md5s = Vec::new();
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
            data.extend_from_slice(&fs::read(d.join(format!("part-{n:05}"))).map_err(io)?);
            let raw: Vec<u8> =
                (0..p.etag.len() / 2).filter_map(|i| u8::from_str_radix(&p.etag[2 * i..2 * i + 2], 16).ok()).collect();
            md5s.extend_from_slice(&raw);
        }
        let etag = format!("{}-{}", crate::keys::md5_hex(&md5s), parts.len());
        let info = ObjectInfo {
            etag,
            content_type: u.content_type.clone(),
            user_meta: u.user_meta.clone(),
            system: u.system.clone(),
            ..Default::default()
        };
        let info = self.put_if(bucket, key, &data, info, check)?;
        self.crash_point(Step::Stored)?;
        self.uploads.finish(id, &Done { info: info.clone(), parts: Some(parts) })?;
        self.crash_point(Step::Recorded)?;
        self.uploads.remove_parts(id);
        Ok(info)
    }

    /// Stops a completion after `step` when a test asked for it.
    #[cfg(test)]
    fn crash_point(&self, step: Step) -> S3Result<()> {
        match *self.uploads.crash_after.lock().unwrap() {
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
