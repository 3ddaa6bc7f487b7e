//! Saving traces: [`write_native`] (native CSV with header) and [`write_oracle`]
//! (libCacheSim oracleGeneral), and [`save`], which picks format and compression by the output
//! file name (`.oracle`/`.oracleGeneral`/`.bin` before an optional `.gz`/`.zst` → oracleGeneral,
//! anything else native CSV).

use crate::error::TraceError;
use crate::format::Format;
use crate::formats::native::HEADER;
use crate::formats::oracle::encode;
use crate::output;
use crate::request::{Op, Request};
use std::collections::HashMap;
use std::io::{self, Write};
use std::path::Path;

/// Writes `reqs` as native CSV (header first); returns the number of requests written.
/// Fingerprints are written as `0x` + 16 hex digits.
pub fn write_native<W: Write>(mut out: W, reqs: impl IntoIterator<Item = Request>) -> io::Result<u64> {
    writeln!(out, "{HEADER}")?;
    let mut n = 0;
    for r in reqs {
        let op = match r.op {
            Op::Get => "get",
            Op::Put => "put",
            Op::Delete => "delete",
        };
        write!(out, "{},{op},{},{},{},{},", r.time_ns, r.key, r.offset, r.len, r.obj_size)?;
        match r.fingerprint {
            Some(fp) => writeln!(out, "0x{fp:016x}")?,
            None => writeln!(out)?,
        }
        n += 1;
    }
    out.flush()?;
    Ok(n)
}

/// Writes `reqs` as oracleGeneral records; returns the number written. The format has no ops,
/// offsets or fingerprints: every request becomes an access of `obj_size` bytes (clamped to
/// `u32::MAX`) at `time_ns` rounded down to seconds. `next_access_vtime` (the index of the key's
/// next request, −1 if none) needs the future, so this holds the trace in memory (24 B per
/// request plus a map of keys) before writing.
pub fn write_oracle<W: Write>(mut out: W, reqs: impl IntoIterator<Item = Request>) -> io::Result<u64> {
    let reqs: Vec<(u32, u64, u32)> = reqs
        .into_iter()
        .map(|r| {
            let ts = u32::try_from(r.time_ns / 1_000_000_000).unwrap_or(u32::MAX);
            (ts, r.key, u32::try_from(r.obj_size).unwrap_or(u32::MAX))
        })
        .collect();
    let mut next = vec![-1i64; reqs.len()];
    let mut seen: HashMap<u64, usize> = HashMap::new();
    for (i, &(_, key, _)) in reqs.iter().enumerate().rev() {
        if let Some(j) = seen.insert(key, i) {
            next[i] = j as i64;
        }
    }
    for (&(ts, key, size), &nx) in reqs.iter().zip(&next) {
        out.write_all(&encode(ts, key, size, nx))?;
    }
    out.flush()?;
    Ok(reqs.len() as u64)
}

/// The format [`save`] writes for `path`.
pub fn format_for(path: &Path) -> Format {
    let name = path.file_name().and_then(|n| n.to_str()).unwrap_or("").to_ascii_lowercase();
    let stem = name.trim_end_matches(".gz").trim_end_matches(".zst").trim_end_matches(".zstd");
    if stem.ends_with(".oracle") || stem.ends_with(".oraclegeneral") || stem.ends_with(".bin") {
        Format::Oracle
    } else {
        Format::Native
    }
}

/// Writes `reqs` to `path` in the format and compression its name asks for (see the module
/// doc); returns the number of requests written.
pub fn save(path: &Path, reqs: impl IntoIterator<Item = Request>) -> Result<u64, TraceError> {
    let io = |e| TraceError::io(path, e);
    let mut out = output::create(path).map_err(io)?;
    let n = match format_for(path) {
        Format::Oracle => write_oracle(&mut out, reqs),
        _ => write_native(&mut out, reqs),
    }
    .map_err(io)?;
    out.finish().map_err(io)?;
    Ok(n)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::format::ReadOptions;
    use crate::reader::TraceReader;

    fn sample() -> Vec<Request> {
        let r = |t, op, key, fp| Request { time_ns: t, op, key, offset: 0, len: 100, obj_size: 100, fingerprint: fp };
        vec![
            r(0, Op::Put, 1, Some(0xdead_beef)),
            r(2_000_000_000, Op::Get, 2, None),
            r(3_000_000_000, Op::Get, 1, Some(0xdead_beef)),
            r(3_500_000_000, Op::Delete, 2, None),
        ]
    }

    fn read(bytes: Vec<u8>, format: Format) -> Vec<Request> {
        TraceReader::from_reader("mem", io::Cursor::new(bytes), format, &ReadOptions::default())
            .unwrap()
            .collect::<Result<_, _>>()
            .unwrap()
    }

    #[test]
    fn native_roundtrips_exactly() {
        let mut bytes = Vec::new();
        assert_eq!(write_native(&mut bytes, sample()).unwrap(), 4);
        assert!(bytes.starts_with(HEADER.as_bytes()));
        assert_eq!(read(bytes, Format::Native), sample());
    }

    #[test]
    fn oracle_keeps_keys_sizes_and_seconds_and_links_next_access() {
        let mut bytes = Vec::new();
        assert_eq!(write_oracle(&mut bytes, sample()).unwrap(), 4);
        assert_eq!(bytes.len(), 4 * 24);
        let next: Vec<i64> = bytes.chunks(24).map(|c| i64::from_le_bytes(c[16..24].try_into().unwrap())).collect();
        assert_eq!(next, vec![2, 3, -1, -1]);
        let back = read(bytes, Format::Oracle);
        let got: Vec<_> = back.iter().map(|r| (r.time_ns, r.key, r.obj_size)).collect();
        assert_eq!(got, vec![(0, 1, 100), (2_000_000_000, 2, 100), (3_000_000_000, 1, 100), (3_000_000_000, 2, 100)]);
    }

    #[test]
    fn save_picks_format_and_compression_by_name() {
        let tmp = tempfile::TempDir::new().unwrap();
        let dir = tmp.path();
        for name in ["t.csv", "t.csv.gz", "t.csv.zst", "t.oracle", "t.oracle.zst"] {
            let path = dir.join(name);
            assert_eq!(save(&path, sample()).unwrap(), 4);
            let format = format_for(&path);
            let back: Vec<_> =
                crate::reader::open(&path, format, &ReadOptions::default()).unwrap().collect::<Result<_, _>>().unwrap();
            assert_eq!(back.len(), 4, "{name}");
            if format == Format::Native {
                assert_eq!(back, sample(), "{name}");
            }
        }
    }
}
