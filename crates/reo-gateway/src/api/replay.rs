//! [`ReplayGuard`]: admin mutations (`POST`/`DELETE` under `/_reo/admin/`) are accepted once per
//! signature. s3s accepts a signed request for as long as its date is within the clock window
//! ([`WINDOW`] either side of the server's time), so a captured `device/fail` or `users` request
//! could otherwise be sent again within that window; a signature seen in the last two windows
//! is refused. The set is bounded: past [`MAX_SEEN`] live signatures further mutations are
//! refused (503) until old ones age out, rather than forgotten early.

use std::collections::HashMap;
use std::time::{Duration, Instant};

use parking_lot::Mutex;

/// s3s's allowed skew between a request's date and the server's clock.
pub const WINDOW: Duration = Duration::from_secs(900);
/// Most signatures remembered at once.
pub const MAX_SEEN: usize = 100_000;

/// Why a mutation was refused.
#[derive(Debug, PartialEq, Eq)]
pub enum Replay {
    /// The signature was used already.
    Seen,
    /// Too many signatures to remember.
    Full,
}

/// The admin-mutation signatures seen recently (see the module doc).
#[derive(Default)]
pub struct ReplayGuard {
    seen: Mutex<HashMap<String, Instant>>,
}

impl ReplayGuard {
    /// Records `signature` at `now`; refuses one seen within `2 * WINDOW` (a request dated at
    /// the window's far end stays acceptable that long after one dated at its near end).
    pub fn admit(&self, signature: &str, now: Instant) -> Result<(), Replay> {
        let mut seen = self.seen.lock();
        if let Some(&at) = seen.get(signature) {
            if now.saturating_duration_since(at) < 2 * WINDOW {
                return Err(Replay::Seen);
            }
        }
        if seen.len() >= MAX_SEEN {
            seen.retain(|_, at| now.saturating_duration_since(*at) < 2 * WINDOW);
            if seen.len() >= MAX_SEEN {
                return Err(Replay::Full);
            }
        }
        seen.insert(signature.to_string(), now);
        Ok(())
    }
}

/// The signature of a header-signed SigV4 request (`Authorization: AWS4-HMAC-SHA256 ...,
/// Signature=<hex>`).
pub fn signature_of(authorization: &str) -> Option<&str> {
    let sig = authorization.rsplit_once("Signature=")?.1.trim();
    (sig.len() == 64 && sig.bytes().all(|b| b.is_ascii_hexdigit())).then_some(sig)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_signature_is_admitted_once_within_the_window() {
        let g = ReplayGuard::default();
        let t = Instant::now();
        assert_eq!(g.admit("a", t), Ok(()));
        assert_eq!(g.admit("a", t + WINDOW), Err(Replay::Seen));
        assert_eq!(g.admit("b", t + WINDOW), Ok(()));
        assert_eq!(g.admit("a", t + 2 * WINDOW), Ok(()), "older than any acceptable date");
    }

    #[test]
    fn signatures_are_found_in_the_header() {
        let sig = "0123456789abcdef".repeat(4);
        let h = format!(
            "AWS4-HMAC-SHA256 Credential=K/20261127/us-east-1/s3/aws4_request, SignedHeaders=host, Signature={sig}"
        );
        assert_eq!(signature_of(&h), Some(sig.as_str()));
        assert_eq!(signature_of("AWS4-HMAC-SHA256 Signature=short"), None);
    }
}
