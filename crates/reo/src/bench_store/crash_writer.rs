//! The writer process of `reo bench store`'s crash restart (`reo bench store-writer`, hidden: only
//! the benchmark starts it).
//!
//! It formats a store on the device files the benchmark created, puts the small blobs `0..blobs`
//! from one thread per device (durability `none`; their rate is what it reports), then
//! [`IN_FLIGHT`] more and one flush: every one of them is then durable. It puts [`IN_FLIGHT`]
//! more without a flush — more than the journal's eager threshold, so batches of them are being
//! written or queued — says `acknowledged <blobs + IN_FLIGHT> <puts/s>` on stdout, and goes on
//! putting until it is killed. The benchmark kills it with SIGKILL as soon as it reads the line,
//! so the process dies in the middle of puts, with batches in flight and no checkpoint of its
//! own: what the restart then finds is what a crashed server leaves behind, not what a clean drop
//! flushes.

use super::phases::{fresh_store, put_blobs, Pattern};
use super::raw::{open_devices, DirectMode};
use super::{store_config, GC_RESERVE, PUT_MARGIN};
use reo_media::Media;
use reo_store::{Durability, Placement, PutOptions, Scheme};
use std::io::{Read, Write};
use std::path::PathBuf;
use std::process::ExitCode;
use std::sync::Arc;

/// The line the writer prints once its blobs are acknowledged and more are in flight:
/// `acknowledged <blobs> <puts/s>`.
pub const ACKNOWLEDGED: &str = "acknowledged";

/// Puts the writer adds after the timed ones, flushed, and again after the flush, unflushed:
/// several times the records of one eager journal batch, so the kill finds batches in flight.
pub const IN_FLIGHT: usize = 4096;

/// Length of small blob `i`: 1024 to 4096 bytes.
pub fn small_len(i: u64) -> usize {
    let x = i.wrapping_mul(0x9E37_79B9_7F4A_7C15);
    1024 + ((x >> 32) % 3073) as usize
}

#[derive(clap::Args, Debug)]
pub struct StoreWriterArgs {
    /// Directory holding the device files dev0.img … devN-1.img (created by the benchmark).
    #[arg(long)]
    pub dir: PathBuf,
    /// Number of device files.
    #[arg(long)]
    pub devices: usize,
    /// Size of each device file in MiB.
    #[arg(long)]
    pub device_size: u64,
    /// Store chunk size in KiB.
    #[arg(long)]
    pub chunk: u32,
    /// Blobs to put and acknowledge before going on until killed.
    #[arg(long)]
    pub blobs: usize,
    /// Use buffered I/O (the benchmark's files are not O_DIRECT).
    #[arg(long)]
    pub no_direct: bool,
}

pub fn run(args: &StoreWriterArgs) -> Result<ExitCode, String> {
    let mode = if args.no_direct { DirectMode::Off } else { DirectMode::On };
    let len = args.device_size.checked_mul(1 << 20).ok_or("bench store-writer: --device-size is too large")?;
    let chunk = args.chunk.checked_mul(1024).ok_or("bench store-writer: bad --chunk")?;
    let (files, _) = open_devices(&args.dir, args.devices, len, mode)?;
    let media: Vec<Arc<dyn Media>> = files.iter().map(|f| f.clone() as Arc<dyn Media>).collect();
    let store = fresh_store(&media, &store_config(chunk))?;
    let pattern = Pattern::new(4096);
    let none = Scheme::None(Placement::Isolated);
    let (locs, span) = put_blobs(&store, none, args.devices, args.blobs, small_len, &pattern)?;
    if locs.len() != args.blobs {
        return Err(format!(
            "bench store-writer: the devices took {} of {} blobs (the benchmark sized them too small)",
            locs.len(),
            args.blobs
        ));
    }
    let opts = PutOptions::new(none).durability(Durability::None);
    let low_water = (GC_RESERVE + PUT_MARGIN) as usize;
    let put = |i: u64| {
        if store.space().free_bands <= low_water {
            return Err(format!(
                "bench store-writer: out of room at blob {i} (the benchmark sized the devices too small)"
            ));
        }
        store
            .put(&i.to_le_bytes(), pattern.blob(i, small_len(i)), &opts)
            .map_err(|e| format!("bench store-writer: put of blob {i}: {e}"))
    };
    let acked = (args.blobs + IN_FLIGHT) as u64;
    for i in args.blobs as u64..acked {
        put(i)?;
    }
    store.flush().map_err(|e| format!("bench store-writer: flush: {e}"))?;
    for i in acked..acked + IN_FLIGHT as u64 {
        put(i)?;
    }
    let mut out = std::io::stdout().lock();
    writeln!(out, "{ACKNOWLEDGED} {acked} {:.0}", locs.len() as f64 / span.secs)
        .and_then(|()| out.flush())
        .map_err(|e| format!("bench store-writer: stdout: {e}"))?;
    // Still writing when the kill comes.
    let mut i = acked + IN_FLIGHT as u64;
    while store.space().free_bands > low_water {
        put(i)?;
        i += 1;
    }
    // Out of room before the kill: wait for it (the benchmark never writes to stdin; end of
    // file means it is gone).
    let _ = std::io::stdin().read(&mut [0u8; 1]);
    Err("bench store-writer: not killed: the benchmark that started it is gone".into())
}
