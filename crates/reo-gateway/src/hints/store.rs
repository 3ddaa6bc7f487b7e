//! The hints in force, kept in `<state>/hints.json`: rewritten whole on every change (write to a
//! temporary file, fsync, rename, fsync the directory) so a crash leaves the old or the new set.

use std::collections::BTreeMap;
use std::io::Write;
use std::path::{Path, PathBuf};

use super::{Hint, HintError, HintSpec, HintState};

/// Hints by request id, and the file they persist in.
#[derive(Debug)]
pub struct HintStore {
    path: PathBuf,
    next_id: u64,
    /// The hints in force, by request id.
    pub hints: BTreeMap<String, Hint>,
}

#[derive(serde::Serialize, serde::Deserialize)]
struct OnDisk {
    next_id: u64,
    hints: Vec<Hint>,
}

impl HintStore {
    /// Loads `path` (an absent file is an empty set).
    pub fn open(path: &Path) -> Result<HintStore, HintError> {
        let mut s = HintStore { path: path.to_path_buf(), next_id: 1, hints: BTreeMap::new() };
        match std::fs::read(path) {
            Ok(bytes) => {
                let d: OnDisk = serde_json::from_slice(&bytes)
                    .map_err(|source| HintError::Corrupt { path: path.to_path_buf(), source })?;
                s.next_id = d.next_id;
                s.hints = d.hints.into_iter().map(|h| (h.request_id.clone(), h)).collect();
            }
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => {}
            Err(source) => return Err(HintError::Io { path: path.to_path_buf(), source }),
        }
        Ok(s)
    }

    /// Records a new hint of `owner` (a user's name) and persists; returns its request id.
    pub fn add(&mut self, spec: HintSpec, owner: Option<String>, pin_limit: Option<u64>) -> std::io::Result<String> {
        let id = format!("h{:08}", self.next_id);
        self.next_id += 1;
        let h = Hint {
            request_id: id.clone(),
            spec,
            state: HintState::Scheduled,
            pinned: Vec::new(),
            prefetched_bytes: 0,
            backend_result: None,
            owner,
            pin_limit,
            pins_refused: Vec::new(),
        };
        self.hints.insert(id.clone(), h);
        self.save()?;
        Ok(id)
    }

    /// Writes the whole set atomically.
    pub fn save(&self) -> std::io::Result<()> {
        let d = OnDisk { next_id: self.next_id, hints: self.hints.values().cloned().collect() };
        let bytes = serde_json::to_vec_pretty(&d).map_err(std::io::Error::other)?;
        let tmp = self.path.with_extension("json.tmp");
        {
            let mut f = std::fs::File::create(&tmp)?;
            f.write_all(&bytes)?;
            f.sync_all()?;
        }
        std::fs::rename(&tmp, &self.path)?;
        if let Some(dir) = self.path.parent() {
            std::fs::File::open(dir)?.sync_all()?;
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::super::{Intent, Lease, Target};
    use super::*;

    fn spec(key: &str) -> HintSpec {
        HintSpec {
            app_id: "app".into(),
            bucket: "b".into(),
            key: Some(key.into()),
            prefix: None,
            range: None,
            target: Target::Cache,
            intent: Intent::Prefetch,
            priority: 3,
            lease: Lease { start: 1, end: 2 },
            reorganize: None,
        }
    }

    #[test]
    fn hints_survive_reopen_and_ids_are_not_reused() {
        let tmp = tempfile::tempdir().unwrap();
        let dir = tmp.path();
        let path = dir.join("hints.json");
        let mut s = HintStore::open(&path).unwrap();
        let a = s.add(spec("x"), Some("app".into()), None).unwrap();
        let b = s.add(spec("y"), None, None).unwrap();
        s.hints.get_mut(&a).unwrap().state = HintState::Active;
        s.hints.remove(&b);
        s.save().unwrap();
        let mut r = HintStore::open(&path).unwrap();
        assert_eq!(r.hints.len(), 1);
        assert_eq!(r.hints[&a].state, HintState::Active);
        assert_eq!(r.hints[&a].spec, spec("x"));
        assert_eq!(r.hints[&a].owner.as_deref(), Some("app"));
        let c = r.add(spec("z"), None, None).unwrap();
        assert!(c != a && c != b);
        assert!(!dir.join("hints.json.tmp").exists());
    }

    #[test]
    fn a_corrupt_file_is_an_error_naming_it() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("hints.json");
        std::fs::write(&path, b"{not json").unwrap();
        assert!(HintStore::open(&path).unwrap_err().to_string().contains("hints.json"));
    }
}
