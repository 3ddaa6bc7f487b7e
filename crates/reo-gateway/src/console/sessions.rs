//! [`Sessions`]: the web console's sign-ins. A browser cannot sign SigV4, so a user proves a key
//! pair once and gets a session: a random token in an `HttpOnly`, `SameSite=Strict` cookie, with
//! a second random token (CSRF) that every action must carry in a header, which a page of another
//! site can neither read nor send. Sessions expire; their number is bounded (the oldest goes);
//! sign-in failures are limited per client address, so the form is no faster an oracle for
//! secrets than signed requests are.

use std::collections::HashMap;
use std::io::Read;
use std::net::IpAddr;
use std::time::{Duration, Instant};

use parking_lot::Mutex;

/// How long a session lasts after sign-in.
pub const SESSION_TTL: Duration = Duration::from_secs(3600);
/// Sessions kept at most (the oldest is dropped beyond).
const MAX_SESSIONS: usize = 1024;
/// Failed sign-ins a client address may make per [`FAILURE_WINDOW`].
const MAX_FAILURES: u32 = 10;
const FAILURE_WINDOW: Duration = Duration::from_secs(60);
/// Client addresses whose failures are remembered at most.
const MAX_TRACKED: usize = 4096;

/// A signed-in user.
#[derive(Debug, Clone)]
pub struct Session {
    /// The access key the user signed in with (its user and role are looked up per request, so
    /// a removed user's session stops working at once).
    pub access_key: String,
    /// The token actions must carry (`X-Reo-Csrf`).
    pub csrf: String,
    created: Instant,
}

#[derive(Default)]
struct Inner {
    by_token: HashMap<String, Session>,
    failures: HashMap<IpAddr, (Instant, u32)>,
}

/// See the module doc.
#[derive(Default)]
pub struct Sessions(Mutex<Inner>);

/// 32 random bytes as hex.
fn token() -> std::io::Result<String> {
    let mut b = [0u8; 32];
    std::fs::File::open("/dev/urandom")?.read_exact(&mut b)?;
    Ok(crate::hex::hex(&b))
}

impl Sessions {
    /// A new session for `access_key`: `(cookie token, session)`.
    pub fn create(&self, access_key: &str) -> std::io::Result<(String, Session)> {
        let t = token()?;
        let s = Session { access_key: access_key.to_string(), csrf: token()?, created: Instant::now() };
        let mut g = self.0.lock();
        g.by_token.retain(|_, s| s.created.elapsed() < SESSION_TTL);
        if g.by_token.len() >= MAX_SESSIONS {
            if let Some(oldest) = g.by_token.iter().min_by_key(|(_, s)| s.created).map(|(k, _)| k.clone()) {
                g.by_token.remove(&oldest);
            }
        }
        g.by_token.insert(t.clone(), s.clone());
        Ok((t, s))
    }

    /// The live session of cookie token `t`.
    pub fn get(&self, t: &str) -> Option<Session> {
        let mut g = self.0.lock();
        match g.by_token.get(t) {
            Some(s) if s.created.elapsed() < SESSION_TTL => Some(s.clone()),
            Some(_) => {
                g.by_token.remove(t);
                None
            }
            None => None,
        }
    }

    /// Ends the session of cookie token `t`.
    pub fn end(&self, t: &str) {
        self.0.lock().by_token.remove(t);
    }

    /// Whether `ip` may try to sign in now (under its failure limit).
    pub fn may_try(&self, ip: Option<IpAddr>) -> bool {
        let Some(ip) = ip else { return true };
        let g = self.0.lock();
        !matches!(g.failures.get(&ip), Some((since, n)) if since.elapsed() < FAILURE_WINDOW && *n >= MAX_FAILURES)
    }

    /// A failed sign-in from `ip`.
    pub fn failed(&self, ip: Option<IpAddr>) {
        let Some(ip) = ip else { return };
        let mut g = self.0.lock();
        if g.failures.len() >= MAX_TRACKED {
            g.failures.retain(|_, (since, _)| since.elapsed() < FAILURE_WINDOW);
            if g.failures.len() >= MAX_TRACKED {
                // Many addresses failing at once: forget the oldest record to make room.
                if let Some(oldest) = g.failures.iter().min_by_key(|(_, (since, _))| *since).map(|(k, _)| *k) {
                    g.failures.remove(&oldest);
                }
            }
        }
        let e = g.failures.entry(ip).or_insert((Instant::now(), 0));
        if e.0.elapsed() >= FAILURE_WINDOW {
            *e = (Instant::now(), 0);
        }
        e.1 += 1;
    }
}

/// Whether two tokens are equal, in time independent of where they differ.
pub fn same_token(a: &str, b: &str) -> bool {
    a.len() == b.len() && a.bytes().zip(b.bytes()).fold(0u8, |acc, (x, y)| acc | (x ^ y)) == 0
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn sessions_are_found_by_token_and_end() {
        let s = Sessions::default();
        let (t, sess) = s.create("AK").unwrap();
        assert_eq!(t.len(), 64);
        assert_ne!(t, sess.csrf);
        assert_eq!(s.get(&t).unwrap().access_key, "AK");
        assert!(s.get("not-a-token").is_none());
        s.end(&t);
        assert!(s.get(&t).is_none());
    }

    #[test]
    fn sessions_are_bounded() {
        let s = Sessions::default();
        let (first, _) = s.create("AK").unwrap();
        for _ in 0..MAX_SESSIONS {
            s.create("AK").unwrap();
        }
        assert!(s.get(&first).is_none(), "the oldest session was kept beyond the bound");
        assert_eq!(s.0.lock().by_token.len(), MAX_SESSIONS);
    }

    #[test]
    fn failures_are_limited_per_address() {
        let s = Sessions::default();
        let a: IpAddr = "10.0.0.1".parse().unwrap();
        let b: IpAddr = "10.0.0.2".parse().unwrap();
        for _ in 0..MAX_FAILURES {
            assert!(s.may_try(Some(a)));
            s.failed(Some(a));
        }
        assert!(!s.may_try(Some(a)));
        assert!(s.may_try(Some(b)), "another address is not held back");
        assert!(same_token("abc", "abc") && !same_token("abc", "abd") && !same_token("abc", "ab"));
    }
}
