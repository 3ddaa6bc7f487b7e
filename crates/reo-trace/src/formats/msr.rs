//! MSR Cambridge block traces (SNIA IOTTA): CSV lines
//! `Timestamp,Hostname,DiskNumber,Type,Offset,Size,ResponseTime`, no header.
//!
//! `Timestamp` is a Windows filetime (100 ns ticks), made relative to the first line.
//! `Type` `Read` → [`Op::Get`], `Write` → [`Op::Put`]. The byte range `[Offset, Offset + Size)`
//! is cut into blocks, one request per block; the volume is
//! `mix64(fnv1a64(Hostname) ^ DiskNumber)`. `ResponseTime` is ignored; a zero-size line yields
//! no request.

use super::fields::{num, Clock, LineError, LineParser};
use crate::expand::Expansion;
use crate::hash::{fnv1a64, mix64};
use crate::request::Op;

pub(crate) struct MsrParser {
    block_size: u64,
    clock: Clock,
}

impl MsrParser {
    pub fn new(block_size: u64) -> Self {
        MsrParser { block_size, clock: Clock::default() }
    }
}

impl LineParser for MsrParser {
    fn parse_line(&mut self, line: &str) -> Result<Option<Expansion>, LineError> {
        let line = line.trim();
        if line.is_empty() {
            return Ok(None);
        }
        let f: Vec<&str> = line.split(',').collect();
        if f.len() < 6 {
            return Err(LineError::Bad(format!("expected 7 fields, got {}", f.len())));
        }
        let ts = num(f[0], "timestamp")?;
        let disk = num(f[2], "disk number")?;
        let op = match f[3].trim().to_ascii_lowercase().as_str() {
            "read" | "r" => Op::Get,
            "write" | "w" => Op::Put,
            other => return Err(LineError::Bad(format!("bad type {other:?}"))),
        };
        let offset = num(f[4], "offset")?;
        let size = num(f[5], "size")?;
        offset.checked_add(size).ok_or_else(|| LineError::Bad("offset + size overflows".into()))?;
        let volume = mix64(fnv1a64(f[1].trim().as_bytes()) ^ disk);
        let time_ns = self.clock.ns(ts, 100);
        Ok(Some(Expansion::blocks(time_ns, op, volume, offset, size, self.block_size, None)))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::hash::block_key;

    #[test]
    fn read_and_write_lines_become_blocks() {
        let mut p = MsrParser::new(4096);
        let a: Vec<_> = p.parse_line("128166372003061629,hm,1,Read,8192,8192,1331").unwrap().unwrap().collect();
        let vol = mix64(fnv1a64(b"hm") ^ 1);
        assert_eq!(a.len(), 2);
        assert_eq!((a[0].key, a[1].key), (block_key(vol, 2), block_key(vol, 3)));
        assert_eq!((a[0].op, a[0].time_ns, a[0].fingerprint), (Op::Get, 0, None));
        let b: Vec<_> = p.parse_line("128166372003061639,hm,1,Write,0,512,10").unwrap().unwrap().collect();
        assert_eq!((b.len(), b[0].op, b[0].time_ns, b[0].key), (1, Op::Put, 1000, block_key(vol, 0)));
        let other_disk: Vec<_> = p.parse_line("128166372003061639,hm,2,Write,0,512,10").unwrap().unwrap().collect();
        assert_ne!(other_disk[0].key, b[0].key);
    }

    #[test]
    fn bad_type_and_short_lines() {
        let mut p = MsrParser::new(4096);
        assert_eq!(p.parse_line("1,hm,1,Trim,0,512,1").unwrap_err(), LineError::Bad("bad type \"trim\"".into()));
        assert!(p.parse_line("1,hm,1").is_err());
        assert!(p.parse_line("1,hm,x,Read,0,512,1").is_err());
    }
}
