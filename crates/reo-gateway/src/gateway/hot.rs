//! The hot path of GET and HEAD: what the async task that received a request can answer by
//! itself, without a hand-off to the blocking pool — an object whose metadata is in DRAM (its
//! unflushed write, or its cached blob header) and, for a GET, whose bytes are in the memory
//! tier, or a small object whose bytes flash holds. Each step only *tries*: a stripe or the
//! pending map held by someone else, a revalidation due (a backend call), a part number (the
//! part table), or bytes neither in memory nor small enough to read here make it give up with
//! `None`, and the caller takes the blocking path, which gives the same answer by waiting. A task
//! never waits on the backend here (a fragment found missing becomes a fetch the body streams,
//! as on the blocking path) and takes locks only for as long as a lookup.
//!
//! A small flash hit (at most [`HOT_FLASH_MAX`] bytes in one fragment) is read on the task's
//! worker thread, its device reads included (`Cache::get_version_on_caller`): one blocking device
//! read instead of a hand-off to the blocking pool and another to the device's read lane. At most
//! one fewer than the runtime's workers read at once ([`super::caller_reads`]); the others take
//! the blocking path, and so does every flash hit while the cache's lock is taken, a recompute of
//! its hot class is due, dedup is on, or a device is slow to answer (such a read cannot hedge).

use std::collections::VecDeque;

use parking_lot::RwLockReadGuard;
use s3s::{s3_error, S3Result};

use super::clock::now_ns;
use super::handle::Gateway;
use super::pending::cache_key;
use super::stream::{ReadPlan, Segment};
use crate::backend::ObjectInfo;

/// One key's reads on the hot path, under its stripe held shared (as [`Gateway::read_lock`]
/// holds it for the blocking path): no write of the key lands while it lives.
pub struct HotRead<'a> {
    gw: &'a Gateway,
    /// The cache key, `bucket/key`, made once for every step.
    ck: String,
    /// Where the object key starts in `ck`.
    key_at: usize,
    _stripe: RwLockReadGuard<'a, ()>,
}

impl Gateway {
    /// The hot path of `bucket/key`, if no writer holds or waits for its stripe now.
    pub fn try_hot(&self, bucket: &str, key: &str) -> Option<HotRead<'_>> {
        let ck = cache_key(bucket, key);
        let stripe = self.stripes.try_shared(&ck)?;
        Some(HotRead { gw: self, ck, key_at: bucket.len() + 1, _stripe: stripe })
    }
}

impl HotRead<'_> {
    /// [`Gateway::head`] if it needs no wait (see the module doc).
    pub fn head(&self) -> Option<S3Result<ObjectInfo>> {
        let gw = self.gw;
        if let Some(p) = gw.pending.try_lock()?.map.get(&self.ck) {
            if p.deleted {
                return Some(Err(s3_error!(NoSuchKey, "{} was deleted", &self.ck[self.key_at..])));
            }
            return Some(Ok(p.info.clone()));
        }
        let p = gw.cache.peek_now(self.ck.as_bytes())?;
        // A clean copy due for revalidation asks the backend first (unless it is not known up,
        // when the blocking path serves the copy without asking either).
        if !p.dirty && gw.fetch.fresh.due(&self.ck, now_ns()) && gw.health.is_known_up() {
            return None;
        }
        if p.meta.etag.is_empty() {
            return None;
        }
        Some(Ok(super::object_meta::info_of(p.size, p.meta)))
    }

    /// [`Gateway::read_plan`] of bytes `[start, end)` of the object `info` (from
    /// [`HotRead::head`]) if the memory tier holds it (its bytes, no device read), or if the
    /// range is small and in one fragment and a worker may read it here (see the module doc).
    pub fn read_plan(&self, info: &ObjectInfo, start: u64, end: u64) -> Option<S3Result<ReadPlan>> {
        let end = end.min(info.size);
        if start >= end {
            return Some(Ok(ReadPlan::new(VecDeque::new(), 0)));
        }
        if let Some(r) = self.gw.cache.get_memory(self.ck.as_bytes(), &info.etag, (start, end), now_ns()) {
            let mut segments = VecDeque::with_capacity(r.pieces.len());
            for p in r.pieces {
                let bytes = p.data.expect("a piece of a memory hit has its bytes");
                segments.extend(bytes.into_bytes().map(Segment::Ready));
            }
            return Some(Ok(ReadPlan::new(segments, end - start)));
        }
        let fs = self.gw.cache.config().fragment_size;
        if end - start > HOT_FLASH_MAX || start / fs != (end - 1) / fs {
            return None;
        }
        let share = self.gw.caller_reads.try_take_here()?;
        let key = &self.ck[self.key_at..];
        let read = self.gw.cache.get_version_on_caller(self.ck.as_bytes(), &info.etag, (start, end), now_ns())?;
        share.made();
        let r = match read {
            Ok(r) => r,
            Err(e) => return Some(Err(s3_error!(InternalError, "reading {key:?} from flash: {e}"))),
        };
        let bucket = &self.ck[..self.key_at - 1];
        Some(self.gw.segments(bucket, key, info, r.token, r.pieces).map(|s| ReadPlan::new(s, end - start)))
    }
}

/// The largest range a worker thread reads from flash itself (see the module doc): a few device
/// sectors, a read of tens of microseconds, not a stream.
pub const HOT_FLASH_MAX: u64 = 128 << 10;
