//! Miss-ratio and flash-write simulation of dedup traces.
//!
//! A dedup trace is a sequence of reads `(address, content id)` ([`DedupReq`]); an address keeps its
//! content for the whole trace (as in a read trace; a changed content would be a write). Replay is
//! admit-all: on a miss the fragment is fetched and stored, and a flash write is counted only when
//! the policy says so (`DedupOutcome::write`). [`replay_plain`] is "dedup off": a normal
//! [`Policy`] over addresses, every miss is a flash write.
//!
//! [`dedup_trace`] generates one: addresses drawn Zipf(α), each mapped to one of `contents` content
//! ids (so addresses share content, duplication factor ≈ `addrs / contents`), with a fraction of
//! requests being one-time sequential scans of fresh addresses with unique content.

use reo_cache::dedup::{Chunk, DedupOutcome, DedupPolicy};
use reo_cache::policy::{InsertError, Key, Policy};
use reo_media::rng::{SplitMix64, Xoshiro256pp};
use reo_trace::generate::Zipf;

/// One read: `addr` holds content `content` of `size` bytes that compresses `ratio`×.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct DedupReq {
    /// The address read (the key of the address-side metadata).
    pub addr: Key,
    /// The content id at `addr`; equal ids are duplicate data (one fingerprint).
    pub content: u64,
    /// Uncompressed size of the fragment, bytes.
    pub size: u32,
    /// Compression ratio (≥ 1 is meaningful; smaller counts as 1): compressed size is
    /// `ceil(size / ratio)`.
    pub ratio: f64,
}

impl DedupReq {
    /// The simulated chunk of this read: fingerprint of `content`, its size and compressed size.
    pub fn chunk(&self) -> Chunk {
        Chunk::sim(self.content, self.size, self.ratio)
    }
}

/// Replay counters.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct DedupStats {
    /// Requests replayed.
    pub requests: u64,
    /// Requests whose address was cached with its current content.
    pub hits: u64,
    /// Fragments written to flash.
    pub flash_writes: u64,
    /// Bytes written to flash (compressed bytes for CD-ARC).
    pub flash_bytes: u64,
    /// Fingerprints (or objects) that left the cache.
    pub evictions: u64,
}

impl DedupStats {
    /// `hits / requests`; 0 for an empty replay.
    pub fn hit_ratio(&self) -> f64 {
        if self.requests == 0 {
            0.0
        } else {
            self.hits as f64 / self.requests as f64
        }
    }

    /// `1 - hit_ratio()` (1 for an empty replay).
    pub fn miss_ratio(&self) -> f64 {
        1.0 - self.hit_ratio()
    }
}

/// Replays `trace` through a dedup policy.
pub fn replay(policy: &mut dyn DedupPolicy, trace: &[DedupReq]) -> DedupStats {
    let mut st = DedupStats::default();
    let mut out = DedupOutcome::default();
    for r in trace {
        st.requests += 1;
        let chunk = r.chunk();
        if policy.lookup(r.addr) == Some(chunk.fp) {
            st.hits += 1;
            continue;
        }
        policy.update(r.addr, &chunk, &mut out);
        st.flash_writes += u64::from(out.write);
        st.flash_bytes += u64::from(out.write_bytes);
        st.evictions += out.evicted.len() as u64;
    }
    st
}

/// Replays `trace` with dedup off: `policy` caches addresses, sized in bytes.
pub fn replay_plain(policy: &mut dyn Policy, trace: &[DedupReq]) -> DedupStats {
    let mut st = DedupStats::default();
    let mut evicted = Vec::new();
    for r in trace {
        st.requests += 1;
        if policy.on_hit(r.addr) {
            st.hits += 1;
            continue;
        }
        match policy.insert(r.addr, u64::from(r.size), &mut |_| true, &mut evicted) {
            Ok(()) => {
                st.flash_writes += 1;
                st.flash_bytes += u64::from(r.size);
            }
            Err(InsertError::TooLarge) => {}
            Err(InsertError::Full) => unreachable!("admit-all replay: everything is evictable"),
        }
        st.evictions += evicted.len() as u64;
        evicted.clear();
    }
    st
}

/// Parameters of [`dedup_trace`].
#[derive(Clone, Copy, Debug)]
pub struct DedupTraceSpec {
    /// Distinct addresses of the Zipf part (addresses `1..=addrs`).
    pub addrs: u64,
    /// Distinct contents the Zipf addresses map to (each address to one, fixed for the trace).
    pub contents: u64,
    /// Requests in the trace.
    pub requests: usize,
    /// Zipf exponent of the address popularity.
    pub alpha: f64,
    /// Fraction of requests that belong to one-time scans (fresh addresses, unique content).
    pub scan_fraction: f64,
    /// Requests per scan run.
    pub scan_len: usize,
    /// Size of every fragment, bytes.
    pub size: u32,
    /// Compression ratio of every fragment (see [`DedupReq::ratio`]).
    pub ratio: f64,
    /// Seed of the generator: equal specs give equal traces.
    pub seed: u64,
}

/// A deterministic dedup trace; see the module documentation.
pub fn dedup_trace(spec: &DedupTraceSpec) -> Vec<DedupReq> {
    let z = Zipf::new(spec.addrs, spec.alpha, 0.0);
    let mut rng = Xoshiro256pp::new(spec.seed);
    let mut out = Vec::with_capacity(spec.requests);
    let (mut next_scan_addr, mut next_unique) = (spec.addrs + 1, spec.contents);
    let (size, ratio) = (spec.size, spec.ratio);
    // Scans start with probability scan_fraction / scan_len per request.
    let scan_start = spec.scan_fraction / spec.scan_len.max(1) as f64;
    while out.len() < spec.requests {
        if rng.next_f64() < scan_start {
            for _ in 0..spec.scan_len.min(spec.requests - out.len()) {
                out.push(DedupReq { addr: next_scan_addr, content: next_unique, size, ratio });
                next_scan_addr += 1;
                next_unique += 1;
            }
            continue;
        }
        let addr = z.sample(&mut rng) + 1;
        let content = SplitMix64::new(addr ^ spec.seed.rotate_left(32)).below_mod(spec.contents);
        out.push(DedupReq { addr, content, size, ratio });
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn trace_shares_content_and_has_scans() {
        let spec = DedupTraceSpec {
            addrs: 1000,
            contents: 250,
            requests: 20_000,
            alpha: 0.9,
            scan_fraction: 0.2,
            scan_len: 100,
            size: 1,
            ratio: 1.0,
            seed: 5,
        };
        let t = dedup_trace(&spec);
        assert_eq!(t.len(), 20_000);
        assert_eq!(t, dedup_trace(&spec));
        let scans = t.iter().filter(|r| r.addr > spec.addrs).count() as f64 / t.len() as f64;
        assert!((scans - 0.2).abs() < 0.05, "scan share {scans}");
        let mut content_of = std::collections::HashMap::new();
        for r in &t {
            assert_eq!(*content_of.entry(r.addr).or_insert(r.content), r.content, "fixed content per addr");
        }
        let zipf_contents: std::collections::HashSet<_> =
            t.iter().filter(|r| r.addr <= spec.addrs).map(|r| r.content).collect();
        assert!(zipf_contents.len() <= 250);
    }
}

#[cfg(test)]
mod comparison {
    use super::*;
    use reo_cache::dedup::{new_dedup, DedupKind};
    use reo_cache::policy::{new_policy, PolicyKind};

    fn figures(spec: &DedupTraceSpec, blocks: u64, meta: usize) -> Vec<(&'static str, DedupStats)> {
        let trace = dedup_trace(spec);
        let bytes = blocks * u64::from(spec.size);
        let mut rows = vec![("lru", replay_plain(new_policy(PolicyKind::Lru, bytes).as_mut(), &trace))];
        rows.push(("arc", replay_plain(new_policy(PolicyKind::Arc, bytes).as_mut(), &trace)));
        for k in [DedupKind::DLru, DedupKind::DArc, DedupKind::CdArc] {
            let mut p = new_dedup(k, meta, bytes).expect("dedup on");
            rows.push((k.as_str(), replay(p.as_mut(), &trace)));
            p.check_invariants().unwrap();
            let per_entry = p.memory_bytes() as f64 / (p.meta_len() + p.data_len()) as f64;
            eprintln!(
                "{k:>7}: {} M entries, {} D fps, {per_entry:.0} B of index per entry",
                p.meta_len(),
                p.data_len()
            );
        }
        for (name, s) in &rows {
            eprintln!(
                "{name:>7}: hit ratio {:.4}  flash writes {:>7} ({:.4}/req)  {:>6} MiB",
                s.hit_ratio(),
                s.flash_writes,
                s.flash_writes as f64 / s.requests as f64,
                s.flash_bytes >> 20
            );
        }
        rows
    }

    /// D-ARC ≥ D-LRU ≥ plain LRU in hit ratio, and the reverse in flash writes, on dedup traces: 100 k
    /// addresses over 40 k contents (≈ 2.5 addresses per content), 4 KiB fragments compressing 2×,
    /// a data cache of 16 Ki fragments (64 MiB: 32 WEUs for CD-ARC). Plain ARC and CD-ARC are
    /// printed for reference; CD-ARC must write fewer bytes than D-ARC.
    #[test]
    fn d_arc_beats_d_lru_beats_lru_with_duplicates() {
        // (metadata entries per data block, Zipf α, share of one-time scans)
        for (meta_per_block, alpha, scans) in [(2, 0.8, 0.2), (4, 0.9, 0.0)] {
            let spec = DedupTraceSpec {
                addrs: 100_000,
                contents: 40_000,
                requests: 400_000,
                alpha,
                scan_fraction: scans,
                scan_len: 2000,
                size: 4096,
                ratio: 2.0,
                seed: 1,
            };
            eprintln!("metadata {meta_per_block}x data blocks, zipf {alpha}, scans {scans}:");
            let rows = figures(&spec, 16_384, meta_per_block * 16_384);
            let get = |n: &str| rows.iter().find(|r| r.0 == n).expect("row").1;
            let (lru, dlru, darc, cdarc) = (get("lru"), get("d-lru"), get("d-arc"), get("cd-arc"));
            assert!(darc.hit_ratio() > dlru.hit_ratio() && dlru.hit_ratio() > lru.hit_ratio());
            assert!(darc.flash_writes < dlru.flash_writes && dlru.flash_writes < lru.flash_writes);
            for s in [dlru, darc, cdarc] {
                assert!(s.flash_writes < s.requests - s.hits, "duplicates are not rewritten");
            }
            assert!(cdarc.flash_bytes < darc.flash_bytes);
        }
    }
}
