//! Check-then-act races of the read path, made deterministic with a gate in front of a device:
//! a read checks that its blob is live, then does its device I/O with no lock held; the gate
//! holds that I/O while the test frees the blob, cleans its band and writes new blobs over it.

mod common;

use common::*;
use reo_media::{Media, MemMedia};
use reo_store::{Durability, Error, KeepAll, Placement, PutOptions, Scheme, Store, VictimPolicy};
use std::io;
use std::sync::{Arc, Condvar, Mutex};

/// A device whose next read, once armed, waits until the test opens the gate.
struct Gated {
    inner: Arc<dyn Media>,
    st: Mutex<(bool, bool, bool)>, // (armed, a read is waiting, open)
    cv: Condvar,
}

impl Gated {
    fn new(inner: Arc<dyn Media>) -> Gated {
        Gated { inner, st: Mutex::new((false, false, false)), cv: Condvar::new() }
    }

    fn arm(&self) {
        *self.st.lock().unwrap() = (true, false, false);
    }

    /// Blocks until the armed read is held at the gate.
    fn wait_held(&self) {
        let mut st = self.st.lock().unwrap();
        while !st.1 {
            st = self.cv.wait(st).unwrap();
        }
    }

    fn open(&self) {
        self.st.lock().unwrap().2 = true;
        self.cv.notify_all();
    }
}

impl Media for Gated {
    fn len(&self) -> u64 {
        self.inner.len()
    }

    fn read_at(&self, buf: &mut [u8], offset: u64) -> io::Result<()> {
        {
            let mut st = self.st.lock().unwrap();
            if st.0 {
                st.0 = false;
                st.1 = true;
                self.cv.notify_all();
                while !st.2 {
                    st = self.cv.wait(st).unwrap();
                }
            }
        }
        self.inner.read_at(buf, offset)
    }

    fn write_at(&self, buf: &[u8], offset: u64) -> io::Result<()> {
        self.inner.write_at(buf, offset)
    }

    fn sync(&self) -> io::Result<()> {
        self.inner.sync()
    }

    fn describe(&self) -> String {
        format!("gated {}", self.inner.describe())
    }
}

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
