//! `reo bench rebuild`: device replacement and prioritized rebuild on real files.
//!
//! Fills an array of device files to a fill level with a mix of the cache's four classes (blob
//! headers carry the class byte at offset 7, as the cache's header does; class 0 and 1 are
//! replicated on every device, class 2 is rs(N−2, 2), class 3 none(isolated)), each blob with
//! bytes of its own, fails a device, measures the raw rates of the same disk on the replacement
//! file (sequential writes at the rebuild's largest coalesced write, then reads at the blob size
//! from as many threads as devices survive, as the rebuild reads them), replaces
//! the device and rebuilds in class order, counting every byte the store reads and writes.
//!
//! The rebuild is judged against the I/O floor of the same run: `rebuild_floor_s = bytes_read /
//! raw_read + bytes_written / raw_write`, the time the files' own bandwidth needs to move what the
//! rebuild moved when they share one disk; `rebuild_io_efficiency = rebuild_floor_s / rebuild_s`
//! must reach 0.7. When every device has its own directory on its own filesystem device (`--dir`
//! once per device), reads and writes do not share a disk, and the target is the rebuild's write
//! rate against the replacement's raw write rate (≥ 0.8). Per class, the time its bytes are
//! restored is checked against its share of the bytes. The last stdout line is one JSON object.
//!
//! After the clock stops, the run fails unless the lost blobs are exactly the isolated blobs of
//! the failed device, and every redundant blob is read back from the replacement and compared
//! (`check.rs`).

mod check;
mod files;

use check::{check_losses, expected_losses, header, payload, verify};
use clap::Args;
use files::{moved, raw_read, raw_write, DeviceDirs, DeviceFile};
use reo_media::Media;
use reo_store::{
    Durability, Placement, PutOptions, RebuildOptions, RebuildState, Scheme, Store, StoreConfig, REBUILD_MAX_WRITE,
};
use serde_json::json;
use std::path::PathBuf;
use std::process::ExitCode;
use std::sync::Arc;
use std::time::Instant;

const MIB: u64 = 1 << 20;

/// Target of `rebuild_io_efficiency` when the devices share a disk.
const IO_EFFICIENCY_TARGET: f64 = 0.7;
/// Target of the rebuild's write rate against the replacement's raw rate on separate devices.
const SEPARATE_RATIO_TARGET: f64 = 0.8;

#[derive(Args, Debug)]
pub struct BenchRebuildArgs {
    /// Directory for the device files (a fresh subdirectory is made and removed): once for all
    /// devices, or once per device (on separate disks, the bandwidth target is the write ratio).
    /// Default: the system temporary directory.
    #[arg(long)]
    pub dir: Vec<PathBuf>,
    /// Number of device files (at least 4: class 2 is rs(N−2, 2)).
    #[arg(long, default_value_t = 4)]
    pub devices: usize,
    /// Size of each device file in MiB [default: 1024; 256 with --quick].
    #[arg(long)]
    pub device_size: Option<u64>,
    /// Share of the array's capacity to fill with live blobs, 0.05–0.9.
    #[arg(long, default_value_t = 0.6)]
    pub fill: f64,
    /// Blob size in KiB.
    #[arg(long, default_value_t = 1024)]
    pub blob_size: u64,
    /// Smaller devices: finishes in well under a minute.
    #[arg(long)]
    pub quick: bool,
    /// Print only the JSON object on stdout.
    #[arg(long)]
    pub json: bool,
    /// Use buffered I/O even where O_DIRECT is supported.
    #[arg(long)]
    pub no_direct: bool,
}

/// Class of the i-th blob: 10% class 0, 15% class 1, 35% class 2, 40% class 3.
fn class_of(i: u64) -> u8 {
    match i % 20 {
        0..=1 => 0,
        2..=4 => 1,
        5..=11 => 2,
        _ => 3,
    }
}

fn scheme_of(class: u8, n: usize) -> Scheme {
    match class {
        0 | 1 => Scheme::Replicate(n as u8),
        2 => Scheme::Rs { k: (n - 2) as u8, p: 2 },
        _ => Scheme::None(Placement::Isolated),
    }
}

pub fn run(args: &BenchRebuildArgs) -> Result<ExitCode, String> {
    let n = args.devices;
    if !(4..=64).contains(&n) {
        return Err(format!("bench rebuild: --devices {n}: needs 4 to 64 devices (class 2 is rs(N-2, 2))"));
    }
    if !(0.05..=0.9).contains(&args.fill) {
        return Err(format!("bench rebuild: --fill {}: must be between 0.05 and 0.9", args.fill));
    }
    let blob = args
        .blob_size
        .checked_mul(1024)
        .filter(|&b| b > 0 && b <= 16 * MIB)
        .ok_or("bench rebuild: --blob-size must be 1..16384 KiB")?;
    let len = args
        .device_size
        .unwrap_or(if args.quick { 256 } else { 1024 })
        .checked_mul(MIB)
        .ok_or("bench rebuild: --device-size too large")?;
    let dirs = DeviceDirs::create(&args.dir, n)?;
    bench(args, n, blob, len, &dirs)
}

/// Fills a fresh store on `n` files with blobs of every class up to the fill level.
fn fill(store: &Store, args: &BenchRebuildArgs, n: usize, blob: u64) -> Result<u64, String> {
    let layout = store.layout();
    let capacity = layout.zone * u64::from(layout.zones) * n as u64;
    let t = Instant::now();
    let mut i = 0u64;
    loop {
        let used: u64 = store.space().per_scheme.iter().map(|(_, s)| s.live_device_bytes).sum();
        if used as f64 >= args.fill * capacity as f64 {
            break;
        }
        let class = class_of(i);
        let opts = PutOptions::new(scheme_of(class, n)).placement(i);
        match store.put(&header(class, i), &payload(i, blob), &opts) {
            Ok(_) => i += 1,
            Err(reo_store::Error::OutOfSpace { .. }) => break,
            Err(e) => return Err(format!("bench rebuild: fill: {e}")),
        }
    }
    store.flush().map_err(|e| format!("bench rebuild: flush: {e}"))?;
    crate::progress::step("bench rebuild", &format!("filled {i} blobs of {blob} B in {:.1?}", t.elapsed()));
    Ok(i)
}

fn bench(args: &BenchRebuildArgs, n: usize, blob: u64, len: u64, dirs: &DeviceDirs) -> Result<ExitCode, String> {
    let mut direct = !args.no_direct;
    let mut files = Vec::with_capacity(n);
    for d in 0..n {
        let (f, is_direct) = DeviceFile::create(&dirs.file(d, "dev"), len, direct)?;
        direct = is_direct;
        files.push(f);
    }
    let devs: Vec<Arc<dyn Media>> = files.iter().map(DeviceFile::counted).collect();
    let (store, _) = Store::open(devs, &StoreConfig::default())
        .map_err(|e| format!("bench rebuild: cannot create the store: {e}"))?;
    let layout = store.layout();
    let blobs = fill(&store, args, n, blob)?;
    if blobs < 20 {
        return Err(format!(
            "bench rebuild: the devices took {blobs} blobs: too few for every class (raise --device-size or --fill)"
        ));
    }
    let failed = 1;
    let expected_lost = expected_losses(&store, failed);
    if expected_lost == 0 {
        return Err("bench rebuild: no isolated blob on the failed device: the losses could not be checked".into());
    }
    store.fail_device(failed).map_err(|e| format!("bench rebuild: fail device {failed}: {e}"))?;
    // The raw rates of the same disk on the replacement, each at the rebuild's best: writes of
    // its largest coalesced size, preconditioned first (first-write allocation is not part of
    // either figure), then reads of what was written at the blob size from one thread per
    // surviving device. Not a surviving device: the bands its blobs never reached are holes,
    // which read as zeros without touching the disk and would inflate the read rate.
    let (spare, _) = DeviceFile::create(&dirs.file(failed, "spare"), len, direct)?;
    let read_io = (blob as usize).div_ceil(4096) * 4096;
    let span = (len - layout.data_off) / REBUILD_MAX_WRITE as u64 * REBUILD_MAX_WRITE as u64;
    if span < (REBUILD_MAX_WRITE as u64).max(read_io as u64 * (n as u64 - 1)) {
        return Err(format!("bench rebuild: devices of {} MiB are too small to measure their raw rates", len / MIB));
    }
    raw_write(&spare.raw, layout.data_off, span, REBUILD_MAX_WRITE, 0)?;
    let raw_write_bps = raw_write(&spare.raw, layout.data_off, span, REBUILD_MAX_WRITE, 1)?;
    let raw_read_bps = raw_read(&spare.raw, layout.data_off, span, read_io, n - 1)?;
    if !(raw_write_bps.is_finite() && raw_write_bps > 0.0 && raw_read_bps.is_finite() && raw_read_bps > 0.0) {
        return Err(format!(
            "bench rebuild: raw rates not measurable ({raw_write_bps} B/s written, {raw_read_bps} B/s read)"
        ));
    }

    let all: Vec<&DeviceFile> = files.iter().chain([&spare]).collect();
    let before = moved(&all);
    let opts =
        RebuildOptions { priority: Arc::new(|_, h: &[u8]| h.get(7).copied().unwrap_or(3)), ..Default::default() };
    let p = store.replace_device(failed, spare.counted(), opts).map_err(|e| format!("bench rebuild: replace: {e}"))?;
    let p = p.wait();
    let after = moved(&all);
    if p.state != RebuildState::Done {
        return Err(format!("bench rebuild: rebuild did not finish: {:?}", p.state));
    }
    if p.unwritten > 0 {
        return Err(format!("bench rebuild: the replacement refused {} blobs' columns", p.unwritten));
    }
    check_losses(&p.lost, failed, expected_lost)?;
    let (bytes_read, bytes_written) = (after.0 - before.0, after.1 - before.1);
    let rebuild_s = p.elapsed.as_secs_f64();
    let floor_s = bytes_read as f64 / raw_read_bps + bytes_written as f64 / raw_write_bps;
    let io_efficiency = floor_s / rebuild_s;
    let write_bps = p.bytes_done as f64 / rebuild_s;
    let ratio = write_bps / raw_write_bps;
    let separate = dirs.separate();
    let mut met = if separate { ratio >= SEPARATE_RATIO_TARGET } else { io_efficiency >= IO_EFFICIENCY_TARGET };
    let mut class_bytes = serde_json::Map::new();
    let mut class_s = serde_json::Map::new();
    let mut class_target = serde_json::Map::new();
    let mut cum = 0u64;
    for c in 0..4u8 {
        let cp = p.classes.get(&c).cloned().unwrap_or_default();
        cum += cp.bytes_total;
        let at = match cp.restored_at {
            Some(d) => d.as_secs_f64(),
            None if cp.bytes_total == 0 => 0.0,
            None => {
                return Err(format!(
                    "bench rebuild: class {c} has {} bytes to restore but was never restored",
                    cp.bytes_total
                ))
            }
        };
        let target = cum as f64 / p.bytes_total.max(1) as f64 * rebuild_s + 0.05 * rebuild_s;
        if c < 3 {
            met &= at <= target;
            class_target.insert(c.to_string(), json!(target));
        }
        class_bytes.insert(c.to_string(), json!(cp.bytes_total));
        class_s.insert(c.to_string(), json!(at));
    }
    let mibps = |bps: f64| bps / MIB as f64;
    let mut v = json!({
        "bench": "rebuild",
        "devices": n,
        "separate_devices": separate,
        "device_mib": len / MIB,
        "fill": args.fill,
        "blob_bytes": blob,
        "blobs": blobs,
        "direct": direct,
        "raw_read_mibps": mibps(raw_read_bps),
        "raw_write_mibps": mibps(raw_write_bps),
        "rebuild_s": rebuild_s,
        "rebuild_bytes_read": bytes_read,
        "rebuild_bytes_written": bytes_written,
        "rebuild_floor_s": floor_s,
        "rebuild_io_efficiency": io_efficiency,
        "rebuild_write_mibps": mibps(write_bps),
        "rebuild_ratio": ratio,
        "bandwidth_target": if separate { "rebuild_ratio >= 0.8" } else { "rebuild_io_efficiency >= 0.7" },
        "rebuild_bytes": p.bytes_done,
        "rebuilt_blobs": p.blobs_done,
        "lost_blobs": p.lost.len(),
        "class_bytes": class_bytes,
        "class_restored_s": class_s,
        "class_target_s": class_target,
        "targets_met": met,
    });
    // Lost blobs (class 3 wholly on the failed device) are dropped, as the cache drops them.
    for loc in &p.lost {
        store.free(loc, Durability::None).map_err(|e| format!("bench rebuild: drop a lost blob: {e}"))?;
    }
    if store.blobs().len() as u64 != blobs - p.lost.len() as u64 {
        return Err(format!(
            "bench rebuild: {} blobs live after dropping the {} lost, {blobs} put",
            store.blobs().len(),
            p.lost.len()
        ));
    }
    let redundant = (0..blobs).filter(|&i| class_of(i) < 3).count() as u64;
    v["verified_blobs"] = json!(verify(&store, n, failed, blob, redundant)?);
    if !args.json {
        eprintln!(
            "raw read {:.0} MiB/s, raw write {:.0} MiB/s; rebuild read {:.1} MB, wrote {:.1} MB in {rebuild_s:.3} s \
             (floor {floor_s:.3} s: I/O efficiency {io_efficiency:.2}; write ratio {ratio:.2}), {} lost as expected",
            mibps(raw_read_bps),
            mibps(raw_write_bps),
            bytes_read as f64 / 1e6,
            bytes_written as f64 / 1e6,
            p.lost.len()
        );
    }
    // `verify` failed every device but the replacement: nothing more to close cleanly.
    store.kill();
    println!("{v}");
    Ok(ExitCode::SUCCESS)
}
