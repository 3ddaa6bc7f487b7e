//! [`ReadLanes`]: one queue of reads per device, served by that device's own threads.
//!
//! Why reads do not go through the shared [`crate::IoPool`]: a read of a striped blob is a few
//! runs on every device, and the reader waits for all of them. Issued on a shared pool, every
//! device's queue empties while the slowest run of a blob finishes and the next read is planned,
//! and when several readers are at it the pool puts as many reads on one device at once as it
//! happens to have threads free. A lane per device instead holds a device's reads in order and
//! keeps at most `depth` of them in flight: with readers enough to keep the lanes fed, every
//! device sees a steady stream at a fixed queue depth — the pattern of a sequential `fio` run,
//! which is what the devices here do best (one read in flight per device, the raw test's depth,
//! measured best with `reo bench store`; see `docs/BENCHMARKS.md`).
//!
//! A lane thread only reads: checking and copying the bytes is left to the reader, which gets
//! each run back as it completes ([`ReadBatch::wait_next`]) and works on it while the device reads
//! the next one. A slow or stalled device holds up only its own lane.
//!
//! Each lane thread records when the read it is serving began, so that a reader waiting on a
//! device can tell a device that is *stuck* (one read in service for long: [`ReadLanes::busy_for`])
//! from one that merely has a queue, and stop waiting for it ([`ReadBatch::wait_next_until`]): the
//! store then rebuilds those chunks from the other devices (hedged reads, `reo-store`).
//!
//! Requests own their buffers ([`AlignedBuf`]) and come back with them, so nothing borrowed
//! crosses threads. Byte-less media complete at once: [`ReadLanes::inline`] reads on the caller.
//! So does a batch a caller asks to read itself ([`ReadLanes::batch_on_caller`]): a short read
//! whose caller would otherwise hand it to a lane and wait (two thread wake-ups for one device
//! read) — the gateway's small flash hits, read on the task that received them. Such a read
//! counts in [`ReadLanes::busy_for`] like a lane's, so a device that stalls under a caller is
//! found slow (and, past the store's limit, stuck) as under a lane; its caller bounds how many it
//! has in service.

use crate::{AlignedBuf, Media};
use parking_lot::Mutex;
use std::any::Any;
use std::io;
use std::panic::{catch_unwind, resume_unwind, AssertUnwindSafe};
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::mpsc::{channel, Receiver, RecvTimeoutError, Sender};
use std::sync::Arc;
use std::time::{Duration, Instant};

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
    /// The tag the caller gave the read, to match completions (which arrive in any order) to runs.
    pub tag: usize,
    /// The caller's buffer, handed back whatever the outcome.
    pub buf: AlignedBuf,
    /// `Ok` when the device read `len` bytes into `buf`; the device's error otherwise.
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
    /// Per device, per lane thread: when the read it serves began, in nanoseconds after `epoch`
    /// plus one; 0 while it waits for work. Swapped with the threads by [`ReadLanes::renew`].
    began: Vec<Mutex<Vec<Arc<AtomicU64>>>>,
    /// Per device: when each read served on its caller began (same clock), while it is in
    /// service; cleared by [`ReadLanes::renew`] with the lane's own slots.
    began_on_caller: Vec<Mutex<Vec<u64>>>,
    depth: usize,
    epoch: Instant,
}

/// Nanoseconds from `epoch` to now, plus one (so that 0 means idle).
fn stamp(epoch: Instant) -> u64 {
    u64::try_from(epoch.elapsed().as_nanos()).unwrap_or(u64::MAX - 1) + 1
}

fn serve(device: &dyn Media, req: Request) {
    serve_timed(device, req, None);
}

/// Serves `req`, recording in `began` (a lane thread's slot) when the read started and clearing
/// it once the read returned, before the reply (a reader woken by the reply never sees its own
/// finished read as in service).
fn serve_timed(device: &dyn Media, req: Request, began: Option<(&AtomicU64, Instant)>) {
    let Request { offset, len, mut buf, tag, reply } = req;
    if let Some((slot, epoch)) = began {
        slot.store(stamp(epoch), Ordering::Release);
    }
    let (result, panic) = match catch_unwind(AssertUnwindSafe(|| device.read_at(&mut buf[..len], offset))) {
        Ok(r) => (r, None),
        Err(p) => (Err(io::Error::other(format!("read at offset {offset} length {len} panicked"))), Some(p)),
    };
    if let Some((slot, _)) = began {
        slot.store(0, Ordering::Release);
    }
    // The reader may have gone (it panicked); the buffer is then simply dropped.
    let _ = reply.send(Completion { tag, buf, result, panic });
}

impl ReadLanes {
    /// Lanes for `devices`, each served by `depth` threads (at least 1).
    pub fn new(devices: Vec<Arc<dyn Media>>, depth: usize) -> ReadLanes {
        let depth = depth.max(1);
        let epoch = Instant::now();
        let (mut senders, mut began) = (Vec::new(), Vec::new());
        for (d, device) in devices.iter().enumerate() {
            let (tx, slots) = spawn_lane(d, device, depth, epoch);
            senders.push(Mutex::new(tx));
            began.push(Mutex::new(slots));
        }
        let began_on_caller = devices.iter().map(|_| Mutex::new(Vec::new())).collect();
        ReadLanes { devices, lanes: Some(senders), began, began_on_caller, depth, epoch }
    }

    /// Lanes without threads: every read runs on the caller as it is submitted.
    pub fn inline(devices: Vec<Arc<dyn Media>>) -> ReadLanes {
        ReadLanes {
            devices,
            lanes: None,
            began: Vec::new(),
            began_on_caller: Vec::new(),
            depth: 1,
            epoch: Instant::now(),
        }
    }

    /// New threads for device `device`'s lane (after its media was replaced): reads submitted
    /// from now on go to them. The old threads finish the reads already queued and exit; one
    /// stuck in the old media stays blocked without holding up the new lane, and no longer
    /// counts in [`ReadLanes::busy_for`].
    pub fn renew(&self, device: usize) {
        let Some(lanes) = &self.lanes else { return };
        let (tx, slots) = spawn_lane(device, &self.devices[device], self.depth, self.epoch);
        *self.began[device].lock() = slots;
        self.began_on_caller[device].lock().clear();
        *lanes[device].lock() = tx;
    }

    /// How long the oldest read device `device` is serving has been in service (zero when its
    /// lane is idle, or for inline lanes). Time queued behind other reads does not count: this
    /// tells a stuck device from a busy one.
    pub fn busy_for(&self, device: usize) -> Duration {
        self.in_service(device).map_or(Duration::ZERO, |(_, busy)| busy)
    }

    /// The oldest read device `device` is serving: an identity of it (when it began, in the
    /// lanes' own clock) and how long it has been in service. `None` when the lane is idle.
    pub fn in_service(&self, device: usize) -> Option<(u64, Duration)> {
        let slots = self.began.get(device)?;
        let on_lane = slots.lock().iter().map(|s| s.load(Ordering::Acquire)).filter(|&b| b != 0).min();
        let on_caller = self.began_on_caller.get(device).and_then(|c| c.lock().iter().copied().min());
        let oldest = on_lane.into_iter().chain(on_caller).min()?;
        Some((oldest, Duration::from_nanos(stamp(self.epoch).saturating_sub(oldest))))
    }

    /// Serves `req` on the calling thread, in service for [`ReadLanes::in_service`] meanwhile.
    fn serve_on_caller(&self, device: usize, req: Request) {
        let began = stamp(self.epoch);
        self.began_on_caller[device].lock().push(began);
        serve(self.devices[device].as_ref(), req);
        // (Gone if the lane was renewed meanwhile: the old media's reads no longer count.)
        let mut in_service = self.began_on_caller[device].lock();
        if let Some(i) = in_service.iter().position(|&b| b == began) {
            in_service.swap_remove(i);
        }
    }

    /// A set of reads whose completions come back to one caller.
    pub fn batch(&self) -> ReadBatch<'_> {
        let (tx, rx) = channel();
        ReadBatch { lanes: self, tx: Some(tx), rx, pending: 0, on_caller: false }
    }

    /// A set of reads the caller serves itself, each as it is submitted, on its own thread.
    pub fn batch_on_caller(&self) -> ReadBatch<'_> {
        ReadBatch { on_caller: true, ..self.batch() }
    }
}

/// Starts `depth` threads serving a new queue of reads of `device` (position `d`); returns the
/// queue's sender and the threads' in-service slots.
fn spawn_lane(
    d: usize,
    device: &Arc<dyn Media>,
    depth: usize,
    epoch: Instant,
) -> (Sender<Request>, Vec<Arc<AtomicU64>>) {
    let (tx, rx) = channel::<Request>();
    let rx = Arc::new(Mutex::new(rx));
    let slots: Vec<Arc<AtomicU64>> = (0..depth).map(|_| Arc::new(AtomicU64::new(0))).collect();
    for (t, slot) in slots.iter().enumerate() {
        let (rx, device, slot) = (rx.clone(), device.clone(), slot.clone());
        std::thread::Builder::new()
            .name(format!("reo-read-{d}.{t}"))
            .spawn(move || lane_loop(&rx, device.as_ref(), &slot, epoch))
            .expect("cannot start the device read threads");
    }
    (tx, slots)
}

/// Takes requests off one lane until the lane is dropped.
fn lane_loop(rx: &Mutex<Receiver<Request>>, device: &dyn Media, began: &AtomicU64, epoch: Instant) {
    loop {
        // Holding the lock while waiting is the point: the lane's other threads queue behind it,
        // and each request goes to exactly one of them.
        let next = rx.lock().recv();
        match next {
            Ok(req) => serve_timed(device, req, Some((began, epoch))),
            Err(_) => return,
        }
    }
}

/// What [`ReadBatch::wait_next_until`] found.
pub enum Waited {
    /// A read completed.
    Done(Completion),
    /// The deadline passed with reads still out.
    TimedOut,
    /// Every submitted read has come back.
    Finished,
}

/// Reads submitted together; [`ReadBatch::wait_next`] hands back each as it completes.
pub struct ReadBatch<'a> {
    lanes: &'a ReadLanes,
    /// Dropped before waiting, so that a request lost without a reply ends the wait.
    tx: Option<Sender<Completion>>,
    rx: Receiver<Completion>,
    pending: usize,
    /// Every read is served on the caller as it is submitted ([`ReadLanes::batch_on_caller`]).
    on_caller: bool,
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
            Some(_) if self.on_caller => self.lanes.serve_on_caller(device, req),
            None => serve(self.lanes.devices[device].as_ref(), req),
            Some(lanes) => {
                let lane = lanes[device].lock();
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

    /// [`ReadBatch::wait_next`] that gives up at `deadline`. Reads left out when the batch is
    /// dropped still run; their completions (and buffers) are discarded.
    pub fn wait_next_until(&mut self, deadline: Instant) -> Waited {
        if self.pending == 0 {
            return Waited::Finished;
        }
        self.tx = None;
        let wait = deadline.saturating_duration_since(Instant::now());
        match self.rx.recv_timeout(wait) {
            Ok(mut c) => {
                self.pending -= 1;
                if let Some(p) = c.panic.take() {
                    resume_unwind(p);
                }
                Waited::Done(c)
            }
            Err(RecvTimeoutError::Timeout) => Waited::TimedOut,
            Err(RecvTimeoutError::Disconnected) => Waited::Finished,
        }
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
    use parking_lot::Condvar;

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

    /// A device whose reads wait until the test opens it; counts the reads that reached it and
    /// records the thread that made each.
    struct Stall {
        inner: Arc<dyn Media>,
        /// (open, reads entered)
        state: Arc<(Mutex<(bool, usize)>, Condvar)>,
        readers: Arc<Mutex<Vec<std::thread::ThreadId>>>,
    }

    /// The handle a test keeps to a [`Stall`].
    struct StallHandle(Arc<(Mutex<(bool, usize)>, Condvar)>, Arc<Mutex<Vec<std::thread::ThreadId>>>);

    impl Stall {
        /// `devices` with the first one stalled.
        fn first_of(mut devices: Vec<Arc<dyn Media>>) -> (StallHandle, Vec<Arc<dyn Media>>) {
            let state = Arc::new((Mutex::new((false, 0)), Condvar::new()));
            let readers = Arc::new(Mutex::new(Vec::new()));
            devices[0] = Arc::new(Stall { inner: devices[0].clone(), state: state.clone(), readers: readers.clone() });
            (StallHandle(state, readers), devices)
        }
    }

    impl StallHandle {
        fn open(&self) {
            self.0 .0.lock().0 = true;
            self.0 .1.notify_all();
        }

        fn wait_entered(&self, n: usize) {
            self.0 .1.wait_while(&mut self.0 .0.lock(), |st| st.1 < n);
        }
    }

    impl Media for Stall {
        fn len(&self) -> u64 {
            self.inner.len()
        }
        fn read_at(&self, buf: &mut [u8], offset: u64) -> io::Result<()> {
            self.readers.lock().push(std::thread::current().id());
            let (m, cv) = &*self.state;
            let mut st = m.lock();
            st.1 += 1;
            cv.notify_all();
            cv.wait_while(&mut st, |st| !st.0);
            drop(st);
            self.inner.read_at(buf, offset)
        }
        fn write_at(&self, buf: &[u8], offset: u64) -> io::Result<()> {
            self.inner.write_at(buf, offset)
        }
        fn sync(&self) -> io::Result<()> {
            Ok(())
        }
        fn describe(&self) -> String {
            "stall".into()
        }
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

    /// A batch on the caller reads on the caller's thread, with its bytes, even where the
    /// devices have lanes; an ordinary batch of the same lanes reads on a lane thread.
    #[test]
    fn a_batch_on_the_caller_reads_on_the_callers_thread() {
        let (whose, devices) = Stall::first_of(mem(1));
        whose.open();
        let lanes = ReadLanes::new(devices, 1);
        let me = std::thread::current().id();
        let mut b = lanes.batch_on_caller();
        b.submit(0, 4096, 4096, AlignedBuf::zeroed(4096), 3);
        assert_eq!(b.pending(), 1);
        let c = b.wait_next().unwrap();
        assert_eq!((c.tag, c.result.is_ok()), (3, true));
        assert_eq!(&c.buf[..4096], &expect(0, 0, 4096)[..]);
        assert!(b.wait_next().is_none());
        let mut b = lanes.batch();
        b.submit(0, 4096, 4096, AlignedBuf::zeroed(4096), 4);
        assert_eq!(b.wait_next().unwrap().tag, 4);
        assert_eq!(whose.1.lock()[0], me, "the caller's batch read on the caller");
        assert_ne!(whose.1.lock()[1], me, "the ordinary batch read on its lane");
    }

    /// A read on the caller that stalls in its device counts as in service, like a lane's: the
    /// device shows busy while it is held, and idle once it returns.
    #[test]
    fn a_read_on_the_caller_shows_in_busy_for_while_it_stalls() {
        let (stall, devices) = Stall::first_of(mem(2));
        let lanes = ReadLanes::new(devices, 1);
        std::thread::scope(|s| {
            let reader = s.spawn(|| {
                let mut b = lanes.batch_on_caller();
                b.submit(0, 4096, 4096, AlignedBuf::zeroed(4096), 0);
                b.wait_next().unwrap().result.is_ok()
            });
            stall.wait_entered(1);
            let busy = lanes.busy_for(0);
            assert!(busy > Duration::ZERO, "the caller's read is in service");
            assert!(lanes.busy_for(0) >= busy, "and stays so");
            assert_eq!(lanes.busy_for(1), Duration::ZERO, "another device is idle");
            stall.open();
            assert!(reader.join().unwrap());
        });
        assert_eq!(lanes.busy_for(0), Duration::ZERO, "a finished read is out of service");
    }

    /// A device's reads are served by its own threads: with one device's lane stalled, reads of
    /// the others still complete.
    #[test]
    fn a_stalled_lane_does_not_hold_up_the_others() {
        let (stall, devices) = Stall::first_of(mem(2));
        let lanes = ReadLanes::new(devices, 1);
        let mut b = lanes.batch();
        b.submit(0, 4096, 4096, AlignedBuf::zeroed(4096), 0);
        b.submit(1, 4096, 4096, AlignedBuf::zeroed(4096), 1);
        let first = b.wait_next().unwrap();
        assert_eq!(first.tag, 1, "device 1 completes while device 0 is stalled");
        stall.open();
        assert_eq!(b.wait_next().unwrap().tag, 0);
        assert!(b.wait_next().is_none());
    }

    /// A read in service shows in `busy_for` (time queued does not), a deadline wait times out
    /// while it is held, and a read left behind by a dropped batch still completes on its lane,
    /// which then serves the next batch.
    #[test]
    fn a_stalled_read_shows_in_busy_for_and_a_deadline_wait_times_out() {
        let (stall, devices) = Stall::first_of(mem(2));
        let lanes = ReadLanes::new(devices, 1);
        assert_eq!(lanes.busy_for(0), Duration::ZERO, "an idle lane is not busy");
        let mut b = lanes.batch();
        b.submit(0, 4096, 4096, AlignedBuf::zeroed(4096), 0);
        b.submit(0, 8192, 4096, AlignedBuf::zeroed(4096), 1); // queued behind the first
        b.submit(1, 4096, 4096, AlignedBuf::zeroed(4096), 2);
        stall.wait_entered(1);
        let busy = lanes.busy_for(0);
        assert!(busy > Duration::ZERO, "the read at the stall is in service");
        assert!(lanes.busy_for(0) >= busy, "and stays so");
        let Waited::Done(c) = b.wait_next_until(Instant::now() + Duration::from_secs(60)) else {
            panic!("device 1's read completes while device 0 stalls")
        };
        assert_eq!(c.tag, 2);
        assert_eq!(lanes.busy_for(1), Duration::ZERO, "a finished read is out of service");
        assert!(matches!(b.wait_next_until(Instant::now()), Waited::TimedOut), "device 0 still stalls");
        assert_eq!(b.pending(), 2);
        drop(b); // leaves both reads of device 0 behind
        stall.open();
        let mut next = lanes.batch();
        next.submit(0, 4096, 4096, AlignedBuf::zeroed(4096), 7);
        let c = next.wait_next().expect("the lane serves the next batch");
        c.result.unwrap();
        assert_eq!((c.tag, &c.buf[..4096]), (7, &expect(0, 0, 4096)[..]));
        assert!(next.wait_next().is_none());
        assert_eq!(lanes.busy_for(0), Duration::ZERO);
    }
}
