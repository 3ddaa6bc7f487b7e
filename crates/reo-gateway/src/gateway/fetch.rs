//! The producer of a [`Flight`]: reads the backend stream on a blocking thread, hands each chunk
//! to the flight's readers as it arrives, and — for a collecting flight that received every byte
//! of the version it asked for — offers the fragments to the cache afterwards (admission decides,
//! per fragment, in [`reo_cache::Cache::fill`]). A failed, short or cancelled fetch writes nothing
//! to flash.

use std::sync::Arc;

use reo_cache::{Cache, FillOutcome};
use s3s::S3ErrorCode;

use super::clock::now_ns;
use super::errors::backend_err;
use super::flight::{assemble, count_fetch, Flight, Flights};
use super::fresh::Freshness;
use crate::backend::{Backend, ObjectInfo};

/// Everything a producer needs (cloned out of the gateway: it outlives the request).
#[derive(Clone)]
pub(crate) struct FetchCtx {
    /// The gateway's per-key locks: a fill holds its key's, shared or exclusive ([`fill`]).
    pub stripes: Arc<super::stripes::Stripes>,
    pub backend: Arc<dyn Backend>,
    pub cache: Arc<Cache>,
    pub flights: Arc<Flights>,
    pub fresh: Arc<Freshness>,
}

/// What to fetch: `flight.key`'s range of `bucket/key`, expected to be the version `info`.
pub(crate) struct Job {
    pub bucket: String,
    pub key: String,
    pub info: ObjectInfo,
    /// The cache's token from before the fetch (a write since makes the fill stale).
    pub token: u64,
}

/// Producers running at most: a miss beyond them is refused with `503 SlowDown` (each holds a
/// thread, and a backend read's, for as long as its slowest reader takes).
pub const MAX_PRODUCERS: usize = 128;

/// Starts the producer of `flight` on a thread of its own. Not on tokio's blocking pool: a
/// producer streaming an object too large to collect waits for its slowest reader, so a few
/// slow clients would hold pool threads (the pool is bounded) for as long as they like, and
/// every operation of the blocking path would queue behind them. At most [`MAX_PRODUCERS`] run.
pub(crate) fn start(ctx: FetchCtx, flight: Arc<Flight>, job: Job) {
    let done = |ctx: &FetchCtx, flight: &Arc<Flight>| {
        ctx.flights.forget(flight);
        ctx.flights.finished();
    };
    // (`join` counted this producer already.)
    let max = ctx.flights.max_producers.lock().unwrap_or(MAX_PRODUCERS);
    if ctx.flights.running() > max {
        let why = format!("{max} backend reads are in flight; retry later");
        flight.finish(Err((S3ErrorCode::SlowDown, why)));
        return done(&ctx, &flight);
    }
    let (ctx2, flight2) = (ctx.clone(), flight.clone());
    let spawned = std::thread::Builder::new().name("reo-fetch".into()).spawn(move || {
        // A panic (a bug) must not leave the flight open: its readers would wait for ever, and
        // every later miss of the range would join it.
        let ran = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| run(&ctx, &flight, &job)));
        if ran.is_err() {
            flight.fail_if_open((S3ErrorCode::InternalError, "the backend fetch failed".into()));
        }
        done(&ctx, &flight);
    });
    if let Err(e) = spawned {
        let why = format!("cannot start a backend fetch: {e}");
        flight2.finish(Err((S3ErrorCode::ServiceUnavailable, why)));
        done(&ctx2, &flight2);
    }
}

fn run(ctx: &FetchCtx, flight: &Flight, job: &Job) {
    let (start, end) = (flight.key.start, flight.key.end);
    count_fetch(&ctx.flights);
    let (binfo, chunks) = match ctx.backend.get_stream(&job.bucket, &job.key, start, end) {
        Ok(x) => x,
        Err(e) => {
            let e = backend_err(e);
            return flight.finish(Err((e.code().clone(), e.message().unwrap_or("backend error").to_string())));
        }
    };
    if binfo.etag != job.info.etag || binfo.size != job.info.size {
        let m = format!("{:?} changed in the backend while it was read; retry", job.key);
        return flight.finish(Err((S3ErrorCode::ServiceUnavailable, m)));
    }
    if !flight.open() {
        return;
    }
    for c in chunks {
        match c {
            Ok(c) if c.is_empty() => {}
            Ok(c) => {
                if !flight.push(c) {
                    return; // cancelled: every reader left part-way
                }
            }
            Err(e) => {
                let m = format!("reading {:?} from the backend: {e}", job.key);
                return flight.finish(Err((S3ErrorCode::ServiceUnavailable, m)));
            }
        }
    }
    let got = flight.received();
    if got != end {
        let m = format!("the backend sent {} bytes of {:?}'s range {start}-{end}", got - start, job.key);
        return flight.finish(Err((S3ErrorCode::ServiceUnavailable, m)));
    }
    if !flight.collect {
        ctx.cache.record_backend_read(end - start); // (a fill counts its own bytes)
    }
    flight.finish(Ok(()));
    if flight.collect && !flight.cancelled() {
        fill(ctx, flight, job);
    }
}

/// Offers every fragment of the complete range to the cache.
fn fill(ctx: &FetchCtx, flight: &Flight, job: &Job) {
    let fs = ctx.cache.config().fragment_size;
    let meta = super::object_meta::meta_of(&job.info);
    let chunks = flight.chunks();
    let (start, end) = (flight.key.start, flight.key.end);
    let mut frag = start / fs;
    while frag * fs < end {
        let (fstart, fend) = (frag * fs, ((frag + 1) * fs).min(end));
        let bytes = assemble(&chunks, fstart, fend);
        let ck = flight.key.ck.as_bytes();
        // Under the key's stripe, shared: no write of the key lands between the fill's staleness
        // check and its install. (Unlocked, a PUT could: the fill's blob, newer than the PUT's,
        // freed as stale without durability, could come back in a crash and win over it.)
        let shared = ctx.stripes.shared(&flight.key.ck);
        let (size, now) = (job.info.size, now_ns());
        match ctx.cache.fill_same_version(ck, size, frag as u32, &bytes, &meta, job.token, now) {
            Ok(FillOutcome::OtherVersion) => {
                // Replacing a cached version changes what a reader between an object's metadata
                // and its bytes would read (two versions mixed, its checksum header wrong): it
                // waits for them, exclusive.
                drop(shared);
                let _w = ctx.stripes.exclusive(&flight.key.ck);
                if ctx.cache.fill(ck, size, frag as u32, &bytes, &meta, job.token, now).is_err() {
                    return;
                }
            }
            Ok(_) => {}
            Err(_) => return,
        }
        frag += 1;
    }
    ctx.fresh.validated(&flight.key.ck, now_ns());
}
