//! [`IoPool`]: a small dedicated thread pool that issues device I/O in parallel.
//!
//! The store writes a stripe's chunks to N devices at once and scans N devices at recovery; each
//! device is served by the pool's threads so that one slow device does not serialise the others.
//! Byte-less (simulated) media complete every call at once, so for them [`IoPool::inline`]
//! runs the jobs on the caller: handing a counter increment to another thread costs more than
//! the increment.
//!
//! Why not rayon: an idle rayon worker spins through `sched_yield` for a while before it sleeps.
//! Every job here is a blocking pread/pwrite, so with 4 threads per device most workers are idle
//! most of the time, and on a 2-vCPU machine their spinning showed up in the CPU profile of
//! `reo bench store` — CPU the checksums, the codec and the kernel's own I/O work needed (see
//! docs/BENCHMARKS.md). These threads sleep on a condition variable as soon as the queue is empty.
//!
//! Work is submitted in a *scope* ([`IoPool::scope`], like `std::thread::scope`): jobs spawned
//! in it may borrow from the caller, and the scope returns only when all of them have finished.
//! [`IoPool::map`] is a scope whose first job runs on the caller. A scope opened on a pool thread
//! (a job may call code that maps on the pool: the store's recovery verifies blobs in pool jobs)
//! runs
//! every job of its own that no thread has taken yet before it waits, so nested scopes complete
//! even when every pool thread is waiting in one: a taken job is always being run by a live
//! thread.

use parking_lot::{Condvar, Mutex};
use std::any::Any;
use std::cell::Cell;
use std::collections::VecDeque;
use std::marker::PhantomData;
use std::panic::{catch_unwind, resume_unwind, AssertUnwindSafe};
use std::sync::Arc;

/// A pool of I/O threads. Cheap to clone; the threads stop when the last clone is dropped.
#[derive(Clone)]
pub struct IoPool {
    /// `None`: run every job on the calling thread.
    pool: Option<Arc<Threads>>,
}

/// The handle side of the pool: dropping it (the last [`IoPool`] clone) stops the threads.
struct Threads {
    queue: Arc<Queue>,
    count: usize,
}

/// What the threads wait on: one ticket per spawned job, naming the scope to take a job from.
struct Queue {
    state: Mutex<QueueState>,
    work: Condvar,
}

struct QueueState {
    tickets: VecDeque<Arc<ScopeJobs>>,
    shutdown: bool,
}

/// A job, its lifetime erased (see [`ScopeJobs::jobs`]).
type Job = Box<dyn FnOnce() + Send + 'static>;

/// The jobs of one scope.
struct ScopeJobs {
    /// Jobs not yet taken. They borrow from the scope's caller, which does not return before
    /// `pending` is 0, i.e. before every job has been taken and has finished; so a job never
    /// runs after what it borrows is gone, although its type says `'static`.
    jobs: Mutex<VecDeque<Job>>,
    /// Jobs spawned and not finished.
    pending: Mutex<usize>,
    finished: Condvar,
    /// The first panic of a job, re-raised on the caller.
    panic: Mutex<Option<Box<dyn Any + Send>>>,
}

thread_local! {
    /// The queue this thread serves, if it is a pool thread (its address, as an identity).
    static SERVES: Cell<usize> = const { Cell::new(0) };
}

impl ScopeJobs {
    fn new() -> ScopeJobs {
        ScopeJobs {
            jobs: Mutex::new(VecDeque::new()),
            pending: Mutex::new(0),
            finished: Condvar::new(),
            panic: Mutex::new(None),
        }
    }

    /// Takes the oldest job not yet taken and runs it; false when there was none.
    fn run_one(&self) -> bool {
        let Some(job) = self.jobs.lock().pop_front() else { return false };
        if let Err(p) = catch_unwind(AssertUnwindSafe(job)) {
            self.panic.lock().get_or_insert(p);
        }
        let mut pending = self.pending.lock();
        *pending -= 1;
        if *pending == 0 {
            self.finished.notify_all();
        }
        true
    }

    /// Blocks until every spawned job has finished.
    fn wait(&self) {
        let mut pending = self.pending.lock();
        while *pending > 0 {
            self.finished.wait(&mut pending);
        }
    }
}

impl Queue {
    fn worker(self: Arc<Self>) {
        SERVES.with(|s| s.set(Arc::as_ptr(&self) as usize));
        loop {
            let ticket = {
                let mut st = self.state.lock();
                loop {
                    if let Some(t) = st.tickets.pop_front() {
                        break t;
                    }
                    if st.shutdown {
                        return;
                    }
                    self.work.wait(&mut st);
                }
            };
            ticket.run_one();
        }
    }

    fn served_by_this_thread(self: &Arc<Self>) -> bool {
        SERVES.with(|s| s.get()) == Arc::as_ptr(self) as usize
    }
}

impl Drop for Threads {
    fn drop(&mut self) {
        self.queue.state.lock().shutdown = true;
        self.queue.work.notify_all();
    }
}

/// A scope of jobs on an [`IoPool`] (see [`IoPool::scope`]).
pub struct Scope<'scope, 'env: 'scope> {
    /// `None` for an inline pool: jobs run as they are spawned.
    queue: Option<&'scope Arc<Queue>>,
    jobs: Arc<ScopeJobs>,
    _scope: PhantomData<&'scope mut &'scope ()>,
    _env: PhantomData<&'env mut &'env ()>,
}

impl<'scope, 'env> Scope<'scope, 'env> {
    /// Runs `f` on a pool thread (at once on the caller for an inline pool). It may borrow
    /// anything that outlives the scope; the scope waits for it.
    pub fn spawn<F>(&'scope self, f: F)
    where
        F: FnOnce() + Send + 'scope,
    {
        let Some(queue) = self.queue else {
            f();
            return;
        };
        let job: Box<dyn FnOnce() + Send + 'scope> = Box::new(f);
        // SAFETY: only the lifetime is erased; `IoPool::scope` does not return (nor unwind)
        // before this job has finished (see `ScopeJobs::jobs`).
        let job: Job = unsafe { std::mem::transmute::<Box<dyn FnOnce() + Send + 'scope>, Job>(job) };
        *self.jobs.pending.lock() += 1;
        self.jobs.jobs.lock().push_back(job);
        queue.state.lock().tickets.push_back(self.jobs.clone());
        queue.work.notify_one();
    }
}

/// Waits for a scope's jobs when the scope ends, normally or by a panic of its body.
struct EndOfScope<'a> {
    jobs: &'a ScopeJobs,
    /// The scope was opened on one of the pool's threads: run its untaken jobs here.
    help: bool,
}

impl Drop for EndOfScope<'_> {
    fn drop(&mut self) {
        if self.help {
            while self.jobs.run_one() {}
        }
        self.jobs.wait();
    }
}

impl IoPool {
    /// A pool of `threads` threads (at least 1).
    pub fn new(threads: usize) -> Self {
        let count = threads.max(1);
        let queue = Arc::new(Queue {
            state: Mutex::new(QueueState { tickets: VecDeque::new(), shutdown: false }),
            work: Condvar::new(),
        });
        for i in 0..count {
            let q = queue.clone();
            std::thread::Builder::new()
                .name(format!("reo-io-{i}"))
                .spawn(move || q.worker())
                .expect("cannot start the I/O thread pool");
        }
        IoPool { pool: Some(Arc::new(Threads { queue, count })) }
    }

    /// A pool without threads: `map` runs the jobs in order on the caller.
    pub fn inline() -> Self {
        IoPool { pool: None }
    }

    /// Runs `body`, in which jobs may be spawned on the pool; returns once `body` and every job
    /// have finished. A panic in a job is re-raised here after that.
    pub fn scope<'env, T>(&self, body: impl for<'scope> FnOnce(&'scope Scope<'scope, 'env>) -> T) -> T {
        let queue = self.pool.as_ref().map(|p| &p.queue);
        let scope = Scope { queue, jobs: Arc::new(ScopeJobs::new()), _scope: PhantomData, _env: PhantomData };
        let out = {
            let _end = EndOfScope { jobs: &scope.jobs, help: queue.is_some_and(|q| q.served_by_this_thread()) };
            body(&scope)
        };
        if let Some(p) = scope.jobs.panic.lock().take() {
            resume_unwind(p);
        }
        out
    }

    /// Runs `f(i)` for every `i` in `0..n` in parallel and returns the results in order: jobs
    /// on the pool, the first one on the calling thread meanwhile (one hop fewer per call, and
    /// no hop at all when `n == 1`). A panic in a job is re-raised here once every job is done.
    pub fn map<R, F>(&self, n: usize, f: F) -> Vec<R>
    where
        R: Send,
        F: Fn(usize) -> R + Sync,
    {
        if self.pool.is_none() || n <= 1 {
            return (0..n).map(f).collect();
        }
        let slots: Vec<Mutex<Option<R>>> = (0..n).map(|_| Mutex::new(None)).collect();
        self.scope(|s| {
            for (i, slot) in slots.iter().enumerate().skip(1) {
                let f = &f;
                s.spawn(move || *slot.lock() = Some(f(i)));
            }
            *slots[0].lock() = Some(f(0));
        });
        slots.into_iter().map(|s| s.into_inner().expect("job ran")).collect()
    }

    /// Number of threads (1 for an inline pool: the caller's).
    pub fn threads(&self) -> usize {
        self.pool.as_ref().map_or(1, |p| p.count)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::sync::atomic::{AtomicUsize, Ordering};
    use std::time::Duration;

    #[test]
    fn map_returns_results_in_order() {
        let p = IoPool::new(3);
        let r = p.map(10, |i| i * i);
        assert_eq!(r, (0..10).map(|i| i * i).collect::<Vec<_>>());
        assert_eq!(p.map(1, |i| i + 5), vec![5]);
        assert!(p.map(0, |i| i).is_empty());
        assert_eq!(p.threads(), 3);
        let inline = IoPool::inline();
        let me = std::thread::current().id();
        assert_eq!(inline.map(4, |i| (i, std::thread::current().id())), (0..4).map(|i| (i, me)).collect::<Vec<_>>());
    }

    /// Jobs that map on the same pool and wait for the inner jobs (a job may call code that maps
    /// on the pool: the store's recovery verifies blobs in pool jobs) complete
    /// even when every pool thread is such a job: a waiting pool thread runs its batch's
    /// unclaimed jobs itself instead of blocking, so the pool cannot run out of threads.
    /// Deterministic: with one thread, a blocking wait would hang here on every run.
    #[test]
    fn nested_maps_on_a_one_thread_pool_complete() {
        let p = IoPool::new(1);
        let r =
            p.map(4, |i| p.map(3, |j| p.map(2, |k| i * 100 + j * 10 + k).iter().sum::<usize>()).iter().sum::<usize>());
        let expect: Vec<usize> =
            (0..4).map(|i| (0..3).map(|j| (0..2).map(|k| i * 100 + j * 10 + k).sum::<usize>()).sum()).collect();
        assert_eq!(r, expect);
    }

    /// The jobs of one map run at the same time (the point of the pool: one blocked device
    /// must not hold up the others): four jobs on three threads plus the caller each wait for
    /// all four to have started. Run one after the other, none would see the others arrive.
    #[test]
    fn jobs_of_one_map_run_concurrently() {
        let p = IoPool::new(3);
        let arrived = (Mutex::new(0usize), Condvar::new());
        let all_met = p.map(4, |_| {
            let (count, cv) = &arrived;
            let mut c = count.lock();
            *c += 1;
            cv.notify_all();
            let timeout = cv.wait_while_for(&mut c, |c| *c < 4, Duration::from_secs(30));
            *c == 4 && !timeout.timed_out()
        });
        assert_eq!(all_met, vec![true; 4]);
    }

    /// A panicking job does not take the pool down: the panic reaches the caller after the
    /// other jobs finished, and the pool keeps serving.
    #[test]
    fn a_panicking_job_panics_the_caller_and_the_pool_goes_on() {
        let p = IoPool::new(2);
        let ran = AtomicUsize::new(0);
        let r = catch_unwind(AssertUnwindSafe(|| {
            p.map(6, |i| {
                ran.fetch_add(1, Ordering::Relaxed);
                assert!(i != 3, "job 3 fails");
                i
            })
        }));
        let msg = r.expect_err("the job's panic reaches the caller");
        let text = msg.downcast_ref::<&str>().map(|s| s.to_string()).or_else(|| msg.downcast_ref::<String>().cloned());
        assert_eq!(text.as_deref(), Some("job 3 fails"));
        assert_eq!(ran.load(Ordering::Relaxed), 6, "every other job still ran");
        assert_eq!(p.map(3, |i| i + 1), vec![1, 2, 3]);
    }

    /// Jobs spawned in a scope borrow the caller's data, run while the body goes on, and are
    /// all finished when the scope returns; jobs that open scopes of their own on a one-thread
    /// pool complete too (the waiting pool thread runs its own untaken jobs).
    #[test]
    fn scoped_jobs_borrow_and_are_done_when_the_scope_returns() {
        let p = IoPool::new(1);
        let sums: Vec<AtomicUsize> = (0..8).map(|_| AtomicUsize::new(0)).collect();
        let body_ran = p.scope(|s| {
            for (i, sum) in sums.iter().enumerate() {
                let p = &p;
                s.spawn(move || {
                    let inner = p.scope(|s2| {
                        for j in 0..3 {
                            s2.spawn(move || {
                                sum.fetch_add(i * 10 + j, Ordering::Relaxed);
                            });
                        }
                        7
                    });
                    sum.fetch_add(inner, Ordering::Relaxed);
                });
            }
            true
        });
        assert!(body_ran);
        let got: Vec<usize> = sums.iter().map(|a| a.load(Ordering::Relaxed)).collect();
        let want: Vec<usize> = (0..8).map(|i| (0..3).map(|j| i * 10 + j).sum::<usize>() + 7).collect();
        assert_eq!(got, want);
        let inline = IoPool::inline();
        let count = AtomicUsize::new(0);
        inline.scope(|s| {
            s.spawn(|| {
                count.fetch_add(1, Ordering::Relaxed);
            });
            assert_eq!(count.load(Ordering::Relaxed), 1, "an inline pool runs a job when it is spawned");
        });
    }

    /// A scope whose body panics still waits for its jobs before the panic leaves it: nothing
    /// they borrow is gone while they run.
    #[test]
    fn a_panicking_scope_body_waits_for_its_jobs() {
        let p = IoPool::new(2);
        let gate = (Mutex::new(false), Condvar::new());
        let done = AtomicUsize::new(0);
        let r = catch_unwind(AssertUnwindSafe(|| {
            p.scope(|s| {
                for _ in 0..3 {
                    s.spawn(|| {
                        let (open, cv) = &gate;
                        let mut g = open.lock();
                        cv.wait_while_for(&mut g, |o| !*o, Duration::from_secs(30));
                        drop(g);
                        done.fetch_add(1, Ordering::Relaxed);
                    });
                }
                *gate.0.lock() = true;
                gate.1.notify_all();
                panic!("body fails");
            })
        }));
        assert!(r.is_err());
        assert_eq!(done.load(Ordering::Relaxed), 3, "every job finished before the scope unwound");
    }
}
