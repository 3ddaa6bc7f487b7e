//! The flusher: a thread that writes unflushed (dirty) objects to the backend, then marks them
//! clean in the cache and forgets their pending record. Up to eight objects at a time (a round's
//! workers, [`FLUSH_WORKERS`]), each streamed from flash a window of 4 MiB at a time; the workers
//! hold one window and a MiB between them ([`WindowBudget`]), whatever the objects' sizes;
//! the backend call holds no lock, and the pending state is retired only if no write or delete
//! replaced it meanwhile ([`flush_one`] gives the steps); failures are retried with exponential
//! backoff (100 ms doubling to 30 s) and counted. While the backend's own I/O
//! fails, a round stops taking objects at its first such failure (a probe per worker and
//! backoff, not one per object).
//! Backend write failures mark the backend down and the next success marks it up again
//! ([`super::outage`]); a wake-up (a write, `reo admin flush`) retries at once. A bucket missing
//! in the backend is neither an outage nor a reason to back off the other objects: its objects
//! are stuck, retried on their bucket's own backoff ([`super::stuck`]). An optional
//! flush delay lets an object age before it is written (rewrites within it cost one backend
//! write); an explicit flush ([`Gateway::flush_now`]) takes everything written before it.

use std::sync::Arc;
use std::thread::JoinHandle;
use std::time::Duration;

use super::clock::now_ns;
use super::handle::Gateway;
use super::pending::cache_key;
use super::window_budget::WindowBudget;
use crate::backend::BackendError;

const BACKOFF_MIN: Duration = Duration::from_millis(100);
const BACKOFF_MAX: Duration = Duration::from_secs(30);

/// A running flusher; [`Flusher::stop`] finishes the objects in hand and returns.
pub struct Flusher {
    gw: Arc<Gateway>,
    handle: Option<JoinHandle<()>>,
}

impl Flusher {
    /// Starts the flusher thread of `gw`.
    pub fn start(gw: Arc<Gateway>) -> Flusher {
        let g = gw.clone();
        let handle = std::thread::Builder::new()
            .name("reo-flusher".into())
            .spawn(move || run(&g))
            .expect("spawn the flusher thread");
        Flusher { gw, handle: Some(handle) }
    }

    /// Stops the thread and waits for it; unflushed objects stay dirty for the next start.
    pub fn stop(mut self) {
        self.gw.stopping.store(true, std::sync::atomic::Ordering::SeqCst);
        self.gw.kick_flusher();
        if let Some(h) = self.handle.take() {
            let _ = h.join();
        }
    }
}

fn stopping(gw: &Gateway) -> bool {
    gw.stopping.load(std::sync::atomic::Ordering::SeqCst)
}

/// How often abandoned multipart uploads are looked for.
const EXPIRY_SWEEP: Duration = Duration::from_secs(3600);

fn run(gw: &Gateway) {
    let mut backoff = BACKOFF_MIN;
    let mut halted = false;
    let mut swept: Option<std::time::Instant> = None;
    while !stopping(gw) {
        if swept.is_none_or(|t| t.elapsed() >= EXPIRY_SWEEP) {
            gw.expire_uploads();
            swept = Some(std::time::Instant::now());
        }
        // After the backend's own failure, a round probes with one worker: a hung backend costs
        // one stuck call per backoff, not one per worker.
        let step = round_with(gw, if halted { 1 } else { FLUSH_WORKERS });
        let failed = step != Step::Done;
        halted = step == Step::Halt;
        let (m, c) = &gw.wake;
        let mut woken = m.lock();
        let wait = if failed { backoff } else { Duration::from_secs(1) };
        if !*woken || failed {
            c.wait_for(&mut woken, wait);
        }
        *woken = false;
        backoff = if failed { (backoff * 2).min(BACKOFF_MAX) } else { BACKOFF_MIN };
    }
}

/// Objects a round flushes at once. Their backend calls overlap (a round of small objects takes
/// about the backend's latency per group, not per object), and their clean marks share the
/// store's journal batches ([`CLEAN_COMMIT_WITHIN`]): a mark made durable alone is a batch of one
/// journal sector on every device. Each object keeps its own steps ([`flush_one`]); only
/// distinct keys run at once.
const FLUSH_WORKERS: usize = 8;

/// How long a worker's clean mark may wait for the others' to share its journal batch
/// (`Cache::mark_clean_within`). The key's stripe is held meanwhile: a read or write of a key
/// of the same stripe waits up to that much longer than it would for the batch alone.
const CLEAN_COMMIT_WITHIN: Duration = Duration::from_millis(5);

/// What one object's flush asks of the round.
#[derive(Clone, Copy, PartialEq, Eq)]
enum Step {
    /// Flushed, or left for a later round without counting as a failure.
    Done,
    /// Failed: the round reports a failure (and the flusher backs off).
    Failed,
    /// Failed in a way the others would repeat (the backend's own I/O, or it refuses for now):
    /// the round stops taking objects.
    Halt,
}

/// One pass over the ripe unflushed objects (a test's), up to [`FLUSH_WORKERS`] at once; true
/// if one failed.
#[cfg(test)]
pub(crate) fn round(gw: &Gateway) -> bool {
    round_with(gw, FLUSH_WORKERS) != Step::Done
}

/// One pass over the ripe unflushed objects, up to `workers` at once: `Done`, or whether one
/// failed (`Failed`) or the round stopped on the backend's own failure (`Halt`).
fn round_with(gw: &Gateway, workers: usize) -> Step {
    use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
    let ripe = now_ns()
        .saturating_sub(gw.flush_delay_ns.load(Ordering::Relaxed))
        .max(gw.flush_before_ns.load(Ordering::Relaxed));
    let todo: Vec<(String, u64, String, u64)> = gw
        .pending()
        .map
        .iter()
        .filter(|(_, p)| p.info.mtime_ns <= ripe)
        .map(|(k, p)| (k.clone(), p.version, p.bucket.clone(), if p.deleted { 0 } else { p.info.size }))
        .collect();
    let memory = WindowBudget::default();
    let (next, failed, halt) = (AtomicUsize::new(0), AtomicBool::new(false), AtomicBool::new(false));
    let work = || {
        while !halt.load(Ordering::SeqCst) && !stopping(gw) {
            let Some((ck, version, bucket, size)) = todo.get(next.fetch_add(1, Ordering::SeqCst)) else { break };
            let _window = memory.take(*size);
            match flush_entry(gw, ck, *version, bucket) {
                Step::Done => {}
                Step::Failed => failed.store(true, Ordering::SeqCst),
                Step::Halt => {
                    failed.store(true, Ordering::SeqCst);
                    halt.store(true, Ordering::SeqCst);
                }
            }
        }
    };
    match workers.min(todo.len()) {
        0 => {}
        1 => work(),
        n => std::thread::scope(|s| {
            let spawned = (0..n)
                .take_while(|i| {
                    let spawned = std::thread::Builder::new().name(format!("reo-flush-{i}")).spawn_scoped(s, work);
                    if let Err(e) = &spawned {
                        tracing::warn!("cannot start flush worker {i} ({e}): flushing with fewer");
                    }
                    spawned.is_ok()
                })
                .count();
            if spawned == 0 {
                work();
            }
        }),
    }
    if halt.load(Ordering::SeqCst) {
        Step::Halt
    } else if failed.load(Ordering::SeqCst) {
        Step::Failed
    } else {
        Step::Done
    }
}

/// Flushes one ripe object of `bucket` and accounts for the outcome (logs, counters, the
/// bucket's and the backend's health).
fn flush_entry(gw: &Gateway, ck: &str, version: u64, bucket: &str) -> Step {
    // A missing bucket's objects wait for its retry (they are not failures of this round).
    if gw.gone.waiting(bucket, now_ns()) {
        return Step::Done;
    }
    let r = flush_one(gw, ck, version);
    if r.is_ok() && gw.gone.exists(bucket) {
        tracing::info!("bucket {bucket:?} exists again in the backend; its stuck objects are flushed");
    }
    match r {
        Ok(()) => Step::Done,
        Err(FlushError::BucketGone { key }) => {
            gw.counters.lock().flush_errors += 1;
            if gw.gone.failed(bucket, &key, now_ns()) {
                tracing::warn!(
                    "bucket {bucket:?} is missing in the backend (deleted behind the gateway?): object {key:?} \
                     and the bucket's other unflushed objects stay dirty on flash and are retried with \
                     backoff; recreate the bucket to flush them, or delete them to give them up"
                );
            } else {
                tracing::debug!("bucket {bucket:?} still missing in the backend; {key:?} stays dirty");
            }
            Step::Done
        }
        Err(e) => {
            if let FlushError::Backend(b) = &e {
                if !matches!(b, BackendError::Busy(_)) {
                    gw.health.record_failure(&b.to_string());
                }
            }
            tracing::warn!("flushing {ck:?} failed (retrying): {e}");
            gw.counters.lock().flush_errors += 1;
            // The backend's own I/O failed, or a layer over it refuses for now: the rest would
            // fail alike; try again after the backoff. Otherwise try the others (one bad object
            // must not hold them back).
            if matches!(e, FlushError::Backend(BackendError::Io(_) | BackendError::Busy(_))) {
                Step::Halt
            } else {
                Step::Failed
            }
        }
    }
}

/// Why an object was not flushed.
#[derive(Debug)]
enum FlushError {
    /// The backend refused or failed the write (counts towards "down").
    Backend(BackendError),
    /// The cache could not read the object or mark it clean.
    Local(String),
    /// The backend answered that the object's bucket does not exist ([`super::stuck`]).
    BucketGone { key: String },
}

impl std::fmt::Display for FlushError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            FlushError::Backend(e) => write!(f, "backend: {e}"),
            FlushError::Local(m) => write!(f, "{m}"),
            FlushError::BucketGone { key } => write!(f, "the bucket of {key:?} is missing in the backend"),
        }
    }
}

/// Writes one pending object (or applies one pending delete) to the backend and retires its
/// pending state, in three steps:
///
/// 1. under the key's stripe, shared (reads go on; writes wait, briefly): the pending state at
///    `version` and, for a write, its first window from flash (the whole object, up to
///    [`WINDOW`](super::flushing::WINDOW)); the key is marked as being flushed;
/// 2. holding no lock: the backend call (a slow or hung backend holds up nothing the cache can
///    answer) — for a write larger than a window, a streamed backend write fed a window at a
///    time ([`write_streamed`]), abandoned if the object changes while it is read — then the
///    key's mark is cleared;
/// 3. under the stripe, exclusive: unless a newer write or delete replaced the state meanwhile
///    (it is flushed in its turn), the state is retired — a write's record first loses its `prev`
///    (the backend holds the write now: the state before it must never be restored), the object
///    is marked clean, then the record is removed; a delete's cached copy is discarded durably,
///    then its tombstone is removed. A crash between any two of these leaves a state that
///    recovery flushes again (idempotent) or finds retired.
fn flush_one(gw: &Gateway, ck: &str, version: u64) -> Result<(), FlushError> {
    use FlushError::Local;
    let (p, first, call) = {
        let _r = gw.stripe_shared(ck);
        let Some(p) = gw.pending().map.get(ck).cloned() else { return Ok(()) };
        if p.version != version {
            return Ok(()); // overwritten since the snapshot: the next round takes the new version
        }
        debug_assert_eq!(cache_key(&p.bucket, &p.key), ck);
        let first = if p.deleted { None } else { Some(read_window(gw, ck, &p, 0)?) };
        (p, first, gw.flushing.begin(ck))
    };
    let r = match first {
        None => match gw.backend_calls.time("delete", || gw.raw_backend.delete(&p.bucket, &p.key)) {
            // A bucket deleted behind the gateway's back holds no key either: the delete is
            // done (retrying it would fail for ever and mark the backend down).
            Ok(()) | Err(BackendError::NoSuchKey(_)) | Err(BackendError::NoSuchBucket(_)) => Ok(()),
            Err(e) => Err(e),
        },
        // Read whole: one backend call.
        Some(bytes) if bytes.len() as u64 == p.info.size => {
            gw.backend_calls.time("put", || gw.raw_backend.put_owned(&p.bucket, &p.key, bytes, &p.info))
        }
        Some(bytes) => match write_streamed(gw, ck, &p, bytes)? {
            Some(r) => r,
            None => {
                // Rewritten or deleted while it was read: the newer state is flushed next.
                gw.counters.lock().flushes_abandoned += 1;
                return Ok(());
            }
        },
    };
    drop(call);
    match r {
        Ok(()) => {}
        // The backend answered (it is up): only this bucket is missing.
        Err(BackendError::NoSuchBucket(_)) => {
            gw.health.record_success();
            return Err(FlushError::BucketGone { key: p.key });
        }
        Err(e) => return Err(FlushError::Backend(e)),
    }
    gw.health.record_success();
    let _g = gw.stripe(ck);
    let unchanged = gw.pending().map.get(ck).is_some_and(|x| x.version == version && x.deleted == p.deleted);
    if !unchanged {
        return Ok(()); // replaced while the backend was written: the newer state is flushed next
    }
    if p.deleted {
        gw.cache.discard(ck.as_bytes()).map_err(|e| Local(format!("dropping the cached copy durably: {e}")))?;
        gw.retire(ck).map_err(|e| Local(e.to_string()))?;
        gw.counters.lock().flushed_deletes += 1;
        return Ok(());
    }
    if p.prev.is_some() {
        let done = super::pending::PendingPut { prev: None, ..p.clone() };
        gw.records.persist(&done).map_err(|e| Local(format!("rewriting the pending record: {e}")))?;
        gw.pending().map.insert(ck.to_string(), done);
    }
    let clean = match gw.cache.mark_clean_within(ck.as_bytes(), version, CLEAN_COMMIT_WITHIN) {
        Ok(c) => c,
        // Rewriting into the clean scheme needs free flash; with none left (everything dirty) the
        // object leaves the cache instead: it is safe in the backend now, and its space lets the
        // other dirty objects be cleaned.
        Err(reo_cache::WriteError::Full(_)) => {
            gw.cache.delete(ck.as_bytes());
            true
        }
        Err(e) => return Err(Local(e.to_string())),
    };
    #[cfg(test)]
    if gw.flushing.crash_before_retire.load(std::sync::atomic::Ordering::SeqCst) {
        return Err(Local("simulated crash before the record's removal".into()));
    }
    // Not clean by this call, yet holding no dirty version: an earlier call's clean mark whose
    // durability failed (the state is clean in memory), or the object left the cache. The
    // backend holds the version now: retire it once the mark is durable.
    let retire = clean || gw.cache.dirty_version_of(ck.as_bytes()).is_none();
    if !clean && retire {
        gw.cache.store().flush().map_err(|e| Local(format!("making the clean mark durable: {e}")))?;
    }
    if retire {
        gw.retire(ck).map_err(|e| Local(e.to_string()))?;
    }
    let mut c = gw.counters.lock();
    c.flushed_objects += 1;
    c.flushed_bytes += p.info.size;
    Ok(())
}

/// The window of the unflushed write `p` of `ck` that begins at `start` (at most [`WINDOW`](super::flushing::WINDOW), at
/// least a fragment), from flash. Read without the key's lock (but the first), it may be of a
/// newer version or missing: the caller checks the version after the read.
fn read_window(gw: &Gateway, ck: &str, p: &super::pending::PendingPut, start: u64) -> Result<bytes::Bytes, FlushError> {
    let fs = gw.cache.config().fragment_size;
    let window = gw.flush_window.load(std::sync::atomic::Ordering::Relaxed);
    let end = (start + (window / fs).max(1) * fs).min(p.info.size);
    let r = gw
        .cache
        .get_shared(ck.as_bytes(), start, end, now_ns(), false)
        .map_err(|e| FlushError::Local(e.to_string()))?;
    if !r.is_hit() && p.info.size > 0 {
        return Err(FlushError::Local(format!("unflushed object {ck:?} is not fully on flash")));
    }
    let mut out = bytes::BytesMut::with_capacity((end - start) as usize);
    for piece in r.pieces {
        for b in piece.data.map(reo_store::ReadBytes::into_bytes).into_iter().flatten() {
            out.extend_from_slice(&b);
        }
    }
    Ok(out.freeze())
}

/// Writes the unflushed write `p` of `ck` to the backend a window at a time, beginning with
/// `first`: the flusher holds one window, whatever the object's size. `None` if the object was
/// rewritten or deleted while it was read (the backend write is abandoned, leaving the backend
/// as it was); else the backend's answer.
///
/// Each later window is checked after its read against the version of the key's dirty data (a
/// new write or a delete changes it, and a version's blobs are freed only once it is replaced),
/// so bytes of two versions never reach the backend as one object, and nothing but a change of
/// this key cuts the write short.
fn write_streamed(
    gw: &Gateway,
    ck: &str,
    p: &super::pending::PendingPut,
    first: bytes::Bytes,
) -> Result<Option<crate::backend::BResult<()>>, FlushError> {
    let mut w = match gw.backend_calls.time("put", || gw.raw_backend.clone().put_stream(&p.bucket, &p.key, &p.info)) {
        Ok(w) => w,
        Err(e) => return Ok(Some(Err(e))),
    };
    let mut at = first.len() as u64;
    if let Err(e) = w.write(first) {
        return Ok(Some(Err(e)));
    }
    while at < p.info.size {
        let window = read_window(gw, ck, p, at);
        if gw.cache.dirty_version_of(ck.as_bytes()) != Some(p.version) {
            return Ok(None);
        }
        let window = window?;
        at += window.len() as u64;
        if let Err(e) = w.write(window) {
            return Ok(Some(Err(e)));
        }
    }
    Ok(Some(w.commit(&p.info).map(|_| ())))
}
