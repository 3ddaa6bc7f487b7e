//! The hot path of GET and HEAD: what the async task that received a request can answer by
//! itself, without a hand-off to the blocking pool — an object whose metadata is in DRAM (its
//! unflushed write, or its cached blob header) and, for a GET, whose bytes are in the memory
//! tier. Each step only *tries*: a stripe or the pending map held by someone else, a
//! revalidation due (a backend call), a part number (the part table), or bytes not in memory
//! make it give up with `None`, and the caller takes the blocking path, which gives the same
//! answer by waiting. A task therefore never waits on a device or the backend here, and takes
//! locks only for as long as a lookup.

use std::collections::VecDeque;

use parking_lot::RwLockReadGuard;
use s3s::{s3_error, S3Result};

use super::clock::now_ns;
use super::handle::Gateway;
use super::pending::cache_key;
use super::stream::{ReadPlan, Segment};
use crate::backend::ObjectInfo;

impl Gateway {
    /// [`Gateway::read_lock`] if the stripe is free of writers now.
    pub fn try_read_lock(&self, bucket: &str, key: &str) -> Option<RwLockReadGuard<'_, ()>> {
        self.stripes.try_shared(&cache_key(bucket, key))
    }

    /// [`Gateway::head`] if it needs no wait (see the module doc); hold
    /// [`Gateway::try_read_lock`]'s guard.
    pub fn head_now(&self, bucket: &str, key: &str) -> Option<S3Result<ObjectInfo>> {
        let ck = cache_key(bucket, key);
        if let Some(p) = self.pending.try_lock()?.map.get(&ck) {
            if p.deleted {
                return Some(Err(s3_error!(NoSuchKey, "{key} was deleted")));
            }
            return Some(Ok(p.info.clone()));
        }
        let p = self.cache.peek_now(ck.as_bytes())?;
        // A clean copy due for revalidation asks the backend first (unless it is not known up,
        // when the blocking path serves the copy without asking either).
        if !p.dirty && self.fetch.fresh.due(&ck, now_ns()) && self.health.is_known_up() {
            return None;
        }
        if p.meta.etag.is_empty() {
            return None;
        }
        Some(Ok(super::object_meta::info_of(p.size, p.meta)))
    }

    /// [`Gateway::read_plan`] if the memory tier holds the object: its bytes, no device read;
    /// hold [`Gateway::try_read_lock`]'s guard.
    pub fn read_plan_now(&self, bucket: &str, key: &str, info: &ObjectInfo, start: u64, end: u64) -> Option<ReadPlan> {
        let end = end.min(info.size);
        if start >= end {
            return Some(ReadPlan::new(VecDeque::new(), 0));
        }
        let r = self.cache.get_memory(cache_key(bucket, key).as_bytes(), start, end, now_ns())?;
        let mut segments = VecDeque::with_capacity(r.pieces.len());
        for p in r.pieces {
            let bytes = p.data.expect("a piece of a memory hit has its bytes");
            segments.extend(bytes.into_bytes().map(Segment::Ready));
        }
        Some(ReadPlan::new(segments, end - start))
    }
}
