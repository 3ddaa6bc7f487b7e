//! The streaming read path of GET: [`Gateway::read_plan`] looks the range up in the cache and
//! turns it into [`Segment`]s — bytes already read from flash, and runs of missing fragments each
//! read by a single-flight backend fetch ([`super::flight`]) — and [`ReadPlan::into_stream`]
//! concatenates them into the response body, so a miss reaches the client chunk by chunk as the
//! backend delivers it while the fetch collects the fragments for the cache in the background.
//!
//! A fetch covers whole fragments (so they can be cached) and is *collecting* when its range is
//! at most [`Gateway::max_fill`] bytes (default: a quarter of the cache, at most 256 MiB):
//! larger objects are streamed through with a bounded window and not cached on a whole-object
//! GET (their byte-range GETs, which fetch only the fragments they touch, are).

use std::collections::VecDeque;
use std::pin::Pin;
use std::task::{Context, Poll};

use bytes::Bytes;
use futures::Stream;
use s3s::{s3_error, S3Result};

use super::fetch::{self, Job};
use super::flight::{FetchError, FlightKey, FlightReader};
use super::pending::cache_key;
use super::Gateway;
use crate::backend::ObjectInfo;

/// A part of a GET's body.
pub enum Segment {
    /// Read from flash.
    Ready(Bytes),
    /// Streamed from a backend fetch.
    Fetch(FlightReader),
}

/// The body of one GET, in order.
pub struct ReadPlan {
    segments: VecDeque<Segment>,
    /// Total bytes.
    pub len: u64,
}

impl ReadPlan {
    /// Waits until every fetch has an answer from the backend; a fetch that failed before its
    /// first byte (no such key, backend down, the object changed) fails the request here, while
    /// it can still carry an error status.
    pub async fn opened(&self) -> S3Result<()> {
        for s in &self.segments {
            if let Segment::Fetch(r) = s {
                r.opened().await?;
            }
        }
        Ok(())
    }

    /// Whether every byte came from flash.
    pub fn is_hit(&self) -> bool {
        self.segments.iter().all(|s| matches!(s, Segment::Ready(_)))
    }

    /// The body as a stream of chunks.
    pub fn into_stream(self) -> PlanStream {
        PlanStream(self.segments)
    }

    /// The whole body (tests; copies).
    pub async fn collect(self) -> Result<Vec<u8>, FetchError> {
        use futures::StreamExt;
        let mut out = Vec::with_capacity(self.len as usize);
        let mut s = self.into_stream();
        while let Some(c) = s.next().await {
            out.extend_from_slice(&c?);
        }
        Ok(out)
    }
}

/// [`ReadPlan`]'s segments, concatenated.
pub struct PlanStream(VecDeque<Segment>);

impl Stream for PlanStream {
    type Item = Result<Bytes, FetchError>;

    fn poll_next(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<Option<Self::Item>> {
        loop {
            match self.0.front_mut() {
                None => return Poll::Ready(None),
                Some(Segment::Ready(b)) => {
                    let b = std::mem::take(b);
                    self.0.pop_front();
                    if !b.is_empty() {
                        return Poll::Ready(Some(Ok(b)));
                    }
                }
                Some(Segment::Fetch(r)) => match Pin::new(r).poll_next(cx) {
                    Poll::Ready(None) => {
                        self.0.pop_front();
                    }
                    other => return other,
                },
            }
        }
    }
}

impl Gateway {
    /// Objects up to this size are collected by their fetch and offered to the cache.
    pub fn max_fill(&self) -> u64 {
        self.max_fill.load(std::sync::atomic::Ordering::Relaxed)
    }

    /// See [`Gateway::max_fill`].
    pub fn set_max_fill(&self, bytes: u64) {
        self.max_fill.store(bytes, std::sync::atomic::Ordering::Relaxed);
    }

    /// The body of bytes `[start, end)` of the object `info` describes (from [`Gateway::head`],
    /// both under [`Gateway::read_lock`]): cached fragments read now, missing ones fetched from the
    /// backend (joining a fetch of the same range already under way) as the stream is consumed.
    pub fn read_plan(&self, bucket: &str, key: &str, info: &ObjectInfo, start: u64, end: u64) -> S3Result<ReadPlan> {
        let end = end.min(info.size);
        let mut plan = ReadPlan { segments: VecDeque::new(), len: end.saturating_sub(start) };
        if start >= end {
            return Ok(plan);
        }
        let ck = cache_key(bucket, key);
        let r = self
            .cache
            .get(ck.as_bytes(), start, end, super::now_ns())
            .map_err(|e| s3_error!(InternalError, "reading {key:?} from flash: {e}"))?;
        let fs = self.cache.config().fragment_size;
        let mut miss: Option<(u64, u64)> = None;
        let mut pieces = r.pieces.into_iter().peekable();
        while let Some(p) = pieces.next() {
            match p.data {
                Some(d) => plan.segments.push_back(Segment::Ready(Bytes::from(d))),
                None => {
                    let m = miss.get_or_insert((p.start, p.end));
                    m.1 = p.end;
                    if pieces.peek().is_some_and(|n| n.data.is_none()) {
                        continue; // one fetch for a run of missing fragments
                    }
                    let (a, b) = miss.take().expect("set above");
                    if self.pending().map.contains_key(&ck) {
                        // An unflushed object must come from flash: the backend holds an older version.
                        return Err(s3_error!(InternalError, "unflushed object {key:?} is not readable from flash"));
                    }
                    let fkey = FlightKey {
                        ck: ck.clone(),
                        etag: info.etag.clone(),
                        start: a / fs * fs,
                        end: b.div_ceil(fs).saturating_mul(fs).min(info.size),
                    };
                    let collect = fkey.end - fkey.start <= self.max_fill();
                    let (reader, new) = self.fetch.flights.join(fkey, collect, a, b);
                    if new {
                        let job = Job { bucket: bucket.into(), key: key.into(), info: info.clone(), token: r.token };
                        fetch::start(self.fetch.clone(), reader.flight().clone(), job);
                    }
                    plan.segments.push_back(Segment::Fetch(reader));
                }
            }
        }
        Ok(plan)
    }
}
