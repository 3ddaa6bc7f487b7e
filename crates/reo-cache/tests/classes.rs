//! Reo's classes through the cache: the adaptive hot threshold under a redundancy budget, blobs
//! moving to their class's scheme (re-encoder, flush), space efficiency, and the uniform baselines.

mod common;

use common::*;
use reo_cache::Class;
use reo_store::{Placement, Scheme};

fn reo(budget: &str, capacity: u64) -> reo_cache::CacheConfig {
    let mut c = cfg(capacity);
    c.redundancy = budget.parse().unwrap();
    c.hot_recompute_every = u64::MAX; // on demand only, so the test controls when
    c
}

#[test]
fn hot_threshold_fits_the_budget_and_blobs_follow_their_class() {
    // 64 fragments of capacity, Reo-10%: 6.4 fragments of redundancy. Hot is rs(2,2) on 4
    // devices: one parity byte per data byte, so at most 6 one-fragment objects can be hot.
    let c = open(&devices(4, 64), reo("reo-10%", 64 * FRAG));
    let objs: Vec<Vec<u8>> = (0..20).map(|i| content(i, FRAG as usize)).collect();
    for (i, d) in objs.iter().enumerate() {
        read_through(&c, format!("o{i}").as_bytes(), d, 0, u64::MAX, 1);
    }
    // Object i is read i more times: o19 is the hottest.
    for (i, _) in objs.iter().enumerate() {
        for _ in 0..i {
            assert!(c.get(format!("o{i}").as_bytes(), 0, u64::MAX, 2).unwrap().is_hit());
        }
    }
    let h_hot = c.recompute_hot_threshold();
    // The six hottest fit: o14..o19 (freq 14..19); H_hot is o14's H.
    assert_eq!(h_hot, 14.0 / FRAG as f64);
    for i in 0..20 {
        let info = c.info(format!("o{i}").as_bytes()).unwrap();
        let want = if i >= 14 { Class::Hot } else { Class::Cold };
        assert_eq!(info.class, want, "o{i}");
        assert_eq!(info.schemes, vec![Scheme::None(Placement::Isolated)], "o{i}: blobs move lazily");
    }
    // All cold: only the format's own overhead (chunk trailers, sector padding).
    let before = c.space_efficiency();
    assert!(before > 0.9 && before <= 1.0, "all cold: {before}");
    // The re-encoder moves exactly the hot objects, then has nothing left to do.
    assert_eq!(c.reencode_step(u64::MAX), 6 * FRAG);
    assert_eq!(c.reencode_step(u64::MAX), 0);
    for (i, d) in objs.iter().enumerate() {
        let info = c.info(format!("o{i}").as_bytes()).unwrap();
        let want = if i >= 14 { Scheme::Rs { k: 2, p: 2 } } else { Scheme::None(Placement::Isolated) };
        assert_eq!(info.schemes, vec![want], "o{i}");
        let r = c.get(format!("o{i}").as_bytes(), 0, u64::MAX, 3).unwrap();
        assert_eq!(&r.pieces.into_iter().flat_map(|p| p.data.unwrap()).collect::<Vec<_>>(), d);
    }
    // 20 fragments of user data, 6 of them with one parity byte per byte.
    let eff = c.space_efficiency() / before;
    // (rs rows pad their last stripe a little more than isolated blobs do)
    assert!((eff - 20.0 / 26.0).abs() < 0.03, "space efficiency relative to all-cold {eff}");
    let s = c.stats();
    assert_eq!((s.class_changes, s.reencoded_bytes), (6, 6 * FRAG));
    // Reads shift the heat: o0 becomes the hottest; the threshold adapts and o0 turns hot.
    for _ in 0..40 {
        c.get(b"o0", 0, u64::MAX, 4).unwrap();
    }
    c.recompute_hot_threshold();
    assert_eq!(c.info(b"o0").unwrap().class, Class::Hot);
    assert_eq!(c.info(b"o14").unwrap().class, Class::Cold, "o14 fell out of the budget");
}

/// The paper's greedy adds objects until the budget is spent, unread ones (H = 0) last: when the
/// budget covers every clean object they are hot too, and so is a new fill, written straight in
/// the hot scheme; when it runs out among them, only the objects read are hot.
#[test]
fn a_budget_that_covers_every_object_makes_unread_ones_and_new_fills_hot() {
    // Reo-40% of 64 fragments: 25.6 fragments of parity, one per byte in rs(2,2).
    let c = std::sync::Arc::new(open(&devices(4, 64), reo("reo-40%", 64 * FRAG)));
    for i in 0..10 {
        read_through(&c, format!("o{i}").as_bytes(), &content(i, FRAG as usize), 0, u64::MAX, 1);
    }
    assert!(c.get(b"o0", 0, u64::MAX, 2).unwrap().is_hit());
    assert_eq!(c.recompute_hot_threshold(), 0.0, "all ten fit");
    for i in 0..10 {
        assert_eq!(c.info(format!("o{i}").as_bytes()).unwrap().class, Class::Hot, "o{i}, read or not");
    }
    let d = content(99, FRAG as usize);
    read_through(&c, b"new", &d, 0, u64::MAX, 3);
    let info = c.info(b"new").unwrap();
    assert_eq!((info.class, info.schemes), (Class::Hot, vec![Scheme::Rs { k: 2, p: 2 }]), "a new fill");
    // A streamed write-through copy is a new object too.
    let mut w = c.start_clean_put(b"streamed", FRAG, 3).expect("admitted");
    w.push(&d).unwrap();
    w.finish(&meta(), 3).unwrap();
    assert_eq!(c.info(b"streamed").unwrap().schemes, vec![Scheme::Rs { k: 2, p: 2 }], "a streamed clean copy");
    // What the budget had left after the ten (15.6 fragments) goes to new objects in turn: 13
    // more fit, the next does not and is cold.
    for i in 0..13 {
        read_through(&c, format!("n{i}").as_bytes(), &d, 0, u64::MAX, 3);
        assert_eq!(c.info(format!("n{i}").as_bytes()).unwrap().class, Class::Hot, "n{i}");
    }
    read_through(&c, b"n13", &d, 0, u64::MAX, 3);
    assert_eq!(c.info(b"n13").unwrap().class, Class::Cold, "the room is spent");
    let mut w = c.start_clean_put(b"streamed-late", FRAG, 3).expect("admitted");
    w.push(&d).unwrap();
    w.finish(&meta(), 3).unwrap();
    assert_eq!(c.info(b"streamed-late").unwrap().class, Class::Cold, "no room for a streamed copy either");
    c.put(b"clean", &d, &meta(), false, 3).unwrap();
    assert_eq!(c.info(b"clean").unwrap().class, Class::Cold, "a clean write takes no room there is not");
    // 30 more objects: 41 fragments do not fit the budget; the one read stays hot, unread ones
    // (H cannot tell them apart) are cold, and new fills are cold again.
    for i in 10..40 {
        read_through(&c, format!("o{i}").as_bytes(), &content(i, FRAG as usize), 0, u64::MAX, 4);
    }
    assert!(c.get(b"o0", 0, u64::MAX, 5).unwrap().is_hit());
    assert_eq!(c.recompute_hot_threshold(), c.info(b"o0").unwrap().hotness);
    assert_eq!(c.info(b"o0").unwrap().class, Class::Hot);
    assert_eq!(c.info(b"o20").unwrap().class, Class::Cold);
    read_through(&c, b"newer", &d, 0, u64::MAX, 6);
    assert_eq!(c.info(b"newer").unwrap().schemes, vec![Scheme::None(Placement::Isolated)]);
}

#[test]
fn a_flushed_object_takes_its_clean_class_and_dirty_replicas_count_against_the_budget() {
    let c = open(&devices(4, 64), reo("reo-40%", 64 * FRAG));
    let d = content(1, FRAG as usize);
    let r = c.put(b"hot", &d, &meta(), true, 1).unwrap();
    assert_eq!(c.info(b"hot").unwrap().schemes, vec![Scheme::Replicate(4)]);
    for _ in 0..5 {
        c.get(b"hot", 0, u64::MAX, 2).unwrap();
    }
    // While dirty, its three extra copies take 3 fragments of the 25.6-fragment budget.
    c.recompute_hot_threshold();
    assert_eq!(c.info(b"hot").unwrap().class, Class::Dirty);
    assert!(c.mark_clean(b"hot", r.version).unwrap());
    c.recompute_hot_threshold();
    let info = c.info(b"hot").unwrap();
    assert_eq!(info.class, Class::Hot);
    assert_eq!(c.info(b"hot").unwrap().schemes, vec![Scheme::Rs { k: 2, p: 2 }], "flushed straight to the hot scheme");
    // A second write-back and flush of a hot object goes straight to the hot scheme.
    let r = c.put(b"hot", &d, &reo_cache::ObjectMeta { etag: "\"2\"".into(), ..meta() }, true, 3).unwrap();
    for _ in 0..5 {
        c.get(b"hot", 0, u64::MAX, 4).unwrap();
    }
    c.recompute_hot_threshold();
    assert!(c.mark_clean(b"hot", r.version).unwrap());
    assert_eq!(c.info(b"hot").unwrap().schemes, vec![Scheme::Rs { k: 2, p: 2 }]);
}

#[test]
fn uniform_baselines_protect_everything_alike() {
    for (name, scheme) in [
        ("0-parity", Scheme::None(Placement::Striped)),
        ("1-parity", Scheme::Rs { k: 3, p: 1 }),
        ("2-parity", Scheme::Rs { k: 2, p: 2 }),
        ("full-replication", Scheme::Replicate(4)),
    ] {
        let c = open(&devices(4, 64), reo(name, 64 * FRAG));
        let d = content(7, (FRAG + 5) as usize);
        read_through(&c, b"clean", &d, 0, u64::MAX, 1);
        c.put(b"dirty", &d, &meta(), true, 2).unwrap();
        for _ in 0..3 {
            c.get(b"clean", 0, u64::MAX, 3).unwrap();
        }
        assert!(c.recompute_hot_threshold().is_infinite(), "{name}: no hot class in a baseline");
        for k in [&b"clean"[..], b"dirty"] {
            assert_eq!(c.info(k).unwrap().schemes, vec![scheme], "{name}");
        }
        let eff = c.space_efficiency();
        let want = match scheme {
            Scheme::Replicate(r) => 1.0 / f64::from(r),
            Scheme::Rs { k, p } => f64::from(k) / f64::from(k + p),
            Scheme::None(_) => 1.0,
        };
        // Padding of the short last rows lowers it a little.
        assert!(eff <= want + 1e-9 && eff > want * 0.6, "{name}: efficiency {eff} vs {want}");
    }
}
