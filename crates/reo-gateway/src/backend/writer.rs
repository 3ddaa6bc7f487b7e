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

/// The behaviour every backend's streamed writes share, run against each backend (the local
/// one in `backend::tests`, the S3 one against moto): bucket `bkt` must exist.
#[cfg(test)]
pub(crate) fn conformance(b: Arc<dyn Backend>) {
    let info = |data: &[u8], etag: &str| ObjectInfo {
        size: data.len() as u64,
        etag: etag.into(),
        content_type: "text/x-streamed".into(),
        user_meta: [("colour".to_string(), "green".to_string())].into(),
        ..Default::default()
    };
    let stream = |key: &str, data: &[u8], opened: &ObjectInfo, piece: usize| {
        let mut w = b.clone().put_stream("bkt", key, opened).unwrap();
        for p in data.chunks(piece) {
            w.write(Bytes::copy_from_slice(p)).unwrap();
        }
        w
    };
    // Small, ETag unknown when opened: the ETag given at the commit.
    let small: Vec<u8> = (0..100_000u32).map(|i| (i % 241) as u8).collect();
    let md5 = crate::keys::md5_hex(&small);
    let w = stream("small", &small, &info(&[], ""), 30_000);
    assert_eq!(w.commit(&info(&small, &md5)).unwrap(), md5);
    let (got, i) = b.get_range("bkt", "small", 0, u64::MAX).unwrap();
    assert_eq!((got == small, i.etag.as_str(), i.content_type.as_str()), (true, md5.as_str(), "text/x-streamed"));
    assert_eq!(i.user_meta.get("colour").map(String::as_str), Some("green"));
    // Large (several S3 parts), ETag unknown when opened: the ETag the commit returns is the
    // one the backend reports.
    let large: Vec<u8> = (0..(17 << 20) + 12_345u32).map(|i| (i % 251) as u8).collect();
    let md5 = crate::keys::md5_hex(&large);
    let w = stream("large", &large, &info(&large, ""), 1 << 20);
    let etag = w.commit(&info(&large, &md5)).unwrap();
    assert_eq!(b.head("bkt", "large").unwrap().etag, etag);
    assert_eq!(
        b.get_range("bkt", "large", (16 << 20) - 5, (16 << 20) + 5).unwrap().0,
        &large[(16 << 20) - 5..(16 << 20) + 5]
    );
    // Large, ETag known when opened (the flusher's writes): that ETag.
    let w = stream("large", &large, &info(&large, "0123abcd-3"), 3 << 20);
    assert_eq!(w.commit(&info(&large, "0123abcd-3")).unwrap(), "0123abcd-3");
    assert_eq!(b.head("bkt", "large").unwrap().etag, "0123abcd-3");
    // Abandoned, small or large: the previous object stays whole.
    drop(stream("small", b"not committed", &info(&[], ""), 4));
    drop(stream("large", &small.repeat(100), &info(&[], ""), 1 << 20));
    assert_eq!(b.get_range("bkt", "small", 0, u64::MAX).unwrap().0, small);
    assert_eq!(b.head("bkt", "large").unwrap().size, large.len() as u64);
    // A commit that misstates the size is refused.
    let w = stream("small", b"four", &info(&[], ""), 4);
    assert!(matches!(w.commit(&info(b"five!", "e")), Err(BackendError::Invalid(_))));
    assert_eq!(b.get_range("bkt", "small", 0, u64::MAX).unwrap().0, small);
    // A missing bucket is refused when the writer is opened.
    assert!(matches!(b.clone().put_stream("nobucket", "k", &info(&[], "")), Err(BackendError::NoSuchBucket(_))));
    for k in ["small", "large"] {
        b.delete("bkt", k).unwrap();
    }
}
