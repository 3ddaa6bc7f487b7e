//! `reo bench store`: the flash array store measured against the physical limit of the same
//! device files, in the same run.
//!
//! Phases, all on the same N files:
//! 1. precondition: every byte of every file written once, so neither side pays for the
//!    filesystem's first-write block allocation (`raw.rs`);
//! 2. write rounds, each a raw sequential write pass of every file (one thread per file, the I/O
//!    size a put issues per device for one blob, fdatasync at the end) followed by puts of
//!    `none(isolated)`, `replicate(2)` and `rs(k,p)` blobs on freshly formatted stores from N
//!    threads with durability `none`, the final `flush` included in the time (`phases.rs`);
//! 3. read rounds, each a raw sequential read pass (also in the get's read size, and with every
//!    byte checked by a second thread per file: no targets) followed by a get of every rs blob from two
//!    threads (the device lanes keeping one I/O in flight per device, like the raw test) and
//!    again from N, then the same with device 0 failed (`phases.rs`);
//! 4. the Reed-Solomon codec alone (`codec.rs`);
//! 5. crash restart: a writer process puts `--restart-blobs` small blobs (1 M by default) on files
//!    of their own, made after the main files are removed, and is killed with SIGKILL mid-puts
//!    (`crash_writer.rs`); the reopen is timed, and apart from it the time until the new journal
//!    generation's checkpoint, which the store writes after the open
//!    returns, is durable (`recover.rs`).
//!
//! Raw and store measurements alternate round by round so that drift in the machine's speed
//! affects both sides of every ratio alike, and every throughput figure is the *median* of its
//! rounds (the aggregate, total bytes over total seconds, is printed and in the JSON too). Why
//! the median: virtual and shared disks stall now and then for hundreds of milliseconds (a host
//! flushing its write cache: rounds of a raw-only loop range over more than a factor of ten). A stall falls on a raw or a store round by chance, and with the
//! mean that one round decides the ratio; the median of interleaved rounds compares the two
//! sides' typical rounds and is symmetric, so it favours neither. The figures, their ratios against the targets and a
//! final one-line JSON object are printed by `report.rs`. The exit code is 0 whether targets are
//! met or not (it is a measurement) and non-zero on any error, including a read returning bytes
//! other than those written.

mod codec;
pub(crate) mod crash_writer;
mod phases;
pub(crate) mod raw;
mod recover;
mod report;
mod sizes;

use reo_media::{FileMedia, Media};
use reo_store::{Layout, Location, Placement, Scheme, StoreConfig, ROW_BAND};
use std::path::PathBuf;
use std::process::ExitCode;
use std::sync::Arc;
use std::time::Instant;

/// Free bands the store keeps for its cleaner (user puts never take them).
pub(crate) const GC_RESERVE: u64 = 2;
/// Free bands beyond the cleaner's at which put threads stop (a put opens at most one band, and
/// threads check before each put).
pub(crate) const PUT_MARGIN: u64 = 2;
/// Bytes of a Put record in a checkpoint with the 8-byte header the benchmark uses.
pub(crate) const PUT_RECORD_BYTES: u64 = 34 + 8;

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
    /// Small blobs the crash restart's writer acknowledges before it is killed, on device files of
    /// their own sized for them [default: 1,000,000; 100,000 with --quick].
    #[arg(long)]
    pub restart_blobs: Option<usize>,
    /// Instead of the large-blob phases: per object size (comma-separated, e.g.
    /// `1KiB,4KiB,16KiB,64KiB,1MiB`) and scheme, the footprint, the device bytes written per put
    /// and Sync puts/s and gets/s from 1 and 32 threads, against the raw rate of the same files at
    /// the same I/O size.
    #[arg(long, value_delimiter = ',', value_parser = parse_object_size)]
    pub sizes: Vec<u64>,
}

/// An object size of `--sizes`: 1 byte to 16 MiB.
fn parse_object_size(s: &str) -> Result<u64, String> {
    let v = reo_cache::units::parse_size(s).map_err(|e| e.to_string())?;
    if !(1..=16 << 20).contains(&v) {
        return Err(format!("{s}: object sizes run from 1 byte to 16 MiB"));
    }
    Ok(v)
}

/// One progress line on stderr (under a spinner on a terminal).
pub(crate) fn progress(msg: impl std::fmt::Display) {
    crate::progress::step("bench store", &msg.to_string());
}

/// Bytes per MiB, for rates.
pub(crate) const MIB: f64 = (1u64 << 20) as f64;

/// Most rounds of a measurement loop.
pub(crate) const MAX_ROUNDS: usize = 100;

/// Wall-clock and process CPU seconds of one measured stretch.
#[derive(Debug, Default, Clone, Copy)]
pub(crate) struct Span {
    pub secs: f64,
    /// CPU seconds (user + system) of every thread of the process meanwhile.
    pub cpu: f64,
}

/// Starts a [`Span`].
pub(crate) struct Stopwatch {
    t0: Instant,
    cpu0: f64,
}

impl Stopwatch {
    pub fn start() -> Stopwatch {
        Stopwatch { t0: Instant::now(), cpu0: process_cpu_secs() }
    }

    pub fn stop(&self) -> Span {
        Span { secs: self.t0.elapsed().as_secs_f64(), cpu: process_cpu_secs() - self.cpu0 }
    }
}

/// User + system CPU seconds of the whole process so far (0 if the kernel will not say).
fn process_cpu_secs() -> f64 {
    // SAFETY: getrusage only writes the struct it is given.
    let mut ru: libc::rusage = unsafe { std::mem::zeroed() };
    // SAFETY: `ru` is a valid rusage buffer for getrusage to fill.
    if unsafe { libc::getrusage(libc::RUSAGE_SELF, &mut ru) } != 0 {
        return 0.0;
    }
    let secs = |t: libc::timeval| t.tv_sec as f64 + t.tv_usec as f64 / 1e6;
    secs(ru.ru_utime) + secs(ru.ru_stime)
}

/// One throughput figure accumulated over rounds.
#[derive(Debug, Default, Clone)]
pub(crate) struct Acc {
    pub bytes: u64,
    pub secs: f64,
    /// CPU seconds the process used meanwhile (all threads, kernel time included).
    pub cpu: f64,
    /// MiB/s of each round.
    pub rounds: Vec<f64>,
}

impl Acc {
    /// Adds one round of `bytes` in `span`.
    pub fn add(&mut self, (bytes, span): (u64, Span)) {
        self.bytes += bytes;
        self.secs += span.secs;
        self.cpu += span.cpu;
        self.rounds.push(bytes as f64 / MIB / span.secs);
    }

    /// Cores kept busy on average (CPU seconds per wall second).
    pub fn cores(&self) -> f64 {
        if self.secs > 0.0 {
            self.cpu / self.secs
        } else {
            0.0
        }
    }

    /// The figure: the median of the rounds' MiB/s (see the module doc for why not the mean).
    pub fn mibps(&self) -> f64 {
        let mut r = self.rounds.clone();
        r.sort_by(f64::total_cmp);
        match r.len() {
            0 => 0.0,
            n if n % 2 == 1 => r[n / 2],
            n => (r[n / 2 - 1] + r[n / 2]) / 2.0,
        }
    }

    /// MiB/s over all rounds together (total bytes over total seconds).
    pub fn aggregate_mibps(&self) -> f64 {
        self.bytes as f64 / MIB / self.secs
    }

    /// "N rounds, X MiB = R MiB/s (rounds min-max)".
    pub fn describe(&self) -> String {
        let min = self.rounds.iter().copied().fold(f64::INFINITY, f64::min);
        let max = self.rounds.iter().copied().fold(0.0, f64::max);
        format!(
            "{} rounds, median {:.1} MiB/s (rounds {min:.0}-{max:.0}; all {:.0} MiB at {:.1} MiB/s), {:.2} cores busy",
            self.rounds.len(),
            self.mibps(),
            self.bytes as f64 / MIB,
            self.aggregate_mibps(),
            self.cores()
        )
    }
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
    reo_store::column_bytes(&loc, n, chunk as usize)
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
    /// Reader threads of the get figures: two. The device queue depth does not depend on it:
    /// every read goes through its device's lane (`reo_media::ReadLanes`), which keeps
    /// `read_depth` = 1 read in flight per device, the raw test's depth. The readers only keep
    /// the lanes fed. One reader cannot: it checks the trailers of a blob once its reads are in,
    /// and meanwhile every device idles. More than two cost on a virtual disk whose reads slow
    /// down as the set of buffers they land in grows. The N-reader figure is measured too (`get_parallel_mibps`), without a target.
    pub get_readers: usize,
    pub recover_blobs: usize,
    /// Read rounds repeat until every figure of the loop has this many seconds measured.
    pub min_secs: f64,
    /// The same for write rounds, which are fewer and noisier per second measured.
    pub write_min_secs: f64,
}

impl Plan {
    fn new(
        n: usize,
        device_len: u64,
        blob: u64,
        chunk: u32,
        quick: bool,
        recover_blobs: usize,
    ) -> Result<Plan, String> {
        let cfg = store_config(chunk);
        let layout = Layout::plan(&cfg, n, device_len, 1).map_err(|e| format!("bench store: {e}"))?;
        let zone = layout.zone;
        // Bands puts may fill: put threads stop at GC_RESERVE + PUT_MARGIN free bands, and one
        // more is the open band when the last one fills.
        let usable = u64::from(layout.zones).saturating_sub(GC_RESERVE + PUT_MARGIN + 1);
        if usable < 2 {
            return Err(format!(
                "bench store: devices of {} MiB give {} bands, too few (use a larger --device-size)",
                device_len >> 20,
                layout.zones
            ));
        }
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
        // About 55% of the capacity, but isolated puts share a band between devices and the store
        // seals it for all when one device's share is full: threads drifting apart by a blob
        // lose up to one slot per device and band, which must still fit.
        let none_bands = ((f64::from(layout.zones) * 0.55) as u64).max(1);
        let none_per_thread = (none_bands * q_none).min(usable * q_none.saturating_sub(1).max(1)) as usize;
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
            let total = (region / col).min(usable * per_band) as usize;
            match total / n {
                0 => Err(format!("bench store: devices too small for {n} {s} blobs (use a larger --device-size)")),
                t => Ok(t),
            }
        };
        let rs_per_thread = per_thread(rs)?;
        let rep_per_thread = per_thread(Scheme::Replicate(2))?;
        let (k, p) = match rs {
            Scheme::Rs { k, p } => (f64::from(k), f64::from(p)),
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
            get_readers: 2,
            recover_blobs,
            // Full runs measure longer: the disk's rounds range over a factor of two or more, and
            // a handful of short rounds leaves the medians, hence the ratios, at the mercy of a
            // few stalls.
            min_secs: if quick { 2.0 } else { 10.0 },
            // Writes longer still: a write round lasts several times a read round and write
            // rounds spread more, so fewer rounds fit in the same time.
            write_min_secs: if quick { 2.0 } else { 30.0 },
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

/// The working directory and the device files in it, O_DIRECT as the flags ask; whether they
/// are O_DIRECT.
fn open_work(args: &BenchStoreArgs, n: usize, device_len: u64) -> Result<(WorkDir, Vec<Arc<FileMedia>>, bool), String> {
    let work = WorkDir::create(args.dir.as_deref())?;
    let mode = match (args.direct, args.no_direct) {
        (true, _) => raw::DirectMode::On,
        (_, true) => raw::DirectMode::Off,
        _ => raw::DirectMode::Auto,
    };
    let (files, direct) = raw::open_devices(&work.0, n, device_len, mode)?;
    Ok((work, files, direct))
}

/// `--sizes`: the per-size measurement alone, on preconditioned files (`sizes.rs`).
fn run_sizes(args: &BenchStoreArgs, n: usize, device_len: u64, chunk: u32) -> Result<ExitCode, String> {
    let (work, files, direct) = open_work(args, n, device_len)?;
    progress(format_args!(
        "{n} devices of {} MiB in {} ({}), {} KiB chunks; sizes {:?}",
        device_len >> 20,
        work.0.display(),
        if direct { "O_DIRECT" } else { "buffered" },
        chunk >> 10,
        args.sizes
    ));
    raw::precondition(&files)?;
    let measured = sizes::run(&files, chunk, &args.sizes, if args.quick { 1.0 } else { 3.0 })?;
    if !args.json {
        sizes::print_table(&measured);
    }
    let mut v = sizes::json(&measured);
    v["devices"] = serde_json::json!(n);
    v["device_mib"] = serde_json::json!(device_len >> 20);
    v["direct"] = serde_json::json!(direct);
    println!("{v}");
    Ok(ExitCode::SUCCESS)
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
    if !args.sizes.is_empty() {
        return run_sizes(args, n, device_len, chunk);
    }
    let recover_blobs = args.restart_blobs.unwrap_or(if args.quick { 100_000 } else { 1_000_000 });
    if recover_blobs == 0 {
        return Err("bench store: --restart-blobs 0: the crash restart needs blobs to recover".into());
    }
    let plan = Plan::new(n, device_len, blob, chunk, args.quick, recover_blobs)?;

    let (work, files, direct) = open_work(args, n, device_len)?;
    progress(format_args!(
        "{n} devices of {device_mib} MiB in {} ({}), {} KiB blobs, {} KiB chunks, {}",
        work.0.display(),
        if direct { "O_DIRECT" } else { "buffered" },
        blob >> 10,
        chunk >> 10,
        plan.rs
    ));

    let precondition_s = raw::precondition(&files)?;

    let media: Vec<Arc<dyn Media>> = files.iter().map(|f| f.clone() as Arc<dyn Media>).collect();
    let cfg = store_config(chunk);
    let measured = phases::run(&files, &media, &cfg, &plan)?;
    let (encode_gibps, decode_gibps) = codec::run(&plan)?;
    // The restart makes files of its own: free the main ones first (the disk holds one set).
    drop(media);
    drop(files);
    for i in 0..n {
        let path = work.0.join(format!("dev{i}.img"));
        std::fs::remove_file(&path).map_err(|e| format!("bench store: cannot remove {}: {e}", path.display()))?;
    }
    let recovery = recover::run(&work.0, &cfg, n, plan.recover_blobs, direct)?;
    drop(work);

    let results = report::Results {
        plan: &plan,
        quick: args.quick,
        direct,
        precondition_s,
        measured,
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

#[cfg(test)]
mod tests {
    #[test]
    fn object_sizes_are_bounded() {
        assert_eq!(super::parse_object_size("4KiB"), Ok(4096));
        assert_eq!(super::parse_object_size("1MiB"), Ok(1 << 20));
        assert!(super::parse_object_size("0").unwrap_err().contains("1 byte to 16 MiB"));
        assert!(super::parse_object_size("32MiB").is_err());
        assert!(super::parse_object_size("4 apples").is_err());
    }
}
