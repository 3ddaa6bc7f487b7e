//! What the S3 backend makes of object_store's answers: errors as [`BackendError`]s (so the
//! gateway answers the right S3 error, and an unreachable or failing backend takes the "backend
//! down" path: `503`, write-back keeps the dirty data and the flusher retries), ETags without
//! quotes, and S3 keys as object_store [`Path`]s (refusing the keys a `Path` cannot hold unchanged).

use object_store::path::Path;

use crate::backend::BackendError;

/// An object_store error of an operation on `bucket/key` as a [`BackendError`].
pub fn map_err(e: object_store::Error, bucket: &str, key: &str) -> BackendError {
    use object_store::Error as E;
    match e {
        E::NotFound { .. } if e.to_string().contains("NoSuchBucket") => BackendError::NoSuchBucket(bucket.into()),
        E::NotFound { .. } => BackendError::NoSuchKey(key.into()),
        E::Precondition { .. } | E::NotModified { .. } | E::AlreadyExists { .. } => {
            BackendError::Precondition(format!("{bucket}/{key}: {e}"))
        }
        E::InvalidPath { .. } | E::NotSupported { .. } | E::NotImplemented { .. } => {
            BackendError::Invalid(format!("the S3 backend cannot do this for {bucket}/{key}: {e}"))
        }
        E::PermissionDenied { .. } | E::Unauthenticated { .. } => {
            BackendError::Io(format!("the S3 backend refused the gateway's credentials for {bucket}/{key}: {e}"))
        }
        // Connection refused, timeouts, 5xx after retries, …: the backend is down.
        other => BackendError::Io(format!("S3 backend, {bucket}/{key}: {}", chain(&other))),
    }
}

/// `e` and its chain of sources ("a: b: c"), each source only if its text is new (HTTP client
/// errors hide the cause, such as "Connection refused", in their sources).
pub fn chain(e: &dyn std::error::Error) -> String {
    let mut s = e.to_string();
    let mut src = e.source();
    while let Some(x) = src {
        let t = x.to_string();
        if !s.contains(&t) {
            s = format!("{s}: {t}");
        }
        src = x.source();
    }
    s
}

/// An S3 ETag without the quotes (and without a weak `W/` marker) S3 puts around it.
pub fn normalize_etag(etag: &str) -> String {
    let e = etag.trim();
    let e = e.strip_prefix("W/").unwrap_or(e);
    e.trim_matches('"').to_string()
}

/// The text of a path (the S3 key it stands for).
pub fn raw(p: &Path) -> &str {
    p.as_ref()
}

/// `key` as an object_store path, or `Invalid` if a path would not reproduce it byte for byte
/// (empty segments such as `a//b`, a leading or trailing `/`, `.` or `..` segments, control
/// characters).
pub fn key_path(key: &str) -> Result<Path, BackendError> {
    match Path::parse(key) {
        Ok(p) if raw(&p) == key => Ok(p),
        _ => Err(BackendError::Invalid(format!(
            "key {key:?}: the S3 backend cannot store keys with an empty segment, a leading or trailing '/', \
             a '.' or '..' segment, or control characters"
        ))),
    }
}

/// The object_store path under which keys starting with `prefix` are listed (the prefix's
/// directory part), or `None` (the whole bucket) when that part is not a valid path.
pub fn list_dir(prefix: &str) -> Option<Path> {
    let dir = &prefix[..prefix.rfind('/')?];
    Path::parse(dir).ok().filter(|p| raw(p) == dir && !dir.is_empty())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn src() -> Box<dyn std::error::Error + Send + Sync> {
        "x".into()
    }

    #[test]
    fn etags_lose_their_quotes() {
        assert_eq!(normalize_etag("\"5d41402abc4b2a76b9719d911017c592\""), "5d41402abc4b2a76b9719d911017c592");
        assert_eq!(normalize_etag("W/\"abc-3\""), "abc-3");
        assert_eq!(normalize_etag("abc"), "abc");
    }

    #[test]
    fn errors_map_to_the_gateway_path() {
        use object_store::Error as E;
        let nf = E::NotFound { path: "k".into(), source: src() };
        assert!(matches!(map_err(nf, "b", "k"), BackendError::NoSuchKey(k) if k == "k"));
        let nb = E::NotFound { path: "k".into(), source: "<Code>NoSuchBucket</Code>".into() };
        assert!(matches!(map_err(nb, "b", "k"), BackendError::NoSuchBucket(b) if b == "b"));
        for e in [
            E::Precondition { path: "k".into(), source: src() },
            E::NotModified { path: "k".into(), source: src() },
            E::AlreadyExists { path: "k".into(), source: src() },
        ] {
            assert!(matches!(map_err(e, "b", "k"), BackendError::Precondition(_)));
        }
        let down = E::Generic { store: "S3", source: "error sending request: connection refused".into() };
        let m = map_err(down, "b", "k");
        assert!(matches!(&m, BackendError::Io(s) if s.contains("connection refused")), "{m}");
        let denied = E::Unauthenticated { path: "k".into(), source: src() };
        assert!(matches!(map_err(denied, "b", "k"), BackendError::Io(s) if s.contains("credentials")));
        let ni = E::NotImplemented { operation: "x".into(), implementer: "y".into() };
        assert!(matches!(map_err(ni, "b", "k"), BackendError::Invalid(_)));
    }

    #[test]
    fn keys_a_path_cannot_hold_are_refused() {
        for ok in ["a", "a/b/c", "sp ace+%41é", "x.y/..z"] {
            assert_eq!(raw(&key_path(ok).unwrap()), ok);
        }
        for bad in ["a//b", "/abs", "dir/", "a/./b", "../x", "tab\there"] {
            assert!(matches!(key_path(bad), Err(BackendError::Invalid(m)) if m.contains("S3 backend")), "{bad}");
        }
    }

    #[test]
    fn listing_directories() {
        assert_eq!(list_dir("photos/ca").map(|p| p.to_string()), Some("photos".into()));
        assert_eq!(list_dir("a/b/").map(|p| p.to_string()), Some("a/b".into()));
        assert_eq!(list_dir("flat"), None);
        assert_eq!(list_dir("a//b/c"), None);
        assert_eq!(list_dir(""), None);
    }
}
