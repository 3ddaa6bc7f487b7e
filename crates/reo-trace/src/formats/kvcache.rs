//! CacheLib kvcache traces: CSV with a header naming the columns, at least
//! `key,op,size,op_count,key_size`; later versions add columns (`op_time`, `ttl`, `usecase`, …),
//! which are found by name, so extra or reordered columns are fine.
//!
//! `key` → key (decimal, `0x` hex or hashed string); `op` `GET*` → Get, `SET`/`PUT`/`ADD`/
//! `UPDATE`/`WRITE` → Put, `DELETE`/`DEL`/`REMOVE` → Delete; `size` → `obj_size` = `len`
//! (offset 0, whole object); `op_count` > 1 → that many identical requests (0 → none, empty → 1);
//! `op_time`, if present, is seconds, made relative to the first line; `key_size` is ignored.

use super::fields::{key, num, Clock, LineError, LineParser};
use crate::expand::Expansion;
use crate::request::{Op, Request};

#[derive(Debug, Clone, Copy)]
struct Columns {
    key: usize,
    op: usize,
    size: usize,
    op_count: Option<usize>,
    op_time: Option<usize>,
    width: usize,
}

#[derive(Default)]
pub(crate) struct KvcacheParser {
    columns: Option<Columns>,
    clock: Clock,
}

fn header(line: &str) -> Result<Columns, LineError> {
    let names: Vec<String> = line.split(',').map(|s| s.trim().to_ascii_lowercase()).collect();
    let find = |n: &str| names.iter().position(|c| c == n);
    let need =
        |n: &str| find(n).ok_or_else(|| LineError::Fatal(format!("kvcache header {line:?} has no {n:?} column")));
    Ok(Columns {
        key: need("key")?,
        op: need("op")?,
        size: need("size")?,
        op_count: find("op_count"),
        op_time: find("op_time"),
        width: names.len(),
    })
}

fn kv_op(field: &str) -> Result<Op, LineError> {
    let o = field.trim().to_ascii_lowercase();
    match o.as_str() {
        _ if o.starts_with("get") => Ok(Op::Get),
        "read" => Ok(Op::Get),
        "set" | "put" | "add" | "update" | "write" | "replace" => Ok(Op::Put),
        "delete" | "del" | "remove" => Ok(Op::Delete),
        _ => Err(LineError::Bad(format!("bad op {:?}", field.trim()))),
    }
}

impl LineParser for KvcacheParser {
    fn parse_line(&mut self, line: &str) -> Result<Option<Expansion>, LineError> {
        let line = line.trim();
        if line.is_empty() {
            return Ok(None);
        }
        let Some(c) = self.columns else {
            self.columns = Some(header(line)?);
            return Ok(None);
        };
        let f: Vec<&str> = line.split(',').collect();
        if f.len() < c.width {
            return Err(LineError::Bad(format!("expected {} fields, got {}", c.width, f.len())));
        }
        let size = num(f[c.size], "size")?;
        let count = match c.op_count.map(|i| f[i].trim()) {
            None | Some("") => 1,
            Some(s) => num(s, "op_count")?,
        };
        let time_ns = match c.op_time.map(|i| f[i].trim()) {
            None | Some("") => 0,
            Some(s) => self.clock.ns(num(s, "op_time")?, 1_000_000_000),
        };
        let req = Request {
            time_ns,
            op: kv_op(f[c.op])?,
            key: key(f[c.key])?,
            offset: 0,
            len: size,
            obj_size: size,
            fingerprint: None,
        };
        Ok(Some(Expansion::repeat(req, count)))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn header_then_rows_with_op_count() {
        let mut p = KvcacheParser::default();
        assert!(p.parse_line("key,op,size,op_count,key_size").unwrap().is_none());
        let r: Vec<_> = p.parse_line("123,GET,400,3,8").unwrap().unwrap().collect();
        assert_eq!(r.len(), 3);
        assert_eq!((r[0].key, r[0].op, r[0].len, r[0].obj_size), (123, Op::Get, 400, 400));
        assert_eq!(p.parse_line("5,SET,10,0,8").unwrap().unwrap().count(), 0);
        assert_eq!(p.parse_line("5,DELETE,0,1,8").unwrap().unwrap().next().unwrap().op, Op::Delete);
    }

    #[test]
    fn extra_and_reordered_columns_by_name() {
        let mut p = KvcacheParser::default();
        p.parse_line("op_time,key,key_size,op,size,op_count,ttl,usecase").unwrap();
        let r: Vec<_> = p.parse_line("100,abc,3,SET,64,1,0,2").unwrap().unwrap().collect();
        assert_eq!((r[0].op, r[0].key, r[0].obj_size, r[0].time_ns), (Op::Put, crate::hash::fnv1a64(b"abc"), 64, 0));
        let r: Vec<_> = p.parse_line("102,abc,3,GET,64,1,0,2").unwrap().unwrap().collect();
        assert_eq!(r[0].time_ns, 2_000_000_000);
    }

    #[test]
    fn missing_column_is_fatal_bad_row_is_not() {
        let mut p = KvcacheParser::default();
        assert!(matches!(p.parse_line("key,size"), Err(LineError::Fatal(_))));
        let mut p = KvcacheParser::default();
        p.parse_line("key,op,size,op_count,key_size").unwrap();
        assert_eq!(p.parse_line("1,FROB,1,1,1").unwrap_err(), LineError::Bad("bad op \"FROB\"".into()));
        assert!(matches!(p.parse_line("1,GET"), Err(LineError::Bad(_))));
    }
}
