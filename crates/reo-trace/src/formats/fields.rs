//! What the format parsers share: the [`LineParser`] trait and its [`LineError`], the field
//! helpers (numbers, keys, digests, ops) and the relative [`Clock`].

use crate::expand::Expansion;
use crate::hash::fnv1a64;
use crate::request::Op;

/// Why a line did not parse.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) enum LineError {
    /// This line is bad; the reader may skip it.
    Bad(String),
    /// The trace cannot be read at all (e.g. its header lacks a required column).
    Fatal(String),
}

/// A text format's parser; it sees every line (without the line terminator) in order.
pub(crate) trait LineParser {
    /// The requests the line stands for, or `None` for a header, comment or blank line.
    fn parse_line(&mut self, line: &str) -> Result<Option<Expansion>, LineError>;
}

/// A decimal `u64` field.
pub(crate) fn num(field: &str, what: &str) -> Result<u64, LineError> {
    field.trim().parse().map_err(|_| LineError::Bad(format!("bad {what} {field:?}")))
}

/// A key: a decimal `u64`, `0x`-prefixed hex, or any other string hashed with FNV-1a 64.
pub(crate) fn key(field: &str) -> Result<u64, LineError> {
    let f = field.trim();
    if f.is_empty() {
        return Err(LineError::Bad("empty key".into()));
    }
    if let Ok(k) = f.parse::<u64>() {
        return Ok(k);
    }
    if let Some(hex) = f.strip_prefix("0x").or_else(|| f.strip_prefix("0X")) {
        if let Ok(k) = u64::from_str_radix(hex, 16) {
            return Ok(k);
        }
    }
    Ok(fnv1a64(f.as_bytes()))
}

/// The first 8 bytes (16 hex digits, big-endian) of a hex digest such as an MD5.
pub(crate) fn digest_prefix(field: &str) -> Result<u64, LineError> {
    let f = field.trim();
    let bad = || LineError::Bad(format!("bad fingerprint {field:?}"));
    if f.len() < 16 || !f.bytes().all(|b| b.is_ascii_hexdigit()) {
        return Err(bad());
    }
    u64::from_str_radix(&f[..16], 16).map_err(|_| bad())
}

/// An op name, case-insensitive: get/g/r/read, put/p/w/write/set, delete/d/del.
pub(crate) fn op(field: &str) -> Result<Op, LineError> {
    match field.trim().to_ascii_lowercase().as_str() {
        "get" | "g" | "r" | "read" => Ok(Op::Get),
        "put" | "p" | "w" | "write" | "set" => Ok(Op::Put),
        "delete" | "d" | "del" => Ok(Op::Delete),
        _ => Err(LineError::Bad(format!("bad op {:?}", field.trim()))),
    }
}

/// Trace timestamps made relative to the first one (earlier ones clamp to 0).
#[derive(Debug, Default)]
pub(crate) struct Clock {
    t0: Option<u64>,
}

impl Clock {
    /// `ts` minus the first timestamp seen, times `ns_per_unit`.
    pub fn ns(&mut self, ts: u64, ns_per_unit: u64) -> u64 {
        let t0 = *self.t0.get_or_insert(ts);
        ts.saturating_sub(t0).saturating_mul(ns_per_unit)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn keys_numeric_hex_or_hashed() {
        assert_eq!(key("42").unwrap(), 42);
        assert_eq!(key(" 0x1f ").unwrap(), 31);
        assert_eq!(key("user:7").unwrap(), fnv1a64(b"user:7"));
        assert!(key("").is_err());
    }

    #[test]
    fn digest_prefix_takes_first_eight_bytes() {
        assert_eq!(digest_prefix("0123456789abcdef0011223344556677").unwrap(), 0x0123_4567_89ab_cdef);
        assert!(digest_prefix("xyz").is_err());
    }

    #[test]
    fn ops_accept_aliases() {
        assert_eq!(op("R").unwrap(), Op::Get);
        assert_eq!(op("write").unwrap(), Op::Put);
        assert_eq!(op("del").unwrap(), Op::Delete);
        assert_eq!(op("xx").unwrap_err(), LineError::Bad("bad op \"xx\"".into()));
    }

    #[test]
    fn clock_is_relative_to_first() {
        let mut c = Clock::default();
        assert_eq!(c.ns(100, 10), 0);
        assert_eq!(c.ns(105, 10), 50);
        assert_eq!(c.ns(90, 10), 0);
    }
}
