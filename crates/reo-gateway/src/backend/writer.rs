//! [`ObjectWriter`]: an object written to a backend a piece at a time, so that neither a PUT
//! passing through the gateway (write-through, write-around) nor the flusher holds a whole
//! object in memory. [`Backend::put_stream`] opens one; [`ObjectWriter::write`] appends;
//! [`ObjectWriter::commit`] makes the object visible, atomically and durably, under the same
//! rules as [`Backend::put`]. A writer dropped uncommitted leaves the backend as it was (the
//! local backend removes its temporary file; the S3 backend aborts its multipart upload).
//!
//! The bytes written before the commit are invisible: readers see the previous object until the
//! commit, then the new one whole. The gateway relies on this to write a body as it arrives and
//! take the key's lock only for the commit.
//!
//! [`Buffered`] is the default for backends that can only take whole objects: it collects the
//! pieces and puts them at the commit (both real backends stream instead).

use std::sync::Arc;

use bytes::{Bytes, BytesMut};

use super::{BResult, Backend, BackendError, ObjectInfo};

/// See the module doc.
pub trait ObjectWriter: Send {
    /// Appends `piece` to the object.
    fn write(&mut self, piece: Bytes) -> BResult<()>;

    /// Makes the object visible with `info` (whose `size` is the bytes written and whose `etag`
    /// is their MD5, or a multipart `md5-of-md5s-N`). Returns the ETag the backend reports for
    /// the object from now on: `info.etag`, unless the ETag was unknown when the writer was
    /// opened and the backend had to fix the object's metadata before the last byte (an S3
    /// multipart upload), in which case the ETag is the backend's own (`md5-of-part-md5s-N`).
    fn commit(self: Box<Self>, info: &ObjectInfo) -> BResult<String>;

    /// The most bytes the writer holds in memory at once (counted in the gateway's memory
    /// budget while a body streams through it).
    fn buffer_limit(&self) -> usize {
        0
    }
}

/// A writer for a backend that only takes whole objects (see the module doc).
pub struct Buffered<S: Backend + ?Sized> {
    backend: Arc<S>,
    bucket: String,
    key: String,
    data: BytesMut,
}

impl<S: Backend + ?Sized> Buffered<S> {
    /// A writer of `bucket/key` that collects the pieces, then puts them whole.
    pub fn new(backend: Arc<S>, bucket: &str, key: &str) -> Buffered<S> {
        Buffered { backend, bucket: bucket.into(), key: key.into(), data: BytesMut::new() }
    }
}

impl<S: Backend + ?Sized> ObjectWriter for Buffered<S> {
    fn write(&mut self, piece: Bytes) -> BResult<()> {
        self.data.extend_from_slice(&piece);
        Ok(())
    }

    fn commit(self: Box<Self>, info: &ObjectInfo) -> BResult<String> {
        check_size(info, self.data.len() as u64)?;
        let Buffered { backend, bucket, key, data } = *self;
        backend.put_owned(&bucket, &key, data.freeze(), info)?;
        Ok(info.etag.clone())
    }

    fn buffer_limit(&self) -> usize {
        usize::MAX
    }
}

/// Refuses a commit whose `info` does not describe the `written` bytes (a caller's bug: the
/// object would be stored with another object's size).
pub(crate) fn check_size(info: &ObjectInfo, written: u64) -> BResult<()> {
    if info.size != written {
        return Err(BackendError::Invalid(format!(
            "an object of {written} bytes was committed as {} bytes",
            info.size
        )));
    }
    Ok(())
}
