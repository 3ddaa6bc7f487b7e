//! Application hints (SDCC-API, the SDCC paper, docs/REFERENCES.md §P3): what an application tells the cache about its future
//! accesses — prefetch, pin, unpin, evict an address (key, prefix or byte range) during a lease.
//!
//! * [`HintSpec`]: a hint as submitted (`POST /_reo/hints`), validated by [`HintSpec::validate`].
//! * [`store`]: the hints in force, persisted as one JSON file in the data directory.
//! * [`throttle`]: the promote-bandwidth token bucket prefetches draw from.
//! * [`engine`]: the thread that applies hints when their lease starts and undoes pins at its end.
//! * [`reorganize`]: moving cached objects from one key prefix to another.

#[cfg(test)]
mod backend_tests;
pub mod engine;
pub mod reorganize;
pub mod store;
#[cfg(test)]
mod tests;
pub mod throttle;

use serde::{Deserialize, Serialize};

/// What a hint asks for. `open` and `close` are the file-style aliases of prefetch and evict.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Intent {
    /// Read the address (or its byte range) from the backend into the cache.
    Prefetch,
    /// Prefetch the address and keep its objects from eviction until the lease ends, within the
    /// owner's pin limit.
    Pin,
    /// Release the address's pins now.
    Unpin,
    /// Drop the address's objects from the cache (unflushed ones are kept).
    Evict,
    /// Alias of `Prefetch`.
    Open,
    /// Alias of `Evict`.
    Close,
    /// Cached objects under `reorganize.from` now live under `reorganize.to` (see [`reorganize`]).
    Reorganize,
}

/// The two prefixes of a `reorganize` hint (within the hint's bucket).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Move {
    /// The prefix cached objects leave.
    pub from: String,
    /// The prefix they move to (not `from`).
    pub to: String,
}

impl Intent {
    /// The intent with aliases resolved.
    pub fn canonical(self) -> Intent {
        match self {
            Intent::Open => Intent::Prefetch,
            Intent::Close => Intent::Evict,
            i => i,
        }
    }
}

/// Which tier a hint is for: the flash cache, or the backend behind it (forwarded through
/// [`crate::backend::Backend::advise`]; see [`crate::backend::advice`] for what each backend does).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, Default)]
#[serde(rename_all = "lowercase")]
pub enum Target {
    /// The flash cache (the default).
    #[default]
    Cache,
    /// The backend store behind the cache.
    Backend,
}

/// When a hint is in force, in unix seconds: applied at `start`, undone (pins) at `end`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
pub struct Lease {
    /// When the hint is applied, unix seconds.
    pub start: u64,
    /// When it ends, unix seconds (after `start`).
    pub end: u64,
}

/// A hint as an application submits it.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct HintSpec {
    /// The submitting application's id (not empty).
    pub app_id: String,
    /// The bucket the address is in (not empty).
    pub bucket: String,
    /// One object…
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub key: Option<String>,
    /// …or every object under a key prefix.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub prefix: Option<String>,
    /// Bytes `[start, end)` of `key` only (prefetch).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub range: Option<(u64, u64)>,
    /// Which tier the hint is for (default: the cache).
    #[serde(default)]
    pub target: Target,
    /// What the hint asks for.
    pub intent: Intent,
    /// Higher first among hints starting at the same time.
    #[serde(default)]
    pub priority: i32,
    /// When the hint is in force.
    pub lease: Lease,
    /// For `intent: reorganize` only (then without `key`/`prefix`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub reorganize: Option<Move>,
}

/// Why a hint, or the set of hints, was refused or could not be kept; the message names the
/// bad field or the file.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum HintError {
    /// A field of the hint (or a combination of fields) is wrong.
    #[error("{field}: {reason}")]
    Field {
        /// The field (or fields, comma-separated) at fault.
        field: &'static str,
        /// What is wrong with it.
        reason: String,
    },
    /// The whole set is full ([`engine::MAX_HINTS`]).
    #[error("{limit} hints are in force; cancel some first")]
    TooMany {
        /// The most hints in force at once.
        limit: usize,
    },
    /// The user has its limit of hints in force.
    #[error("user {owner} has {limit} hints in force, its limit; cancel some first")]
    OwnerLimit {
        /// The user.
        owner: String,
        /// The most hints the user may have in force.
        limit: usize,
    },
    /// A new hint could not be written to the hints file.
    #[error("cannot persist the hint: {0}")]
    Persist(std::io::Error),
    /// The hints file could not be rewritten after a cancel.
    #[error("cannot persist the hints: {0}")]
    PersistAll(std::io::Error),
    /// The hints file (or its directory) could not be read or created.
    #[error("{}: {source}", path.display())]
    Io {
        /// The file or directory.
        path: std::path::PathBuf,
        /// Why.
        source: std::io::Error,
    },
    /// The hints file is not one.
    #[error("{}: {source}", path.display())]
    Corrupt {
        /// The hints file.
        path: std::path::PathBuf,
        /// Where the JSON is wrong.
        source: serde_json::Error,
    },
    /// The engine's thread could not be spawned.
    #[error("cannot start the hint thread: {0}")]
    Thread(std::io::Error),
}

impl HintError {
    fn field(field: &'static str, reason: impl Into<String>) -> HintError {
        HintError::Field { field, reason: reason.into() }
    }
}

/// Whether a bucket name can address only bucket objects in the cache: no '/' (the cache key's
/// separator) and no control character (the held objects' names start with NUL).
pub(crate) fn bucket_name_safe(bucket: &str) -> bool {
    !bucket.chars().any(|c| c == '/' || c.is_control())
}

impl HintSpec {
    /// Checks the fields' combination; the message names the bad field.
    pub fn validate(&self) -> Result<(), HintError> {
        if self.app_id.is_empty() {
            return Err(HintError::field("app_id", "must not be empty"));
        }
        if self.bucket.is_empty() {
            return Err(HintError::field("bucket", "must not be empty"));
        }
        // Every target: the objects a layer above holds in the cache (`gateway/held.rs`) live
        // under names with a control character, which no hint may reach.
        if !bucket_name_safe(&self.bucket) {
            return Err(HintError::field("bucket", "must not contain '/' or control characters"));
        }
        match (&self.reorganize, self.intent) {
            (Some(m), Intent::Reorganize) => {
                if self.key.is_some() || self.prefix.is_some() || self.range.is_some() {
                    return Err(HintError::field(
                        "reorganize",
                        "the addresses are reorganize.from and .to, not key/prefix/range",
                    ));
                }
                if m.from == m.to {
                    return Err(HintError::field("reorganize", "from and to are the same prefix"));
                }
            }
            (None, Intent::Reorganize) => {
                return Err(HintError::field("reorganize", "intent reorganize needs {\"from\", \"to\"}"))
            }
            (Some(_), _) => return Err(HintError::field("reorganize", "only with intent \"reorganize\"")),
            (None, _) => match (&self.key, &self.prefix) {
                (Some(_), Some(_)) => return Err(HintError::field("key, prefix", "give one address, not both")),
                (None, None) => return Err(HintError::field("key", "an address needs a key or a prefix")),
                _ => {}
            },
        }
        if let Some((s, e)) = self.range {
            if self.key.is_none() {
                return Err(HintError::field("range", "a byte range needs a key"));
            }
            if s >= e {
                return Err(HintError::field("range", format!("start {s} must be below end {e}")));
            }
        }
        if self.target == Target::Backend {
            if self.intent == Intent::Reorganize {
                return Err(HintError::field(
                    "target",
                    "a backend hint takes prefetch, pin, unpin, evict, open or close",
                ));
            }
            crate::keys::validate_bucket(&self.bucket).map_err(|e| HintError::field("bucket", e.to_string()))?;
            if let Some(k) = &self.key {
                crate::keys::validate_key(k).map_err(|e| HintError::field("key", e.to_string()))?;
            }
        }
        if self.lease.end <= self.lease.start {
            return Err(HintError::field(
                "lease",
                format!("end {} must be after start {}", self.lease.end, self.lease.start),
            ));
        }
        Ok(())
    }
}

/// Where a hint is in its lifecycle.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum HintState {
    /// Waiting for its lease to start.
    Scheduled,
    /// Applied; pins hold until the lease ends.
    Active,
}

/// A hint in force.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Hint {
    /// The id answered on submission; names it in `DELETE /_reo/hints/<id>`.
    pub request_id: String,
    /// The hint as submitted.
    #[serde(flatten)]
    pub spec: HintSpec,
    /// Scheduled or active.
    pub state: HintState,
    /// Keys this hint pinned (unpinned when it ends).
    #[serde(default)]
    pub pinned: Vec<String>,
    /// Bytes it prefetched from the backend.
    #[serde(default)]
    pub prefetched_bytes: u64,
    /// `target: backend`: what the backend did with it, or why it could not.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub backend_result: Option<String>,
    /// The user who submitted it (its hints count against the user's limit).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub owner: Option<String>,
    /// The most bytes the owner's pins may hold at once (`None`: no limit, an admin's).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub pin_limit: Option<u64>,
    /// Keys this hint would have pinned but the owner's pin limit did not allow.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub pins_refused: Vec<String>,
}

impl HintSpec {
    /// The backend's view of this hint (`target: backend`): its address and advice.
    pub fn backend_advice(&self) -> (crate::backend::Address, crate::backend::Advice) {
        use crate::backend::{Address, Advice};
        let address = match (&self.key, self.range, &self.prefix) {
            (Some(k), Some((start, end)), _) => Address::Range { key: k.clone(), start, end },
            (Some(k), None, _) => Address::Key(k.clone()),
            (None, _, p) => Address::Prefix(p.clone().unwrap_or_default()),
        };
        let advice = match self.intent.canonical() {
            Intent::Pin => Advice::Pin,
            Intent::Unpin => Advice::Unpin,
            Intent::Evict => Advice::DontNeed,
            _ => Advice::WillNeed,
        };
        (address, advice)
    }
}

/// Unix time in seconds.
pub fn unix_now() -> u64 {
    std::time::SystemTime::now().duration_since(std::time::UNIX_EPOCH).map_or(0, |d| d.as_secs())
}

#[cfg(test)]
mod spec_tests {
    use super::*;

    fn spec() -> HintSpec {
        HintSpec {
            app_id: "a".into(),
            bucket: "bkt".into(),
            key: Some("k".into()),
            prefix: None,
            range: None,
            target: Target::Cache,
            intent: Intent::Pin,
            priority: 0,
            lease: Lease { start: 10, end: 20 },
            reorganize: None,
        }
    }

    #[test]
    fn validation_names_the_field() {
        assert!(spec().validate().is_ok());
        let mut s = spec();
        s.prefix = Some("p".into());
        assert!(s.validate().unwrap_err().to_string().starts_with("key, prefix"));
        let mut s = spec();
        s.lease.end = 5;
        assert!(s.validate().unwrap_err().to_string().starts_with("lease"));
        // Any target: no name that could reach the cache's held objects.
        for target in [Target::Cache, Target::Backend] {
            for bad in ["\0held", "a/b", "x\ty"] {
                let mut s = spec();
                s.target = target;
                s.bucket = bad.into();
                let e = s.validate().unwrap_err().to_string();
                assert!(e.starts_with("bucket: must not contain"), "{target:?} {bad:?}: {e}");
            }
        }
        let mut s = spec();
        s.bucket = "b".into();
        assert!(s.validate().is_ok(), "a flash hint may name any other bucket");
        s.target = Target::Backend;
        assert!(s.validate().unwrap_err().to_string().starts_with("bucket: invalid bucket name \"b\""));
        s.bucket = "bkt".into();
        assert!(s.validate().is_ok());
        s.key = Some("a//../\0".into());
        assert!(s.validate().unwrap_err().to_string().starts_with("key:"));
        s.key = Some("k".into());
        s.bucket = "No_Such..Name".into();
        assert!(s.validate().unwrap_err().to_string().starts_with("bucket:"));
        assert_eq!(Intent::Open.canonical(), Intent::Prefetch);
        assert_eq!(Intent::Close.canonical(), Intent::Evict);
        let mut s = spec();
        s.intent = Intent::Reorganize;
        assert!(s.validate().unwrap_err().to_string().starts_with("reorganize"));
        s.key = None;
        s.reorganize = Some(Move { from: "a/".into(), to: "b/".into() });
        assert!(s.validate().is_ok());
    }

    #[test]
    fn unknown_fields_are_refused() {
        let e = serde_json::from_str::<HintSpec>(
            r#"{"app_id":"a","bucket":"b","key":"k","intent":"pin","lease":{"start":1,"end":2},"colour":1}"#,
        );
        assert!(e.is_err());
    }
}
