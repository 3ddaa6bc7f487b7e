//! `reo bench rebuild`: device replacement and prioritized rebuild on real files.
//!
//! Fills an array of device files to a fill level with a mix of the cache's four classes (blob
//! headers carry the class byte at offset 7, as the cache's header does; class 0 and 1 are
//! replicated on every device, class 2 is rs(N−2, 2), class 3 none(isolated)), fails a device,
//! measures the sequential write bandwidth of a fresh replacement file (same I/O size as the
//! rebuild's writes, fdatasync at the end), replaces the device and rebuilds in class order. The
//! last stdout line is one JSON object: `raw_write_mibps`, `rebuild_write_mibps`, `rebuild_s`,
//! and per class ("0".."3") `class_bytes` and `class_restored_s`, with the targets checked.
//!
//! After the clock stops, the rebuild is checked from the replacement itself (`verify`): a scrub
//! of every chunk, then every redundant blob read back and compared with what was put while the
//! other devices are failed, so that the replacement's chunks are the ones read.

use clap::Args;
use reo_media::{AlignedBuf, FileMedia, FileOptions, Media};
use reo_store::{
    Durability, Placement, PutOptions, RebuildOptions, RebuildState, Scheme, ScrubOptions, Store, StoreConfig,
};
use serde_json::json;
use std::path::{Path, PathBuf};
use std::process::ExitCode;
use std::sync::Arc;
use std::time::Instant;

const MIB: u64 = 1 << 20;

#[derive(Args, Debug)]
pub struct BenchRebuildArgs {
    /// Directory for the device files (a fresh subdirectory is made and removed). Default: the
    /// system temporary directory.
    #[arg(long)]
    pub dir: Option<PathBuf>,
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

/// The bytes of the i-th blob: its index, then zeros.
fn payload(i: u64, len: u64) -> Vec<u8> {
    let mut data = vec![0u8; len as usize];
    data[..8].copy_from_slice(&i.to_le_bytes());
    data
}

/// A blob header like the cache's: magic, version, kind, flags (bit 0 dirty), class at offset 7.
fn header(class: u8, i: u64) -> Vec<u8> {
    let mut h = b"RCB1".to_vec();
    h.extend([1, 0, u8::from(class == 1), class]);
    h.extend(i.to_le_bytes());
    h
}

fn open_file(path: &Path, len: u64, direct: bool) -> Result<(Arc<FileMedia>, bool), String> {
    let open = |direct| FileMedia::open(path, &FileOptions { direct, create_len: Some(len) });
    let r = match open(direct) {
        Err(e) if direct && e.kind() == std::io::ErrorKind::Unsupported => open(false).map(|f| (f, false)),
        r => r.map(|f| (f, direct)),
    };
    r.map(|(f, d)| (Arc::new(f), d)).map_err(|e| format!("bench rebuild: cannot create {}: {e}", path.display()))
}

/// Sequential write bandwidth of `f` over `bytes` in `io`-byte writes, fdatasync at the end.
fn raw_write(f: &FileMedia, from: u64, bytes: u64, io: usize) -> Result<f64, String> {
    let mut buf = AlignedBuf::zeroed(io);
    for (i, b) in buf.iter_mut().enumerate() {
        *b = (i * 131 % 251) as u8;
    }
    let t = Instant::now();
    let mut off = from;
    while off + io as u64 <= from + bytes {
        f.write_at(&buf, off).map_err(|e| format!("bench rebuild: raw write: {e}"))?;
        off += io as u64;
    }
    f.sync().map_err(|e| format!("bench rebuild: raw sync: {e}"))?;
    Ok((off - from) as f64 / MIB as f64 / t.elapsed().as_secs_f64())
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
    let parent = args.dir.clone().unwrap_or_else(std::env::temp_dir);
    let dir = parent.join(format!("reo-bench-rebuild-{}", std::process::id()));
    std::fs::create_dir_all(&dir).map_err(|e| format!("bench rebuild: cannot create {}: {e}", dir.display()))?;
    let result = bench(args, n, blob, len, &dir);
    let _ = std::fs::remove_dir_all(&dir);
    result
}

fn bench(args: &BenchRebuildArgs, n: usize, blob: u64, len: u64, dir: &Path) -> Result<ExitCode, String> {
    let mut direct = !args.no_direct;
    let mut devs: Vec<Arc<dyn Media>> = Vec::new();
    for i in 0..n {
        let (f, d) = open_file(&dir.join(format!("dev{i}.img")), len, direct)?;
        direct = d;
        devs.push(f);
    }
    let cfg = StoreConfig::default();
    let (store, _) = Store::open(devs, &cfg).map_err(|e| format!("bench rebuild: cannot create the store: {e}"))?;
    let layout = store.layout();
    // Fill: device bytes of live blobs up to the fill level of the zones.
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
    let failed = 1;
    store.fail_device(failed).map_err(|e| e.to_string())?;
    // The replacement file: preconditioned (first-write allocation is not part of either
    // figure), then its raw sequential write bandwidth at the rebuild's I/O size.
    let (spare, _) = open_file(&dir.join("spare.img"), len, direct)?;
    let io = (blob as usize).div_ceil(4096) * 4096;
    let span = (len - layout.data_off) / io as u64 * io as u64;
    raw_write(&spare, layout.data_off, span, io)?;
    let raw = raw_write(&spare, layout.data_off, span, io)?;
    let opts =
        RebuildOptions { priority: Arc::new(|_, h: &[u8]| h.get(7).copied().unwrap_or(3)), ..Default::default() };
    let p = store.replace_device(failed, spare, opts).map_err(|e| format!("bench rebuild: replace: {e}"))?.wait();
    if p.state != RebuildState::Done {
        return Err(format!("bench rebuild: rebuild did not finish: {:?}", p.state));
    }
    let rebuild_s = p.elapsed.as_secs_f64();
    let rebuild_mibps = p.bytes_done as f64 / MIB as f64 / rebuild_s;
    let mut class_bytes = serde_json::Map::new();
    let mut class_s = serde_json::Map::new();
    let mut class_target = serde_json::Map::new();
    let mut met = rebuild_mibps >= 0.8 * raw;
    let mut cum = 0u64;
    for c in 0..4u8 {
        let cp = p.classes.get(&c).cloned().unwrap_or_default();
        cum += cp.bytes_total;
        let at = cp.restored_at.map(|d| d.as_secs_f64()).unwrap_or(0.0);
        let target = cum as f64 / p.bytes_total.max(1) as f64 * rebuild_s + 0.05 * rebuild_s;
        if c < 3 {
            met &= at <= target;
            class_target.insert(c.to_string(), json!(target));
        }
        class_bytes.insert(c.to_string(), json!(cp.bytes_total));
        class_s.insert(c.to_string(), json!(at));
    }
    let mut v = json!({
        "bench": "rebuild",
        "devices": n,
        "device_mib": len / MIB,
        "fill": args.fill,
        "blob_bytes": blob,
        "blobs": i,
        "direct": direct,
        "raw_write_mibps": raw,
        "rebuild_write_mibps": rebuild_mibps,
        "rebuild_ratio": rebuild_mibps / raw,
        "rebuild_s": rebuild_s,
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
    let verified = verify(&store, n, failed, blob)?;
    v["verified_blobs"] = json!(verified);
    if !args.json {
        eprintln!(
            "raw write {raw:.0} MiB/s, rebuild {rebuild_mibps:.0} MiB/s ({:.2}x) in {rebuild_s:.2} s, {} lost",
            rebuild_mibps / raw,
            p.lost.len()
        );
    }
    // `verify` failed every device but the replacement: nothing more to close cleanly.
    store.kill();
    println!("{v}");
    Ok(ExitCode::SUCCESS)
}

/// Checks what the rebuild wrote onto device `rebuilt`, from that device: a scrub must find every
/// chunk of every live blob readable and matching its checksum (which binds the blob's sequence
/// number, so a chunk of another blob fails it); then, with two other devices failed, every
/// Reed-Solomon blob is read (the replacement is among the k devices left) and, with every other
/// device failed, every replicated blob (the replacement is the only copy left), and each is
/// compared byte for byte with what was put. Returns the number of blobs compared.
fn verify(store: &Store, n: usize, rebuilt: usize, blob: u64) -> Result<u64, String> {
    let scrub = store.scrub(&ScrubOptions::default());
    if scrub.chunks_bad > 0 || scrub.chunks_skipped > 0 || !scrub.unrecoverable.is_empty() {
        return Err(format!(
            "bench rebuild: scrub after the rebuild: {} bad, {} skipped, {} unrecoverable chunks",
            scrub.chunks_bad,
            scrub.chunks_skipped,
            scrub.unrecoverable.len()
        ));
    }
    let blobs = store.blobs();
    let others: Vec<usize> = (0..n).filter(|&d| d != rebuilt).collect();
    let mut compared = 0;
    let mut check = |keep: fn(&Scheme) -> bool| -> Result<(), String> {
        for (loc, head) in blobs.iter().filter(|(l, _)| keep(&l.scheme)) {
            let i = head.get(8..16).and_then(|b| b.try_into().ok()).map(u64::from_le_bytes);
            let i = i.ok_or_else(|| format!("bench rebuild: blob {} has a foreign header", loc.seq))?;
            let got = store.read_all(loc).map_err(|e| format!("bench rebuild: read back blob {i}: {e}"))?;
            if got != payload(i, blob) {
                return Err(format!("bench rebuild: blob {i} read back from the rebuilt device differs"));
            }
            compared += 1;
        }
        Ok(())
    };
    for &d in &others[..2] {
        store.fail_device(d).map_err(|e| e.to_string())?;
    }
    check(|s| matches!(s, Scheme::Rs { .. }))?;
    for &d in &others[2..] {
        store.fail_device(d).map_err(|e| e.to_string())?;
    }
    check(|s| matches!(s, Scheme::Replicate(_)))?;
    Ok(compared)
}
