//! Crash restart: a fresh store takes many small blobs (1–4 KiB, `none(isolated)`, durability
//! `none`), is flushed, then dropped without `close` — its journal is on the devices but there is
//! no clean checkpoint, as after a crash — and the reopen (checkpoint load, journal replay,
//! verification of the last batch) is timed: the store serves from then on. The checkpoint that
//! starts the new journal generation is written by the store's journal writer after the open
//! returns (`reo-store` `recover.rs`); the time until it is durable — when a first `Sync` write
//! could be acknowledged — is measured apart (`recover_writable_s_per_million_blobs`, a flush
//! right after the open).

use super::phases::{fresh_store, put_blobs, Pattern};
use super::{progress, Plan};
use reo_media::Media;
use reo_store::{Placement, Scheme, Store, StoreConfig};
use std::sync::Arc;
use std::time::Instant;

/// What the crash restart measured.
pub struct Recovery {
    pub blobs: usize,
    /// Seconds of the timed `Store::open`.
    pub open_s: f64,
    pub s_per_million: f64,
    /// Seconds from the start of the open until a flush right after it returned: the new
    /// generation's checkpoint is then written, and writes are durable again.
    pub writable_s: f64,
    pub batches_replayed: u64,
    pub records_replayed: u64,
    /// Small puts per second while filling (for information).
    pub puts_per_s: f64,
}

/// Length of small blob `i`: 1024 to 4096 bytes.
pub fn small_len(i: u64) -> usize {
    let x = i.wrapping_mul(0x9E37_79B9_7F4A_7C15);
    1024 + ((x >> 32) % 3073) as usize
}

pub fn run(devs: &[Arc<dyn Media>], cfg: &StoreConfig, plan: &Plan) -> Result<Recovery, String> {
    let pattern = Pattern::new(4096);
    let store = fresh_store(devs, cfg)?;
    let none = Scheme::None(Placement::Isolated);
    let (locs, span) = put_blobs(&store, none, plan.n, plan.recover_blobs, small_len, &pattern)?;
    let m = locs.len();
    if m == 0 {
        return Err("bench store: crash restart: no blob could be put".into());
    }
    let puts_per_s = m as f64 / span.secs;
    // Crash-like: what is queued reaches the journal, but no clean checkpoint is taken.
    drop(store);

    let t0 = Instant::now();
    let (store, report) = Store::open(devs.to_vec(), cfg).map_err(|e| format!("bench store: crash restart: {e}"))?;
    let open_s = t0.elapsed().as_secs_f64();
    store.flush().map_err(|e| format!("bench store: crash restart: flush after the open: {e}"))?;
    let writable_s = t0.elapsed().as_secs_f64();
    if report.formatted || report.live_blobs != m {
        return Err(format!("bench store: crash restart recovered {} blobs of {m} ({report:?})", report.live_blobs));
    }
    if report.clean {
        return Err("bench store: crash restart: the store reopened clean: nothing was replayed".into());
    }
    let step = (m / 64).max(1);
    for (i, loc) in locs.iter().step_by(step) {
        let got = store.read_all(loc).map_err(|e| format!("bench store: crash restart: read of blob {i}: {e}"))?;
        pattern.check(&got, *i, "crash restart")?;
    }
    store.close().map_err(|e| format!("bench store: close after crash restart: {e}"))?;
    let s_per_million = open_s * 1e6 / m as f64;
    progress(format_args!(
        "crash restart: {m} blobs ({puts_per_s:.0} puts/s), reopened in {open_s:.3} s = {s_per_million:.3} s per \
         million blobs ({} batches, {} records replayed); its checkpoint durable after {writable_s:.3} s = {:.3} s \
         per million",
        report.batches_replayed,
        report.records_replayed,
        writable_s * 1e6 / m as f64
    ));
    Ok(Recovery {
        blobs: m,
        open_s,
        s_per_million,
        writable_s,
        batches_replayed: report.batches_replayed,
        records_replayed: report.records_replayed,
        puts_per_s,
    })
}
