//! Multipart uploads, staged in `<state>/uploads/<id>/`: `upload.json` (bucket, key, content
//! type, user metadata, start time) and one file per part (`part-NNNNN`, its MD5 in
//! `part-NNNNN.md5`). Completion concatenates the listed parts, stores the object through the
//! normal write path with ETag `md5(part md5s)-N`, and leaves `done.json` behind so a repeated
//! CompleteMultipartUpload answers the same (as AWS does) instead of failing; answers older than a
//! day are removed at start-up. Parts are fsync'ed before UploadPart answers.

use std::collections::BTreeMap;
use std::fs;
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicU64, Ordering};

use s3s::{s3_error, S3Result};
use serde::{Deserialize, Serialize};

use super::{now_ns, Gateway};
use crate::backend::ObjectInfo;

/// S3's minimum size of every part but the last.
pub const MIN_PART: u64 = 5 << 20;
pub const MAX_PARTS: i32 = 10_000;

#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct Upload {
    pub id: String,
    pub bucket: String,
    pub key: String,
    pub content_type: String,
    pub user_meta: BTreeMap<String, String>,
    pub initiated_ns: u64,
}

/// A part as listed.
#[derive(Debug, Clone)]
pub struct PartInfo {
    pub number: i32,
    pub etag: String,
    pub size: u64,
    pub mtime_ns: u64,
}

pub struct Uploads {
    dir: PathBuf,
    seq: AtomicU64,
}

fn io(e: std::io::Error) -> s3s::S3Error {
    s3_error!(InternalError, "multipart staging: {e}")
}

impl Uploads {
    /// Opens the staging directory, removing the answers of uploads completed over a day ago.
    pub fn open(dir: &Path) -> std::io::Result<Uploads> {
        fs::create_dir_all(dir)?;
        for ent in fs::read_dir(dir)?.flatten() {
            let done = ent.path().join("done.json");
            let old = fs::metadata(&done).and_then(|m| m.modified()).ok().and_then(|t| t.elapsed().ok());
            if old.is_some_and(|age| age > std::time::Duration::from_secs(86_400)) {
                let _ = fs::remove_dir_all(ent.path());
            }
        }
        Ok(Uploads { dir: dir.to_path_buf(), seq: AtomicU64::new(0) })
    }

    fn path(&self, id: &str) -> S3Result<PathBuf> {
        if id.is_empty() || !id.bytes().all(|b| b.is_ascii_alphanumeric()) {
            return Err(s3_error!(NoSuchUpload, "upload id {id:?} is not one of ours"));
        }
        Ok(self.dir.join(id))
    }

    pub fn create(
        &self,
        bucket: &str,
        key: &str,
        content_type: String,
        user_meta: BTreeMap<String, String>,
    ) -> S3Result<String> {
        let id = format!("{:x}{:x}", now_ns(), self.seq.fetch_add(1, Ordering::Relaxed));
        let d = self.path(&id)?;
        fs::create_dir_all(&d).map_err(io)?;
        let u = Upload {
            id: id.clone(),
            bucket: bucket.into(),
            key: key.into(),
            content_type,
            user_meta,
            initiated_ns: now_ns(),
        };
        fs::write(d.join("upload.json"), serde_json::to_vec(&u).expect("serializable")).map_err(io)?;
        Ok(id)
    }

    /// The upload `id` of `bucket/key`, if it is still open.
    pub fn get(&self, bucket: &str, key: &str, id: &str) -> S3Result<Upload> {
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

    pub fn put_part(&self, u: &Upload, n: i32, data: &[u8]) -> S3Result<String> {
        if !(1..=MAX_PARTS).contains(&n) {
            return Err(s3_error!(InvalidArgument, "part number {n} is outside 1..=10000"));
        }
        let d = self.path(&u.id)?;
        let etag = crate::keys::md5_hex(data);
        let tmp = d.join(format!("tmp-{n}-{}", self.seq.fetch_add(1, Ordering::Relaxed)));
        {
            use std::io::Write;
            let mut f = fs::File::create(&tmp).map_err(io)?;
            f.write_all(data).and_then(|_| f.sync_all()).map_err(io)?;
        }
        fs::write(d.join(format!("part-{n:05}.md5")), &etag).map_err(io)?;
        fs::rename(&tmp, d.join(format!("part-{n:05}"))).map_err(io)?;
        Ok(etag)
    }

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
            out.push(PartInfo { number, etag, size: m.len(), mtime_ns });
        }
        out.sort_by_key(|p| p.number);
        Ok(out)
    }

    pub fn abort(&self, u: &Upload) -> S3Result<()> {
        fs::remove_dir_all(self.path(&u.id)?).map_err(io)
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

    fn done(&self, id: &str) -> Option<ObjectInfo> {
        let d = self.path(id).ok()?;
        serde_json::from_slice(&fs::read(d.join("done.json")).ok()?).ok()
    }
}

impl Gateway {
    /// Completes upload `id` with the listed (number, etag) parts; repeating a completed
    /// upload returns the same ETag.
    /// The assembled object may not exceed `max_object` bytes (it is assembled in memory).
    pub fn complete_upload(
        &self,
        bucket: &str,
        key: &str,
        id: &str,
        listed: &[(i32, String)],
        max_object: u64,
    ) -> S3Result<ObjectInfo> {
        let u = self.uploads.get(bucket, key, id)?;
        if let Some(info) = self.uploads.done(id) {
            return Ok(info);
        }
        if listed.is_empty() {
            return Err(s3_error!(MalformedXML, "CompleteMultipartUpload lists no parts"));
        }
        let have: BTreeMap<i32, PartInfo> = self.uploads.parts(&u)?.into_iter().map(|p| (p.number, p)).collect();
        let total: u64 = listed.iter().filter_map(|(n, _)| have.get(n)).map(|p| p.size).sum();
        if total > max_object {
            return Err(s3_error!(
                EntityTooLarge,
                "the parts add up to {total} bytes; this gateway's object limit is {max_object} (--max-body-mib)"
            ));
        }
        let d = self.uploads.path(id)?;
        let mut data = Vec::with_capacity(total as usize);
        let mut md5s = Vec::new();
        let mut prev = 0;
        for (i, (n, etag)) in listed.iter().enumerate() {
            if *n <= prev {
                return Err(s3_error!(InvalidPartOrder, "parts must be listed in ascending order"));
            }
            prev = *n;
            let p = have.get(n).filter(|p| p.etag == etag.trim_matches('"'));
            let Some(p) = p else {
                return Err(s3_error!(InvalidPart, "part {n} was not uploaded or its ETag differs"));
            };
            if i + 1 < listed.len() && p.size < MIN_PART {
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
        let etag = format!("{}-{}", crate::keys::md5_hex(&md5s), listed.len());
        let info = ObjectInfo {
            etag,
            content_type: u.content_type.clone(),
            user_meta: u.user_meta.clone(),
            ..Default::default()
        };
        let info = self.put(bucket, key, &data, info)?;
        // Keep only the answer for repeats.
        for p in have.values() {
            let _ = fs::remove_file(d.join(format!("part-{:05}", p.number)));
            let _ = fs::remove_file(d.join(format!("part-{:05}.md5", p.number)));
        }
        fs::write(d.join("done.json"), serde_json::to_vec(&info).expect("serializable")).map_err(io)?;
        Ok(info)
    }
}
