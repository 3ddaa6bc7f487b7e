//! The rebuild thread: restores the chunks of a replaced device, on-demand requests first, then
//! the queue in priority order, throttled by a token bucket on bytes written; then marks the
//! device in sync (superblock flag cleared) and retires.
//!
//! Two stages, pipelined. The *reader* (this thread) picks a batch of blobs of one class and, for
//! each in parallel, checks it is still live, reads it through the verifying read path (which
//! treats the new device as down for it and reconstructs from the others: one copy for
//! `replicate`, k chunks per stripe for `rs`) and lays out only the new device's column
//! ([`Inner::lay_out_column`]). The *writer* thread takes the prepared columns in order,
//! coalesces those that are contiguous on the device (the queue is sorted by band and offset
//! within a class, and a band is laid out log-style, so consecutive blobs' columns usually are)
//! into one large write, then marks the blobs restored and counts the progress. The reader reads
//! the next batch while the writer writes the previous one.
//!
//! The cleaner's lock is held for a *window* of batches (so no band is reset and reused under a
//! prepared column) and released, after the writer drained, whenever the reader must wait (rate
//! limit, pause, nothing left) and at least every [`WINDOW`] batches. A blob that cannot be read is
//! lost: reported, never written. A resumed rebuild first checks the blob's chunks already on the
//! device and keeps them if they all verify.

use crate::location::Location;
use crate::record::Record;
use crate::resync::{Outcome, Resync};
use crate::space::CleanerLock;
use crate::stats::Stat;
use crate::store::Inner;
use reo_media::AlignedBuf;
use std::collections::HashSet;
use std::sync::mpsc::{sync_channel, Receiver, SyncSender};
use std::sync::Arc;
use std::time::{Duration, Instant};

/// Blobs of one class read in parallel.
const BATCH: usize = 4;
/// Batches under one holding of the cleaner's lock.
const WINDOW: usize = 32;
/// Prepared batches queued for the writer (bounds the memory in flight).
const DEPTH: usize = 4;
/// Largest coalesced write.
pub const MAX_WRITE: usize = 16 << 20;

/// One blob after the read stage.
enum Prep {
    /// The new device's column and its device offset, to write.
    Column(AlignedBuf, usize, u64),
    Done(Outcome),
}

struct Item {
    loc: Location,
    urgent: bool,
    prep: Prep,
}

enum Msg {
    Batch(Vec<Item>),
    /// Everything sent before is written and counted: answer.
    Drain(SyncSender<()>),
}

/// What the reader does next.
enum Pick {
    Batch(Vec<Location>, bool),
    Wait(Option<Duration>),
    Stop,
    Finished,
}

pub(crate) fn run(inner: Arc<Inner>, r: Arc<Resync>, queue: Vec<(u8, Location, u64)>) {
    let t0 = Instant::now();
    let prio_of: std::collections::HashMap<u64, u8> = queue.iter().map(|(p, l, _)| (l.seq, *p)).collect();
    let finished = std::thread::scope(|sc| {
        let (tx, rx) = sync_channel::<Msg>(DEPTH);
        let writer = sc.spawn(|| write_stage(&inner, &r, &prio_of, t0, rx));
        let done = read_stage(&inner, &r, &queue, t0, &tx);
        drop(tx);
        let _ = writer.join();
        done
    });
    if finished {
        finish(&inner, &r, t0);
    }
}

/// Waits until the writer wrote and counted everything sent so far.
fn drain(tx: &SyncSender<Msg>) {
    let (ack, got) = sync_channel(1);
    if tx.send(Msg::Drain(ack)).is_ok() {
        let _ = got.recv();
    }
}

/// The reader: picks and prepares batches; true when the queue is done (false: stopped).
fn read_stage(inner: &Inner, r: &Resync, queue: &[(u8, Location, u64)], t0: Instant, tx: &SyncSender<Msg>) -> bool {
    let d = r.device();
    let mut next = 0;
    let mut queued_bytes = 0u64;
    // Blobs handed to the writer: restored (or lost) once it gets to them.
    let mut sent: HashSet<u64> = HashSet::new();
    let mut gc: Option<CleanerLock<'_>> = None;
    let mut in_window = 0;
    loop {
        let counting = r.ctl().pauses_after_blobs();
        if counting {
            // Exact pause points: the progress must count every blob sent.
            drain(tx);
        }
        let pick = {
            let mut c = r.ctl();
            if c.stopping() {
                Pick::Stop
            } else if inner.devs.is_failed(d) {
                c.abort(format!("device {d} failed during the rebuild"));
                Pick::Stop
            } else if c.paused() {
                Pick::Wait(None)
            } else if let Some(l) = c.next_urgent() {
                Pick::Batch(vec![l], true)
            } else {
                while next < queue.len() && (!r.pending(queue[next].1.seq) || sent.contains(&queue[next].1.seq)) {
                    next += 1; // restored on demand already
                }
                if next >= queue.len() {
                    Pick::Finished
                } else {
                    let wait = c.rate_limit().map(|rate| {
                        let due = t0 + Duration::from_secs_f64(queued_bytes as f64 / rate.max(1) as f64);
                        due.saturating_duration_since(Instant::now())
                    });
                    match wait {
                        Some(w) if !w.is_zero() => Pick::Wait(Some(w)),
                        _ => {
                            let room = c.room();
                            let max = room.map_or(BATCH, |r| (r as usize).clamp(1, BATCH));
                            let prio = queue[next].0;
                            let mut batch = Vec::new();
                            while next < queue.len() && batch.len() < max && queue[next].0 == prio {
                                let l = queue[next].1;
                                if r.pending(l.seq) && !sent.contains(&l.seq) {
                                    batch.push(l);
                                }
                                next += 1;
                            }
                            Pick::Batch(batch, false)
                        }
                    }
                }
            }
        };
        match pick {
            Pick::Batch(batch, urgent) => {
                let batch: Vec<Location> =
                    batch.into_iter().filter(|l| r.pending(l.seq) && !sent.contains(&l.seq)).collect();
                if batch.is_empty() {
                    continue;
                }
                if gc.is_none() {
                    gc = Some(inner.space.lock_cleaner());
                    in_window = 0;
                }
                let preps: Vec<Prep> = std::thread::scope(|sc| {
                    let hs: Vec<_> = batch.iter().map(|l| sc.spawn(|| prepare(inner, r, l))).collect();
                    hs.into_iter().map(|h| h.join().unwrap_or(Prep::Done(Outcome::Lost))).collect()
                });
                let lost: Vec<Location> = batch
                    .iter()
                    .zip(&preps)
                    .filter(|(_, p)| matches!(p, Prep::Done(Outcome::Lost)))
                    .map(|(l, _)| *l)
                    .collect();
                let items: Vec<Item> = batch
                    .into_iter()
                    .zip(preps)
                    .map(|(loc, prep)| {
                        if let Prep::Column(_, len, _) = &prep {
                            sent.insert(loc.seq);
                            if !urgent {
                                queued_bytes += *len as u64;
                            }
                        }
                        Item { loc, urgent, prep }
                    })
                    .collect();
                if tx.send(Msg::Batch(items)).is_err() {
                    return false;
                }
                in_window += 1;
                if !lost.is_empty() {
                    // Counted first, then told, outside the cleaner's lock (the layer above
                    // frees lost blobs).
                    drain(tx);
                    gc = None;
                    let cb = r.ctl().on_lost();
                    for loc in &lost {
                        tracing::error!(
                            device = d,
                            blob = loc.seq,
                            band = loc.band,
                            "rebuild: blob lost (beyond its redundancy)"
                        );
                        if let Some(cb) = &cb {
                            cb(loc);
                        }
                    }
                } else if in_window >= WINDOW {
                    // Let the cleaner in now and then.
                    drain(tx);
                    gc = None;
                }
            }
            Pick::Wait(w) => {
                drain(tx);
                gc = None;
                let mut c = r.ctl();
                // Re-checked on the next turn; a wake-up lost between the pick and this wait
                // costs at most this bound.
                let w = w.unwrap_or(Duration::from_millis(20)).min(Duration::from_millis(20));
                r.wait_for(&mut c, w);
                drop(c);
            }
            Pick::Stop => {
                drain(tx);
                drop(gc);
                if inner.devs.is_failed(d) && !r.ctl().stopping() {
                    inner.resync.clear();
                    r.notify();
                }
                return false;
            }
            Pick::Finished => {
                drain(tx);
                drop(gc);
                return true;
            }
        }
    }
}

/// The read stage of one blob (the caller holds the cleaner's lock).
fn prepare(inner: &Inner, r: &Resync, loc: &Location) -> Prep {
    let d = r.device();
    if !inner.space.is_live(loc) {
        r.mark_done(loc.seq);
        return Prep::Done(Outcome::Skipped);
    }
    if r.verify_first() && inner.column_verifies(loc, d) {
        r.mark_done(loc.seq);
        return Prep::Done(Outcome::Intact);
    }
    let data = match inner.read_verified(loc, 0, loc.len) {
        Ok(data) => data,
        Err(_) if !inner.space.is_live(loc) => {
            r.mark_done(loc.seq);
            return Prep::Done(Outcome::Skipped);
        }
        Err(_) => return Prep::Done(Outcome::Lost),
    };
    match inner.lay_out_column(loc, &data, d) {
        Some((col, len)) => Prep::Column(col, len, inner.layout.offset(loc.band, u64::from(loc.start))),
        None => {
            r.mark_done(loc.seq);
            Prep::Done(Outcome::Written(0))
        }
    }
}

/// The writer: writes prepared columns (contiguous ones coalesced) and counts the progress.
fn write_stage(
    inner: &Inner,
    r: &Resync,
    prio_of: &std::collections::HashMap<u64, u8>,
    t0: Instant,
    rx: Receiver<Msg>,
) {
    let d = r.device();
    while let Ok(msg) = rx.recv() {
        let items = match msg {
            Msg::Drain(ack) => {
                let _ = ack.send(());
                continue;
            }
            Msg::Batch(items) => items,
        };
        let mut outcomes: Vec<Outcome> = Vec::with_capacity(items.len());
        let mut i = 0;
        while i < items.len() {
            let Prep::Column(_, _, off) = &items[i].prep else {
                outcomes.push(match &items[i].prep {
                    Prep::Done(Outcome::Written(b)) => Outcome::Written(*b),
                    Prep::Done(Outcome::Intact) => Outcome::Intact,
                    Prep::Done(Outcome::Skipped) => Outcome::Skipped,
                    _ => Outcome::Lost,
                });
                i += 1;
                continue;
            };
            // The run of columns contiguous on the device starting at item i.
            let mut end = *off;
            let mut j = i;
            let mut total = 0usize;
            while j < items.len() {
                match &items[j].prep {
                    Prep::Column(_, len, o) if *o == end && (j == i || total + len <= MAX_WRITE) => {
                        end += *len as u64;
                        total += len;
                        j += 1;
                    }
                    _ => break,
                }
            }
            let res = if j == i + 1 {
                let Prep::Column(buf, len, _) = &items[i].prep else { unreachable!() };
                inner.devs.get(d).write_at(&buf[..*len], *off)
            } else {
                let mut big = inner.bufs.take(total);
                let mut at = 0;
                for it in &items[i..j] {
                    if let Prep::Column(buf, len, _) = &it.prep {
                        big[at..at + len].copy_from_slice(&buf[..*len]);
                        at += len;
                    }
                }
                let res = inner.devs.get(d).write_at(&big[..total], *off);
                inner.bufs.give(big);
                res
            };
            match res {
                Ok(()) => {
                    for it in &items[i..j] {
                        let Prep::Column(_, len, _) = &it.prep else { unreachable!() };
                        r.mark_done(it.loc.seq);
                        inner.stats.add(Stat::RebuiltBlobs, 1);
                        inner.stats.add(Stat::RebuildDeviceBytes, *len as u64);
                        outcomes.push(Outcome::Written(*len as u64));
                    }
                }
                Err(e) => {
                    inner.stats.add(Stat::WriteErrors, 1);
                    inner.mark_failed(d, &format!("write error during rebuild: {e}"));
                    // Not lost: the layer above frees lost blobs, and these are whole on the
                    // other devices.
                    outcomes.extend((i..j).map(|_| Outcome::Unwritten));
                }
            }
            i = j;
        }
        for (it, outcome) in items.into_iter().zip(outcomes) {
            if let Prep::Column(buf, _, _) = it.prep {
                inner.bufs.give(buf);
            }
            let prio = prio_of.get(&it.loc.seq).copied().unwrap_or(0);
            r.account(prio, t0, &it.loc, it.urgent, outcome);
        }
    }
}

/// How a rebuild ended.
enum End {
    Done,
    /// The journal could not record the blobs it lost (the device is fine).
    Unrecorded(String),
    /// The device failed its final sync or superblock write.
    DeviceFailed(String),
}

/// Makes the rebuilt chunks durable, clears the superblock's rebuilding flag, retires.
fn finish(inner: &Inner, r: &Resync, t0: Instant) {
    let d = r.device();
    let media = inner.devs.installed(d);
    // The lost blobs are recorded durably before the superblock stops saying *rebuilding*: a
    // crash in between resumes the rebuild, which finds them lost again. A journal that cannot
    // record them is no fault of the device: it stays up, the flag stays set (a restart resumes
    // the rebuild), and the rebuild reports why.
    let lost = r.lost();
    let end = match media.sync() {
        Err(e) => End::DeviceFailed(format!("sync error at the end of the rebuild: {e}")),
        Ok(()) => match keep_unrestored(inner, d, &lost) {
            Err(e) => End::Unrecorded(e.to_string()),
            Ok(()) => match inner.layout.write_superblocks(media.as_ref(), d, 0) {
                Ok(()) => End::Done,
                Err(e) => End::DeviceFailed(format!("superblock write error at the end of the rebuild: {e}")),
            },
        },
    };
    let end = match end {
        End::Done => Ok(()),
        End::Unrecorded(e) => Err(format!(
            "device {d} is rebuilt but the {} blobs it lost could not be recorded ({e}): it stays marked \
             rebuilding, and the rebuild resumes at the next open",
            lost.len()
        )),
        End::DeviceFailed(e) => {
            inner.stats.add(Stat::WriteErrors, 1);
            inner.mark_failed(d, &e);
            Err(format!("device {d} failed: {e}"))
        }
    };
    r.conclude(t0, end);
    inner.resync.clear();
    r.notify();
}

/// The blobs the rebuild of `d` could not restore: the device never holds their chunks
/// (`resync.rs`). Set and journaled under the gate, so that a checkpoint holds either both or
/// neither, and waited for: durable when this returns. Set before the rebuild retires, since
/// until then reads treat them as pending (`ResyncState::misses`).
fn keep_unrestored(inner: &Inner, d: usize, lost: &[Location]) -> crate::error::Result<()> {
    if lost.is_empty() {
        return Ok(());
    }
    let pending = {
        let m = inner.meta.mutation();
        // A blob that moved or shed its copies since (`shed.rs`) is not this one any more.
        let lost: Vec<&Location> = lost.iter().filter(|l| inner.space.is_live(l)).collect();
        inner.resync.keep_unrestored(&m, d, lost.iter().map(|l| l.seq));
        m.enqueue(inner.devs.stores_bytes(), |w| {
            for l in lost {
                Record::Unrestored { device: d as u16, seq: l.seq, band: l.band }.encode(w);
            }
        })
    };
    pending?.wait()
}
