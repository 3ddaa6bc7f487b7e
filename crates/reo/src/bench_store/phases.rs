//! The store's throughput, measured in rounds interleaved with the raw test so that drift in the
//! machine's speed (common on shared or virtual machines) hits both sides of every ratio alike:
//!
//! - write rounds: a raw write pass and puts of `none(isolated)`, `replicate(2)` and the rs
//!   scheme, each on a freshly formatted store, from N threads with durability `none`, the closing
//!   `flush` (an fdatasync of every device) inside the time; the order rotates every round;
//! - read rounds, on one more rs store: a raw read pass (first in even rounds, last in odd ones),
//!   one in I/Os of the store's largest read ([`reo_store::MAX_READ_RUN`], reported without a
//!   target: the get's runs are that size, the raw pass's the put's column) and one that checks
//!   every byte it reads ([`raw::pass_checked`], no target),
//!   a get of every rs blob from [`Plan::get_readers`] threads (the figure with the target), again
//!   from N threads, the first with device 0 failed, then a clean reopen (which brings device 0
//!   back).
//!
//! Rounds repeat until every figure has `plan.write_min_secs` (writes) or `plan.min_secs` (reads)
//! measured. Blob `i` holds a window of one pre-generated pseudo-random buffer at a distinct
//! offset, so data costs nothing to make. Every blob a get reads is probed on the clock (a few
//! bytes every [`PROBE_STEP`], which catches a misplaced chunk or blob), and after the timer
//! stops every [`VERIFY_EVERY`]-th blob is read again and compared byte for byte; a mismatch fails
//! the benchmark. The full comparison is off the clock because it is the harness's work, not the
//! store's (the store verifies every chunk's checksum on the clock), and on this host it cost
//! 3.5–4% of the get figure (BENCHMARKS.md): the raw read pass, like fio, compares nothing. Windows
//! start on 4 KiB boundaries, as a caller that reads objects into aligned buffers (the gateway)
//! hands them: the store then writes full chunk bodies from the caller's memory (`lay_out.rs`).

use super::raw::{self, fill, Op};
use super::{progress, Acc, Plan, Span, Stopwatch, GC_RESERVE, MAX_ROUNDS, PUT_MARGIN};
use reo_media::{AlignedBuf, FileMedia, Media, ALIGN};
use reo_store::{Durability, Location, Placement, PutOptions, ReadBytes, Scheme, Store, StoreConfig, StoreStats};
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::sync::{Arc, Barrier};

/// Offsets of blob windows: this many bytes past the longest blob, in steps of [`ALIGN`].
const WINDOW: usize = 1 << 20;
/// Every this many blobs of a get (and the last) are read again after it and compared byte for
/// byte with what was written.
const VERIFY_EVERY: usize = 8;
/// A get compares this many bytes of every blob it reads ...
const PROBE_BYTES: usize = 32;
/// ... at every this many bytes of the blob, and its last bytes: far apart enough to cost little
/// (one cache line in 64), close enough that every chunk body (4 KiB at the least) is hit.
const PROBE_STEP: usize = 4096;

/// The blob contents of the benchmark.
pub struct Pattern(AlignedBuf);

impl Pattern {
    /// A pattern for blobs of at most `max_len` bytes.
    pub fn new(max_len: usize) -> Pattern {
        let mut v = AlignedBuf::zeroed(max_len + WINDOW);
        fill(&mut v, 7);
        Pattern(v)
    }

    /// The bytes of blob `i` (distinct windows for the first 256 indexes; the store's chunk
    /// trailers, not the contents, tell one blob's chunks from another's).
    pub fn blob(&self, i: u64, len: usize) -> &[u8] {
        let off = (i.wrapping_mul(7919) % (WINDOW / ALIGN) as u64) as usize * ALIGN;
        &self.0[off..off + len]
    }

    /// Fails unless `got` are the bytes of blob `i`.
    pub fn check(&self, got: &[u8], i: u64, what: &str) -> Result<(), String> {
        let want = self.blob(i, got.len());
        if got != want {
            let at = got.iter().zip(want).position(|(a, b)| a != b).unwrap_or(0);
            return Err(format!("bench store: {what}: blob {i} read back WRONG BYTES (first difference at byte {at})"));
        }
        Ok(())
    }

    /// Compares [`PROBE_BYTES`] of a zero-copy read of blob `i` at every [`PROBE_STEP`] bytes
    /// and its last ones with what was written: a chunk of another blob or another place fails it.
    pub fn probe_read(&self, got: &ReadBytes, i: u64, what: &str) -> Result<(), String> {
        let want = self.blob(i, got.len());
        let mut at = 0; // blob offset of the slice
        for s in got.slices() {
            let end = at + s.len();
            let tail = (end == want.len() && !s.is_empty()).then(|| want.len().saturating_sub(PROBE_BYTES).max(at));
            for x in (at.next_multiple_of(PROBE_STEP)..end).step_by(PROBE_STEP).chain(tail) {
                let y = (x + PROBE_BYTES).min(end);
                if s[x - at..y - at] != want[x..y] {
                    return Err(format!("bench store: {what}: blob {i} read back WRONG BYTES (at bytes {x}..{y})"));
                }
            }
            at = end;
        }
        Ok(())
    }
}

/// Blobs put in a round: (index, location).
pub type Blobs = Vec<(u64, Location)>;

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

fn close(store: Store) -> Result<(), String> {
    store.close().map_err(|e| format!("bench store: close: {e}"))
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
/// jobs' results and the time from the release to the end of `finish`.
fn timed<T, F>(threads: usize, job: F, finish: impl FnOnce() -> Result<(), String>) -> Result<(Vec<T>, Span), String>
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
        let clock = Stopwatch::start();
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
        Ok((out, clock.stop()))
    })
}

/// Puts blobs `0..count` (blob `i` of `len_of(i)` bytes, header = `i`) from `threads` threads,
/// thread `t` taking every `threads`-th index from `t` with placement key `t`, then flushes.
/// Returns the blobs and the time, flush included.
///
/// A thread stops early when the store is down to the bands its cleaner keeps plus
/// [`PUT_MARGIN`]: isolated placement shares a band between devices and seals it for all of them
/// when one device's share is full, so threads drifting apart (buffered I/O) can waste more space
/// than the plan allows for. The blobs actually put are returned (and counted).
pub fn put_blobs(
    store: &Store,
    scheme: Scheme,
    threads: usize,
    count: usize,
    len_of: impl Fn(u64) -> usize + Sync,
    pattern: &Pattern,
) -> Result<(Blobs, Span), String> {
    let low_water = (GC_RESERVE + PUT_MARGIN) as usize;
    let job = |t: usize, stop: &AtomicBool| {
        let opts = PutOptions::new(scheme).durability(Durability::None).placement(t as u64);
        let mut locs = Vec::with_capacity(count / threads + 1);
        for i in (t..count).step_by(threads) {
            if stop.load(Ordering::Relaxed) || store.space().free_bands <= low_water {
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
    let (locs, span) = timed(threads, job, flush)?;
    let mut locs: Blobs = locs.into_iter().flatten().collect();
    locs.sort_by_key(|(i, _)| *i);
    check_stats(&store.stats(), &format!("put {scheme}"))?;
    Ok((locs, span))
}

/// Reads back a few blobs (untimed) and compares them with what was written.
fn spot_check(store: &Store, locs: &Blobs, pattern: &Pattern, what: &str) -> Result<(), String> {
    let step = (locs.len() / 4).max(1);
    for (i, loc) in locs.iter().step_by(step).chain(locs.last()) {
        let got = store.read_all(loc).map_err(|e| format!("bench store: {what}: read of blob {i}: {e}"))?;
        pattern.check(&got, *i, what)?;
    }
    Ok(())
}

/// One put round: `per_thread` blobs of `plan.blob` bytes from each of N threads on a fresh
/// store. Returns the store, its blobs, and (user bytes, time).
fn put_round(
    devs: &[Arc<dyn Media>],
    cfg: &StoreConfig,
    plan: &Plan,
    scheme: Scheme,
    per_thread: usize,
    pattern: &Pattern,
) -> Result<(Store, Blobs, (u64, Span)), String> {
    let len = plan.blob as usize;
    let store = fresh_store(devs, cfg)?;
    let (locs, span) = put_blobs(&store, scheme, plan.n, plan.n * per_thread, |_| len, pattern)?;
    spot_check(&store, &locs, pattern, &format!("put {scheme}"))?;
    let bytes = (locs.len() * len) as u64;
    Ok((store, locs, (bytes, span)))
}

/// Reads every blob of `locs` from `threads` threads, probing each, then (off the clock) compares
/// every [`VERIFY_EVERY`]-th blob in full; returns (bytes, time). Reads are zero-copy
/// ([`Store::read_bytes`]), as the gateway's GET streams them.
fn get_once(store: &Store, locs: &Blobs, threads: usize, pattern: &Pattern, what: &str) -> Result<(u64, Span), String> {
    let timed_get = get_timed(store, locs, threads, pattern, what)?;
    for (i, loc) in locs.iter().step_by(VERIFY_EVERY).chain(locs.last()) {
        let got = store.read_all(loc).map_err(|e| format!("bench store: {what}: read of blob {i}: {e}"))?;
        pattern.check(&got, *i, what)?;
    }
    check_stats(&store.stats(), what)?;
    Ok(timed_get)
}

/// The timed part of [`get_once`].
fn get_timed(
    store: &Store,
    locs: &Blobs,
    threads: usize,
    pattern: &Pattern,
    what: &str,
) -> Result<(u64, Span), String> {
    let next = AtomicUsize::new(0);
    let job = |_t: usize, stop: &AtomicBool| {
        let mut bytes = 0u64;
        while !stop.load(Ordering::Relaxed) {
            let j = next.fetch_add(1, Ordering::Relaxed);
            let Some((i, loc)) = locs.get(j) else { break };
            let got =
                store.read_bytes(loc, 0, loc.len).map_err(|e| format!("bench store: {what}: read of blob {i}: {e}"))?;
            if got.len() as u64 != loc.len {
                return Err(format!("bench store: {what}: blob {i} read {} bytes of {}", got.len(), loc.len));
            }
            pattern.probe_read(&got, *i, what)?;
            bytes += got.len() as u64;
        }
        Ok(bytes)
    };
    let (bytes, span) = timed(threads, job, || Ok(()))?;
    Ok((bytes.iter().sum(), span))
}

/// The figures of the raw test and the store, accumulated over rounds.
pub struct Measured {
    pub raw_write: Acc,
    pub raw_read: Acc,
    /// The raw read in I/Os of the store's largest read ([`reo_store::MAX_READ_RUN`]).
    pub raw_read_run: Acc,
    /// The raw read with every byte CRC-checked by a second thread per file ([`raw::pass_checked`]).
    pub raw_read_checked: Acc,
    pub put_none: Acc,
    pub put_rs: Acc,
    pub put_replicate: Acc,
    /// Gets from [`Plan::get_readers`] threads (the device lanes keep the raw test's depth).
    pub get: Acc,
    /// Gets from N threads (up to N I/Os in flight per device).
    pub get_parallel: Acc,
    pub degraded_get: Acc,
    /// Reads that needed a reconstruction while device 0 was failed.
    pub degraded_reads: u64,
    pub reconstructed_chunks: u64,
}

/// Write rounds then read rounds (see the module doc).
pub fn run(
    files: &[Arc<FileMedia>],
    devs: &[Arc<dyn Media>],
    cfg: &StoreConfig,
    plan: &Plan,
) -> Result<Measured, String> {
    let pattern = Pattern::new(plan.blob as usize);
    let none = Scheme::None(Placement::Isolated);
    // Write rounds: the raw pass and the three schemes, in an order rotating from round to round
    // so that no figure always follows a pause (or another figure's backlog on the device). The
    // rounds come in whole rotations, so that every figure takes every place equally often: with
    // 6 or 7 rounds, as 10 s gave here, some figures had a good place once more than others.
    let puts =
        [(none, plan.none_per_thread), (Scheme::Replicate(2), plan.rep_per_thread), (plan.rs, plan.rs_per_thread)];
    let mut accs: [Acc; 4] = Default::default(); // raw write, then the schemes of `puts`
    let mut short = [0usize; 3]; // rounds of each scheme that stopped early
    let mut round = 0;
    while round < MAX_ROUNDS && (accs.iter().any(|a| a.secs < plan.write_min_secs) || round % 4 != 0) {
        for i in 0..4 {
            match (round + i) % 4 {
                0 => accs[0].add(raw::pass(files, plan, Op::Write)?),
                k => {
                    let (scheme, per_thread) = puts[k - 1];
                    let (store, locs, timing) = put_round(devs, cfg, plan, scheme, per_thread, &pattern)?;
                    accs[k].add(timing);
                    short[k - 1] += usize::from(locs.len() < plan.n * per_thread);
                    close(store)?;
                }
            }
        }
        round += 1;
    }
    let [raw_write, put_none, put_replicate, put_rs] = accs;
    for ((scheme, _), short) in puts.iter().zip(short).filter(|(_, s)| *s > 0) {
        progress(format_args!(
            "note: {short} rounds of {scheme} puts stopped early, the store's free bands running low"
        ));
    }
    progress(format_args!("raw write: {} ({} KiB I/Os, one thread per file)", raw_write.describe(), plan.io >> 10));
    progress(format_args!("put {none}: {} blobs per round, {}", plan.n * plan.none_per_thread, put_none.describe()));
    progress(format_args!(
        "put replicate(2): {} blobs per round, {}",
        plan.n * plan.rep_per_thread,
        put_replicate.describe()
    ));
    progress(format_args!("put {}: {} blobs per round, {}", plan.rs, plan.n * plan.rs_per_thread, put_rs.describe()));

    // Read rounds on one more rs store (its put is not counted): the raw pass before the two
    // gets in even rounds, after them in odd ones.
    let (mut store, locs, _) = put_round(devs, cfg, plan, plan.rs, plan.rs_per_thread, &pattern)?;
    let (mut raw_read, mut get, mut degraded_get) = (Acc::default(), Acc::default(), Acc::default());
    let mut get_parallel = Acc::default();
    let (mut raw_read_run, mut raw_read_checked) = (Acc::default(), Acc::default());
    let (mut degraded_reads, mut reconstructed_chunks) = (0, 0);
    let get_what = format!("get {}", plan.rs);
    let degraded_what = format!("degraded get {} (device 0 failed)", plan.rs);
    progress(format_args!("read rounds: device 0 is failed by command for each degraded get, back after a reopen"));
    for round in 0..MAX_ROUNDS {
        if round % 2 == 0 {
            raw_read.add(raw::pass(files, plan, Op::Read)?);
            raw_read_run.add(raw::pass_with(files, plan, Op::Read, reo_store::MAX_READ_RUN)?);
            raw_read_checked.add(raw::pass_checked(files, plan)?);
        }
        get.add(get_once(&store, &locs, plan.get_readers, &pattern, &get_what)?);
        get_parallel.add(get_once(&store, &locs, plan.n, &pattern, &get_what)?);
        let before = store.stats();
        store.fail_device(0).map_err(|e| format!("bench store: fail device 0: {e}"))?;
        degraded_get.add(get_once(&store, &locs, plan.get_readers, &pattern, &degraded_what)?);
        let after = store.stats();
        if after.degraded_reads == before.degraded_reads {
            return Err("bench store: degraded get reconstructed nothing: device 0 was not failed".into());
        }
        degraded_reads += after.degraded_reads - before.degraded_reads;
        reconstructed_chunks += after.reconstructed_chunks - before.reconstructed_chunks;
        if round % 2 == 1 {
            raw_read_checked.add(raw::pass_checked(files, plan)?);
            raw_read_run.add(raw::pass_with(files, plan, Op::Read, reo_store::MAX_READ_RUN)?);
            raw_read.add(raw::pass(files, plan, Op::Read)?);
        }
        close(store)?;
        // A clean reopen: device 0 is healthy again, every blob where it was.
        let (s, report) = Store::open(devs.to_vec(), cfg).map_err(|e| format!("bench store: reopen: {e}"))?;
        if !report.clean || report.live_blobs != locs.len() || !report.failed_devices.is_empty() {
            return Err(format!("bench store: reopen after the degraded get was not clean: {report:?}"));
        }
        store = s;
        if [&raw_read, &get, &get_parallel, &degraded_get].iter().all(|a| a.secs >= plan.min_secs) {
            break;
        }
    }
    close(store)?;
    progress(format_args!("raw read: {} ({} KiB I/Os, one thread per file)", raw_read.describe(), plan.io >> 10));
    progress(format_args!(
        "raw read in the store's read size: {} ({} KiB I/Os, one thread per file)",
        raw_read_run.describe(),
        reo_store::MAX_READ_RUN >> 10
    ));
    progress(format_args!(
        "raw read, every byte checked: {} ({} KiB I/Os, a reading and a checking thread per file)",
        raw_read_checked.describe(),
        plan.io >> 10
    ));
    progress(format_args!(
        "{get_what}: {} blobs per round, {} reader(s), {}",
        locs.len(),
        plan.get_readers,
        get.describe()
    ));
    progress(format_args!("{get_what} from {} readers: {}", plan.n, get_parallel.describe()));
    progress(format_args!("{degraded_what}: {}", degraded_get.describe()));
    Ok(Measured {
        raw_write,
        raw_read,
        raw_read_run,
        raw_read_checked,
        put_none,
        put_rs,
        put_replicate,
        get,
        get_parallel,
        degraded_get,
        degraded_reads,
        reconstructed_chunks,
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use reo_media::MemMedia;

    /// The probe passes the blob's own bytes and fails another blob's, a shifted read, and a
    /// single flipped byte at a probed place (a flip elsewhere is the store's checksum's job).
    #[test]
    fn probe_read_tells_a_blob_from_another() {
        let devs: Vec<Arc<dyn Media>> = (0..4).map(|_| Arc::new(MemMedia::new(64 << 20)) as Arc<dyn Media>).collect();
        let cfg = StoreConfig { chunk_size: 64 << 10, create: true, ..Default::default() };
        let store = fresh_store(&devs, &cfg).unwrap();
        let len = (300 << 10) + 123;
        let pattern = Pattern::new(len);
        let opts = PutOptions::new(Scheme::Rs { k: 2, p: 2 });
        let loc = store.put(b"h", pattern.blob(5, len), &opts).unwrap();
        let got = store.read_bytes(&loc, 0, loc.len).unwrap();
        assert!(got.slices().count() > 1, "the read spans several chunks");
        pattern.probe_read(&got, 5, "t").unwrap();
        assert!(pattern.probe_read(&got, 6, "t").unwrap_err().contains("WRONG BYTES"));
        let part = store.read_bytes(&loc, 1, loc.len).unwrap();
        assert!(pattern.probe_read(&part, 5, "t").is_err(), "bytes one off their place");
        // The same bytes with one flipped at a probed offset, as another blob.
        let mut bytes = pattern.blob(5, len).to_vec();
        bytes[3 * PROBE_STEP + 1] ^= 1;
        let flipped = store.put(b"h", &bytes, &opts).unwrap();
        let got = store.read_bytes(&flipped, 0, flipped.len).unwrap();
        assert!(pattern.probe_read(&got, 5, "t").unwrap_err().contains(&format!("{}", 3 * PROBE_STEP)));
        // ... and at the last byte.
        bytes[3 * PROBE_STEP + 1] ^= 1;
        bytes[len - 1] ^= 1;
        let flipped = store.put(b"h", &bytes, &opts).unwrap();
        let got = store.read_bytes(&flipped, 0, flipped.len).unwrap();
        assert!(pattern.probe_read(&got, 5, "t").is_err());
    }
}
