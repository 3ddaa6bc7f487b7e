//! [`ReadLanes`]: one queue of reads per device, served by that device's own threads.
//!
//! Why reads do not go through the shared [`crate::IoPool`]: a read of a striped blob is a few
//! runs on every device, and the reader waits for all of them. Issued on a shared pool, every
//! device's queue empties while the slowest run of a blob finishes and the next read is planned,
//! and when several readers are at it the pool puts as many reads on one device at once as it
//! happens to have threads free. A lane per device instead holds a device's reads in order and
//! keeps at most `depth` of them in flight: with readers enough to keep the lanes fed, every
//! device sees a steady stream at a fixed queue depth — the pattern of a sequential `fio` run,
//! which is what the devices here do best (`reo bench store`, same run: the store's get from two
//! readers at 0.923 of the raw read with lanes, 0.755 on the pool, 0.750 with lanes of depth 2;
//! `docs/BENCHMARKS.md`).
//!
//! A lane thread only reads: checking and copying the bytes is left to the reader, which gets
//! each run back as it completes ([`ReadBatch::wait_next`]) and works on it while the device reads
//! the next one. A slow or stalled device holds up only its own lane.
//!
//! Requests own their buffers ([`AlignedBuf`]) and come back with them, so nothing borrowed
//! crosses threads. Byte-less media complete at once: [`ReadLanes::inline`] reads on the caller.

use crate::{AlignedBuf, Media};
use std::any::Any;
use std::io;
use std::panic::{catch_unwind, resume_unwind, AssertUnwindSafe};
use std::sync::mpsc::{channel, Receiver, Sender};
use std::sync::{Arc, Mutex};

/// One read to serve.
struct Request {
    offset: u64,
    len: usize,
    buf: AlignedBuf,
    tag: usize,
    reply: Sender<Completion>,
}

/// A finished read: the caller's tag, its buffer (the first `len` bytes read when `result` is
/// `Ok`) and the outcome.
pub struct Completion {
    pub tag: usize,
    pub buf: AlignedBuf,
    pub result: io::Result<()>,
    /// A panic of the device's `read_at`, re-raised on the reader by [`ReadBatch::wait_next`]:
    /// a bug is not a device error (it must not count against the device's error budget).
    panic: Option<Box<dyn Any + Send>>,
}

/// Per-device read queues (see the module doc). Dropping it closes the queues: each thread
/// finishes the reads already queued, then exits (threads are not joined).
pub struct ReadLanes {
    devices: Vec<Arc<dyn Media>>,
    /// One sender per device; `None`: read on the caller.
    lanes: Option<Vec<Mutex<Sender<Request>>>>,
}

fn serve(device: &dyn Media, req: Request) {
    let Request { offset, len, mut buf, tag, reply } = req;
    let (result, panic) = match catch_unwind(AssertUnwindSafe(|| device.read_at(&mut buf[..len], offset))) {
        Ok(r) => (r, None),
        Err(p) => (Err(io::Error::other(format!("read at offset {offset} length {len} panicked"))), Some(p)),
    };
    // The reader may have gone (it panicked); the buffer is then simply dropped.
    let _ = reply.send(Completion { tag, buf, result, panic });
}

impl ReadLanes {
    /// Lanes for `devices`, each served by `depth` threads (at least 1).
    pub fn new(devices: Vec<Arc<dyn Media>>, depth: usize) -> ReadLanes {
        let depth = depth.max(1);
        let lanes = devices
            .iter()
            .enumerate()
            .map(|(d, device)| {
                let (tx, rx) = channel::<Request>();
                let rx = Arc::new(Mutex::new(rx));
                for t in 0..depth {
                    let (rx, device) = (rx.clone(), device.clone());
                    std::thread::Builder::new()
                        .name(format!("reo-read-{d}.{t}"))
                        .spawn(move || lane_loop(&rx, device.as_ref()))
                        .expect("cannot start the device read threads");
                }
                Mutex::new(tx)
            })
            .collect();
        ReadLanes { devices, lanes: Some(lanes) }
    }

    /// Lanes without threads: every read runs on the caller as it is submitted.
    pub fn inline(devices: Vec<Arc<dyn Media>>) -> ReadLanes {
        ReadLanes { devices, lanes: None }
    }

    /// A set of reads whose completions come back to one caller.
    pub fn batch(&self) -> ReadBatch<'_> {
        let (tx, rx) = channel();
        ReadBatch { lanes: self, tx: Some(tx), rx, pending: 0 }
    }
}

/// Takes requests off one lane until the lane is dropped.
fn lane_loop(rx: &Mutex<Receiver<Request>>, device: &dyn Media) {
    loop {
        // Holding the lock while waiting is the point: the lane's other threads queue behind it,
        // and each request goes to exactly one of them.
        let next = rx.lock().unwrap_or_else(|e| e.into_inner()).recv();
        match next {
            Ok(req) => serve(device, req),
            Err(_) => return,
        }
    }
}

/// Reads submitted together; [`ReadBatch::wait_next`] hands back each as it completes.
pub struct ReadBatch<'a> {
    lanes: &'a ReadLanes,
    /// Dropped before waiting, so that a request lost without a reply ends the wait.
    tx: Option<Sender<Completion>>,
    rx: Receiver<Completion>,
    pending: usize,
}

impl ReadBatch<'_> {
    /// Queues a read of `len` bytes at `offset` of `device` into `buf` (at least `len` long).
    /// Every read of a batch is submitted before the first [`ReadBatch::wait_next`].
    pub fn submit(&mut self, device: usize, offset: u64, len: usize, buf: AlignedBuf, tag: usize) {
        assert!(buf.len() >= len, "read buffer of {} bytes for a {len}-byte read", buf.len());
        let reply = self.tx.clone().expect("submit before the first wait_next");
        self.pending += 1;
        let req = Request { offset, len, buf, tag, reply };
        match &self.lanes.lanes {
            None => serve(self.lanes.devices[device].as_ref(), req),
            Some(lanes) => {
                let lane = lanes[device].lock().unwrap_or_else(|e| e.into_inner());
                if let Err(lost) = lane.send(req) {
                    // The lane's threads are gone (only at shutdown): read here instead.
                    drop(lane);
                    serve(self.lanes.devices[device].as_ref(), lost.0);
                }
            }
        }
    }

    /// The next completed read, in completion order; `None` once every submitted read came back.
    /// A panic of a device's read is re-raised here.
    pub fn wait_next(&mut self) -> Option<Completion> {
        if self.pending == 0 {
            return None;
        }
        self.tx = None;
        // Every request holds a reply sender until it has replied, and lane threads reply even
        // when the read panics, so this ends only when all have come back.
        let mut c = self.rx.recv().ok()?;
        self.pending -= 1;
        if let Some(p) = c.panic.take() {
            resume_unwind(p);
        }
        Some(c)
    }

    /// Reads submitted and not yet handed back.
    pub fn pending(&self) -> usize {
        self.pending
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::{FaultyMedia, MemMedia};
    use std::sync::{Condvar, Mutex as StdMutex};

    fn mem(n: usize) -> Vec<Arc<dyn Media>> {
        (0..n)
            .map(|d| {
                let m = MemMedia::new(1 << 20);
                let pattern: Vec<u8> = (0..8192u32).map(|i| (i as u8) ^ (d as u8 * 37)).collect();
                m.write_at(&pattern, 4096).unwrap();
                Arc::new(m) as Arc<dyn Media>
            })
            .collect()
    }

    fn expect(d: usize, from: usize, len: usize) -> Vec<u8> {
        (from..from + len).map(|i| (i as u8) ^ (d as u8 * 37)).collect()
    }

    /// Every submitted read comes back once, with its tag, its buffer and the device's bytes,
    /// threaded or inline.
    #[test]
    fn every_read_comes_back_with_its_bytes() {
        for lanes in [ReadLanes::new(mem(3), 2), ReadLanes::inline(mem(3))] {
            let mut b = lanes.batch();
            let mut want = Vec::new();
            for tag in 0..12 {
                let (d, from, len) = (tag % 3, (tag % 4) * 1024, 4096);
                b.submit(d, 4096 + from as u64, len, AlignedBuf::zeroed(8192), tag);
                want.push(expect(d, from, len));
            }
            let mut seen = [false; 12];
            while let Some(c) = b.wait_next() {
                c.result.unwrap();
                assert!(!seen[c.tag], "tag {} came back twice", c.tag);
                seen[c.tag] = true;
                assert_eq!(&c.buf[..4096], &want[c.tag][..]);
            }
            assert!(seen.iter().all(|&s| s));
            assert_eq!(b.pending(), 0);
        }
    }

    /// A failing device fails only its own reads, with the device's error.
    #[test]
    fn a_device_error_comes_back_as_that_reads_result() {
        let mut devices = mem(2);
        let faulty = Arc::new(FaultyMedia::new(devices[1].clone()));
        faulty.fail_stop();
        devices[1] = faulty;
        let lanes = ReadLanes::new(devices, 1);
        let mut b = lanes.batch();
        b.submit(0, 4096, 4096, AlignedBuf::zeroed(4096), 0);
        b.submit(1, 4096, 4096, AlignedBuf::zeroed(4096), 1);
        let mut results: Vec<(usize, bool)> =
            std::iter::from_fn(|| b.wait_next()).map(|c| (c.tag, c.result.is_ok())).collect();
        results.sort();
        assert_eq!(results, vec![(0, true), (1, false)]);
    }

    /// A panic in a device's read reaches the reader (a bug, not a device error), and the lane
    /// goes on serving.
    #[test]
    fn a_panicking_read_panics_the_reader_and_the_lane_goes_on() {
        struct Panicky(Arc<dyn Media>, std::sync::atomic::AtomicBool);
        impl Media for Panicky {
            fn len(&self) -> u64 {
                self.0.len()
            }
            fn read_at(&self, buf: &mut [u8], offset: u64) -> io::Result<()> {
                assert!(!self.1.swap(false, std::sync::atomic::Ordering::SeqCst), "read bug");
                self.0.read_at(buf, offset)
            }
            fn write_at(&self, buf: &[u8], offset: u64) -> io::Result<()> {
                self.0.write_at(buf, offset)
            }
            fn sync(&self) -> io::Result<()> {
                Ok(())
            }
            fn describe(&self) -> String {
                "panicky".into()
            }
        }
        let mut devices = mem(1);
        devices[0] = Arc::new(Panicky(devices[0].clone(), std::sync::atomic::AtomicBool::new(true)));
        let lanes = ReadLanes::new(devices, 1);
        let r = catch_unwind(AssertUnwindSafe(|| {
            let mut b = lanes.batch();
            b.submit(0, 4096, 4096, AlignedBuf::zeroed(4096), 0);
            b.wait_next().map(|c| c.tag)
        }));
        let msg = r.expect_err("the read's panic reaches the reader");
        assert_eq!(msg.downcast_ref::<&str>().copied(), Some("read bug"));
        let mut b = lanes.batch();
        b.submit(0, 4096, 4096, AlignedBuf::zeroed(4096), 7);
        let c = b.wait_next().unwrap();
        assert_eq!((c.tag, c.result.is_ok()), (7, true));
        assert_eq!(&c.buf[..4096], &expect(0, 0, 4096)[..]);
    }

    /// A device's reads are served by its own threads: with one device's lane stalled, reads of
    /// the others still complete.
    #[test]
    fn a_stalled_lane_does_not_hold_up_the_others() {
        struct Gated {
            inner: Arc<dyn Media>,
            open: Arc<(StdMutex<bool>, Condvar)>,
        }
        impl Media for Gated {
            fn len(&self) -> u64 {
                self.inner.len()
            }
            fn read_at(&self, buf: &mut [u8], offset: u64) -> io::Result<()> {
                let (m, cv) = &*self.open;
                drop(cv.wait_while(m.lock().unwrap(), |o| !*o).unwrap());
                self.inner.read_at(buf, offset)
            }
            fn write_at(&self, buf: &[u8], offset: u64) -> io::Result<()> {
                self.inner.write_at(buf, offset)
            }
            fn sync(&self) -> io::Result<()> {
                Ok(())
            }
            fn describe(&self) -> String {
                "gated".into()
            }
        }
        let open = Arc::new((StdMutex::new(false), Condvar::new()));
        let mut devices = mem(2);
        devices[0] = Arc::new(Gated { inner: devices[0].clone(), open: open.clone() });
        let lanes = ReadLanes::new(devices, 1);
        let mut b = lanes.batch();
        b.submit(0, 4096, 4096, AlignedBuf::zeroed(4096), 0);
        b.submit(1, 4096, 4096, AlignedBuf::zeroed(4096), 1);
        let first = b.wait_next().unwrap();
        assert_eq!(first.tag, 1, "device 1 completes while device 0 is stalled");
        *open.0.lock().unwrap() = true;
        open.1.notify_all();
        assert_eq!(b.wait_next().unwrap().tag, 0);
        assert!(b.wait_next().is_none());
    }
}
