//! Crash restart: a writer process (`crash_writer.rs`) formats a store on device files of their
//! own, sized for the blob count (`--restart-blobs`, 1 M by default), puts that many small blobs
//! (1–4 KiB, `none(isolated)`, durability `none`) and flushes them, puts more without a flush,
//! and is killed with SIGKILL while it goes on putting, with journal batches in flight. The
//! reopen (checkpoint load, journal replay, verification of the last batch) is timed: the store serves from then on. The checkpoint that starts the new journal
//! generation is written by the store's journal writer after the open returns (`reo-store`
//! `recover.rs`); the time until it is durable — when a first `Sync` write could be acknowledged —
//! is measured apart (`recover_writable_s_per_million_blobs`, a flush right after the open).
//!
//! After the clock: every acknowledged blob must be live, once; every blob the writer put after
//! the acknowledgement and that survived the kill must be whole; a sample of the acknowledged
//! ones and all the survivors are read back and compared.

use super::crash_writer::{small_len, ACKNOWLEDGED, IN_FLIGHT};
use super::phases::Pattern;
use super::raw::{open_devices, DirectMode};
use super::{progress, GC_RESERVE, PUT_MARGIN, PUT_RECORD_BYTES};
use reo_media::Media;
use reo_store::{Layout, Store, StoreConfig};
use std::collections::HashSet;
use std::io::{BufRead, BufReader};
use std::os::unix::process::{CommandExt, ExitStatusExt};
use std::path::Path;
use std::process::{Command, Stdio};
use std::sync::{mpsc, Arc};
use std::time::{Duration, Instant};

/// How long the writer may take to acknowledge its blobs: far beyond a million small puts on a
/// slow disk, short enough that a hung writer fails the run.
const WRITER_DEADLINE: Duration = Duration::from_secs(1800);

/// What the crash restart measured.
pub struct Recovery {
    /// Blobs live after the restart: the acknowledged ones and the survivors.
    pub blobs: usize,
    /// Blobs the writer had acknowledged when it was killed.
    pub acknowledged: usize,
    /// Blobs the writer put after the acknowledged ones that the kill left whole.
    pub survivors: usize,
    /// Seconds of the timed `Store::open`.
    pub open_s: f64,
    pub s_per_million: f64,
    /// Seconds from the start of the open until a flush right after it returned: the new
    /// generation's checkpoint is then written, and writes are durable again.
    pub writable_s: f64,
    pub batches_replayed: u64,
    pub records_replayed: u64,
    /// Small puts per second in the writer (for information).
    pub puts_per_s: f64,
}

/// The size of each of `n` device files that hold `blobs` small blobs with room to spare and a
/// checkpoint region that takes all their records.
pub fn device_len_for(cfg: &StoreConfig, n: usize, blobs: usize) -> Result<u64, String> {
    const MIB: u64 = 1 << 20;
    // A small blob takes two 4 KiB sectors (its data, its trailer) on its one device.
    let need = blobs as u64 * 2 * 4096;
    let mut len = (need / n as u64 + 64 * MIB).div_ceil(MIB) * MIB;
    loop {
        let layout = Layout::plan(cfg, n, len, 1).map_err(|e| format!("bench store: crash restart: {e}"))?;
        let usable = u64::from(layout.zones).saturating_sub(GC_RESERVE + PUT_MARGIN + 1);
        // A quarter to spare: isolated puts seal a band for every device when one's share fills.
        let by_space = usable * layout.zone / (2 * 4096) * n as u64 * 3 / 4;
        let by_ckpt = layout.ckpt_len * 3 / 4 / PUT_RECORD_BYTES;
        if by_space >= blobs as u64 && by_ckpt >= blobs as u64 {
            return Ok(len);
        }
        len = (len + len / 4).div_ceil(MIB) * MIB;
        if len > 1 << 40 {
            return Err(format!("bench store: crash restart: no device size holds {blobs} blobs"));
        }
    }
}

/// Starts the writer on fresh files in `dir`, waits for its acknowledgement and kills it;
/// returns (acknowledged blobs, its puts/s, the device length).
fn write_and_kill(
    dir: &Path,
    cfg: &StoreConfig,
    n: usize,
    blobs: usize,
    direct: bool,
) -> Result<(usize, f64, u64), String> {
    // Room for the writer's puts after the timed ones, with some to keep putting until the kill.
    let len = device_len_for(cfg, n, blobs + 4 * IN_FLIGHT)?;
    std::fs::create_dir_all(dir).map_err(|e| format!("bench store: cannot create {}: {e}", dir.display()))?;
    let mode = if direct { DirectMode::On } else { DirectMode::Off };
    drop(open_devices(dir, n, len, mode)?);
    let exe = std::env::current_exe().map_err(|e| format!("bench store: crash restart: own executable: {e}"))?;
    let mut cmd = Command::new(exe);
    cmd.args(["bench", "store-writer", "--dir"]).arg(dir);
    cmd.args(["--devices", &n.to_string(), "--device-size", &(len >> 20).to_string()]);
    cmd.args(["--chunk", &(cfg.chunk_size >> 10).to_string(), "--blobs", &blobs.to_string()]);
    if !direct {
        cmd.arg("--no-direct");
    }
    // The writer dies with the benchmark, whatever kills the benchmark.
    // SAFETY: prctl is async-signal-safe and touches no memory of the parent.
    unsafe {
        cmd.pre_exec(|| {
            if libc::prctl(libc::PR_SET_PDEATHSIG, libc::SIGKILL) != 0 {
                return Err(std::io::Error::last_os_error());
            }
            Ok(())
        });
    }
    let mut child = cmd
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::inherit())
        .spawn()
        .map_err(|e| format!("bench store: crash restart: cannot start the writer: {e}"))?;
    let (tx, rx) = mpsc::channel();
    if let Some(out) = child.stdout.take() {
        std::thread::spawn(move || {
            let mut line = String::new();
            let _ = tx.send(BufReader::new(out).read_line(&mut line).map(|_| line));
        });
    }
    let read = rx.recv_timeout(WRITER_DEADLINE);
    // SIGKILL: no destructor, no flush, no checkpoint.
    let _ = child.kill();
    let status = child.wait().map_err(|e| format!("bench store: crash restart: writer: {e}"))?;
    let line = match read {
        Ok(Ok(line)) => line,
        Ok(Err(e)) => return Err(format!("bench store: crash restart: reading the writer's output: {e} ({status})")),
        Err(mpsc::RecvTimeoutError::Timeout) => {
            return Err(format!(
                "bench store: crash restart: the writer said nothing within {} s; killed it",
                WRITER_DEADLINE.as_secs()
            ))
        }
        Err(mpsc::RecvTimeoutError::Disconnected) => {
            return Err(format!("bench store: crash restart: the writer has no output ({status})"))
        }
    };
    let mut words = line.split_whitespace();
    let acked = match (words.next(), words.next(), words.next()) {
        (Some(ACKNOWLEDGED), Some(m), Some(rate)) => m.parse::<usize>().ok().zip(rate.parse::<f64>().ok()),
        _ => None,
    };
    let Some((m, rate)) = acked else {
        return Err(format!(
            "bench store: crash restart: the writer ended ({status}) with {:?} instead of its acknowledgement",
            line.trim_end()
        ));
    };
    if status.signal() != Some(libc::SIGKILL) {
        return Err(format!("bench store: crash restart: the writer ended by itself ({status}), not killed"));
    }
    if m != blobs + IN_FLIGHT {
        return Err(format!(
            "bench store: crash restart: the writer acknowledged {m} blobs, not {}",
            blobs + IN_FLIGHT
        ));
    }
    Ok((m, rate, len))
}

pub fn run(work: &Path, cfg: &StoreConfig, n: usize, blobs: usize, direct: bool) -> Result<Recovery, String> {
    let dir = work.join("restart");
    let (m, puts_per_s, len) = write_and_kill(&dir, cfg, n, blobs, direct)?;
    let mode = if direct { DirectMode::On } else { DirectMode::Off };
    let (files, _) = open_devices(&dir, n, len, mode)?;
    let media: Vec<Arc<dyn Media>> = files.iter().map(|f| f.clone() as Arc<dyn Media>).collect();

    let t0 = Instant::now();
    let (store, report) = Store::open(media, cfg).map_err(|e| format!("bench store: crash restart: {e}"))?;
    let open_s = t0.elapsed().as_secs_f64();
    store.flush().map_err(|e| format!("bench store: crash restart: flush after the open: {e}"))?;
    let writable_s = t0.elapsed().as_secs_f64();
    if report.formatted {
        return Err("bench store: crash restart: the store was formatted anew: nothing recovered".into());
    }
    if report.clean {
        return Err("bench store: crash restart: the store reopened clean: nothing was replayed".into());
    }
    let live = check_blobs(&store, m)?;
    store.close().map_err(|e| format!("bench store: close after crash restart: {e}"))?;
    drop(files);
    let _ = std::fs::remove_dir_all(&dir);
    let s_per_million = open_s * 1e6 / live as f64;
    progress(format_args!(
        "crash restart: {m} blobs acknowledged ({puts_per_s:.0} puts/s), writer killed, {} more survived; reopened \
         in {open_s:.3} s = {s_per_million:.3} s per million blobs ({} batches, {} records replayed); its \
         checkpoint durable after {writable_s:.3} s = {:.3} s per million",
        live - m,
        report.batches_replayed,
        report.records_replayed,
        writable_s * 1e6 / live as f64
    ));
    Ok(Recovery {
        blobs: live,
        acknowledged: m,
        survivors: live - m,
        open_s,
        s_per_million,
        writable_s,
        batches_replayed: report.batches_replayed,
        records_replayed: report.records_replayed,
        puts_per_s,
    })
}

/// Every acknowledged blob `0..acked` live once, every survivor put after them live once, and the
/// bytes of a sample of the acknowledged ones and of every survivor as written; returns the live
/// blob count.
fn check_blobs(store: &Store, acked: usize) -> Result<usize, String> {
    let pattern = Pattern::new(4096);
    let mut seen = vec![false; acked];
    let mut survivors = HashSet::new();
    let mut to_read = Vec::new();
    let blobs = store.blobs();
    let step = (acked / 64).max(1);
    for (loc, head) in &blobs {
        let i = head.get(..8).and_then(|b| b.try_into().ok()).map(u64::from_le_bytes).ok_or_else(|| {
            format!(
                "bench store: crash restart: the blob of sequence number {} has a header of {} bytes, not a blob index",
                loc.seq,
                head.len()
            )
        })?;
        let first = match seen.get_mut(i as usize) {
            Some(s) => !std::mem::replace(s, true),
            None => survivors.insert(i),
        };
        if !first {
            return Err(format!("bench store: crash restart: blob {i} is live twice"));
        }
        if i as usize >= acked || (i as usize).is_multiple_of(step) {
            to_read.push((i, *loc));
        }
    }
    if let Some(i) = seen.iter().position(|s| !s) {
        let lost = seen.iter().filter(|s| !**s).count();
        return Err(format!("bench store: crash restart: {lost} acknowledged blobs lost (the first: blob {i})"));
    }
    for (i, loc) in to_read {
        let got = store.read_all(&loc).map_err(|e| format!("bench store: crash restart: read of blob {i}: {e}"))?;
        if got.len() != small_len(i) {
            return Err(format!(
                "bench store: crash restart: blob {i} is {} bytes, was put with {}",
                got.len(),
                small_len(i)
            ));
        }
        pattern.check(&got, i, "crash restart")?;
    }
    Ok(blobs.len())
}

#[cfg(test)]
mod tests {
    use super::*;
    use reo_media::MemMedia;
    use reo_store::{Durability, Placement, PutOptions, Scheme};

    #[test]
    fn a_lost_or_wrong_acknowledged_blob_fails_the_check() {
        let devs: Vec<Arc<dyn Media>> = (0..4).map(|_| Arc::new(MemMedia::new(64 << 20)) as Arc<dyn Media>).collect();
        let (store, _) = Store::open(devs, &super::super::store_config(64 << 10)).unwrap();
        let pattern = Pattern::new(4096);
        let opts = PutOptions::new(Scheme::None(Placement::Isolated)).durability(Durability::None);
        let put = |i: u64, bytes: &[u8]| store.put(&i.to_le_bytes(), bytes, &opts).unwrap();
        for i in 0..20 {
            put(i, pattern.blob(i, small_len(i)));
        }
        assert_eq!(check_blobs(&store, 20).unwrap(), 20);
        let err = check_blobs(&store, 22).unwrap_err();
        assert!(err.contains("2 acknowledged blobs lost (the first: blob 20)"), "{err}");
        // A survivor put after the acknowledged ones is read back and compared too.
        let wrong = put(30, pattern.blob(31, small_len(30)));
        let err = check_blobs(&store, 20).unwrap_err();
        assert!(err.contains("blob 30"), "{err}");
        store.free(&wrong, Durability::None).unwrap();
        put(30, pattern.blob(30, small_len(30)));
        assert_eq!(check_blobs(&store, 20).unwrap(), 21);
        // A blob live twice, acknowledged or not, fails.
        put(30, pattern.blob(30, small_len(30)));
        let err = check_blobs(&store, 20).unwrap_err();
        assert!(err.contains("blob 30 is live twice"), "{err}");
        put(3, pattern.blob(3, small_len(3)));
        let err = check_blobs(&store, 40).unwrap_err();
        assert!(err.contains("is live twice"), "{err}");
    }

    #[test]
    fn the_restart_files_hold_a_million_blobs_and_their_checkpoint() {
        let cfg = super::super::store_config(64 << 10);
        let len = device_len_for(&cfg, 4, 1_000_000).unwrap();
        let layout = Layout::plan(&cfg, 4, len, 1).unwrap();
        assert!(layout.ckpt_len / PUT_RECORD_BYTES >= 1_000_000);
        assert!(u64::from(layout.zones) * layout.zone * 4 >= 1_000_000 * 8192);
        assert!(len < 4 << 30, "{len} bytes per device for 1 M small blobs");
    }
}
