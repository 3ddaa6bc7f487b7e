//! [`Workers`]: the threads that run [`Deadline`](super::deadline::Deadline)'s calls.
//!
//! A call is handed to an idle thread when there is one, else to a new thread; a thread that has
//! been idle for [`IDLE_EXIT`] ends. Handing a call to a waiting thread costs a wake-up where a
//! new thread per call costs a spawn and an exit, several times as much on a PUT's path (a PUT
//! asks the backend whether its bucket exists). A thread stuck in a hung call is simply not idle:
//! the next call gets another thread, and `Deadline` bounds how many may be stuck.

use std::collections::VecDeque;
use std::sync::Arc;
use std::time::Duration;

use parking_lot::{Condvar, Mutex};

/// How long a thread waits for a call before it ends.
pub const IDLE_EXIT: Duration = Duration::from_secs(60);

type Job = Box<dyn FnOnce() + Send>;

/// See the module doc.
pub struct Workers {
    state: Mutex<State>,
    ready: Condvar,
}

struct State {
    jobs: VecDeque<Job>,
    /// Threads waiting for a job.
    idle: usize,
}

impl Workers {
    pub fn new() -> Arc<Workers> {
        Arc::new(Workers { state: Mutex::new(State { jobs: VecDeque::new(), idle: 0 }), ready: Condvar::new() })
    }

    /// Runs `job` on an idle thread, or on a new one when none is idle.
    pub fn run(self: &Arc<Self>, job: Job) -> std::io::Result<()> {
        let mut st = self.state.lock();
        if st.idle > st.jobs.len() {
            st.jobs.push_back(job);
            drop(st);
            self.ready.notify_one();
            return Ok(());
        }
        drop(st);
        let me = self.clone();
        std::thread::Builder::new().name("reo-backend-call".into()).spawn(move || {
            job();
            me.serve();
        })?;
        Ok(())
    }

    /// A thread's life after its first job: the queued jobs, until idle for [`IDLE_EXIT`].
    fn serve(&self) {
        let mut st = self.state.lock();
        loop {
            if let Some(job) = st.jobs.pop_front() {
                drop(st);
                job();
                st = self.state.lock();
                continue;
            }
            st.idle += 1;
            let waited = self.ready.wait_while_for(&mut st, |s| s.jobs.is_empty(), IDLE_EXIT);
            st.idle -= 1;
            if waited.timed_out() && st.jobs.is_empty() {
                return;
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use std::sync::mpsc;
    use std::time::Duration;

    use super::Workers;

    #[test]
    fn a_blocked_job_does_not_hold_up_the_next() {
        let w = Workers::new();
        let (release, blocked) = mpsc::channel::<()>();
        let (tx, rx) = mpsc::channel();
        w.run(Box::new(move || {
            let _ = blocked.recv();
        }))
        .unwrap();
        for i in 0..100 {
            let tx = tx.clone();
            w.run(Box::new(move || tx.send(i).unwrap())).unwrap();
        }
        let mut got: Vec<i32> = (0..100).map(|_| rx.recv_timeout(Duration::from_secs(30)).unwrap()).collect();
        got.sort();
        assert_eq!(got, (0..100).collect::<Vec<_>>());
        release.send(()).unwrap();
    }
}
