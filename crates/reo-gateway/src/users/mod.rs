//! Users and roles: who may do what through the S3 API and Reo's own API.
//!
//! A user is a key pair with a [`Role`] and, optionally, [`Scope`]s that confine it to buckets or
//! key prefixes. The first credential (from `--access-key`/`--secret-key` or the generated
//! `<data_dir>/credentials`) is the built-in `admin`; the others live in `<data_dir>/users.json`
//! ([`store::Users`]), managed through `/_reo/admin/users` (`reo admin user ...`).
//!
//! * [`store`]: the users of a gateway, their file, and lookups by access key.
//! * [`access`]: s3s's authentication and access-check hooks over them.

pub mod access;
pub mod store;

use serde::{Deserialize, Serialize};

pub use store::{KeyGenError, LoadError, NewUser, UserError, Users};

/// What a user may do.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Role {
    /// Everything: S3 on every bucket, the `/_reo/admin` API (devices, flush, users).
    Admin,
    /// Read and write objects and buckets within its scopes; hints on them.
    ReadWrite,
    /// Read objects and list buckets within its scopes.
    ReadOnly,
}

impl Role {
    /// The role's name, as `users.json` and the API write it.
    pub fn as_str(self) -> &'static str {
        match self {
            Role::Admin => "admin",
            Role::ReadWrite => "readwrite",
            Role::ReadOnly => "readonly",
        }
    }
}

/// Why a role or a scope is refused; the message quotes it.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum GrantError {
    /// Not one of `admin`, `readwrite`, `readonly`.
    #[error("role {0:?}: expected admin, readwrite or readonly")]
    Role(String),
    /// The scope's bucket is not a valid bucket name.
    #[error("scope {scope:?}: {source}")]
    Bucket {
        /// The scope as given.
        scope: String,
        /// Why the bucket name is invalid.
        source: crate::keys::NameError,
    },
    /// The scope's prefix is longer than 1024 bytes.
    #[error("scope {0:?}: the prefix is longer than {MAX_PREFIX} bytes")]
    PrefixTooLong(String),
}

impl std::str::FromStr for Role {
    type Err = GrantError;
    fn from_str(s: &str) -> Result<Role, GrantError> {
        match s {
            "admin" => Ok(Role::Admin),
            "readwrite" => Ok(Role::ReadWrite),
            "readonly" => Ok(Role::ReadOnly),
            _ => Err(GrantError::Role(s.to_string())),
        }
    }
}

/// Whether an operation reads or changes what it addresses.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Access {
    /// Reads or lists.
    Read,
    /// Creates, changes or deletes.
    Write,
}

/// A part of the namespace a user is confined to: a whole bucket (`prefix` empty) or the keys of
/// a bucket that start with `prefix`. Written `BUCKET` or `BUCKET/PREFIX`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Scope {
    /// The bucket.
    pub bucket: String,
    /// The key prefix within it (empty: the whole bucket); at most 1024 bytes.
    pub prefix: String,
}

/// Longest prefix a scope may name (S3's key limit).
const MAX_PREFIX: usize = 1024;

impl Scope {
    /// Parses `BUCKET` or `BUCKET/PREFIX` (the prefix is whatever follows the first `/`).
    pub fn parse(s: &str) -> Result<Scope, GrantError> {
        let (bucket, prefix) = s.split_once('/').unwrap_or((s, ""));
        crate::keys::validate_bucket(bucket).map_err(|source| GrantError::Bucket { scope: s.to_string(), source })?;
        if prefix.len() > MAX_PREFIX {
            return Err(GrantError::PrefixTooLong(s.to_string()));
        }
        Ok(Scope { bucket: bucket.to_string(), prefix: prefix.to_string() })
    }

    /// Whether the key is inside the scope.
    fn covers_key(&self, bucket: &str, key: &str) -> bool {
        self.bucket == bucket && key.starts_with(&self.prefix)
    }

    /// Whether every key under `prefix` is inside the scope (a listing of `prefix`).
    fn covers_prefix(&self, bucket: &str, prefix: &str) -> bool {
        self.covers_key(bucket, prefix)
    }
}

impl std::fmt::Display for Scope {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        if self.prefix.is_empty() {
            f.write_str(&self.bucket)
        } else {
            write!(f, "{}/{}", self.bucket, self.prefix)
        }
    }
}

impl Serialize for Scope {
    fn serialize<S: serde::Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        s.collect_str(self)
    }
}

impl<'de> Deserialize<'de> for Scope {
    fn deserialize<D: serde::Deserializer<'de>>(d: D) -> Result<Scope, D::Error> {
        let s = String::deserialize(d)?;
        Scope::parse(&s).map_err(serde::de::Error::custom)
    }
}

/// A user as the gateway knows it (the secret stays in [`store::Users`]).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct User {
    /// The user's name (unique).
    pub name: String,
    /// The access key requests are signed with (unique).
    pub access_key: String,
    /// What the user may do.
    pub role: Role,
    /// Empty: every bucket.
    pub scopes: Vec<Scope>,
    /// The built-in admin (from the command line or `<data_dir>/credentials`): it cannot be
    /// removed or rotated through the API.
    pub builtin: bool,
}

impl User {
    fn role_allows(&self, access: Access) -> bool {
        match self.role {
            Role::Admin | Role::ReadWrite => true,
            Role::ReadOnly => access == Access::Read,
        }
    }

    /// Whether the user may read or write the object `bucket/key`.
    pub fn may_object(&self, access: Access, bucket: &str, key: &str) -> bool {
        self.role_allows(access) && (self.unscoped() || self.scopes.iter().any(|s| s.covers_key(bucket, key)))
    }

    /// Whether the user may list (or, for [`Access::Write`], write) every key under `prefix`.
    pub fn may_prefix(&self, access: Access, bucket: &str, prefix: &str) -> bool {
        self.role_allows(access) && (self.unscoped() || self.scopes.iter().any(|s| s.covers_prefix(bucket, prefix)))
    }

    /// Whether the user may see the bucket at all (some scope names it): HeadBucket, its location,
    /// and whether it appears in ListBuckets.
    pub fn sees_bucket(&self, bucket: &str) -> bool {
        self.unscoped() || self.scopes.iter().any(|s| s.bucket == bucket)
    }

    /// Whether the user may create, delete or configure the bucket itself (a scope on the whole
    /// bucket).
    pub fn may_bucket(&self, access: Access, bucket: &str) -> bool {
        self.may_prefix(access, bucket, "")
    }

    fn unscoped(&self) -> bool {
        self.role == Role::Admin || self.scopes.is_empty()
    }

    /// `name (role)`, for error messages.
    pub fn describe(&self) -> String {
        format!("{} ({})", self.name, self.role.as_str())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn user(role: Role, scopes: &[&str]) -> User {
        User {
            name: "u".into(),
            access_key: "K".into(),
            role,
            scopes: scopes.iter().map(|s| Scope::parse(s).unwrap()).collect(),
            builtin: false,
        }
    }

    #[test]
    fn roles_bound_what_a_user_may_do() {
        let ro = user(Role::ReadOnly, &[]);
        assert!(ro.may_object(Access::Read, "b", "k"));
        assert!(!ro.may_object(Access::Write, "b", "k"));
        assert!(!ro.may_bucket(Access::Write, "b"));
        let rw = user(Role::ReadWrite, &[]);
        assert!(rw.may_object(Access::Write, "any", "k") && rw.may_bucket(Access::Write, "any"));
    }

    #[test]
    fn scopes_confine_a_user_to_buckets_and_prefixes() {
        let u = user(Role::ReadWrite, &["photos/user1/", "logs"]);
        assert!(u.may_object(Access::Write, "photos", "user1/a.jpg"));
        assert!(!u.may_object(Access::Write, "photos", "user2/a.jpg"));
        assert!(!u.may_object(Access::Read, "photos", "user1"), "the prefix includes its slash");
        assert!(u.may_prefix(Access::Read, "photos", "user1/2024/"));
        assert!(!u.may_prefix(Access::Read, "photos", ""), "listing the whole bucket reaches user2's keys");
        assert!(!u.may_bucket(Access::Write, "photos"), "a prefix scope does not own the bucket");
        assert!(u.may_bucket(Access::Write, "logs"));
        assert!(u.sees_bucket("photos") && !u.sees_bucket("other"));
        let admin = user(Role::Admin, &["logs"]);
        assert!(admin.may_bucket(Access::Write, "other"), "an admin is never confined");
    }

    #[test]
    fn scopes_parse_and_print() {
        assert_eq!(Scope::parse("bkt/p/q").unwrap().to_string(), "bkt/p/q");
        assert_eq!(Scope::parse("bkt").unwrap(), Scope { bucket: "bkt".into(), prefix: String::new() });
        assert!(Scope::parse("Bad_Bucket").is_err());
        assert!(Scope::parse(&format!("bkt/{}", "x".repeat(1025))).is_err());
    }
}
