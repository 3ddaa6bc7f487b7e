//! Single-flight backend fetches ([`Flights`], [`Flight`], [`FlightReader`]): the shared state of
//! one backend read that any number of GETs stream from while it arrives.
//!
//! A flight is one backend read of a fragment-aligned range of one version (ETag) of one object.
//! Concurrent misses of the same range *join* it instead of reading the backend again: each gets
//! a [`FlightReader`], a stream that yields the flight's chunks (sliced to the reader's own range)
//! as the producer (`fetch.rs`, on a blocking thread) receives them. Every reader sees every
//! byte from the start of the flight, so a flight is joinable only while its first chunk is still
//! held: always for a *collecting* flight (one the cache may keep: it holds the whole range until
//! the fill), and until readers have consumed the first chunk for the others (which keep only a
//! window of [`WINDOW`] bytes ahead of the slowest reader, so memory stays bounded and a slow
//! client slows the backend read instead of filling memory).
//!
//! Errors reach every reader (before the first byte they become the response's status); a failed
//! or cancelled flight leaves the registry at once, so the next request starts a new fetch. When
//! the last reader goes away before its range was complete (the client disconnected) and the
//! fetch is still running, the flight is **cancelled**: the producer stops at its next chunk and
//! nothing is written to flash.

use std::collections::{HashMap, VecDeque};
use std::pin::Pin;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;
use std::task::{Context, Poll, Waker};

use bytes::Bytes;
use parking_lot::{Condvar, Mutex, MutexGuard};
use s3s::{S3Error, S3ErrorCode};

/// Bytes a non-collecting flight may hold ahead of its slowest reader.
pub const WINDOW: u64 = 8 << 20;

/// One fetch's identity: cache key, version and the fragment-aligned byte range `[start, end)`.
#[derive(Clone, PartialEq, Eq, Hash, Debug)]
pub(crate) struct FlightKey {
    pub ck: String,
    pub etag: String,
    pub start: u64,
    pub end: u64,
}

/// The flights in progress, and counters.
#[derive(Default)]
pub(crate) struct Flights {
    map: Mutex<HashMap<FlightKey, Arc<Flight>>>,
    /// Backend reads started by the streaming miss path.
    pub fetches: AtomicU64,
    /// Producers running (fetching or filling); tests wait for 0 on `idle`.
    running: Mutex<usize>,
    /// Producers allowed at once beyond which a miss is refused (`None`: `fetch::MAX_PRODUCERS`;
    /// tests lower it).
    pub max_producers: Mutex<Option<usize>>,
    idle: Condvar,
}

impl Flights {
    fn map(&self) -> MutexGuard<'_, HashMap<FlightKey, Arc<Flight>>> {
        self.map.lock()
    }

    /// A reader of `[pos, end)` on the flight of `key`: an existing joinable one, else a new
    /// flight (`true`: the caller must start its producer).
    pub fn join(&self, key: FlightKey, collect: bool, pos: u64, end: u64) -> (FlightReader, bool) {
        let mut map = self.map();
        if let Some(f) = map.get(&key) {
            if let Some(r) = f.clone().reader(pos, end) {
                return (r, false);
            }
        }
        let f = Arc::new(Flight::new(key.clone(), collect));
        map.insert(key, f.clone());
        *self.running.lock() += 1;
        (f.reader(pos, end).expect("a new flight is joinable"), true)
    }

    /// Removes `f` from the registry (if it is still the registered flight of its key).
    pub fn forget(&self, f: &Flight) {
        let mut map = self.map();
        if map.get(&f.key).is_some_and(|g| std::ptr::eq(Arc::as_ptr(g), f)) {
            map.remove(&f.key);
        }
    }

    /// A producer finished.
    pub fn finished(&self) {
        let mut n = self.running.lock();
        *n -= 1;
        if *n == 0 {
            self.idle.notify_all();
        }
    }

    /// Producers running.
    pub fn running(&self) -> usize {
        *self.running.lock()
    }

    /// Waits until no producer is running, at most `within`; whether none is.
    pub fn wait_idle_for(&self, within: std::time::Duration) -> bool {
        let deadline = std::time::Instant::now() + within;
        let mut n = self.running.lock();
        while *n > 0 {
            if self.idle.wait_until(&mut n, deadline).timed_out() {
                return *n == 0;
            }
        }
        true
    }

    #[cfg(test)]
    /// Blocks until no producer is running (tests: the background fill has happened or not).
    pub fn wait_idle(&self) {
        let mut n = self.running.lock();
        while *n > 0 {
            self.idle.wait(&mut n);
        }
    }

    #[cfg(test)]
    /// Readers of the registered flight of `key`.
    pub fn readers(&self, key: &FlightKey) -> usize {
        self.map().get(key).map_or(0, |f| f.st().readers.len())
    }
}

/// A failure as every reader sees it.
pub(crate) type Failure = (S3ErrorCode, String);

/// One backend fetch and the chunks received so far.
pub(crate) struct Flight {
    pub key: FlightKey,
    /// Whether the whole range is kept for the cache.
    pub collect: bool,
    st: Mutex<State>,
    /// The producer waits here for readers to make room (non-collecting flights).
    room: Condvar,
}

#[derive(Default)]
struct State {
    /// (object offset, bytes) of the chunks still held.
    chunks: VecDeque<(u64, Bytes)>,
    /// Index (among all chunks received) of `chunks[0]`.
    first: usize,
    /// Object offset after the last chunk received.
    received: u64,
    /// Reader id → index of the next chunk it has not finished.
    readers: HashMap<u64, usize>,
    next_id: u64,
    /// The backend answered (the info matched): bytes will follow.
    opened: bool,
    outcome: Option<Result<(), Failure>>,
    cancelled: bool,
    wakers: Vec<Waker>,
}

impl State {
    fn wake(&mut self) {
        self.wakers.drain(..).for_each(Waker::wake);
    }
}

impl Flight {
    fn new(key: FlightKey, collect: bool) -> Flight {
        let received = key.start;
        Flight { key, collect, st: Mutex::new(State { received, ..Default::default() }), room: Condvar::new() }
    }

    fn st(&self) -> MutexGuard<'_, State> {
        self.st.lock()
    }

    fn reader(self: Arc<Self>, pos: u64, end: u64) -> Option<FlightReader> {
        let mut s = self.st();
        if s.first != 0 || s.cancelled || matches!(s.outcome, Some(Err(_))) {
            return None;
        }
        let id = s.next_id;
        s.next_id += 1;
        s.readers.insert(id, 0);
        drop(s);
        Some(FlightReader { flight: self, id, pos, end, left: false })
    }

    /// Producer: the backend answered; returns false if the flight was cancelled meanwhile.
    pub fn open(&self) -> bool {
        let mut s = self.st();
        s.opened = true;
        s.wake();
        !s.cancelled
    }

    /// Producer: one more chunk. Waits for room first (non-collecting flights); returns false if
    /// the flight was cancelled (stop reading).
    pub fn push(&self, chunk: Bytes) -> bool {
        let mut s = self.st();
        while !self.collect && !s.cancelled && s.received - s.chunks.front().map_or(s.received, |c| c.0) > WINDOW {
            self.room.wait(&mut s);
        }
        if s.cancelled {
            return false;
        }
        let off = s.received;
        s.received += chunk.len() as u64;
        s.chunks.push_back((off, chunk));
        s.wake();
        true
    }

    /// Producer: the end, with every byte received (`Ok`) or not.
    pub fn finish(&self, r: Result<(), Failure>) {
        let mut s = self.st();
        s.outcome = Some(r);
        s.wake();
    }

    /// [`Flight::finish`] with `failure` unless the producer already said how it ended.
    pub fn fail_if_open(&self, failure: Failure) {
        let mut s = self.st();
        if s.outcome.is_none() {
            s.outcome = Some(Err(failure));
            s.wake();
        }
    }

    /// Bytes received so far (the producer checks the total).
    pub fn received(&self) -> u64 {
        self.st().received
    }

    /// The whole range, once complete (collecting flights).
    pub fn chunks(&self) -> Vec<(u64, Bytes)> {
        self.st().chunks.iter().cloned().collect()
    }

    /// Drops chunks every reader is past (non-collecting flights) and wakes the producer.
    fn trim(&self, s: &mut State) {
        if self.collect {
            return;
        }
        let min = s.readers.values().copied().min().unwrap_or(s.first + s.chunks.len());
        while s.first < min && !s.chunks.is_empty() {
            s.chunks.pop_front();
            s.first += 1;
        }
        self.room.notify_all();
    }
}

/// The reader's error: the backend read failed part-way (the client sees a cut-off body).
#[derive(Debug)]
pub struct FetchError(pub String);

impl std::fmt::Display for FetchError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(&self.0)
    }
}

impl std::error::Error for FetchError {}

/// One request's view of a flight: the bytes `[pos, end)` as a stream.
pub struct FlightReader {
    flight: Arc<Flight>,
    id: u64,
    pos: u64,
    end: u64,
    left: bool,
}

impl FlightReader {
    pub(crate) fn flight(&self) -> &Arc<Flight> {
        &self.flight
    }

    /// Waits until the backend answered: `Err` if it failed before any byte (no such key, backend
    /// down, the object changed) — the response can still carry that status.
    pub async fn opened(&self) -> Result<(), S3Error> {
        std::future::poll_fn(|cx| {
            let mut s = self.flight.st();
            match &s.outcome {
                Some(Err((code, msg))) => Poll::Ready(Err(S3Error::with_message(code.clone(), msg.clone()))),
                _ if s.opened || s.outcome.is_some() => Poll::Ready(Ok(())),
                _ => {
                    s.wakers.push(cx.waker().clone());
                    Poll::Pending
                }
            }
        })
        .await
    }

    fn leave(&mut self) {
        if self.left {
            return;
        }
        self.left = true;
        let f = self.flight.clone();
        let mut s = f.st();
        s.readers.remove(&self.id);
        if s.readers.is_empty() && s.outcome.is_none() && self.pos < self.end {
            // The last reader gave up part-way: nobody wants the rest, and a partial range must
            // not reach the cache.
            s.cancelled = true;
            f.room.notify_all();
            drop(s);
            // (Flights::forget needs the registry; the producer removes it when it sees the flag.)
        } else {
            f.trim(&mut s);
        }
    }
}

impl futures::Stream for FlightReader {
    type Item = Result<Bytes, FetchError>;

    fn poll_next(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<Option<Self::Item>> {
        let this = &mut *self;
        if this.pos >= this.end {
            this.leave();
            return Poll::Ready(None);
        }
        let f = this.flight.clone();
        let mut s = f.st();
        let mut next = s.readers.get(&this.id).copied().unwrap_or(s.first);
        while next < s.first + s.chunks.len() {
            let (off, chunk) = &s.chunks[next - s.first];
            let cend = off + chunk.len() as u64;
            if cend <= this.pos {
                next += 1;
                continue;
            }
            let lo = (this.pos - off) as usize;
            let hi = (this.end.min(cend) - off) as usize;
            let out = chunk.slice(lo..hi);
            this.pos += out.len() as u64;
            if this.pos >= cend {
                next += 1;
            }
            s.readers.insert(this.id, next);
            f.trim(&mut s);
            return Poll::Ready(Some(Ok(out)));
        }
        s.readers.insert(this.id, next);
        match &s.outcome {
            Some(Err((_, m))) => {
                let e = FetchError(m.clone());
                drop(s);
                this.pos = this.end;
                this.leave();
                Poll::Ready(Some(Err(e)))
            }
            Some(Ok(())) => {
                let short = format!("the backend ended {} bytes early", this.end - this.pos);
                drop(s);
                this.pos = this.end;
                this.leave();
                Poll::Ready(Some(Err(FetchError(short))))
            }
            None if s.cancelled => Poll::Ready(Some(Err(FetchError("the fetch was cancelled".into())))),
            None => {
                s.wakers.push(cx.waker().clone());
                Poll::Pending
            }
        }
    }
}

impl Drop for FlightReader {
    fn drop(&mut self) {
        self.leave();
    }
}

impl Flight {
    /// Whether the flight was cancelled (the producer stops and unregisters it).
    pub fn cancelled(&self) -> bool {
        self.st().cancelled
    }
}

/// Fragment `[fstart, fend)` of a complete collecting flight, copied out of its chunks.
pub(crate) fn assemble(chunks: &[(u64, Bytes)], fstart: u64, fend: u64) -> Vec<u8> {
    let mut out = Vec::with_capacity((fend - fstart) as usize);
    for (off, c) in chunks {
        let cend = off + c.len() as u64;
        if cend <= fstart || *off >= fend {
            continue;
        }
        let lo = (fstart.max(*off) - off) as usize;
        let hi = (fend.min(cend) - off) as usize;
        out.extend_from_slice(&c[lo..hi]);
    }
    out
}

/// Counts one backend read of the streaming miss path (`backend_reads` in `/metrics`).
pub(crate) fn count_fetch(flights: &Flights) {
    flights.fetches.fetch_add(1, Ordering::Relaxed);
}
