//! Write policies by rule: `bucket` or `bucket/prefix` → write-back (the default),
//! write-through, write-around or read-only; the longest matching rule wins.
//!
//! * write-back: dirty on flash, acknowledged, flushed later.
//! * write-through: the backend first, then a clean copy on flash; acknowledged after both.
//! * write-around: the backend only (the cache drops its copy); reads fill it later.
//! * read-only: PUTs, copies, uploads and deletes are refused (`AccessDenied`).

use std::fmt;
use std::str::FromStr;

/// How writes under a scope reach flash and the backend (see the module docs).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum WritePolicy {
    /// Dirty on flash, acknowledged, flushed later (the default).
    #[default]
    WriteBack,
    /// The backend first, then a clean copy on flash; acknowledged after both.
    WriteThrough,
    /// The backend only; the cache drops its copy.
    WriteAround,
    /// Writes and deletes are refused (`AccessDenied`).
    ReadOnly,
}

/// Why a write policy or a policy rule is refused; the message quotes it.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum PolicyError {
    /// Not one of the four policy names.
    #[error("unknown write policy {0:?} (expected write-back, write-through, write-around or read-only)")]
    Unknown(String),
    /// A rule without `=`.
    #[error("write policy rule {0:?}: expected BUCKET[/PREFIX]=POLICY")]
    Syntax(String),
    /// The rule's bucket is not a valid bucket name.
    #[error("write policy rule {rule:?}: {source}")]
    Bucket {
        /// The rule as given.
        rule: String,
        /// Why the bucket name is invalid.
        source: crate::keys::NameError,
    },
    /// The rule's policy is not one of the four names.
    #[error("write policy rule {rule:?}: {source}")]
    Policy {
        /// The rule as given.
        rule: String,
        /// Why the policy is refused.
        source: Box<PolicyError>,
    },
}

impl FromStr for WritePolicy {
    type Err = PolicyError;
    fn from_str(s: &str) -> Result<Self, PolicyError> {
        match s {
            "write-back" => Ok(WritePolicy::WriteBack),
            "write-through" => Ok(WritePolicy::WriteThrough),
            "write-around" => Ok(WritePolicy::WriteAround),
            "read-only" => Ok(WritePolicy::ReadOnly),
            _ => Err(PolicyError::Unknown(s.to_string())),
        }
    }
}

impl fmt::Display for WritePolicy {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.pad(match self {
            WritePolicy::WriteBack => "write-back",
            WritePolicy::WriteThrough => "write-through",
            WritePolicy::WriteAround => "write-around",
            WritePolicy::ReadOnly => "read-only",
        })
    }
}

/// One rule: objects whose `bucket/key` starts with `scope` get `policy`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct PolicyRule {
    /// `bucket/` or `bucket/prefix`: a prefix of the `bucket/key` it matches.
    pub scope: String,
    /// The policy of the objects it matches.
    pub policy: WritePolicy,
}

impl FromStr for PolicyRule {
    type Err = PolicyError;
    /// `SCOPE=POLICY`, e.g. `logs=write-around` or `data/tmp/=write-through`.
    fn from_str(s: &str) -> Result<Self, PolicyError> {
        let (scope, policy) = s.split_once('=').ok_or_else(|| PolicyError::Syntax(s.to_string()))?;
        let bucket = scope.split('/').next().unwrap_or_default();
        crate::keys::validate_bucket(bucket).map_err(|source| PolicyError::Bucket { rule: s.to_string(), source })?;
        // A bare bucket covers exactly that bucket, not others sharing its name as a prefix.
        let scope = if scope.contains('/') { scope.to_string() } else { format!("{scope}/") };
        let policy = policy.parse().map_err(|e| PolicyError::Policy { rule: s.to_string(), source: Box::new(e) })?;
        Ok(PolicyRule { scope, policy })
    }
}

/// The policy of `bucket/key` under `rules` (write-back if none matches).
pub fn policy_of(rules: &[PolicyRule], bucket: &str, key: &str) -> WritePolicy {
    let ck = super::pending::cache_key(bucket, key);
    rules
        .iter()
        .filter(|r| ck.starts_with(&r.scope))
        .max_by_key(|r| r.scope.len())
        .map_or(WritePolicy::WriteBack, |r| r.policy)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn longest_rule_wins() {
        let rules: Vec<PolicyRule> = ["logs=write-around", "logs/keep/=write-through", "ro-data=read-only"]
            .iter()
            .map(|r| r.parse().unwrap())
            .collect();
        assert_eq!(policy_of(&rules, "logs", "a"), WritePolicy::WriteAround);
        assert_eq!(policy_of(&rules, "logs", "keep/x"), WritePolicy::WriteThrough);
        assert_eq!(policy_of(&rules, "logs2", "a"), WritePolicy::WriteBack);
        assert_eq!(policy_of(&rules, "ro-data", "k"), WritePolicy::ReadOnly);
        assert!("logs".parse::<PolicyRule>().unwrap_err().to_string().contains("BUCKET[/PREFIX]=POLICY"));
        assert!("logs=fast".parse::<PolicyRule>().unwrap_err().to_string().contains("unknown write policy"));
        assert!("Bad=write-back".parse::<PolicyRule>().unwrap_err().to_string().contains("invalid bucket name"));
    }
}
