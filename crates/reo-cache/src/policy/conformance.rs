//! Cross-policy conformance tests: the [`Policy`] contract checked against a model for every policy.

use std::collections::HashMap;

use proptest::prelude::*;

use super::*;

fn all(capacity: u64) -> Vec<Box<dyn Policy>> {
    let mut v: Vec<Box<dyn Policy>> = PolicyKind::ALL.iter().map(|&k| new_policy(k, capacity)).collect();
    v.push(Box::new(Clock::plain(capacity)));
    v
}

#[test]
fn full_when_nothing_is_evictable_and_state_unchanged() {
    for mut p in all(8) {
        let mut ev = Vec::new();
        for k in 0..8 {
            p.insert(k, 1, &mut |_| true, &mut ev).unwrap();
        }
        assert!(ev.is_empty());
        assert_eq!(p.insert(100, 1, &mut |_| false, &mut ev), Err(InsertError::Full), "{}", p.name());
        assert!(ev.is_empty() && !p.contains(100) && p.len() == 8, "{}", p.name());
        assert_eq!(p.evict_one(&mut |_| false), None, "{}", p.name());
        assert_eq!(p.insert(101, 9, &mut |_| true, &mut ev), Err(InsertError::TooLarge));
        // Only key 5 may go.
        p.insert(100, 1, &mut |k| k == 5, &mut ev).unwrap();
        assert_eq!(ev, vec![5], "{}", p.name());
        assert_eq!(p.evict_one(&mut |k| k == 3), Some(3), "{}", p.name());
        p.check_invariants().unwrap();
    }
}

#[test]
fn remove_forgets_resident_and_ghost_entries() {
    for mut p in all(10) {
        let mut ev = Vec::new();
        for k in 0..30 {
            p.insert(k, 1, &mut |_| true, &mut ev).unwrap();
            if k % 3 == 0 {
                p.on_hit(k);
            }
        }
        assert_eq!(p.remove(29), Some(1), "{}", p.name());
        assert!(!p.contains(29) && p.len() == 9, "{}", p.name());
        if let Some(&g) = ev.iter().find(|&&k| p.is_ghost(k)) {
            assert_eq!(p.remove(g), None);
            assert!(!p.is_ghost(g), "{}", p.name());
        }
        p.check_invariants().unwrap();
    }
}

#[derive(Debug, Clone)]
enum Op {
    /// Request: hit, or insert on a miss.
    Get(Key, u64),
    /// Insert whether resident or not (overwrite with a new size).
    Put(Key, u64),
    Remove(Key),
    EvictOne,
}

fn op() -> impl Strategy<Value = Op> {
    prop_oneof![
        10 => (0..48u64, 1..=20u64).prop_map(|(k, s)| Op::Get(k, s)),
        2 => (0..48u64, 0..=40u64).prop_map(|(k, s)| Op::Put(k, s)),
        1 => (0..48u64).prop_map(Op::Remove),
        1 => Just(Op::EvictOne),
    ]
}

/// Runs `ops` against `p` and a model of the resident set; `pin_mod > 0` pins keys ≡ 0 (mod pin_mod).
fn run(mut p: Box<dyn Policy>, ops: &[Op], pin_mod: u64) -> Result<(), TestCaseError> {
    let name = p.name();
    let pinned = |k: Key| pin_mod > 0 && k.is_multiple_of(pin_mod);
    let mut model: HashMap<Key, u64> = HashMap::new();
    let mut ev = Vec::new();
    for o in ops {
        ev.clear();
        let (key, result) = match *o {
            Op::Get(k, _) if p.on_hit(k) => {
                prop_assert!(model.contains_key(&k), "{name}: hit on non-resident {k}");
                continue;
            }
            Op::Get(k, s) | Op::Put(k, s) => (k, Some((s, p.insert(k, s, &mut |x| !pinned(x), &mut ev)))),
            Op::Remove(k) => {
                prop_assert_eq!(p.remove(k), model.remove(&k), "{}: remove {}", name, k);
                continue;
            }
            Op::EvictOne => {
                if let Some(v) = p.evict_one(&mut |x| !pinned(x)) {
                    ev.push(v);
                }
                (Key::MAX, None)
            }
        };
        for &v in &ev {
            prop_assert!(!pinned(v), "{name}: evicted pinned key {v}");
            prop_assert!(v != key, "{name}: evicted the key being inserted");
            prop_assert!(model.remove(&v).is_some(), "{name}: evicted non-resident {v}");
        }
        match result {
            Some((s, Ok(()))) => drop(model.insert(key, s.max(1))),
            Some((_, Err(InsertError::Full))) => {
                model.remove(&key);
                prop_assert!(!p.contains(key));
                // ARC may refuse while T2 still has evictable keys (T1 ∪ B1 must shrink); others
                // only fail when nothing else is evictable.
                if name != "arc" {
                    prop_assert!(model.keys().all(|&k| pinned(k)), "{name}: Full with evictable keys left");
                }
            }
            Some((s, Err(InsertError::TooLarge))) => prop_assert!(s > p.capacity_bytes()),
            None => {}
        }
        prop_assert_eq!(p.len(), model.len(), "{}: len", name);
        prop_assert_eq!(p.used_bytes(), model.values().sum::<u64>(), "{}: used bytes", name);
        prop_assert!(p.used_bytes() <= p.capacity_bytes());
        for (&k, &s) in &model {
            prop_assert_eq!(p.size_of(k), Some(s), "{}: size of {}", name, k);
        }
        if let Err(e) = p.check_invariants() {
            return Err(TestCaseError::fail(e));
        }
    }
    Ok(())
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(96))]

    #[test]
    fn every_policy_matches_the_model(capacity in 1u64..80, pin_mod in 0u64..4,
                                      ops in prop::collection::vec(op(), 1..300)) {
        for p in all(capacity) {
            run(p, &ops, pin_mod)?;
        }
    }
}
