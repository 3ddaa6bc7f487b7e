//! Check-then-act races of the read path, made deterministic with a gate in front of a device:
//! a read checks that its blob is live, then does its device I/O with no lock held; the gate
//! holds that I/O while the test frees the blob, cleans its band and writes new blobs over it.

mod common;

use common::*;
use parking_lot::{Condvar, Mutex};
use reo_media::{Media, MemMedia};
use reo_store::{
    Durability, Error, GcDecision, GcHandler, KeepAll, Location, Placement, PutOptions, RebuildOptions, RebuildState,
    Scheme, Store, VictimPolicy,
};
use std::io;
use std::sync::Arc;

/// A read whose blob is freed, cleaned away and overwritten by another blob at the same place
/// while its I/O waits answers `NotFound`, and the bytes it met (another blob's, whose checksums
/// do not bind this sequence number) are not charged to the device as checksum errors: a stale
/// location is not a failing device. Before the fix each such race counted a checksum error and
/// a step towards ejecting a healthy device (`io_error_limit`).
#[test]
fn a_read_overtaken_by_the_cleaner_is_not_a_device_error() {
    let gates: Vec<Arc<Gated>> = (0..2).map(|_| Arc::new(Gated::new(Arc::new(MemMedia::new(8 << 20))))).collect();
    let devs: Vec<Arc<dyn Media>> = gates.iter().map(|g| g.clone() as Arc<dyn Media>).collect();
    let cfg = small_config();
    let store = Arc::new(Store::open(devs, &cfg).unwrap().0);
    let opts = PutOptions::new(Scheme::None(Placement::Isolated)).placement(0);
    let a = store.put(b"a", &content(1, 3000), &opts).unwrap();
    store.flush().unwrap();

    gates[a.device as usize].arm();
    let reader = {
        let (store, a) = (store.clone(), a);
        std::thread::spawn(move || store.read_all(&a))
    };
    gates[a.device as usize].wait_held();

    // Free the blob, clean its band, and write blobs until one lands exactly where it was.
    store.free(&a, Durability::Sync).unwrap();
    let mut over = None;
    for i in 0..100_000u64 {
        if store.free_bands() <= 3 {
            store.seal_open_bands();
            while store.free_bands() <= 3 {
                store.gc(VictimPolicy::Greedy, &mut KeepAll).unwrap().expect("a sealed band to clean");
            }
        }
        let b = store.put(b"b", &content(i + 2, 3000), &opts).unwrap();
        if (b.band, b.device, b.start) == (a.band, a.device, a.start) {
            over = Some((b, i + 2));
            break;
        }
        store.free(&b, Durability::None).unwrap();
    }
    let (b, b_id) = over.expect("the place was reused");
    store.flush().unwrap();

    gates[a.device as usize].open();
    let r = reader.join().unwrap();
    assert!(matches!(r, Err(Error::NotFound { .. })), "stale location: {r:?}");
    let st = store.stats();
    assert_eq!(st.checksum_errors, 0, "a stale location is not a checksum error");
    assert!(store.failed_devices().is_empty());
    assert_eq!(store.read_all(&b).unwrap(), content(b_id, 3000), "the new blob is intact");
}

/// A rendezvous for the tests below: one party enters and waits until opened; others count
/// themselves past a point.
#[derive(Default)]
struct Gate {
    st: Mutex<(bool, bool, usize)>, // (entered, open, passed)
    cv: Condvar,
}

impl Gate {
    /// Signals entry and waits until opened (returns at once once opened).
    fn enter(&self) {
        let mut st = self.st.lock();
        st.0 = true;
        self.cv.notify_all();
        while !st.1 {
            self.cv.wait(&mut st);
        }
    }

    fn wait_entered(&self) {
        let mut st = self.st.lock();
        while !st.0 {
            self.cv.wait(&mut st);
        }
    }

    fn pass(&self) {
        self.st.lock().2 += 1;
        self.cv.notify_all();
    }

    fn wait_passed(&self, n: usize) {
        let mut st = self.st.lock();
        while st.2 < n {
            self.cv.wait(&mut st);
        }
    }

    fn open(&self) {
        self.st.lock().1 = true;
        self.cv.notify_all();
    }
}

/// A cleaner's handler that holds the cleaner (and its lock) inside `decide` until opened.
struct Held(Arc<Gate>);

impl GcHandler for Held {
    fn decide(&mut self, _: &Location, _: &[u8]) -> GcDecision {
        self.0.enter();
        GcDecision::Relocate
    }
}

/// Replacement media that report when `replace_device` has looked at them (its checks of the
/// store's state came before, in the unfixed code).
struct Looked {
    inner: Arc<dyn Media>,
    gate: Arc<Gate>,
    once: std::sync::atomic::AtomicBool,
}

impl Media for Looked {
    fn len(&self) -> u64 {
        self.inner.len()
    }
    fn read_at(&self, buf: &mut [u8], offset: u64) -> io::Result<()> {
        self.inner.read_at(buf, offset)
    }
    fn write_at(&self, buf: &[u8], offset: u64) -> io::Result<()> {
        self.inner.write_at(buf, offset)
    }
    fn sync(&self) -> io::Result<()> {
        self.inner.sync()
    }
    fn stores_bytes(&self) -> bool {
        if !self.once.swap(true, std::sync::atomic::Ordering::AcqRel) {
            self.gate.pass();
        }
        true
    }
    fn describe(&self) -> String {
        "looked-at replacement".into()
    }
}

const DEV: u64 = 8 << 20;

fn blobs(store: &Store, n: u64) -> Vec<(Location, Vec<u8>)> {
    (0..n)
        .map(|i| {
            let data = content(100 + i, 20_000);
            (store.put(b"x", &data, &PutOptions::new(Scheme::Rs { k: 2, p: 2 })).unwrap(), data)
        })
        .collect()
}

/// Two `replace_device` calls for one failed device, both past their checks before either
/// installs its media (the cleaner holds the lock they serialise on): exactly one may win. Before
/// the fix both swapped their media into the slot and started a rebuild each.
#[test]
fn concurrent_replacements_of_one_device_start_one_rebuild() {
    let devs = devices(4, DEV);
    let store = Arc::new(open(&devs, &small_config()));
    let kept = blobs(&store, 6);
    store.seal_open_bands();
    store.fail_device(1).unwrap();
    let gate = Arc::new(Gate::default());
    let cleaner = {
        let (store, gate) = (store.clone(), gate.clone());
        std::thread::spawn(move || store.gc(VictimPolicy::Greedy, &mut Held(gate)).map(|r| r.is_some()))
    };
    gate.wait_entered();
    let replacers: Vec<_> = (0..2)
        .map(|_| {
            let (store, gate) = (store.clone(), gate.clone());
            std::thread::spawn(move || {
                let m = Looked { inner: Arc::new(MemMedia::new(DEV)), gate, once: Default::default() };
                store.replace_device(1, Arc::new(m), RebuildOptions::default())
            })
        })
        .collect();
    gate.wait_passed(2);
    gate.open();
    assert!(cleaner.join().unwrap().unwrap());
    let results: Vec<_> = replacers.into_iter().map(|h| h.join().unwrap()).collect();
    assert_eq!(results.iter().filter(|r| r.is_ok()).count(), 1, "one replacement wins: {results:?}");
    let h = results.into_iter().find_map(|r| r.ok()).unwrap();
    assert_eq!(h.wait().state, RebuildState::Done);
    // The cleaner relocated some: compare by content.
    let now: Vec<Vec<u8>> = store.blobs().iter().map(|(l, _)| store.read_all(l).unwrap()).collect();
    assert!(kept.iter().all(|(_, data)| now.contains(data)));
}

/// Two `resume_rebuild` calls at once start one rebuild: the second is refused while the first
/// is still building its queue. Before the fix both passed the `started` check.
#[test]
fn concurrent_resumes_start_one_rebuild() {
    let mut devs = devices(4, DEV);
    let cfg = small_config();
    let store = open(&devs, &cfg);
    let kept = blobs(&store, 6);
    store.fail_device(1).unwrap();
    devs[1] = devices(1, DEV).pop().unwrap();
    let paused = RebuildOptions { start_paused: true, ..Default::default() };
    let _ = store.replace_device(1, devs[1].clone(), paused).unwrap();
    store.kill();
    let (store, report) = Store::open(as_media(&devs), &cfg).unwrap();
    assert_eq!(report.rebuilding_device, Some(1));
    let store = Arc::new(store);
    let gate = Arc::new(Gate::default());
    let first = {
        let (store, gate) = (store.clone(), gate.clone());
        std::thread::spawn(move || {
            let priority: reo_store::PriorityFn = Arc::new(move |_: &Location, _: &[u8]| {
                gate.enter();
                0
            });
            store.resume_rebuild(RebuildOptions { priority, ..Default::default() })
        })
    };
    gate.wait_entered();
    let second = store.resume_rebuild(RebuildOptions::default());
    gate.open();
    let h = first.join().unwrap().unwrap().expect("a rebuild to resume");
    assert!(second.is_err(), "the second resume is refused: {second:?}");
    assert_eq!(h.wait().state, RebuildState::Done);
    for (loc, data) in &kept {
        assert_eq!(&store.read_all(loc).unwrap(), data);
    }
}

/// A journal write hung on a device's old media that fails only after the device was replaced
/// does not fail the new device: the journal writer marks a device failed only if its slot
/// still holds the media the write went to. Before the slot generations it marked the fresh
/// device failed, the replacement's checkpoint skipped it and the rebuild aborted.
#[test]
fn a_journal_write_straddling_a_replacement_does_not_fail_the_new_device() {
    let faulty = devices(4, 16 << 20);
    let gates: Vec<Arc<Gated>> = faulty.iter().map(|f| Arc::new(Gated::new(f.clone() as Arc<dyn Media>))).collect();
    let store =
        Arc::new(Store::open(gates.iter().map(|g| g.clone() as Arc<dyn Media>).collect(), &small_config()).unwrap().0);
    // A placement key whose isolated blobs live on device 1, so that the next write device 0
    // sees is the journal's.
    let key = (0..64u64)
        .find(|&k| {
            let opts = PutOptions::new(Scheme::None(Placement::Isolated)).placement(k);
            store.put(b"k", &content(k, 1000), &opts).unwrap().device == 1
        })
        .expect("a key placing on device 1");
    store.flush().unwrap();
    gates[0].arm_write();
    let opts = PutOptions::new(Scheme::None(Placement::Isolated)).placement(key);
    let loc = store.put(b"p", &content(99, 5000), &opts).unwrap();
    gates[0].wait_held(); // the journal writer's batch write, on device 0's old media
    faulty[0].fail_stop();
    store.fail_device(0).unwrap();
    let replacing = {
        let store = store.clone();
        std::thread::spawn(move || {
            store.replace_device(0, Arc::new(MemMedia::new(16 << 20)), RebuildOptions::default())
        })
    };
    // The replacement installs the new media and brings the slot back before it waits for the
    // journal writer (its checkpoint), which still holds the hung write.
    while store.failed_devices().contains(&0) {
        std::thread::yield_now();
    }
    let errors = store.stats().write_errors;
    gates[0].open();
    let rebuilt = replacing.join().unwrap().expect("replacement").wait();
    assert_eq!(rebuilt.state, RebuildState::Done, "{rebuilt:?}");
    assert!(store.stats().write_errors > errors, "the old device's failed write is counted");
    assert!(store.failed_devices().is_empty(), "the new device was failed for the old one's write");
    store.flush().unwrap();
    assert_eq!(store.read_all(&loc).unwrap(), content(99, 5000));
}
