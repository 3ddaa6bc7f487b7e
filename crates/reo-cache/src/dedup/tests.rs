//! Contract tests of every dedup policy, D-LRU against a reference model, and the D-ARC/CD-ARC
//! invariants (docs/REFERENCES.md §A2 (i)–(v)) as property tests over random operations on a small
//! address and content alphabet, so that duplicates, overwrites and ghost hits are frequent.

use proptest::prelude::*;

use super::*;
use crate::policy::{Arc, Policy};

fn chunk(content: u64) -> Chunk {
    Chunk::sim(content, 1, 1.0)
}

/// One of each policy; CD-ARC with 1-byte chunks in 2-byte WEUs so that its WEUs fill and evict.
fn every_policy(meta: usize, data: u64) -> Vec<Box<dyn DedupPolicy>> {
    vec![
        Box::new(DLru::new(meta, data)),
        Box::new(DArc::new(meta / 2, 0, data)),
        Box::new(CdArc::new(meta / 2, 0, data, 2)),
    ]
}

#[test]
fn same_content_at_two_keys_is_written_once_and_both_hit() {
    for mut p in every_policy(8, 8) {
        let mut out = DedupOutcome::default();
        let a = chunk(7);
        assert_eq!(p.lookup(1), None);
        p.update(1, &a, &mut out);
        assert!(out.admitted && out.write && out.write_bytes == 1, "{}: first copy written", p.name());
        assert_eq!(p.lookup(2), None);
        p.update(2, &a, &mut out);
        assert!(out.admitted && !out.write && out.write_bytes == 0, "{}: duplicate not written", p.name());
        assert_eq!((p.lookup(1), p.lookup(2)), (Some(a.fp), Some(a.fp)), "{}", p.name());
        assert_eq!(p.data_len(), 1, "{}: one copy stored", p.name());
        p.check_invariants().unwrap();
    }
}

#[test]
fn overwriting_a_key_keeps_the_other_key_on_the_old_content() {
    for mut p in every_policy(8, 8) {
        let mut out = DedupOutcome::default();
        let (old, new) = (chunk(1), chunk(2));
        p.update(1, &old, &mut out);
        p.update(2, &old, &mut out);
        p.update(1, &new, &mut out);
        assert!(out.write, "{}: new content written", p.name());
        assert_eq!(p.mapping(2), Some(old.fp), "{}", p.name());
        assert_eq!(p.lookup(2), Some(old.fp), "{}: other key still hits the old content", p.name());
        assert_eq!(p.lookup(1), Some(new.fp), "{}: overwritten key sees the new content", p.name());
        p.check_invariants().unwrap();
        // The old content goes once its last mapping does (D-ARC/CD-ARC: refcount 0, then evicted).
        p.remove(2);
        assert_eq!(p.lookup(2), None);
        p.check_invariants().unwrap();
    }
}

#[test]
fn chunks_larger_than_the_data_cache_are_not_admitted() {
    for mut p in every_policy(8, 2) {
        let mut out = DedupOutcome::default();
        p.update(1, &chunk(1), &mut out);
        p.update(1, &Chunk::sim(9, 3, 1.0), &mut out);
        assert!(!out.admitted && !out.write, "{}", p.name());
        assert_eq!((p.mapping(1), p.lookup(1)), (None, None), "{}: stale mapping dropped", p.name());
        p.check_invariants().unwrap();
    }
}

#[test]
fn kinds_round_trip_and_off_has_no_policy() {
    for k in DedupKind::ALL {
        assert_eq!(k.as_str().parse::<DedupKind>(), Ok(k));
        assert_eq!(k.to_string(), k.as_str());
        match new_dedup(k, 16, 4 * u64::from(WEU_BYTES)) {
            Some(p) => assert_eq!(p.name(), k.as_str()),
            None => assert_eq!(k, DedupKind::Off),
        }
    }
    assert!("darc".parse::<DedupKind>().is_err());
}

#[test]
fn d_lru_orphans_never_hit_when_metadata_is_small() {
    // Cm = 2 ≪ Cd = 100: data outlives its addresses.
    let mut p = DLru::new(2, 100);
    let mut out = DedupOutcome::default();
    for a in 1..=10 {
        p.update(a, &chunk(a), &mut out);
    }
    for a in 1..=8 {
        assert!(p.contains_fp(&chunk(a).fp), "content of {a} still in D");
        assert_eq!(p.lookup(a), None, "orphaned data of {a} does not hit");
    }
    assert_eq!((p.lookup(9), p.lookup(10)), (Some(chunk(9).fp), Some(chunk(10).fp)));
    // Re-reading an orphan's address misses but costs no write: the content is found in D.
    p.update(3, &chunk(3), &mut out);
    assert!(!out.write);
    assert_eq!(p.lookup(3), Some(chunk(3).fp));
}

#[test]
fn d_arc_keeps_its_directory_bounds_with_duplicates_and_a_small_d() {
    // AustereCache's manage() runs only when D or T1+T2+B3 is full. Here D holds one block, five
    // unique addresses fill B1 (T1 = [5], B1 = [4, 3, 2], B3 = [1]), and a sixth address with 5's
    // content needs neither: AustereCache would put it in T1 with |T1|+|B1| = 5 > c = 4.
    let mut p = DArc::new(4, 0, 1);
    let mut out = DedupOutcome::default();
    for a in 1..=5 {
        p.update(a, &chunk(a), &mut out);
        p.check_invariants().unwrap();
    }
    assert_eq!(p.lists(), [vec![5], vec![], vec![4, 3, 2], vec![], vec![1]]);
    p.update(6, &chunk(5), &mut out);
    assert!(!out.write);
    p.check_invariants().unwrap();
    assert_eq!(p.lists(), [vec![6, 5], vec![], vec![4, 3], vec![], vec![2, 1]], "LRU(B1) moved to B3");
}

#[test]
fn cd_arc_stores_compressed_bytes_and_evicts_whole_weus() {
    // 2 WEUs of 8 bytes; chunks of 8 bytes compressing 4× take 2 bytes each.
    let mut p = CdArc::new(8, 0, 16, 8);
    let mut out = DedupOutcome::default();
    let c = |id| Chunk::sim(id, 8, 4.0);
    for a in 0..4 {
        p.update(a, &c(a), &mut out);
        assert_eq!((out.write_bytes, out.placement.map(|s| (s.weu, s.offset))), (2, Some((0, 2 * a as u32))));
    }
    assert_eq!((p.weus(), p.data_bytes()), (1, 8));
    for a in 4..8 {
        p.update(a, &c(a), &mut out);
    }
    assert_eq!(p.weus(), 2);
    // Nothing is unreferenced: a new chunk demotes addresses until a WEU's count reaches 0, then
    // that WEU goes whole, with all four of its fingerprints.
    p.update(8, &c(8), &mut out);
    assert_eq!(out.evicted_weus.len(), 1);
    let weu = out.evicted_weus[0];
    let first = if weu == 0 { 0..4 } else { 4..8 };
    let mut gone: Vec<Fingerprint> = first.clone().map(|a| c(a).fp).collect();
    gone.sort();
    out.evicted.sort();
    assert_eq!(out.evicted, gone);
    assert!(first.clone().all(|a| !p.contains_fp(&c(a).fp) && p.lookup(a).is_none()));
    assert_eq!(p.slot(&c(8).fp).map(|s| s.weu), Some(weu), "new chunk opened the freed WEU");
    p.check_invariants().unwrap();

    // Same chunks through D-ARC: 4× the bytes.
    let mut d = DArc::new(8, 0, 64);
    let (mut cd_bytes, mut d_bytes) = (0, 0);
    let mut q = CdArc::new(8, 0, 64, 8);
    for a in 0..8 {
        d.update(a, &c(a), &mut out);
        d_bytes += out.write_bytes;
        q.update(a, &c(a), &mut out);
        cd_bytes += out.write_bytes;
    }
    assert_eq!((cd_bytes, d_bytes), (16, 64));
    assert!(q.data_bytes() < d.data_bytes());
}

/// D-ARC with unique content, X = 0 and a data cache of c blocks is ARC (invariant (v)).
fn same_as_arc(c: usize, keys: &[u64]) {
    let mut arc = Arc::new(c as u64);
    let mut darc = DArc::new(c, 0, c as u64);
    let mut out = DedupOutcome::default();
    let mut ev = Vec::new();
    for (n, &k) in keys.iter().enumerate() {
        let arc_hit = arc.on_hit(k);
        if !arc_hit {
            arc.insert(k, 1, &mut |_| true, &mut ev).unwrap();
        }
        let darc_hit = darc.lookup(k).is_some();
        if !darc_hit {
            darc.update(k, &chunk(k), &mut out);
            assert!(out.write);
        }
        assert_eq!(darc_hit, arc_hit, "request {n} (key {k})");
        let [t1, t2, b1, b2, b3] = darc.lists();
        assert_eq!([t1, t2, b1, b2], arc.lists(), "request {n} (key {k})");
        assert!(b3.is_empty());
        assert_eq!(darc.p(), arc.p());
        darc.check_invariants().unwrap();
    }
}

#[test]
fn d_arc_is_arc_on_a_zipf_trace_with_unique_content() {
    same_as_arc(100, &reo_trace::generate::zipf_trace(1000, 30_000, 0.9, 11));
}

#[derive(Clone, Debug)]
enum Op {
    Read(u64, u64),
    Write(u64, u64),
    Remove(u64),
}

fn ops(addrs: u64, contents: u64) -> impl Strategy<Value = Vec<Op>> {
    let op = prop_oneof![
        6 => (0..addrs).prop_map(move |a| Op::Read(a, a % contents)),
        3 => (0..addrs, 0..contents).prop_map(|(a, c)| Op::Write(a, c)),
        1 => (0..addrs).prop_map(Op::Remove),
    ];
    prop::collection::vec(op, 1..300)
}

/// Content `c` always has the same size and compressed size (a fingerprint names one content).
fn sized(c: u64, max_size: u32) -> Chunk {
    let size = 1 + (c as u32 % max_size);
    Chunk::sim(c, size, 1.0 + (c % 3) as f64)
}

/// Runs `ops`, checking the interface contract and the policy's invariants after each.
fn run(p: &mut dyn DedupPolicy, ops: &[Op], max_size: u32) {
    let mut out = DedupOutcome::default();
    for o in ops {
        let (addr, content) = match *o {
            Op::Read(a, c) => (a, c),
            Op::Write(a, c) => (a, c),
            Op::Remove(a) => {
                p.remove(a);
                assert_eq!(p.mapping(a), None);
                p.check_invariants().unwrap();
                continue;
            }
        };
        let ch = sized(content, max_size);
        if matches!(o, Op::Read(..)) {
            let before = p.mapping(addr).filter(|fp| p.contains_fp(fp));
            let got = p.lookup(addr);
            assert_eq!(got, before, "hit ⇔ addr ∈ M and M[addr] ∈ D");
            if got == Some(ch.fp) {
                p.check_invariants().unwrap();
                continue;
            }
        }
        let present = p.contains_fp(&ch.fp);
        p.update(addr, &ch, &mut out);
        assert_eq!(out.write, !present && out.admitted, "write iff fp ∉ D");
        assert!(out.evicted.iter().all(|fp| !p.contains_fp(fp)), "evicted fps left D");
        if out.admitted {
            // Pure queries: a lookup here would promote the address and skew the sequence.
            assert!(p.mapping(addr) == Some(ch.fp) && p.contains_fp(&ch.fp), "just-bound address would hit");
        }
        assert!(p.meta_len() <= p.meta_capacity() && p.data_bytes() <= p.data_capacity());
        p.check_invariants().unwrap();
    }
}

/// Reference model of D-LRU: two MRU-first vectors.
fn dlru_model(cm: usize, cd: u64, ops: &[Op], max_size: u32) {
    let mut p = DLru::new(cm, cd);
    let mut meta: Vec<(u64, Fingerprint)> = vec![];
    let mut data: Vec<(Fingerprint, u64)> = vec![];
    let mut out = DedupOutcome::default();
    for o in ops {
        match *o {
            Op::Remove(a) => {
                meta.retain(|e| e.0 != a);
                p.remove(a);
            }
            Op::Read(a, content) | Op::Write(a, content) => {
                let ch = sized(content, max_size);
                let mi = meta.iter().position(|e| e.0 == a);
                let hit = mi.and_then(|m| data.iter().position(|d| d.0 == meta[m].1).map(|d| (m, d)));
                if matches!(o, Op::Read(..)) {
                    assert_eq!(p.lookup(a), hit.map(|(m, _)| meta[m].1));
                    if let Some((m, d)) = hit {
                        let (e, f) = (meta.remove(m), data.remove(d));
                        meta.insert(0, e);
                        data.insert(0, f);
                        continue;
                    }
                }
                p.update(a, &ch, &mut out);
                let mut evicted = vec![];
                match data.iter().position(|d| d.0 == ch.fp) {
                    Some(d) => {
                        let f = data.remove(d);
                        data.insert(0, f);
                    }
                    None => {
                        while data.iter().map(|d| d.1).sum::<u64>() + u64::from(ch.size) > cd {
                            evicted.push(data.pop().unwrap().0);
                        }
                        data.insert(0, (ch.fp, u64::from(ch.size)));
                    }
                }
                assert_eq!(out.evicted, evicted);
                meta.retain(|e| e.0 != a);
                meta.insert(0, (a, ch.fp));
                meta.truncate(cm);
            }
        }
        assert_eq!(p.addrs_mru_first(), meta.iter().map(|e| e.0).collect::<Vec<_>>());
        assert_eq!(p.fps_lru_first(), data.iter().rev().map(|d| d.0).collect::<Vec<_>>());
        p.check_invariants().unwrap();
    }
}

proptest! {
    #[test]
    fn d_lru_matches_its_model(cm in 1usize..8, cd in 4u64..16, ops in ops(16, 6)) {
        dlru_model(cm, cd, &ops, 4);
    }

    #[test]
    fn d_lru_contract(cm in 1usize..8, cd in 1u64..12, ops in ops(16, 6)) {
        run(&mut DLru::new(cm, cd), &ops, 3);
    }

    #[test]
    fn d_arc_invariants_unit_sizes(c in 1usize..8, x in 0usize..8, d in 1u64..12, ops in ops(24, 6)) {
        run(&mut DArc::new(c, x % c, d), &ops, 1);
    }

    #[test]
    fn d_arc_invariants_bytes(c in 1usize..8, x in 0usize..8, d in 3u64..24, ops in ops(24, 8)) {
        run(&mut DArc::new(c, x % c, d), &ops, 3);
    }

    #[test]
    fn cd_arc_invariants(c in 1usize..8, x in 0usize..8, weus in 1u64..5, ops in ops(24, 8)) {
        run(&mut CdArc::new(c, x % c, 4 * weus, 4), &ops, 4);
    }

    #[test]
    fn d_arc_with_unique_content_is_arc(c in 1usize..10, keys in prop::collection::vec(0u64..30, 1..300)) {
        same_as_arc(c, &keys);
    }
}
