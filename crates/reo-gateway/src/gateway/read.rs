//! The read path: bytes of an object range from flash, misses fetched from the backend one
//! whole fragment at a time and offered back to the cache (`fill` with the miss's token).

use s3s::{s3_error, S3Result};

use super::clock::now_ns;
use super::errors::backend_err;
use super::handle::Gateway;
use super::pending::cache_key;
use crate::backend::BackendError;
use crate::backend::ObjectInfo;

impl Gateway {
    /// Bytes `[start, end)` of the object described by `info` (from [`Gateway::head`]); hold
    /// [`Gateway::read_lock`] across both.
    pub fn read(&self, bucket: &str, key: &str, info: &ObjectInfo, start: u64, end: u64) -> S3Result<Vec<u8>> {
        let end = end.min(info.size);
        if start >= end {
            return Ok(Vec::new());
        }
        let ck = cache_key(bucket, key);
        let r = self
            .cache
            .get_version(ck.as_bytes(), &info.etag, (start, end), now_ns(), true)
            .map_err(|e| s3_error!(InternalError, "reading {key:?} from flash: {e}"))?;
        let mut out = Vec::with_capacity((end - start) as usize);
        let fs = self.cache.config().fragment_size;
        let meta = super::object_meta::meta_of(info);
        for p in r.pieces {
            if let Some(d) = p.data {
                d.into_bytes().for_each(|b| out.extend_from_slice(&b));
                continue;
            }
            if self.pending().map.contains_key(&ck) {
                // An unflushed object must come from flash: the backend holds an older version.
                return Err(s3_error!(InternalError, "unflushed object {key:?} is not readable from flash"));
            }
            // Fetch whole fragments so they can be cached.
            let (pend, pstart) = (p.end.min(end), p.start);
            let mut frag = pstart / fs;
            while frag * fs < pend {
                let (fstart, fend) = (frag * fs, ((frag + 1) * fs).min(info.size));
                let (bytes, binfo) = self.backend.get_range(bucket, key, fstart, fend).map_err(backend_err)?;
                self.counters.lock().backend_reads += 1;
                // (`fill` below counts the bytes as a backend read.)
                if binfo.etag != info.etag || bytes.len() as u64 != fend - fstart {
                    return Err(s3_error!(ServiceUnavailable, "{key:?} changed while it was read; retry"));
                }
                // The caller holds the key's stripe shared: a cached copy of another version stays
                // (replacing it needs the stripe exclusive; see `fetch::fill`).
                let _ = self.cache.fill_same_version(
                    ck.as_bytes(),
                    info.size,
                    frag as u32,
                    &bytes,
                    &meta,
                    r.token,
                    now_ns(),
                );
                let lo = (pstart.max(fstart) - fstart) as usize;
                let hi = (pend.min(fend) - fstart) as usize;
                out.extend_from_slice(&bytes[lo..hi]);
                frag += 1;
            }
        }
        Ok(out)
    }
}

impl Gateway {
    /// Revalidates the cached clean object `ck` whose cached info is `cached` if it is due (see
    /// the module doc); returns the info to serve, or the backend's "no such key/bucket" when
    /// another writer deleted it.
    pub(crate) fn revalidate(&self, bucket: &str, key: &str, ck: &str, cached: ObjectInfo) -> S3Result<ObjectInfo> {
        let now = now_ns();
        // While the backend is down, or before it first answered since start (it may be hung),
        // the cached copy is served without asking it.
        if !self.fetch.fresh.due(ck, now) || !self.health.is_known_up() {
            return Ok(cached);
        }
        match self.backend.head(bucket, key) {
            Ok(b) if b.etag == cached.etag && b.size == cached.size => {
                self.fetch.fresh.validated(ck, now);
                Ok(cached)
            }
            Ok(b) => {
                tracing::debug!(bucket, key, "revalidation: the backend holds another version; refetching");
                self.cache.delete(ck.as_bytes());
                Ok(b)
            }
            Err(e @ (BackendError::NoSuchKey(_) | BackendError::NoSuchBucket(_))) => {
                // Deleted by another writer: so is the cached copy.
                self.cache.delete(ck.as_bytes());
                Err(backend_err(e))
            }
            Err(e) => {
                tracing::warn!(bucket, key, "revalidation failed, serving the cached copy: {e}");
                Ok(cached)
            }
        }
    }
}
