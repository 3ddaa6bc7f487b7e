//! [`LocalBackend`]: buckets are directories under a root, objects are plain files (named by
//! [`crate::keys::key_path`]) with a JSON sidecar (`m.` file) holding size, ETag, content type,
//! user metadata and mtime. Writes are atomic and durable: temp file, fsync, rename, fsync of the
//! directory — data first, then its sidecar. A reader that finds no sidecar, or one whose size
//! disagrees with the data file (a crash between the two renames), derives the info from the
//! data file itself (MD5 recomputed), so the ETag always matches the bytes served.
//!
//! The root is created by [`LocalBackend::open`] only (`reo serve` opens it so on a fresh data
//! directory or when it exists, else attaches with [`LocalBackend::attach`]) and never recreated:
//! if it disappears (an unmounted or renamed volume), every operation fails with
//! [`BackendError::Io`] — the backend is down, not empty — and directories are created only
//! below an existing bucket directory.
//!
//! Backend hints become `posix_fadvise` on the data files (see [`super::advice`]).
//!
//! Streamed writes ([`Backend::put_stream`]) go to a temporary file in the bucket's `t.writing`
//! directory, renamed into place at the commit (what a crash leaves there is removed when the
//! backend is next opened); a whole-object [`Backend::put`] is the same write with its
//! temporary file beside the object's.
//!
//! Streamed reads ([`Backend::get_stream`]) open the data file first and read it in
//! [`STREAM_CHUNK`] pieces as the caller pulls them (on its blocking thread); an overwrite renames
//! a new file into place, so the open file keeps serving the version it was opened at.

use std::fs::{self, File, OpenOptions};
use std::io::{Read, Seek, SeekFrom, Write};
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;
use std::time::{SystemTime, UNIX_EPOCH};

use bytes::Bytes;

use super::advice::{self, Address, Advice, AdviceReport};
use super::key_index::KeyIndex;
use super::{BResult, Backend, BackendError, BucketInfo, ChunkIter, ListEntry, ObjectInfo, ObjectWriter};
use crate::keys::{decode_segment, key_path, validate_bucket, validate_key};

/// The bucket's own metadata file (creation time) inside its directory.
const BUCKET_META: &str = "b.bucket";

/// The directory of a bucket's objects being streamed in ([`LocalWriter`]): a name no key maps
/// to (listings skip it), emptied when the backend is opened.
const WRITING: &str = "t.writing";

/// Where a [`LocalWriter`]'s temporary file is.
#[derive(Clone, Copy, PartialEq, Eq)]
enum Temp {
    /// Beside the object's file: a whole-object put, written at once. The rename stays within
    /// one directory, markedly cheaper than one out of [`WRITING`] (two directories changed)
    /// at a put per small object, the flusher's usual write; a crash in between leaves at most
    /// one object's `t.*` file.
    Beside,
    /// In the bucket's [`WRITING`] directory: a streamed write, open as long as its body takes,
    /// whose leftovers after a crash are swept at the next open.
    Writing,
}

/// Bytes per chunk of a streamed read.
pub const STREAM_CHUNK: usize = 1 << 20;

/// The chunks of `[pos, end)` of an open file (see [`Backend::get_stream`]).
struct FileChunks {
    file: File,
    path: PathBuf,
    pos: u64,
    end: u64,
}

impl Iterator for FileChunks {
    type Item = BResult<Bytes>;

    fn next(&mut self) -> Option<BResult<Bytes>> {
        use std::os::unix::fs::FileExt;
        if self.pos >= self.end {
            return None;
        }
        let n = (self.end - self.pos).min(STREAM_CHUNK as u64) as usize;
        let mut buf = vec![0u8; n];
        match self.file.read_exact_at(&mut buf, self.pos) {
            Ok(()) => {
                self.pos += n as u64;
                Some(Ok(Bytes::from(buf)))
            }
            Err(e) => {
                self.pos = self.end; // the stream ends with this error
                Some(Err(io_err("read", &self.path, e)))
            }
        }
    }
}

/// A directory of buckets.
pub struct LocalBackend {
    root: PathBuf,
    /// Names this process's temporary files apart from any earlier process's.
    nonce: u64,
    tmp_seq: AtomicU64,
    /// The keys of listed buckets in order ([`KeyIndex`]).
    keys: Arc<KeyIndex>,
    /// Other processes write the directory too (the gateways of a cluster): no key index is
    /// trusted across listings, and no other process's temporary files are swept.
    shared: bool,
}

fn io_err(what: &str, p: &Path, e: std::io::Error) -> BackendError {
    BackendError::Io(format!("{what} {}: {e}", p.display()))
}

pub(crate) fn now_ns() -> u64 {
    SystemTime::now().duration_since(UNIX_EPOCH).map(|d| d.as_nanos() as u64).unwrap_or(0)
}

fn mtime_ns(m: &fs::Metadata) -> u64 {
    m.modified().ok().and_then(|t| t.duration_since(UNIX_EPOCH).ok()).map(|d| d.as_nanos() as u64).unwrap_or(0)
}

fn sync_dir(p: &Path) -> BResult<()> {
    File::open(p).and_then(|f| f.sync_all()).map_err(|e| io_err("fsync directory", p, e))
}

/// Writes `bytes` to `path` atomically and durably through the temporary file `tmp`.
fn write_atomic_via(tmp: &Path, path: &Path, bytes: &[u8]) -> BResult<()> {
    let r = (|| {
        let mut f = OpenOptions::new().write(true).create_new(true).open(tmp)?;
        f.write_all(bytes)?;
        f.sync_all()?;
        fs::rename(tmp, path)
    })();
    if let Err(e) = r {
        let _ = fs::remove_file(tmp);
        return Err(io_err("write", path, e));
    }
    sync_dir(path.parent().expect("object paths have a parent"))
}

/// An object of the local backend being written ([`Backend::put_stream`], and [`Backend::put`]
/// through it): a temporary file ([`Temp`]) renamed over the object's at the commit (data
/// first, then the sidecar). Dropped uncommitted, or if the commit
/// fails before the rename, it removes the temporary file.
struct LocalWriter {
    bucket_dir: PathBuf,
    temp: Temp,
    /// Open until the commit.
    file: Option<File>,
    tmp: PathBuf,
    meta_tmp: PathBuf,
    data: PathBuf,
    meta: PathBuf,
    bucket: String,
    key: String,
    keys: Arc<KeyIndex>,
    written: u64,
}

impl LocalWriter {
    fn append(&mut self, bytes: &[u8]) -> BResult<()> {
        let f = self.file.as_mut().expect("open until committed");
        f.write_all(bytes).map_err(|e| io_err("write", &self.tmp, e))?;
        self.written += bytes.len() as u64;
        Ok(())
    }

    fn finish(mut self, info: &ObjectInfo) -> BResult<()> {
        super::writer::check_size(info, self.written)?;
        let dir = self.data.parent().expect("has a parent");
        if self.temp == Temp::Writing {
            LocalBackend::create_below(&self.bucket_dir, dir)?;
        }
        let f = self.file.as_ref().expect("open until committed");
        f.sync_all().and_then(|_| fs::rename(&self.tmp, &self.data)).map_err(|e| io_err("write", &self.data, e))?;
        self.file = None; // renamed: nothing to remove
        sync_dir(dir)?;
        // Listed from here: a reader derives the info of data without a sidecar.
        self.keys.insert(&self.bucket, &self.key);
        let meta = serde_json::to_vec(info).expect("serializable");
        write_atomic_via(&self.meta_tmp, &self.meta, &meta)
    }
}

impl ObjectWriter for LocalWriter {
    fn write(&mut self, piece: Bytes) -> BResult<()> {
        self.append(&piece)
    }

    fn commit(self: Box<Self>, info: &ObjectInfo) -> BResult<String> {
        self.finish(info)?;
        Ok(info.etag.clone())
    }
}

impl Drop for LocalWriter {
    fn drop(&mut self) {
        if self.file.take().is_some() {
            let _ = fs::remove_file(&self.tmp);
        }
    }
}

impl LocalBackend {
    /// The backend rooted at `root`, not created if missing: it is down (every operation an I/O
    /// error) until the directory appears.
    pub fn attach(root: &Path) -> LocalBackend {
        Self::attach_with(root, false)
    }

    fn attach_with(root: &Path, shared: bool) -> LocalBackend {
        let nonce = now_ns() ^ (u64::from(std::process::id()) << 40);
        let b =
            LocalBackend { root: root.to_path_buf(), nonce, tmp_seq: AtomicU64::new(0), keys: Arc::default(), shared };
        if !shared {
            b.sweep();
        }
        b
    }

    /// Opens (creating if needed) the backend rooted at `root`.
    pub fn open(root: &Path) -> BResult<LocalBackend> {
        fs::create_dir_all(root).map_err(|e| io_err("create", root, e))?;
        Ok(Self::attach(root))
    }

    /// [`LocalBackend::open`] for a directory other processes write too (the gateways of a
    /// cluster over one local directory): every listing walks the bucket afresh (it costs in
    /// proportion to the bucket, not the page), and temporary files of unfinished writes are
    /// left where they are (they may be another process's, under way).
    pub fn open_shared(root: &Path) -> BResult<LocalBackend> {
        fs::create_dir_all(root).map_err(|e| io_err("create", root, e))?;
        Ok(Self::attach_with(root, true))
    }

    /// [`LocalBackend::attach`] for a directory other processes write too
    /// ([`LocalBackend::open_shared`]).
    pub fn attach_shared(root: &Path) -> LocalBackend {
        Self::attach_with(root, true)
    }

    /// Removes the temporary files of writes a crash or a kill cut short (each bucket's
    /// [`WRITING`] directory): this process is the directory's only writer.
    fn sweep(&self) {
        let Ok(rd) = fs::read_dir(&self.root) else { return };
        for ent in rd.flatten() {
            let writing = ent.path().join(WRITING);
            if writing.is_dir() {
                if let Err(e) = fs::remove_dir_all(&writing) {
                    tracing::warn!("cannot remove the unfinished writes in {}: {e}", writing.display());
                }
            }
        }
    }

    fn bucket_dir(&self, bucket: &str) -> BResult<PathBuf> {
        validate_bucket(bucket).map_err(BackendError::from)?;
        self.check_root()?;
        Ok(self.root.join(bucket))
    }

    /// `Io` if the root directory is gone (the backend is down, not empty).
    fn check_root(&self) -> BResult<()> {
        if !self.root.is_dir() {
            return Err(BackendError::Io(format!(
                "backend directory {} is unavailable (missing or not a directory)",
                self.root.display()
            )));
        }
        Ok(())
    }

    /// Creates `dir` and its missing parents down from `base`, which must exist (never above it).
    fn create_below(base: &Path, dir: &Path) -> BResult<()> {
        let mut p = base.to_path_buf();
        for c in dir
            .strip_prefix(base)
            .map_err(|_| BackendError::Invalid(format!("{} is outside {}", dir.display(), base.display())))?
            .components()
        {
            p.push(c);
            match fs::create_dir(&p) {
                Ok(()) => {}
                Err(e) if e.kind() == std::io::ErrorKind::AlreadyExists => {}
                Err(e) => return Err(io_err("create", &p, e)),
            }
        }
        Ok(())
    }

    fn existing_bucket(&self, bucket: &str) -> BResult<PathBuf> {
        let d = self.bucket_dir(bucket)?;
        if d.join(BUCKET_META).is_file() {
            Ok(d)
        } else {
            Err(BackendError::NoSuchBucket(bucket.into()))
        }
    }

    fn paths(&self, bucket: &str, key: &str) -> BResult<(PathBuf, PathBuf)> {
        validate_key(key).map_err(BackendError::from)?;
        let dir = self.existing_bucket(bucket)?;
        let mut data = dir.clone();
        let mut meta = dir;
        for c in key_path(key, 'o') {
            data.push(c);
        }
        for c in key_path(key, 'm') {
            meta.push(c);
        }
        Ok((data, meta))
    }

    /// A temporary file's path beside `path` (named so that listings skip it).
    fn tmp_beside(&self, path: &Path) -> PathBuf {
        let dir = path.parent().expect("object paths have a parent");
        dir.join(format!("t.{}", self.tmp_name()))
    }

    /// A file name no other temporary file of this or an earlier process has.
    fn tmp_name(&self) -> String {
        format!("{:x}.{}", self.nonce, self.tmp_seq.fetch_add(1, Ordering::Relaxed))
    }

    /// Writes `bytes` to `path` atomically and durably.
    fn write_atomic(&self, path: &Path, bytes: &[u8]) -> BResult<()> {
        write_atomic_via(&self.tmp_beside(path), path, bytes)
    }

    /// A writer of `key` ([`LocalWriter`]) whose temporary file is created where `temp` says.
    fn writer(&self, bucket: &str, key: &str, temp: Temp) -> BResult<LocalWriter> {
        let (data, meta) = self.paths(bucket, key)?;
        let bucket_dir = self.root.join(bucket);
        let tmp = match temp {
            Temp::Beside => {
                Self::create_below(&bucket_dir, data.parent().expect("has a parent"))?;
                self.tmp_beside(&data)
            }
            Temp::Writing => {
                let writing = bucket_dir.join(WRITING);
                Self::create_below(&bucket_dir, &writing)?;
                writing.join(self.tmp_name())
            }
        };
        let meta_tmp = self.tmp_beside(&meta);
        let file = OpenOptions::new().write(true).create_new(true).open(&tmp).map_err(|e| io_err("create", &tmp, e))?;
        Ok(LocalWriter {
            bucket_dir,
            temp,
            file: Some(file),
            tmp,
            meta_tmp,
            data,
            meta,
            bucket: bucket.into(),
            key: key.into(),
            keys: self.keys.clone(),
            written: 0,
        })
    }

    /// Info of the object whose data file is `data` (see the module doc for the fallback).
    fn read_info(&self, data: &Path, meta: &Path, key: &str) -> BResult<ObjectInfo> {
        let m = match fs::metadata(data) {
            Ok(m) if m.is_file() => m,
            Ok(_) => return Err(BackendError::NoSuchKey(key.into())),
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Err(BackendError::NoSuchKey(key.into())),
            Err(e) => return Err(io_err("stat", data, e)),
        };
        if let Ok(bytes) = fs::read(meta) {
            if let Ok(info) = serde_json::from_slice::<ObjectInfo>(&bytes) {
                if info.size == m.len() {
                    return Ok(info);
                }
            }
        }
        let bytes = fs::read(data).map_err(|e| io_err("read", data, e))?;
        Ok(ObjectInfo {
            size: m.len(),
            etag: crate::keys::md5_hex(&bytes),
            content_type: "binary/octet-stream".into(),
            user_meta: Default::default(),
            mtime_ns: mtime_ns(&m),
            system: Default::default(),
        })
    }

    /// Collects the keys under `dir` (whose key prefix is `kprefix`, `pending` an unfinished
    /// chunked segment) that start with `prefix` and sort after `after`, unordered.
    /// Directories whose keys all sort before `after` are skipped.
    fn walk(&self, dir: &Path, kprefix: &str, pending: &str, q: &(&str, &str), out: &mut Vec<String>) -> BResult<()> {
        let (prefix, after) = *q;
        let rd = match fs::read_dir(dir) {
            Ok(rd) => rd,
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(()),
            Err(e) => return Err(io_err("list", dir, e)),
        };
        for ent in rd {
            let ent = ent.map_err(|e| io_err("list", dir, e))?;
            let name = ent.file_name();
            let Some(name) = name.to_str() else { continue };
            let Some((kind, enc)) = name.split_once('.') else { continue };
            let joined = format!("{pending}{enc}");
            let path = ent.path();
            // Keys under prefix `k` can match: they share the listing prefix and are not all
            // before `after` (a prefix sorting before `after` that `after` does not extend).
            let relevant =
                |k: &str| (k.starts_with(prefix) || prefix.starts_with(k)) && (k > after || after.starts_with(k));
            match kind {
                "o" => {
                    let Some(seg) = decode_segment(&joined) else { continue };
                    let key = format!("{kprefix}{seg}");
                    if key.starts_with(prefix) && key.as_str() > after {
                        out.push(key);
                    }
                }
                "d" => {
                    let Some(seg) = decode_segment(&joined) else { continue };
                    let kp = format!("{kprefix}{seg}/");
                    if relevant(&kp) {
                        self.walk(&path, &kp, "", q, out)?;
                    }
                }
                "c" => {
                    // A partial segment: its decoded form is a prefix of the keys below.
                    let partial = decode_segment(&joined).unwrap_or_default();
                    if relevant(&format!("{kprefix}{partial}")) || partial.is_empty() {
                        self.walk(&path, kprefix, &joined, q, out)?;
                    }
                }
                _ => {}
            }
        }
        Ok(())
    }

    /// Removes now-empty directories from `dir` up to (not including) the bucket directory.
    fn prune(&self, bucket_dir: &Path, mut dir: &Path) {
        while dir != bucket_dir && dir.starts_with(bucket_dir) {
            if fs::remove_dir(dir).is_err() {
                break;
            }
            match dir.parent() {
                Some(p) => dir = p,
                None => break,
            }
        }
    }
}

impl Backend for LocalBackend {
    fn list_buckets(&self) -> BResult<Vec<BucketInfo>> {
        let mut out = Vec::new();
        let rd = fs::read_dir(&self.root).map_err(|e| io_err("list", &self.root, e))?;
        for ent in rd.flatten() {
            let Some(name) = ent.file_name().to_str().map(str::to_owned) else { continue };
            if validate_bucket(&name).is_ok() {
                if let Ok(b) = self.head_bucket(&name) {
                    out.push(b);
                }
            }
        }
        out.sort_by(|a, b| a.name.cmp(&b.name));
        Ok(out)
    }

    /// The root is a directory that can be read (whether it takes writes is the flusher's to
    /// find out: a probe does not write).
    fn probe(&self) -> BResult<()> {
        self.check_root()?;
        fs::read_dir(&self.root).map(|_| ()).map_err(|e| io_err("probe", &self.root, e))
    }

    fn create_bucket(&self, bucket: &str) -> BResult<()> {
        let d = self.bucket_dir(bucket)?;
        if d.join(BUCKET_META).is_file() {
            return Err(BackendError::BucketExists(bucket.into()));
        }
        Self::create_below(&self.root, &d)?;
        self.write_atomic(&d.join(BUCKET_META), now_ns().to_string().as_bytes())?;
        sync_dir(&self.root)
    }

    fn head_bucket(&self, bucket: &str) -> BResult<BucketInfo> {
        let d = self.existing_bucket(bucket)?;
        let created_ns = fs::read_to_string(d.join(BUCKET_META)).ok().and_then(|s| s.trim().parse().ok()).unwrap_or(0);
        Ok(BucketInfo { name: bucket.into(), created_ns })
    }

    fn delete_bucket(&self, bucket: &str) -> BResult<()> {
        let d = self.existing_bucket(bucket)?;
        if !self.list(bucket, "", "", 1)?.is_empty() {
            return Err(BackendError::BucketNotEmpty(bucket.into()));
        }
        fs::remove_dir_all(&d).map_err(|e| io_err("remove", &d, e))?;
        self.keys.forget(bucket);
        sync_dir(&self.root)
    }

    fn put(&self, bucket: &str, key: &str, data: &[u8], info: &ObjectInfo) -> BResult<()> {
        let mut w = self.writer(bucket, key, Temp::Beside)?;
        w.append(data)?;
        w.finish(info)
    }

    fn put_stream(self: Arc<Self>, bucket: &str, key: &str, _info: &ObjectInfo) -> BResult<Box<dyn ObjectWriter>> {
        Ok(Box::new(self.writer(bucket, key, Temp::Writing)?))
    }

    fn head(&self, bucket: &str, key: &str) -> BResult<ObjectInfo> {
        let (d, m) = self.paths(bucket, key)?;
        self.read_info(&d, &m, key)
    }

    fn get_range(&self, bucket: &str, key: &str, start: u64, end: u64) -> BResult<(Vec<u8>, ObjectInfo)> {
        let (d, m) = self.paths(bucket, key)?;
        let info = self.read_info(&d, &m, key)?;
        let end = end.min(info.size);
        let start = start.min(end);
        let mut f = File::open(&d).map_err(|e| match e.kind() {
            std::io::ErrorKind::NotFound => BackendError::NoSuchKey(key.into()),
            _ => io_err("open", &d, e),
        })?;
        let mut buf = vec![0u8; (end - start) as usize];
        f.seek(SeekFrom::Start(start)).and_then(|_| f.read_exact(&mut buf)).map_err(|e| io_err("read", &d, e))?;
        Ok((buf, info))
    }

    fn get_stream(&self, bucket: &str, key: &str, start: u64, end: u64) -> BResult<(ObjectInfo, ChunkIter)> {
        let (d, m) = self.paths(bucket, key)?;
        // The file first: its length tells whether the sidecar read next describes it (an
        // overwrite may land in between; then the caller sees a mismatch, never mixed bytes).
        let file = File::open(&d).map_err(|e| match e.kind() {
            std::io::ErrorKind::NotFound => BackendError::NoSuchKey(key.into()),
            _ => io_err("open", &d, e),
        })?;
        let len = file.metadata().map_err(|e| io_err("stat", &d, e))?.len();
        let info = self.read_info(&d, &m, key)?;
        if info.size != len {
            return Err(BackendError::Io(format!("{key:?} was overwritten while it was opened; retry")));
        }
        let end = end.min(len);
        let pos = start.min(end);
        Ok((info, Box::new(FileChunks { file, path: d, pos, end })))
    }

    fn delete(&self, bucket: &str, key: &str) -> BResult<()> {
        let (d, m) = self.paths(bucket, key)?;
        for p in [&d, &m] {
            match fs::remove_file(p) {
                Ok(()) => {}
                Err(e) if e.kind() == std::io::ErrorKind::NotFound => {}
                Err(e) => return Err(io_err("remove", p, e)),
            }
        }
        self.keys.remove(bucket, key);
        let dir = d.parent().expect("has a parent");
        let _ = sync_dir(dir);
        self.prune(&self.root.join(bucket), dir);
        Ok(())
    }

    fn list(&self, bucket: &str, prefix: &str, after: &str, limit: usize) -> BResult<Vec<ListEntry>> {
        let d = self.existing_bucket(bucket)?;
        let walk = || {
            let mut found = Vec::new();
            self.walk(&d, "", "", &("", ""), &mut found)?;
            Ok(found.into_iter().collect())
        };
        if self.shared {
            // Another process may have written or deleted keys since the last listing.
            self.keys.forget(bucket);
        }
        let mut out = Vec::with_capacity(limit.min(1024));
        let mut cursor = after.to_string();
        // A page is short only at the end of the listing (the caller reads a short page as its
        // end): an indexed key found gone is dropped from the index and the page filled on.
        loop {
            let want = limit - out.len();
            let keys = self.keys.page(bucket, prefix, &cursor, want, walk)?;
            let end = keys.len() < want;
            for key in keys {
                let (data, meta) = self.paths(bucket, &key)?;
                match self.read_info(&data, &meta, &key) {
                    Ok(info) => out.push(ListEntry { key: key.clone(), info }),
                    // Deleted meanwhile, or by another process.
                    Err(BackendError::NoSuchKey(_)) => self.keys.remove(bucket, &key),
                    Err(e) => return Err(e),
                }
                cursor = key;
            }
            if end || out.len() >= limit {
                return Ok(out);
            }
        }
    }

    fn advise(&self, bucket: &str, address: &Address, advice: Advice) -> BResult<AdviceReport> {
        let targets = advice::resolve(self, bucket, address)?;
        let (name, flag) = match advice {
            Advice::WillNeed | Advice::Pin => ("posix_fadvise(WILLNEED)", libc::POSIX_FADV_WILLNEED),
            Advice::DontNeed => ("posix_fadvise(DONTNEED)", libc::POSIX_FADV_DONTNEED),
            Advice::Unpin => return Ok(advice::report("nothing (the page cache holds no pins)", &targets)),
        };
        for t in &targets {
            let (data, _) = self.paths(bucket, &t.key)?;
            let f = match File::open(&data) {
                Ok(f) => f,
                Err(e) if e.kind() == std::io::ErrorKind::NotFound => {
                    return Err(BackendError::NoSuchKey(t.key.clone()))
                }
                Err(e) => return Err(io_err("open", &data, e)),
            };
            if t.end > t.start {
                use std::os::fd::AsRawFd;
                // SAFETY: a valid open descriptor; posix_fadvise only advises the kernel.
                let r = unsafe {
                    libc::posix_fadvise(f.as_raw_fd(), t.start as libc::off_t, (t.end - t.start) as libc::off_t, flag)
                };
                if r != 0 {
                    return Err(io_err(name, &data, std::io::Error::from_raw_os_error(r)));
                }
            }
        }
        Ok(advice::report(name, &targets))
    }
}
