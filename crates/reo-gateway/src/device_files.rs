//! The device files of the data directory: `dev{i}.img` is what a start opens as device `i`.
//!
//! A replacement device (`POST /_reo/admin/device/replace?path=P`) lives wherever the operator put
//! it, so that name is made to lead there — a symbolic link — *before* the store starts writing
//! to it: a restart then opens the replacement (still marked rebuilding, so the rebuild resumes)
//! instead of the failed device's file, which would come back as a member that missed every
//! write since. [`Repoint`] keeps the old entry until the replacement is in place, so a
//! replacement the store refuses is undone; once it is in place the old file is removed (the
//! failed device's contents are of no further use). A crash between the steps leaves at worst a
//! missing or blank `dev{i}.img`, which opens as a failed device.

use std::io;
use std::path::{Path, PathBuf};

/// The file a start opens as device `i` of the store in `dir`.
pub fn device_path(dir: &Path, i: usize) -> PathBuf {
    dir.join(format!("dev{i}.img"))
}

/// Whether `path` is one of the names [`device_path`] and [`Repoint`] use in `dir` (a
/// replacement there would be moved aside or overwritten by the repointing itself).
pub fn is_reserved(dir: &Path, path: &Path) -> bool {
    if path.parent() != Some(dir) {
        return false;
    }
    let Some(name) = path.file_name().and_then(|n| n.to_str()) else { return false };
    let name = name.strip_suffix(".replaced").unwrap_or(name);
    name.strip_prefix("dev")
        .and_then(|r| r.strip_suffix(".img"))
        .is_some_and(|i| !i.is_empty() && i.bytes().all(|b| b.is_ascii_digit()))
}

/// `dev{i}.img` pointed at a replacement, the old entry kept aside until [`Repoint::commit`].
pub struct Repoint {
    dev: PathBuf,
    old: PathBuf,
    dir: PathBuf,
}

impl Repoint {
    /// Moves `dir/dev{i}.img` aside and links that name to `target` (relative to `dir` when it
    /// is inside it, so the directory can move), durably (the directory is fsynced).
    pub fn start(dir: &Path, i: usize, target: &Path) -> io::Result<Repoint> {
        let dev = device_path(dir, i);
        let old = dir.join(format!("dev{i}.img.replaced"));
        let link = match target.strip_prefix(dir) {
            Ok(rel) if rel.components().count() == 1 => rel.to_path_buf(),
            _ => target.to_path_buf(),
        };
        std::fs::rename(&dev, &old)?;
        if let Err(e) = std::os::unix::fs::symlink(&link, &dev).and_then(|_| sync_dir(dir)) {
            let _ = std::fs::remove_file(&dev);
            let _ = std::fs::rename(&old, &dev);
            return Err(e);
        }
        Ok(Repoint { dev, old, dir: dir.to_path_buf() })
    }

    /// The replacement is in place: the failed device's file goes.
    pub fn commit(self) -> io::Result<()> {
        std::fs::remove_file(&self.old)?;
        sync_dir(&self.dir)
    }

    /// The replacement was refused: `dev{i}.img` is the failed device's file again.
    pub fn undo(self) -> io::Result<()> {
        std::fs::remove_file(&self.dev)?;
        std::fs::rename(&self.old, &self.dev)?;
        sync_dir(&self.dir)
    }
}

/// Makes the directory's entries durable.
fn sync_dir(dir: &Path) -> io::Result<()> {
    std::fs::File::open(dir)?.sync_all()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn tmp(name: &str) -> PathBuf {
        let d = std::env::temp_dir().join(format!("reo-devfiles-{name}-{}", std::process::id()));
        let _ = std::fs::remove_dir_all(&d);
        std::fs::create_dir_all(&d).unwrap();
        d
    }

    /// Committed: `dev1.img` reads the replacement (a relative link inside the directory), and
    /// the old file is gone; a replacement elsewhere is linked by its absolute path.
    #[test]
    fn a_committed_repoint_leads_to_the_replacement() {
        let dir = tmp("commit");
        std::fs::write(device_path(&dir, 1), b"old").unwrap();
        std::fs::write(dir.join("new.img"), b"new").unwrap();
        Repoint::start(&dir, 1, &dir.join("new.img")).unwrap().commit().unwrap();
        assert_eq!(std::fs::read(device_path(&dir, 1)).unwrap(), b"new");
        assert_eq!(std::fs::read_link(device_path(&dir, 1)).unwrap(), PathBuf::from("new.img"));
        assert!(!dir.join("dev1.img.replaced").exists());
        let other = tmp("commit-elsewhere");
        std::fs::write(other.join("far.img"), b"far").unwrap();
        Repoint::start(&dir, 1, &other.join("far.img")).unwrap().commit().unwrap();
        assert_eq!(std::fs::read_link(device_path(&dir, 1)).unwrap(), other.join("far.img"));
        assert_eq!(std::fs::read(device_path(&dir, 1)).unwrap(), b"far");
        assert_eq!(std::fs::read(dir.join("new.img")).unwrap(), b"new", "the earlier target is untouched");
        std::fs::remove_dir_all(&dir).unwrap();
        std::fs::remove_dir_all(&other).unwrap();
    }

    #[test]
    fn the_device_file_names_are_reserved() {
        let dir = Path::new("/data");
        for name in ["dev0.img", "dev12.img", "dev3.img.replaced"] {
            assert!(is_reserved(dir, &dir.join(name)), "{name}");
        }
        for name in ["dev1-new.img", "dev.img", "devx.img", "new.img"] {
            assert!(!is_reserved(dir, &dir.join(name)), "{name}");
        }
        assert!(!is_reserved(dir, Path::new("/elsewhere/dev0.img")));
    }

    /// Undone: `dev0.img` is the old file again, nothing left over.
    #[test]
    fn an_undone_repoint_restores_the_old_file() {
        let dir = tmp("undo");
        std::fs::write(device_path(&dir, 0), b"old").unwrap();
        std::fs::write(dir.join("new.img"), b"new").unwrap();
        Repoint::start(&dir, 0, &dir.join("new.img")).unwrap().undo().unwrap();
        assert_eq!(std::fs::read(device_path(&dir, 0)).unwrap(), b"old");
        assert!(std::fs::symlink_metadata(device_path(&dir, 0)).unwrap().file_type().is_file());
        assert!(!dir.join("dev0.img.replaced").exists());
        std::fs::remove_dir_all(&dir).unwrap();
    }
}
