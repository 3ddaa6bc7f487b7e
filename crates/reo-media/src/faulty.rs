//! [`FaultyMedia`]: wraps any [`Media`] and injects faults for crash and failure tests:
//! fail-stop, an I/O error at the Nth operation (once or from then on), slowness, silent bit
//! flips, and power cuts that drop, reorder or tear the writes not yet made durable by a sync.
//!
//! Power cuts work from an undo log: every successful write records its offset, the bytes it
//! replaced (pre-image, read from the inner device just before) and the bytes it wrote
//! (post-image). A successful sync forgets the writes that returned before it. A cut restores the
//! durable image (pre-images in reverse order), then re-applies whatever the cut mode lets
//! survive. Writes are serialised through the log (one at a time per device); reads are not.

use crate::rng::SplitMix64;
use crate::Media;
use parking_lot::Mutex;
use std::io;
use std::ops::Range;
use std::sync::Arc;
use std::time::Duration;

/// Which operations a scheduled fault counts and fails.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum OpKind {
    /// `read_at`.
    Read,
    /// `write_at`.
    Write,
    /// `sync`.
    Sync,
    /// Every operation.
    Any,
}

/// What a power cut does to the writes not yet made durable.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum PowerCut {
    /// Every unsynced write is lost.
    DropAll,
    /// Each unsynced write is kept fully, dropped, or (torn) only some of its `granularity`-sized
    /// sectors (aligned to absolute device offsets) are kept. If any unsynced write spans two or
    /// more sectors, at least one write is torn.
    Torn {
        /// Sector size in bytes (typically 512 or 4096).
        granularity: usize,
    },
    /// A random subset of the unsynced writes survives, each entirely.
    Reorder,
}

struct Fault {
    kind: OpKind,
    n: u64,
    seen: u64,
    persistent: bool,
}

#[derive(Default)]
struct Control {
    failed: bool,
    faults: Vec<Fault>,
    ops: u64,
    delay: Duration,
    lying: bool,
}

struct Unsynced {
    seq: u64,
    offset: u64,
    len: usize,
    /// Empty when the inner device keeps no bytes.
    pre: Vec<u8>,
    post: Vec<u8>,
}

#[derive(Default)]
struct Log {
    next_seq: u64,
    writes: Vec<Unsynced>,
}

/// A device wrapper that injects faults. All methods take `&self` and are thread-safe.
pub struct FaultyMedia {
    inner: Arc<dyn Media>,
    ctl: Mutex<Control>,
    log: Mutex<Log>,
}

impl FaultyMedia {
    /// Wraps `inner`; no faults are scheduled.
    pub fn new(inner: Arc<dyn Media>) -> Self {
        FaultyMedia { inner, ctl: Mutex::default(), log: Mutex::default() }
    }

    /// The wrapped device.
    pub fn inner(&self) -> &Arc<dyn Media> {
        &self.inner
    }

    /// The device is gone: every later operation fails ("device failed") until [`Self::revive`].
    pub fn fail_stop(&self) {
        self.ctl.lock().failed = true;
    }

    /// Undoes [`Self::fail_stop`].
    pub fn revive(&self) {
        self.ctl.lock().failed = false;
    }

    /// Counting operations of `kind` from now (1-based), the `n`-th (`n` = 0 counts as 1) fails
    /// with an injected error and is not performed; if `persistent`, every later one fails too.
    /// Several schedules may be active at once.
    pub fn fail_at(&self, n: u64, kind: OpKind, persistent: bool) {
        self.ctl.lock().faults.push(Fault { kind, n: n.max(1), seen: 0, persistent });
    }

    /// Removes every scheduled error (not a fail-stop).
    pub fn clear_faults(&self) {
        self.ctl.lock().faults.clear();
    }

    /// Operations seen so far (reads, writes and syncs, failed ones included).
    pub fn ops(&self) -> u64 {
        self.ctl.lock().ops
    }

    /// Sleeps `d` before each operation (zero: no delay).
    pub fn set_delay(&self, d: Duration) {
        self.ctl.lock().delay = d;
    }

    /// While `lie` is set, a successful `sync` does not make anything durable: the writes stay
    /// in the unsynced log and a later power cut can lose them.
    pub fn set_lying_sync(&self, lie: bool) {
        self.ctl.lock().lying = lie;
    }

    /// Number of writes a power cut could lose now.
    pub fn unsynced_writes(&self) -> usize {
        self.log.lock().writes.len()
    }

    /// Silently flips bit `bit` (0..8) of the byte at `offset` on the inner device. The flip is
    /// not an operation (not counted, never fails by injection) and is treated as already
    /// durable: it is applied to every logged image of that byte, so no power cut undoes it.
    pub fn flip_bit(&self, offset: u64, bit: u8) -> io::Result<()> {
        if bit >= 8 {
            return Err(io::Error::new(io::ErrorKind::InvalidInput, format!("bit {bit} is not in 0..8")));
        }
        let mask = 1u8 << bit;
        let mut log = self.log.lock();
        let mut b = [0u8];
        self.inner.read_at(&mut b, offset)?;
        b[0] ^= mask;
        self.inner.write_at(&b, offset)?;
        for w in log.writes.iter_mut().filter(|w| !w.pre.is_empty()) {
            if let Some(i) = offset.checked_sub(w.offset).filter(|&i| i < w.len as u64) {
                w.pre[i as usize] ^= mask;
                w.post[i as usize] ^= mask;
            }
        }
        Ok(())
    }

    /// Cuts the power and reboots: the unsynced writes are lost, reordered or torn according to
    /// `mode` (random choices drawn from `seed`, deterministically), the result is synced to the
    /// inner device, the log is emptied, and the fail-stop and scheduled errors are cleared (the
    /// delay and lying-sync settings stay: they belong to the drive). Returns how many writes were
    /// lost fully or partly (a zero-length write is never lost). Call it while no I/O is in flight.
    pub fn power_cut(&self, mode: PowerCut, seed: u64) -> io::Result<usize> {
        if mode == (PowerCut::Torn { granularity: 0 }) {
            return Err(io::Error::new(io::ErrorKind::InvalidInput, "power cut: torn granularity must be > 0"));
        }
        let mut log = self.log.lock();
        let writes = std::mem::take(&mut log.writes);
        let mut rng = SplitMix64::new(seed);
        let plan = match mode {
            PowerCut::DropAll => writes.iter().map(|_| Vec::new()).collect(),
            PowerCut::Reorder => writes
                .iter()
                .map(|w| match rng.next_u64() & 1 {
                    0 => std::iter::once(0..w.len).collect(),
                    _ => Vec::new(),
                })
                .collect(),
            PowerCut::Torn { granularity } => torn_plan(&writes, granularity, &mut rng),
        };
        let lost =
            writes.iter().zip(&plan).filter(|(w, kept)| kept.iter().map(|r| r.len()).sum::<usize>() < w.len).count();
        if self.inner.stores_bytes() {
            for w in writes.iter().rev() {
                self.inner.write_at(&w.pre, w.offset)?;
            }
            for (w, kept) in writes.iter().zip(&plan) {
                for r in kept.iter().filter(|r| !r.is_empty()) {
                    self.inner.write_at(&w.post[r.clone()], w.offset + r.start as u64)?;
                }
            }
            self.inner.sync()?;
        }
        drop(log);
        let mut ctl = self.ctl.lock();
        ctl.failed = false;
        ctl.faults.clear();
        Ok(lost)
    }

    /// Counts the operation, applies the delay, and decides whether it fails.
    fn admit(&self, op: OpKind) -> io::Result<()> {
        let (delay, verdict) = {
            let mut c = self.ctl.lock();
            c.ops += 1;
            let verdict = if c.failed {
                Err(io::Error::other(format!("{}: device failed (fail-stop injected)", self.describe())))
            } else {
                let mut inject = None;
                for f in c.faults.iter_mut() {
                    if f.kind == OpKind::Any || f.kind == op {
                        f.seen += 1;
                        if f.seen == f.n || (f.persistent && f.seen > f.n) {
                            inject = Some(f.seen);
                        }
                    }
                }
                c.faults.retain(|f| f.persistent || f.seen < f.n);
                match inject {
                    Some(k) => Err(io::Error::other(format!(
                        "{}: injected I/O error ({op:?}, operation {k} of its schedule)",
                        self.describe()
                    ))),
                    None => Ok(()),
                }
            };
            (c.delay, verdict)
        };
        if !delay.is_zero() {
            std::thread::sleep(delay);
        }
        verdict
    }
}

/// Per write, the byte ranges (relative to the write) that survive a torn cut.
fn torn_plan(writes: &[Unsynced], g: usize, rng: &mut SplitMix64) -> Vec<Vec<Range<usize>>> {
    let sectors: Vec<Vec<Range<usize>>> = writes.iter().map(|w| sectors(w.offset, w.len, g)).collect();
    let mut keep: Vec<Vec<bool>> = sectors
        .iter()
        .map(|s| match rng.next_u64() % 3 {
            0 => vec![true; s.len()],
            1 => vec![false; s.len()],
            _ => s.iter().map(|_| rng.next_u64() & 1 == 1).collect(),
        })
        .collect();
    let torn = |k: &[bool]| k.contains(&true) && k.contains(&false);
    if !keep.iter().any(|k| torn(k)) {
        let candidates: Vec<usize> = (0..keep.len()).filter(|&i| keep[i].len() >= 2).collect();
        if !candidates.is_empty() {
            let i = candidates[rng.below_mod(candidates.len() as u64) as usize];
            let n = keep[i].len();
            for k in keep[i].iter_mut() {
                *k = rng.next_u64() & 1 == 1;
            }
            let a = rng.below_mod(n as u64) as usize;
            let b = (a + 1 + rng.below_mod(n as u64 - 1) as usize) % n;
            keep[i][a] = true;
            keep[i][b] = false;
        }
    }
    sectors
        .into_iter()
        .zip(keep)
        .map(|(s, k)| s.into_iter().zip(k).filter(|(_, k)| *k).map(|(r, _)| r).collect())
        .collect()
}

/// The pieces of `[offset, offset + len)` cut at multiples of `g`, relative to `offset`.
fn sectors(offset: u64, len: usize, g: usize) -> Vec<Range<usize>> {
    let mut out = Vec::new();
    let mut at = 0;
    while at < len {
        let abs = offset + at as u64;
        let piece = (g - (abs % g as u64) as usize).min(len - at);
        out.push(at..at + piece);
        at += piece;
    }
    out
}

impl Media for FaultyMedia {
    fn len(&self) -> u64 {
        self.inner.len()
    }

    fn read_at(&self, buf: &mut [u8], offset: u64) -> io::Result<()> {
        self.admit(OpKind::Read)?;
        self.inner.read_at(buf, offset)
    }

    // `write_vectored_at` is deliberately not forwarded: the default gathers the parts and comes
    // through here, so every write is admitted, counted and logged for power cuts as one.
    fn write_at(&self, buf: &[u8], offset: u64) -> io::Result<()> {
        self.admit(OpKind::Write)?;
        let mut log = self.log.lock();
        let (pre, post) = if self.inner.stores_bytes() {
            let mut pre = vec![0u8; buf.len()];
            self.inner.read_at(&mut pre, offset)?;
            (pre, buf.to_vec())
        } else {
            (Vec::new(), Vec::new())
        };
        self.inner.write_at(buf, offset)?;
        let seq = log.next_seq;
        log.next_seq += 1;
        log.writes.push(Unsynced { seq, offset, len: buf.len(), pre, post });
        Ok(())
    }

    fn sync(&self) -> io::Result<()> {
        self.admit(OpKind::Sync)?;
        // Only writes that returned before this call become durable.
        let upto = self.log.lock().next_seq;
        self.inner.sync()?;
        if !self.ctl.lock().lying {
            let mut log = self.log.lock();
            let k = log.writes.partition_point(|w| w.seq < upto);
            log.writes.drain(..k);
        }
        Ok(())
    }

    fn stores_bytes(&self) -> bool {
        self.inner.stores_bytes()
    }

    fn describe(&self) -> String {
        format!("faulty:{}", self.inner.describe())
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::{MemMedia, SimMedia};
    use std::time::Instant;

    const LEN: u64 = 1 << 20;

    fn setup() -> FaultyMedia {
        FaultyMedia::new(Arc::new(MemMedia::new(LEN)))
    }

    fn read(m: &dyn Media, offset: u64, len: usize) -> Vec<u8> {
        let mut b = vec![0u8; len];
        m.read_at(&mut b, offset).unwrap();
        b
    }

    fn image(m: &FaultyMedia) -> Vec<u8> {
        read(m.inner().as_ref(), 0, LEN as usize)
    }

    #[test]
    fn fail_stop_and_revive() {
        let m = setup();
        m.write_at(&[1u8; 8], 0).unwrap();
        m.fail_stop();
        let e = m.write_at(&[2u8; 8], 0).unwrap_err();
        assert_eq!(e.kind(), io::ErrorKind::Other);
        assert!(e.to_string().contains("device failed"), "{e}");
        assert!(m.read_at(&mut [0u8; 8], 0).is_err());
        assert!(m.sync().is_err());
        assert_eq!(read(m.inner().as_ref(), 0, 8), vec![1u8; 8], "failed write not done");
        m.revive();
        m.write_at(&[3u8; 8], 0).unwrap();
        assert_eq!(read(&m, 0, 8), vec![3u8; 8]);
        assert_eq!(m.ops(), 6);
        assert!(m.describe().starts_with("faulty:mem"));
        assert!(m.stores_bytes());
        assert_eq!(m.len(), LEN);
    }

    #[test]
    fn fail_at_once() {
        let m = setup();
        m.fail_at(3, OpKind::Write, false);
        m.write_at(&[1u8; 4], 0).unwrap();
        m.read_at(&mut [0u8; 4], 0).unwrap(); // reads do not count
        m.write_at(&[2u8; 4], 4).unwrap();
        let e = m.write_at(&[3u8; 4], 8).unwrap_err();
        assert!(e.to_string().contains("injected I/O error"), "{e}");
        assert_eq!(read(&m, 8, 4), vec![0u8; 4], "failed write changed nothing");
        assert_eq!(m.unsynced_writes(), 2, "failed write not logged");
        m.write_at(&[4u8; 4], 8).unwrap();
        m.write_at(&[5u8; 4], 12).unwrap();
        assert_eq!(read(&m, 0, 16), [[1u8; 4], [2; 4], [4; 4], [5; 4]].concat());
        assert_eq!(m.ops(), 8);

        // Any counts every kind: the second op (a sync) fails.
        m.fail_at(2, OpKind::Any, false);
        m.read_at(&mut [0u8; 4], 0).unwrap();
        assert!(m.sync().is_err());
        assert_eq!(m.unsynced_writes(), 4, "failed sync keeps the log");
        m.sync().unwrap();
        assert_eq!(m.unsynced_writes(), 0);
    }

    #[test]
    fn fail_at_persistent_until_cleared() {
        let m = setup();
        m.fail_at(2, OpKind::Read, true);
        let mut b = [0u8; 4];
        m.read_at(&mut b, 0).unwrap();
        for _ in 0..5 {
            assert!(m.read_at(&mut b, 0).is_err());
        }
        m.write_at(&[9u8; 4], 0).unwrap(); // other kinds unaffected
        m.sync().unwrap();
        m.clear_faults();
        m.read_at(&mut b, 0).unwrap();
        assert_eq!(b, [9u8; 4]);
        assert_eq!(m.ops(), 9);
    }

    #[test]
    fn drop_all_restores_the_synced_image() {
        let m = setup();
        m.write_at(&[1u8; 8192], 0).unwrap();
        m.sync().unwrap();
        let durable = image(&m);
        m.write_at(&[2u8; 4096], 4096).unwrap();
        m.write_at(&[3u8; 8192], 2048).unwrap(); // overlaps both
        m.write_at(&[4u8; 100], 100_000).unwrap();
        assert_eq!(m.unsynced_writes(), 3);
        assert_eq!(m.power_cut(PowerCut::DropAll, 0).unwrap(), 3);
        assert_eq!(m.unsynced_writes(), 0);
        assert!(image(&m) == durable);
        // Works again after the cut.
        m.write_at(&[5u8; 4], 0).unwrap();
        assert_eq!(read(&m, 0, 4), vec![5u8; 4]);
    }

    #[test]
    fn power_cut_reboots_the_device() {
        let m = setup();
        m.fail_at(1, OpKind::Write, true);
        m.fail_stop();
        m.power_cut(PowerCut::DropAll, 0).unwrap();
        m.write_at(&[1u8; 4], 0).unwrap();
    }

    /// Writes `n` disjoint regions of `size` bytes (region i filled with i + 1) over a synced
    /// zero image; returns the regions' offsets.
    fn disjoint_writes(m: &FaultyMedia, n: usize, size: usize, start: u64) -> Vec<u64> {
        let offs: Vec<u64> = (0..n as u64).map(|i| start + i * size as u64 * 2).collect();
        for (i, &o) in offs.iter().enumerate() {
            m.write_at(&vec![i as u8 + 1; size], o).unwrap();
        }
        offs
    }

    fn reorder_survivors(seed: u64) -> (usize, Vec<bool>) {
        let m = setup();
        let offs = disjoint_writes(&m, 16, 4096, 0);
        let lost = m.power_cut(PowerCut::Reorder, seed).unwrap();
        let survived: Vec<bool> = offs
            .iter()
            .enumerate()
            .map(|(i, &o)| {
                let r = read(&m, o, 4096);
                let new = r.iter().all(|&b| b == i as u8 + 1);
                assert!(new || r.iter().all(|&b| b == 0), "region {i} mixed");
                new
            })
            .collect();
        assert_eq!(lost, survived.iter().filter(|&&s| !s).count());
        (lost, survived)
    }

    #[test]
    fn reorder_keeps_a_deterministic_subset() {
        let a = reorder_survivors(42);
        assert_eq!(a, reorder_survivors(42), "same seed, same outcome");
        let outcomes: Vec<_> = (0..8).map(reorder_survivors).collect();
        assert!(outcomes.iter().any(|(lost, _)| *lost > 0 && *lost < 16));
        assert!(outcomes.iter().any(|o| *o != outcomes[0]), "seed matters");
    }

    #[test]
    fn reorder_applies_survivors_in_order() {
        // Two writes to the same bytes: if both survive, the later one wins.
        for seed in 0..16 {
            let m = setup();
            m.write_at(&[1u8; 512], 0).unwrap();
            m.write_at(&[2u8; 512], 0).unwrap();
            let lost = m.power_cut(PowerCut::Reorder, seed).unwrap();
            let r = read(&m, 0, 512);
            let v = r[0];
            assert!(r.iter().all(|&b| b == v));
            match lost {
                0 => assert_eq!(v, 2),
                2 => assert_eq!(v, 0),
                _ => assert!(v == 1 || v == 2),
            }
        }
    }

    #[test]
    fn torn_sectors_are_old_or_new() {
        for seed in 0..20 {
            let m = setup();
            let mut offs = disjoint_writes(&m, 6, 4096, 0);
            // One write starting mid-sector: its first and last pieces are partial sectors.
            m.write_at(&[7u8; 1500], 100_000 + 100).unwrap();
            offs.push(100_000 + 100);
            let lost = m.power_cut(PowerCut::Torn { granularity: 512 }, seed).unwrap();
            let mut torn = 0;
            let mut not_full = 0;
            for (i, &o) in offs.iter().enumerate() {
                let (len, val) = if i == 6 { (1500, 7) } else { (4096, i as u8 + 1) };
                let got = read(&m, o, len);
                let pieces = sectors(o, len, 512);
                let mut kept = 0;
                for r in &pieces {
                    let s = &got[r.clone()];
                    let new = s.iter().all(|&b| b == val);
                    assert!(new || s.iter().all(|&b| b == 0), "seed {seed} write {i}");
                    kept += usize::from(new);
                }
                torn += usize::from(kept > 0 && kept < pieces.len());
                not_full += usize::from(kept < pieces.len());
            }
            assert!(torn >= 1, "seed {seed}: no torn write");
            assert_eq!(lost, not_full, "seed {seed}");
        }
    }

    #[test]
    fn a_lone_multi_sector_write_is_always_torn() {
        for seed in 0..50 {
            let m = setup();
            m.write_at(&[9u8; 4096], 4096).unwrap();
            assert_eq!(m.power_cut(PowerCut::Torn { granularity: 512 }, seed).unwrap(), 1);
            let got = read(&m, 4096, 4096);
            let kept = got.chunks(512).filter(|s| s.iter().all(|&b| b == 9)).count();
            let dropped = got.chunks(512).filter(|s| s.iter().all(|&b| b == 0)).count();
            assert_eq!(kept + dropped, 8, "seed {seed}");
            assert!(kept > 0 && dropped > 0, "seed {seed}: not torn");
        }
    }

    #[test]
    fn torn_without_multi_sector_writes_tears_nothing() {
        let m = setup();
        m.write_at(&[1u8; 512], 0).unwrap();
        m.write_at(&[2u8; 100], 1024).unwrap();
        let lost = m.power_cut(PowerCut::Torn { granularity: 512 }, 3).unwrap();
        assert!(lost <= 2);
        assert!(m.power_cut(PowerCut::Torn { granularity: 0 }, 3).is_err());
    }

    #[test]
    fn lying_sync_loses_data_on_cut() {
        let m = setup();
        m.set_lying_sync(true);
        m.write_at(&[1u8; 4096], 0).unwrap();
        m.sync().unwrap();
        assert_eq!(m.unsynced_writes(), 1);
        assert_eq!(m.power_cut(PowerCut::DropAll, 0).unwrap(), 1);
        assert_eq!(read(&m, 0, 4096), vec![0u8; 4096]);

        m.set_lying_sync(false);
        m.write_at(&[2u8; 4096], 0).unwrap();
        m.sync().unwrap();
        assert_eq!(m.unsynced_writes(), 0);
        assert_eq!(m.power_cut(PowerCut::DropAll, 0).unwrap(), 0);
        assert_eq!(read(&m, 0, 4096), vec![2u8; 4096]);
    }

    #[test]
    fn flip_bit_is_one_bit_and_survives_a_cut() {
        let m = setup();
        m.write_at(&[0x55u8; 4096], 0).unwrap();
        m.sync().unwrap();
        m.write_at(&[0xAAu8; 4096], 8192).unwrap(); // unsynced
        let ops = m.ops();
        m.flip_bit(10, 3).unwrap(); // synced region
        m.flip_bit(8192 + 7, 0).unwrap(); // unsynced region
        assert_eq!(m.ops(), ops, "flips are not counted");
        assert_eq!(m.unsynced_writes(), 1);

        let mut want = image(&m);
        let got = read(&m, 0, 4096);
        assert_eq!(got[10], 0x55 ^ 0x08);
        let diff: u32 = got.iter().map(|&b| (b ^ 0x55).count_ones()).sum();
        assert_eq!(diff, 1);
        assert_eq!(read(&m, 8192 + 7, 1), vec![0xAA ^ 1]);

        assert_eq!(m.power_cut(PowerCut::DropAll, 0).unwrap(), 1);
        // The unsynced write is gone, the flip on its pre-image (zero) stays.
        want[8192..8192 + 4096].fill(0);
        want[8192 + 7] = 1;
        assert!(image(&m) == want);
        assert_eq!(read(&m, 10, 1), vec![0x55 ^ 0x08]);
        assert!(m.flip_bit(0, 8).is_err());
        assert!(m.flip_bit(LEN, 0).is_err());
    }

    #[test]
    fn delay_slows_each_op() {
        let m = setup();
        m.set_delay(Duration::from_millis(20));
        let t = Instant::now();
        m.read_at(&mut [0u8; 1], 0).unwrap();
        m.sync().unwrap();
        assert!(t.elapsed() >= Duration::from_millis(40));
        m.set_delay(Duration::ZERO);
    }

    #[test]
    fn over_sim_media_counts_without_io() {
        let sim = Arc::new(SimMedia::new(LEN));
        let m = FaultyMedia::new(sim.clone());
        assert!(!m.stores_bytes());
        m.write_at(&[1u8; 4096], 0).unwrap();
        m.write_at(&[1u8; 4096], 8192).unwrap();
        let before = sim.stats();
        assert_eq!((before.writes, before.reads), (2, 0), "no pre-image reads");
        assert_eq!(m.power_cut(PowerCut::DropAll, 0).unwrap(), 2);
        assert_eq!(sim.stats(), before, "the cut issues no I/O to a byte-less device");
    }

    #[test]
    fn out_of_range_write_is_not_logged() {
        let m = setup();
        assert!(m.write_at(&[1u8; 8], LEN - 4).is_err());
        assert_eq!(m.unsynced_writes(), 0);
    }
}
