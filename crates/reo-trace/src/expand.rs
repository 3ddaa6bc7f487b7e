//! [`Expansion`]: one trace record turned into one or more requests, lazily, so a record that
//! covers a million blocks (or repeats a million times) costs no memory.

use crate::hash::{block_key, mix64};
use crate::request::{Op, Request};

/// The requests one record stands for, produced one at a time.
#[derive(Debug, Clone)]
pub(crate) struct Expansion {
    base: Request,
    left: u64,
    blocks: Option<BlockRun>,
}

/// A run of consecutive blocks of one volume.
#[derive(Debug, Clone)]
struct BlockRun {
    volume: u64,
    next_block: u64,
    /// Index of the next block within the record (fingerprints of multi-block records).
    index: u64,
    /// The record's content fingerprint, if the trace has one.
    fingerprint: Option<u64>,
    single: bool,
}

impl Expansion {
    /// Just `req`.
    pub fn one(req: Request) -> Self {
        Expansion { base: req, left: 1, blocks: None }
    }

    /// `req`, `count` times.
    pub fn repeat(req: Request, count: u64) -> Self {
        Expansion { base: req, left: count, blocks: None }
    }

    /// The blocks of `volume` that bytes `[offset, offset + len)` touch, one request each; each
    /// block is an object of `block_size` bytes. When the record carries a fingerprint and covers
    /// one block, that block gets it; a multi-block record's blocks get distinct fingerprints
    /// derived from it and their index (equal records still give equal block contents).
    pub fn blocks(
        time_ns: u64,
        op: Op,
        volume: u64,
        offset: u64,
        len: u64,
        block_size: u64,
        fingerprint: Option<u64>,
    ) -> Self {
        let first = offset / block_size;
        let count = if len == 0 { 0 } else { (offset + len - 1) / block_size - first + 1 };
        let base = Request { time_ns, op, key: 0, offset: 0, len: block_size, obj_size: block_size, fingerprint: None };
        let run = BlockRun { volume, next_block: first, index: 0, fingerprint, single: count == 1 };
        Expansion { base, left: count, blocks: Some(run) }
    }
}

impl Iterator for Expansion {
    type Item = Request;

    fn next(&mut self) -> Option<Request> {
        if self.left == 0 {
            return None;
        }
        self.left -= 1;
        let mut req = self.base;
        if let Some(run) = &mut self.blocks {
            req.key = block_key(run.volume, run.next_block);
            req.fingerprint = match run.fingerprint {
                Some(fp) if run.single => Some(fp),
                Some(fp) => Some(mix64(fp ^ mix64(run.index + 1))),
                None => None,
            };
            run.next_block += 1;
            run.index += 1;
        }
        Some(req)
    }

    fn size_hint(&self) -> (usize, Option<usize>) {
        let n = usize::try_from(self.left).unwrap_or(usize::MAX);
        (n, Some(n))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn blocks_cover_every_touched_block_once() {
        let reqs: Vec<_> = Expansion::blocks(5, Op::Put, 7, 4000, 200, 4096, None).collect();
        assert_eq!(reqs.len(), 2);
        assert_eq!(reqs[0].key, block_key(7, 0));
        assert_eq!(reqs[1].key, block_key(7, 1));
        assert!(reqs.iter().all(|r| r.op == Op::Put && r.len == 4096 && r.obj_size == 4096 && r.offset == 0));
        assert_eq!(Expansion::blocks(0, Op::Get, 7, 8192, 4096, 4096, None).count(), 1);
        assert_eq!(Expansion::blocks(0, Op::Get, 7, 8192, 0, 4096, None).count(), 0);
    }

    #[test]
    fn block_fingerprints_single_kept_multi_derived() {
        let one: Vec<_> = Expansion::blocks(0, Op::Put, 1, 0, 4096, 4096, Some(42)).collect();
        assert_eq!(one[0].fingerprint, Some(42));
        let two: Vec<_> = Expansion::blocks(0, Op::Put, 1, 0, 8192, 4096, Some(42)).collect();
        assert_ne!(two[0].fingerprint, two[1].fingerprint);
        assert_ne!(two[0].fingerprint, Some(42));
    }

    #[test]
    fn repeat_yields_count_copies() {
        let r = Request { time_ns: 1, op: Op::Get, key: 3, offset: 0, len: 9, obj_size: 9, fingerprint: None };
        assert_eq!(Expansion::repeat(r, 3).collect::<Vec<_>>(), vec![r; 3]);
    }
}
