//! [`Deadline`]: a deadline on every call of a backend whose calls cannot time out by themselves —
//! the local directory backend, whose file-system calls block in the kernel on a hung mount (an
//! NFS server gone, a dying disk). Each call runs on a thread of its own and the caller waits at
//! most the deadline; then it gets `Io` (the gateway's backend-down path) and the call is
//! abandoned: its thread ends whenever the kernel lets it. At most [`MAX_STUCK`] abandoned calls
//! may be outstanding; beyond that calls fail at once, so a hung mount cannot pile up threads.
//!
//! A streamed read's chunks come from a producer thread one chunk ahead of the reader, each
//! within the deadline (a stall mid-body ends the stream with an error). A PUT's deadline grows
//! by a second per MiB, as the S3 backend's does.
//!
//! The calls run on [`Workers`]' threads: the hand-off costs a thread wake-up each way, small
//! next to the durable write of the PUT whose bucket check is the most frequent call
//! (ARCHITECTURE.md, "Known limits of the backend path", has the measurement).

use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::mpsc;
use std::sync::Arc;
use std::time::Duration;

use bytes::Bytes;
use parking_lot::{Condvar, Mutex};

use super::workers::Workers;
use super::{
    Address, Advice, AdviceReport, BResult, Backend, BackendError, BucketInfo, ChunkIter, ListEntry, ObjectInfo,
    ObjectWriter,
};

/// Abandoned calls outstanding beyond which calls fail at once.
pub const MAX_STUCK: usize = 64;

/// See the module doc.
pub struct Deadline {
    inner: Arc<dyn Backend>,
    runner: Runner,
}

/// Runs calls on [`Workers`]' threads, each waited for at most its deadline.
#[derive(Clone)]
struct Runner {
    call: Duration,
    stuck: Arc<AtomicUsize>,
    workers: Arc<Workers>,
}

/// One call's answer, or that its caller gave up on it.
struct Slot<T> {
    state: Mutex<(Option<BResult<T>>, bool)>,
    done: Condvar,
}

impl Deadline {
    /// `inner` with a deadline of `call` on each call (a PUT: `call` plus a second per MiB).
    pub fn new(inner: Arc<dyn Backend>, call: Duration) -> Deadline {
        Deadline { inner, runner: Runner { call, stuck: Arc::default(), workers: Workers::new() } }
    }

    /// Abandoned calls outstanding now.
    pub fn stuck(&self) -> usize {
        self.runner.stuck.load(Ordering::Relaxed)
    }

    fn run<T: Send + 'static>(
        &self,
        deadline: Duration,
        what: &str,
        f: impl FnOnce(&dyn Backend) -> BResult<T> + Send + 'static,
    ) -> BResult<T> {
        let inner = self.inner.clone();
        self.runner.run(deadline, what, move || f(inner.as_ref()))
    }
}

/// `call` plus a second per MiB of `bytes` (the deadline of a transfer).
fn transfer(call: Duration, bytes: u64) -> Duration {
    call + Duration::from_secs(bytes.min(1 << 40).div_ceil(1 << 20))
}

impl Runner {
    fn run<T: Send + 'static>(
        &self,
        deadline: Duration,
        what: &str,
        f: impl FnOnce() -> BResult<T> + Send + 'static,
    ) -> BResult<T> {
        let stuck = self.stuck.load(Ordering::Relaxed);
        if stuck >= MAX_STUCK {
            return Err(BackendError::Io(format!(
                "{stuck} calls to the backend are stuck past their deadline; {what} not attempted"
            )));
        }
        let slot = Arc::new(Slot { state: Mutex::new((None, false)), done: Condvar::new() });
        let (s, counter) = (slot.clone(), self.stuck.clone());
        self.workers
            .run(Box::new(move || {
                let r = f();
                let mut st = s.state.lock();
                if st.1 {
                    counter.fetch_sub(1, Ordering::Relaxed); // abandoned: nobody waits for it
                } else {
                    st.0 = Some(r);
                    s.done.notify_all();
                }
            }))
            .map_err(|e| BackendError::Io(format!("cannot start a backend call: {e}")))?;
        let mut st = slot.state.lock();
        slot.done.wait_while_for(&mut st, |st| st.0.is_none(), deadline);
        match st.0.take() {
            Some(r) => r,
            None => {
                st.1 = true;
                self.stuck.fetch_add(1, Ordering::Relaxed);
                Err(BackendError::Io(format!(
                    "the backend did not answer {what} within {:.1} s (backend.timeout)",
                    deadline.as_secs_f64()
                )))
            }
        }
    }
}

/// A streamed read's chunks, each within the deadline (see the module doc).
struct Chunks {
    rx: mpsc::Receiver<BResult<Bytes>>,
    call: Duration,
    failed: bool,
}

impl Iterator for Chunks {
    type Item = BResult<Bytes>;

    fn next(&mut self) -> Option<BResult<Bytes>> {
        if self.failed {
            return None;
        }
        match self.rx.recv_timeout(self.call) {
            Ok(c) => Some(c),
            Err(mpsc::RecvTimeoutError::Disconnected) => None,
            Err(mpsc::RecvTimeoutError::Timeout) => {
                self.failed = true;
                Some(Err(BackendError::Io(format!(
                    "the backend's read stalled for {:.1} s (backend.timeout)",
                    self.call.as_secs_f64()
                ))))
            }
        }
    }
}

fn chunks(mut it: ChunkIter, call: Duration) -> ChunkIter {
    let (tx, rx) = mpsc::sync_channel(1);
    let spawned = std::thread::Builder::new().name("reo-backend-read".into()).spawn(move || {
        for c in it.by_ref() {
            if tx.send(c).is_err() {
                return; // the reader went away
            }
        }
    });
    match spawned {
        Ok(_) => Box::new(Chunks { rx, call, failed: false }),
        Err(e) => Box::new(std::iter::once(Err(BackendError::Io(format!("cannot start a backend read: {e}"))))),
    }
}

/// A streamed write's calls, each within the deadline of its bytes; after a failure (a stuck
/// call keeps the writer) every further call fails. Dropped uncommitted, the inner writer is
/// dropped on a worker thread (its abort may block on the same hung mount).
///
/// The module doc's deadline of a PUT holds per piece: a second per MiB of the piece, and of the
/// object for the commit (which syncs it).
struct DeadlineWriter {
    writer: Arc<Mutex<Option<Box<dyn ObjectWriter>>>>,
    runner: Runner,
    limit: usize,
    failed: bool,
}

impl DeadlineWriter {
    fn call<T: Send + 'static>(
        &mut self,
        deadline: Duration,
        f: impl FnOnce(&mut Option<Box<dyn ObjectWriter>>) -> BResult<T> + Send + 'static,
    ) -> BResult<T> {
        if self.failed {
            return Err(BackendError::Io("an earlier call of this write failed".into()));
        }
        let slot = self.writer.clone();
        let r = self.runner.run(deadline, "a PUT", move || {
            let mut held = slot.lock();
            if held.is_none() {
                return Err(BackendError::Io("the write was abandoned".into()));
            }
            f(&mut held)
        });
        self.failed = r.is_err();
        r
    }
}

impl ObjectWriter for DeadlineWriter {
    fn write(&mut self, piece: Bytes) -> BResult<()> {
        let deadline = transfer(self.runner.call, piece.len() as u64);
        self.call(deadline, move |w| w.as_mut().expect("checked by call").write(piece))
    }

    fn commit(mut self: Box<Self>, info: &ObjectInfo) -> BResult<String> {
        let deadline = transfer(self.runner.call, info.size);
        let info = info.clone();
        self.call(deadline, move |w| w.take().expect("checked by call").commit(&info))
    }

    fn buffer_limit(&self) -> usize {
        self.limit
    }
}

impl Drop for DeadlineWriter {
    fn drop(&mut self) {
        // Held by a stuck call: dropped with that call's last reference when it ends.
        let taken = self.writer.try_lock().and_then(|mut w| w.take());
        if let Some(w) = taken {
            let _ = self.runner.workers.run(Box::new(move || drop(w)));
        }
    }
}

impl Backend for Deadline {
    fn list_buckets(&self) -> BResult<Vec<BucketInfo>> {
        self.run(self.runner.call, "ListBuckets", |b| b.list_buckets())
    }
    fn create_bucket(&self, bucket: &str) -> BResult<()> {
        let bucket = bucket.to_string();
        self.run(self.runner.call, "CreateBucket", move |b| b.create_bucket(&bucket))
    }
    fn head_bucket(&self, bucket: &str) -> BResult<BucketInfo> {
        let bucket = bucket.to_string();
        self.run(self.runner.call, "HeadBucket", move |b| b.head_bucket(&bucket))
    }
    fn delete_bucket(&self, bucket: &str) -> BResult<()> {
        let bucket = bucket.to_string();
        self.run(self.runner.call, "DeleteBucket", move |b| b.delete_bucket(&bucket))
    }
    fn put(&self, bucket: &str, key: &str, data: &[u8], info: &ObjectInfo) -> BResult<()> {
        // Owned by the call's thread, which may outlive this one.
        self.put_owned(bucket, key, Bytes::copy_from_slice(data), info)
    }
    fn put_owned(&self, bucket: &str, key: &str, data: Bytes, info: &ObjectInfo) -> BResult<()> {
        let (bucket, key, info) = (bucket.to_string(), key.to_string(), info.clone());
        let deadline = transfer(self.runner.call, data.len() as u64);
        self.run(deadline, "a PUT", move |b| b.put_owned(&bucket, &key, data, &info))
    }
    fn put_stream(self: Arc<Self>, bucket: &str, key: &str, info: &ObjectInfo) -> BResult<Box<dyn ObjectWriter>> {
        let (bucket, key, info) = (bucket.to_string(), key.to_string(), info.clone());
        let inner = self.inner.clone();
        let w = self.runner.run(self.runner.call, "a PUT", move || inner.put_stream(&bucket, &key, &info))?;
        let limit = w.buffer_limit();
        Ok(Box::new(DeadlineWriter {
            writer: Arc::new(Mutex::new(Some(w))),
            runner: self.runner.clone(),
            limit,
            failed: false,
        }))
    }
    fn head(&self, bucket: &str, key: &str) -> BResult<ObjectInfo> {
        let (bucket, key) = (bucket.to_string(), key.to_string());
        self.run(self.runner.call, "a HEAD", move |b| b.head(&bucket, &key))
    }
    fn get_range(&self, bucket: &str, key: &str, start: u64, end: u64) -> BResult<(Vec<u8>, ObjectInfo)> {
        let (bucket, key) = (bucket.to_string(), key.to_string());
        let deadline = transfer(self.runner.call, end.saturating_sub(start));
        self.run(deadline, "a GET", move |b| b.get_range(&bucket, &key, start, end))
    }
    fn get_stream(&self, bucket: &str, key: &str, start: u64, end: u64) -> BResult<(ObjectInfo, ChunkIter)> {
        let (bucket, key) = (bucket.to_string(), key.to_string());
        let call = self.runner.call;
        let (info, it) = self.run(call, "a GET", move |b| b.get_stream(&bucket, &key, start, end))?;
        Ok((info, chunks(it, call)))
    }
    fn delete(&self, bucket: &str, key: &str) -> BResult<()> {
        let (bucket, key) = (bucket.to_string(), key.to_string());
        self.run(self.runner.call, "a DELETE", move |b| b.delete(&bucket, &key))
    }
    fn list(&self, bucket: &str, prefix: &str, after: &str, limit: usize) -> BResult<Vec<ListEntry>> {
        let (bucket, prefix, after) = (bucket.to_string(), prefix.to_string(), after.to_string());
        self.run(self.runner.call, "a listing", move |b| b.list(&bucket, &prefix, &after, limit))
    }
    fn check_key(&self, key: &str) -> BResult<()> {
        self.inner.check_key(key)
    }
    fn advise(&self, bucket: &str, address: &Address, advice: Advice) -> BResult<AdviceReport> {
        let (bucket, address) = (bucket.to_string(), address.clone());
        self.run(self.runner.call, "a backend hint", move |b| b.advise(&bucket, &address, advice))
    }
    fn probe(&self) -> BResult<()> {
        self.run(self.runner.call, "a probe", |b| b.probe())
    }
}

#[cfg(test)]
mod tests {
    use std::sync::atomic::{AtomicBool, Ordering};
    use std::sync::Arc;
    use std::time::{Duration, Instant};

    use super::Deadline;
    use crate::backend::{Backend, BackendError, LocalBackend, ObjectInfo};

    /// A local backend whose HEADs hang while `hung` is set (a mount gone away), and its PUTs
    /// while `puts_hung` is.
    struct Hanging {
        inner: LocalBackend,
        hung: Arc<AtomicBool>,
        puts_hung: Arc<AtomicBool>,
    }

    fn wait_while(flag: &AtomicBool) {
        while flag.load(Ordering::SeqCst) {
            std::thread::park_timeout(Duration::from_millis(5));
        }
    }

    impl Backend for Hanging {
        fn list_buckets(&self) -> crate::backend::BResult<Vec<crate::backend::BucketInfo>> {
            self.inner.list_buckets()
        }
        fn create_bucket(&self, b: &str) -> crate::backend::BResult<()> {
            self.inner.create_bucket(b)
        }
        fn head_bucket(&self, b: &str) -> crate::backend::BResult<crate::backend::BucketInfo> {
            self.inner.head_bucket(b)
        }
        fn delete_bucket(&self, b: &str) -> crate::backend::BResult<()> {
            self.inner.delete_bucket(b)
        }
        fn put(&self, b: &str, k: &str, d: &[u8], i: &ObjectInfo) -> crate::backend::BResult<()> {
            wait_while(&self.puts_hung);
            self.inner.put(b, k, d, i)
        }
        fn head(&self, b: &str, k: &str) -> crate::backend::BResult<ObjectInfo> {
            wait_while(&self.hung);
            self.inner.head(b, k)
        }
        fn get_range(&self, b: &str, k: &str, s: u64, e: u64) -> crate::backend::BResult<(Vec<u8>, ObjectInfo)> {
            self.inner.get_range(b, k, s, e)
        }
        fn delete(&self, b: &str, k: &str) -> crate::backend::BResult<()> {
            self.inner.delete(b, k)
        }
        fn list(&self, b: &str, p: &str, a: &str, l: usize) -> crate::backend::BResult<Vec<crate::backend::ListEntry>> {
            self.inner.list(b, p, a, l)
        }
        fn advise(
            &self,
            b: &str,
            a: &crate::backend::Address,
            v: crate::backend::Advice,
        ) -> crate::backend::BResult<crate::backend::AdviceReport> {
            self.inner.advise(b, a, v)
        }
    }

    #[test]
    fn a_hung_call_fails_at_its_deadline_and_the_rest_go_on() {
        let tmp = tempfile::tempdir().unwrap();
        let dir = tmp.path();
        let hung = Arc::new(AtomicBool::new(true));
        let inner = Hanging { inner: LocalBackend::open(dir).unwrap(), hung: hung.clone(), puts_hung: Arc::default() };
        let d = Deadline::new(Arc::new(inner), Duration::from_millis(200));
        d.create_bucket("bkt").unwrap();
        d.put("bkt", "k", b"bytes", &ObjectInfo { size: 5, etag: "e".into(), ..Default::default() }).unwrap();
        let t = Instant::now();
        let e = d.head("bkt", "k").unwrap_err();
        assert!(matches!(&e, BackendError::Io(m) if m.contains("within 0.2 s")), "{e}");
        assert!(t.elapsed() < Duration::from_secs(10));
        assert_eq!(d.stuck(), 1);
        // Other calls are unaffected, and the backend answers again once the mount is back.
        assert_eq!(d.get_range("bkt", "k", 0, 5).unwrap().0, b"bytes");
        let (_, chunks) = d.get_stream("bkt", "k", 0, 5).unwrap();
        assert_eq!(chunks.map(|c| c.unwrap().to_vec()).collect::<Vec<_>>().concat(), b"bytes");
        hung.store(false, Ordering::SeqCst);
        assert_eq!(d.head("bkt", "k").unwrap().size, 5);
    }

    #[test]
    fn the_suite_passes_through_it_and_a_hung_commit_fails_at_its_deadline() {
        let tmp = tempfile::tempdir().unwrap();
        let dir = tmp.path();
        let local: Arc<dyn Backend> = Arc::new(LocalBackend::open(dir).unwrap());
        let d = Arc::new(Deadline::new(local, Duration::from_secs(30)));
        d.create_bucket("bkt").unwrap();
        crate::backend::conformance::run(d);
        // A backend that takes whole objects only (the default writer), its PUTs hung.
        let puts_hung = Arc::new(AtomicBool::new(true));
        let inner =
            Hanging { inner: LocalBackend::open(dir).unwrap(), hung: Arc::default(), puts_hung: puts_hung.clone() };
        let d = Arc::new(Deadline::new(Arc::new(inner), Duration::from_millis(200)));
        let mut w = d.clone().put_stream("bkt", "k", &ObjectInfo::default()).unwrap();
        w.write(bytes::Bytes::from_static(b"bytes")).unwrap();
        let t = Instant::now();
        let e = w.commit(&ObjectInfo { size: 5, etag: "e".into(), ..Default::default() }).unwrap_err();
        assert!(matches!(&e, BackendError::Io(m) if m.contains("within")), "{e}");
        assert!(t.elapsed() < Duration::from_secs(10));
        assert_eq!(d.stuck(), 1);
        puts_hung.store(false, Ordering::SeqCst);
    }
}
