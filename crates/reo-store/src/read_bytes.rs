//! Zero-copy reads: [`ReadBytes`], the verified chunk bodies of a read left in the buffers the
//! devices read them into and handed to the caller as an ordered list of slices.
//!
//! Why: a read fetches each device's chunks in runs of about 1 MiB, and every chunk of a full row
//! ends in its 512-byte trailer slot, so the bodies of a run are not contiguous and one device read cannot land
//! them in one output buffer. A vectored read (one vector per body and one per slot) was measured
//! slower than the copy it saves on the reference machine's disk, and copying the bodies out is a
//! pass over every byte that cost a measurable share of get bandwidth (docs/BENCHMARKS.md). A
//! caller that streams the bytes (the gateway's GET) or only compares them needs no contiguous
//! copy: it takes the slices. The run buffers go back to the store's pool when the [`ReadBytes`],
//! or the last [`Bytes`] sharing one ([`ReadBytes::into_bytes`]), is dropped. The buffers
//! themselves are never handed out: besides the verified bodies they hold trailer slots, chunks
//! that failed verification, parity and stale bytes of earlier operations.

use crate::bufpool::BufPool;
use crate::error::Result;
use crate::hedge::Hedge;
use crate::location::Location;
use crate::read::{Queued, ReadPlan};
use crate::stats::Stat;
use crate::store::Inner;
use bytes::Bytes;
use reo_media::AlignedBuf;
use std::ops::Range;

/// One buffer of a [`ReadBytes`]: a run buffer of the store's pool (given back when dropped) or
/// bytes a degraded read rebuilt. Private: only verified ranges of it leave the store.
struct Held(Kind);

enum Kind {
    Pooled(Option<AlignedBuf>, &'static BufPool),
    Owned(Vec<u8>),
    /// Bytes the caller already shares (a copy kept in memory above the store).
    Shared(Bytes),
}

impl Held {
    fn pooled(buf: AlignedBuf, pool: &'static BufPool) -> Held {
        Held(Kind::Pooled(Some(buf), pool))
    }

    /// Bytes of a pooled buffer this holds back from the pool (0 for owned bytes).
    fn pinned(&self) -> usize {
        match &self.0 {
            Kind::Pooled(Some(b), _) => b.capacity(),
            _ => 0,
        }
    }
}

/// A pooled buffer of which a read uses at most 1/`COMPACT_RATIO` is copied out and given back.
const COMPACT_RATIO: usize = 4;

/// Copies the slices of every pooled buffer that they use little of (at most a
/// [`COMPACT_RATIO`]th) into a vector of their own and gives the buffer back to the pool at once.
/// Why: a slice keeps its whole run buffer (a chunk to 1 MiB of chunks, at most twice that
/// with the pool's size bound and the 2 MiB steps of buffers from 1 MiB up) out of the pool for
/// as long as the caller holds it — for a small range read streamed to a slow client, a whole
/// run pinned for a few KiB. A read that uses its whole run never qualifies: the pool hands a
/// run at most twice its length ([`crate::bufpool`]), and the bodies are all of a run but its
/// trailer slots. Whole blobs and large ranges copy nothing.
fn compact(bufs: &mut [Held], segs: &mut [(usize, Range<usize>)]) {
    for (b, held) in bufs.iter_mut().enumerate() {
        let pinned = held.pinned();
        let used: usize = segs.iter().filter(|(sb, _)| *sb == b).map(|(_, r)| r.len()).sum();
        if pinned == 0 || used.saturating_mul(COMPACT_RATIO) > pinned {
            continue;
        }
        let mut own = Vec::with_capacity(used);
        for (_, r) in segs.iter_mut().filter(|(sb, _)| *sb == b) {
            let at = own.len();
            own.extend_from_slice(&held.as_ref()[r.clone()]);
            *r = at..own.len();
        }
        // The pooled buffer goes back as the old `Held` drops.
        *held = Held(Kind::Owned(own));
    }
}

impl AsRef<[u8]> for Held {
    fn as_ref(&self) -> &[u8] {
        match &self.0 {
            Kind::Pooled(b, _) => b.as_deref().unwrap_or_default(),
            Kind::Owned(v) => v,
            Kind::Shared(b) => b,
        }
    }
}

impl Drop for Held {
    fn drop(&mut self) {
        if let Kind::Pooled(b, pool) = &mut self.0 {
            if let Some(b) = b.take() {
                pool.give(b);
            }
        }
    }
}

/// Verified bytes of a read: slices of a few buffers, in order.
pub struct ReadBytes {
    bufs: Vec<Held>,
    /// (buffer, byte range in it), in the order of the bytes.
    segs: Vec<(usize, Range<usize>)>,
    len: usize,
}

impl ReadBytes {
    /// Total length.
    pub fn len(&self) -> usize {
        self.len
    }

    /// True for a read of no bytes.
    pub fn is_empty(&self) -> bool {
        self.len == 0
    }

    /// Bytes of the store's pooled I/O buffers this keeps from the pool until it is dropped
    /// (whole buffers: a slice pins the run buffer it lies in).
    pub fn pinned_bytes(&self) -> usize {
        self.bufs.iter().map(Held::pinned).sum()
    }

    /// The bytes, as consecutive slices.
    pub fn slices(&self) -> impl Iterator<Item = &[u8]> + '_ {
        self.segs.iter().map(|(b, r)| &self.bufs[*b].as_ref()[r.clone()])
    }

    /// The bytes copied into one vector (no copy when they are one owned vector already).
    pub fn into_vec(mut self) -> Vec<u8> {
        // One slice that is a whole owned vector (a small range copied out, a rebuilt chunk): it.
        if let [(b, r)] = &self.segs[..] {
            if let Held(Kind::Owned(v)) = &mut self.bufs[*b] {
                if r.start == 0 && r.end == v.len() {
                    return std::mem::take(v);
                }
            }
        }
        let mut out = Vec::with_capacity(self.len);
        for s in self.slices() {
            out.extend_from_slice(s);
        }
        out
    }

    /// The slices as shared [`Bytes`], in order, for callers that pass them on (a response
    /// body): no copy; each buffer goes back to the pool when the last `Bytes` of it is dropped.
    pub fn into_bytes(self) -> impl Iterator<Item = Bytes> {
        let shared: Vec<Bytes> = self
            .bufs
            .into_iter()
            .map(|mut h| match &mut h.0 {
                Kind::Shared(b) => std::mem::take(b),
                _ => Bytes::from_owner(h),
            })
            .collect();
        self.segs.into_iter().map(move |(b, r)| shared[b].slice(r))
    }
}

impl From<Vec<u8>> for ReadBytes {
    fn from(v: Vec<u8>) -> ReadBytes {
        let len = v.len();
        ReadBytes { bufs: vec![Held(Kind::Owned(v))], segs: vec![(0, 0..len)], len }
    }
}

impl From<Bytes> for ReadBytes {
    /// Shared bytes, not copied (the caller's own, e.g. a memory tier's copy of a blob).
    fn from(b: Bytes) -> ReadBytes {
        let len = b.len();
        ReadBytes { bufs: vec![Held(Kind::Shared(b))], segs: vec![(0, 0..len)], len }
    }
}

impl PartialEq<[u8]> for ReadBytes {
    fn eq(&self, other: &[u8]) -> bool {
        if self.len != other.len() {
            return false;
        }
        let mut rest = other;
        self.slices().all(|s| {
            let (head, tail) = rest.split_at(s.len());
            rest = tail;
            head == s
        })
    }
}

impl std::fmt::Debug for ReadBytes {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "ReadBytes({} bytes in {} slices of {} buffers)", self.len, self.segs.len(), self.bufs.len())
    }
}

/// A zero-copy read whose device reads are queued on the lanes but not yet waited for
/// ([`crate::Store::begin_read_bytes`]). A caller reading many blobs starts the next ones before
/// finishing the first, so that each device's lane always holds a read and a device that is
/// ahead of the others runs on into the next blob instead of waiting for the slowest device of
/// this one. Dropping it unfinished waits for its reads (their errors are counted) and gives
/// their buffers back.
pub struct PendingRead<'a> {
    inner: &'a Inner,
    loc: Location,
    from: u64,
    to: u64,
    plan: ReadPlan,
    /// `None` once finished.
    queued: Option<Queued<'a>>,
    hedge: Hedge,
}

impl PendingRead<'_> {
    /// Waits for the reads, verifies every chunk, rebuilds what is missing or bad; as
    /// [`crate::Store::read_bytes`].
    pub fn finish(mut self) -> Result<ReadBytes> {
        let queued = self.queued.take().expect("a pending read is finished once");
        let (inner, loc, from, to) = (self.inner, self.loc, self.from, self.to);
        let r = match inner.finish_read_bytes(&loc, from, to, &self.plan, queued, &self.hedge) {
            // Left a slow device behind and could not do without it: read again, waiting for it.
            Err(_) if self.hedge.abandoned() => {
                let retry = self.hedge.retry();
                let plan = inner.plan_read(&loc, from, to, &retry);
                let queued = inner.submit_fetch(&loc, &plan.chunks, &retry);
                inner.finish_read_bytes(&loc, from, to, &plan, queued, &retry)
            }
            r => r,
        };
        inner.stale_or(&loc, r)
    }
}

impl Drop for PendingRead<'_> {
    /// Unfinished (its caller gave up, e.g. on another fragment's error): waits for its reads so
    /// that their device errors and checksum failures are still counted against the devices, and
    /// gives their buffers back to the pool. Nothing is rebuilt.
    fn drop(&mut self) {
        if let Some(queued) = self.queued.take() {
            let dests = (0..self.plan.chunks.len()).map(|_| None).collect();
            let (runs, _) = self.inner.complete_fetch(&self.loc, &self.plan.chunks, queued, dests, &self.hedge);
            for b in runs {
                self.inner.bufs.give(b);
            }
        }
    }
}

impl Inner {
    /// [`Inner::read`] without the copy into one output buffer: the same chunks fetched and
    /// verified in the same runs (or rebuilt), returned where they lie.
    pub(crate) fn read_bytes(&self, loc: &Location, from: u64, to: u64) -> Result<ReadBytes> {
        self.begin_read_bytes(loc, from, to)?.finish()
    }

    /// [`Inner::read_bytes`] with every device read on the caller's thread ([`Hedge::on_caller`]).
    pub(crate) fn read_bytes_on_caller(&self, loc: &Location, from: u64, to: u64) -> Result<ReadBytes> {
        self.begin_read_bytes_with(loc, from, to, Hedge::for_blob(self, loc).on_caller())?.finish()
    }

    /// Checks the read and queues its device reads (see [`PendingRead`]).
    pub(crate) fn begin_read_bytes(&self, loc: &Location, from: u64, to: u64) -> Result<PendingRead<'_>> {
        self.begin_read_bytes_with(loc, from, to, Hedge::for_blob(self, loc))
    }

    fn begin_read_bytes_with(&self, loc: &Location, from: u64, to: u64, hedge: Hedge) -> Result<PendingRead<'_>> {
        self.check_read(loc, from, to)?;
        let plan = self.plan_read(loc, from, to, &hedge);
        let queued = self.submit_fetch(loc, &plan.chunks, &hedge);
        Ok(PendingRead { inner: self, loc: *loc, from, to, plan, queued: Some(queued), hedge })
    }

    fn finish_read_bytes(
        &self,
        loc: &Location,
        from: u64,
        to: u64,
        plan: &ReadPlan,
        queued: Queued<'_>,
        hedge: &Hedge,
    ) -> Result<ReadBytes> {
        let dests = (0..plan.chunks.len()).map(|_| None).collect();
        let (runs, got) = self.complete_fetch(loc, &plan.chunks, queued, dests, hedge);
        let missing: Vec<usize> = (0..plan.want.len()).filter(|&i| got[i].is_none()).collect();
        let rebuilt = if missing.is_empty() {
            Ok(Vec::new())
        } else {
            self.rebuild(loc, &plan.shape, &plan.rows, &plan.want, &plan.extra, (&runs, &got), &missing, hedge)
        };
        // Held from here on: an error below gives every run buffer back to the pool.
        let mut bufs: Vec<Held> = runs.into_iter().map(|b| Held::pooled(b, self.bufs)).collect();
        let mut rebuilt = rebuilt?.into_iter();
        let mut used = vec![false; bufs.len()];
        let mut segs: Vec<(usize, Range<usize>)> = Vec::with_capacity(plan.spans.len());
        for (i, &(x, y, a)) in plan.spans.iter().enumerate() {
            let (lo, hi) = ((x - a) as usize, (y - a) as usize);
            let (b, range) = match got[i] {
                Some((r, off)) => {
                    used[r] = true;
                    (r, off + lo..off + hi)
                }
                None => {
                    let body = rebuilt.next().expect("one rebuilt body per missing chunk");
                    bufs.push(Held(Kind::Owned(body)));
                    (bufs.len() - 1, lo..hi)
                }
            };
            match segs.last_mut() {
                Some((lb, lr)) if *lb == b && lr.end == range.start => lr.end = range.end,
                _ => segs.push((b, range)),
            }
        }
        // Runs that only held the columns of a reconstruction go back to the pool now.
        for (held, _) in bufs.iter_mut().zip(&used).filter(|(_, u)| !**u) {
            *held = Held(Kind::Owned(Vec::new()));
        }
        compact(&mut bufs, &mut segs);
        if !missing.is_empty() {
            self.stats.add(Stat::DegradedReads, 1);
        }
        Ok(ReadBytes { bufs, segs, len: (to - from) as usize })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn pooled(bytes: &[u8], pool: &'static BufPool) -> Held {
        let mut b = AlignedBuf::with_capacity(bytes.len());
        b.extend_from_slice(bytes);
        Held::pooled(b, pool)
    }

    #[test]
    fn slices_compare_and_flatten_in_order() {
        let pool: &'static BufPool = Box::leak(Box::new(BufPool::new(1 << 20)));
        let bufs = vec![pooled(b"0123456789", pool), Held(Kind::Owned(b"abcdef".to_vec()))];
        let r = ReadBytes { bufs, segs: vec![(0, 2..5), (1, 1..4), (0, 8..10)], len: 8 };
        assert_eq!(r.slices().collect::<Vec<_>>(), [&b"234"[..], b"bcd", b"89"]);
        assert!(r == b"234bcd89"[..]);
        assert!(r != b"234bcd88"[..], "a differing byte");
        assert!(r != b"234bcd8"[..], "a shorter slice");
        assert_eq!(format!("{r:?}"), "ReadBytes(8 bytes in 3 slices of 2 buffers)");
        assert_eq!(r.into_vec(), b"234bcd89");
        let from: ReadBytes = b"xyz".to_vec().into();
        assert_eq!((from.len(), from.into_vec()), (3, b"xyz".to_vec()));
    }

    /// A buffer a read uses a quarter of or less is copied out and given back at once; one it
    /// uses more of stays shared; the bytes are the same either way.
    #[test]
    fn little_used_buffers_are_copied_out_and_given_back() {
        let pool: &'static BufPool = Box::leak(Box::new(BufPool::new(1 << 20)));
        let big: Vec<u8> = (0..8192u32).map(|i| (i * 7) as u8).collect();
        let mut bufs = vec![pooled(&big, pool), pooled(&big[..4096], pool), Held(Kind::Owned(vec![5; 10]))];
        // Buffer 0: 100 + 1,000 bytes of 8 KiB (little); buffer 1: 3,000 of 4 KiB (most).
        let mut segs = vec![(0, 10..110), (2, 0..10), (1, 0..3000), (0, 5000..6000)];
        let want: Vec<u8> = segs.iter().flat_map(|(b, r)| bufs[*b].as_ref()[r.clone()].to_vec()).collect();
        compact(&mut bufs, &mut segs);
        assert!(pool.idle_bytes() >= 8192, "buffer 0 went back to the pool");
        assert_eq!((bufs[0].pinned(), bufs[1].pinned() >= 4096), (0, true), "buffer 1 stays shared");
        let r = ReadBytes { bufs, segs, len: want.len() };
        assert!(r == want[..]);
    }

    #[test]
    fn pooled_buffers_go_back_to_the_pool_when_the_last_slice_drops() {
        let pool: &'static BufPool = Box::leak(Box::new(BufPool::new(1 << 20)));
        let bufs = vec![pooled(&[7; 4096], pool), Held(Kind::Owned(vec![9; 10]))];
        let r = ReadBytes { bufs, segs: vec![(0, 0..100), (1, 2..5), (0, 200..4096)], len: 3999 };
        let mut parts: Vec<Bytes> = r.into_bytes().collect();
        assert_eq!(parts.iter().map(|b| b.len()).collect::<Vec<_>>(), [100, 3, 3896]);
        assert_eq!((&parts[0][..], &parts[1][..]), (&[7; 100][..], &[9; 3][..]));
        let last = parts.pop().unwrap();
        drop(parts);
        assert_eq!(pool.idle_bytes(), 0, "the last slice still holds the pooled buffer");
        assert_eq!(&last[..], &[7; 3896][..]);
        drop(last);
        assert!(pool.idle_bytes() >= 4096, "given back with its last slice");
    }
}
