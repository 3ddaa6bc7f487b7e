//! Model-based property test: random sequences of put / read / free / GC / flush / crash (power
//! cut in every mode) / clean reopen against an in-memory model of what must and what may exist.
//! Proptest shrinks failures and keeps their seeds in `proptest-regressions/`.

mod common;
use common::*;
use proptest::prelude::*;
use reo_media::PowerCut;
use reo_store::{
    Durability, Error, GcDecision, GcHandler, Location, Placement, PutOptions, Scheme, Store, VictimPolicy,
};
use std::collections::HashMap;

#[derive(Debug, Clone)]
enum Op {
    Put { size: usize, scheme: usize, sync: bool },
    Read { pick: usize, from: u16, to: u16 },
    Free { pick: usize, sync: bool },
    Gc { greedy: bool, drop: bool },
    Flush,
    Crash { mode: usize, seed: u64 },
    Reopen,
}

fn op() -> impl Strategy<Value = Op> {
    prop_oneof![
        6 => (0usize..120_000, 0usize..4, any::<bool>()).prop_map(|(size, scheme, sync)| Op::Put { size, scheme, sync }),
        4 => (any::<usize>(), any::<u16>(), any::<u16>()).prop_map(|(pick, from, to)| Op::Read { pick, from, to }),
        3 => (any::<usize>(), any::<bool>()).prop_map(|(pick, sync)| Op::Free { pick, sync }),
        1 => (any::<bool>(), any::<bool>()).prop_map(|(greedy, drop)| Op::Gc { greedy, drop }),
        1 => Just(Op::Flush),
        1 => (0usize..4, any::<u64>()).prop_map(|(mode, seed)| Op::Crash { mode, seed }),
        1 => Just(Op::Reopen),
    ]
}

const SCHEMES: [Scheme; 4] = [
    Scheme::Replicate(2),
    Scheme::Rs { k: 2, p: 2 },
    Scheme::None(Placement::Isolated),
    Scheme::None(Placement::Striped),
];

/// Records relocations so the model follows its blobs.
struct Follow<'a> {
    live: &'a mut HashMap<u64, Location>,
    drop: bool,
    dropped: Vec<u64>,
}

fn id_of(header: &[u8]) -> u64 {
    u64::from_le_bytes(header.try_into().expect("8-byte id header"))
}

impl GcHandler for Follow<'_> {
    fn decide(&mut self, loc: &Location, _h: &[u8]) -> GcDecision {
        if self.drop && loc.seq.is_multiple_of(3) {
            GcDecision::Drop
        } else if loc.seq.is_multiple_of(5) {
            GcDecision::Reencode(Scheme::Replicate(3))
        } else {
            GcDecision::Relocate
        }
    }
    fn relocated(&mut self, old: &Location, new: &Location) {
        for l in self.live.values_mut() {
            if l == old {
                *l = *new;
            }
        }
    }
    fn dropped(&mut self, loc: &Location) {
        let id = *self.live.iter().find(|(_, l)| *l == loc).expect("dropped blob was live").0;
        self.live.remove(&id);
        self.dropped.push(id);
    }
}

struct Model {
    data: HashMap<u64, Vec<u8>>,
    live: HashMap<u64, Location>,
    /// Ids that must exist after a crash.
    durable: HashMap<u64, ()>,
    /// Ids whose free is durable: they must never come back.
    gone: std::collections::HashSet<u64>,
    next: u64,
}

impl Model {
    /// A sync operation made everything before it durable.
    fn durable_point(&mut self) {
        self.durable = self.live.keys().map(|&k| (k, ())).collect();
        self.gone = self.data.keys().filter(|k| !self.live.contains_key(k)).copied().collect();
    }
}

fn run(ops: Vec<Op>) -> Result<(), TestCaseError> {
    let cfg = small_config();
    let devs = devices(4, 8 << 20);
    let mut store = open(&devs, &cfg);
    let mut m = Model {
        data: HashMap::new(),
        live: HashMap::new(),
        durable: HashMap::new(),
        gone: Default::default(),
        next: 1,
    };
    for op in ops {
        match op {
            Op::Put { size, scheme, sync } => {
                let id = m.next;
                m.next += 1;
                let data = content(id, size);
                let d = if sync { Durability::Sync } else { Durability::None };
                let opts = PutOptions::new(SCHEMES[scheme]).durability(d).placement(id);
                let mut r = store.put(&id.to_le_bytes(), &data, &opts);
                if matches!(r, Err(Error::OutOfSpace { .. })) {
                    store.seal_open_bands();
                    let mut f = Follow { live: &mut m.live, drop: false, dropped: vec![] };
                    while store.gc(VictimPolicy::Greedy, &mut f).unwrap().is_some() {}
                    m.durable_point();
                    r = store.put(&id.to_le_bytes(), &data, &opts);
                }
                match r {
                    Ok(loc) => {
                        m.live.insert(id, loc);
                        m.data.insert(id, data);
                        if sync {
                            m.durable_point();
                        }
                    }
                    Err(Error::OutOfSpace { .. }) => {}
                    Err(e) => return Err(TestCaseError::fail(format!("put: {e}"))),
                }
            }
            Op::Read { pick, from, to } => {
                if m.live.is_empty() {
                    continue;
                }
                let mut ids: Vec<_> = m.live.keys().copied().collect();
                ids.sort();
                let id = ids[pick % ids.len()];
                let loc = m.live[&id];
                let len = loc.len;
                let (a, b) = ((u64::from(from) * len) >> 16, (u64::from(to) * len) >> 16);
                let (a, b) = (a.min(b), a.max(b));
                let got = store.read(&loc, a, b).map_err(|e| TestCaseError::fail(format!("read {id}: {e}")))?;
                prop_assert_eq!(&got[..], &m.data[&id][a as usize..b as usize]);
            }
            Op::Free { pick, sync } => {
                if m.live.is_empty() {
                    continue;
                }
                let mut ids: Vec<_> = m.live.keys().copied().collect();
                ids.sort();
                let id = ids[pick % ids.len()];
                let loc = m.live.remove(&id).unwrap();
                m.durable.remove(&id); // until the free is durable the blob may or may not come back
                let d = if sync { Durability::Sync } else { Durability::None };
                store.free(&loc, d).map_err(|e| TestCaseError::fail(format!("free: {e}")))?;
                if sync {
                    m.durable_point();
                }
            }
            Op::Gc { greedy, drop } => {
                store.seal_open_bands();
                let policy = if greedy { VictimPolicy::Greedy } else { VictimPolicy::CostBenefit };
                let mut f = Follow { live: &mut m.live, drop, dropped: vec![] };
                store.gc(policy, &mut f).map_err(|e| TestCaseError::fail(format!("gc: {e}")))?;
                m.durable_point();
            }
            Op::Flush => {
                store.flush().unwrap();
                m.durable_point();
            }
            Op::Reopen => {
                store.close().unwrap();
                store = open(&devs, &cfg);
                check_after_restart(&store, &mut m, false)?;
            }
            Op::Crash { mode, seed } => {
                for d in &devs {
                    d.fail_stop();
                }
                store.kill();
                let mode = [
                    PowerCut::DropAll,
                    PowerCut::Reorder,
                    PowerCut::Torn { granularity: 512 },
                    PowerCut::Torn { granularity: 4096 },
                ][mode];
                for (i, d) in devs.iter().enumerate() {
                    d.revive();
                    d.power_cut(mode, seed.wrapping_add(i as u64)).unwrap();
                }
                store = open(&devs, &cfg);
                check_after_restart(&store, &mut m, true)?;
            }
        }
    }
    Ok(())
}

/// After a restart: every durable blob is back and exact; anything else back is a blob that was
/// put and is exact; the model then adopts what the store has.
fn check_after_restart(store: &Store, m: &mut Model, crashed: bool) -> Result<(), TestCaseError> {
    let found: HashMap<u64, Location> = store.blobs().into_iter().map(|(l, h)| (id_of(&h), l)).collect();
    for id in m.durable.keys() {
        prop_assert!(found.contains_key(id), "durable blob {} lost (crash: {})", id, crashed);
    }
    if !crashed {
        prop_assert_eq!(found.len(), m.live.len(), "clean restart keeps exactly the live set");
    }
    for (id, loc) in &found {
        prop_assert!(!m.gone.contains(id), "blob {} came back after its free was durable", id);
        let data = m.data.get(id).ok_or_else(|| TestCaseError::fail(format!("unknown blob {id}")))?;
        if !crashed {
            prop_assert!(m.live.contains_key(id), "freed blob {} back after clean restart", id);
        }
        let got = store.read_all(loc).map_err(|e| TestCaseError::fail(format!("read {id} after restart: {e}")))?;
        prop_assert_eq!(&got, data);
    }
    m.live = found;
    m.durable_point();
    Ok(())
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 48, ..ProptestConfig::default() })]
    #[test]
    fn store_matches_model(ops in proptest::collection::vec(op(), 1..80)) {
        run(ops)?;
    }
}
