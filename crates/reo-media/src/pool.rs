//! [`IoPool`]: a small dedicated thread pool that issues device I/O in parallel.
//!
//! The store writes a stripe's chunks to N devices at once and scans N devices at recovery; each
//! device is served by the pool's threads so that one slow device does not serialise the others.
//! It is a dedicated rayon pool (never the global one) so blocking I/O never starves compute.
//! Byte-less (simulated) media complete every call at once, so for them [`IoPool::inline`]
//! runs the jobs on the caller: handing a counter increment to another thread costs more than
//! the increment.

use std::sync::Arc;

/// A pool of I/O threads. Cheap to clone.
#[derive(Clone)]
pub struct IoPool {
    /// `None`: run every job on the calling thread.
    pool: Option<Arc<rayon::ThreadPool>>,
}

impl IoPool {
    /// A pool of `threads` threads (at least 1).
    pub fn new(threads: usize) -> Self {
        let pool = rayon::ThreadPoolBuilder::new()
            .num_threads(threads.max(1))
            .thread_name(|i| format!("reo-io-{i}"))
            .build()
            .expect("cannot start the I/O thread pool");
        IoPool { pool: Some(Arc::new(pool)) }
    }

    /// A pool without threads: `map` runs the jobs in order on the caller.
    pub fn inline() -> Self {
        IoPool { pool: None }
    }

    /// Runs `f(i)` for every `i` in `0..n` in parallel and returns the results in order: jobs
    /// `1..n` on the pool, job 0 on the calling thread meanwhile (one hop fewer per call, and no
    /// hop at all when `n == 1`).
    pub fn map<R, F>(&self, n: usize, f: F) -> Vec<R>
    where
        R: Send,
        F: Fn(usize) -> R + Sync,
    {
        let Some(pool) = self.pool.as_ref().filter(|_| n > 1) else {
            return (0..n).map(f).collect();
        };
        let mut out: Vec<Option<R>> = (0..n).map(|_| None).collect();
        pool.in_place_scope(|s| {
            let mut slots = out.iter_mut().enumerate();
            let first = slots.next();
            for (i, slot) in slots {
                let f = &f;
                s.spawn(move |_| *slot = Some(f(i)));
            }
            if let Some((i, slot)) = first {
                *slot = Some(f(i));
            }
        });
        out.into_iter().map(|r| r.expect("job ran")).collect()
    }

    /// Number of threads (1 for an inline pool: the caller's).
    pub fn threads(&self) -> usize {
        self.pool.as_ref().map_or(1, |p| p.current_num_threads())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn map_returns_results_in_order() {
        let p = IoPool::new(3);
        let r = p.map(10, |i| i * i);
        assert_eq!(r, (0..10).map(|i| i * i).collect::<Vec<_>>());
        assert_eq!(p.map(1, |i| i + 5), vec![5]);
        assert!(p.map(0, |i| i).is_empty());
        let inline = IoPool::inline();
        let me = std::thread::current().id();
        assert_eq!(inline.map(4, |i| (i, std::thread::current().id())), (0..4).map(|i| (i, me)).collect::<Vec<_>>());
    }

    /// Jobs that map on the same pool and wait for the inner jobs (the store's recovery verifies
    /// blobs in pool jobs, and each verifying read maps its device reads on the pool) complete
    /// even when every pool thread is such a job: a waiting rayon worker runs queued jobs itself
    /// instead of blocking, so the pool cannot run out of threads. Deterministic: with one
    /// thread, a blocking wait would hang here on every run.
    #[test]
    fn nested_maps_on_a_one_thread_pool_complete() {
        let p = IoPool::new(1);
        let r =
            p.map(4, |i| p.map(3, |j| p.map(2, |k| i * 100 + j * 10 + k).iter().sum::<usize>()).iter().sum::<usize>());
        let expect: Vec<usize> =
            (0..4).map(|i| (0..3).map(|j| (0..2).map(|k| i * 100 + j * 10 + k).sum::<usize>()).sum()).collect();
        assert_eq!(r, expect);
    }
}
