//! Reading metadata back at open: the newest checkpoint and the journal batches that follow it.
//!
//! Both are replicated identically on every device, so large reads are *striped*: the bytes are
//! split into equal 4 KiB-aligned pieces read from different devices in parallel (a 4 MiB
//! window costs a quarter of the time on 4 devices). What is read that way is checked like any
//! read (frame header and payload CRC); a frame that does not verify is read again from single
//! devices, one after another, so a stale or torn copy on one device never hides a good one.

use crate::error::{Error, Result};
use crate::persist::{decode_checkpoint, Checkpoint};
use crate::record::{Frame, Record, BATCH_MAGIC, CKPT_MAGIC, FRAME_HEADER};
use crate::store::Inner;
use parking_lot::Mutex;
use reo_media::AlignedBuf;

/// Reads `buf.len()` bytes at `offset` striped over `devices` (one piece each, in parallel), or
/// from the one device given. False if `devices` is empty or any piece cannot be read.
fn read_striped(inner: &Inner, devices: &[usize], offset: u64, buf: &mut [u8]) -> bool {
    if devices.is_empty() {
        return false;
    }
    let piece = buf.len().div_ceil(devices.len()).div_ceil(4096) * 4096;
    let pieces: Vec<Mutex<&mut [u8]>> = buf.chunks_mut(piece.max(4096)).map(Mutex::new).collect();
    let ok = inner.devs.pool().map(pieces.len(), |i| {
        let mut p = pieces[i].lock();
        inner.devs.get(devices[i]).read_at(&mut p, offset + (i * piece) as u64).is_ok()
    });
    ok.into_iter().all(|o| o)
}

/// Reads the best checkpoint from any healthy device: the newest whose frame and payload verify.
///
/// Only the 4 KiB frame header of each slot is read first; then whole checkpoints are read and
/// decoded newest first until one verifies — normally one read and one decode instead of both
/// slots of every device (the slots are 1/32 of a device each, and decoding holds every blob).
pub(crate) fn load_checkpoint(inner: &Inner) -> Result<(Frame, Checkpoint)> {
    let l = inner.layout;
    let heads: Vec<Vec<(u64, Frame)>> = inner.devs.pool().map(inner.n(), |d| {
        if inner.devs.is_failed(d) {
            return Vec::new();
        }
        let mut found = Vec::new();
        let mut buf = AlignedBuf::zeroed(4096);
        for slot in 0..2 {
            if inner.devs.get(d).read_at(&mut buf, l.ckpt_slot(slot)).is_err() {
                continue;
            }
            let Some(f) = Frame::parse(&buf) else { continue };
            if &f.magic == CKPT_MAGIC && f.store == l.store_id && f.total_len() <= l.ckpt_len {
                found.push((slot, f));
            }
        }
        found
    });
    let heads: Vec<(usize, u64, Frame)> =
        heads.into_iter().enumerate().flat_map(|(d, v)| v.into_iter().map(move |(slot, f)| (d, slot, f))).collect();
    let mut candidates = heads.clone();
    candidates.sort_by_key(|(_, _, f)| std::cmp::Reverse(f.number));
    for (d, slot, f) in candidates {
        let mut buf = AlignedBuf::zeroed(f.total_len() as usize);
        // The same checkpoint (same frame header) on the other devices: read striped over them
        // all first, then, if that does not verify, from `d` alone.
        let twins: Vec<usize> =
            (0..inner.n()).filter(|&e| heads.iter().any(|(h, s, g)| *h == e && *s == slot && *g == f)).collect();
        for from in [&twins[..], &[d]] {
            if !read_striped(inner, from, l.ckpt_slot(slot), &mut buf) {
                continue;
            }
            if let Some(c) = f.payload(&buf).and_then(|p| decode_checkpoint(p, l.zones as usize, inner.n())) {
                return Ok((f, c));
            }
        }
    }
    Err(Error::Devices("no readable checkpoint on any device".into()))
}

/// Reads journal batches of `gen` in order from any healthy device; returns (records per batch,
/// end position, next batch number). Each device's journal is read in windows that start at
/// 256 KiB and double up to 4 MiB as long as batches follow, so a short journal tail costs a
/// short read and a long one few large reads; a frame that is missing or invalid on one device
/// is taken from the next.
pub(crate) fn read_journal(inner: &Inner, gen: u64) -> (Vec<Vec<Record>>, u64, u64) {
    let l = inner.layout;
    let mut window = (256u64 << 10).min(l.journal_len) as usize;
    let max_window = (4u64 << 20).min(l.journal_len) as usize;
    let healthy: Vec<usize> = (0..inner.n()).filter(|&d| !inner.devs.is_failed(d)).collect();
    let mut batches = Vec::new();
    let (mut pos, mut number) = (0u64, 0u64);
    // The current window of each device: (start position, bytes).
    let mut windows: Vec<Option<(u64, AlignedBuf)>> = (0..inner.n()).map(|_| None).collect();
    'outer: while pos + FRAME_HEADER as u64 <= l.journal_len {
        let wanted = |f: &Frame| &f.magic == BATCH_MAGIC && f.store == l.store_id && f.gen == gen && f.number == number;
        for &d in &healthy {
            // The first device's windows are read striped over all healthy devices (the journal
            // is the same on each); a frame that does not verify there is read from the next
            // device's own windows.
            let stripe = if d == healthy[0] { &healthy[..] } else { &healthy[..0] };
            let Some((view, fresh)) = window_at(inner, d, pos, window, &mut windows, &wanted, stripe) else {
                continue;
            };
            if fresh {
                window = (window * 2).min(max_window);
            }
            let Some(f) = Frame::parse(view) else { continue };
            if !wanted(&f) {
                continue;
            }
            if pos + f.total_len() > l.journal_len {
                continue;
            }
            let recs = if f.total_len() as usize <= view.len() {
                f.payload(view).and_then(Record::decode_all)
            } else {
                let mut b = AlignedBuf::zeroed(f.total_len() as usize);
                match inner.devs.get(d).read_at(&mut b, l.journal_off + pos) {
                    Ok(()) => f.payload(&b).and_then(Record::decode_all),
                    Err(_) => None,
                }
            };
            let Some(recs) = recs else { continue };
            batches.push(recs);
            pos += f.total_len();
            number += 1;
            continue 'outer;
        }
        break;
    }
    (batches, pos, number)
}

/// The bytes of device `d`'s journal from `pos` to the end of its current window, reading a new
/// window when `pos` is outside it (then also returning true), striped over the devices of
/// `stripe` when there are two or more. A new window is read only if the
/// frame header at `pos` (read first, 4 KiB) is `wanted`: the end of the journal costs each
/// device one small read, not a window.
fn window_at<'a>(
    inner: &Inner,
    d: usize,
    pos: u64,
    window: usize,
    windows: &'a mut [Option<(u64, AlignedBuf)>],
    wanted: &dyn Fn(&Frame) -> bool,
    stripe: &[usize],
) -> Option<(&'a [u8], bool)> {
    let l = inner.layout;
    let hit = windows[d].as_ref().is_some_and(|(s, b)| pos >= *s && pos + 4096 <= *s + b.len() as u64);
    if !hit {
        let mut b = AlignedBuf::zeroed(4096);
        inner.devs.get(d).read_at(&mut b, l.journal_off + pos).ok()?;
        let len = (window as u64).min(l.journal_len - pos) as usize;
        if len > b.len() && Frame::parse(&b).is_some_and(|f| wanted(&f)) {
            b = AlignedBuf::zeroed(len);
            if !read_striped(inner, stripe, l.journal_off + pos, &mut b) {
                inner.devs.get(d).read_at(&mut b, l.journal_off + pos).ok()?;
            }
        }
        windows[d] = Some((pos, b));
    }
    let (s, b) = windows[d].as_ref()?;
    Some((&b[(pos - s) as usize..], !hit))
}
