//! [`Users`]: the users of a gateway. The built-in admin comes from the command line or
//! `<data_dir>/credentials` (two lines: access key, secret key; generated on the first start);
//! the others are kept in `<data_dir>/users.json` (mode 0600, replaced atomically: written to a
//! temporary file, fsynced, renamed, the directory fsynced), so a crash leaves the old list or
//! the new one. Lookups by access key take a read lock; changes are rare and write the file
//! before they take effect.

use std::collections::HashMap;
use std::io::{Read, Write};
use std::os::unix::fs::OpenOptionsExt;
use std::path::{Path, PathBuf};
use std::sync::Arc;

use parking_lot::RwLock;
use serde::{Deserialize, Serialize};

use super::{Role, Scope, User};

/// The built-in admin's name.
pub const ADMIN: &str = "admin";
/// Most users a gateway keeps (each costs a lookup entry; the file is rewritten on every change).
pub const MAX_USERS: usize = 10_000;
/// Most scopes one user has.
pub const MAX_SCOPES: usize = 100;

const ACCESS_ALPHABET: &[u8] = b"ABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789";
const SECRET_ALPHABET: &[u8] = b"ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789";

/// Why a change to the users was refused.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum UserError {
    /// The request is malformed (too many scopes, an admin with scopes, a bad name or key).
    #[error("{0}")]
    Invalid(String),
    /// Another user has this name.
    #[error("a user named {0:?} exists")]
    NameTaken(String),
    /// Another user has this access key.
    #[error("the access key {0} belongs to another user")]
    KeyTaken(String),
    /// No user has this name.
    #[error("no user named {0:?}")]
    NotFound(String),
    /// The change would touch the built-in admin.
    #[error("{0:?} is the built-in admin (its key pair comes from the command line or the credentials file)")]
    Builtin(String),
    /// The gateway already has [`MAX_USERS`] users.
    #[error("at most {MAX_USERS} users")]
    TooMany,
    /// The users file could not be written, or no random key could be generated.
    #[error("saving the users: {0}")]
    Io(String),
}

/// Why the users of a data directory could not be loaded; the message names the file.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum LoadError {
    /// `users.json` is not valid JSON of the expected shape.
    #[error("{}: not a users file: {source}", path.display())]
    NotUsersFile {
        /// The file.
        path: PathBuf,
        /// Why.
        source: serde_json::Error,
    },
    /// `users.json` has a version this build does not know.
    #[error("{}: version {version} is not known to this reo", path.display())]
    Version {
        /// The file.
        path: PathBuf,
        /// The version the file states.
        version: u32,
    },
    /// The credentials file or `users.json` could not be read or written.
    #[error("{}: {source}", path.display())]
    Io {
        /// The file.
        path: PathBuf,
        /// Why.
        source: std::io::Error,
    },
    /// No random bytes to generate the admin's credentials.
    #[error(transparent)]
    KeyGen(#[from] KeyGenError),
    /// The generated admin credentials could not be written.
    #[error("cannot save credentials to {}: {source}", path.display())]
    SaveCredentials {
        /// The file.
        path: PathBuf,
        /// Why.
        source: std::io::Error,
    },
}

/// No random bytes for a generated key.
#[derive(Debug, thiserror::Error)]
#[error("cannot read /dev/urandom for a key: {0}")]
pub struct KeyGenError(std::io::Error);

/// A user as asked for (`POST /_reo/admin/users`); keys are generated unless given.
#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct NewUser {
    /// The user's name (unique).
    pub name: String,
    /// What the user may do.
    pub role: Role,
    /// Where the user may do it (none for an admin).
    #[serde(default)]
    pub scopes: Vec<Scope>,
    /// Given keys (e.g. the same user on several gateways); generated when absent.
    #[serde(default)]
    pub access_key: Option<String>,
    /// The secret key to use; generated when absent.
    #[serde(default)]
    pub secret_key: Option<String>,
}

/// One line of `users.json`.
#[derive(Clone, Serialize, Deserialize)]
struct Record {
    name: String,
    access_key: String,
    secret_key: String,
    role: Role,
    #[serde(default)]
    scopes: Vec<Scope>,
}

#[derive(Serialize, Deserialize)]
struct File {
    version: u32,
    users: Vec<Record>,
}

/// A user and its secret.
struct Entry {
    user: Arc<User>,
    secret: String,
}

struct Inner {
    /// By access key (the built-in admin included).
    by_key: HashMap<String, Entry>,
    /// Those of `users.json`, in the order they were added.
    records: Vec<Record>,
}

/// The users of a gateway.
pub struct Users {
    file: Option<PathBuf>,
    inner: RwLock<Inner>,
}

impl std::fmt::Debug for Users {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Users").field("file", &self.file).finish_non_exhaustive()
    }
}

impl Users {
    /// The users of `data_dir`: the built-in admin from `pair` (the command line) or from the
    /// credentials file (generated when neither exists), and those of `users.json`.
    pub fn open(data_dir: &Path, pair: Option<(String, String)>) -> Result<Users, LoadError> {
        let (access, secret) = match pair {
            Some(p) => p,
            None => builtin_pair(&data_dir.join("credentials"))?,
        };
        let file = data_dir.join("users.json");
        let records = match std::fs::read(&file) {
            Ok(bytes) => {
                let f: File = serde_json::from_slice(&bytes)
                    .map_err(|source| LoadError::NotUsersFile { path: file.clone(), source })?;
                if f.version != 1 {
                    return Err(LoadError::Version { path: file, version: f.version });
                }
                f.users
            }
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => Vec::new(),
            Err(source) => return Err(LoadError::Io { path: file, source }),
        };
        let users = Users::with_admin(access, secret, Some(file));
        {
            let mut inner = users.write();
            for r in records {
                if inner.by_key.contains_key(&r.access_key) || inner.records.iter().any(|o| o.name == r.name) {
                    tracing::warn!(user = r.name, "users.json: a second user with this name or access key is ignored");
                    continue;
                }
                inner.by_key.insert(r.access_key.clone(), entry(&r, false));
                inner.records.push(r);
            }
        }
        Ok(users)
    }

    /// Only the built-in admin, kept in memory (`file` `None`: changes are not saved).
    pub fn with_admin(access: String, secret: String, file: Option<PathBuf>) -> Users {
        let admin = Record {
            name: ADMIN.into(),
            access_key: access.clone(),
            secret_key: secret,
            role: Role::Admin,
            scopes: vec![],
        };
        let mut by_key = HashMap::new();
        by_key.insert(access, entry(&admin, true));
        Users { file, inner: RwLock::new(Inner { by_key, records: Vec::new() }) }
    }

    fn read(&self) -> parking_lot::RwLockReadGuard<'_, Inner> {
        self.inner.read()
    }

    fn write(&self) -> parking_lot::RwLockWriteGuard<'_, Inner> {
        self.inner.write()
    }

    /// The user of an access key and its secret.
    pub fn lookup(&self, access_key: &str) -> Option<(Arc<User>, String)> {
        self.read().by_key.get(access_key).map(|e| (e.user.clone(), e.secret.clone()))
    }

    /// The user of an access key.
    pub fn user(&self, access_key: &str) -> Option<Arc<User>> {
        self.read().by_key.get(access_key).map(|e| e.user.clone())
    }

    /// Every user, the built-in admin first, then by name.
    pub fn list(&self) -> Vec<Arc<User>> {
        let mut v: Vec<Arc<User>> = self.read().by_key.values().map(|e| e.user.clone()).collect();
        v.sort_by(|a, b| (!a.builtin, &a.name).cmp(&(!b.builtin, &b.name)));
        v
    }

    /// Adds a user; answers it with its secret key.
    pub fn add(&self, n: NewUser) -> Result<(Arc<User>, String), UserError> {
        validate_name(&n.name)?;
        if n.scopes.len() > MAX_SCOPES {
            return Err(UserError::Invalid(format!("at most {MAX_SCOPES} scopes per user")));
        }
        if n.role == Role::Admin && !n.scopes.is_empty() {
            return Err(UserError::Invalid("an admin cannot be confined to scopes".into()));
        }
        let access_key = match n.access_key {
            Some(k) => validate_access_key(k)?,
            None => random_string(20, ACCESS_ALPHABET).map_err(|e| UserError::Io(e.to_string()))?,
        };
        let secret_key = match n.secret_key {
            Some(s) => validate_secret_key(s)?,
            None => random_string(40, SECRET_ALPHABET).map_err(|e| UserError::Io(e.to_string()))?,
        };
        let mut inner = self.write();
        if n.name == ADMIN || inner.records.iter().any(|r| r.name == n.name) {
            return Err(UserError::NameTaken(n.name));
        }
        if inner.by_key.contains_key(&access_key) {
            return Err(UserError::KeyTaken(access_key));
        }
        if inner.records.len() >= MAX_USERS {
            return Err(UserError::TooMany);
        }
        let r = Record { name: n.name, access_key, secret_key, role: n.role, scopes: n.scopes };
        let mut records = inner.records.clone();
        records.push(r.clone());
        self.save(&records)?;
        let e = entry(&r, false);
        let user = e.user.clone();
        inner.by_key.insert(r.access_key.clone(), e);
        inner.records = records;
        tracing::info!(user = user.name, role = user.role.as_str(), "user added");
        Ok((user, r.secret_key))
    }

    /// Removes a user: its key stops working at once.
    pub fn remove(&self, name: &str) -> Result<(), UserError> {
        let mut inner = self.write();
        let i = find(&inner, name)?;
        let mut records = inner.records.clone();
        let r = records.remove(i);
        self.save(&records)?;
        inner.by_key.remove(&r.access_key);
        inner.records = records;
        tracing::info!(user = name, "user removed");
        Ok(())
    }

    /// Gives a user a new secret key (the access key stays); the old secret stops working at once.
    pub fn rotate(&self, name: &str) -> Result<(Arc<User>, String), UserError> {
        let secret = random_string(40, SECRET_ALPHABET).map_err(|e| UserError::Io(e.to_string()))?;
        let mut inner = self.write();
        let i = find(&inner, name)?;
        let mut records = inner.records.clone();
        records[i].secret_key = secret.clone();
        self.save(&records)?;
        let e = entry(&records[i], false);
        let user = e.user.clone();
        inner.by_key.insert(records[i].access_key.clone(), e);
        inner.records = records;
        tracing::info!(user = name, "secret key rotated");
        Ok((user, secret))
    }

    /// Writes `users.json` atomically (see the module doc).
    fn save(&self, records: &[Record]) -> Result<(), UserError> {
        let Some(file) = &self.file else { return Ok(()) };
        let io = |e: std::io::Error| UserError::Io(format!("{}: {e}", file.display()));
        let text = serde_json::to_vec_pretty(&File { version: 1, users: records.to_vec() })
            .map_err(|e| UserError::Io(e.to_string()))?;
        let tmp = file.with_extension("json.tmp");
        let mut f =
            std::fs::OpenOptions::new().write(true).create(true).truncate(true).mode(0o600).open(&tmp).map_err(io)?;
        f.write_all(&text).and_then(|()| f.sync_all()).map_err(io)?;
        std::fs::rename(&tmp, file).map_err(io)?;
        if let Some(dir) = file.parent() {
            std::fs::File::open(dir).and_then(|d| d.sync_all()).map_err(io)?;
        }
        Ok(())
    }
}

fn entry(r: &Record, builtin: bool) -> Entry {
    let user = User {
        name: r.name.clone(),
        access_key: r.access_key.clone(),
        role: r.role,
        scopes: r.scopes.clone(),
        builtin,
    };
    Entry { user: Arc::new(user), secret: r.secret_key.clone() }
}

fn find(inner: &Inner, name: &str) -> Result<usize, UserError> {
    if name == ADMIN {
        return Err(UserError::Builtin(name.into()));
    }
    inner.records.iter().position(|r| r.name == name).ok_or_else(|| UserError::NotFound(name.into()))
}

fn validate_name(name: &str) -> Result<(), UserError> {
    let ok = (1..=64).contains(&name.len()) && name.bytes().all(|b| b.is_ascii_alphanumeric() || b"._-@".contains(&b));
    if ok {
        Ok(())
    } else {
        Err(UserError::Invalid(format!("user name {name:?}: 1 to 64 characters of A-Z a-z 0-9 . _ - @")))
    }
}

fn validate_access_key(k: String) -> Result<String, UserError> {
    if (16..=128).contains(&k.len()) && k.bytes().all(|b| b.is_ascii_alphanumeric()) {
        Ok(k)
    } else {
        Err(UserError::Invalid("access key: 16 to 128 characters of A-Z a-z 0-9".into()))
    }
}

fn validate_secret_key(s: String) -> Result<String, UserError> {
    if (16..=128).contains(&s.len()) && s.bytes().all(|b| b.is_ascii_graphic()) {
        Ok(s)
    } else {
        Err(UserError::Invalid("secret key: 16 to 128 printable characters without spaces".into()))
    }
}

/// A random string over `alphabet` (uniform: bytes past the last whole multiple of its length
/// are drawn again).
fn random_string(len: usize, alphabet: &[u8]) -> Result<String, KeyGenError> {
    let limit = 256 - 256 % alphabet.len();
    let mut urandom = std::fs::File::open("/dev/urandom").map_err(KeyGenError)?;
    let mut out = String::with_capacity(len);
    let mut buf = [0u8; 64];
    while out.len() < len {
        urandom.read_exact(&mut buf).map_err(KeyGenError)?;
        out.extend(
            buf.iter().filter(|&&b| (b as usize) < limit).map(|&b| alphabet[b as usize % alphabet.len()] as char),
        );
    }
    out.truncate(len);
    Ok(out)
}

/// The built-in admin's pair from `file`, else generated and saved there (mode 0600; the file's
/// path is printed, never the secret).
fn builtin_pair(file: &Path) -> Result<(String, String), LoadError> {
    if let Ok(text) = std::fs::read_to_string(file) {
        let mut it = text.lines();
        if let (Some(a), Some(s)) = (it.next(), it.next()) {
            tracing::info!("admin credentials from {}", file.display());
            return Ok((a.trim().to_string(), s.trim().to_string()));
        }
    }
    let a = random_string(20, ACCESS_ALPHABET)?;
    let s = random_string(40, SECRET_ALPHABET)?;
    let mut f = std::fs::OpenOptions::new()
        .write(true)
        .create(true)
        .truncate(true)
        .mode(0o600)
        .open(file)
        .map_err(|source| LoadError::SaveCredentials { path: file.to_path_buf(), source })?;
    writeln!(f, "{a}\n{s}")
        .and_then(|()| f.sync_all())
        .map_err(|source| LoadError::Io { path: file.to_path_buf(), source })?;
    println!(
        "reo: generated credentials of the admin, saved in {} (the secret key is its second line):",
        file.display()
    );
    println!("  access key: {a}");
    Ok((a, s))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn new(name: &str, role: Role, scopes: &[&str]) -> NewUser {
        NewUser {
            name: name.into(),
            role,
            scopes: scopes.iter().map(|s| Scope::parse(s).unwrap()).collect(),
            access_key: None,
            secret_key: None,
        }
    }

    #[test]
    fn users_survive_a_restart_and_changes_take_effect_at_once() {
        let tmp = tempfile::tempdir().unwrap();
        let dir = tmp.path();
        let pair = Some(("ADMINKEY000000000000".to_string(), "admin-secret-0000000000".to_string()));
        let users = Users::open(dir, pair.clone()).unwrap();
        let (rw, secret) = users.add(new("app", Role::ReadWrite, &["photos/app/"])).unwrap();
        assert_eq!(rw.access_key.len(), 20);
        assert_eq!(secret.len(), 40);
        let (ro, _) = users.add(new("viewer", Role::ReadOnly, &[])).unwrap();
        assert!(matches!(users.add(new("app", Role::ReadOnly, &[])), Err(UserError::NameTaken(_))));
        assert!(matches!(users.add(new("admin", Role::ReadOnly, &[])), Err(UserError::NameTaken(_))));
        assert!(matches!(users.remove("admin"), Err(UserError::Builtin(_))));
        let (_, rotated) = users.rotate("app").unwrap();
        assert_ne!(rotated, secret);
        users.remove("viewer").unwrap();
        assert!(users.lookup(&ro.access_key).is_none(), "a removed key stops working at once");
        use std::os::unix::fs::PermissionsExt;
        let mode = std::fs::metadata(dir.join("users.json")).unwrap().permissions().mode();
        assert_eq!(mode & 0o777, 0o600);

        let again = Users::open(dir, pair).unwrap();
        let (u, s) = again.lookup(&rw.access_key).unwrap();
        assert_eq!((u.name.as_str(), u.role, s.as_str()), ("app", Role::ReadWrite, rotated.as_str()));
        assert_eq!(u.scopes, vec![Scope::parse("photos/app/").unwrap()]);
        let names: Vec<String> = again.list().iter().map(|u| u.name.clone()).collect();
        assert_eq!(names, ["admin", "app"]);
    }

    #[test]
    fn given_keys_are_checked() {
        let users = Users::with_admin("ADMINKEY000000000000".into(), "s".repeat(20), None);
        let mut n = new("x", Role::ReadOnly, &[]);
        n.access_key = Some("short".into());
        assert!(matches!(users.add(n.clone()), Err(UserError::Invalid(_))));
        n.access_key = Some("ADMINKEY000000000000".into());
        assert!(matches!(users.add(n.clone()), Err(UserError::KeyTaken(_))));
        n.access_key = Some("GIVENKEY000000000000".into());
        n.secret_key = Some("has a space in it 000".into());
        assert!(matches!(users.add(n.clone()), Err(UserError::Invalid(_))));
        assert!(matches!(users.add(new("bad name", Role::ReadOnly, &[])), Err(UserError::Invalid(_))));
        assert!(matches!(users.add(new("boss", Role::Admin, &["photos"])), Err(UserError::Invalid(_))));
    }

    #[test]
    fn random_keys_use_only_their_alphabet() {
        let k = random_string(1000, ACCESS_ALPHABET).unwrap();
        assert_eq!(k.len(), 1000);
        assert!(k.bytes().all(|b| ACCESS_ALPHABET.contains(&b)));
    }
}
