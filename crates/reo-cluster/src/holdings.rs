//! A node's side of caching permissions ([`Holdings`]): for which keys its cached copy may be
//! served, until when. A permission is counted from when the request that obtained it was *sent*,
//! so it ends no later than the grant the home node counts from when it answered: when the home
//! node's grant has expired, this node has stopped serving. A copy of a key this node is home of
//! is valid for as long as it stays home (no expiry), within one membership.
//!
//! A revocation can overtake the answer that carries the permission it revokes (they travel on
//! different connections): it leaves a mark, and a permission obtained by a request sent before
//! the mark is not installed.

use std::collections::HashMap;
use std::time::{Duration, Instant};

use parking_lot::Mutex;

/// Keys with a permission, at most (past it, the expired ones go; then new ones are refused and
/// those objects are served through their home node).
pub const MAX_HOLDINGS: usize = 1 << 21;

#[derive(Debug, Clone)]
struct Holding {
    view: String,
    until: Option<Instant>,
}

/// Permissions held (see the module doc).
pub struct Holdings {
    permission: Duration,
    held: Mutex<HashMap<String, Holding>>,
    revoked: Mutex<HashMap<String, Instant>>,
}

impl Holdings {
    /// Permissions that last `permission`.
    pub fn new(permission: Duration) -> Holdings {
        Holdings { permission, held: Mutex::default(), revoked: Mutex::default() }
    }

    /// Installs a permission on `ck` obtained by a request sent at `sent`, in membership `view`
    /// (`home`: this node is the key's home; no expiry). Not installed if revoked since `sent`.
    pub fn install(&self, ck: &str, sent: Instant, view: &str, home: bool) {
        if self.revoked.lock().get(ck).is_some_and(|&t| t >= sent) {
            return;
        }
        let mut m = self.held.lock();
        if m.len() >= MAX_HOLDINGS && !m.contains_key(ck) {
            let now = Instant::now();
            m.retain(|_, h| h.until.is_none_or(|u| u > now));
            if m.len() >= MAX_HOLDINGS {
                return;
            }
        }
        let until = (!home).then(|| sent + self.permission);
        m.insert(ck.to_string(), Holding { view: view.to_string(), until });
    }

    /// Whether the cached copy of `ck` may be served in membership `view` by a node that is
    /// (`home`) or is not the key's home: a home node's mark serves only its home node, a
    /// permission only until it expires.
    pub fn valid(&self, ck: &str, view: &str, home: bool) -> bool {
        self.held.lock().get(ck).is_some_and(|h| {
            h.view == view
                && match h.until {
                    None => home,
                    Some(u) => Instant::now() < u,
                }
        })
    }

    /// Revokes the permission on `ck` (and any obtained by a request sent before now).
    pub fn revoke(&self, ck: &str) {
        let now = Instant::now();
        self.held.lock().remove(ck);
        let mut r = self.revoked.lock();
        // Marks older than a permission's lifetime protect nothing: any answer that could carry
        // such a permission has expired.
        if r.len() > 4096 {
            let p = self.permission;
            r.retain(|_, t| now.duration_since(*t) < p);
        }
        r.insert(ck.to_string(), now);
    }

    /// Keys with a permission.
    pub fn len(&self) -> usize {
        self.held.lock().len()
    }

    /// Whether no key has a permission.
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn permissions_expire_follow_the_view_and_lose_to_a_revocation() {
        let h = Holdings::new(Duration::from_millis(50));
        let sent = Instant::now();
        h.install("b/k", sent, "v1", false);
        assert!(h.valid("b/k", "v1", false));
        assert!(!h.valid("b/k", "v2", false), "a membership change ends every permission");
        std::thread::sleep(Duration::from_millis(60));
        assert!(!h.valid("b/k", "v1", false), "expired");
        h.install("b/home", Instant::now(), "v1", true);
        assert!(h.valid("b/home", "v1", true));
        assert!(!h.valid("b/home", "v1", false), "a home node's mark is no permission elsewhere");
        // A revocation that arrives before the answer it revokes.
        let sent = Instant::now();
        h.revoke("b/k");
        h.install("b/k", sent, "v1", false);
        assert!(!h.valid("b/k", "v1", false), "a permission sent before the revocation must not be installed");
        h.install("b/k", Instant::now() + Duration::from_millis(1), "v1", false);
        assert!(h.valid("b/k", "v1", false), "one obtained after it is");
    }
}
