//! The physical limit: the device files themselves, written and read sequentially with no store
//! in between — one thread per file, the I/O size of a store put, an fdatasync at the end of the
//! writes (like `fio --rw=write --end_fsync=1`).
//!
//! Also opens the files (O_DIRECT when the filesystem allows it) and preconditions them: every
//! byte is written once before anything is measured, so neither the raw test nor the store pays
//! for the filesystem's first-write block allocation, as on a real (already mapped) device.

use super::{progress, Plan, Span, Stopwatch, MIB};
use reo_media::{AlignedBuf, FileMedia, FileOptions, Media};
use std::io::ErrorKind;
use std::path::Path;
use std::sync::mpsc::sync_channel;
use std::sync::{Arc, Barrier};

/// Whether to open the files with O_DIRECT.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum DirectMode {
    /// O_DIRECT when the filesystem supports it, else buffered.
    Auto,
    On,
    Off,
}

/// Direction of a raw pass.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Op {
    Write,
    Read,
}

/// Fills `buf` with a fast deterministic pseudo-random sequence (xorshift64) seeded by `seed`.
pub fn fill(buf: &mut [u8], seed: u64) {
    let mut x = seed.wrapping_mul(0x9E37_79B9_7F4A_7C15) | 1;
    for c in buf.chunks_mut(8) {
        x ^= x << 13;
        x ^= x >> 7;
        x ^= x << 17;
        c.copy_from_slice(&x.to_le_bytes()[..c.len()]);
    }
}

/// Creates `n` device files of `len` bytes in `dir`; returns them and whether they use O_DIRECT.
pub fn open_devices(dir: &Path, n: usize, len: u64, mode: DirectMode) -> Result<(Vec<Arc<FileMedia>>, bool), String> {
    let mut direct = mode != DirectMode::Off;
    let mut files = Vec::with_capacity(n);
    for i in 0..n {
        let path = dir.join(format!("dev{i}.img"));
        let open = |direct| FileMedia::open(&path, &FileOptions { direct, create_len: Some(len) });
        let f = match open(direct) {
            Err(e) if i == 0 && mode == DirectMode::Auto && e.kind() == ErrorKind::Unsupported => {
                progress(format_args!("O_DIRECT unsupported here, using buffered I/O ({e})"));
                direct = false;
                open(false)
            }
            r => r,
        };
        let f = f.map_err(|e| format!("bench store: cannot create device file {}: {e}", path.display()))?;
        files.push(Arc::new(f));
    }
    Ok((files, direct))
}

/// Runs `job(device)` on one thread per file, all released at once; returns the time from the
/// release to the last finish.
fn per_device<F>(files: &[Arc<FileMedia>], job: F) -> Result<Span, String>
where
    F: Fn(usize, &FileMedia, &Barrier) -> Result<(), String> + Sync,
{
    let barrier = Barrier::new(files.len() + 1);
    std::thread::scope(|s| {
        let handles: Vec<_> = files
            .iter()
            .enumerate()
            .map(|(d, f)| {
                let (job, barrier) = (&job, &barrier);
                s.spawn(move || job(d, f, barrier))
            })
            .collect();
        barrier.wait();
        let clock = Stopwatch::start();
        let mut first_err = None;
        for h in handles {
            let r = h.join().unwrap_or_else(|_| Err("bench store: a raw I/O thread panicked".into()));
            if let Err(e) = r {
                first_err.get_or_insert(e);
            }
        }
        let span = clock.stop();
        first_err.map_or(Ok(span), Err)
    })
}

/// Writes `[start, end)` of `f` sequentially in `io`-byte writes from `buf`.
fn write_range(f: &FileMedia, buf: &AlignedBuf, start: u64, end: u64) -> Result<(), String> {
    let mut off = start;
    while off < end {
        let len = (end - off).min(buf.len() as u64) as usize;
        f.write_at(&buf[..len], off).map_err(|e| format!("bench store: raw write: {e}"))?;
        off += len as u64;
    }
    Ok(())
}

/// Writes every byte of every file once (4 MiB writes) and syncs; returns the seconds it took.
pub fn precondition(files: &[Arc<FileMedia>]) -> Result<f64, String> {
    let secs = per_device(files, |d, f, barrier| {
        let mut buf = AlignedBuf::zeroed(4 << 20);
        fill(&mut buf, 1000 + d as u64);
        barrier.wait();
        write_range(f, &buf, 0, f.len())?;
        f.sync().map_err(|e| format!("bench store: precondition: {e}"))
    })?
    .secs;
    let total: u64 = files.iter().map(|f| f.len()).sum();
    progress(format_args!("preconditioned {:.0} MiB in {secs:.2} s", total as f64 / MIB));
    Ok(secs)
}

/// One pass of the raw sequential test over the store's data region: `plan.raw_per_device` bytes
/// of every file from the first zone, in `plan.io`-byte I/Os, one thread per file, writes ended
/// by an fdatasync. Returns the bytes moved and the time.
pub fn pass(files: &[Arc<FileMedia>], plan: &Plan, op: Op) -> Result<(u64, Span), String> {
    pass_with(files, plan, op, plan.io as usize)
}

/// [`pass`] in `io`-byte I/Os.
pub fn pass_with(files: &[Arc<FileMedia>], plan: &Plan, op: Op, io: usize) -> Result<(u64, Span), String> {
    let start = plan.layout.data_off;
    let end = start + plan.raw_per_device;
    let span = per_device(files, |d, f, barrier| {
        let mut buf = AlignedBuf::zeroed(io);
        fill(&mut buf, 2000 + d as u64);
        barrier.wait();
        match op {
            Op::Write => {
                write_range(f, &buf, start, end)?;
                f.sync().map_err(|e| format!("bench store: raw write: {e}"))
            }
            Op::Read => read_range(f, &mut buf, start, end),
        }
    })?;
    Ok((plan.raw_per_device * files.len() as u64, span))
}

/// One pass of the raw read with every byte checked, as any reader that verifies what it reads
/// must: per file a reading thread and a checking thread passing two buffers, so that the CRC32C
/// of one I/O (in pieces of the store's chunk size, as the store checks chunks) overlaps the
/// read of the next, like `fio --verify=crc32c --verify_async=1`. No target: it shows how much
/// of the distance between the get and the raw read is the cost of looking at the bytes at all
/// (the raw read never touches them).
pub fn pass_checked(files: &[Arc<FileMedia>], plan: &Plan) -> Result<(u64, Span), String> {
    let (start, end) = (plan.layout.data_off, plan.layout.data_off + plan.raw_per_device);
    let (io, piece) = (plan.io as usize, plan.chunk as usize);
    let span = per_device(files, |_, f, barrier| {
        let (to_check, checking) = sync_channel::<(AlignedBuf, usize)>(2);
        let (to_read, free) = sync_channel::<AlignedBuf>(2);
        for _ in 0..2 {
            to_read.send(AlignedBuf::zeroed(io)).map_err(|_| "bench store: checked raw read: channel closed")?;
        }
        std::thread::scope(|s| {
            let checker = s.spawn(move || {
                let mut acc = 0u32;
                for (buf, len) in checking {
                    acc = buf[..len].chunks(piece).fold(acc, |a, c| a ^ crc32c::crc32c(c));
                    if to_read.send(buf).is_err() {
                        break;
                    }
                }
                acc
            });
            barrier.wait();
            let read = || -> Result<(), String> {
                let mut off = start;
                while off < end {
                    let mut buf = free.recv().map_err(|_| "bench store: checked raw read: the checker stopped")?;
                    let len = (end - off).min(io as u64) as usize;
                    f.read_at(&mut buf[..len], off).map_err(|e| format!("raw read of the device files: {e}"))?;
                    to_check.send((buf, len)).map_err(|_| "bench store: checked raw read: the checker stopped")?;
                    off += len as u64;
                }
                Ok(())
            };
            let r = read();
            drop(to_check);
            let acc = checker.join().map_err(|_| "bench store: the checking thread panicked".to_string())?;
            std::hint::black_box(acc);
            r
        })
    })?;
    Ok((plan.raw_per_device * files.len() as u64, span))
}

/// Reads `[start, end)` of `f` sequentially in `buf.len()`-byte reads.
fn read_range(f: &FileMedia, buf: &mut AlignedBuf, start: u64, end: u64) -> Result<(), String> {
    let mut off = start;
    while off < end {
        let len = (end - off).min(buf.len() as u64) as usize;
        f.read_at(&mut buf[..len], off).map_err(|e| format!("raw read of the device files: {e}"))?;
        off += len as u64;
    }
    Ok(())
}

/// The raw sequential read bandwidth of `files`: `[start, end)` of each in `io`-byte reads, one
/// thread per file, all at once (as [`pass`] reads; `reo bench gateway` uses it on the devices of
/// its server). Returns the bytes read and the seconds.
pub fn read_pass(files: &[Arc<FileMedia>], start: u64, end: u64, io: usize) -> Result<(u64, f64), String> {
    let secs = per_device(files, |_, f, barrier| {
        let mut buf = AlignedBuf::zeroed(io);
        barrier.wait();
        read_range(f, &mut buf, start, end)
    })?
    .secs;
    Ok(((end - start) * files.len() as u64, secs))
}
