//! The metadata journal: a group-committing writer of record batches, replicated on every device.
//!
//! Mutations append encoded records to an in-memory queue (under the checkpoint gate, see
//! `metalog.rs`). One writer thread takes everything queued, frames it as one batch, writes the batch
//! at the same offset of every healthy device, fdatasyncs them all — which also makes the data the
//! records point to durable, since data was written before its record was queued — and only then
//! acknowledges the waiters. A batch is written only after the previous one is synced, so after a
//! crash at most the last batch can point at data that never reached the devices; recovery
//! verifies exactly that batch.
//!
//! Group commit: records nobody waits for (durability `None`) wait up to
//! `StoreConfig::journal_delay` for company before the writer takes them; a waiter (a `Sync` put
//! or free, a flush) or a large queue makes the batch due at once, with everything queued. A
//! *rider* waits without making it due: its records go with the next batch anything else makes
//! due (at the latest the delay's), at no journal write of their own. A rider may bound its wait:
//! the batch is then due at that bound if nothing made it due before — concurrent callers that
//! each need their records durable soon, but not at once, share one batch.
//!
//! Anticipation: a small `Sync` put announces its record before it writes its data
//! ([`Journal::expect`]). A batch due only because of its waiters is then held until the records
//! announced before it became due are queued, for at most [`GATHER`]: concurrent small puts,
//! whose data writes overlap, share one batch instead of taking one each behind the previous
//! one's fdatasync. A lone put announces nothing that is not already queued, and is never held.
//!
//! When a batch does not fit in the journal region, the writer takes a checkpoint instead (the
//! state then already includes every queued record) and starts a new journal generation.

use crate::bytes::Writer;
use crate::error::{Error, Result};
use parking_lot::{Condvar, Mutex};
use std::sync::mpsc;
use std::time::{Duration, Instant};

/// Longest a due batch waits for the records of announced puts ([`Journal::expect`]): about the
/// time a small put's data write takes; a slower one waits for the next batch.
const GATHER: Duration = Duration::from_millis(1);

/// A waiter's answer: the batch holding its records is durable, or why not.
pub type Ack = std::result::Result<(), String>;

/// Records waiting for the writer.
#[derive(Default)]
struct Queue {
    records: Writer,
    waiters: Vec<mpsc::Sender<Ack>>,
    /// Of `waiters`, how many ride along ([`Journal::enqueue_riding`]): they do not make a batch
    /// due, the others do.
    riders: usize,
    /// The earliest bound of the riders queued ([`Journal::enqueue_riding`]'s `within`): the
    /// batch is due then.
    due_by: Option<Instant>,
    /// Puts that announced a `Sync` record and have not queued it yet ([`Journal::expect`]):
    /// those announced in the current epoch, and those announced before a batch began to
    /// gather (which bumps the epoch). A gather waits only for the latter.
    epoch: u64,
    coming_now: usize,
    coming_before: usize,
    stop: bool,
    /// Stop without writing what is queued (simulated crash).
    kill: bool,
    /// Checkpoints that took the queue ([`Journal::drain`]), and the latest of them whose
    /// checkpoint was written: a batch the writer took before such a checkpoint is in its
    /// snapshot, and must not be written after it (see [`Journal::covered_since`]).
    drains: u64,
    covered: u64,
    /// A checkpoint drained the queue and has not succeeded or failed yet: the writer takes no
    /// batch meanwhile. Why: should the checkpoint fail, its records go back to the queue
    /// ([`Journal::undrain`]), and a batch of newer records taken in between would be written
    /// before them — a `Free` before the `Put` it frees, replayed in that order, brings the
    /// blob back.
    draining: bool,
    /// Records queued by [`Journal::enqueue_urgent`]: the next batch is due at once.
    urgent: bool,
}

/// Records the writer took, with their waiters and the drain count at the time.
pub struct Batch {
    pub records: Vec<u8>,
    pub waiters: Vec<mpsc::Sender<Ack>>,
    pub drains: u64,
}

/// The shared queue between mutators and the writer thread.
#[derive(Default)]
pub struct Journal {
    queue: Mutex<Queue>,
    wake: Condvar,
    /// Records nobody waits for are written at once when this many bytes are queued.
    eager_bytes: usize,
    /// Otherwise, how long the first of them may wait for more to join its batch (group commit):
    /// `Some(0)` writes a batch per wake-up. `None` (byte-less, simulated media, where nothing can
    /// crash and a wake-up per record would cost more than the replay) wakes the writer only at
    /// [`Journal::eager_bytes`], and then takes whatever is queued.
    delay: Option<Duration>,
    /// How long a batch due for its waiters waits for announced records ([`GATHER`]).
    gather: Duration,
}

/// What a checkpoint took from the queue ([`Journal::drain`]): the records its snapshot covers
/// and their waiters, to acknowledge once it is written ([`Journal::covered`]) or to give back
/// if it fails ([`Journal::undrain`]).
pub struct Drained {
    records: Vec<u8>,
    waiters: Vec<mpsc::Sender<Ack>>,
    /// Of `waiters`, the riders, and their earliest bound.
    riders: usize,
    due_by: Option<Instant>,
    /// The drain's number.
    number: u64,
}

/// How an enqueue waits for its records.
#[derive(Clone, Copy, PartialEq, Eq)]
enum Wait {
    /// Not at all.
    No,
    /// For a batch it makes due at once.
    Due,
    /// For the next batch something else makes due, or that is due at the bound if any.
    Ride(Option<Duration>),
}

/// A pending acknowledgement.
pub struct Pending(Option<mpsc::Receiver<Ack>>);

impl Pending {
    /// Waits until the records are durable (no-op for a non-waiting enqueue).
    pub fn wait(self) -> Result<()> {
        match self.0 {
            None => Ok(()),
            Some(rx) => match rx.recv() {
                Ok(Ok(())) => Ok(()),
                Ok(Err(m)) => Err(Error::Journal(m)),
                Err(_) => Err(Error::Closed),
            },
        }
    }
}

impl Journal {
    /// A journal taking a batch without waiting at `eager_bytes` queued, and otherwise after
    /// `delay` (see [`Journal::take`]).
    pub fn new(eager_bytes: usize, delay: Option<Duration>) -> Journal {
        Journal { eager_bytes, delay, gather: GATHER, ..Default::default() }
    }

    /// Queues records written by `f`; with `wait`, the returned [`Pending`] resolves when they
    /// are durable.
    pub fn enqueue(&self, wait: bool, f: impl FnOnce(&mut Writer)) -> Result<Pending> {
        self.enqueue_as(if wait { Wait::Due } else { Wait::No }, false, f)
    }

    /// Announces a `Sync` record its caller will queue shortly (a put about to write its data):
    /// a batch due meanwhile waits for it, up to [`GATHER`] (see the module doc). The record must
    /// be queued before the returned guard is dropped; dropping it without one (a failed put)
    /// withdraws the announcement.
    pub fn expect(&self) -> Expected<'_> {
        let mut q = self.queue.lock();
        q.coming_now += 1;
        Expected { journal: self, epoch: q.epoch }
    }

    /// Queues records written by `f` with a rider: the returned [`Pending`] resolves when they
    /// are durable, in the next batch something else makes due, or, with `within`, in the batch
    /// due then at the latest (see the module doc).
    pub fn enqueue_riding(&self, within: Option<Duration>, f: impl FnOnce(&mut Writer)) -> Result<Pending> {
        self.enqueue_as(Wait::Ride(within), false, f)
    }

    /// Queues records written by `f` that must not wait out the group-commit delay although
    /// nobody waits for them: a device's stale mark, which the writer itself may set when the
    /// device fails a journal write (it cannot wait for its own batch), and whose loss in a crash
    /// within the delay would let the device back in at the next open.
    pub fn enqueue_urgent(&self, f: impl FnOnce(&mut Writer)) -> Result<()> {
        self.enqueue_as(Wait::No, true, f).map(|_| ())
    }

    fn enqueue_as(&self, wait: Wait, urgent: bool, f: impl FnOnce(&mut Writer)) -> Result<Pending> {
        let mut q = self.queue.lock();
        if q.stop {
            return Err(Error::Closed);
        }
        // The writer sleeps untimed only on an empty queue, so only the first record after it
        // drained the queue (which starts its group-commit timer), the record that crosses
        // `eager_bytes`, or a waiter needs to wake it: the others ride along.
        let before = q.records.0.len();
        let idle = before == 0 && q.waiters.is_empty();
        f(&mut q.records);
        q.urgent |= urgent;
        let crossed = before < self.eager_bytes && q.records.0.len() >= self.eager_bytes;
        // A rider wakes the writer only to start the delay's clock (without a delay, to take
        // the batch: nothing else may come to make it due).
        let riding = matches!(wait, Wait::Ride(_));
        let mut due = crossed || (before == 0 && self.delay.is_some()) || (riding && (idle || self.delay.is_none()));
        // A bound past what an instant holds is no bound (the delay's applies).
        if let Some(by) = match wait {
            Wait::Ride(Some(within)) => Instant::now().checked_add(within),
            _ => None,
        } {
            // An earlier bound: the writer's timed wait must be shortened.
            due |= q.due_by.is_none_or(|t| by < t);
            q.due_by = earliest(q.due_by, Some(by));
        }
        let rx = if wait == Wait::No {
            None
        } else {
            let (tx, rx) = mpsc::channel();
            q.waiters.push(tx);
            q.riders += usize::from(riding);
            Some(rx)
        };
        drop(q);
        if due || wait == Wait::Due || urgent {
            self.wake.notify_one();
        }
        Ok(Pending(rx))
    }

    /// Takes everything queued once it is due — a waiter, [`Journal::eager_bytes`] queued, the
    /// group-commit delay of the oldest record over, or the journal stopping — waiting until
    /// then. Returns `None` when the writer must exit.
    pub fn take(&self) -> Option<Batch> {
        let mut q = self.queue.lock();
        let mut deadline: Option<Instant> = None;
        let mut gather: Option<Instant> = None;
        loop {
            if q.kill {
                q.waiters.clear();
                q.riders = 0;
                q.due_by = None;
                return None;
            }
            let queued = !q.records.0.is_empty() || !q.waiters.is_empty();
            if q.draining {
                self.wake.wait(&mut q);
                continue;
            }
            if queued {
                let forced = q.stop
                    || q.urgent
                    || q.records.0.len() >= self.eager_bytes
                    || q.due_by.is_some_and(|t| t <= Instant::now())
                    || self.delay.is_none_or(|d| *deadline.get_or_insert_with(|| Instant::now() + d) <= Instant::now());
                let waited = q.waiters.len() > q.riders;
                if waited && !forced {
                    // Due for its waiters: gather the records announced before now first (not
                    // those announced while it waits: under steady load there always are some).
                    let until = *gather.get_or_insert_with(|| {
                        q.coming_before += std::mem::take(&mut q.coming_now);
                        q.epoch += 1;
                        Instant::now() + self.gather
                    });
                    let left = until.saturating_duration_since(Instant::now());
                    if q.coming_before > 0 && !left.is_zero() {
                        self.wake.wait_for(&mut q, left);
                        continue;
                    }
                }
                if forced || waited {
                    // The next batch starts with this one's capacity: no regrowth from empty.
                    let cap = q.records.0.capacity();
                    let records = std::mem::replace(&mut q.records.0, Vec::with_capacity(cap));
                    q.urgent = false;
                    q.riders = 0;
                    q.due_by = None;
                    return Some(Batch { records, waiters: std::mem::take(&mut q.waiters), drains: q.drains });
                }
            } else if q.stop {
                return None;
            }
            match earliest(deadline, q.due_by).filter(|_| queued) {
                Some(d) => {
                    let left = d.saturating_duration_since(Instant::now());
                    self.wake.wait_for(&mut q, left);
                }
                None => self.wake.wait(&mut q),
            }
        }
    }

    /// Takes whatever is queued without waiting, for a checkpoint (which must then either
    /// [`Journal::covered`] or [`Journal::undrain`] it).
    pub fn drain(&self) -> Drained {
        let mut q = self.queue.lock();
        q.drains += 1;
        q.draining = true;
        let riders = std::mem::take(&mut q.riders);
        Drained {
            records: std::mem::take(&mut q.records.0),
            waiters: std::mem::take(&mut q.waiters),
            riders,
            due_by: q.due_by.take(),
            number: q.drains,
        }
    }

    /// Gives back what a checkpoint drained but could not write: the records go before anything
    /// queued since (they are older, and a crash may lose `None` records only newest first), and
    /// their waiters wait for the batch that writes them instead of failing with the checkpoint.
    pub fn undrain(&self, drained: Drained) {
        let Drained { records, waiters, riders, due_by, .. } = drained;
        let mut q = self.queue.lock();
        q.draining = false;
        q.riders += riders;
        q.due_by = earliest(q.due_by, due_by);
        let mut all = records;
        all.extend_from_slice(&q.records.0);
        q.records.0 = all;
        let mut w = waiters;
        w.append(&mut q.waiters);
        q.waiters = w;
        drop(q);
        self.wake.notify_all();
    }

    /// The checkpoint of `drained` is written: the records it took are durable in it, and their
    /// waiters are told so.
    pub fn covered(&self, drained: Drained) {
        let mut q = self.queue.lock();
        q.covered = q.covered.max(drained.number);
        q.draining = false;
        drop(q);
        self.wake.notify_all();
        ack_all(drained.waiters, &Ok(()));
    }

    /// Was a checkpoint that drained the queue after a batch was taken (at `drains`) written?
    /// Then the batch's records are in its snapshot. Asked by the writer holding the journal
    /// position, so no checkpoint is half-done.
    pub fn covered_since(&self, drains: u64) -> bool {
        self.queue.lock().covered > drains
    }

    /// Asks the writer to exit after writing what is queued (`kill`: without writing it).
    pub fn stop(&self, kill: bool) {
        let mut q = self.queue.lock();
        q.stop = true;
        q.kill |= kill;
        drop(q);
        self.wake.notify_all();
    }
}

/// An announced record ([`Journal::expect`]); dropped once it is queued, or withdrawn.
pub struct Expected<'a> {
    journal: &'a Journal,
    /// The epoch it was announced in.
    epoch: u64,
}

impl Drop for Expected<'_> {
    fn drop(&mut self) {
        let mut q = self.journal.queue.lock();
        if self.epoch == q.epoch {
            q.coming_now -= 1;
            return;
        }
        q.coming_before -= 1;
        let last = q.coming_before == 0;
        drop(q);
        if last {
            // The writer gathering for it takes its batch now.
            self.journal.wake.notify_one();
        }
    }
}

/// Held by the journal writer thread. If the thread dies of a panic (a bug), the journal is
/// closed: the waiters queued get an error instead of waiting forever, and later operations fail
/// with `Closed`, instead of queueing records no thread will ever write.
pub struct WriterGuard<'a>(&'a Journal);

impl Journal {
    /// The guard the writer thread holds (see [`WriterGuard`]).
    pub fn writer_guard(&self) -> WriterGuard<'_> {
        WriterGuard(self)
    }

    /// Reopens a stopped journal (tests standing in for the writer thread).
    #[cfg(test)]
    pub fn reopen(&self) {
        self.queue.lock().stop = false;
    }
}

impl Drop for WriterGuard<'_> {
    fn drop(&mut self) {
        if !std::thread::panicking() {
            return;
        }
        let mut q = self.0.queue.lock();
        q.stop = true;
        q.kill = true;
        let waiters = std::mem::take(&mut q.waiters);
        q.riders = 0;
        q.due_by = None;
        drop(q);
        self.0.wake.notify_all();
        ack_all(waiters, &Err("the journal writer thread panicked; reopen the store".into()));
    }
}

/// The earlier of two optional instants.
fn earliest(a: Option<Instant>, b: Option<Instant>) -> Option<Instant> {
    match (a, b) {
        (Some(a), Some(b)) => Some(a.min(b)),
        (a, b) => a.or(b),
    }
}

/// Sends `ack` to every waiter.
pub fn ack_all(waiters: Vec<mpsc::Sender<Ack>>, ack: &Ack) {
    for w in waiters {
        let _ = w.send(ack.clone());
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::sync::Arc;

    /// A journal whose group-commit delay is `delay`, with the store's eager threshold.
    fn journal(delay: Option<Duration>) -> Arc<Journal> {
        Arc::new(Journal { eager_bytes: 64, delay, ..Default::default() })
    }

    /// Runs `take` on a thread; the batch's record bytes, or a failure if it has not returned
    /// within 30 s (when the writer would wait out an hour-long delay it must not wait for).
    fn take_soon(j: &Arc<Journal>) -> Option<Vec<u8>> {
        let (tx, rx) = mpsc::channel();
        let j = j.clone();
        std::thread::spawn(move || {
            let _ = tx.send(j.take().map(|b| b.records));
        });
        rx.recv_timeout(Duration::from_secs(30)).expect("take returned at once")
    }

    const HOUR: Duration = Duration::from_secs(3600);

    /// While a checkpoint that drained the queue is undecided, the writer takes nothing: a
    /// waiter queued meanwhile (due at once) is held back until the checkpoint fails and gives
    /// its records back, and then follows them in one batch — older records first. Before, the
    /// writer took the newer record alone and wrote it ahead of the older ones. (With the fix
    /// the pass is deterministic; the 200 ms only gives a regression the chance to show.)
    #[test]
    fn a_failed_checkpoint_s_records_go_before_those_queued_while_it_ran() {
        let j = journal(Some(HOUR));
        let _ = j.enqueue(false, |w| {
            w.u8(1);
        });
        let older = j.drain();
        let _ = j.enqueue(true, |w| {
            w.u8(2);
        });
        let (tx, rx) = mpsc::channel();
        let jt = j.clone();
        std::thread::spawn(move || {
            let _ = tx.send(jt.take().map(|b| b.records));
        });
        assert!(rx.recv_timeout(Duration::from_millis(200)).is_err(), "a batch was taken during the checkpoint");
        j.undrain(older);
        assert_eq!(rx.recv_timeout(Duration::from_secs(30)).expect("taken after the undrain"), Some(vec![1, 2]));
    }

    /// A rider makes no batch due: its records wait for the delay (here an hour, so the batch is
    /// not taken), then go with the batch a waiter makes due, which acknowledges both.
    #[test]
    fn a_rider_goes_with_the_next_batch_and_forces_none() {
        let j = journal(Some(HOUR));
        let ride = j.enqueue_riding(None, |w| {
            w.u8(1);
        });
        let (tx, rx) = mpsc::channel();
        let jt = j.clone();
        std::thread::spawn(move || {
            let _ = tx.send(jt.take().map(|b| (b.records, b.waiters)));
        });
        assert!(rx.recv_timeout(Duration::from_millis(200)).is_err(), "a rider made its batch due");
        let due = j.enqueue(true, |w| {
            w.u8(2);
        });
        let (records, waiters) = rx.recv_timeout(Duration::from_secs(30)).expect("taken").expect("a batch");
        assert_eq!((records, waiters.len()), (vec![1, 2], 2));
        ack_all(waiters, &Ok(()));
        ride.unwrap().wait().unwrap();
        due.unwrap().wait().unwrap();
        // Riding alone, with no delay to wait out (or none at all: simulated media), the batch is
        // taken at once.
        for delay in [Some(Duration::ZERO), None] {
            let j = journal(delay);
            let _ride = j.enqueue_riding(None, |_| {});
            assert_eq!(take_soon(&j), Some(vec![]), "{delay:?}");
        }
        // Given back by a failed checkpoint, a rider still makes no batch due.
        let j = journal(Some(HOUR));
        let _ride = j.enqueue_riding(None, |w| {
            w.u8(3);
        });
        j.undrain(j.drain());
        let jt = j.clone();
        let (tx, rx) = mpsc::channel();
        std::thread::spawn(move || {
            let _ = tx.send(jt.take().map(|b| b.records));
        });
        assert!(rx.recv_timeout(Duration::from_millis(200)).is_err(), "an undrained rider made its batch due");
        j.stop(false);
        assert_eq!(rx.recv_timeout(Duration::from_secs(30)).expect("taken at the stop"), Some(vec![3]));
    }

    /// A bounded rider makes its batch due at its bound, not at the delay's (an hour here), and
    /// riders queued within the bound share that batch; a later bound does not postpone it.
    #[test]
    fn a_bounded_rider_makes_its_batch_due_at_its_bound() {
        let j = journal(Some(HOUR));
        let start = Instant::now();
        let first = j.enqueue_riding(Some(Duration::from_millis(300)), |w| {
            w.u8(1);
        });
        let second = j.enqueue_riding(Some(Duration::from_secs(3600)), |w| {
            w.u8(2);
        });
        let (tx, rx) = mpsc::channel();
        let jt = j.clone();
        std::thread::spawn(move || {
            let _ = tx.send(jt.take().map(|b| (b.records, b.waiters)));
        });
        let (records, waiters) = rx.recv_timeout(Duration::from_secs(30)).expect("taken").expect("a batch");
        assert!(start.elapsed() >= Duration::from_millis(300), "taken before the bound");
        assert_eq!((records, waiters.len()), (vec![1, 2], 2));
        ack_all(waiters, &Ok(()));
        first.unwrap().wait().unwrap();
        second.unwrap().wait().unwrap();
        // Given back by a failed checkpoint, the bound still holds.
        let _ride = j.enqueue_riding(Some(Duration::ZERO), |w| {
            w.u8(3);
        });
        j.undrain(j.drain());
        assert_eq!(take_soon(&j), Some(vec![3]));
    }

    /// A batch due for its waiter waits for a record announced before it (here without a bound
    /// in sight: an hour), and takes it along once it is queued; an announcement withdrawn
    /// releases it at once, without one nothing is held, and one made while it gathers is not
    /// waited for.
    #[test]
    fn a_due_batch_gathers_the_records_announced_before_it() {
        let j = Arc::new(Journal { eager_bytes: 1 << 20, delay: Some(HOUR), gather: HOUR, ..Default::default() });
        let coming = j.expect();
        let first = j.enqueue(true, |w| {
            w.u8(1);
        });
        let (tx, rx) = mpsc::channel();
        let jt = j.clone();
        std::thread::spawn(move || {
            let _ = tx.send(jt.take().map(|b| (b.records, b.waiters)));
        });
        assert!(rx.recv_timeout(Duration::from_millis(200)).is_err(), "taken without the announced record");
        let second = j.enqueue(true, |w| {
            w.u8(2);
        });
        drop(coming);
        let (records, waiters) = rx.recv_timeout(Duration::from_secs(30)).expect("taken").expect("a batch");
        assert_eq!((records, waiters.len()), (vec![1, 2], 2));
        ack_all(waiters, &Ok(()));
        first.unwrap().wait().unwrap();
        second.unwrap().wait().unwrap();
        // Withdrawn (the put failed): the batch goes without it.
        let coming = j.expect();
        let _third = j.enqueue(true, |w| {
            w.u8(3);
        });
        let (tx, rx) = mpsc::channel();
        let jt = j.clone();
        std::thread::spawn(move || {
            let _ = tx.send(jt.take().map(|b| b.records));
        });
        assert!(rx.recv_timeout(Duration::from_millis(200)).is_err(), "taken while a record was announced");
        drop(coming);
        assert_eq!(rx.recv_timeout(Duration::from_secs(30)).expect("taken"), Some(vec![3]));
        // Nothing announced: taken at once.
        let _fourth = j.enqueue(true, |w| {
            w.u8(4);
        });
        assert_eq!(take_soon(&j), Some(vec![4]));
        // Announced after the batch began to gather: not waited for.
        let before = j.expect();
        let _fifth = j.enqueue(true, |w| {
            w.u8(5);
        });
        let (tx, rx) = mpsc::channel();
        let jt = j.clone();
        std::thread::spawn(move || {
            let _ = tx.send(jt.take().map(|b| b.records));
        });
        assert!(rx.recv_timeout(Duration::from_millis(200)).is_err(), "taken while a record was announced");
        let _after = j.expect();
        drop(before);
        assert_eq!(rx.recv_timeout(Duration::from_secs(30)).expect("taken"), Some(vec![5]));
    }

    /// A checkpoint that succeeded lets the writer go on with what was queued after its drain.
    #[test]
    fn a_written_checkpoint_releases_the_writer() {
        let j = journal(Some(HOUR));
        let n = j.drain();
        let _ = j.enqueue(true, |w| {
            w.u8(5);
        });
        j.covered(n);
        assert_eq!(take_soon(&j), Some(vec![5]));
    }

    #[test]
    fn a_waiter_takes_the_records_queued_before_it_without_the_delay() {
        let j = journal(Some(HOUR));
        let _ = j.enqueue(false, |w| {
            w.u8(1);
        });
        let _ = j.enqueue(true, |w| {
            w.u8(2);
        });
        assert_eq!(take_soon(&j), Some(vec![1, 2]));
    }

    #[test]
    fn eager_bytes_of_records_are_taken_without_the_delay() {
        let j = journal(Some(HOUR));
        for i in 0..64u8 {
            let _ = j.enqueue(false, |w| {
                w.u8(i);
            });
        }
        assert_eq!(take_soon(&j), Some((0..64).collect()));
    }

    #[test]
    fn stopping_takes_the_delayed_records_then_ends() {
        let j = journal(Some(HOUR));
        let _ = j.enqueue(false, |w| {
            w.u8(7);
        });
        j.stop(false);
        assert_eq!(take_soon(&j), Some(vec![7]));
        assert_eq!(take_soon(&j), None);
    }

    /// A lone record nobody waits for is taken once the delay is over, not before: the delay
    /// is a lower bound (no upper bound is asserted, so a loaded machine cannot fail this).
    #[test]
    fn a_lone_record_waits_out_the_delay() {
        let delay = Duration::from_millis(40);
        let j = journal(Some(delay));
        let t0 = Instant::now();
        let _ = j.enqueue(false, |w| {
            w.u8(3);
        });
        assert_eq!(take_soon(&j), Some(vec![3]));
        assert!(t0.elapsed() >= delay, "taken after {:?}, before the {delay:?} delay", t0.elapsed());
        // Zero delay: taken at once (an hour-long wait would fail take_soon).
        let j = journal(Some(Duration::ZERO));
        let _ = j.enqueue(false, |w| {
            w.u8(4);
        });
        assert_eq!(take_soon(&j), Some(vec![4]));
    }

    /// An urgent record is taken at once, with the records queued before it, although nobody
    /// waits for it; the urgency ends with the batch (the next lone record waits again).
    #[test]
    fn an_urgent_record_does_not_wait_out_the_delay() {
        let j = journal(Some(HOUR));
        let _ = j.enqueue(false, |w| {
            w.u8(5);
        });
        j.enqueue_urgent(|w| {
            w.u8(6);
        })
        .unwrap();
        assert_eq!(take_soon(&j), Some(vec![5, 6]));
        assert!(!j.queue.lock().urgent);
        // Without a delay (simulated media), an urgent record wakes the writer too.
        let j = journal(None);
        j.enqueue_urgent(|w| {
            w.u8(7);
        })
        .unwrap();
        assert_eq!(take_soon(&j), Some(vec![7]));
    }

    /// A writer that panics leaves no waiter hanging and no operation queued for nobody.
    #[test]
    fn a_panicking_writer_closes_the_journal() {
        let j = journal(Some(HOUR));
        let pending = j
            .enqueue(true, |w| {
                w.u8(1);
            })
            .expect("open journal");
        let writer = j.clone();
        let died = std::thread::spawn(move || {
            let _guard = writer.writer_guard();
            panic!("a bug in the writer");
        })
        .join();
        assert!(died.is_err());
        assert!(matches!(pending.wait(), Err(Error::Journal(_))), "the queued waiter is told");
        assert!(matches!(j.enqueue(true, |_| {}), Err(Error::Closed)), "later operations fail");
    }
}
