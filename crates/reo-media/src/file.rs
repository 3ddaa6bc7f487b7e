//! [`FileMedia`]: a device backed by a regular file or a block device, optionally opened with
//! O_DIRECT. Owns opening (creating and sizing a file, sizing a block device), the O_DIRECT
//! alignment rules and the bounce buffer for unaligned buffer addresses.

use crate::{check_range, AlignedBuf, Media, ALIGN};
use std::fs::{File, OpenOptions};
use std::io;
use std::os::unix::fs::{FileExt, FileTypeExt, OpenOptionsExt};
use std::os::unix::io::AsRawFd;
use std::path::{Path, PathBuf};

/// Smallest usable device.
const MIN_LEN: u64 = 1 << 20;

/// `BLKGETSIZE64` = `_IOR(0x12, 114, size_t)`; libc does not export it.
#[cfg(any(
    target_arch = "mips",
    target_arch = "mips64",
    target_arch = "powerpc",
    target_arch = "powerpc64",
    target_arch = "sparc",
    target_arch = "sparc64"
))]
const BLKGETSIZE64: libc::Ioctl = 0x4008_1272u32 as libc::Ioctl;
#[cfg(not(any(
    target_arch = "mips",
    target_arch = "mips64",
    target_arch = "powerpc",
    target_arch = "powerpc64",
    target_arch = "sparc",
    target_arch = "sparc64"
)))]
const BLKGETSIZE64: libc::Ioctl = 0x8008_1272u32 as libc::Ioctl;

/// How to open a [`FileMedia`].
#[derive(Debug, Clone, Default)]
pub struct FileOptions {
    /// Open with O_DIRECT (bypass the page cache). Offsets and lengths must then be multiples of
    /// [`ALIGN`].
    pub direct: bool,
    /// Regular files: create the file if missing and set its length to this many bytes.
    /// `None`: the file must exist and its length is the device size. Block devices: ignored,
    /// except that it must not exceed the device size.
    pub create_len: Option<u64>,
}

/// A regular file or block device used as a device.
#[derive(Debug)]
pub struct FileMedia {
    file: File,
    path: PathBuf,
    len: u64,
    direct: bool,
}

fn err(path: &Path, kind: io::ErrorKind, what: impl std::fmt::Display) -> io::Error {
    io::Error::new(kind, format!("device {}: {what}", path.display()))
}

fn ctx(path: &Path, what: &str, e: io::Error) -> io::Error {
    err(path, e.kind(), format_args!("{what}: {e}"))
}

impl FileMedia {
    /// Opens (and for a regular file with `create_len`, creates or resizes) the device at `path`.
    pub fn open(path: &Path, opts: &FileOptions) -> io::Result<FileMedia> {
        let meta = match std::fs::metadata(path) {
            Ok(m) => Some(m),
            Err(e) if e.kind() == io::ErrorKind::NotFound => None,
            Err(e) => return Err(ctx(path, "cannot stat", e)),
        };
        let len = match &meta {
            Some(m) if m.file_type().is_block_device() => {
                let f = Self::open_rw(path, false)?;
                let size = block_device_size(&f).map_err(|e| ctx(path, "BLKGETSIZE64", e))?;
                if let Some(want) = opts.create_len.filter(|&n| n > size) {
                    return Err(err(
                        path,
                        io::ErrorKind::InvalidInput,
                        format_args!("requested size {want} bytes exceeds the block device size {size} bytes"),
                    ));
                }
                size
            }
            Some(m) if !m.file_type().is_file() => {
                return Err(err(path, io::ErrorKind::InvalidInput, "not a regular file or block device"))
            }
            _ => Self::prepare_file(path, meta.is_some(), opts.create_len)?,
        };
        if len < MIN_LEN {
            return Err(err(
                path,
                io::ErrorKind::InvalidInput,
                format_args!("size {len} bytes is below the minimum of {MIN_LEN} bytes (1 MiB)"),
            ));
        }
        // Creation and sizing used a plain handle: open the I/O handle now, so that a filesystem
        // refusing O_DIRECT never leaves a half-made file behind.
        let file = Self::open_rw(path, opts.direct)?;
        Ok(FileMedia { file, path: path.to_path_buf(), len: len / ALIGN as u64 * ALIGN as u64, direct: opts.direct })
    }

    /// Creates and sizes a regular file as asked; returns its length.
    fn prepare_file(path: &Path, exists: bool, create_len: Option<u64>) -> io::Result<u64> {
        let Some(want) = create_len else {
            if !exists {
                return Err(err(path, io::ErrorKind::NotFound, "no such file (give a size to create it)"));
            }
            let f = Self::open_rw(path, false)?;
            return Ok(f.metadata().map_err(|e| ctx(path, "cannot stat", e))?.len());
        };
        if want < MIN_LEN {
            return Err(err(
                path,
                io::ErrorKind::InvalidInput,
                format_args!("requested size {want} bytes is below the minimum of {MIN_LEN} bytes (1 MiB)"),
            ));
        }
        let (f, created) = match OpenOptions::new().read(true).write(true).create_new(true).open(path) {
            Ok(f) => (f, true),
            Err(e) if e.kind() == io::ErrorKind::AlreadyExists => (Self::open_rw(path, false)?, false),
            Err(e) => return Err(ctx(path, "cannot create", e)),
        };
        let cur = f.metadata().map_err(|e| ctx(path, "cannot stat", e))?.len();
        if cur != want {
            f.set_len(want).map_err(|e| ctx(path, "cannot set length", e))?;
            f.sync_all().map_err(|e| ctx(path, "cannot sync", e))?;
        }
        if created {
            sync_parent_dir(path).map_err(|e| ctx(path, "cannot sync parent directory", e))?;
        }
        Ok(want)
    }

    fn open_rw(path: &Path, direct: bool) -> io::Result<File> {
        let mut o = OpenOptions::new();
        o.read(true).write(true);
        if direct {
            o.custom_flags(libc::O_DIRECT);
        }
        o.open(path).map_err(|e| {
            if direct && e.raw_os_error() == Some(libc::EINVAL) {
                err(
                    path,
                    io::ErrorKind::Unsupported,
                    "the filesystem does not support O_DIRECT (EINVAL on open); \
                     put the device on another filesystem or disable direct I/O",
                )
            } else {
                ctx(path, "cannot open", e)
            }
        })
    }

    /// The path the device was opened from.
    pub fn path(&self) -> &Path {
        &self.path
    }

    /// True when opened with O_DIRECT.
    pub fn is_direct(&self) -> bool {
        self.direct
    }

    /// Range check, plus the O_DIRECT offset/length alignment rule. Returns true when the buffer
    /// address needs a bounce buffer.
    fn check(&self, addr: *const u8, offset: u64, len: usize) -> io::Result<bool> {
        check_range(self.len, offset, len)?;
        if !self.direct {
            return Ok(false);
        }
        if !offset.is_multiple_of(ALIGN as u64) || !len.is_multiple_of(ALIGN) {
            return Err(err(
                &self.path,
                io::ErrorKind::InvalidInput,
                format_args!("O_DIRECT I/O at offset {offset} length {len} is not {ALIGN}-byte aligned"),
            ));
        }
        Ok(!(addr as usize).is_multiple_of(ALIGN))
    }

    fn io_err(&self, op: &str, offset: u64, len: usize, e: io::Error) -> io::Error {
        err(&self.path, e.kind(), format_args!("{op} at offset {offset} length {len}: {e}"))
    }
}

impl Media for FileMedia {
    fn len(&self) -> u64 {
        self.len
    }

    fn read_at(&self, buf: &mut [u8], offset: u64) -> io::Result<()> {
        let bounce = self.check(buf.as_ptr(), offset, buf.len())?;
        let r = if bounce {
            let mut b = AlignedBuf::zeroed(buf.len());
            let r = self.file.read_exact_at(&mut b, offset);
            if r.is_ok() {
                buf.copy_from_slice(&b);
            }
            r
        } else {
            self.file.read_exact_at(buf, offset)
        };
        r.map_err(|e| self.io_err("read", offset, buf.len(), e))
    }

    fn write_at(&self, buf: &[u8], offset: u64) -> io::Result<()> {
        let bounce = self.check(buf.as_ptr(), offset, buf.len())?;
        let r = if bounce {
            let mut b = AlignedBuf::zeroed(buf.len());
            b.copy_from_slice(buf);
            self.file.write_all_at(&b, offset)
        } else {
            self.file.write_all_at(buf, offset)
        };
        r.map_err(|e| self.io_err("write", offset, buf.len(), e))
    }

    fn sync(&self) -> io::Result<()> {
        self.file.sync_data().map_err(|e| ctx(&self.path, "fdatasync", e))
    }

    fn describe(&self) -> String {
        self.path.display().to_string()
    }
}

fn block_device_size(f: &File) -> io::Result<u64> {
    let mut size: u64 = 0;
    // SAFETY: BLKGETSIZE64 writes one u64 through the pointer, which is valid for the call.
    let rc = unsafe { libc::ioctl(f.as_raw_fd(), BLKGETSIZE64, &mut size as *mut u64) };
    if rc < 0 {
        return Err(io::Error::last_os_error());
    }
    Ok(size)
}

fn sync_parent_dir(path: &Path) -> io::Result<()> {
    let parent = match path.parent() {
        Some(p) if !p.as_os_str().is_empty() => p,
        _ => Path::new("."),
    };
    File::open(parent)?.sync_all()
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::sync::atomic::{AtomicUsize, Ordering};

    /// A unique temp path, removed on drop.
    struct TempPath(PathBuf);

    impl TempPath {
        fn new() -> Self {
            static N: AtomicUsize = AtomicUsize::new(0);
            let n = N.fetch_add(1, Ordering::Relaxed);
            let name = format!("reo-media-file-test-{}-{n}", std::process::id());
            TempPath(std::env::temp_dir().join(name))
        }
    }

    impl Drop for TempPath {
        fn drop(&mut self) {
            let _ = std::fs::remove_file(&self.0);
        }
    }

    fn create(p: &Path, len: u64, direct: bool) -> io::Result<FileMedia> {
        let opts = FileOptions { direct, create_len: Some(len) };
        FileMedia::open(p, &opts)
    }

    fn pattern(len: usize, seed: u8) -> Vec<u8> {
        (0..len).map(|i| (i as u8).wrapping_mul(31) ^ seed).collect()
    }

    #[test]
    fn create_write_read_sync_reopen() {
        let t = TempPath::new();
        let m = create(&t.0, (1 << 20) + 1000, false).unwrap();
        assert_eq!(m.len(), 1 << 20, "rounded down to a multiple of 4096");
        assert_eq!(std::fs::metadata(&t.0).unwrap().len(), (1 << 20) + 1000);
        assert_eq!(m.describe(), t.0.display().to_string());
        assert_eq!(m.path(), t.0.as_path());
        assert!(!m.is_direct());

        let data = pattern(10_000, 5);
        m.write_at(&data, 12_345).unwrap();
        m.sync().unwrap();
        let mut back = vec![0u8; data.len()];
        m.read_at(&mut back, 12_345).unwrap();
        assert_eq!(back, data);
        assert!(m.write_at(&[1], 1 << 20).is_err(), "beyond the end");
        drop(m);

        // Reopen without a size: same bytes, length from the file.
        let m = FileMedia::open(&t.0, &FileOptions::default()).unwrap();
        assert_eq!(m.len(), 1 << 20);
        let mut back = vec![0u8; data.len()];
        m.read_at(&mut back, 12_345).unwrap();
        assert_eq!(back, data);
        drop(m);

        // Reopen with a different size resizes, keeping the prefix.
        let m = create(&t.0, 2 << 20, false).unwrap();
        assert_eq!(m.len(), 2 << 20);
        let mut back = vec![0u8; data.len()];
        m.read_at(&mut back, 12_345).unwrap();
        assert_eq!(back, data);
    }

    #[test]
    fn missing_file_without_size_names_the_path() {
        let t = TempPath::new();
        let e = FileMedia::open(&t.0, &FileOptions::default()).unwrap_err();
        assert_eq!(e.kind(), io::ErrorKind::NotFound);
        let msg = e.to_string();
        assert!(msg.contains(&t.0.display().to_string()), "{msg}");
        assert!(msg.contains("no such file"), "{msg}");
        assert!(!t.0.exists());
    }

    #[test]
    fn too_small_is_rejected() {
        let t = TempPath::new();
        let e = create(&t.0, 4096, false).unwrap_err();
        assert!(e.to_string().contains("minimum"), "{e}");
        std::fs::write(&t.0, vec![0u8; 8192]).unwrap();
        let e = FileMedia::open(&t.0, &FileOptions::default()).unwrap_err();
        assert!(e.to_string().contains("minimum"), "{e}");
    }

    #[test]
    fn short_read_past_eof_is_an_error() {
        let t = TempPath::new();
        let m = create(&t.0, 1 << 20, false).unwrap();
        // Shrink the file behind the device's back: a read of the lost tail must fail.
        std::fs::OpenOptions::new().write(true).open(&t.0).unwrap().set_len(4096).unwrap();
        let mut buf = vec![0u8; 8192];
        assert!(m.read_at(&mut buf, 0).is_err());
    }

    /// Opens with O_DIRECT, or None (with a note) when the temp filesystem refuses it.
    fn direct_or_skip(t: &TempPath) -> Option<FileMedia> {
        match create(&t.0, 1 << 20, true) {
            Ok(m) => Some(m),
            Err(e) if e.kind() == io::ErrorKind::Unsupported => {
                eprintln!("skipping O_DIRECT test: {e}");
                None
            }
            Err(e) => panic!("{e}"),
        }
    }

    #[test]
    fn direct_round_trip_aligned_and_unaligned_buffers() {
        let t = TempPath::new();
        let Some(m) = direct_or_skip(&t) else { return };
        assert!(m.is_direct());

        let mut aligned = AlignedBuf::zeroed(8192);
        aligned.copy_from_slice(&pattern(8192, 1));
        m.write_at(&aligned, 4096).unwrap();

        // A buffer whose address is off by one: must go through the bounce buffer.
        let mut holder = AlignedBuf::zeroed(8192 + 1);
        let unaligned = &mut holder[1..];
        assert_ne!(unaligned.as_ptr() as usize % ALIGN, 0);
        m.read_at(unaligned, 4096).unwrap();
        assert_eq!(unaligned, &aligned[..]);

        unaligned.copy_from_slice(&pattern(8192, 9));
        m.write_at(unaligned, 16384).unwrap();
        m.sync().unwrap();
        let mut back = AlignedBuf::zeroed(8192);
        m.read_at(&mut back, 16384).unwrap();
        assert_eq!(&back[..], &holder[1..]);
    }

    #[test]
    fn direct_unaligned_offset_or_length_is_invalid_input() {
        let t = TempPath::new();
        let Some(m) = direct_or_skip(&t) else { return };
        let mut buf = AlignedBuf::zeroed(4096);
        let e = m.read_at(&mut buf, 512).unwrap_err();
        assert_eq!(e.kind(), io::ErrorKind::InvalidInput);
        let e = m.write_at(&buf[..1000], 0).unwrap_err();
        assert_eq!(e.kind(), io::ErrorKind::InvalidInput);
        assert!(e.to_string().contains("aligned"), "{e}");
    }
}
