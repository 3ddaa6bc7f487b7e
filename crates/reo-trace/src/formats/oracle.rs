//! libCacheSim oracleGeneral binary traces: little-endian 24-byte records
//! `u32 timestamp, u64 obj_id, u32 obj_size, i64 next_access_vtime` (−1 = never again).
//!
//! Each record is a whole-object Get: key = `obj_id`, offset 0, `len` = `obj_size` = size; the
//! timestamp is seconds, made relative to the first record; `next_access_vtime` is ignored on
//! read (the writer computes it, see [`crate::write_oracle`]).

use super::fields::Clock;
use crate::request::{Op, Request};

/// Bytes per record.
pub const RECORD: usize = 24;

#[derive(Default)]
pub(crate) struct OracleParser {
    clock: Clock,
}

impl OracleParser {
    pub fn parse(&mut self, rec: &[u8; RECORD]) -> Request {
        let ts = u32::from_le_bytes(rec[0..4].try_into().expect("4 bytes"));
        let id = u64::from_le_bytes(rec[4..12].try_into().expect("8 bytes"));
        let size = u64::from(u32::from_le_bytes(rec[12..16].try_into().expect("4 bytes")));
        let time_ns = self.clock.ns(u64::from(ts), 1_000_000_000);
        Request { time_ns, op: Op::Get, key: id, offset: 0, len: size, obj_size: size, fingerprint: None }
    }
}

/// Encodes one record.
pub fn encode(ts_s: u32, id: u64, size: u32, next_access: i64) -> [u8; RECORD] {
    let mut rec = [0u8; RECORD];
    rec[0..4].copy_from_slice(&ts_s.to_le_bytes());
    rec[4..12].copy_from_slice(&id.to_le_bytes());
    rec[12..16].copy_from_slice(&size.to_le_bytes());
    rec[16..24].copy_from_slice(&next_access.to_le_bytes());
    rec
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn record_roundtrip() {
        let mut p = OracleParser::default();
        let a = p.parse(&encode(10, 99, 4096, -1));
        assert_eq!(
            a,
            Request { time_ns: 0, op: Op::Get, key: 99, offset: 0, len: 4096, obj_size: 4096, fingerprint: None }
        );
        let b = p.parse(&encode(13, 1, 7, 5));
        assert_eq!((b.time_ns, b.key, b.len), (3_000_000_000, 1, 7));
    }
}
