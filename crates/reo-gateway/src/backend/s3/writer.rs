//! [`S3Writer`]: a streamed write to the S3 backend ([`Backend::put_stream`]). The pieces are
//! gathered into parts; an object of at most one part is sent as one PUT at the commit (its ETag
//! known by then), a larger one as a multipart upload begun when a byte follows the first part
//! and completed at the commit. Memory: about a part.
//!
//! S3 fixes an object's metadata when its multipart upload begins. If the gateway's ETag was
//! known then (the flusher's writes; a PUT whose client sent Content-MD5), it is stored as
//! `x-amz-meta-reo-etag` as for every other write. If not (a large write-through or write-around
//! PUT), the object keeps S3's own ETag, which the commit returns as the completion reported it
//! (`md5(part md5s)-N` on S3, computed by the writer if the store does not say): the client is
//! answered with the ETag the backend reports from then on, as for a multipart upload.
//!
//! An upload that is abandoned, fails or times out is aborted in the background. One whose
//! creation timed out has an id nobody learned: a lifecycle rule on the bucket that aborts
//! incomplete multipart uploads (README.md) removes such leftovers.
//!
//! [`Backend::put_stream`]: crate::backend::Backend::put_stream

use std::sync::Arc;

use bytes::{Bytes, BytesMut};
use md5::Digest;
use object_store::aws::AmazonS3;
use object_store::path::Path;
use object_store::{MultipartUpload, ObjectStore, PutMultipartOptions, PutOptions, PutPayload};
use tokio::runtime::Handle;

use super::convert::attributes;
use super::errors::map_err;
use super::settings::Deadlines;
use crate::backend::writer::check_size;
use crate::backend::{BResult, BackendError, ObjectInfo, ObjectWriter};

/// Part size of a streamed write (S3's minimum is 5 MiB), grown for objects that would
/// otherwise need more than [`MAX_PARTS`] parts.
pub const STREAM_PART: usize = 8 << 20;
/// S3's limit is 10,000 parts; the size a writer is opened with may be a little short.
const MAX_PARTS: u64 = 9_000;

/// An upload in progress, shared with the task that completes or aborts it.
type Upload = Arc<tokio::sync::Mutex<Box<dyn MultipartUpload>>>;

/// See the module doc.
pub(super) struct S3Writer {
    rt: Handle,
    store: Arc<AmazonS3>,
    path: Path,
    bucket: String,
    key: String,
    /// What was known at the open (its ETag, if known, is the object's metadata).
    opened: ObjectInfo,
    deadlines: Deadlines,
    part: usize,
    buf: BytesMut,
    upload: Option<Upload>,
    /// MD5 of each part sent, for S3's ETag of the upload.
    part_md5s: md5::Md5,
    parts: usize,
    written: u64,
}

impl S3Writer {
    /// A writer of `key` whose expected size (0: unknown) and metadata `opened` gives.
    pub(super) fn new(
        rt: Handle,
        store: Arc<AmazonS3>,
        path: Path,
        (bucket, key): (&str, &str),
        opened: &ObjectInfo,
        deadlines: Deadlines,
    ) -> S3Writer {
        let part = (opened.size.div_ceil(MAX_PARTS).div_ceil(1 << 20) << 20).max(STREAM_PART as u64) as usize;
        S3Writer {
            rt,
            store,
            path,
            bucket: bucket.into(),
            key: key.into(),
            opened: opened.clone(),
            deadlines,
            part,
            buf: BytesMut::new(),
            upload: None,
            part_md5s: md5::Md5::new(),
            parts: 0,
            written: 0,
        }
    }

    fn run<T: Send + 'static>(
        &self,
        bytes: u64,
        fut: impl std::future::Future<Output = object_store::Result<T>> + Send + 'static,
    ) -> BResult<T> {
        super::client::run_on(&self.rt, self.deadlines.transfer(bytes), fut)?
            .map_err(|e| map_err(e, &self.bucket, &self.key))
    }

    /// Sends `part` as the next part of the upload, beginning the upload first if needed.
    fn send(&mut self, part: Bytes) -> BResult<()> {
        if self.upload.is_none() {
            let (store, path) = (self.store.clone(), self.path.clone());
            let opts = PutMultipartOptions { attributes: attributes(&self.opened), ..Default::default() };
            let upload = self.run(0, async move { store.put_multipart_opts(&path, opts).await })?;
            self.upload = Some(Arc::new(tokio::sync::Mutex::new(upload)));
        }
        if self.opened.etag.is_empty() {
            self.part_md5s.update(md5::Md5::digest(&part));
        }
        self.parts += 1;
        let len = part.len() as u64;
        let upload = self.upload.clone().expect("begun above");
        self.run(len, async move {
            let sent = upload.lock().await.put_part(PutPayload::from(part));
            sent.await
        })
    }
}

impl ObjectWriter for S3Writer {
    fn write(&mut self, piece: Bytes) -> BResult<()> {
        self.written += piece.len() as u64;
        if self.buf.is_empty() {
            // Taken over without a copy when the caller hands its only reference (a whole put).
            self.buf = piece.try_into_mut().unwrap_or_else(|b| BytesMut::from(&b[..]));
        } else {
            self.buf.extend_from_slice(&piece);
        }
        // A full part is sent once more bytes follow it: an object of exactly one part is one
        // PUT at the commit.
        while self.buf.len() > self.part {
            let part = self.buf.split_to(self.part).freeze();
            self.send(part)?;
        }
        Ok(())
    }

    fn commit(mut self: Box<Self>, info: &ObjectInfo) -> BResult<String> {
        check_size(info, self.written)?;
        let Some(upload) = self.upload.clone() else {
            let (store, path) = (self.store.clone(), self.path.clone());
            let data = std::mem::take(&mut self.buf).freeze();
            let opts = PutOptions { attributes: attributes(info), ..Default::default() };
            self.run(info.size, async move { store.put_opts(&path, PutPayload::from(data), opts).await })?;
            return Ok(info.etag.clone());
        };
        if !self.opened.etag.is_empty() && self.opened.etag != info.etag {
            return Err(BackendError::Invalid(format!(
                "the write of {:?} was begun as ETag {} and committed as {}",
                self.key, self.opened.etag, info.etag
            )));
        }
        if !self.buf.is_empty() {
            let last = std::mem::take(&mut self.buf).freeze();
            self.send(last)?;
        }
        // Completed or not, the upload is the completion's now: on a failure or a timeout the
        // writer's drop aborts it (an abort after a completion is refused, harmlessly).
        let done = self.run(0, async move { upload.lock().await.complete().await })?;
        self.upload = None;
        if !self.opened.etag.is_empty() {
            return Ok(self.opened.etag.clone());
        }
        // The backend's own ETag, as it will report it; computed if it did not say.
        Ok(match done.e_tag {
            Some(e) => super::errors::normalize_etag(&e),
            None => {
                let digest = std::mem::take(&mut self.part_md5s).finalize();
                format!("{}-{}", crate::hex::hex(&digest), self.parts)
            }
        })
    }

    fn buffer_limit(&self) -> usize {
        // A part and the piece that completes it, in a buffer that may grow to twice its length.
        2 * self.part
    }
}

impl Drop for S3Writer {
    fn drop(&mut self) {
        if let Some(upload) = self.upload.take() {
            // Uncommitted or failed: its parts would be stored, and billed, until aborted.
            self.rt.spawn(async move {
                let _ = upload.lock().await.abort().await;
            });
        }
    }
}
