//! Making metadata durable: the journal writer loop (group commit) and checkpoints.
//!
//! Checkpoint payload: `next_seq u64 | clean u8 | bands u32 | band entries | Put records`, a band
//! entry being `state u8 | scheme [u8;3] | cursors u8 | cursor u64 × cursors`. Slots alternate
//! (number % 2) so a torn checkpoint never destroys the previous one.

use crate::bytes::Writer;
use crate::error::{Error, Result};
use crate::journal::{ack_all, Ack, Batch};
use crate::metalog::Frozen;
use crate::record::{Frame, Record, BATCH_MAGIC, CKPT_MAGIC};
use crate::space::{Band, BandState};
use crate::stats::Stat;
use crate::store::Inner;
use std::sync::Arc;

/// Writes `buf` at `offset` on every healthy device and fdatasyncs them, in parallel. Devices
/// that fail are marked failed; succeeds if at least one device holds the bytes.
pub(crate) fn write_everywhere(inner: &Inner, offset: u64, buf: &[u8], what: &str) -> std::result::Result<(), String> {
    // O_DIRECT media bounce an unaligned buffer through an aligned copy of their own: make that
    // copy once here rather than once per device.
    let aligned;
    let buf = if (buf.as_ptr() as usize).is_multiple_of(reo_media::ALIGN) {
        buf
    } else {
        let mut b = reo_media::AlignedBuf::zeroed(buf.len());
        b.copy_from_slice(buf);
        aligned = b;
        &aligned[..]
    };
    let results = inner.devs.pool().map(inner.n(), |d| {
        if inner.devs.is_failed(d) {
            return None;
        }
        let dev = &inner.devs.get(d);
        Some((inner.devs.generation(d), dev.write_at(buf, offset).and_then(|_| dev.sync())))
    });
    let ok = tally(inner, what, "write/sync", results)?;
    inner.stats.add(Stat::JournalDeviceBytes, buf.len() as u64 * ok);
    Ok(())
}

/// Counts the outcome of one operation run on every healthy device (`None`: a device failed
/// already; else the slot generation taken before the operation and its result). A device the
/// operation failed on is marked failed — unless its slot was swapped meanwhile: an operation
/// that straddled a replacement (hung on the old media, failing after the new one was
/// installed) must not fail the new device (`slot.rs`). Returns how many devices succeeded, or
/// an error if none did.
fn tally(
    inner: &Inner,
    what: &str,
    op: &str,
    results: Vec<Option<(u64, std::io::Result<()>)>>,
) -> std::result::Result<u64, String> {
    let mut ok = 0;
    let mut last = String::from("no healthy device");
    for (d, r) in results.into_iter().enumerate() {
        match r {
            Some((_, Ok(()))) => ok += 1,
            Some((generation, Err(e))) => {
                inner.stats.add(Stat::WriteErrors, 1);
                if inner.devs.generation(d) == generation {
                    inner.mark_failed(d, &format!("{what} {op} error: {e}"));
                }
                last = format!("device {d}: {e}");
            }
            None => {}
        }
    }
    if ok == 0 {
        Err(format!("{what} reached no device ({last})"))
    } else {
        Ok(ok)
    }
}

impl Inner {
    /// fdatasyncs every healthy device, in parallel. Devices that fail are marked failed (as in
    /// [`write_everywhere`]); succeeds if at least one device synced.
    pub(crate) fn sync_everywhere(&self, what: &str) -> std::result::Result<(), String> {
        let results = self
            .devs
            .pool()
            .map(self.n(), |d| (!self.devs.is_failed(d)).then(|| (self.devs.generation(d), self.devs.get(d).sync())));
        tally(self, what, "sync", results).map(|_| ())
    }
}

/// The journal writer thread: batches, writes, syncs, acknowledges; checkpoints when full.
pub(crate) fn writer_loop(inner: Arc<Inner>) {
    let _closes_on_panic = inner.meta.writer_guard();
    // An open that replayed the journal leaves the new generation's checkpoint to this thread
    // (`recover.rs`); taken before any batch. Should it fail, every batch retries it.
    if inner.meta.wedged() {
        if let Err(e) = checkpoint(&inner, false) {
            tracing::warn!(error = %e, "the checkpoint after recovery failed; writes wait for the next one");
        }
    }
    while let Some(batch) = inner.meta.take() {
        write_batch(&inner, batch);
    }
}

/// Writes one batch the writer took (or a checkpoint when the journal is full).
pub(crate) fn write_batch(inner: &Inner, batch: Batch) {
    let Batch { records: payload, waiters, drains } = batch;
    if payload.is_empty() {
        ack_all(waiters, &Ok(()));
        return;
    }
    let mut jp = inner.meta.append();
    if jp.covered_since(drains) {
        // A checkpoint (`replace_device`'s) ran between taking the batch and here: its snapshot
        // holds these records, and its new generation must not replay them — a put among them
        // freed before the snapshot would come back to life at the next open.
        drop(jp);
        ack_all(waiters, &Ok(()));
        return;
    }
    let (gen, number) = jp.next_batch();
    let frame = Frame::wrap(BATCH_MAGIC, inner.layout.store_id, gen, number, &payload);
    let ack: Ack = if let Some(pos) = jp.room(frame.len() as u64, inner.layout.journal_len) {
        let r = write_everywhere(inner, inner.layout.journal_off + pos, &frame, "journal");
        if r.is_ok() {
            jp.appended(frame.len() as u64);
            inner.stats.add(Stat::JournalBatches, 1);
        }
        r
    } else {
        drop(jp);
        // The state already holds these records: a checkpoint makes them durable. Failed, it
        // leaves the generation wedged (`metalog::JournalPos::wedged`): these records are in no
        // journal.
        replace_journal(inner, false, true).map_err(|e| e.to_string())
    };
    ack_all(waiters, &ack);
}

/// Encodes the state under the gate and writes it as a checkpoint of a new journal generation.
/// Records still queued are covered by the snapshot, so their waiters are acknowledged too.
pub(crate) fn checkpoint(inner: &Inner, clean: bool) -> Result<()> {
    replace_journal(inner, clean, false)
}

/// [`checkpoint`]; `journal_full`: taken because a batch did not fit, whose records a failure
/// leaves in no journal, so that the generation takes no more batches.
fn replace_journal(inner: &Inner, clean: bool, journal_full: bool) -> Result<()> {
    let frozen = inner.meta.begin_checkpoint();
    let (head, bands, mut live) = snapshot(inner, &frozen, clean);
    let drained = frozen.drain();
    // The stale marks after the drain: a mark set with its record before it is seen here, a
    // later one has its record in the next generation (`stale.rs`).
    let mut stale = Writer::default();
    inner.stale_records(&mut stale);
    live.push(stale.0);
    let ckpt = frozen.thaw();
    let (gen, number) = ckpt.next();
    let parts: Vec<&[u8]> =
        std::iter::once(&head[..]).chain(bands.iter().map(|b| &b[..])).chain(live.iter().map(|l| &l[..])).collect();
    let frame = Frame::wrap_parts(CKPT_MAGIC, inner.layout.store_id, gen, number, &parts);
    drop((bands, live));
    let result = if frame.len() as u64 > inner.layout.ckpt_len {
        Err(Error::MetadataFull(format!(
            "checkpoint of {} bytes exceeds its slot of {} bytes ({} live blobs): format with a larger checkpoint_size",
            frame.len(),
            inner.layout.ckpt_len,
            inner.space.blob_count()
        )))
    } else {
        write_everywhere(inner, inner.layout.ckpt_slot(number % 2), &frame, "checkpoint").map_err(Error::Journal)
    };
    if result.is_ok() {
        inner.stats.add(Stat::Checkpoints, 1);
        ckpt.written(drained);
    } else {
        ckpt.failed(drained, journal_full);
    }
    result
}

/// The checkpoint payload in parts, to be concatenated: the head, then the band entries and the
/// live records of consecutive groups of bands ([`crate::space::Space::snapshot`]).
fn snapshot(inner: &Inner, frozen: &Frozen, clean: bool) -> (Vec<u8>, Vec<Vec<u8>>, Vec<Vec<u8>>) {
    let mut head = Writer::default();
    head.u64(inner.space.next_seq()).u8(u8::from(clean));
    head.u32(inner.space.band_count() as u32);
    // Devices a rebuild left without some blobs' chunks, with those blobs (usually none).
    let (bands, live) = inner.space.snapshot(frozen, inner.devs.pool(), &inner.resync.unrestored());
    (head.0, bands, live)
}

/// A decoded checkpoint.
pub(crate) struct Checkpoint {
    pub next_seq: u64,
    pub clean: bool,
    /// (state, scheme, cursors) per band.
    pub bands: Vec<(BandState, Option<crate::scheme::Scheme>, Vec<u64>)>,
    pub live: Vec<Record>,
}

/// Decodes a checkpoint payload; `None` if malformed.
pub(crate) fn decode_checkpoint(payload: &[u8], max_bands: usize, devices: usize) -> Option<Checkpoint> {
    let mut r = crate::bytes::Reader::new(payload);
    let next_seq = r.u64()?;
    let clean = r.u8()? != 0;
    let nb = r.u32()? as usize;
    if nb > max_bands {
        return None;
    }
    let mut bands = Vec::with_capacity(nb);
    for _ in 0..nb {
        bands.push(Band::decode_entry(&mut r, devices)?);
    }
    let rest = r.take(r.remaining())?;
    let live = Record::decode_all(rest)?;
    Some(Checkpoint { next_seq, clean, bands, live })
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    /// The writer takes a batch; before it holds the journal position a checkpoint (as
    /// `replace_device` takes one) snapshots the state, in which a put of the batch was since
    /// freed. The batch must not go into the checkpoint's new generation: before the fix it did,
    /// and the next open replayed the put over the snapshot — a freed blob back to life. The
    /// test stands in for the writer thread to stop it between its two steps.
    #[test]
    fn a_batch_taken_before_a_checkpoint_is_not_replayed_after_it() {
        use crate::{Durability, PutOptions, Scheme, Store, StoreConfig};
        use reo_media::{Media, MemMedia};
        let cfg = StoreConfig {
            chunk_size: 16 << 10,
            zone_size: Some(256 << 10),
            journal_size: Some(256 << 10),
            checkpoint_size: Some(512 << 10),
            create: true,
            ..Default::default()
        };
        let mems: Vec<Arc<dyn Media>> = (0..2).map(|_| Arc::new(MemMedia::new(8 << 20)) as Arc<dyn Media>).collect();
        let (store, _) = Store::open(mems.clone(), &cfg).unwrap();
        let inner = store.inner.clone();
        inner.meta.stop(false);
        let writer = store.writer.lock().take();
        writer.expect("a writer thread").join().unwrap();
        inner.meta.reopen();

        let x = store.put(b"x", &[7; 1000], &PutOptions::new(Scheme::Replicate(2))).unwrap();
        let taken = inner.meta.take().expect("the put's record");
        store.free(&x, Durability::None).unwrap();
        checkpoint(&inner, false).unwrap();
        write_batch(&inner, taken);
        // A crash now: nothing more is written.
        inner.meta.stop(true);
        drop(store);
        let (store, _) = Store::open(mems, &cfg).unwrap();
        assert!(!store.contains(&x), "a blob freed before the checkpoint stays freed");
    }

    proptest! {
        #[test]
        fn checkpoint_decoder_never_panics(bytes in proptest::collection::vec(any::<u8>(), 0..400), bands in 0usize..64) {
            let _ = decode_checkpoint(&bytes, bands, 4);
        }

        #[test]
        fn checkpoint_decoder_survives_mutation(pos in 0usize..200, v in any::<u8>(), cut in 0usize..200) {
            let mut w = Writer::default();
            w.u64(77).u8(1).u32(2);
            let mut b = Band::new();
            b.open(crate::scheme::Scheme::Rs { k: 2, p: 2 }, 4);
            b.encode_entry(&mut w);
            Band::new().encode_entry(&mut w);
            Record::Free { seq: 1, band: 0 }.encode(&mut w);
            let good = w.0.clone();
            let c = decode_checkpoint(&good, 8, 4).expect("valid checkpoint decodes");
            prop_assert_eq!(c.next_seq, 77);
            prop_assert_eq!(c.bands.len(), 2);
            let mut bad = good.clone();
            let n = bad.len();
            bad[pos % n] = v;
            let _ = decode_checkpoint(&bad, 8, 4);
            let _ = decode_checkpoint(&good[..cut.min(n)], 8, 4);
        }
    }
}
