//! Tests of [`TraceReader`]: every format from small hand-written inputs, plain, gzip and zstd;
//! bad lines in both modes; and streaming (constant memory) on inputs far larger than read.

use super::*;
use crate::hash::{block_key, fnv1a64, mix64};
use crate::output::Output;
use crate::request::Op;
use std::cell::Cell;
use std::io::Write;
use std::rc::Rc;

fn compressed(data: &[u8], c: Compression) -> Vec<u8> {
    let mut out = Output::new(Vec::new(), c);
    out.write_all(data).unwrap();
    out.finish().unwrap()
}

const ALL: [Compression; 3] = [Compression::Plain, Compression::Gzip, Compression::Zstd];

/// Reads `data` in every compression; asserts they agree and returns the requests.
fn read_all(data: &[u8], format: Format, opts: ReadOptions) -> Result<Vec<Request>, TraceError> {
    let mut results = Vec::new();
    for c in ALL {
        let r = TraceReader::from_reader("trace.csv", io::Cursor::new(compressed(data, c)), format, &opts).unwrap();
        assert_eq!(r.compression(), c);
        results.push(r.collect::<Result<Vec<_>, _>>().map_err(|e| e.to_string()));
    }
    assert!(results.iter().all(|r| *r == results[0]), "compressions disagree: {results:?}");
    let r = TraceReader::from_reader("trace.csv", io::Cursor::new(data.to_vec()), format, &opts).unwrap();
    r.collect()
}

fn ok(data: &str, format: Format) -> Vec<Request> {
    read_all(data.as_bytes(), format, ReadOptions::default()).unwrap()
}

#[test]
fn native_with_and_without_header() {
    let with =
        ok("time_ns,op,key,offset,size,obj_size,fingerprint\n1,get,5,0,10,10,\n2,put,a,0,4,,0x1\n", Format::Native);
    let without = ok("1,get,5,0,10\r\n2,w,a,0,4,4,1\n", Format::Native);
    assert_eq!(with, without);
    assert_eq!(
        with[1],
        Request { time_ns: 2, op: Op::Put, key: fnv1a64(b"a"), offset: 0, len: 4, obj_size: 4, fingerprint: Some(1) }
    );
}

#[test]
fn msr_lines() {
    let reqs =
        ok("128166372003061629,wdev,0,Write,4096,8192,2000\n128166372013061629,wdev,0,Read,0,4096,1000\n", Format::Msr);
    let vol = mix64(fnv1a64(b"wdev"));
    let got: Vec<_> = reqs.iter().map(|r| (r.time_ns, r.op, r.key)).collect();
    assert_eq!(
        got,
        vec![
            (0, Op::Put, block_key(vol, 1)),
            (0, Op::Put, block_key(vol, 2)),
            (1_000_000_000, Op::Get, block_key(vol, 0))
        ]
    );
}

#[test]
fn msr_block_size_is_configurable() {
    let opts = ReadOptions { block_size: 512, skip_bad: false };
    let reqs = read_all(b"1,h,0,Read,0,4096,1\n", Format::Msr, opts).unwrap();
    assert_eq!(reqs.len(), 8);
    assert!(reqs.iter().all(|r| r.len == 512 && r.obj_size == 512));
}

#[test]
fn fiu_lines() {
    let reqs = ok(
        "100 1 httpd 0 8 W 8 1 00000000000000010000000000000000\n\
         250 1 httpd 0 8 R 8 1 00000000000000010000000000000000\n",
        Format::Fiu,
    );
    assert_eq!(reqs.len(), 2);
    assert_eq!((reqs[0].op, reqs[1].op, reqs[1].time_ns), (Op::Put, Op::Get, 150));
    assert_eq!(reqs[0].key, reqs[1].key);
    assert_eq!(reqs[0].fingerprint, Some(1));
}

#[test]
fn oracle_records() {
    use crate::formats::oracle::encode;
    let mut data = Vec::new();
    data.extend(encode(5, 1, 100, 2));
    data.extend(encode(6, 2, 200, -1));
    data.extend(encode(7, 1, 100, -1));
    let reqs = read_all(&data, Format::Oracle, ReadOptions::default()).unwrap();
    let got: Vec<_> = reqs.iter().map(|r| (r.time_ns / 1_000_000_000, r.key, r.len)).collect();
    assert_eq!(got, vec![(0, 1, 100), (1, 2, 200), (2, 1, 100)]);
}

#[test]
fn oracle_truncated_tail_is_an_error_or_skipped() {
    let mut data = crate::formats::oracle::encode(5, 1, 100, -1).to_vec();
    data.extend([1, 2, 3]);
    let e = read_all(&data, Format::Oracle, ReadOptions::default()).unwrap_err();
    assert_eq!(e.to_string(), "trace.csv:2: truncated record (3 of 24 bytes)");
    let mut r = TraceReader::from_reader("t", io::Cursor::new(data), Format::Oracle, &skip()).unwrap();
    assert_eq!(r.by_ref().count(), 1);
    assert_eq!(r.skipped(), 1);
}

#[test]
fn kvcache_lines() {
    let reqs = ok("key,op,size,op_count,key_size\n7,GET,100,2,4\n8,SET,50,1,4\n", Format::Kvcache);
    let got: Vec<_> = reqs.iter().map(|r| (r.key, r.op, r.obj_size)).collect();
    assert_eq!(got, vec![(7, Op::Get, 100), (7, Op::Get, 100), (8, Op::Put, 50)]);
}

fn skip() -> ReadOptions {
    ReadOptions { skip_bad: true, ..ReadOptions::default() }
}

#[test]
fn bad_line_stops_with_file_and_line_or_is_skipped() {
    let cases: [(Format, &str, &str); 4] = [
        (Format::Native, "1,get,1,0,1\n\n2,xx,1,0,1\n3,get,2,0,1\n", "trace.csv:3: bad op \"xx\""),
        (Format::Msr, "1,h,0,Read,0,512,1\n2,h,0,Read,zz,512,1\n3,h,0,Read,0,512,1\n", "trace.csv:2: bad offset \"zz\""),
        (
            Format::Fiu,
            "1 1 p 0 8 W 8 1 00000000000000010000000000000000\n2 1 p 0 8 Q 8 1 00\n3 1 p 0 8 R 8 1 00000000000000010000000000000000\n",
            "trace.csv:2: bad op \"Q\"",
        ),
        (Format::Kvcache, "key,op,size,op_count,key_size\n1,GET,1,1,1\n2,GET,x,1,1\n3,GET,1,1,1\n", "trace.csv:3: bad size \"x\""),
    ];
    for (format, data, msg) in cases {
        let e = read_all(data.as_bytes(), format, ReadOptions::default()).unwrap_err();
        assert_eq!(e.to_string(), msg, "{format}");
        assert_eq!(e.line(), msg.split(':').nth(1).and_then(|l| l.parse().ok()));
        let mut r = TraceReader::from_reader("t", io::Cursor::new(data.as_bytes().to_vec()), format, &skip()).unwrap();
        let reqs: Vec<_> = r.by_ref().collect::<Result<_, _>>().unwrap();
        assert_eq!((reqs.len(), r.skipped()), (2, 1), "{format}");
    }
}

#[test]
fn errors_stop_the_reader() {
    let mut r = TraceReader::from_reader(
        "t",
        io::Cursor::new(b"0,xx,1,0,1\n0,get,1,0,1\n".to_vec()),
        Format::Native,
        &ReadOptions::default(),
    )
    .unwrap();
    assert!(r.next().unwrap().is_err());
    assert!(r.next().is_none());
}

#[test]
fn missing_kvcache_column_is_fatal_even_when_skipping() {
    let data = b"key,size\n1,2\n".to_vec();
    let mut r = TraceReader::from_reader("kv.csv", io::Cursor::new(data), Format::Kvcache, &skip()).unwrap();
    let e = r.next().unwrap().unwrap_err();
    assert!(e.to_string().starts_with("kv.csv:1: kvcache header"), "{e}");
}

#[test]
fn non_utf8_and_overlong_lines_are_bad_lines() {
    let mut data = b"0,get,1,0,1\n\xff\xfe\n".to_vec();
    data.extend(vec![b'9'; MAX_LINE + 10]);
    data.extend(b"\n0,get,2,0,1\n");
    let mut r = TraceReader::from_reader("t", io::Cursor::new(data), Format::Native, &skip()).unwrap();
    let keys: Vec<_> = r.by_ref().map(|q| q.unwrap().key).collect();
    assert_eq!((keys, r.skipped()), (vec![1, 2], 2));
}

#[test]
fn open_names_the_file() {
    let tmp = tempfile::TempDir::new().unwrap();
    let dir = tmp.path();
    let path = dir.join("trace.csv.zst");
    std::fs::write(&path, compressed(b"0,get,1,0,1\n1,get,1,0,-5\n", Compression::Zstd)).unwrap();
    let e = open(&path, Format::Native, &ReadOptions::default()).unwrap().nth(1).unwrap().unwrap_err();
    assert_eq!(e.to_string(), format!("{}:2: bad size \"-5\"", path.display()));
    let missing = open(&dir.join("nope"), Format::Native, &ReadOptions::default()).err().unwrap();
    assert!(matches!(missing, TraceError::Io { .. }));
}

/// An endless native trace that counts the bytes handed out.
struct Endless {
    line: u64,
    pending: Vec<u8>,
    given: Rc<Cell<u64>>,
}

impl Read for Endless {
    fn read(&mut self, buf: &mut [u8]) -> io::Result<usize> {
        if self.pending.is_empty() {
            self.pending = format!("{},get,{},0,4096\n", self.line, self.line % 1000).into_bytes();
            self.line += 1;
        }
        let n = buf.len().min(self.pending.len());
        buf[..n].copy_from_slice(&self.pending[..n]);
        self.pending.drain(..n);
        self.given.set(self.given.get() + n as u64);
        Ok(n)
    }
}

#[test]
fn reading_streams_from_an_endless_input() {
    let given = Rc::new(Cell::new(0));
    let input = Endless { line: 0, pending: Vec::new(), given: given.clone() };
    let mut r = TraceReader::from_reader("endless", input, Format::Native, &ReadOptions::default()).unwrap();
    let n = r.by_ref().take(100_000).filter(|q| q.is_ok()).count();
    assert_eq!(n, 100_000);
    // Only what the 100,000 lines need plus one input buffer was pulled.
    assert!(given.get() < 2_000_000 + 128 * 1024, "read {} bytes", given.get());
}

/// Counts the bytes pulled from an inner reader.
struct Counting<R> {
    inner: R,
    given: Rc<Cell<u64>>,
}

impl<R: Read> Read for Counting<R> {
    fn read(&mut self, buf: &mut [u8]) -> io::Result<usize> {
        let n = self.inner.read(buf)?;
        self.given.set(self.given.get() + n as u64);
        Ok(n)
    }
}

#[test]
fn compressed_input_is_decompressed_as_a_stream() {
    let mut data = Vec::new();
    for i in 0..400_000u64 {
        writeln!(data, "{i},get,{},0,{}", i.wrapping_mul(0x9e37_79b9_7f4a_7c15) >> 20, i % 65_536).unwrap();
    }
    for c in [Compression::Gzip, Compression::Zstd] {
        let bytes = compressed(&data, c);
        let total = bytes.len() as u64;
        let given = Rc::new(Cell::new(0));
        let input = Counting { inner: io::Cursor::new(bytes), given: given.clone() };
        let mut r = TraceReader::from_reader("big", input, Format::Native, &ReadOptions::default()).unwrap();
        assert_eq!(r.by_ref().take(10).count(), 10);
        assert!(given.get() * 4 < total, "{c:?}: pulled {} of {total} bytes for 10 lines", given.get());
    }
}
