//! FIU IODedup block traces (SNIA IOTTA, homes / web-vm / mail): whitespace-separated lines
//! `ts pid process lba nblocks R/W major minor md5`, no header.
//!
//! `ts` is taken as nanoseconds (units unverified), made relative to the first line; `lba` and
//! `nblocks` count 512-byte sectors. The byte range `[lba·512, (lba + nblocks)·512)` is cut
//! into blocks, one request per block; the volume is `major << 32 | minor`. `R` → Get, `W` →
//! Put. The fingerprint is the first 8 bytes of the MD5 (for a line covering several blocks,
//! each block's fingerprint is derived from it and the block's index, see `Expansion::blocks`).
//! Fields are taken from the end of the line, so a process name with spaces still parses.

use super::fields::{digest_prefix, num, Clock, LineError, LineParser};
use crate::expand::Expansion;
use crate::request::Op;

const SECTOR: u64 = 512;

pub(crate) struct FiuParser {
    block_size: u64,
    clock: Clock,
}

impl FiuParser {
    pub fn new(block_size: u64) -> Self {
        FiuParser { block_size, clock: Clock::default() }
    }
}

impl LineParser for FiuParser {
    fn parse_line(&mut self, line: &str) -> Result<Option<Expansion>, LineError> {
        let f: Vec<&str> = line.split_whitespace().collect();
        if f.is_empty() {
            return Ok(None);
        }
        let n = f.len();
        if n < 9 {
            return Err(LineError::Bad(format!("expected 9 fields, got {n}")));
        }
        let ts = num(f[0], "ts")?;
        let lba = num(f[n - 6], "lba")?;
        let nblocks = num(f[n - 5], "nblocks")?;
        let op = match f[n - 4] {
            "R" | "r" => Op::Get,
            "W" | "w" => Op::Put,
            other => return Err(LineError::Bad(format!("bad op {other:?}"))),
        };
        let major = num(f[n - 3], "major")?;
        let minor = num(f[n - 2], "minor")?;
        let fingerprint = digest_prefix(f[n - 1])?;
        let offset = lba.checked_mul(SECTOR).ok_or_else(|| LineError::Bad("lba overflows".into()))?;
        let len = nblocks.checked_mul(SECTOR).ok_or_else(|| LineError::Bad("nblocks overflows".into()))?;
        offset.checked_add(len).ok_or_else(|| LineError::Bad("lba + nblocks overflows".into()))?;
        let volume = (major << 32) | (minor & 0xffff_ffff);
        let time_ns = self.clock.ns(ts, 1);
        Ok(Some(Expansion::blocks(time_ns, op, volume, offset, len, self.block_size, Some(fingerprint))))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::hash::block_key;

    #[test]
    fn line_becomes_block_with_md5_prefix() {
        let mut p = FiuParser::new(4096);
        let line = "89966527188078 4620 syslogd 8 8 W 6 0 b2ed4d3ad3ab8f35a0a1e3d07af9ad0b";
        let r: Vec<_> = p.parse_line(line).unwrap().unwrap().collect();
        assert_eq!(r.len(), 1);
        assert_eq!((r[0].op, r[0].key, r[0].time_ns), (Op::Put, block_key(6 << 32, 1), 0));
        assert_eq!(r[0].fingerprint, Some(0xb2ed_4d3a_d3ab_8f35));
        let line = "89966527188178 4620 gnome terminal 0 16 R 6 0 b2ed4d3ad3ab8f35a0a1e3d07af9ad0b";
        let r: Vec<_> = p.parse_line(line).unwrap().unwrap().collect();
        assert_eq!((r.len(), r[0].op, r[0].time_ns), (2, Op::Get, 100));
    }

    #[test]
    fn bad_lines() {
        let mut p = FiuParser::new(4096);
        assert!(p.parse_line("1 2 p 8 8 X 6 0 b2ed4d3ad3ab8f35a0a1e3d07af9ad0b").is_err());
        assert!(p.parse_line("1 2 p 8 8 W 6 0 nothex").is_err());
        assert!(p.parse_line("1 2 p 8").is_err());
        assert_eq!(p.parse_line("   ").unwrap().map(|e| e.count()), None);
    }
}
