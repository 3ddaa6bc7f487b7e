//! Concurrency stress of the cache manager: writer threads (write-back and write-through puts,
//! flushes, deletes), reader threads (gets with read-through fills) and a cleaner thread run at
//! once over a small, full cache. Every byte served from flash must belong to a version of the
//! object that was current during the read (never a stale or foreign byte).

mod common;

use std::sync::atomic::{AtomicBool, AtomicU64, Ordering::SeqCst};
use std::sync::Arc;

use common::*;
use reo_cache::{ObjectMeta, PolicyKind, WriteError};

const KEYS: usize = 60;

fn size_of(k: usize) -> usize {
    (k % 3) * FRAG as usize + 1000 + k * 37
}

fn body(k: usize, v: u64) -> Vec<u8> {
    content((k as u64) << 32 | v, size_of(k))
}

fn meta_of(k: usize, v: u64) -> ObjectMeta {
    ObjectMeta { etag: format!("\"{k}-{v}\""), ..meta() }
}

#[test]
fn readers_writers_and_the_cleaner_never_see_wrong_bytes() {
    let mut cf = cfg(40 * FRAG);
    cf.policy = PolicyKind::S3Fifo;
    let c = Arc::new(open(&devices(4, 16), cf));
    let versions: Arc<Vec<AtomicU64>> = Arc::new((0..KEYS).map(|_| AtomicU64::new(0)).collect());
    let done = Arc::new(AtomicBool::new(false));
    let mut threads = Vec::new();
    for w in 0..2u64 {
        let (c, versions) = (c.clone(), versions.clone());
        threads.push(std::thread::spawn(move || {
            let mut rng = reo_media::rng::Xoshiro256pp::new(100 + w);
            for i in 0..250u64 {
                let k = (rng.next_u64() as usize % (KEYS / 2)) * 2 + w as usize;
                // The backend (modelled by `versions`) moves first, then the cache.
                let v = versions[k].fetch_add(1, SeqCst) + 1;
                match rng.next_u64() % 4 {
                    0 => drop(c.delete(format!("k{k}").as_bytes())),
                    1 => drop(c.put(format!("k{k}").as_bytes(), &body(k, v), &meta_of(k, v), false, i)),
                    _ => match c.put(format!("k{k}").as_bytes(), &body(k, v), &meta_of(k, v), true, i) {
                        Ok(r) => assert!(c.mark_clean(format!("k{k}").as_bytes(), r.version).unwrap()),
                        Err(WriteError::Full(_)) => drop(c.delete(format!("k{k}").as_bytes())),
                        Err(e) => panic!("put: {e}"),
                    },
                }
            }
            0u64
        }));
    }
    for r in 0..2u64 {
        let (c, versions) = (c.clone(), versions.clone());
        threads.push(std::thread::spawn(move || {
            let mut rng = reo_media::rng::Xoshiro256pp::new(200 + r);
            let mut served = 0u64;
            for i in 0..1500u64 {
                let k = rng.next_u64() as usize % KEYS;
                let key = format!("k{k}");
                let v0 = versions[k].load(SeqCst);
                let res = c.get(key.as_bytes(), 0, u64::MAX, i).unwrap();
                let fetched = versions[k].load(SeqCst);
                let fresh = body(k, fetched);
                for p in &res.pieces {
                    if p.data.is_none() {
                        let fs = FRAG as usize;
                        let end = (p.end as usize).min(fresh.len());
                        for f in p.start as usize / fs..end.div_ceil(fs) {
                            let b = ((f + 1) * fs).min(fresh.len());
                            c.fill(
                                key.as_bytes(),
                                fresh.len() as u64,
                                f as u32,
                                &fresh[f * fs..b],
                                &meta_of(k, fetched),
                                res.token,
                                i,
                            )
                            .unwrap();
                        }
                    }
                }
                let v1 = versions[k].load(SeqCst);
                for p in res.pieces.iter().filter(|p| p.data.is_some()) {
                    let got = p.data.as_deref().unwrap();
                    let ok = (v0.saturating_sub(1)..=v1).any(|v| {
                        let b = body(k, v);
                        b.get(p.start as usize..p.end as usize) == Some(got)
                    });
                    assert!(
                        ok,
                        "key {k}: bytes {}..{} match no version in {}..={v1}",
                        p.start,
                        p.end,
                        v0.saturating_sub(1)
                    );
                    served += 1;
                }
            }
            served
        }));
    }
    let cleaner = {
        let (c, done) = (c.clone(), done.clone());
        std::thread::spawn(move || {
            let mut passes = 0;
            while !done.load(SeqCst) {
                c.maintain();
                passes += 1;
                std::thread::yield_now();
            }
            passes
        })
    };
    let mut served = 0;
    for t in threads.into_iter().rev() {
        served += t.join().unwrap_or_else(|e| std::panic::resume_unwind(e));
    }
    done.store(true, SeqCst);
    cleaner.join().unwrap();
    let s = c.stats();
    eprintln!("served {served} pieces from flash; {s:?}");
    assert!(served > 300, "the readers hit the cache ({served} pieces)");
    assert!(s.evictions > 0 && s.gc_write_bytes > 0, "pressure and cleaning happened: {s:?}");
    assert_eq!(s.dirty_lost, 0);
}
