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
    /// [`Media::vector_align`]: 1 for buffered I/O; for O_DIRECT, what the kernel reports
    /// (statx `STATX_DIOALIGN`), or [`ALIGN`] when it does not say.
    vector_align: usize,
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
        let block = meta.as_ref().is_some_and(|m| m.file_type().is_block_device());
        let vector_align = if opts.direct { dio_align(&file, block).unwrap_or(ALIGN) } else { 1 };
        Ok(FileMedia {
            file,
            path: path.to_path_buf(),
            len: len / ALIGN as u64 * ALIGN as u64,
            direct: opts.direct,
            vector_align,
        })
    }

    /// Creates a new regular file of `len` bytes at `path` and opens it (buffered). Never an
    /// existing file nor a symbolic link (`O_CREAT | O_EXCL | O_NOFOLLOW`): a path checked
    /// beforehand cannot be swapped for another file between the check and the creation. A
    /// failure after the creation removes the file.
    pub fn create_new(path: &Path, len: u64) -> io::Result<FileMedia> {
        if len < MIN_LEN {
            return Err(err(
                path,
                io::ErrorKind::InvalidInput,
                format_args!("requested size {len} bytes is below the minimum of {MIN_LEN} bytes (1 MiB)"),
            ));
        }
        let file = OpenOptions::new()
            .read(true)
            .write(true)
            .create_new(true)
            .custom_flags(libc::O_NOFOLLOW)
            .open(path)
            .map_err(|e| ctx(path, "cannot create", e))?;
        let sized = file
            .set_len(len)
            .map_err(|e| ctx(path, "cannot set length", e))
            .and_then(|()| file.sync_all().map_err(|e| ctx(path, "cannot sync", e)))
            .and_then(|()| sync_parent_dir(path).map_err(|e| ctx(path, "cannot sync parent directory", e)));
        if let Err(e) = sized {
            let _ = std::fs::remove_file(path);
            return Err(e);
        }
        Ok(FileMedia {
            file,
            path: path.to_path_buf(),
            len: len / ALIGN as u64 * ALIGN as u64,
            direct: false,
            vector_align: 1,
        })
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

    fn write_vectored_at(&self, parts: &[&[u8]], offset: u64) -> io::Result<()> {
        let len = parts.iter().map(|p| p.len()).sum();
        let a = self.vector_align;
        let aligned = parts.iter().all(|p| (p.as_ptr() as usize).is_multiple_of(a) && p.len().is_multiple_of(a));
        if parts.len() == 1 || (self.direct && !aligned) {
            if let [one] = parts {
                return self.write_at(one, offset);
            }
            let mut b = AlignedBuf::with_capacity(len);
            for p in parts {
                b.extend_from_slice(p);
            }
            return self.write_at(&b, offset);
        }
        self.check(parts.first().map_or(std::ptr::null(), |p| p.as_ptr()), offset, len)?;
        pwritev_all(&self.file, parts, offset).map_err(|e| self.io_err("write", offset, len, e))
    }

    fn vector_align(&self) -> usize {
        self.vector_align
    }

    fn sync(&self) -> io::Result<()> {
        self.file.sync_data().map_err(|e| ctx(&self.path, "fdatasync", e))
    }

    fn describe(&self) -> String {
        self.path.display().to_string()
    }
}

/// Most vectors one `pwritev` takes (`IOV_MAX` on Linux).
const IOV_MAX: usize = 1024;

/// Writes all of `parts`, in order, at `offset`: `pwritev` calls of at most [`IOV_MAX`] vectors,
/// resumed after a short write.
fn pwritev_all(f: &File, parts: &[&[u8]], mut offset: u64) -> io::Result<()> {
    let mut iov: Vec<libc::iovec> = parts
        .iter()
        .filter(|p| !p.is_empty())
        .map(|p| libc::iovec { iov_base: p.as_ptr() as *mut libc::c_void, iov_len: p.len() })
        .collect();
    let mut i = 0;
    while i < iov.len() {
        let n = (iov.len() - i).min(IOV_MAX);
        // SAFETY: `iov[i..i + n]` describe live, readable slices of `parts`, borrowed for the call.
        let rc = unsafe { libc::pwritev(f.as_raw_fd(), iov[i..].as_ptr(), n as libc::c_int, offset as libc::off_t) };
        if rc < 0 {
            let e = io::Error::last_os_error();
            if e.kind() == io::ErrorKind::Interrupted {
                continue;
            }
            return Err(e);
        }
        if rc == 0 {
            return Err(io::Error::new(io::ErrorKind::WriteZero, "pwritev wrote nothing"));
        }
        let mut done = rc as usize;
        offset += done as u64;
        while done > 0 {
            if done >= iov[i].iov_len {
                done -= iov[i].iov_len;
                i += 1;
            } else {
                // SAFETY: advancing within the same slice, `done` < its remaining length.
                iov[i].iov_base = unsafe { (iov[i].iov_base as *mut u8).add(done) } as *mut libc::c_void;
                iov[i].iov_len -= done;
                done = 0;
            }
        }
    }
    Ok(())
}

/// The O_DIRECT alignment of memory and of lengths the kernel reports for `f` (statx
/// `STATX_DIOALIGN`, Linux 6.1+ for files, 6.11+ for block devices): the larger of the two. A
/// block device on an older kernel: its logical block size (at least 512), which is the rule
/// there for addresses and lengths alike (6.0–6.10 relax addresses to the queue's DMA alignment,
/// 512 unless a driver asks for more). A file on an older kernel: `None` (4 KiB, always safe).
fn dio_align(f: &File, block: bool) -> Option<usize> {
    // SAFETY: statx fills the zeroed struct; the empty path with AT_EMPTY_PATH names the fd.
    let mut st: libc::statx = unsafe { std::mem::zeroed() };
    // SAFETY: `f` is an open descriptor and `st` a valid statx buffer it may fill.
    let rc = unsafe { libc::statx(f.as_raw_fd(), c"".as_ptr(), libc::AT_EMPTY_PATH, libc::STATX_DIOALIGN, &mut st) };
    if rc != 0 || st.stx_mask & libc::STATX_DIOALIGN == 0 || st.stx_dio_mem_align == 0 {
        return block.then(|| logical_block_size(f)).flatten().map(|n| n.max(512));
    }
    Some(st.stx_dio_mem_align.max(st.stx_dio_offset_align) as usize)
}

fn logical_block_size(f: &File) -> Option<usize> {
    let mut size: libc::c_int = 0;
    // SAFETY: BLKSSZGET writes one int through the pointer, which is valid for the call.
    let rc = unsafe { libc::ioctl(f.as_raw_fd(), libc::BLKSSZGET, &mut size as *mut libc::c_int) };
    (rc == 0 && size > 0).then_some(size as usize)
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
    use tempfile::TempDir;

    /// A unique path not yet created, in a temporary directory removed (with it) on drop.
    struct TempPath(PathBuf, #[allow(dead_code, reason = "held for its Drop")] TempDir);

    impl TempPath {
        fn new() -> Self {
            let dir = TempDir::new().unwrap();
            TempPath(dir.path().join("media.img"), dir)
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
    fn create_new_refuses_existing_files_and_links() {
        let tmp = TempDir::new().unwrap();
        let dir = tmp.path();
        let p = dir.join("new.img");
        let m = FileMedia::create_new(&p, MIN_LEN).unwrap();
        assert_eq!(m.len(), MIN_LEN);
        assert_eq!(FileMedia::create_new(&p, MIN_LEN).unwrap_err().kind(), io::ErrorKind::AlreadyExists);
        let link = dir.join("link.img");
        std::os::unix::fs::symlink(dir.join("elsewhere.img"), &link).unwrap();
        assert!(FileMedia::create_new(&link, MIN_LEN).is_err(), "a dangling link is not followed");
        assert!(!dir.join("elsewhere.img").exists());
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

    /// Writes `parts` vectored at `offset` and checks the file holds their concatenation.
    fn vectored_round_trip(m: &FileMedia, parts: &[&[u8]], offset: u64) {
        m.write_vectored_at(parts, offset).unwrap();
        m.sync().unwrap();
        let want = parts.concat();
        let mut back = AlignedBuf::zeroed(want.len());
        m.read_at(&mut back, offset).unwrap();
        assert!(back[..] == want[..], "{} parts at {offset}", parts.len());
    }

    #[test]
    fn vectored_writes_land_in_order_buffered_and_direct() {
        let t = TempPath::new();
        let buffered = create(&t.0, 8 << 20, false).unwrap();
        assert_eq!(buffered.vector_align(), 1);
        let data = pattern(1 << 20, 3);
        // Odd lengths and addresses are fine buffered.
        vectored_round_trip(&buffered, &[&data[1..4000], &data[7..100], &[], &data[..4096 * 3 - 4093]], 8192);
        drop(buffered);

        let Some(m) = direct_or_skip(&t) else { return };
        let a = m.vector_align();
        assert!(a.is_power_of_two() && (512..=ALIGN).contains(&a), "direct-I/O alignment {a}");
        let mut src = AlignedBuf::zeroed(1 << 20);
        src.copy_from_slice(&data);
        // Aligned parts go to the device as they are (pwritev): bodies of chunk − 512 bytes and
        // 512-byte slots, as a put writes them, and more parts than one pwritev takes.
        let (body, slot) = (65536 - 512, 512);
        let slots = pattern(slot * 16, 8);
        let mut parts: Vec<&[u8]> = Vec::new();
        for i in 0..16 {
            let at = i * body;
            if (src[at..].as_ptr() as usize).is_multiple_of(a) && body.is_multiple_of(a) {
                parts.push(&src[at..at + body]);
            }
            parts.push(&slots[i * slot..(i + 1) * slot]);
        }
        let total: usize = parts.iter().map(|p| p.len()).sum();
        let pad = vec![0u8; total.next_multiple_of(ALIGN) - total];
        parts.push(&pad);
        vectored_round_trip(&m, &parts, 0);
        // More parts than one pwritev takes (where the alignment leaves room for that many).
        let many: Vec<&[u8]> = (0..(1 << 20) / a).rev().map(|i| &src[i * a..(i + 1) * a]).collect();
        vectored_round_trip(&m, &many, 0);
        // A part off the alignment is bounced, not refused.
        let mut holder = AlignedBuf::zeroed(8192 + 1);
        holder[1..].copy_from_slice(&data[..8192]);
        vectored_round_trip(&m, &[&src[..4096], &holder[1..], &src[4096..8192]], 4096);
        // The whole write must still be aligned on the device.
        let e = m.write_vectored_at(&[&src[..4096], &src[..100]], 0).unwrap_err();
        assert_eq!(e.kind(), io::ErrorKind::InvalidInput);
    }
}
