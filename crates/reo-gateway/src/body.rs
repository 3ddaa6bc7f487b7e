//! Request bodies that stream: a [`BodySink`] takes a PUT's or a part's body piece by piece as it
//! arrives (into the cache, into a part file, or — where the backend needs the whole object —
//! into a buffer counted in the memory budget), while [`Digests`] computes what the body is
//! checked against (its MD5, the ETag; the flexible checksum its client sent). Nothing of a body
//! becomes visible before its digests are checked: the sink is committed (or dropped, which
//! undoes it) after the last piece.

use md5::Digest;
use reo_media::AlignedBuf;
use s3s::{s3_error, S3Result};

use crate::budget::Reservation;
use crate::checksum::{Algo, Hasher};

/// The size of the pieces a part file is written in.
pub const PIECE: usize = 1 << 20;

/// Most bytes reserved for a collected body before they arrive: a request declaring a huge
/// length and then stalling holds no more than this.
const RESERVE_AHEAD: u64 = 64 << 20;

/// Where a body goes (see the module doc). Its writes run on the blocking pool, one at a time,
/// in order.
pub trait BodySink: Send + 'static {
    /// The length of every piece but the last.
    fn piece_len(&self) -> usize;
    /// Whether the next [`BodySink::write`] only copies into memory (no I/O): a small one is
    /// then done on the task that read it, without a hand-off to the blocking pool.
    fn next_in_memory(&self) -> bool {
        false
    }
    /// Bytes of the body the sink keeps in memory until it is committed (counted in the memory
    /// budget by the reader; a growing buffer reserves its own).
    fn kept(&self) -> usize {
        0
    }
    /// The next piece: [`BodySink::piece_len`] bytes, or fewer for the last one (an empty body
    /// is one empty piece).
    fn write(&mut self, piece: &[u8]) -> S3Result<()>;
}

/// The digests of a body, computed as its pieces pass.
pub struct Digests {
    md5: md5::Md5,
    sum: Option<(Algo, Hasher)>,
    len: u64,
}

/// What [`Digests`] found.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Digested {
    /// The MD5 of the bytes.
    pub md5: [u8; 16],
    /// The flexible checksum asked for, if any.
    pub checksum: Option<(Algo, Vec<u8>)>,
    /// How many bytes were digested.
    pub len: u64,
}

impl Digested {
    /// The MD5 in lowercase hex (an S3 ETag without quotes).
    pub fn md5_hex(&self) -> String {
        crate::hex::hex(&self.md5)
    }
}

impl Digests {
    /// MD5 always; `algo`'s checksum too when given.
    pub fn new(algo: Option<Algo>) -> Digests {
        Digests { md5: md5::Md5::new(), sum: algo.map(|a| (a, a.hasher())), len: 0 }
    }

    /// Feeds the next bytes.
    pub fn update(&mut self, piece: &[u8]) {
        self.md5.update(piece);
        if let Some((_, h)) = &mut self.sum {
            h.update(piece);
        }
        self.len += piece.len() as u64;
    }

    /// The digests of every byte fed.
    pub fn finish(self) -> Digested {
        Digested { md5: self.md5.finalize().into(), checksum: self.sum.map(|(a, h)| (a, h.finalize())), len: self.len }
    }
}

/// A body collected whole in a sector-aligned buffer (the flash store writes full chunks from it
/// without a copy), its allocation reserved in the memory budget as it grows: for the paths whose
/// backend call takes a whole object (write-through, write-around).
pub struct Collected {
    buf: AlignedBuf,
    held: Reservation,
    reserved: u64,
    limit: u64,
}

impl Collected {
    /// Room for `hint` bytes (at most `limit`, and at most [`RESERVE_AHEAD`]) reserved at once;
    /// refused past `limit`.
    pub fn new(mut held: Reservation, hint: u64, limit: u64) -> S3Result<Collected> {
        if hint > limit {
            return Err(too_large(limit));
        }
        let ahead = hint.min(RESERVE_AHEAD);
        held.grow(ahead)?;
        Ok(Collected { buf: AlignedBuf::with_capacity(ahead as usize), held, reserved: ahead, limit })
    }

    /// The bytes collected so far.
    pub fn bytes(&self) -> &[u8] {
        &self.buf
    }

    /// The buffer and its reservation (released when dropped).
    pub fn into_parts(self) -> (AlignedBuf, Reservation) {
        (self.buf, self.held)
    }
}

fn too_large(limit: u64) -> s3s::S3Error {
    s3_error!(EntityTooLarge, "the body exceeds this gateway's limit of {limit} bytes")
}

impl BodySink for Collected {
    /// Small enough to be copied on the task that read it (no hand-off).
    fn piece_len(&self) -> usize {
        256 << 10
    }

    fn next_in_memory(&self) -> bool {
        true
    }

    fn write(&mut self, piece: &[u8]) -> S3Result<()> {
        let len = self.buf.len() + piece.len();
        if len as u64 > self.limit {
            return Err(too_large(self.limit));
        }
        // The allocation is reserved before it grows (it doubles).
        let cap = if len > self.buf.capacity() { len.max(2 * self.buf.capacity()) } else { self.buf.capacity() } as u64;
        if cap > self.reserved {
            self.held.grow(cap - self.reserved)?;
            self.reserved = cap;
        }
        self.buf.extend_from_slice(piece);
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn digests_of_pieces_are_those_of_the_whole() {
        let data: Vec<u8> = (0..300_000u32).map(|i| (i * 7 % 251) as u8).collect();
        for algo in Algo::ALL {
            let mut d = Digests::new(Some(algo));
            for piece in data.chunks(65_536) {
                d.update(piece);
            }
            let got = d.finish();
            assert_eq!(got.md5_hex(), crate::keys::md5_hex(&data));
            assert_eq!(got.checksum, Some((algo, algo.digest(&data))));
            assert_eq!(got.len, data.len() as u64);
        }
    }

    #[test]
    fn a_collected_body_is_bounded_by_its_limit_and_budget() {
        let budget = crate::budget::MemoryBudget::new(3 << 20);
        let mut c = Collected::new(budget.reserve(), 0, 2 << 20).unwrap();
        c.write(&[1; 1 << 20]).unwrap();
        c.write(&[2; 1 << 20]).unwrap();
        assert_eq!(c.write(&[3]).unwrap_err().code().as_str(), "EntityTooLarge");
        assert!(budget.used() >= 2 << 20);
        let mut other = Collected::new(budget.reserve(), 0, 4 << 20).unwrap();
        assert_eq!(other.write(&[0; (1 << 20) + 1]).unwrap_err().code().as_str(), "SlowDown");
        drop((c, other));
        assert_eq!(budget.used(), 0);
    }
}
