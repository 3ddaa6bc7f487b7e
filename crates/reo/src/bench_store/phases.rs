//! The store's throughput: puts of each scheme on a fresh store (N threads, durability `none`,
//! the closing `flush` — an fdatasync of every device — inside the time), then reads of every rs
//! blob from N threads, healthy and with device 0 failed.
//!
//! Blob `i` holds a window of one pre-generated pseudo-random buffer starting at a distinct
//! offset, so data costs the benchmark nothing to make, and every sampled read is compared with
//! what was written: a mismatch fails the benchmark.

use super::raw::fill;
use super::{progress, repeat, Plan, MIB};
use reo_media::{AlignedBuf, Media};
use reo_store::{Durability, Location, Placement, PutOptions, Scheme, Store, StoreConfig, StoreStats};
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::sync::{Arc, Barrier};
use std::time::Instant;

/// Offsets of blob windows: this many bytes past the longest blob, in steps of 8 bytes.
const WINDOW: usize = 1 << 20;
/// Every this many reads (and the last) are compared byte for byte with what was written.
const VERIFY_EVERY: usize = 8;

/// The blob contents of the benchmark.
pub struct Pattern(Vec<u8>);

impl Pattern {
    /// A pattern for blobs of at most `max_len` bytes.
    pub fn new(max_len: usize) -> Pattern {
        let mut v = vec![0u8; max_len + WINDOW];
        fill(&mut v, 7);
        Pattern(v)
    }

    /// The bytes of blob `i` (distinct windows for the first 131072 indexes).
    pub fn blob(&self, i: u64, len: usize) -> &[u8] {
        let off = (i.wrapping_mul(7919) % (WINDOW as u64 / 8)) as usize * 8;
        &self.0[off..off + len]
    }

    /// Fails unless `got` are the bytes of blob `i`.
    pub fn check(&self, got: &[u8], i: u64, what: &str) -> Result<(), String> {
        let want = self.blob(i, got.len());
        if got.len() != want.len() || got != want {
            let at = got.iter().zip(want).position(|(a, b)| a != b).unwrap_or(0);
            return Err(format!("bench store: {what}: blob {i} read back WRONG BYTES (first difference at byte {at})"));
        }
        Ok(())
    }
}

/// Formats a fresh store on `devs` (their superblocks blanked first).
pub fn fresh_store(devs: &[Arc<dyn Media>], cfg: &StoreConfig) -> Result<Store, String> {
    let zero = AlignedBuf::zeroed(8192);
    for d in devs {
        d.write_at(&zero, 0)
            .and_then(|_| d.sync())
            .map_err(|e| format!("bench store: cannot blank the superblock of {}: {e}", d.describe()))?;
    }
    let (store, report) = Store::open(devs.to_vec(), cfg).map_err(|e| format!("bench store: cannot format: {e}"))?;
    if !report.formatted {
        return Err("bench store: the store was not freshly formatted".into());
    }
    Ok(store)
}

/// Fails when the store counted I/O or checksum errors.
pub fn check_stats(s: &StoreStats, what: &str) -> Result<(), String> {
    if s.write_errors + s.read_errors + s.checksum_errors > 0 {
        return Err(format!(
            "bench store: {what}: the store saw {} write errors, {} read errors, {} checksum errors",
            s.write_errors, s.read_errors, s.checksum_errors
        ));
    }
    Ok(())
}

/// Runs `job(thread, stop)` on `threads` threads released at once, then `finish`; returns the
/// jobs' results and the wall time from the release to the end of `finish`.
pub fn timed<T, F>(threads: usize, job: F, finish: impl FnOnce() -> Result<(), String>) -> Result<(Vec<T>, f64), String>
where
    T: Send,
    F: Fn(usize, &AtomicBool) -> Result<T, String> + Sync,
{
    let barrier = Barrier::new(threads + 1);
    let stop = AtomicBool::new(false);
    std::thread::scope(|s| {
        let handles: Vec<_> = (0..threads)
            .map(|t| {
                let (job, barrier, stop) = (&job, &barrier, &stop);
                s.spawn(move || {
                    barrier.wait();
                    let r = job(t, stop);
                    if r.is_err() {
                        stop.store(true, Ordering::Relaxed);
                    }
                    r
                })
            })
            .collect();
        barrier.wait();
        let t0 = Instant::now();
        let mut out = Vec::with_capacity(threads);
        let mut first_err = None;
        for h in handles {
            match h.join().unwrap_or_else(|_| Err("bench store: a worker thread panicked".into())) {
                Ok(v) => out.push(v),
                Err(e) => {
                    first_err.get_or_insert(e);
                }
            }
        }
        if let Some(e) = first_err {
            return Err(e);
        }
        finish()?;
        Ok((out, t0.elapsed().as_secs_f64()))
    })
}

/// Puts blobs `0..count` (blob `i` of `len_of(i)` bytes, header = `i`) from `threads` threads,
/// thread `t` taking every `threads`-th index from `t` with placement key `t`, then flushes.
/// Returns the blobs (index, location) and the seconds, flush included.
pub fn put_blobs(
    store: &Store,
    scheme: Scheme,
    threads: usize,
    count: usize,
    len_of: impl Fn(u64) -> usize + Sync,
    pattern: &Pattern,
) -> Result<(Vec<(u64, Location)>, f64), String> {
    let job = |t: usize, stop: &AtomicBool| {
        let opts = PutOptions::new(scheme).durability(Durability::None).placement(t as u64);
        let mut locs = Vec::with_capacity(count / threads + 1);
        for i in (t..count).step_by(threads) {
            if stop.load(Ordering::Relaxed) {
                break;
            }
            let i = i as u64;
            let loc = store
                .put(&i.to_le_bytes(), pattern.blob(i, len_of(i)), &opts)
                .map_err(|e| format!("bench store: put of {scheme} blob {i}: {e}"))?;
            locs.push((i, loc));
        }
        Ok(locs)
    };
    let flush = || store.flush().map_err(|e| format!("bench store: flush after {scheme} puts: {e}"));
    let (locs, secs) = timed(threads, job, flush)?;
    let mut locs: Vec<(u64, Location)> = locs.into_iter().flatten().collect();
    locs.sort_by_key(|(i, _)| *i);
    check_stats(&store.stats(), &format!("put {scheme}"))?;
    Ok((locs, secs))
}

fn close(store: Store) -> Result<(), String> {
    store.close().map_err(|e| format!("bench store: close: {e}"))
}

/// Rounds of `per_thread` blobs of `plan.blob` bytes from each of N threads, each round on a
/// fresh store, for `plan.min_secs`. Returns the last round's store and blobs, and MiB/s of user
/// bytes over all rounds.
fn put_rounds(
    devs: &[Arc<dyn Media>],
    cfg: &StoreConfig,
    plan: &Plan,
    scheme: Scheme,
    per_thread: usize,
    pattern: &Pattern,
) -> Result<(Store, Vec<(u64, Location)>, f64), String> {
    let (n, len) = (plan.n, plan.blob as usize);
    let mut last: Option<(Store, Vec<(u64, Location)>)> = None;
    let (mibps, rounds, bytes) = repeat(plan.min_secs, |_| {
        if let Some((store, _)) = last.take() {
            close(store)?;
        }
        let store = fresh_store(devs, cfg)?;
        let (locs, secs) = put_blobs(&store, scheme, n, n * per_thread, |_| len, pattern)?;
        spot_check(&store, &locs, pattern, &format!("put {scheme}"))?;
        let bytes = (locs.len() * len) as u64;
        last = Some((store, locs));
        Ok((bytes, secs))
    })?;
    progress(format_args!(
        "put {scheme}: {rounds} rounds of {} blobs, {:.0} MiB = {mibps:.1} MiB/s",
        n * per_thread,
        bytes as f64 / MIB
    ));
    let (store, locs) = last.expect("at least one round");
    Ok((store, locs, mibps))
}

/// Reads every blob of `locs` from `threads` threads, checking a sample; returns bytes and
/// seconds.
fn get_once(
    store: &Store,
    locs: &[(u64, Location)],
    threads: usize,
    pattern: &Pattern,
    what: &str,
) -> Result<(u64, f64), String> {
    let next = AtomicUsize::new(0);
    let job = |_t: usize, stop: &AtomicBool| {
        let mut bytes = 0u64;
        while !stop.load(Ordering::Relaxed) {
            let j = next.fetch_add(1, Ordering::Relaxed);
            let Some((i, loc)) = locs.get(j) else { break };
            let got = store.read_all(loc).map_err(|e| format!("bench store: {what}: read of blob {i}: {e}"))?;
            if got.len() as u64 != loc.len {
                return Err(format!("bench store: {what}: blob {i} read {} bytes of {}", got.len(), loc.len));
            }
            if j % VERIFY_EVERY == 0 || j + 1 == locs.len() {
                pattern.check(&got, *i, what)?;
            }
            bytes += got.len() as u64;
        }
        Ok(bytes)
    };
    let (bytes, secs) = timed(threads, job, || Ok(()))?;
    check_stats(&store.stats(), what)?;
    Ok((bytes.iter().sum(), secs))
}

/// Rounds of reading every blob of `locs` from `plan.n` threads for `plan.min_secs`; MiB/s.
fn get_rounds(
    store: &Store,
    locs: &[(u64, Location)],
    plan: &Plan,
    pattern: &Pattern,
    what: &str,
) -> Result<f64, String> {
    let (mibps, rounds, bytes) = repeat(plan.min_secs, |_| get_once(store, locs, plan.n, pattern, what))?;
    progress(format_args!(
        "{what}: {rounds} rounds of {} blobs, {:.0} MiB = {mibps:.1} MiB/s",
        locs.len(),
        bytes as f64 / MIB
    ));
    Ok(mibps)
}

/// Reads back a few blobs (untimed) and compares them with what was written.
fn spot_check(store: &Store, locs: &[(u64, Location)], pattern: &Pattern, what: &str) -> Result<(), String> {
    let step = (locs.len() / 4).max(1);
    for (i, loc) in locs.iter().step_by(step).chain(locs.last()) {
        let got = store.read_all(loc).map_err(|e| format!("bench store: {what}: read of blob {i}: {e}"))?;
        pattern.check(&got, *i, what)?;
    }
    Ok(())
}

/// The figures of the store phases, in MiB/s of user bytes.
pub struct StorePhases {
    pub put_none: f64,
    pub put_rs: f64,
    pub put_replicate: f64,
    pub get: f64,
    pub degraded_get: f64,
    /// Reads that needed a reconstruction while device 0 was failed.
    pub degraded_reads: u64,
    pub reconstructed_chunks: u64,
}

/// Puts of each scheme on fresh stores, then get and degraded get of the rs blobs.
pub fn run(devs: &[Arc<dyn Media>], cfg: &StoreConfig, plan: &Plan) -> Result<StorePhases, String> {
    let pattern = Pattern::new(plan.blob as usize);
    let none = Scheme::None(Placement::Isolated);
    let (store, _, put_none) = put_rounds(devs, cfg, plan, none, plan.none_per_thread, &pattern)?;
    close(store)?;
    let (store, _, put_replicate) = put_rounds(devs, cfg, plan, Scheme::Replicate(2), plan.rep_per_thread, &pattern)?;
    close(store)?;
    let (store, locs, put_rs) = put_rounds(devs, cfg, plan, plan.rs, plan.rs_per_thread, &pattern)?;
    let get = get_rounds(&store, &locs, plan, &pattern, &format!("get {}", plan.rs))?;
    let before = store.stats();
    store.fail_device(0).map_err(|e| format!("bench store: fail device 0: {e}"))?;
    let what = format!("degraded get {} (device 0 failed)", plan.rs);
    let degraded_get = get_rounds(&store, &locs, plan, &pattern, &what)?;
    let after = store.stats();
    let degraded_reads = after.degraded_reads - before.degraded_reads;
    if degraded_reads == 0 {
        return Err("bench store: degraded get reconstructed nothing: device 0 was not failed".into());
    }
    close(store)?;
    Ok(StorePhases {
        put_none,
        put_rs,
        put_replicate,
        get,
        degraded_get,
        degraded_reads,
        reconstructed_chunks: after.reconstructed_chunks - before.reconstructed_chunks,
    })
}
