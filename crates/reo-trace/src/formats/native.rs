//! Reo's native CSV trace, one request per line:
//!
//! ```text
//! time_ns,op,key,offset,size[,obj_size][,fingerprint]
//! ```
//!
//! - `time_ns`: arrival time in ns (u64), written as is (not made relative).
//! - `op`: `get|put|delete` (case-insensitive; also `g/r/read`, `p/w/write/set`, `d/del`).
//! - `key`: a decimal u64, `0x` hex u64, or any other string (hashed with FNV-1a 64; no commas).
//! - `offset`, `size`: the byte range the request touches (`size` becomes `Request::len`).
//! - `obj_size`: the object's size; empty or absent means `offset + size`; smaller is an error.
//! - `fingerprint`: empty or absent means none; `0x`-prefixed hex, a decimal u64, or a hex digest
//!   of 16+ digits (its first 8 bytes).
//!
//! Fields are trimmed. Blank lines and lines starting with `#` are ignored; a first line whose
//! first field is `time_ns` is a header. Columns are positional (a header does not reorder them).

use super::fields::{key, num, op, LineError, LineParser};
use crate::expand::Expansion;
use crate::request::Request;

/// The native CSV header line the writer emits.
pub const HEADER: &str = "time_ns,op,key,offset,size,obj_size,fingerprint";

#[derive(Default)]
pub(crate) struct NativeParser {
    seen_data: bool,
}

/// A fingerprint field (see the module doc).
pub(crate) fn fingerprint(field: &str) -> Result<Option<u64>, LineError> {
    let f = field.trim();
    if f.is_empty() {
        return Ok(None);
    }
    let bad = || LineError::Bad(format!("bad fingerprint {f:?}"));
    if let Some(hex) = f.strip_prefix("0x").or_else(|| f.strip_prefix("0X")) {
        return u64::from_str_radix(hex, 16).map(Some).map_err(|_| bad());
    }
    if let Ok(v) = f.parse::<u64>() {
        return Ok(Some(v));
    }
    super::fields::digest_prefix(f).map(Some).map_err(|_| bad())
}

impl LineParser for NativeParser {
    fn parse_line(&mut self, line: &str) -> Result<Option<Expansion>, LineError> {
        let line = line.trim();
        if line.is_empty() || line.starts_with('#') {
            return Ok(None);
        }
        let first_data = !self.seen_data;
        self.seen_data = true;
        let f: Vec<&str> = line.split(',').collect();
        if first_data && f[0].trim().eq_ignore_ascii_case("time_ns") {
            return Ok(None);
        }
        if !(5..=7).contains(&f.len()) {
            return Err(LineError::Bad(format!("expected 5 to 7 fields, got {}", f.len())));
        }
        let offset = num(f[3], "offset")?;
        let len = num(f[4], "size")?;
        let end = offset.checked_add(len).ok_or_else(|| LineError::Bad("offset + size overflows".into()))?;
        let obj_size = match f.get(5).map(|s| s.trim()) {
            None | Some("") => end,
            Some(s) => num(s, "obj_size")?,
        };
        if obj_size < end {
            return Err(LineError::Bad(format!("obj_size {obj_size} < offset + size {end}")));
        }
        Ok(Some(Expansion::one(Request {
            time_ns: num(f[0], "time_ns")?,
            op: op(f[1])?,
            key: key(f[2])?,
            offset,
            len,
            obj_size,
            fingerprint: match f.get(6) {
                Some(s) => fingerprint(s)?,
                None => None,
            },
        })))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::request::Op;

    fn one(p: &mut NativeParser, line: &str) -> Result<Option<Request>, LineError> {
        p.parse_line(line).map(|e| e.map(|mut e| e.next().unwrap()))
    }

    #[test]
    fn full_and_minimal_lines() {
        let mut p = NativeParser::default();
        assert_eq!(one(&mut p, HEADER).unwrap(), None);
        let r = one(&mut p, "10,put,7,0,100,100,0xab").unwrap().unwrap();
        assert_eq!(
            r,
            Request { time_ns: 10, op: Op::Put, key: 7, offset: 0, len: 100, obj_size: 100, fingerprint: Some(0xab) }
        );
        let r = one(&mut p, " 11 , GET , obj-a , 50 , 10 ").unwrap().unwrap();
        assert_eq!((r.op, r.key, r.obj_size, r.fingerprint), (Op::Get, crate::hash::fnv1a64(b"obj-a"), 60, None));
        let r = one(&mut p, "12,r,1,0,10,,").unwrap().unwrap();
        assert_eq!((r.obj_size, r.fingerprint), (10, None));
        assert_eq!(one(&mut p, "# comment").unwrap(), None);
        assert_eq!(one(&mut p, "").unwrap(), None);
    }

    #[test]
    fn header_only_counts_as_first_line() {
        let mut p = NativeParser::default();
        one(&mut p, "0,get,1,0,1").unwrap();
        assert!(one(&mut p, HEADER).is_err());
    }

    #[test]
    fn bad_lines_say_why() {
        let mut p = NativeParser::default();
        let bad = |p: &mut NativeParser, l: &str| match one(p, l) {
            Err(LineError::Bad(m)) => m,
            other => panic!("{l}: {other:?}"),
        };
        assert_eq!(bad(&mut p, "0,xx,1,0,1"), "bad op \"xx\"");
        assert_eq!(bad(&mut p, "0,get,1"), "expected 5 to 7 fields, got 3");
        assert_eq!(bad(&mut p, "t,get,1,0,1"), "bad time_ns \"t\"");
        assert_eq!(bad(&mut p, "0,get,1,10,10,5"), "obj_size 5 < offset + size 20");
        assert_eq!(bad(&mut p, "0,get,1,0,1,1,zz"), "bad fingerprint \"zz\"");
    }
}
