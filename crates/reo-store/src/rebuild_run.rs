//! The rebuild thread: restores the chunks of a replaced device, on-demand requests first, then
//! the queue in priority order, throttled by a token bucket on bytes written; then marks the
//! device in sync (superblock flag cleared) and retires.
//!
//! One blob: under the cleaner's lock (so its band cannot be reset and reused meanwhile), check
//! it is still live, read it whole through the verifying read path (which treats the new device
//! as down for it and reconstructs from the others), lay it out again exactly as a put does, and
//! write the new device's column in place. A blob that cannot be read is lost: reported, never
//! written. A resumed rebuild first checks the blob's chunks already on the device and keeps them
//! if they all verify.

use crate::location::Location;
use crate::progress::{RebuildState, Restored};
use crate::resync::Resync;
use crate::stats::Counters;
use crate::store::Inner;
use std::sync::Arc;
use std::time::{Duration, Instant};

/// Blobs of one class restored in parallel (reads of one overlap the write of another).
const BATCH: usize = 8;

/// What became of one blob.
enum Outcome {
    Written(u64),
    Intact,
    Skipped,
    Lost,
}

pub(crate) fn run(inner: Arc<Inner>, r: Arc<Resync>, queue: Vec<(u8, Location, u64)>) {
    let d = r.device;
    let t0 = Instant::now();
    let prio_of: std::collections::HashMap<u64, u8> = queue.iter().map(|(p, l, _)| (l.seq, *p)).collect();
    let mut next = 0;
    let mut queued_bytes = 0u64;
    loop {
        // Pick: on-demand first, then the queue (within the token bucket).
        let (picked, urgent) = {
            let mut c = r.ctl();
            loop {
                if c.stop {
                    return;
                }
                if inner.is_failed(d) {
                    c.progress.state = RebuildState::Aborted(format!("device {d} failed during the rebuild"));
                    drop(c);
                    inner.resync.clear();
                    r.wake.notify_all();
                    return;
                }
                if !c.paused {
                    if let Some(l) = c.urgent.pop_front() {
                        break (Some(vec![l]), true);
                    }
                    while next < queue.len() && !r.pending(queue[next].1.seq) {
                        next += 1; // restored on demand already
                    }
                    if next >= queue.len() {
                        break (None, false);
                    }
                    let wait = c.opts.as_ref().and_then(|o| o.rate_limit).map(|rate| {
                        let due = t0 + Duration::from_secs_f64(queued_bytes as f64 / rate.max(1) as f64);
                        due.saturating_duration_since(Instant::now())
                    });
                    match wait {
                        Some(w) if !w.is_zero() => {
                            c = r.wake.wait_timeout(c, w).unwrap_or_else(|e| e.into_inner()).0;
                            continue;
                        }
                        _ => {
                            // A batch of pending blobs of one class, restored in parallel.
                            let room = c
                                .opts
                                .as_ref()
                                .and_then(|o| o.pause_after_blobs)
                                .map(|n| n.saturating_sub(c.progress.blobs_done));
                            let max = room.map_or(BATCH, |r| (r as usize).clamp(1, BATCH));
                            let prio = queue[next].0;
                            let mut batch = Vec::new();
                            while next < queue.len() && batch.len() < max && queue[next].0 == prio {
                                if r.pending(queue[next].1.seq) {
                                    batch.push(queue[next].1);
                                }
                                next += 1;
                            }
                            break (Some(batch), false);
                        }
                    }
                }
                c = r.wake.wait(c).unwrap_or_else(|e| e.into_inner());
            }
        };
        let Some(batch) = picked else { break };
        let batch: Vec<Location> = batch.into_iter().filter(|l| r.pending(l.seq)).collect();
        let outcomes: Vec<Outcome> = {
            // The cleaner's lock for the whole batch: no band is reset and reused meanwhile.
            let _gc = inner.gc_lock.lock().unwrap_or_else(|e| e.into_inner());
            std::thread::scope(|sc| {
                let hs: Vec<_> = batch.iter().map(|l| sc.spawn(|| restore(&inner, &r, l))).collect();
                hs.into_iter().map(|h| h.join().unwrap_or(Outcome::Lost)).collect()
            })
        };
        for (loc, outcome) in batch.into_iter().zip(outcomes) {
            if let Outcome::Written(b) = outcome {
                if !urgent {
                    queued_bytes += b;
                }
            }
            let prio = prio_of.get(&loc.seq).copied().unwrap_or(0);
            let mut c = r.ctl();
            let p = &mut c.progress;
            let class = p.classes.entry(prio).or_default();
            class.blobs_done += 1;
            match outcome {
                Outcome::Written(b) => {
                    class.bytes_done += b;
                    p.bytes_done += b;
                }
                Outcome::Intact => p.already_intact += 1,
                Outcome::Skipped => p.skipped += 1,
                Outcome::Lost => {
                    class.blobs_lost += 1;
                    p.lost.push(loc);
                }
            }
            if class.blobs_done >= class.blobs_total && class.restored_at.is_none() {
                class.restored_at = Some(t0.elapsed());
            }
            p.blobs_done += 1;
            if urgent {
                p.on_demand += 1;
            }
            p.elapsed = t0.elapsed();
            p.rate = p.bytes_done as f64 / p.elapsed.as_secs_f64().max(1e-9);
            p.eta = (p.rate > 0.0)
                .then(|| Duration::from_secs_f64(p.bytes_total.saturating_sub(p.bytes_done) as f64 / p.rate));
            let record = c.opts.as_ref().is_some_and(|o| o.record_order);
            if record {
                c.progress.order.push(Restored { seq: loc.seq, priority: prio, on_demand: urgent });
            }
            if c.opts.as_ref().and_then(|o| o.pause_after_blobs).is_some_and(|n| c.progress.blobs_done >= n) {
                c.paused = true;
                c.progress.state = RebuildState::Paused;
            }
            let lost_cb =
                matches!(outcome, Outcome::Lost).then(|| c.opts.as_ref().and_then(|o| o.on_lost.clone())).flatten();
            drop(c);
            r.wake.notify_all();
            if let Some(cb) = lost_cb {
                eprintln!("reo-store: rebuild of device {d}: blob {} is lost (beyond its redundancy)", loc.seq);
                cb(&loc);
            }
        }
    }
    finish(&inner, &r, t0);
}

/// Restores one blob's chunks on the rebuilt device (the caller holds the cleaner's lock).
fn restore(inner: &Inner, r: &Resync, loc: &Location) -> Outcome {
    let d = r.device;
    if !inner.is_live(loc) {
        r.mark_done(loc.seq);
        return Outcome::Skipped;
    }
    if r.verify_first && inner.column_verifies(loc, d) {
        r.mark_done(loc.seq);
        return Outcome::Intact;
    }
    let data = match inner.read_verified(loc, 0, loc.len) {
        Ok(data) => data,
        Err(_) if !inner.is_live(loc) => {
            r.mark_done(loc.seq);
            return Outcome::Skipped;
        }
        Err(_) => return Outcome::Lost,
    };
    let Some((cols, len)) = inner.lay_out(loc, &data) else {
        r.mark_done(loc.seq);
        return Outcome::Written(0);
    };
    let off = inner.layout.offset(loc.band, loc.start as u64);
    let res = inner.devices[d].write_at(&cols[d][..len], off);
    for c in cols {
        inner.bufs.give(c);
    }
    match res {
        Ok(()) => {
            r.mark_done(loc.seq);
            Counters::add(&inner.stats.rebuilt_blobs, 1);
            Counters::add(&inner.stats.rebuild_device_bytes, len as u64);
            Outcome::Written(len as u64)
        }
        Err(e) => {
            Counters::add(&inner.stats.write_errors, 1);
            inner.mark_failed(d, &format!("write error during rebuild: {e}"));
            Outcome::Lost
        }
    }
}

/// Makes the rebuilt chunks durable, clears the superblock's rebuilding flag, retires.
fn finish(inner: &Inner, r: &Resync, t0: Instant) {
    let d = r.device;
    let media = inner.slots[d].get();
    let res = media.sync().and_then(|_| crate::replace::write_superblock(inner, media.as_ref(), d, 0));
    let mut c = r.ctl();
    c.progress.elapsed = t0.elapsed();
    match res {
        Ok(()) => {
            c.progress.state = RebuildState::Done;
            c.progress.eta = Some(Duration::ZERO);
            eprintln!(
                "reo-store: device {d} rebuilt: {} blobs, {} bytes in {:.2?}, {} lost",
                c.progress.blobs_done,
                c.progress.bytes_done,
                c.progress.elapsed,
                c.progress.lost.len()
            );
        }
        Err(e) => {
            Counters::add(&inner.stats.write_errors, 1);
            inner.mark_failed(d, &format!("sync error at the end of the rebuild: {e}"));
            c.progress.state = RebuildState::Aborted(format!("device {d} failed at the end of the rebuild: {e}"));
        }
    }
    drop(c);
    inner.resync.clear();
    r.wake.notify_all();
}
