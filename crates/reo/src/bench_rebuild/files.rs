//! The device files of `reo bench rebuild`: where they live (one directory, or one per device),
//! their I/O counters, and the raw read and write rates of the same files that the rebuild is
//! compared with.

use reo_gateway::device_io::{CountedMedia, DeviceIo};
use reo_media::{AlignedBuf, FileMedia, FileOptions, Media};
use std::os::unix::fs::MetadataExt;
use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::Instant;

/// The working directories: one per device, made fresh and removed (with the files) when dropped.
pub struct DeviceDirs {
    dirs: Vec<PathBuf>,
    /// Every device's directory is on its own filesystem device (its own bandwidth).
    separate: bool,
}

impl DeviceDirs {
    /// `parents` is empty (the system temporary directory), one directory for every device file,
    /// or one per device.
    pub fn create(parents: &[PathBuf], n: usize) -> Result<DeviceDirs, String> {
        let parents: Vec<PathBuf> = match parents.len() {
            0 => vec![std::env::temp_dir(); n],
            1 => vec![parents[0].clone(); n],
            m if m == n => parents.to_vec(),
            m => return Err(format!("bench rebuild: --dir given {m} times: give it once, or once per device ({n})")),
        };
        let mut ids = Vec::with_capacity(n);
        for p in &parents {
            let meta = std::fs::metadata(p).map_err(|e| format!("bench rebuild: --dir {}: {e}", p.display()))?;
            ids.push(meta.dev());
        }
        ids.sort_unstable();
        ids.dedup();
        let separate = ids.len() == n;
        let mut made = DeviceDirs { dirs: Vec::with_capacity(n), separate };
        for (d, p) in parents.iter().enumerate() {
            let dir = p.join(format!("reo-bench-rebuild-{}-{d}", std::process::id()));
            std::fs::create_dir_all(&dir)
                .map_err(|e| format!("bench rebuild: cannot create {}: {e}", dir.display()))?;
            made.dirs.push(dir);
        }
        Ok(made)
    }

    /// Are the devices on distinct filesystem devices?
    pub fn separate(&self) -> bool {
        self.separate
    }

    /// The file of device `d`; `name` tells a replacement from the original.
    pub fn file(&self, d: usize, name: &str) -> PathBuf {
        self.dirs[d].join(format!("{name}{d}.img"))
    }
}

impl Drop for DeviceDirs {
    fn drop(&mut self) {
        for d in &self.dirs {
            let _ = std::fs::remove_dir_all(d);
        }
    }
}

/// A device file, and the same file with its I/O counted (what the store is given).
pub struct DeviceFile {
    pub raw: Arc<FileMedia>,
    pub io: Arc<DeviceIo>,
}

impl DeviceFile {
    /// Creates `path` of `len` bytes, with O_DIRECT if `direct` and the filesystem supports it;
    /// also returns whether it is direct.
    pub fn create(path: &Path, len: u64, direct: bool) -> Result<(DeviceFile, bool), String> {
        let open = |direct| FileMedia::open(path, &FileOptions { direct, create_len: Some(len) });
        let r = match open(direct) {
            Err(e) if direct && e.kind() == std::io::ErrorKind::Unsupported => open(false).map(|f| (f, false)),
            r => r.map(|f| (f, direct)),
        };
        let (f, direct) = r.map_err(|e| format!("bench rebuild: cannot create {}: {e}", path.display()))?;
        Ok((DeviceFile { raw: Arc::new(f), io: Arc::new(DeviceIo::default()) }, direct))
    }

    /// The file as the store sees it: every call counted.
    pub fn counted(&self) -> Arc<dyn Media> {
        Arc::new(CountedMedia::new(self.raw.clone(), self.io.clone()))
    }
}

/// Bytes `(read, written)` so far by the store on `files`.
pub fn moved(files: &[&DeviceFile]) -> (u64, u64) {
    files.iter().map(|f| f.io.snapshot()).fold((0, 0), |(r, w), s| (r + s[1], w + s[3]))
}

/// Sequential write rate of `f` in bytes per second over `[from, from + bytes)` in `io`-byte
/// writes, fdatasync at the end. The bytes are like the blobs': incompressible, and every 4 KiB
/// sector distinct (its offset and `pass` stamped in), so that a disk that compresses, dedups or
/// caches repeated blocks gives them no advantage the rebuild's bytes would not get.
pub fn raw_write(f: &FileMedia, from: u64, bytes: u64, io: usize, pass: u64) -> Result<f64, String> {
    let mut buf = AlignedBuf::zeroed(io);
    buf.copy_from_slice(&super::check::payload(pass, io as u64));
    let t = Instant::now();
    let mut off = from;
    while off + io as u64 <= from + bytes {
        for (k, sector) in buf.chunks_mut(4096).enumerate() {
            sector[..8].copy_from_slice(&(off + k as u64 * 4096).to_le_bytes());
            sector[8..16].copy_from_slice(&pass.to_le_bytes());
        }
        f.write_at(&buf, off).map_err(|e| format!("bench rebuild: raw write: {e}"))?;
        off += io as u64;
    }
    f.sync().map_err(|e| format!("bench rebuild: raw sync: {e}"))?;
    Ok((off - from) as f64 / t.elapsed().as_secs_f64())
}

/// Sequential read rate of `f` in bytes per second over `[from, from + bytes)` in `io`-byte reads
/// from `threads` threads, each reading its own contiguous part: the rebuild reads the surviving
/// devices at once, so its floor is the disk's rate under that many concurrent readers.
pub fn raw_read(f: &FileMedia, from: u64, bytes: u64, io: usize, threads: usize) -> Result<f64, String> {
    let ios = bytes / io as u64;
    let per = ios.div_ceil(threads as u64);
    let t = Instant::now();
    let done = std::thread::scope(|s| {
        let parts: Vec<_> = (0..threads as u64)
            .map(|k| {
                s.spawn(move || -> Result<u64, String> {
                    let mut buf = AlignedBuf::zeroed(io);
                    let mut read = 0;
                    for j in k * per..((k + 1) * per).min(ios) {
                        f.read_at(&mut buf, from + j * io as u64)
                            .map_err(|e| format!("bench rebuild: raw read: {e}"))?;
                        read += io as u64;
                    }
                    Ok(read)
                })
            })
            .collect();
        parts
            .into_iter()
            .map(|h| h.join().map_err(|_| "bench rebuild: a raw reader panicked".to_string())?)
            .sum::<Result<u64, String>>()
    })?;
    Ok(done as f64 / t.elapsed().as_secs_f64())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn one_directory_for_all_devices_is_not_separate_and_a_wrong_count_is_refused() {
        let tmp = tempfile::tempdir().unwrap();
        let dirs = DeviceDirs::create(&[tmp.path().to_path_buf()], 4).unwrap();
        assert!(!dirs.separate());
        assert_ne!(dirs.file(0, "dev"), dirs.file(1, "dev"));
        assert!(dirs.file(1, "dev").parent().unwrap().is_dir());
        let same = vec![tmp.path().to_path_buf(); 4];
        assert!(!DeviceDirs::create(&same, 4).unwrap().separate());
        let err = DeviceDirs::create(&same[..2], 4).err().unwrap();
        assert!(err.contains("once per device"), "{err}");
    }

    #[test]
    fn the_counters_see_what_the_store_moves() {
        let tmp = tempfile::tempdir().unwrap();
        let (f, _) = DeviceFile::create(&tmp.path().join("d.img"), 1 << 20, false).unwrap();
        let m = f.counted();
        m.write_at(&[7u8; 8192], 4096).unwrap();
        let mut back = [0u8; 4096];
        m.read_at(&mut back, 8192).unwrap();
        assert_eq!(back, [7u8; 4096]);
        assert_eq!(moved(&[&f]), (4096, 8192));
    }
}
