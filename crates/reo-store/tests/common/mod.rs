//! Shared test fixtures: small stores over in-memory devices wrapped in fault injectors.
#![allow(dead_code)]

use parking_lot::{Condvar, Mutex};
use reo_media::{FaultyMedia, Media, MemMedia};
use reo_store::{Location, Placement, PutOptions, Scheme, Store, StoreConfig};
use std::io;
use std::sync::Arc;

/// A small-geometry config: 16 KiB chunks, 256 KiB zones, small metadata regions. Hedged reads
/// and the stuck-device limit are off: tests that hold reads at gates or count degraded reads
/// must not depend on how long a loaded machine takes (`slow.rs` turns them on).
pub fn small_config() -> StoreConfig {
    StoreConfig {
        chunk_size: 16 << 10,
        zone_size: Some(256 << 10),
        journal_size: Some(256 << 10),
        checkpoint_size: Some(512 << 10),
        io_threads: Some(4),
        create: true,
        slow_read_after: None,
        stuck_read_fail_after: None,
        ..Default::default()
    }
}

/// `n` fault-injecting in-memory devices of `len` bytes.
pub fn devices(n: usize, len: u64) -> Vec<Arc<FaultyMedia>> {
    (0..n).map(|_| Arc::new(FaultyMedia::new(Arc::new(MemMedia::new(len))))).collect()
}

pub fn as_media(devs: &[Arc<FaultyMedia>]) -> Vec<Arc<dyn Media>> {
    devs.iter().map(|d| d.clone() as Arc<dyn Media>).collect()
}

/// Opens (or formats) a store over `devs`.
pub fn open(devs: &[Arc<FaultyMedia>], cfg: &StoreConfig) -> Store {
    Store::open(as_media(devs), cfg).expect("open store").0
}

/// Deterministic content for blob `id` of `len` bytes.
pub fn content(id: u64, len: usize) -> Vec<u8> {
    let mut x = id.wrapping_mul(0x9E37_79B9_7F4A_7C15) ^ 0xD1B5_4A32_D192_ED03;
    (0..len)
        .map(|_| {
            x ^= x << 13;
            x ^= x >> 7;
            x ^= x << 17;
            x as u8
        })
        .collect()
}

/// Every scheme worth testing over `n` devices.
pub fn schemes(n: usize) -> Vec<Scheme> {
    let mut v = vec![Scheme::None(Placement::Isolated), Scheme::None(Placement::Striped)];
    for r in 2..=n as u8 {
        v.push(Scheme::Replicate(r));
    }
    for p in 1..n as u8 {
        for k in 1..=(n as u8 - p) {
            if k == 1 || k + p == n as u8 || (k, p) == (2, 1) {
                v.push(Scheme::Rs { k, p });
            }
        }
    }
    v
}

/// Sizes that exercise empty, sub-chunk, exact-row and multi-row blobs.
pub const SIZES: &[usize] = &[0, 1, 100, 3584, 3585, 4080, 4081, 15_872, 16_368, 40_000, 100_000, 200_000];

/// A blob of every scheme over four devices ([`schemes`]) and every size of [`SIZES`], each
/// with its own content: where it lives, its bytes and its scheme.
pub fn put_every_scheme_and_size(store: &Store) -> Vec<(Location, Vec<u8>, Scheme)> {
    let mut blobs = Vec::new();
    for (i, scheme) in schemes(4).into_iter().enumerate() {
        for (j, &len) in SIZES.iter().enumerate() {
            let data = content((i * 100 + j) as u64, len);
            blobs.push((store.put(b"h", &data, &PutOptions::new(scheme)).unwrap(), data, scheme));
        }
    }
    blobs
}

/// A device that counts its reads and whose next reads (or next write in a range), once armed,
/// wait until the test opens the gate: check-then-act races made deterministic.
pub struct Gated {
    inner: Arc<dyn Media>,
    st: Mutex<GateState>,
    cv: Condvar,
}

#[derive(Default)]
struct GateState {
    /// Reads still to hold at the gate.
    armed: usize,
    /// Writes still to hold at the gate, if they start in `write_range`.
    armed_writes: usize,
    write_range: std::ops::Range<u64>,
    /// Reads and writes held at the gate so far.
    held: usize,
    open: bool,
    /// Reads begun.
    reads: usize,
}

impl Gated {
    pub fn new(inner: Arc<dyn Media>) -> Gated {
        Gated { inner, st: Mutex::new(GateState::default()), cv: Condvar::new() }
    }

    pub fn arm(&self) {
        self.arm_for(1);
    }

    /// Holds the next `n` reads at the gate.
    pub fn arm_for(&self, n: usize) {
        let mut st = self.st.lock();
        (st.armed, st.held, st.open) = (n, 0, false);
    }

    /// Holds the next write at the gate (counted as held like a read).
    pub fn arm_write(&self) {
        self.arm_write_in(0..u64::MAX);
    }

    /// Holds the next write starting at an offset in `range` (a region of the layout).
    pub fn arm_write_in(&self, range: std::ops::Range<u64>) {
        let mut st = self.st.lock();
        (st.armed_writes, st.write_range, st.held, st.open) = (1, range, 0, false);
    }

    /// Waits at the gate if a write at `offset` is armed.
    fn hold_write(&self, offset: u64) {
        let mut st = self.st.lock();
        if st.armed_writes > 0 && st.write_range.contains(&offset) {
            st.armed_writes -= 1;
            st.held += 1;
            self.cv.notify_all();
            self.cv.wait_while(&mut st, |st| !st.open);
        }
    }

    /// Blocks until the armed read is held at the gate.
    pub fn wait_held(&self) {
        self.wait_held_for(1);
    }

    /// Blocks until `n` reads (or writes) are held at the gate.
    pub fn wait_held_for(&self, n: usize) {
        self.cv.wait_while(&mut self.st.lock(), |st| st.held < n);
    }

    /// [`Gated::wait_held_for`] bounded by `limit`: whether `n` were held in time.
    pub fn held_within(&self, n: usize, limit: std::time::Duration) -> bool {
        let mut st = self.st.lock();
        self.cv.wait_while_for(&mut st, |st| st.held < n, limit);
        st.held >= n
    }

    pub fn open(&self) {
        self.st.lock().open = true;
        self.cv.notify_all();
    }

    /// Reads begun so far.
    pub fn reads(&self) -> usize {
        self.st.lock().reads
    }

    /// Blocks until more than `n` reads have begun.
    pub fn wait_reads_above(&self, n: usize) {
        self.cv.wait_while(&mut self.st.lock(), |st| st.reads <= n);
    }
}

impl Media for Gated {
    fn len(&self) -> u64 {
        self.inner.len()
    }

    fn read_at(&self, buf: &mut [u8], offset: u64) -> io::Result<()> {
        {
            let mut st = self.st.lock();
            st.reads += 1;
            if st.armed > 0 {
                st.armed -= 1;
                st.held += 1;
                self.cv.notify_all();
                self.cv.wait_while(&mut st, |st| !st.open);
            }
            drop(st);
            self.cv.notify_all();
        }
        self.inner.read_at(buf, offset)
    }

    fn write_at(&self, buf: &[u8], offset: u64) -> io::Result<()> {
        self.hold_write(offset);
        self.inner.write_at(buf, offset)
    }

    fn sync(&self) -> io::Result<()> {
        self.inner.sync()
    }

    fn describe(&self) -> String {
        format!("gated {}", self.inner.describe())
    }
}
