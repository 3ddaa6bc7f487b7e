//! A test double at the [`Backend`] seam: the real local backend underneath, every streamed read
//! counted, and switches to hold a read at a gate (before it answers, or after its first chunk),
//! fail the next read (before or after its first chunk), or fail HEADs (a backend that is down);
//! hold a listing after the backend answered it; hold a HEAD before or after it answers, a HEAD
//! of a bucket after it answers, a bucket deletion before it runs; fail writes (puts and
//! deletes) or hold them before they run; backend hints (`advise`) are recorded.

use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::Arc;

use bytes::Bytes;
use parking_lot::{Condvar, Mutex};

use crate::backend::{
    Address, Advice, AdviceReport, BResult, Backend, BackendError, BucketInfo, ChunkIter, ListEntry, ObjectInfo,
};

/// A gate calls wait at until it is opened; it counts the calls that reached it.
#[derive(Default)]
pub(crate) struct Gate {
    /// (open, calls that reached the gate)
    state: Mutex<(bool, u64)>,
    cv: Condvar,
}

impl Gate {
    pub fn set(&self, open: bool) {
        self.state.lock().0 = open;
        self.cv.notify_all();
    }

    /// Waits until `n` calls in all have reached the gate.
    pub fn wait_reached(&self, n: u64) {
        let mut s = self.state.lock();
        while s.1 < n {
            self.cv.wait(&mut s);
        }
    }

    /// How many calls in all have reached the gate.
    pub fn reached(&self) -> u64 {
        self.state.lock().1
    }

    /// Counts the call, then waits while the gate is closed.
    pub fn pass(&self) {
        let mut s = self.state.lock();
        s.1 += 1;
        self.cv.notify_all();
        while !s.0 {
            self.cv.wait(&mut s);
        }
    }
}

/// See the module doc.
pub(crate) struct Counting {
    pub inner: Arc<dyn Backend>,
    pub gets: AtomicU64,
    /// Streamed reads wait here before answering.
    pub before: Arc<Gate>,
    /// Streamed reads wait here after their first chunk.
    pub after_first: Arc<Gate>,
    /// Listings wait here after the backend answered them.
    pub after_list: Arc<Gate>,
    /// The next streamed read fails before answering.
    pub fail_open: AtomicBool,
    /// The next streamed read fails after its first chunk.
    pub fail_midway: AtomicBool,
    /// HEAD fails with an I/O error.
    pub down: AtomicBool,
    /// Object HEADs wait here before the backend answers them.
    pub before_head: Arc<Gate>,
    /// Object HEADs wait here after the backend answered them.
    pub after_head: Arc<Gate>,
    /// Bucket HEADs wait here after the backend answered them.
    pub after_head_bucket: Arc<Gate>,
    /// Bucket deletions wait here before the backend runs them.
    pub before_delete_bucket: Arc<Gate>,
    /// Puts and deletes of objects fail with an I/O error.
    pub fail_writes: AtomicBool,
    /// Object puts and deletes wait here before the backend runs them.
    pub before_write: Arc<Gate>,
    /// Every `advise` call: (bucket, address, advice).
    pub advised: Mutex<Vec<(String, Address, Advice)>>,
}

impl Counting {
    pub fn new(inner: Arc<dyn Backend>) -> Arc<Counting> {
        let open = |o| {
            let g = Arc::new(Gate::default());
            g.set(o);
            g
        };
        Arc::new(Counting {
            inner,
            gets: AtomicU64::new(0),
            before: open(true),
            after_first: open(true),
            after_list: open(true),
            fail_open: AtomicBool::new(false),
            fail_midway: AtomicBool::new(false),
            down: AtomicBool::new(false),
            before_head: open(true),
            after_head: open(true),
            after_head_bucket: open(true),
            before_delete_bucket: open(true),
            fail_writes: AtomicBool::new(false),
            before_write: open(true),
            advised: Mutex::new(Vec::new()),
        })
    }

    pub fn gets(&self) -> u64 {
        self.gets.load(Ordering::SeqCst)
    }

    fn write_fault(&self) -> BResult<()> {
        self.before_write.pass();
        if self.fail_writes.load(Ordering::SeqCst) {
            return Err(BackendError::Io("write refused (test)".into()));
        }
        Ok(())
    }
}

impl Backend for Counting {
    fn list_buckets(&self) -> BResult<Vec<BucketInfo>> {
        self.inner.list_buckets()
    }
    fn create_bucket(&self, bucket: &str) -> BResult<()> {
        self.inner.create_bucket(bucket)
    }
    fn head_bucket(&self, bucket: &str) -> BResult<BucketInfo> {
        let r = self.inner.head_bucket(bucket);
        self.after_head_bucket.pass();
        r
    }
    fn delete_bucket(&self, bucket: &str) -> BResult<()> {
        self.before_delete_bucket.pass();
        self.inner.delete_bucket(bucket)
    }
    fn put(&self, bucket: &str, key: &str, data: &[u8], info: &ObjectInfo) -> BResult<()> {
        self.write_fault()?;
        self.inner.put(bucket, key, data, info)
    }
    fn put_owned(&self, bucket: &str, key: &str, data: bytes::Bytes, info: &ObjectInfo) -> BResult<()> {
        self.write_fault()?;
        self.inner.put_owned(bucket, key, data, info)
    }
    fn put_stream(
        self: Arc<Self>,
        bucket: &str,
        key: &str,
        info: &ObjectInfo,
    ) -> BResult<Box<dyn crate::backend::ObjectWriter>> {
        self.write_fault()?;
        self.inner.clone().put_stream(bucket, key, info)
    }
    fn head(&self, bucket: &str, key: &str) -> BResult<ObjectInfo> {
        if self.down.load(Ordering::SeqCst) {
            return Err(BackendError::Io("connection refused (test)".into()));
        }
        self.before_head.pass();
        let r = self.inner.head(bucket, key);
        self.after_head.pass();
        r
    }
    fn get_range(&self, bucket: &str, key: &str, start: u64, end: u64) -> BResult<(Vec<u8>, ObjectInfo)> {
        self.inner.get_range(bucket, key, start, end)
    }
    fn get_stream(&self, bucket: &str, key: &str, start: u64, end: u64) -> BResult<(ObjectInfo, ChunkIter)> {
        self.gets.fetch_add(1, Ordering::SeqCst);
        self.before.pass();
        if self.fail_open.swap(false, Ordering::SeqCst) {
            return Err(BackendError::Io("connection reset (test)".into()));
        }
        let (info, chunks) = self.inner.get_stream(bucket, key, start, end)?;
        let (gate, fail) = (self.after_first.clone(), self.fail_midway.swap(false, Ordering::SeqCst));
        let mut n = 0;
        let chunks = chunks.map(move |c: BResult<Bytes>| {
            n += 1;
            if n == 2 {
                gate.pass();
                if fail {
                    return Err(BackendError::Io("connection reset mid-body (test)".into()));
                }
            }
            c
        });
        Ok((info, Box::new(chunks)))
    }
    fn delete(&self, bucket: &str, key: &str) -> BResult<()> {
        self.write_fault()?;
        self.inner.delete(bucket, key)
    }
    fn list(&self, bucket: &str, prefix: &str, after: &str, limit: usize) -> BResult<Vec<ListEntry>> {
        let entries = self.inner.list(bucket, prefix, after, limit);
        self.after_list.pass();
        entries
    }
    fn check_key(&self, key: &str) -> BResult<()> {
        self.inner.check_key(key)
    }
    fn advise(&self, bucket: &str, address: &Address, advice: Advice) -> BResult<AdviceReport> {
        self.advised.lock().push((bucket.to_string(), address.clone(), advice));
        self.inner.advise(bucket, address, advice)
    }
}
