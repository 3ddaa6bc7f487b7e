//! The home node's side of caching permissions ([`Grants`]): which peers may serve which of its
//! objects from their own caches, until when. A write takes the live grants of its key
//! ([`Grants::take`]) and revokes each before it is acknowledged; a peer that does not answer is
//! waited out until its grant expires. Bounded: past [`MAX_GRANTS`] keys, new grants are refused
//! (the peer then serves that object through the home node, uncached).

use std::collections::HashMap;
use std::time::{Duration, Instant};

use parking_lot::Mutex;

/// Keys with live grants, at most.
pub const MAX_GRANTS: usize = 1 << 20;

/// Live grants by cache key (see the module doc).
#[derive(Default)]
pub struct Grants {
    by_key: Mutex<HashMap<String, Vec<(String, Instant)>>>,
}

impl Grants {
    /// Grants `holder` a permission on `ck` for `dur` from now; `false` if the table is full.
    pub fn grant(&self, ck: &str, holder: &str, dur: Duration) -> bool {
        let now = Instant::now();
        let mut m = self.by_key.lock();
        if m.len() >= MAX_GRANTS && !m.contains_key(ck) {
            m.retain(|_, v| {
                v.retain(|(_, t)| *t > now);
                !v.is_empty()
            });
            if m.len() >= MAX_GRANTS {
                return false;
            }
        }
        let v = m.entry(ck.to_string()).or_default();
        v.retain(|(h, t)| h != holder && *t > now);
        v.push((holder.to_string(), now + dur));
        true
    }

    /// Takes the live grants of `ck` (they are to be revoked): `(holder, expiry)`.
    pub fn take(&self, ck: &str) -> Vec<(String, Instant)> {
        let now = Instant::now();
        let v = self.by_key.lock().remove(ck).unwrap_or_default();
        v.into_iter().filter(|(_, t)| *t > now).collect()
    }

    /// Forgets every grant (this node is no longer home of what it granted: the holders drop
    /// their permissions at the membership change themselves).
    pub fn clear(&self) {
        self.by_key.lock().clear();
    }

    /// Keys with grants.
    pub fn len(&self) -> usize {
        self.by_key.lock().len()
    }

    /// Whether no key has a grant.
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn take_returns_live_grants_once() {
        let g = Grants::default();
        assert!(g.grant("b/k", "n2", Duration::from_secs(10)));
        assert!(g.grant("b/k", "n3", Duration::from_secs(10)));
        assert!(g.grant("b/k", "n2", Duration::from_secs(10)), "a renewal replaces the grant");
        assert!(g.grant("b/x", "n2", Duration::ZERO));
        let mut t: Vec<String> = g.take("b/k").into_iter().map(|(h, _)| h).collect();
        t.sort();
        assert_eq!(t, ["n2", "n3"]);
        assert!(g.take("b/k").is_empty());
        assert!(g.take("b/x").is_empty(), "an expired grant needs no revocation");
    }
}
