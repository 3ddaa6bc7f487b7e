//! Opening a store: read the superblocks, format blank devices, or recover — load the newest
//! checkpoint, replay the journal generation that follows it, verify the blobs of the last batch
//! (the only one that may point at data that never became durable), and, after a crash, take a
//! fresh checkpoint so the torn journal tail can never be mistaken for new batches.

use crate::bufpool::BufPool;
use crate::config::{StoreConfig, Tunables};
use crate::devices::DeviceSet;
use crate::error::{Error, Result};
use crate::handle::Store;
use crate::journal::Journal;
use crate::metalog::MetaLog;
use crate::persist;
use crate::record::Record;
use crate::resync::{Resync, ResyncState};
use crate::scan::{load_checkpoint, read_journal};
use crate::space::Space;
use crate::stats::Counters;
use crate::store::{BlobHealth, Inner};
use crate::superblock::{Layout, FLAG_REBUILDING, SUPERBLOCK_AREA};
use parking_lot::Mutex;
use reo_media::{AlignedBuf, IoPool, Media};
use std::sync::Arc;

/// Queued journal records (nobody waiting) at which the writer takes a batch without waiting
/// out the group-commit delay: recovery reads every blob of the last batch, so batches stay
/// small (about 800 records).
const JOURNAL_EAGER_BYTES: usize = 32 << 10;
/// The same on byte-less (simulated) media, where nothing is verified: fewer wake-ups.
const SIM_JOURNAL_WAKE_BYTES: usize = 256 << 10;

/// What a device's superblock said.
enum Found {
    Blank,
    /// Layout, index, flags.
    Member(Layout, u16, u32),
    Unreadable(String),
}

/// How the open went (for logs and tests).
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct OpenReport {
    /// The devices were all blank and this open formatted them (a new, empty store).
    pub formatted: bool,
    /// The store had been closed cleanly: its checkpoint was clean and no journal batch
    /// followed it.
    pub clean: bool,
    /// Journal batches written after the checkpoint and replayed over it.
    pub batches_replayed: u64,
    /// Records in those batches.
    pub records_replayed: u64,
    /// Blobs of the last batch whose data did not verify (never acknowledged) and were dropped.
    pub dropped_unverified: u64,
    /// Live blobs once the open is done.
    pub live_blobs: usize,
    /// Devices that open failed (blank or unreadable among members, stale, or marked rebuilding
    /// beside the one that resumes), by index, sorted.
    pub failed_devices: Vec<usize>,
    /// A device whose superblock was marked rebuilding: its rebuild was interrupted. Reads treat
    /// its chunks of older blobs as missing until [`Store::resume_rebuild`] restores them.
    pub rebuilding_device: Option<usize>,
    /// Devices that missed writes while failed (`stale.rs`): in `failed_devices` too, whether
    /// attached or not, until replaced.
    pub stale_devices: Vec<usize>,
}

impl Store {
    /// Opens the store on `devices` (any order), formatting them if they are all blank and
    /// `cfg.create` is set. Devices that are unreadable or blank among members open as failed.
    pub fn open(devices: Vec<Arc<dyn Media>>, cfg: &StoreConfig) -> Result<(Store, OpenReport)> {
        cfg.validate()?;
        if devices.is_empty() {
            return Err(Error::Config("no devices given".into()));
        }
        // Byte-less media finish every call at once: no thread hand-off for them.
        let pool = if devices.iter().all(|d| !d.stores_bytes()) {
            IoPool::inline()
        } else {
            IoPool::new(cfg.io_threads_for(devices.len()))
        };
        let found: Vec<Found> = pool.map(devices.len(), |d| read_superblock(devices[d].as_ref()));
        let members: Vec<(usize, Layout, u16, u32)> = found
            .iter()
            .enumerate()
            .filter_map(|(d, f)| match f {
                Found::Member(l, i, flags) => Some((d, *l, *i, *flags)),
                _ => None,
            })
            .collect();
        if members.is_empty() {
            if let Some((d, Found::Unreadable(m))) =
                found.iter().enumerate().find(|(_, f)| matches!(f, Found::Unreadable(_)))
            {
                return Err(Error::Devices(format!("device {d} ({}): {m}", devices[d].describe())));
            }
            if !cfg.create {
                return Err(Error::Devices("all devices are blank and create is off".into()));
            }
            return format(devices, cfg, pool);
        }
        let layout = members[0].1;
        for (d, l, _, _) in &members {
            if l.store_id != layout.store_id {
                return Err(Error::Devices(format!(
                    "device {d} ({}) belongs to another store ({:016x} vs {:016x})",
                    devices[*d].describe(),
                    l.store_id,
                    layout.store_id
                )));
            }
            if *l != layout {
                return Err(Error::Devices(format!("device {d} has a different layout from its peers")));
            }
        }
        if devices.len() != layout.devices as usize {
            return Err(Error::Devices(format!(
                "the store has {} devices but {} were given",
                layout.devices,
                devices.len()
            )));
        }
        // Put members at their recorded index; the rest (blank or unreadable) fill the gaps as failed.
        let mut slots: Vec<Option<Arc<dyn Media>>> = vec![None; devices.len()];
        for (d, _, i, _) in &members {
            let i = *i as usize;
            if i >= slots.len() || slots[i].is_some() {
                return Err(Error::Devices(format!("device {d} claims index {i}, which is taken or out of range")));
            }
            slots[i] = Some(devices[*d].clone());
        }
        let mut others = (0..devices.len()).filter(|d| !members.iter().any(|m| m.0 == *d));
        let mut failed = Vec::new();
        for (i, slot) in slots.iter_mut().enumerate() {
            if slot.is_none() {
                *slot = Some(devices[others.next().expect("counts match")].clone());
                failed.push(i);
            }
        }
        let devs: Vec<Arc<dyn Media>> = slots.into_iter().map(|s| s.expect("filled")).collect();
        for d in &devs {
            if d.len() < layout.device_len {
                return Err(Error::Devices(format!("{} is smaller than the store's device size", d.describe())));
            }
        }
        // Devices marked rebuilding: one resumes its rebuild (chosen once the stale marks are
        // known, in `recover`).
        let mut rebuilding: Vec<usize> =
            members.iter().filter(|(_, _, _, flags)| flags & FLAG_REBUILDING != 0).map(|m| m.2 as usize).collect();
        rebuilding.sort_unstable();
        failed.sort_unstable();
        let inner = new_inner(layout, devs, pool, &failed, cfg);
        let (store, mut report) = recover(inner, failed, &rebuilding)?;
        if let Some(r) = store.inner.resync.current() {
            r.set_start_seq(store.inner.space.next_seq());
            report.rebuilding_device = Some(r.device());
            tracing::info!(device = r.device(), "device was being rebuilt; call resume_rebuild to finish");
        }
        Ok((store, report))
    }
}

fn read_superblock(dev: &dyn Media) -> Found {
    if dev.len() < SUPERBLOCK_AREA {
        return Found::Unreadable("device too small".into());
    }
    let mut buf = AlignedBuf::zeroed(SUPERBLOCK_AREA as usize);
    if let Err(e) = dev.read_at(&mut buf, 0) {
        return Found::Unreadable(format!("cannot read superblock: {e}"));
    }
    if !dev.stores_bytes() {
        return Found::Blank;
    }
    let (a, b) = (Layout::decode_flags(&buf[..4096]), Layout::decode_flags(&buf[4096..]));
    match (a, b) {
        (Ok(Some((l, i, f))), _) | (_, Ok(Some((l, i, f)))) => Found::Member(l, i, f),
        (Ok(None), Ok(None)) => Found::Blank,
        (Err(e), _) | (_, Err(e)) => Found::Unreadable(e),
    }
}

fn new_inner(layout: Layout, devices: Vec<Arc<dyn Media>>, pool: IoPool, failed: &[usize], cfg: &StoreConfig) -> Inner {
    let devs = DeviceSet::new(devices, pool, failed, cfg.read_depth);
    let stores_bytes = devs.stores_bytes();
    Inner {
        tunables: Tunables::of(cfg),
        resync: ResyncState::new(devs.len()),
        space: Space::new(&layout),
        devs,
        meta: MetaLog::new(Journal::new(
            if stores_bytes { JOURNAL_EAGER_BYTES } else { SIM_JOURNAL_WAKE_BYTES },
            stores_bytes.then_some(cfg.journal_delay),
        )),
        stats: Counters::default(),
        bufs: BufPool::shared(),
        layout,
    }
}

fn format(devices: Vec<Arc<dyn Media>>, cfg: &StoreConfig, pool: IoPool) -> Result<(Store, OpenReport)> {
    let len = devices.iter().map(|d| d.len()).min().unwrap_or(0);
    let id =
        std::time::SystemTime::now().duration_since(std::time::UNIX_EPOCH).map(|d| d.as_nanos() as u64).unwrap_or(0)
            ^ (u64::from(std::process::id()) << 32);
    let layout = Layout::plan(cfg, devices.len(), len, id | 1)?;
    let inner = new_inner(layout, devices, pool, &[], cfg);
    // Blank the journal head and both checkpoint slots, then write the superblocks last.
    let zero = AlignedBuf::zeroed(4096);
    for off in [layout.journal_off, layout.ckpt_slot(0), layout.ckpt_slot(1)] {
        persist::write_everywhere(&inner, off, &zero, "format").map_err(Error::Journal)?;
    }
    inner.space.settle(); // every band free
    persist::checkpoint(&inner, true)?;
    let results = inner.devs.pool().map(inner.n(), |d| layout.write_superblocks(inner.devs.get(d), d, 0));
    for (d, r) in results.into_iter().enumerate() {
        r.map_err(|e| Error::Io { device: d, op: "format", source: e })?;
    }
    let report = OpenReport { formatted: true, clean: true, ..Default::default() };
    Ok((Store::start(inner), report))
}

/// Keeps only the replayed `Unrestored` marks of a device a live blob still has chunks on. A mark
/// is replayed whatever follows it, and a blob that shed its copies (`shed.rs`) keeps its
/// sequence number on one device: a mark of another device would say forever that a device
/// misses a blob it no longer needs, and keep every read on the degraded path.
fn prune_unrestored(inner: &Inner) {
    let marks = inner.resync.unrestored();
    if marks.is_empty() {
        return;
    }
    let seqs: std::collections::HashSet<u64> = marks.iter().flat_map(|(_, s)| s.iter().copied()).collect();
    let live = inner.space.locations_of(&seqs);
    inner.resync.retain_unrestored(|d, seq| live.get(&seq).is_some_and(|l| inner.holds(l, d)));
}

/// Applies `records` (in their order within each band) and returns the highest sequence number
/// put. A record only ever touches its own band, so the records are split by band and the bands
/// applied in parallel, each band's live map sized once: replaying the records one by one was
/// measured to be a large part of a crash restart before its checkpoint.
fn apply_by_band(inner: &Inner, records: impl IntoIterator<Item = Record>) -> u64 {
    let mut per_band: Vec<Vec<Record>> = (0..inner.space.band_count()).map(|_| Vec::new()).collect();
    for rec in records {
        let band = match &rec {
            // Not a band's: applied here (a set-only fact, in any order).
            Record::Missed { device } => {
                inner.devs.replay_stale(*device as usize);
                continue;
            }
            // Not a band's either (set-only), but only kept for a band the store has. Kept even
            // if the blob is freed later in the replay: `prune_unrestored` then drops the marks
            // of devices no live blob of that sequence number uses.
            Record::Unrestored { device, seq, band } => {
                if (*band as usize) < per_band.len() {
                    inner.resync.replay_unrestored(*device as usize, *seq);
                }
                continue;
            }
            Record::Put { loc, .. } => loc.band,
            Record::Free { band, .. } | Record::BandReset { band } => *band,
        };
        if let Some(v) = per_band.get_mut(band as usize) {
            v.push(rec);
        }
    }
    let per_band: Vec<(usize, Mutex<Vec<Record>>)> =
        per_band.into_iter().enumerate().filter(|(_, v)| !v.is_empty()).map(|(i, v)| (i, Mutex::new(v))).collect();
    let seqs = inner.devs.pool().map(per_band.len(), |i| {
        let recs = std::mem::take(&mut *per_band[i].1.lock());
        inner.space.replay(per_band[i].0, recs)
    });
    seqs.into_iter().max().unwrap_or(0)
}

/// `rebuilding`: the devices whose superblock says rebuilding.
///
/// After a replay (or an unclean checkpoint) the state must go into a checkpoint of a new
/// generation before any batch is journaled. That checkpoint — encoding every live blob and
/// writing and syncing it on every device, half of a crash restart — is left to the journal
/// writer, which takes it first thing: the store serves reads (and takes `None` puts, whose
/// records queue) from the moment the state is in memory, and the first batch waits for it
/// (`JournalPos::wedged`). A crash before it is written finds the same checkpoint and journal
/// as this open did (the new checkpoint goes to the other slot).
fn recover(inner: Inner, failed: Vec<usize>, rebuilding: &[usize]) -> Result<(Store, OpenReport)> {
    let (frame, ckpt) = load_checkpoint(&inner)?;
    for (i, (state, scheme, cursors)) in ckpt.bands.iter().enumerate().take(inner.space.band_count()) {
        inner.space.restore_band(i, *state, *scheme, cursors);
    }
    let mut last_seq = apply_by_band(&inner, ckpt.live);
    let (batches, _end, _next) = read_journal(&inner, frame.gen);
    let mut report = OpenReport {
        clean: ckpt.clean && batches.is_empty(),
        batches_replayed: batches.len() as u64,
        records_replayed: batches.iter().map(|b| b.len() as u64).sum(),
        failed_devices: failed,
        ..Default::default()
    };
    // The last batch may have been written but not synced when the crash came: its blobs are
    // verified after the replay, and only those whose data verifies are kept.
    let last_puts: Vec<crate::location::Location> = batches
        .last()
        .map(|b| b.iter().filter_map(|r| if let Record::Put { loc, .. } = r { Some(*loc) } else { None }).collect())
        .unwrap_or_default();
    let replayed = !batches.is_empty();
    last_seq = last_seq.max(apply_by_band(&inner, batches.into_iter().flatten()));
    prune_unrestored(&inner);
    // `last_seq` is below the limit (records beyond it are not applied); a checkpoint's counter
    // beyond it is clamped rather than trusted.
    let next_seq = ckpt.next_seq.min(crate::location::SEQ_LIMIT).max(last_seq + 1);
    inner.space.set_next_seq(next_seq);
    fail_stale(&inner, &mut report);
    resume_one(&inner, rebuilding, &mut report);
    // New generation due (wedged) after a replay: nothing after this point can be confused with
    // the old tail.
    inner.meta.recovered(frame.gen, frame.number, replayed || !ckpt.clean);
    // Verified in parallel: each is a read of its own (an I/O latency each, one after another).
    // A blob beyond its redundancy because its devices are missing cannot be verified: it is
    // kept (its put may have been acknowledged, and its bytes may be intact on a device that
    // comes back), not dropped as torn. Reads never return its bytes unverified either way.
    let corrupt = inner.devs.pool().map(last_puts.len(), |i| {
        let loc = &last_puts[i];
        inner.space.is_live(loc)
            && inner.health(loc) != BlobHealth::Lost
            && matches!(inner.read(loc, 0, loc.len), Err(Error::Corrupt { .. }))
    });
    for (loc, _) in last_puts.iter().zip(corrupt).filter(|(_, c)| *c) {
        inner.space.remove_live(&inner.meta.mutation(), loc);
        report.dropped_unverified += 1;
    }
    inner.space.settle();
    report.live_blobs = inner.space.blob_count();
    Ok((Store::start(inner), report))
}

/// Fails the devices the metadata says are stale (`stale.rs`), attached or not, before anything
/// reads them (the last batch's verification would otherwise read their old chunks).
fn fail_stale(inner: &Inner, report: &mut OpenReport) {
    for d in (0..inner.n()).filter(|&d| inner.devs.is_stale(d)) {
        if !inner.devs.is_failed(d) {
            inner.devs.fail_quietly(d);
            report.failed_devices.push(d);
            tracing::warn!(
                device = d,
                file = %inner.devs.get(d).describe(),
                "device missed writes while it was failed: it stays failed until it is replaced (the same \
                 device may be given back to be rebuilt)"
            );
        }
        report.stale_devices.push(d);
    }
    report.failed_devices.sort_unstable();
}

/// The rebuild to resume: the first device marked rebuilding that is neither stale nor failed
/// (installed before the last batch is verified, so its unrestored chunks are not read). Should
/// several be marked (an aborted rebuild onto one, then the replacement of another), the others
/// are failed: only one rebuild runs, and a device with an aborted rebuild behind it holds an
/// unknown part of its blobs.
fn resume_one(inner: &Inner, rebuilding: &[usize], report: &mut OpenReport) {
    let mut usable = rebuilding.iter().copied().filter(|&d| !inner.devs.is_failed(d));
    if let Some(d) = usable.next() {
        inner.resync.install(Arc::new(Resync::new(d, u64::MAX, true)));
    }
    for d in usable {
        inner.devs.fail_quietly(d);
        report.failed_devices.push(d);
        tracing::warn!(device = d, "device is marked rebuilding too; only one rebuild resumes: it opens failed");
    }
    report.failed_devices.sort_unstable();
}
