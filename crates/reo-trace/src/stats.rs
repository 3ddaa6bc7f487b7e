//! [`TraceStats`]: summary statistics of a request stream (requests, objects, bytes, write
//! ratio, unique content ratio, popularity skew, mean object size), for `reo gen-trace`'s
//! summary and the numbers in `docs/TRACES.md`. Memory is O(distinct keys and contents).

use crate::request::{Op, Request};
use std::collections::{HashMap, HashSet};

/// Statistics accumulated over requests with [`TraceStats::add`].
#[derive(Debug, Default, Clone)]
pub struct TraceStats {
    /// Requests added.
    pub requests: u64,
    /// Puts among them.
    pub writes: u64,
    /// Bytes touched (sum of `len`).
    pub bytes: u64,
    /// Per key: (requests, object size when first seen).
    keys: HashMap<u64, (u64, u64)>,
    contents: HashSet<u64>,
    versions: HashSet<(u64, u64)>,
    with_fingerprint: u64,
}

impl TraceStats {
    /// Accounts for one request.
    pub fn add(&mut self, r: &Request) {
        self.requests += 1;
        self.bytes += r.len;
        if r.op == Op::Put {
            self.writes += 1;
        }
        self.keys.entry(r.key).or_insert((0, r.obj_size)).0 += 1;
        if let Some(fp) = r.fingerprint {
            self.with_fingerprint += 1;
            self.contents.insert(fp);
            self.versions.insert((r.key, fp));
        }
    }

    /// Distinct keys.
    pub fn objects(&self) -> u64 {
        self.keys.len() as u64
    }

    /// Puts over all requests.
    pub fn write_ratio(&self) -> f64 {
        self.writes as f64 / self.requests.max(1) as f64
    }

    /// Distinct contents over distinct (key, content) versions; `None` when no request had a
    /// fingerprint (then every version is distinct content).
    pub fn unique_content_ratio(&self) -> Option<f64> {
        (self.with_fingerprint > 0).then(|| self.contents.len() as f64 / self.versions.len() as f64)
    }

    /// Share of requests that went to the most requested `fraction` of keys.
    pub fn top_share(&self, fraction: f64) -> f64 {
        let mut counts: Vec<u64> = self.keys.values().map(|&(n, _)| n).collect();
        counts.sort_unstable_by(|a, b| b.cmp(a));
        let k = ((counts.len() as f64 * fraction).round() as usize).clamp(1, counts.len().max(1));
        counts.iter().take(k).sum::<u64>() as f64 / self.requests.max(1) as f64
    }

    /// Mean object size over distinct keys (size when first seen).
    pub fn mean_object_size(&self) -> f64 {
        self.keys.values().map(|&(_, s)| s as f64).sum::<f64>() / self.keys.len().max(1) as f64
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn counts_and_ratios() {
        let r = |op, key, fp| Request { time_ns: 0, op, key, offset: 0, len: 10, obj_size: 10 * key, fingerprint: fp };
        let mut s = TraceStats::default();
        for q in [r(Op::Put, 1, Some(7)), r(Op::Get, 1, Some(7)), r(Op::Put, 2, Some(7)), r(Op::Get, 3, Some(8))] {
            s.add(&q);
        }
        assert_eq!((s.requests, s.writes, s.bytes, s.objects()), (4, 2, 40, 3));
        assert_eq!(s.write_ratio(), 0.5);
        assert_eq!(s.unique_content_ratio(), Some(2.0 / 3.0));
        assert_eq!(s.top_share(0.34), 0.5);
        assert_eq!(s.mean_object_size(), 20.0);
        assert_eq!(TraceStats::default().unique_content_ratio(), None);
    }
}
