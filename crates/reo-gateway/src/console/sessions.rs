//! [`Sessions`]: the web console's sign-ins. A browser cannot sign SigV4, so a user proves a key
//! pair once and gets a session: a random token in an `HttpOnly`, `SameSite=Strict` cookie, with
//! a second random token (CSRF) that every action must carry in a header, which a page of another
//! site can neither read nor send. A session is bound to the secret it was opened with: rotating
//! the key ends it. Sessions expire; their number is bounded (the oldest goes). Sign-in attempts
//! are counted before the secret is checked (concurrent guesses cannot all slip under the limit)
//! and limited per client network (an IPv6 /64 counts as one address) and in total, so the form
//! is no faster an oracle for secrets than signed requests are.

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
/// Failed sign-ins from all addresses together per [`FAILURE_WINDOW`] (many addresses guessing).
const MAX_ALL_FAILURES: u32 = 100;
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
    /// The secret the session was opened with: once the user's secret differs (rotated), the
    /// session is over.
    secret: String,
    created: Instant,
}

impl Session {
    /// Whether `secret` (the user's current one) is the one this session was opened with.
    pub fn opened_with(&self, secret: &str) -> bool {
        same_token(&self.secret, secret)
    }
}

#[derive(Default)]
struct Inner {
    by_token: HashMap<String, Session>,
    /// Attempts by client network in the current window (unknown peers share one entry).
    failures: HashMap<Option<IpAddr>, (Instant, u32)>,
    /// Attempts from everyone in the current window.
    all: Option<(Instant, u32)>,
}

/// The network a client address counts for: an IPv4 address, or an IPv6 /64 (one host's share).
fn network(ip: Option<IpAddr>) -> Option<IpAddr> {
    match ip {
        Some(IpAddr::V6(v6)) if v6.to_ipv4_mapped().is_none() => {
            let mut o = v6.octets();
            o[8..].fill(0);
            Some(IpAddr::V6(o.into()))
        }
        Some(IpAddr::V6(v6)) => v6.to_ipv4_mapped().map(IpAddr::V4),
        other => other,
    }
}

/// Counts one attempt in `w` (a window of [`FAILURE_WINDOW`]); false if it is over `max`.
fn count(w: &mut (Instant, u32), max: u32) -> bool {
    if w.0.elapsed() >= FAILURE_WINDOW {
        *w = (Instant::now(), 0);
    }
    if w.1 >= max {
        return false;
    }
    w.1 += 1;
    true
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
    pub fn create(&self, access_key: &str, secret: &str) -> std::io::Result<(String, Session)> {
        let t = token()?;
        let s = Session {
            access_key: access_key.to_string(),
            csrf: token()?,
            secret: secret.to_string(),
            created: Instant::now(),
        };
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

    /// Counts a sign-in attempt from `ip` before its secret is checked; false (refuse it) when
    /// its network or everyone is over the limit. [`Sessions::succeeded`] takes a successful
    /// attempt back.
    pub fn attempt(&self, ip: Option<IpAddr>) -> bool {
        let key = network(ip);
        let mut g = self.0.lock();
        if g.failures.len() >= MAX_TRACKED && !g.failures.contains_key(&key) {
            g.failures.retain(|_, (since, _)| since.elapsed() < FAILURE_WINDOW);
            if g.failures.len() >= MAX_TRACKED {
                // Many networks failing at once: forget the oldest record to make room.
                if let Some(oldest) = g.failures.iter().min_by_key(|(_, (since, _))| *since).map(|(k, _)| *k) {
                    g.failures.remove(&oldest);
                }
            }
        }
        let all = g.all.get_or_insert((Instant::now(), 0));
        if all.0.elapsed() < FAILURE_WINDOW && all.1 >= MAX_ALL_FAILURES {
            return false;
        }
        let mine = g.failures.entry(key).or_insert((Instant::now(), 0));
        if !count(mine, MAX_FAILURES) {
            return false;
        }
        count(g.all.as_mut().expect("set above"), MAX_ALL_FAILURES)
    }

    /// A counted attempt from `ip` succeeded: it is not a failure.
    pub fn succeeded(&self, ip: Option<IpAddr>) {
        let key = network(ip);
        let mut g = self.0.lock();
        if let Some(w) = g.failures.get_mut(&key) {
            w.1 = w.1.saturating_sub(1);
        }
        if let Some(w) = g.all.as_mut() {
            w.1 = w.1.saturating_sub(1);
        }
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
        let (t, sess) = s.create("AK", "SK").unwrap();
        assert!(sess.opened_with("SK") && !sess.opened_with("rotated"));
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
        let (first, _) = s.create("AK", "SK").unwrap();
        for _ in 0..MAX_SESSIONS {
            s.create("AK", "SK").unwrap();
        }
        assert!(s.get(&first).is_none(), "the oldest session was kept beyond the bound");
        assert_eq!(s.0.lock().by_token.len(), MAX_SESSIONS);
    }

    #[test]
    fn attempts_are_limited_per_network_and_in_total() {
        let s = Sessions::default();
        let a: IpAddr = "10.0.0.1".parse().unwrap();
        let b: IpAddr = "10.0.0.2".parse().unwrap();
        for _ in 0..MAX_FAILURES {
            assert!(s.attempt(Some(a)));
        }
        assert!(!s.attempt(Some(a)), "counted before the check: an eleventh concurrent guess is refused");
        assert!(s.attempt(Some(b)), "another address is not held back");
        s.succeeded(Some(b));
        // One IPv6 /64 is one client; unknown peers share one budget.
        let v6 = |x: &str| Some(x.parse::<IpAddr>().unwrap());
        for i in 0..MAX_FAILURES {
            assert!(s.attempt(v6(&format!("2001:db8::{:x}", i + 1))));
        }
        assert!(!s.attempt(v6("2001:db8::ffff")));
        assert!(s.attempt(v6("2001:db8:0:1::1")), "another /64");
        for _ in 0..MAX_FAILURES {
            assert!(s.attempt(None));
        }
        assert!(!s.attempt(None));
        // Everyone together.
        let s = Sessions::default();
        for i in 0..MAX_ALL_FAILURES {
            assert!(s.attempt(Some(IpAddr::from([10, 1, (i / 256) as u8, i as u8]))));
        }
        assert!(!s.attempt(Some("10.9.9.9".parse().unwrap())), "the total limit");
        assert!(same_token("abc", "abc") && !same_token("abc", "abd") && !same_token("abc", "ab"));
    }
}
