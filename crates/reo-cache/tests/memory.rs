//! Allocator-level measurement of the policies' metadata: a counting global allocator checks that
//! `Policy::memory_bytes` accounts for every heap byte, and reports bytes per resident object.
//! (One test function: the counter is process-wide.)

use std::alloc::{GlobalAlloc, Layout, System};
use std::collections::HashMap;
use std::sync::atomic::{AtomicIsize, Ordering};

use reo_cache::hash::KeyBuildHasher;
use reo_cache::policy::Clock;
use reo_cache::{new_policy, Policy, PolicyKind};
use reo_trace::generate::zipf_trace;

struct Counting;

type MakePolicy = Box<dyn Fn() -> Box<dyn Policy>>;

static LIVE: AtomicIsize = AtomicIsize::new(0);

// SAFETY: every call is forwarded to the system allocator with the caller's arguments; the
// counter beside it does not touch memory.
unsafe impl GlobalAlloc for Counting {
    unsafe fn alloc(&self, layout: Layout) -> *mut u8 {
        LIVE.fetch_add(layout.size() as isize, Ordering::Relaxed);
        // SAFETY: the caller's contract for `alloc` is the system allocator's.
        unsafe { System.alloc(layout) }
    }
    unsafe fn dealloc(&self, ptr: *mut u8, layout: Layout) {
        LIVE.fetch_sub(layout.size() as isize, Ordering::Relaxed);
        // SAFETY: `ptr` came from `System.alloc` with `layout` (this allocator forwards all).
        unsafe { System.dealloc(ptr, layout) }
    }
    unsafe fn realloc(&self, ptr: *mut u8, layout: Layout, new_size: usize) -> *mut u8 {
        LIVE.fetch_add(new_size as isize - layout.size() as isize, Ordering::Relaxed);
        // SAFETY: as for `dealloc`; `new_size` is the caller's, under `realloc`'s contract.
        unsafe { System.realloc(ptr, layout, new_size) }
    }
}

#[global_allocator]
static GLOBAL: Counting = Counting;

fn live() -> isize {
    LIVE.load(Ordering::Relaxed)
}

#[test]
fn memory_bytes_matches_the_allocator() {
    const OBJECTS: u64 = 100_000;
    let trace = zipf_trace(10 * OBJECTS, 1_000_000, 1.0, 9);
    let mut evicted = Vec::with_capacity(64);
    let mut policies: Vec<(&str, MakePolicy)> =
        PolicyKind::ALL.iter().map(|&k| (k.as_str(), Box::new(move || new_policy(k, OBJECTS)) as MakePolicy)).collect();
    policies.push(("clock-1bit", Box::new(|| Box::new(Clock::plain(OBJECTS)))));
    for (name, make) in &policies {
        let before = live();
        let mut p = make();
        for &k in &trace {
            if !p.on_hit(k) {
                p.insert(k, 1, &mut |_| true, &mut evicted).unwrap();
                evicted.clear();
            }
        }
        let measured = (live() - before) as usize;
        let reported = p.memory_bytes();
        assert_eq!(p.len() as u64, OBJECTS, "{name}: cache full");
        // The only other allocation is the boxed policy struct itself.
        assert!(
            measured >= reported && measured - reported < 256,
            "{name}: allocator says {measured} B, memory_bytes {reported} B"
        );
        eprintln!(
            "{name:>10}: {:.1} B/object (allocator-measured, grown by doubling)",
            measured as f64 / OBJECTS as f64
        );
        drop(p);
    }

    // For comparison, std's HashMap<u64, u32> as the index alone, under the same churn (a FIFO of
    // the resident keys stands in for the policy).
    let before = live();
    let mut m: HashMap<u64, u32, KeyBuildHasher> = HashMap::default();
    let mut fifo = std::collections::VecDeque::with_capacity(OBJECTS as usize);
    for &k in &trace {
        if !m.contains_key(&k) {
            if fifo.len() == OBJECTS as usize {
                m.remove(&fifo.pop_front().unwrap());
            }
            fifo.push_back(k);
            m.insert(k, 0);
        }
    }
    let fifo_bytes = (fifo.capacity() * 8) as isize;
    let std_index = (live() - before - fifo_bytes) as f64 / OBJECTS as f64;
    eprintln!("std HashMap<u64, u32> index alone, same churn: {std_index:.1} B/object");
    assert!(std_index > 16.0);
    drop((m, fifo));

    // The object index: 1 M objects with S3-like keys, grown by doubling (no reserve). Allocator-
    // measured bytes minus the key bytes themselves, per object.
    use reo_cache::index::ObjectIndex;
    use reo_cache::object::{Class, ObjectEntry};
    const INDEXED: u64 = 1_000_000;
    let before = live();
    let mut ix = ObjectIndex::new();
    let mut key_bytes = 0usize;
    for i in 0..INDEXED {
        let key = format!("photos-bucket/2026/11/{i:08}.jpg");
        key_bytes += key.len();
        ix.insert(ObjectEntry::new(key.as_bytes(), 1 << 20, Class::Cold));
    }
    let measured = (live() - before) as usize;
    let per_object = (measured - key_bytes) as f64 / INDEXED as f64;
    eprintln!("object index: {per_object:.1} B/object beyond key bytes (allocator-measured, 1 M objects)");
    assert!(
        measured >= ix.memory_bytes() + key_bytes - 2 * INDEXED as usize
            && measured - key_bytes - ix.memory_bytes() < 4096,
        "allocator {measured} B vs memory_bytes {} + keys {key_bytes}",
        ix.memory_bytes()
    );
    assert!(per_object <= 48.0, "{per_object:.1} B/object exceeds the 48-byte target");
}
