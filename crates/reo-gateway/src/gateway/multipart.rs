//! Multipart uploads, staged in `<state>/uploads/<id>/`: `upload.json` (bucket, key, content
//! type, user metadata, start time) and one file per part (`part-NNNNN`, its MD5 in
//! `part-NNNNN.md5`), each written durably (fsync'ed, renamed, directory fsync'ed) before the
//! request answers. Completion ([`super::complete`]) leaves `done.json` behind (the object's info
//! and the part list it was completed with) so that a repeated CompleteMultipartUpload answers
//! the same, as S3 does; answers older than a day are removed at start-up, and so are the part
//! files of a completion interrupted between writing its answer and removing them.
//!
//! A completed upload is no longer open: UploadPart, ListParts and AbortMultipartUpload of it
//! get `NoSuchUpload` ("the upload may have been aborted or completed", as S3 answers).
//! Completions and aborts of one upload run one at a time ([`Uploads::lock`]).

use std::collections::{BTreeMap, HashMap};
use std::fs;
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicU64, Ordering};

use parking_lot::{Condvar, Mutex, MutexGuard};
use s3s::{s3_error, S3Result};
use serde::{Deserialize, Serialize};

use super::clock::now_ns;
use super::part_writer::PartWriter;
use super::staging::{io, write_durable};
use crate::backend::ObjectInfo;

/// S3's minimum size of every part but the last.
pub const MIN_PART: u64 = 5 << 20;
/// S3's largest part number (part numbers are 1 to this).
pub const MAX_PARTS: i32 = 10_000;

/// An open multipart upload, as `upload.json` keeps it.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct Upload {
    /// The upload id (hex), also its staging directory's name.
    pub id: String,
    /// The bucket of the object it makes.
    pub bucket: String,
    /// The key of the object it makes.
    pub key: String,
    /// The object's `Content-Type`.
    pub content_type: String,
    /// The object's user metadata (`x-amz-meta-*`).
    pub user_meta: BTreeMap<String, String>,
    /// When the upload was created, unix nanoseconds.
    pub initiated_ns: u64,
    /// Standard headers the object gets ([`ObjectInfo::system`]).
    #[serde(default, skip_serializing_if = "BTreeMap::is_empty")]
    pub system: BTreeMap<String, String>,
    /// The checksum the upload was created with: every part gets one, and the object the
    /// parts' composite (or, for a CRC, its full-object) checksum.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub checksum: Option<UploadChecksum>,
}

/// A multipart upload's checksum algorithm and type.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
pub struct UploadChecksum {
    /// The algorithm every part is checked with.
    pub algorithm: crate::checksum::Algo,
    /// FULL_OBJECT (a CRC of the whole object) rather than COMPOSITE (a digest of the parts'
    /// digests, `-N`).
    pub full_object: bool,
}

impl UploadChecksum {
    /// S3's name of the type.
    pub fn type_name(&self) -> &'static str {
        if self.full_object {
            "FULL_OBJECT"
        } else {
            "COMPOSITE"
        }
    }
}

/// A part as listed.
#[derive(Debug, Clone)]
pub struct PartInfo {
    /// The part number, 1 to [`MAX_PARTS`].
    pub number: i32,
    /// The part's MD5, lowercase hex without quotes.
    pub etag: String,
    /// The part's size in bytes.
    pub size: u64,
    /// When the part was last written, unix nanoseconds (0 if unknown).
    pub mtime_ns: u64,
    /// Its checksum (base64) in the upload's algorithm, if the upload has one.
    pub checksum: Option<String>,
}

/// A step of a completion after which a test makes it stop, as if the process had died.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Step {
    /// The object is written, its answer is not.
    Stored,
    /// The answer is written, the parts are not removed yet.
    Recorded,
}

/// What `done.json` holds: the completed object's info and the parts it was made of (numbers and
/// ETags without quotes; `None` in the answers of older versions, which did not keep them).
#[derive(Debug, Clone, Serialize, Deserialize)]
pub(crate) struct Done {
    #[serde(flatten)]
    pub info: ObjectInfo,
    #[serde(default)]
    pub parts: Option<Vec<(i32, String)>>,
}

/// The multipart uploads staged in a directory (one per gateway).
pub struct Uploads {
    dir: PathBuf,
    seq: AtomicU64,
    /// Per upload id: whether a completion or abort holds it, and how many threads hold or wait.
    busy: Mutex<HashMap<String, (bool, usize)>>,
    busy_cv: Condvar,
    /// A completion stops (as if the process died) after this step (tests of the crash points).
    #[cfg(test)]
    pub(crate) crash_after: Mutex<Option<Step>>,
}

/// One upload's completion or abort in progress ([`Uploads::lock`]).
pub(crate) struct UploadLock<'a> {
    uploads: &'a Uploads,
    id: String,
}

/// Whether `name` is a staged part (or its MD5) or a temporary file: what is left to remove once
/// the upload is completed.
fn is_staging(name: &str) -> bool {
    name.starts_with("part-") || name.starts_with("tmp-")
}

impl Uploads {
    /// Opens the staging directory, removing the answers of uploads completed over a day ago and
    /// the part files a completion left behind (it stopped between its answer and the cleanup).
    pub fn open(dir: &Path) -> std::io::Result<Uploads> {
        fs::create_dir_all(dir)?;
        for ent in fs::read_dir(dir)?.flatten() {
            let done = ent.path().join("done.json");
            let Ok(m) = fs::metadata(&done) else { continue };
            let age = m.modified().ok().and_then(|t| t.elapsed().ok());
            if age.is_some_and(|age| age > std::time::Duration::from_secs(86_400)) {
                let _ = fs::remove_dir_all(ent.path());
            } else {
                remove_staging(&ent.path());
            }
        }
        Ok(Uploads {
            dir: dir.to_path_buf(),
            seq: AtomicU64::new(0),
            busy: Mutex::default(),
            busy_cv: Condvar::new(),
            #[cfg(test)]
            crash_after: Mutex::new(None),
        })
    }

    fn busy(&self) -> MutexGuard<'_, HashMap<String, (bool, usize)>> {
        self.busy.lock()
    }

    /// Waits until no other completion or abort of upload `id` runs, then holds it off until the
    /// returned lock is dropped. Held across the completed object's write: it comes first in the
    /// gateway's lock order ([`super`]).
    pub(crate) fn lock(&self, id: &str) -> S3Result<UploadLock<'_>> {
        self.path(id)?;
        let mut b = self.busy();
        b.entry(id.to_string()).or_default().1 += 1;
        self.busy_cv.notify_all();
        while b[id].0 {
            self.busy_cv.wait(&mut b);
        }
        b.get_mut(id).expect("registered").0 = true;
        Ok(UploadLock { uploads: self, id: id.to_string() })
    }

    /// Waits until `n` threads hold or wait for upload `id`'s lock (tests: a second completion
    /// is queued behind the first).
    #[cfg(test)]
    pub(crate) fn wait_queued(&self, id: &str, n: usize) {
        let mut b = self.busy();
        while b.get(id).map_or(0, |e| e.1) < n {
            self.busy_cv.wait(&mut b);
        }
    }

    pub(crate) fn path(&self, id: &str) -> S3Result<PathBuf> {
        if id.is_empty() || !id.bytes().all(|b| b.is_ascii_alphanumeric()) {
            return Err(s3_error!(NoSuchUpload, "upload id {id:?} is not one of ours"));
        }
        Ok(self.dir.join(id))
    }

    /// A new upload of `bucket/key`; the object gets `meta`'s content type, user and system
    /// metadata.
    pub fn create(
        &self,
        bucket: &str,
        key: &str,
        meta: ObjectInfo,
        checksum: Option<UploadChecksum>,
    ) -> S3Result<String> {
        let id = format!("{:x}{:x}", now_ns(), self.seq.fetch_add(1, Ordering::Relaxed));
        let d = self.path(&id)?;
        fs::create_dir_all(&d).map_err(io)?;
        let u = Upload {
            id: id.clone(),
            bucket: bucket.into(),
            key: key.into(),
            content_type: meta.content_type,
            user_meta: meta.user_meta,
            initiated_ns: now_ns(),
            system: meta.system,
            checksum,
        };
        let bytes = serde_json::to_vec(&u).expect("serializable");
        write_durable(&d, "upload.json", self.seq.fetch_add(1, Ordering::Relaxed), &bytes).map_err(io)?;
        Ok(id)
    }

    /// The upload `id` of `bucket/key`, if it is still open (not completed).
    pub fn get(&self, bucket: &str, key: &str, id: &str) -> S3Result<Upload> {
        let u = self.load(bucket, key, id)?;
        if self.done(id).is_some() {
            return Err(s3_error!(NoSuchUpload, "upload {id:?} was completed"));
        }
        Ok(u)
    }

    /// The upload `id` of `bucket/key`, open or completed.
    pub(crate) fn load(&self, bucket: &str, key: &str, id: &str) -> S3Result<Upload> {
        let d = self.path(id)?;
        let u: Upload = fs::read(d.join("upload.json"))
            .ok()
            .and_then(|b| serde_json::from_slice(&b).ok())
            .ok_or_else(|| s3_error!(NoSuchUpload, "no multipart upload {id:?}"))?;
        if u.bucket != bucket || u.key != key {
            return Err(s3_error!(NoSuchUpload, "upload {id:?} belongs to another object"));
        }
        Ok(u)
    }

    /// A writer of part `n` of `u`, its body received into a staging file as it arrives
    /// ([`PartWriter`]).
    pub fn begin_part(&self, u: &Upload, n: i32) -> S3Result<PartWriter> {
        if !(1..=MAX_PARTS).contains(&n) {
            return Err(s3_error!(InvalidArgument, "part number {n} is outside 1..=10000"));
        }
        PartWriter::create(self.path(&u.id)?, n, self.seq.fetch_add(1, Ordering::Relaxed))
    }

    /// Stages part `n` from memory; answers its ETag and, if the upload has a checksum
    /// algorithm, its checksum.
    pub fn put_part(&self, u: &Upload, n: i32, data: &[u8]) -> S3Result<(String, Option<String>)> {
        use crate::body::BodySink;
        let mut w = self.begin_part(u, n)?;
        w.write(data)?;
        let etag = crate::keys::md5_hex(data);
        let sum = u.checksum.map(|c| c.algorithm.digest_b64(data));
        w.commit(&etag, sum.as_deref())?;
        Ok((etag, sum))
    }

    /// The parts uploaded so far, by part number.
    pub fn parts(&self, u: &Upload) -> S3Result<Vec<PartInfo>> {
        let d = self.path(&u.id)?;
        let mut out = Vec::new();
        for ent in fs::read_dir(&d).map_err(io)?.flatten() {
            let name = ent.file_name().to_string_lossy().into_owned();
            let Some(n) = name.strip_prefix("part-").filter(|s| !s.contains('.')) else { continue };
            let Ok(number) = n.parse::<i32>() else { continue };
            let m = ent.metadata().map_err(io)?;
            let etag = fs::read_to_string(d.join(format!("{name}.md5"))).map_err(io)?;
            let mtime_ns = m
                .modified()
                .ok()
                .and_then(|t| t.duration_since(std::time::UNIX_EPOCH).ok())
                .map_or(0, |d| d.as_nanos() as u64);
            let checksum = fs::read_to_string(d.join(format!("{name}.sum"))).ok();
            out.push(PartInfo { number, etag, size: m.len(), mtime_ns, checksum });
        }
        out.sort_by_key(|p| p.number);
        Ok(out)
    }

    /// Aborts the open upload `id` of `bucket/key`; not while it is being completed (the abort
    /// waits), and not once it is completed (`NoSuchUpload`).
    pub fn abort(&self, bucket: &str, key: &str, id: &str) -> S3Result<()> {
        let _l = self.lock(id)?;
        let u = self.get(bucket, key, id)?;
        fs::remove_dir_all(self.path(&u.id)?).map_err(io)
    }

    /// Removes the open uploads started more than `max_age` before `now_ns` (abandoned: their
    /// parts would otherwise hold disk for ever) and staging directories a crash left without
    /// an `upload.json`; each under its upload's lock, so a completion in progress finishes
    /// first (and is then kept). Returns how many were removed.
    pub fn expire(&self, max_age: std::time::Duration, now_ns: u64) -> usize {
        let cutoff = now_ns.saturating_sub(max_age.as_nanos() as u64);
        let mut removed = 0;
        for ent in fs::read_dir(&self.dir).into_iter().flatten().flatten() {
            let id = ent.file_name().to_string_lossy().into_owned();
            let started = match fs::read(ent.path().join("upload.json")) {
                Ok(b) => match serde_json::from_slice::<Upload>(&b) {
                    Ok(u) => u.initiated_ns,
                    Err(_) => continue,
                },
                // Its creation never finished: as old as the directory.
                Err(_) => ent
                    .metadata()
                    .and_then(|m| m.modified())
                    .ok()
                    .and_then(|t| t.duration_since(std::time::UNIX_EPOCH).ok())
                    .map_or(u64::MAX, |d| d.as_nanos() as u64),
            };
            if started >= cutoff || ent.path().join("done.json").exists() {
                continue;
            }
            let Ok(_l) = self.lock(&id) else { continue };
            if ent.path().join("done.json").exists() {
                continue;
            }
            match fs::remove_dir_all(ent.path()) {
                Ok(()) => removed += 1,
                Err(e) => tracing::warn!(upload = id, "cannot remove an expired multipart upload: {e}"),
            }
        }
        removed
    }

    /// Open uploads of `bucket` whose key starts with `prefix`, by key then start time.
    pub fn list(&self, bucket: &str, prefix: &str) -> Vec<Upload> {
        let mut out: Vec<Upload> = fs::read_dir(&self.dir)
            .into_iter()
            .flatten()
            .flatten()
            .filter(|e| !e.path().join("done.json").exists())
            .filter_map(|e| fs::read(e.path().join("upload.json")).ok())
            .filter_map(|b| serde_json::from_slice::<Upload>(&b).ok())
            .filter(|u| u.bucket == bucket && u.key.starts_with(prefix))
            .collect();
        out.sort_by(|a, b| (&a.key, a.initiated_ns).cmp(&(&b.key, b.initiated_ns)));
        out
    }

    /// The answer of the completed upload `id`.
    pub(crate) fn done(&self, id: &str) -> Option<Done> {
        let d = self.path(id).ok()?;
        serde_json::from_slice(&fs::read(d.join("done.json")).ok()?).ok()
    }

    /// Records the answer of upload `id` durably: from here on it is completed.
    pub(crate) fn finish(&self, id: &str, done: &Done) -> S3Result<()> {
        let bytes = serde_json::to_vec(done).expect("serializable");
        write_durable(&self.path(id)?, "done.json", self.seq.fetch_add(1, Ordering::Relaxed), &bytes).map_err(io)
    }

    /// Removes the part files of the completed upload `id` (they are not needed once its answer
    /// is recorded; a failure leaves them to the next start-up).
    pub(crate) fn remove_parts(&self, id: &str) {
        if let Ok(d) = self.path(id) {
            remove_staging(&d);
        }
    }
}

impl Drop for UploadLock<'_> {
    fn drop(&mut self) {
        let mut b = self.uploads.busy();
        let e = b.get_mut(&self.id).expect("registered");
        e.0 = false;
        e.1 -= 1;
        if e.1 == 0 {
            b.remove(&self.id);
        }
        self.uploads.busy_cv.notify_all();
    }
}

/// Removes the staged parts and temporary files of a completed upload's directory `d`.
fn remove_staging(d: &Path) {
    for ent in fs::read_dir(d).into_iter().flatten().flatten() {
        if is_staging(&ent.file_name().to_string_lossy()) {
            let _ = fs::remove_file(ent.path());
        }
    }
}
