//! `reo bench store`: the flash array store measured against the physical limit of the same
//! device files, in the same run.
//!
//! Phases, all on the same N files (each phase of the store on a freshly formatted store):
//! 1. precondition (every byte of every file written once, so neither side pays for first-write
//!    block allocation), then raw sequential write and read of each file, one thread per device,
//!    with the I/O size a store put issues per device for one blob (`raw.rs`);
//! 2. puts of `none(isolated)`, `rs(k,p)` and `replicate(2)` blobs from N threads with
//!    durability `none`, the final `flush` (fdatasync) included in the time (`phases.rs`);
//! 3. get of every rs blob from N threads, then the same with device 0 failed (`phases.rs`);
//! 4. the Reed-Solomon codec alone (`codec.rs`);
//! 5. crash restart: many small blobs, the store dropped without a clean close, the reopen timed
//!    (`recover.rs`).
//!
//! The figures, their ratios against the targets and a final one-line JSON object are printed by
//! `report.rs`. The exit code is 0 whether targets are met or not (it is a measurement) and
//! non-zero on any error, including a read returning bytes other than those written.

mod codec;
mod phases;
mod raw;
mod recover;
mod report;

use reo_media::Media;
use reo_store::{device_read_bytes, Layout, Location, Placement, Scheme, StoreConfig, ROW_BAND};
use std::path::PathBuf;
use std::process::ExitCode;
use std::sync::Arc;
use std::time::Instant;

/// Free bands the store keeps for its cleaner (user puts never take them).
const GC_RESERVE: u64 = 2;
/// Bytes of a Put record in a checkpoint with the 8-byte header the benchmark uses.
const PUT_RECORD_BYTES: u64 = 34 + 8;

#[derive(clap::Args, Debug)]
pub struct BenchStoreArgs {
    /// Directory for the device files (a fresh subdirectory is made in it and removed at the
    /// end). Default: the system temporary directory.
    #[arg(long)]
    pub dir: Option<PathBuf>,
    /// Number of device files.
    #[arg(long, default_value_t = 4)]
    pub devices: usize,
    /// Size of each device file in MiB [default: 1024; 256 with --quick].
    #[arg(long)]
    pub device_size: Option<u64>,
    /// Blob size in KiB.
    #[arg(long, default_value_t = 4096)]
    pub blob_size: u64,
    /// Smaller devices and fewer blobs: finishes in under a minute.
    #[arg(long)]
    pub quick: bool,
    /// Print only the JSON object on stdout (progress still goes to stderr).
    #[arg(long)]
    pub json: bool,
    /// Require O_DIRECT (error if the filesystem refuses it). Default: O_DIRECT when supported.
    #[arg(long, conflicts_with = "no_direct")]
    pub direct: bool,
    /// Use buffered I/O (the page cache) even if O_DIRECT is supported.
    #[arg(long)]
    pub no_direct: bool,
    /// Store chunk size in KiB.
    #[arg(long, default_value_t = 64)]
    pub chunk: u32,
}

/// One progress line on stderr.
pub(crate) fn progress(msg: impl std::fmt::Display) {
    eprintln!("bench store: {msg}");
}

/// Bytes per MiB, for rates.
pub(crate) const MIB: f64 = (1u64 << 20) as f64;

/// Most rounds of one measurement.
const MAX_ROUNDS: usize = 100;

/// Runs `round(i)` (returning bytes moved and seconds measured) until at least `min_secs` have
/// been measured; returns MiB/s over all rounds, the rounds and the total bytes.
pub(crate) fn repeat(
    min_secs: f64,
    mut round: impl FnMut(usize) -> Result<(u64, f64), String>,
) -> Result<(f64, usize, u64), String> {
    let (mut bytes, mut secs, mut rounds) = (0u64, 0f64, 0usize);
    while rounds == 0 || (secs < min_secs && rounds < MAX_ROUNDS) {
        let (b, s) = round(rounds)?;
        bytes += b;
        secs += s;
        rounds += 1;
    }
    Ok((bytes as f64 / MIB / secs, rounds, bytes))
}

/// The rs scheme of the benchmark: k = N − 2, p = 2 (p = 1 under 4 devices).
fn rs_scheme(n: usize) -> Scheme {
    if n >= 4 {
        Scheme::Rs { k: (n - 2) as u8, p: 2 }
    } else {
        Scheme::Rs { k: (n - 1) as u8, p: 1 }
    }
}

/// Bytes one blob of `len` bytes occupies on each device it touches (its column): the size of
/// the one write a put issues per device.
fn column_bytes(scheme: Scheme, len: u64, n: usize, chunk: u32) -> u64 {
    let device = if scheme.is_isolated() { 0 } else { ROW_BAND };
    let loc = Location { seq: 0, band: 0, start: 0, device, scheme, len };
    let g = scheme.geometry(n);
    device_read_bytes(&loc, n, chunk as usize) / (g.stripes_per_row * g.data) as u64
}

/// The store configuration of every phase: the chunk size asked for, defaults otherwise.
fn store_config(chunk: u32) -> StoreConfig {
    StoreConfig { chunk_size: chunk, create: true, ..Default::default() }
}

/// Sizes and counts of every phase, derived from the layout the store will have on these files.
pub(crate) struct Plan {
    pub n: usize,
    pub device_len: u64,
    pub blob: u64,
    pub chunk: u32,
    pub layout: Layout,
    pub rs: Scheme,
    pub data_fraction: f64,
    /// Raw test I/O size: the column a put of one rs blob writes on each device.
    pub io: u64,
    /// Bytes the raw test writes and reads per device (the device bytes of the none phase).
    pub raw_per_device: u64,
    pub none_per_thread: usize,
    pub rs_per_thread: usize,
    pub rep_per_thread: usize,
    pub recover_blobs: usize,
    /// Each throughput figure repeats its measurement until this many seconds are measured.
    pub min_secs: f64,
}

impl Plan {
    fn new(n: usize, device_len: u64, blob: u64, chunk: u32, quick: bool) -> Result<Plan, String> {
        let cfg = store_config(chunk);
        let layout = Layout::plan(&cfg, n, device_len, 1).map_err(|e| format!("bench store: {e}"))?;
        let zone = layout.zone;
        let usable = (layout.zones as u64).saturating_sub(GC_RESERVE);
        if usable < 2 {
            return Err(format!(
                "bench store: devices of {} MiB give {} bands, too few (use a larger --device-size)",
                device_len >> 20,
                layout.zones
            ));
        }
        // Isolated puts race for one band (a device that fills its share seals it for all), so
        // leave a few bands of slack; row schemes fill bands exactly.
        let slack = (usable / 4).clamp(1, 3);
        let too_big = |what: Scheme, col: u64| {
            format!(
                "bench store: a {} KiB {what} blob needs {col} bytes per device but a band holds {zone}: \
                 use a larger --device-size or a smaller --blob-size",
                blob >> 10
            )
        };
        let none = Scheme::None(Placement::Isolated);
        let none_col = column_bytes(none, blob, n, chunk);
        let q_none = zone / none_col;
        if q_none == 0 {
            return Err(too_big(none, none_col));
        }
        let none_bands = ((layout.zones as f64 * 0.55) as u64).min(usable - slack).max(1);
        let none_per_thread = (none_bands * q_none) as usize;
        let region = none_per_thread as u64 * none_col;
        let rs = rs_scheme(n);
        let io = column_bytes(rs, blob, n, chunk);
        let raw_per_device = region.div_ceil(io) * io;
        if layout.data_off + raw_per_device > device_len {
            return Err(format!("bench store: raw region does not fit devices of {} MiB", device_len >> 20));
        }
        // Row schemes: as many device bytes as the none phase, within the bands users may take.
        let per_thread = |s: Scheme| -> Result<usize, String> {
            let col = column_bytes(s, blob, n, chunk);
            let per_band = zone / col;
            if per_band == 0 {
                return Err(too_big(s, col));
            }
            let total = (region / col).min((usable - 1) * per_band) as usize;
            match total / n {
                0 => Err(format!("bench store: devices too small for {n} {s} blobs (use a larger --device-size)")),
                t => Ok(t),
            }
        };
        let rs_per_thread = per_thread(rs)?;
        let rep_per_thread = per_thread(Scheme::Replicate(2))?;
        // Crash restart: small blobs of at most 2 sectors each, within the checkpoint and space.
        let want = if quick { 50_000 } else { 200_000 };
        let by_ckpt = layout.ckpt_len * 3 / 4 / PUT_RECORD_BYTES;
        let by_space = (usable - slack) * zone / (2 * 4096) * n as u64;
        let recover_blobs = (want as u64).min(by_ckpt).min(by_space) as usize;
        let (k, p) = match rs {
            Scheme::Rs { k, p } => (k as f64, p as f64),
            _ => unreachable!("rs_scheme returns rs"),
        };
        Ok(Plan {
            n,
            device_len,
            blob,
            chunk,
            layout,
            rs,
            data_fraction: k / (k + p),
            io,
            raw_per_device,
            none_per_thread,
            rs_per_thread,
            rep_per_thread,
            recover_blobs,
            min_secs: if quick { 1.0 } else { 3.0 },
        })
    }
}

/// The working directory: a fresh directory removed (with the device files) when dropped.
struct WorkDir(PathBuf);

impl WorkDir {
    fn create(parent: Option<&std::path::Path>) -> Result<WorkDir, String> {
        let parent = parent.map(PathBuf::from).unwrap_or_else(std::env::temp_dir);
        let nanos = std::time::SystemTime::now().duration_since(std::time::UNIX_EPOCH).map(|d| d.subsec_nanos());
        let dir = parent.join(format!("reo-bench-store-{}-{}", std::process::id(), nanos.unwrap_or(0)));
        std::fs::create_dir_all(&dir)
            .map_err(|e| format!("bench store: cannot create directory {}: {e}", dir.display()))?;
        Ok(WorkDir(dir))
    }
}

impl Drop for WorkDir {
    fn drop(&mut self) {
        if let Err(e) = std::fs::remove_dir_all(&self.0) {
            eprintln!("bench store: cannot remove {}: {e}", self.0.display());
        }
    }
}

pub fn run(args: &BenchStoreArgs) -> Result<ExitCode, String> {
    let started = Instant::now();
    let n = args.devices;
    if !(2..=64).contains(&n) {
        return Err(format!("bench store: --devices {n}: the benchmark needs 2 to 64 devices"));
    }
    let device_mib = args.device_size.unwrap_or(if args.quick { 256 } else { 1024 });
    let device_len = device_mib.checked_mul(1 << 20).ok_or("bench store: --device-size is too large")?;
    let blob = args.blob_size.checked_mul(1024).filter(|&b| b > 0).ok_or("bench store: bad --blob-size")?;
    let chunk = args.chunk.checked_mul(1024).ok_or("bench store: bad --chunk")?;
    store_config(chunk).validate().map_err(|e| format!("bench store: --chunk {}: {e}", args.chunk))?;
    let plan = Plan::new(n, device_len, blob, chunk, args.quick)?;

    let work = WorkDir::create(args.dir.as_deref())?;
    let mode = match (args.direct, args.no_direct) {
        (true, _) => raw::DirectMode::On,
        (_, true) => raw::DirectMode::Off,
        _ => raw::DirectMode::Auto,
    };
    let (files, direct) = raw::open_devices(&work.0, n, device_len, mode)?;
    progress(format_args!(
        "{n} devices of {device_mib} MiB in {} ({}), {} KiB blobs, {} KiB chunks, {}",
        work.0.display(),
        if direct { "O_DIRECT" } else { "buffered" },
        blob >> 10,
        chunk >> 10,
        plan.rs
    ));

    let precondition_s = raw::precondition(&files)?;
    let raw_write = raw::sequential(&files, &plan, raw::Op::Write)?;
    let raw_read = raw::sequential(&files, &plan, raw::Op::Read)?;

    let media: Vec<Arc<dyn Media>> = files.iter().map(|f| f.clone() as Arc<dyn Media>).collect();
    let cfg = store_config(chunk);
    let store_phases = phases::run(&media, &cfg, &plan)?;
    let (encode_gibps, decode_gibps) = codec::run(&plan)?;
    let recovery = recover::run(&media, &cfg, &plan)?;
    drop(media);
    drop(files);
    drop(work);

    let results = report::Results {
        plan: &plan,
        quick: args.quick,
        direct,
        precondition_s,
        raw_write_mibps: raw_write,
        raw_read_mibps: raw_read,
        phases: store_phases,
        encode_gibps,
        decode_gibps,
        recovery,
        elapsed_s: started.elapsed().as_secs_f64(),
    };
    if !args.json {
        results.print_table();
    }
    println!("{}", results.json());
    Ok(ExitCode::SUCCESS)
}
