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

/// Where a replacement device goes (`POST /_reo/admin/device/replace?path=P`).
#[derive(Debug, PartialEq, Eq)]
pub enum Replacement {
    /// A new file inside the data directory (its real path), to be created with
    /// `O_CREAT | O_EXCL | O_NOFOLLOW` ([`reo_media::FileMedia::create_new`]).
    NewFile(PathBuf),
    /// A block device named on `[server] replacement_devices`.
    BlockDevice(PathBuf),
}

/// Why a replacement path was refused ([`confine_replacement`]); the message names the path.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum ReplacementError {
    /// An allow-listed path could not be inspected (e.g. it does not exist).
    #[error("{asked}: {source}")]
    Unreadable {
        /// The path as requested.
        asked: String,
        /// Why.
        source: io::Error,
    },
    /// An allow-listed path is not a block device (a link to one is not enough).
    #[error("{asked} is on [server] replacement_devices but is not a block device")]
    NotBlockDevice {
        /// The path as requested.
        asked: String,
    },
    /// The path has a `.` or `..` component.
    #[error("{asked}: '.' and '..' are not allowed in a replacement path")]
    DotComponent {
        /// The path as requested.
        asked: String,
    },
    /// The data directory's real path could not be resolved.
    #[error("the data directory {}: {source}", dir.display())]
    DataDir {
        /// The data directory.
        dir: PathBuf,
        /// Why.
        source: io::Error,
    },
    /// A file path outside the data directory that is not an allow-listed block device.
    #[error(
        "{asked} is outside the data directory {} (a block device elsewhere must be listed in \
         [server] replacement_devices)",
        dir.display()
    )]
    Outside {
        /// The path as requested.
        asked: String,
        /// The data directory.
        dir: PathBuf,
    },
    /// The path has no file name (e.g. it is empty or the root).
    #[error("{asked}: names no file")]
    NoFileName {
        /// The path as requested.
        asked: String,
    },
    /// The path's directory could not be resolved.
    #[error("{asked}: its directory {}: {source}", parent.display())]
    Parent {
        /// The path as requested.
        asked: String,
        /// The path's directory.
        parent: PathBuf,
        /// Why.
        source: io::Error,
    },
    /// The path's directory resolves outside the data directory (a symbolic link).
    #[error("{asked}: its directory leads out of the data directory (a symbolic link)")]
    LeadsOut {
        /// The path as requested.
        asked: String,
    },
    /// The path is one of the device files' names in the data directory.
    #[error("{asked} is a name the data directory's device files use; choose another")]
    Reserved {
        /// The path as requested.
        asked: String,
    },
}

/// Confines a requested replacement path: a block device on the allow-list (named exactly as
/// there, and a block device itself, not a link to one), else a new file in the data directory
/// `dir` — relative to it or absolute inside it, without `.` or `..` components, in a directory
/// whose real path is inside `dir`'s (no symbolic link leading out), not one of the names the
/// device files use.
pub fn confine_replacement(dir: &Path, asked: &str, allowed: &[PathBuf]) -> Result<Replacement, ReplacementError> {
    use std::os::unix::fs::FileTypeExt;
    use std::path::Component;
    use ReplacementError as E;
    let named = || asked.to_string();
    let p = Path::new(asked);
    if allowed.iter().any(|a| a == p) {
        let m = std::fs::symlink_metadata(p).map_err(|source| E::Unreadable { asked: named(), source })?;
        if !m.file_type().is_block_device() {
            return Err(E::NotBlockDevice { asked: named() });
        }
        return Ok(Replacement::BlockDevice(p.to_path_buf()));
    }
    if p.components().any(|c| matches!(c, Component::ParentDir | Component::CurDir)) {
        return Err(E::DotComponent { asked: named() });
    }
    let real_dir = dir.canonicalize().map_err(|source| E::DataDir { dir: dir.to_path_buf(), source })?;
    let rel = if p.is_absolute() {
        p.strip_prefix(&real_dir)
            .or_else(|_| p.strip_prefix(dir))
            .map_err(|_| E::Outside { asked: named(), dir: real_dir.clone() })?
    } else {
        p
    };
    let name = rel.file_name().ok_or_else(|| E::NoFileName { asked: named() })?;
    let parent = real_dir.join(rel).parent().map(Path::to_path_buf).unwrap_or_else(|| real_dir.clone());
    let real_parent =
        parent.canonicalize().map_err(|source| E::Parent { asked: named(), parent: parent.clone(), source })?;
    if !real_parent.starts_with(&real_dir) {
        return Err(E::LeadsOut { asked: named() });
    }
    let path = real_parent.join(name);
    if is_reserved(&real_dir, &path) {
        return Err(E::Reserved { asked: named() });
    }
    Ok(Replacement::NewFile(path))
}

/// The target of `path` when it is a symbolic link whose target is missing (a replacement on a
/// disk that is gone): the device is absent, not to be created afresh.
pub fn missing_target(path: &Path) -> Option<PathBuf> {
    let meta = std::fs::symlink_metadata(path).ok()?;
    if !meta.file_type().is_symlink() {
        return None;
    }
    match std::fs::metadata(path) {
        Err(e) if e.kind() == io::ErrorKind::NotFound => std::fs::read_link(path).ok(),
        _ => None,
    }
}

/// Logs the `dev{i}.img.replaced` entries a crash left behind in the middle of a replacement
/// (the store's superblocks, not the file names, say which device is current).
pub fn warn_leftovers(dir: &Path, devices: usize) {
    for i in 0..devices {
        let old = aside_path(dir, i);
        if std::fs::symlink_metadata(&old).is_ok() {
            tracing::warn!(
                "{} is left from a replacement a crash interrupted; remove it once device {i} is healthy",
                old.display()
            );
        }
    }
}

fn aside_path(dir: &Path, i: usize) -> PathBuf {
    dir.join(format!("dev{i}.img.replaced"))
}

/// `dev{i}.img` pointed at a replacement, the old entry kept aside until [`Repoint::commit`].
pub struct Repoint {
    dev: PathBuf,
    /// Where the old entry went (`None`: there was none).
    old: Option<PathBuf>,
    /// The file an old link led to, inside the directory (an earlier replacement's file).
    old_target: Option<PathBuf>,
    dir: PathBuf,
}

impl Repoint {
    /// Moves `dir/dev{i}.img` aside and links that name to `target`, durably (the directory is
    /// fsynced). The link is relative when `target` lies under `dir` (the directory can move),
    /// absolute otherwise — a relative data directory included.
    pub fn start(dir: &Path, i: usize, target: &Path) -> io::Result<Repoint> {
        let dev = device_path(dir, i);
        let link = match target.strip_prefix(dir) {
            Ok(rel) if rel.components().all(|c| matches!(c, std::path::Component::Normal(_))) => rel.to_path_buf(),
            _ => std::path::absolute(target)?,
        };
        let old_target = std::fs::read_link(&dev)
            .ok()
            .map(|t| dir.join(t))
            .filter(|t| t.parent() == Some(dir) && std::fs::symlink_metadata(t).is_ok_and(|m| m.is_file()));
        let old = aside_path(dir, i);
        let old = match std::fs::rename(&dev, &old) {
            Ok(()) => Some(old),
            Err(e) if e.kind() == io::ErrorKind::NotFound => None,
            Err(e) => return Err(e),
        };
        let r = Repoint { dev, old, old_target, dir: dir.to_path_buf() };
        if let Err(e) = std::os::unix::fs::symlink(&link, &r.dev).and_then(|_| sync_dir(dir)) {
            let _ = r.undo();
            return Err(e);
        }
        Ok(r)
    }

    /// The replacement is in place: the failed device's file goes (an earlier replacement's
    /// file in the directory too, when the old entry was a link to it).
    pub fn commit(self) -> io::Result<()> {
        if let Some(old) = &self.old {
            std::fs::remove_file(old)?;
        }
        if let Some(t) = &self.old_target {
            std::fs::remove_file(t)?;
        }
        sync_dir(&self.dir)
    }

    /// The replacement was refused: `dev{i}.img` is what it was (one rename over the link).
    pub fn undo(self) -> io::Result<()> {
        match &self.old {
            Some(old) => std::fs::rename(old, &self.dev)?,
            None => std::fs::remove_file(&self.dev)?,
        }
        sync_dir(&self.dir)
    }
}

/// Makes the directory's entries durable.
fn sync_dir(dir: &Path) -> io::Result<()> {
    std::fs::File::open(dir)?.sync_all()
}

/// Narrows the data directory to 0700 and its credentials, users and device files (a replacement's
/// target included) to 0600, warning about each that was wider: they hold every cached and
/// unflushed object and the secret key, and a directory created by an older version or by hand
/// may be readable by every user. New files are narrow already (the server's umask is 077).
pub fn restrict(dir: &Path, devices: usize) {
    use std::os::unix::fs::PermissionsExt;
    let narrow = |path: &Path, mode: u32| {
        let Ok(m) = std::fs::metadata(path) else { return };
        let was = m.permissions().mode() & 0o777;
        if was & !mode != 0 {
            match std::fs::set_permissions(path, std::fs::Permissions::from_mode(mode)) {
                Ok(()) => tracing::warn!("{} was mode {was:o}; now {mode:o}", path.display()),
                Err(e) => {
                    tracing::warn!("{} is mode {was:o} and could not be narrowed to {mode:o}: {e}", path.display())
                }
            }
        }
    };
    narrow(dir, 0o700);
    narrow(&dir.join("credentials"), 0o600);
    narrow(&dir.join("users.json"), 0o600);
    for i in 0..devices {
        narrow(&device_path(dir, i), 0o600);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Committed: `dev1.img` reads the replacement (a relative link inside the directory), and
    /// the old file is gone; a replacement elsewhere is linked by its absolute path, and the
    /// replacement it replaces goes too.
    #[test]
    fn a_committed_repoint_leads_to_the_replacement() {
        let dir_tmp = tempfile::tempdir().unwrap();
        let dir = dir_tmp.path();
        std::fs::write(device_path(dir, 1), b"old").unwrap();
        std::fs::write(dir.join("new.img"), b"new").unwrap();
        Repoint::start(dir, 1, &dir.join("new.img")).unwrap().commit().unwrap();
        assert_eq!(std::fs::read(device_path(dir, 1)).unwrap(), b"new");
        assert_eq!(std::fs::read_link(device_path(dir, 1)).unwrap(), PathBuf::from("new.img"));
        assert!(!dir.join("dev1.img.replaced").exists());
        let other_tmp = tempfile::tempdir().unwrap();
        let other = other_tmp.path();
        std::fs::write(other.join("far.img"), b"far").unwrap();
        Repoint::start(dir, 1, &other.join("far.img")).unwrap().commit().unwrap();
        assert_eq!(std::fs::read_link(device_path(dir, 1)).unwrap(), other.join("far.img"));
        assert_eq!(std::fs::read(device_path(dir, 1)).unwrap(), b"far");
        assert!(!dir.join("new.img").exists(), "the earlier replacement's file in the directory is removed");
    }

    #[test]
    fn replacement_paths_are_confined_to_the_data_directory() {
        let d_tmp = tempfile::tempdir().unwrap();
        let d = d_tmp.path();
        std::fs::create_dir_all(d.join("spare")).unwrap();
        std::os::unix::fs::symlink("/tmp", d.join("out")).unwrap();
        let real = d.canonicalize().unwrap();
        let ok = |asked: &str| confine_replacement(d, asked, &[]);
        assert_eq!(ok("new.img").unwrap(), Replacement::NewFile(real.join("new.img")));
        assert_eq!(ok("spare/new.img").unwrap(), Replacement::NewFile(real.join("spare/new.img")));
        let inside = real.join("abs.img");
        assert_eq!(ok(inside.to_str().unwrap()).unwrap(), Replacement::NewFile(inside.clone()));
        for bad in [
            "/etc/evil.img",
            "../escaped.img",
            "spare/../../escaped.img",
            "state/../dev1.img.replaced",
            "./dev1.img",
            "dev1.img",
            "dev2.img.replaced",
            "out/evil.img",
            "missing/x.img",
            "",
        ] {
            assert!(ok(bad).is_err(), "{bad:?} was accepted");
        }
        // The allow-list takes block devices only, named exactly.
        let listed = [PathBuf::from("/dev/null"), real.join("spare")];
        assert!(confine_replacement(d, "/dev/null", &listed).unwrap_err().to_string().contains("not a block device"));
        assert!(confine_replacement(d, "/etc/passwd", &listed)
            .unwrap_err()
            .to_string()
            .contains("outside the data directory"));
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

    /// A second replacement removes the first replacement's file (the failed device's now); a
    /// replacement in a subdirectory is linked relatively, one outside by an absolute path even
    /// from a relative directory.
    #[test]
    fn a_second_replacement_removes_the_first_replacements_file() {
        let dir_tmp = tempfile::tempdir().unwrap();
        let dir = dir_tmp.path();
        std::fs::create_dir_all(dir.join("spare")).unwrap();
        std::fs::write(device_path(dir, 2), b"old").unwrap();
        std::fs::write(dir.join("first.img"), b"first").unwrap();
        Repoint::start(dir, 2, &dir.join("first.img")).unwrap().commit().unwrap();
        std::fs::write(dir.join("spare/second.img"), b"second").unwrap();
        Repoint::start(dir, 2, &dir.join("spare/second.img")).unwrap().commit().unwrap();
        assert!(!dir.join("first.img").exists(), "the failed first replacement's file is removed");
        assert_eq!(std::fs::read_link(device_path(dir, 2)).unwrap(), PathBuf::from("spare/second.img"));
        assert_eq!(std::fs::read(device_path(dir, 2)).unwrap(), b"second");
        // From a relative directory, a target outside it: absolute.
        let cwd = std::env::current_dir().unwrap();
        let rel_dir = pathdiff(dir, &cwd);
        let outside_tmp = tempfile::tempdir().unwrap();
        let outside = outside_tmp.path();
        std::fs::write(outside.join("third.img"), b"third").unwrap();
        Repoint::start(&rel_dir, 2, &rel_dir.join(pathdiff(&outside.join("third.img"), dir)))
            .unwrap()
            .commit()
            .unwrap();
        assert!(std::fs::read_link(device_path(dir, 2)).unwrap().is_absolute());
        assert_eq!(std::fs::read(device_path(dir, 2)).unwrap(), b"third");
        assert!(dir.join("spare/second.img").exists(), "a replacement file in a subdirectory is left alone");
    }

    /// `to` relative to `from` (both absolute), with `..` steps.
    fn pathdiff(to: &Path, from: &Path) -> PathBuf {
        let (t, f): (Vec<_>, Vec<_>) = (to.components().collect(), from.components().collect());
        let common = t.iter().zip(&f).take_while(|(a, b)| a == b).count();
        let mut p = PathBuf::new();
        for _ in common..f.len() {
            p.push("..");
        }
        for c in &t[common..] {
            p.push(c);
        }
        p
    }

    /// A link whose target is gone is reported, with the target; a file or a good link is not.
    #[test]
    fn a_link_to_a_missing_replacement_is_found() {
        let dir_tmp = tempfile::tempdir().unwrap();
        let dir = dir_tmp.path();
        std::fs::write(dir.join("r.img"), b"r").unwrap();
        std::os::unix::fs::symlink("r.img", device_path(dir, 0)).unwrap();
        std::fs::write(device_path(dir, 1), b"f").unwrap();
        assert_eq!(missing_target(&device_path(dir, 0)), None);
        assert_eq!(missing_target(&device_path(dir, 1)), None);
        std::fs::remove_file(dir.join("r.img")).unwrap();
        assert_eq!(missing_target(&device_path(dir, 0)), Some(PathBuf::from("r.img")));
    }

    /// Undone: `dev0.img` is the old file again, nothing left over.
    #[test]
    fn an_undone_repoint_restores_the_old_file() {
        let dir_tmp = tempfile::tempdir().unwrap();
        let dir = dir_tmp.path();
        std::fs::write(device_path(dir, 0), b"old").unwrap();
        std::fs::write(dir.join("new.img"), b"new").unwrap();
        Repoint::start(dir, 0, &dir.join("new.img")).unwrap().undo().unwrap();
        assert_eq!(std::fs::read(device_path(dir, 0)).unwrap(), b"old");
        assert!(std::fs::symlink_metadata(device_path(dir, 0)).unwrap().file_type().is_file());
        assert!(!dir.join("dev0.img.replaced").exists());
    }
}
