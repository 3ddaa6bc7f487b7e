//! `reo bench store --sizes`: objects from a kilobyte to megabytes, per size and scheme, against
//! the raw rate of the same files at the same I/O size, in the same run.
//!
//! For every size, first the raw side on the device files (one thread per file, or 32 spread over
//! the files): writes of the size rounded up to the 4 KiB sector, each followed by an fdatasync of
//! its file (what a `Sync` put needs at the least), then reads of what was written at random
//! sector-aligned offsets. Then, for each of `none(isolated)`, `rs(k,p)` and `replicate(2)`, a
//! freshly formatted store on the same files takes `Sync` puts from 1 thread and then from 32
//! (each its own placement key), is read back by 1 and then 32 threads at random, and reports:
//!
//! * **footprint**: live device bytes of the scheme's blobs per user byte (data, parity or copies,
//!   trailers and padding; journal and checkpoint apart), against the scheme's redundancy factor
//!   (isolated 1, rs(k,p) (k+p)/k, replicate(r) r);
//! * **device bytes written per put**: every byte the store wrote to the files (journal included)
//!   during the puts, per put;
//! * puts/s and gets/s at 1 and 32 threads, and the fdatasyncs of all devices per put (how many
//!   puts share one journal batch: group commit).
//!
//! Both sides write bytes prepared before the clock starts (the store's puts slices of a pattern,
//! each raw writer its own buffer, stamped with the slot it goes to). Every timed get is a
//! zero-copy read checked by probes (its length, and bytes at every 4 KiB and at its end against
//! the pattern): a short get, a misplaced sector or another blob's bytes fail the run. Each
//! figure runs for a fixed time; the counts of operations timed are in the JSON.

use super::phases::{check_stats, fresh_store, Pattern};
use super::{progress, rs_scheme, store_config, GC_RESERVE, PUT_MARGIN};
use reo_gateway::device_io::{CountedMedia, DeviceIo};
use reo_media::{AlignedBuf, FileMedia, Media};
use reo_store::{Durability, Location, PutOptions, Scheme};
use serde_json::json;
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::sync::{Arc, Barrier, Mutex};
use std::time::{Duration, Instant};

/// The thread counts every figure is measured at.
pub const THREADS: [usize; 2] = [1, 32];
/// The footprint target for objects of 4 KiB and more, and for 1 KiB objects: times the
/// scheme's redundancy factor.
const FOOTPRINT_TARGET: f64 = 1.1;
const FOOTPRINT_TARGET_1K: f64 = 1.25;
/// 32-thread 4 KiB Sync puts against the raw 32-thread 4 KiB write + fdatasync rate, and against
/// the store's 1-thread rate.
const SYNC_RAW_TARGET: f64 = 0.8;
const SYNC_SCALING_TARGET: f64 = 8.0;

/// The raw side of one size.
pub struct Raw {
    pub io: usize,
    /// Writes + fdatasync per second, at 1 and 32 threads.
    pub sync_writes: [f64; 2],
    /// Reads per second, at 1 and 32 threads.
    pub reads: [f64; 2],
}

/// One scheme at one size.
pub struct Row {
    pub scheme: Scheme,
    pub redundancy: f64,
    pub footprint: f64,
    pub written_per_put: f64,
    pub puts: [f64; 2],
    /// fdatasyncs of all devices per put, at 1 and 32 threads: under 1 per device when
    /// concurrent puts share journal batches (group commit).
    pub syncs_per_put: [f64; 2],
    pub gets: [f64; 2],
    /// Operations timed: puts, gets.
    pub counted: (usize, usize),
}

/// One size: its raw side and its schemes.
pub struct Size {
    pub size: u64,
    pub raw: Raw,
    pub rows: Vec<Row>,
}

/// What the store's redundancy costs by definition: device bytes per user byte.
fn redundancy(scheme: Scheme) -> f64 {
    match scheme {
        Scheme::Rs { k, p } => f64::from(k + p) / f64::from(k),
        Scheme::Replicate(r) => f64::from(r),
        _ => 1.0,
    }
}

/// Runs `op(thread, i)` from `threads` threads, released at once, until `secs` pass or one fails
/// or `op` returns false (out of room); returns the operations done and the seconds.
fn for_a_while<F>(threads: usize, secs: f64, op: F) -> Result<(usize, f64), String>
where
    F: Fn(usize, usize) -> Result<bool, String> + Sync,
{
    let barrier = Barrier::new(threads + 1);
    let (stop, done) = (AtomicBool::new(false), AtomicUsize::new(0));
    let deadline = Duration::from_secs_f64(secs);
    let (elapsed, result) = std::thread::scope(|s| {
        let handles: Vec<_> = (0..threads)
            .map(|t| {
                let (op, barrier, stop, done) = (&op, &barrier, &stop, &done);
                s.spawn(move || -> Result<(), String> {
                    barrier.wait();
                    let mut i = 0;
                    while !stop.load(Ordering::Relaxed) {
                        let go_on = op(t, i).inspect_err(|_| stop.store(true, Ordering::Relaxed))?;
                        if !go_on {
                            break;
                        }
                        done.fetch_add(1, Ordering::Relaxed);
                        i += 1;
                    }
                    Ok(())
                })
            })
            .collect();
        barrier.wait();
        let t0 = Instant::now();
        while t0.elapsed() < deadline && handles.iter().any(|h| !h.is_finished()) {
            std::thread::sleep(Duration::from_millis(5).min(deadline.saturating_sub(t0.elapsed())));
        }
        stop.store(true, Ordering::Relaxed);
        let results: Vec<_> = handles.into_iter().map(|h| h.join()).collect();
        let elapsed = t0.elapsed().as_secs_f64();
        let r =
            results.into_iter().try_for_each(|r| r.unwrap_or_else(|_| Err("bench store: a thread panicked".into())));
        (elapsed, r)
    });
    result?;
    Ok((done.load(Ordering::Relaxed), elapsed))
}

/// A pseudo-random number from `(thread, i)`: spreads reads over what was written.
fn mix(t: usize, i: usize) -> u64 {
    let x = ((t as u64) << 40 ^ i as u64).wrapping_mul(0x9E37_79B9_7F4A_7C15);
    x ^ (x >> 29)
}

/// One filled `io`-byte buffer per thread, made before the clock starts (each thread locks only
/// its own, so the lock is never contended).
fn thread_buffers(threads: usize, io: usize) -> Vec<Mutex<AlignedBuf>> {
    (0..threads)
        .map(|t| {
            let mut buf = AlignedBuf::zeroed(io);
            super::raw::fill(&mut buf, t as u64 + 1);
            Mutex::new(buf)
        })
        .collect()
}

/// The raw side of `size` on `files`, in `[start, start + region)` of each.
fn raw(files: &[Arc<FileMedia>], start: u64, region: u64, size: u64, secs: f64) -> Result<Raw, String> {
    let io = (size as usize).div_ceil(4096) * 4096;
    let slots = region / io as u64;
    let n = files.len();
    let per_file = THREADS.iter().max().copied().unwrap_or(1).div_ceil(n) as u64;
    if slots < per_file {
        return Err(format!(
            "bench store: devices too small for {size}-byte raw I/Os from every thread (use a larger --device-size)"
        ));
    }
    let mut out = Raw { io, sync_writes: [0.0; 2], reads: [0.0; 2] };
    for (k, &threads) in THREADS.iter().enumerate() {
        let bufs = thread_buffers(threads, io);
        let (ops, s) = for_a_while(threads, secs, |t, i| {
            let mut buf = bufs[t].lock().map_err(|_| "bench store: a raw writer panicked")?;
            // Thread t writes its own slots of file t % n, in order.
            let m = threads.div_ceil(n) as u64;
            let slot = (t / n) as u64 + (i as u64 % (slots / m)) * m;
            // Only a stamp per write: the store's side puts bytes prepared before the clock too.
            buf[..8].copy_from_slice(&slot.to_le_bytes());
            buf[8..16].copy_from_slice(&(i as u64).to_le_bytes());
            let f = &files[t % n];
            f.write_at(&buf, start + slot * io as u64).map_err(|e| format!("bench store: raw write: {e}"))?;
            f.sync().map_err(|e| format!("bench store: raw fdatasync: {e}"))?;
            Ok(true)
        })?;
        out.sync_writes[k] = ops as f64 / s;
    }
    for (k, &threads) in THREADS.iter().enumerate() {
        let bufs = thread_buffers(threads, io);
        let (ops, s) = for_a_while(threads, secs, |t, i| {
            let mut buf = bufs[t].lock().map_err(|_| "bench store: a raw reader panicked")?;
            // The files were preconditioned: every slot holds data, none is a hole.
            let slot = mix(t, i) % slots;
            files[(t + i) % n]
                .read_at(&mut buf, start + slot * io as u64)
                .map_err(|e| format!("bench store: raw read: {e}"))?;
            Ok(true)
        })?;
        out.reads[k] = ops as f64 / s;
    }
    Ok(out)
}

/// One scheme at `size` on a fresh store.
fn scheme_row(files: &[Arc<FileMedia>], chunk: u32, scheme: Scheme, size: u64, secs: f64) -> Result<Row, String> {
    let counters: Vec<Arc<DeviceIo>> = files.iter().map(|_| Arc::new(DeviceIo::default())).collect();
    let media: Vec<Arc<dyn Media>> = files
        .iter()
        .zip(&counters)
        .map(|(f, io)| Arc::new(CountedMedia::new(f.clone() as Arc<dyn Media>, io.clone())) as Arc<dyn Media>)
        .collect();
    let store = fresh_store(&media, &store_config(chunk))?;
    let counted = |field: usize| counters.iter().map(|c| c.snapshot()[field]).sum::<u64>();
    let written = || counted(3);
    let pattern = Pattern::new(size as usize);
    // Each thread count gets half the room: large objects fill small devices within the time.
    let low_water = (GC_RESERVE + PUT_MARGIN) as usize;
    let room = store.space().free_bands.saturating_sub(low_water);
    let next = AtomicUsize::new(0);
    let locs = std::sync::Mutex::new(Vec::new());
    let before = written();
    let mut puts = [0.0; 2];
    let mut syncs_per_put = [0.0; 2];
    let mut put_count = 0;
    for (k, &threads) in THREADS.iter().enumerate() {
        let stop_at = low_water + room * (THREADS.len() - 1 - k) / THREADS.len();
        let syncs = counted(4);
        let (ops, s) = for_a_while(threads, secs, |t, _| {
            if store.space().free_bands <= stop_at {
                return Ok(false);
            }
            let i = next.fetch_add(1, Ordering::Relaxed) as u64;
            let opts = PutOptions::new(scheme).durability(Durability::Sync).placement(t as u64);
            let loc = match store.put(&i.to_le_bytes(), pattern.blob(i, size as usize), &opts) {
                Ok(loc) => loc,
                // Concurrent puts can take the last bands between the check above and their own
                // allocation: near the stop point that ends the phase, anywhere else it is a fault.
                Err(reo_store::Error::OutOfSpace { .. }) if store.space().free_bands <= stop_at + threads => {
                    return Ok(false)
                }
                Err(e) => return Err(format!("bench store: {scheme} put of {size} bytes: {e}")),
            };
            locs.lock().map_err(|_| "bench store: a put thread panicked")?.push((i, loc));
            Ok(true)
        })?;
        if ops == 0 {
            return Err(format!(
                "bench store: no room for {size}-byte {scheme} puts from {threads} threads (use a larger --device-size)"
            ));
        }
        puts[k] = ops as f64 / s;
        syncs_per_put[k] = (counted(4) - syncs) as f64 / ops as f64;
        put_count += ops;
    }
    let locs: Vec<(u64, Location)> = locs.into_inner().map_err(|_| "bench store: a put thread panicked")?;
    if locs.is_empty() {
        return Err(format!("bench store: no {scheme} blob of {size} bytes fitted"));
    }
    let written_per_put = (written() - before) as f64 / locs.len() as f64;
    let space = store.space();
    let (live, device) = space
        .per_scheme
        .iter()
        .filter(|(s, _)| *s == scheme)
        .fold((0, 0), |(u, d), (_, sp)| (u + sp.live_bytes, d + sp.live_device_bytes));
    if live != locs.len() as u64 * size {
        return Err(format!("bench store: {scheme}: {live} user bytes live, {} put", locs.len() as u64 * size));
    }
    let mut gets = [0.0; 2];
    let mut get_count = 0;
    for (k, &threads) in THREADS.iter().enumerate() {
        let (ops, s) = for_a_while(threads, secs, |t, j| {
            let (i, loc) = &locs[(mix(t, j) % locs.len() as u64) as usize];
            let got =
                store.read_bytes(loc, 0, loc.len).map_err(|e| format!("bench store: {scheme} get of blob {i}: {e}"))?;
            if got.len() as u64 != size {
                return Err(format!("bench store: {scheme} get of blob {i}: {} bytes, {size} put", got.len()));
            }
            // Probes at every 4 KiB and the last bytes: a misplaced sector or blob fails it, a
            // flipped bit between probes is the store's checksum's to catch.
            pattern.probe_read(&got, *i, &format!("{scheme} at {size} bytes"))?;
            Ok(true)
        })?;
        gets[k] = ops as f64 / s;
        get_count += ops;
    }
    check_stats(&store.stats(), &format!("{scheme} at {size} bytes"))?;
    store.close().map_err(|e| format!("bench store: close: {e}"))?;
    Ok(Row {
        scheme,
        redundancy: redundancy(scheme),
        footprint: device as f64 / live as f64,
        written_per_put,
        puts,
        syncs_per_put,
        gets,
        counted: (put_count, get_count),
    })
}

/// Measures every size in `sizes` on `files` (formatted anew for every scheme).
pub fn run(files: &[Arc<FileMedia>], chunk: u32, sizes: &[u64], secs: f64) -> Result<Vec<Size>, String> {
    let n = files.len();
    let len = files[0].len();
    let layout = reo_store::Layout::plan(&store_config(chunk), n, len, 1).map_err(|e| format!("bench store: {e}"))?;
    let region = len - layout.data_off;
    let mut out = Vec::new();
    for &size in sizes {
        let raw = raw(files, layout.data_off, region, size, secs)?;
        progress(format_args!(
            "{size} bytes: raw write+fdatasync {:.0} / {:.0} per s, raw read {:.0} / {:.0} per s (1 / 32 threads)",
            raw.sync_writes[0], raw.sync_writes[1], raw.reads[0], raw.reads[1]
        ));
        let mut rows = Vec::new();
        for scheme in [Scheme::None(reo_store::Placement::Isolated), rs_scheme(n), Scheme::Replicate(2)] {
            let row = scheme_row(files, chunk, scheme, size, secs)?;
            progress(format_args!(
                "{size} bytes {scheme}: footprint {:.2} (redundancy {:.2}), {:.0} device bytes written per put, \
                 puts {:.0} / {:.0} per s ({:.2} / {:.2} fdatasyncs per put), gets {:.0} / {:.0} per s",
                row.footprint,
                row.redundancy,
                row.written_per_put,
                row.puts[0],
                row.puts[1],
                row.syncs_per_put[0],
                row.syncs_per_put[1],
                row.gets[0],
                row.gets[1]
            ));
            rows.push(row);
        }
        out.push(Size { size, raw, rows });
    }
    Ok(out)
}

/// The footprint target of objects of `size` bytes (times the redundancy factor), if any.
fn footprint_target(size: u64) -> Option<f64> {
    match size {
        1024 => Some(FOOTPRINT_TARGET_1K),
        4096 | 16384 => Some(FOOTPRINT_TARGET),
        _ => None,
    }
}

/// The table on stdout.
pub fn print_table(sizes: &[Size]) {
    println!(
        "{:>8} {:<14} {:>9} {:>8} {:>12} {:>9} {:>9} {:>9} {:>9}",
        "size", "scheme", "footprint", "target", "written/put", "put/s 1", "put/s 32", "get/s 1", "get/s 32"
    );
    for s in sizes {
        println!(
            "{:>8} {:<14} {:>9} {:>8} {:>12} {:>9.0} {:>9.0} {:>9.0} {:>9.0}",
            s.size, "raw", "", "", s.raw.io, s.raw.sync_writes[0], s.raw.sync_writes[1], s.raw.reads[0], s.raw.reads[1]
        );
        for r in &s.rows {
            let target = footprint_target(s.size).map(|t| format!("≤ {:.2}", t * r.redundancy)).unwrap_or_default();
            println!(
                "{:>8} {:<14} {:>9.2} {:>8} {:>12.0} {:>9.0} {:>9.0} {:>9.0} {:>9.0}",
                s.size,
                r.scheme.to_string(),
                r.footprint,
                target,
                r.written_per_put,
                r.puts[0],
                r.puts[1],
                r.gets[0],
                r.gets[1]
            );
        }
    }
    if let Some((raw, none)) = sync_4k(sizes) {
        println!(
            "4 KiB Sync puts none(isolated), 32 threads: {:.2} of the raw 32-thread write+fdatasync (target ≥ {SYNC_RAW_TARGET}), \
             {:.1} × the 1-thread store rate (target ≥ {SYNC_SCALING_TARGET}); fdatasyncs per put {:.2} from 1 thread, \
             {:.2} from 32",
            none.puts[1] / raw.sync_writes[1],
            none.puts[1] / none.puts[0],
            none.syncs_per_put[0],
            none.syncs_per_put[1]
        );
    }
}

/// The 4 KiB raw side and its isolated row, when 4 KiB was measured.
fn sync_4k(sizes: &[Size]) -> Option<(&Raw, &Row)> {
    let s = sizes.iter().find(|s| s.size == 4096)?;
    Some((&s.raw, s.rows.iter().find(|r| r.scheme.is_isolated())?))
}

/// The JSON of the sizes.
pub fn json(sizes: &[Size]) -> serde_json::Value {
    let rows: Vec<_> = sizes
        .iter()
        .map(|s| {
            let schemes: Vec<_> = s
                .rows
                .iter()
                .map(|r| {
                    json!({
                        "scheme": r.scheme.to_string(),
                        "redundancy": r.redundancy,
                        "footprint": r.footprint,
                        "footprint_of_redundancy": r.footprint / r.redundancy,
                        "footprint_target_of_redundancy": footprint_target(s.size),
                        "device_bytes_written_per_put": r.written_per_put,
                        "sync_puts_per_s": { "1": r.puts[0], "32": r.puts[1] },
                        "fdatasyncs_per_put": { "1": r.syncs_per_put[0], "32": r.syncs_per_put[1] },
                        "gets_per_s": { "1": r.gets[0], "32": r.gets[1] },
                        "timed_puts": r.counted.0,
                        "timed_gets": r.counted.1,
                    })
                })
                .collect();
            json!({
                "size": s.size,
                "raw_io": s.raw.io,
                "raw_sync_writes_per_s": { "1": s.raw.sync_writes[0], "32": s.raw.sync_writes[1] },
                "raw_reads_per_s": { "1": s.raw.reads[0], "32": s.raw.reads[1] },
                "schemes": schemes,
            })
        })
        .collect();
    let mut v = json!({ "bench": "store-sizes", "sizes": rows });
    if let Some((raw, none)) = sync_4k(sizes) {
        v["sync_4k_32_of_raw"] = json!(none.puts[1] / raw.sync_writes[1]);
        v["sync_4k_32_of_1"] = json!(none.puts[1] / none.puts[0]);
    }
    v
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::bench_store::raw::{open_devices, DirectMode};

    #[test]
    fn every_scheme_of_a_size_is_measured_with_its_redundancy() {
        let tmp = tempfile::tempdir().unwrap();
        let (files, _) = open_devices(tmp.path(), 4, 64 << 20, DirectMode::Off).unwrap();
        let sizes = run(&files, 64 << 10, &[4096], 0.05).unwrap();
        let s = &sizes[0];
        assert_eq!((s.size, s.raw.io, s.rows.len()), (4096, 4096, 3));
        assert!(s.raw.sync_writes.iter().chain(&s.raw.reads).all(|&r| r > 0.0));
        for r in &s.rows {
            assert!(r.footprint >= r.redundancy, "{}: footprint {} below its redundancy", r.scheme, r.footprint);
            assert!(
                r.written_per_put >= 4096.0 * r.redundancy,
                "{}: {} bytes written per put",
                r.scheme,
                r.written_per_put
            );
            assert!(r.puts.iter().chain(&r.gets).all(|&x| x > 0.0) && r.counted.0 > 0 && r.counted.1 > 0);
            // One thread: every put waits for its own batch, synced on all four devices.
            assert_eq!(r.syncs_per_put[0], 4.0, "{}", r.scheme);
        }
        assert_eq!(redundancy(Scheme::Rs { k: 2, p: 2 }), 2.0);
        assert_eq!(redundancy(Scheme::Replicate(3)), 3.0);
        let v = json(&sizes);
        assert!(v["sync_4k_32_of_raw"].as_f64().unwrap() > 0.0);
        assert_eq!(v["sizes"][0]["schemes"].as_array().unwrap().len(), 3);
    }
}
