//! Thrash (reliability catalogue B5): seeded random device failures (by command and fail-stop),
//! replacements with rebuilds (some killed midway and resumed after the reopen), slow devices,
//! cleaner passes, and kill -9 with a power cut and reopen, between rounds of concurrent puts,
//! reads and frees, checked against an oracle of acknowledged blobs.
//! At the end every device is healthy again, a scrub finds nothing unrecoverable, and every
//! acknowledged blob reads exact — also with any two devices failed.
//!
//! The failures stay within what the schemes tolerate (at most two devices failed or gone at a
//! time, blobs in rs(2,2) and replicate(3)); a blob written while devices were failed has chunks
//! only on the others until a replacement's rebuild restores them, and a failed device stays
//! failed until replaced, so every blob always has its chunks on every device that is up.
//! `REO_THRASH_STEPS` (default 40) and `REO_THRASH_SEEDS` (default 3) make it longer.

mod common;
use common::*;
use parking_lot::Mutex;
use reo_media::PowerCut;
use reo_store::{
    Durability, Error, GcDecision, GcHandler, Location, PutOptions, RebuildOptions, RebuildState, Scheme, ScrubOptions,
    Store, StoreConfig, VictimPolicy,
};
use std::collections::{BTreeMap, BTreeSet};
use std::sync::Arc;
use std::time::Duration;

const DEVICES: usize = 4;
/// Failed or gone devices at once, at most (the tolerance of the schemes used).
const MAX_DOWN: usize = 2;

fn env(name: &str, default: u64) -> u64 {
    std::env::var(name).ok().and_then(|v| v.parse().ok()).unwrap_or(default)
}

/// A small deterministic generator (xorshift).
struct Rng(u64);

impl Rng {
    fn below(&mut self, n: u64) -> u64 {
        self.0 ^= self.0 << 13;
        self.0 ^= self.0 >> 7;
        self.0 ^= self.0 << 17;
        self.0 % n
    }
}

/// Acknowledged live blobs: id → (location, length).
type Oracle = Mutex<BTreeMap<u64, (Location, usize)>>;

/// The cleaner's handler: relocates every blob and follows it in the oracle; a blob it reports
/// lost is an acknowledged blob lost (the test fails).
struct Follow<'a>(&'a Oracle);

impl GcHandler for Follow<'_> {
    fn decide(&mut self, _: &Location, _: &[u8]) -> GcDecision {
        GcDecision::Relocate
    }
    fn relocated(&mut self, old: &Location, new: &Location) {
        for v in self.0.lock().values_mut().filter(|v| v.0 == *old) {
            v.0 = *new;
        }
    }
    fn lost(&mut self, loc: &Location, err: &Error) {
        panic!("the cleaner lost an acknowledged blob {loc:?}: {err}");
    }
}

struct Run {
    devs: Vec<Arc<reo_media::FaultyMedia>>,
    cfg: StoreConfig,
    store: Store,
    oracle: Oracle,
    /// Devices fail-stopped (gone) and not replaced yet.
    gone: BTreeSet<usize>,
    next_id: u64,
    rng: Rng,
    log: Vec<String>,
}

impl Run {
    fn down(&self) -> BTreeSet<usize> {
        self.store.failed_devices().into_iter().chain(self.gone.iter().copied()).collect()
    }

    /// A round of load: one thread puts, one reads back random acknowledged blobs, then frees.
    fn round(&mut self) {
        let first = self.next_id;
        self.next_id += 6;
        let (store, oracle) = (&self.store, &self.oracle);
        let picks: Vec<u64> = (0..8).map(|_| self.rng.below(1 << 20)).collect();
        std::thread::scope(|s| {
            s.spawn(move || {
                for id in first..first + 6 {
                    let scheme = if id % 2 == 0 { Scheme::Rs { k: 2, p: 2 } } else { Scheme::Replicate(3) };
                    let len = 1 + (id as usize * 7919) % 60_000;
                    let opts = PutOptions::new(scheme).durability(Durability::Sync);
                    // An error is a put not acknowledged (e.g. a device gone under it): not in
                    // the oracle, and nothing asserted about it.
                    if let Ok(loc) = store.put(&id.to_le_bytes(), &content(id, len), &opts) {
                        oracle.lock().insert(id, (loc, len));
                    }
                }
            });
            s.spawn(move || {
                for p in picks {
                    let pick = {
                        let m = oracle.lock();
                        (!m.is_empty()).then(|| m.iter().nth(p as usize % m.len()).map(|(&i, &v)| (i, v)).unwrap())
                    };
                    if let Some((id, (loc, len))) = pick {
                        let got = store.read_all(&loc).unwrap_or_else(|e| panic!("blob {id} ({loc:?}): {e}"));
                        assert!(got == content(id, len), "blob {id}: wrong bytes");
                    }
                }
            });
        });
        let victims: Vec<u64> = {
            let m = self.oracle.lock();
            (0..2).filter_map(|_| m.keys().nth(self.rng.below(m.len().max(1) as u64) as usize).copied()).collect()
        };
        for id in victims {
            let Some((loc, _)) = self.oracle.lock().get(&id).copied() else { continue };
            if self.store.free(&loc, Durability::Sync).is_ok() {
                self.oracle.lock().remove(&id);
            }
        }
    }

    /// Gives device `d` back revived: failed first if the store has not noticed it is gone (as
    /// an operator would), so that it can be replaced.
    fn revive(&mut self, d: usize) {
        if !self.store.failed_devices().contains(&d) {
            self.store.fail_device(d).unwrap();
        }
        self.devs[d].revive();
        self.devs[d].clear_faults();
        self.gone.remove(&d);
    }

    fn replace(&mut self, d: usize) {
        self.revive(d);
        let h = self.store.replace_device(d, self.devs[d].clone(), RebuildOptions::default()).unwrap();
        assert_eq!(h.wait().state, RebuildState::Done, "{:?}", self.log);
    }

    /// kill -9, a power cut on every attached device, and a reopen.
    fn crash(&mut self) {
        let store = std::mem::replace(&mut self.store, open_blank());
        store.kill();
        for (d, dev) in self.devs.iter().enumerate() {
            if !self.gone.contains(&d) {
                dev.power_cut(PowerCut::DropAll, self.rng.below(1000)).unwrap();
            }
        }
        let (store, report) = Store::open(as_media(&self.devs), &self.cfg).unwrap();
        self.store = store;
        if let Some(d) = report.rebuilding_device {
            // Served meanwhile (a round), then resumed to the end.
            self.round();
            let h = self.store.resume_rebuild(RebuildOptions::default()).unwrap().expect("a rebuild to resume");
            assert_eq!(h.wait().state, RebuildState::Done, "device {d}: {:?}", self.log);
        }
    }

    /// One random event.
    fn event(&mut self) {
        let down = self.down();
        let up: Vec<usize> = (0..DEVICES).filter(|d| !down.contains(d)).collect();
        let pick_up = |r: &mut Rng| up[r.below(up.len() as u64) as usize];
        match self.rng.below(8) {
            0 if down.len() < MAX_DOWN => {
                let d = pick_up(&mut self.rng);
                self.log.push(format!("fail {d}"));
                self.store.fail_device(d).unwrap();
            }
            1 if down.len() < MAX_DOWN => {
                let d = pick_up(&mut self.rng);
                self.log.push(format!("fail-stop {d}"));
                self.devs[d].fail_stop();
                self.gone.insert(d);
            }
            2 | 3 if !down.is_empty() => {
                let d = *down.iter().nth(self.rng.below(down.len() as u64) as usize).unwrap();
                self.log.push(format!("replace {d}"));
                self.replace(d);
            }
            4 => {
                let d = pick_up(&mut self.rng);
                self.log.push(format!("slow {d} for a round"));
                self.devs[d].set_delay(Duration::from_millis(30));
                self.round();
                self.devs[d].set_delay(Duration::ZERO);
            }
            5 if !down.is_empty() => {
                let d = *down.iter().nth(self.rng.below(down.len() as u64) as usize).unwrap();
                let after = 1 + self.rng.below(20);
                self.log.push(format!("replace {d}, kill -9 after {after} blobs rebuilt, reopen, resume"));
                self.revive(d);
                let opts = RebuildOptions { pause_after_blobs: Some(after), ..Default::default() };
                let h = self.store.replace_device(d, self.devs[d].clone(), opts).unwrap();
                h.wait_until(|p| p.state == RebuildState::Paused);
                self.crash();
            }
            6 => {
                self.log.push("clean".into());
                self.store.gc(VictimPolicy::CostBenefit, &mut Follow(&self.oracle)).unwrap();
            }
            _ => {
                self.log.push("kill -9, power cut, reopen".into());
                self.crash();
            }
        }
    }
}

/// A throwaway store to stand in while the real one is killed.
fn open_blank() -> Store {
    open(&devices(2, 4 << 20), &small_config())
}

#[test]
fn thrash_keeps_every_acknowledged_blob() {
    let steps = env("REO_THRASH_STEPS", 40);
    for seed in 0..env("REO_THRASH_SEEDS", 3) {
        let cfg = StoreConfig { slow_read_after: Some(Duration::from_millis(10)), ..small_config() };
        let devs = devices(DEVICES, 32 << 20);
        let store = open(&devs, &cfg);
        let mut run = Run {
            devs,
            cfg,
            store,
            oracle: Mutex::new(BTreeMap::new()),
            gone: BTreeSet::new(),
            next_id: 0,
            rng: Rng(0x9E37_79B9_7F4A_7C15 ^ (seed + 1)),
            log: Vec::new(),
        };
        for _ in 0..steps {
            run.round();
            run.event();
            assert!(run.down().len() <= MAX_DOWN, "seed {seed}: {:?}", run.log);
        }
        // Back to health: every failed or gone device replaced and rebuilt.
        for d in run.down() {
            run.replace(d);
        }
        assert!(run.store.failed_devices().is_empty());
        let scrub = run.store.scrub(&ScrubOptions::default());
        assert!(scrub.unrecoverable.is_empty(), "seed {seed}: {scrub:?} after {:?}", run.log);
        let oracle = std::mem::take(&mut *run.oracle.lock());
        let check = |store: &Store, what: &str| {
            for (id, (loc, len)) in &oracle {
                let got = store.read_all(loc).unwrap_or_else(|e| panic!("seed {seed}, {what}: blob {id}: {e}"));
                assert!(got == content(*id, *len), "seed {seed}, {what}: blob {id}: wrong bytes");
            }
        };
        check(&run.store, "all devices up");
        // Any two devices failed: every blob still exact (failed by command with nothing written
        // meanwhile, each pair comes back at the reopen).
        let mut store = run.store;
        for a in 0..DEVICES {
            for b in a + 1..DEVICES {
                store.fail_device(a).unwrap();
                store.fail_device(b).unwrap();
                check(&store, &format!("devices {a} and {b} failed"));
                store.close().unwrap();
                let (s, report) = Store::open(as_media(&run.devs), &run.cfg).unwrap();
                assert!(report.failed_devices.is_empty(), "{report:?}");
                store = s;
            }
        }
        assert!(!oracle.is_empty());
        eprintln!("thrash seed {seed}: {} events, {} live blobs: {:?}", run.log.len(), oracle.len(), run.log);
        store.close().unwrap();
    }
}
