//! The streaming read path of GET: [`Gateway::read_plan`] looks the range up in the cache and
//! turns it into [`Segment`]s — bytes already read from flash, and runs of missing fragments each
//! read by a single-flight backend fetch ([`super::flight`]) — and [`ReadPlan::into_stream`]
//! concatenates them into the response body, so a miss reaches the client chunk by chunk as the
//! backend delivers it while the fetch collects the fragments for the cache in the background.
//!
//! A range the cache holds whole is read a fragment (window) at a time, [`LOOKAHEAD`] windows
//! ahead of the one being sent ([`Later`] segments on the blocking pool): the body starts after
//! one fragment read and memory stays at a few fragments per GET, whatever the object's size.
//! The exceptions are read in one get: a range the cache holds only in part (its cached pieces
//! now, the rest fetched), and a whole object the memory tier would keep (at most 16 MiB and a
//! sixteenth of the tier), which leaves its copy in memory for the next readers; the response
//! then shares the copy's buffer, so the object is held once.
//!
//! A fetch covers whole fragments (so they can be cached) and is *collecting* when its range is
//! at most [`Gateway::max_fill`] bytes (default: a quarter of the cache, at most 256 MiB):
//! larger objects are streamed through with a bounded window and not cached on a whole-object
//! GET (their byte-range GETs, which fetch only the fragments they touch, are).

use std::collections::VecDeque;
use std::future::Future;
use std::pin::Pin;
use std::sync::Arc;
use std::task::{Context, Poll};

use bytes::Bytes;
use futures::Stream;
use reo_store::ReadBytes;
use s3s::{s3_error, S3Result};

use super::fetch::{self, Job};
use super::flight::{FetchError, FlightKey, FlightReader};
use super::handle::Gateway;
use super::pending::cache_key;
use crate::backend::ObjectInfo;

/// A part of a GET's body.
pub enum Segment {
    /// Read from flash.
    Ready(Bytes),
    /// Streamed from a backend fetch.
    Fetch(FlightReader),
    /// A later window of a cached range, being (or to be) read on the blocking pool.
    Later(Later),
}

/// Windows of a hit read ahead of the one being sent (each one fragment).
pub const LOOKAHEAD: usize = 4;

type Window = Box<dyn FnOnce() -> S3Result<VecDeque<Segment>> + Send + Sync>;

/// A window read on the blocking pool: started when it comes within [`LOOKAHEAD`] of the front.
pub struct Later(Option<LaterState>);

enum LaterState {
    Idle(Window),
    Running(tokio::task::JoinHandle<S3Result<VecDeque<Segment>>>),
}

impl Later {
    /// Starts an idle window (a running one is left alone).
    fn start(&mut self) {
        self.0 = match self.0.take() {
            Some(LaterState::Idle(f)) => Some(LaterState::Running(tokio::task::spawn_blocking(f))),
            other => other,
        };
    }
}

/// The body of one GET, in order.
pub struct ReadPlan {
    segments: VecDeque<Segment>,
    /// Total bytes.
    pub len: u64,
}

impl ReadPlan {
    pub(super) fn new(segments: VecDeque<Segment>, len: u64) -> ReadPlan {
        ReadPlan { segments, len }
    }

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
        self.segments.iter().all(|s| matches!(s, Segment::Ready(_) | Segment::Later(_)))
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
            for s in self.0.iter_mut().take(LOOKAHEAD + 1) {
                if let Segment::Later(l) = s {
                    l.start();
                }
            }
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
                Some(Segment::Later(l)) => match &mut l.0 {
                    Some(LaterState::Running(h)) => match Pin::new(h).poll(cx) {
                        Poll::Pending => return Poll::Pending,
                        Poll::Ready(r) => {
                            self.0.pop_front();
                            match r.map_err(|e| e.to_string()).and_then(|r| r.map_err(|e| format!("{e}"))) {
                                Ok(segs) => segs.into_iter().rev().for_each(|s| self.0.push_front(s)),
                                Err(e) => {
                                    self.0.clear();
                                    return Poll::Ready(Some(Err(FetchError(format!("reading from flash: {e}")))));
                                }
                            }
                        }
                    },
                    Some(LaterState::Idle(_)) => l.start(),
                    None => {
                        // (start always leaves a state; never cut a body short silently)
                        self.0.clear();
                        return Poll::Ready(Some(Err(FetchError("a window of the body was lost".into()))));
                    }
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
    /// both under [`Gateway::read_lock`]). A range the cache holds whole is read one fragment
    /// (window) at a time: the first now, the next [`LOOKAHEAD`] at once on the blocking pool, the
    /// rest as the client consumes the body — the response starts after one fragment read, and at
    /// most a few fragments are in memory. Otherwise cached pieces are read now and each run of
    /// missing fragments is fetched from the backend (joining a fetch of the same range already
    /// under way) as the stream is consumed.
    pub fn read_plan(
        self: &Arc<Self>,
        bucket: &str,
        key: &str,
        info: &ObjectInfo,
        start: u64,
        end: u64,
    ) -> S3Result<ReadPlan> {
        let end = end.min(info.size);
        let mut plan = ReadPlan { segments: VecDeque::new(), len: end.saturating_sub(start) };
        if start >= end {
            return Ok(plan);
        }
        let ck = cache_key(bucket, key);
        let fs = self.cache.config().fragment_size;
        let first_end = end.min((start / fs + 1) * fs);
        let whole = self.cache.info(ck.as_bytes()).is_some_and(|i| i.cached_fragments == i.fragments);
        let now = super::now_ns();
        let flash = |e| s3_error!(InternalError, "reading {key:?} from flash: {e}");
        // An object the memory tier would take is read whole in one get (its fragments' reads
        // all begun at once), which leaves the copy: read window by window it never would be.
        let to_memory = start == 0 && end == info.size && self.cache.memory_admits(info.size);
        if !whole || first_end == end || to_memory {
            let r = self.cache.get_version(ck.as_bytes(), &info.etag, (start, end), now, true).map_err(flash)?;
            plan.segments = self.segments(bucket, key, info, r.token, r.pieces)?;
            return Ok(plan);
        }
        // Windows after the first are planned (and the first LOOKAHEAD started) before the first
        // is read, so their reads run beside it; they need the first read's token, which cannot
        // be older than one taken now.
        let token = self.cache.token();
        let mut later = VecDeque::new();
        let mut a = first_end;
        while a < end {
            let b = end.min(a + fs);
            let (gw, bucket, key, info) = (self.clone(), bucket.to_string(), key.to_string(), info.clone());
            let w: Window = Box::new(move || gw.read_window(&bucket, &key, &info, token, a, b));
            let mut l = Later(Some(LaterState::Idle(w)));
            if later.len() < LOOKAHEAD && tokio::runtime::Handle::try_current().is_ok() {
                l.start();
            }
            later.push_back(Segment::Later(l));
            a = b;
        }
        let r = self.cache.get_version(ck.as_bytes(), &info.etag, (start, first_end), now, true).map_err(flash)?;
        plan.segments = self.segments(bucket, key, info, r.token, r.pieces)?;
        plan.segments.extend(later);
        Ok(plan)
    }

    /// A later window `[a, b)` of a GET whose first window was read with `token`: the same
    /// version, or an error (the object changed meanwhile; the client sees a cut-off body).
    fn read_window(
        &self,
        bucket: &str,
        key: &str,
        info: &ObjectInfo,
        token: u64,
        a: u64,
        b: u64,
    ) -> S3Result<VecDeque<Segment>> {
        let ck = cache_key(bucket, key);
        let r = self
            .cache
            .get_version(ck.as_bytes(), &info.etag, (a, b), super::now_ns(), false)
            .map_err(|e| s3_error!(InternalError, "reading {key:?} from flash: {e}"))?;
        if self.cache.changed_since(ck.as_bytes(), token) {
            return Err(s3_error!(ServiceUnavailable, "{key:?} was written while it was read; retry"));
        }
        self.segments(bucket, key, info, token, r.pieces)
    }

    /// The segments of a cache lookup's pieces: bytes as they are (each slice of a zero-copy read
    /// a segment sharing its run buffer), each run of missing fragments one (single-flight) fetch.
    pub(super) fn segments(
        &self,
        bucket: &str,
        key: &str,
        info: &ObjectInfo,
        token: u64,
        pieces: reo_cache::Pieces<ReadBytes>,
    ) -> S3Result<VecDeque<Segment>> {
        let ck = cache_key(bucket, key);
        let fs = self.cache.config().fragment_size;
        let mut out = VecDeque::new();
        let mut miss: Option<(u64, u64)> = None;
        let mut pieces = pieces.into_iter().peekable();
        while let Some(p) = pieces.next() {
            match p.data {
                Some(d) => out.extend(d.into_bytes().map(Segment::Ready)),
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
                        let job = Job { bucket: bucket.into(), key: key.into(), info: info.clone(), token };
                        fetch::start(self.fetch.clone(), reader.flight().clone(), job);
                    }
                    out.push_back(Segment::Fetch(reader));
                }
            }
        }
        Ok(out)
    }
}
