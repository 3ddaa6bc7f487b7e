//! Metadata records and their framing: the journal's batches and the checkpoint.
//!
//! Records (little-endian):
//! ```text
//! Put       = 1 | seq u64 | band u32 | start u32 | device u16 | scheme [u8;3] | len u64 | hlen u32 | header
//!             | tails u16 | crc u32 × tails                 (format 7: the short last row's checksums)
//! Free      = 2 | seq u64 | band u32
//! BandReset = 3 | band u32
//! Unrestored = 4 | device u16 | seq u64 | band u32   (format 6)
//! Missed     = 5 | device u16                         (format 6)
//! ```
//! `tails` is the number of chunks of the blob's short last row (0 if it ends with a full row),
//! and each `crc` one's checksum, in stripe then column order (`chunk.rs`): those chunks have no
//! trailer slot of their own.
//! `Unrestored`: a finished rebuild of `device` could not restore blob `seq` (of `band`) onto it;
//! reads treat the device as down for that blob (`resync.rs`). `Missed`: `device` is stale, it
//! missed writes while failed and opens failed until replaced (`stale.rs`).
//! A journal batch is `header (48 B) | records | zero padding to 4 KiB`:
//! ```text
//! magic "RJB1" | version u16 | 0 u16 | store_id u64 | gen u64 | batch u64 | payload_len u32 |
//! payload_crc u32 | header_crc u32 | 0 u32
//! ```
//! `gen` changes at every checkpoint and `batch` counts from 0 within a generation, so stale batches
//! of an older generation (or of an older store formatted on the same device) are never replayed. A checkpoint slot holds one frame of the same shape
//! (magic "RCK1", plus the next sequence number and a clean-shutdown flag) around a band table and
//! one Put record per live blob, each followed by an `Unrestored` record per device that never
//! got the blob's chunks, then a `Missed` record per stale device.

use crate::bytes::{Reader, Writer};
use crate::config::MAX_HEADER_LEN;
use crate::location::Location;
use crate::scheme::Scheme;
use reo_media::AlignedBuf;

/// One metadata record.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Record {
    Put { loc: Location, header: Vec<u8>, tail: Vec<u32> },
    Free { seq: u64, band: u32 },
    BandReset { band: u32 },
    Unrestored { device: u16, seq: u64, band: u32 },
    Missed { device: u16 },
}

impl Record {
    /// Appends the encoding of `Put` without building a `Record`.
    pub fn encode_put(w: &mut Writer, loc: &Location, header: &[u8], tail: &[u32]) {
        w.u8(1)
            .u64(loc.seq)
            .u32(loc.band)
            .u32(loc.start)
            .u16(loc.device)
            .bytes(&loc.scheme.encode())
            .u64(loc.len)
            .u32(header.len() as u32)
            .bytes(header)
            .u16(tail.len() as u16);
        for &c in tail {
            w.u32(c);
        }
    }

    /// Appends this record's encoding.
    pub fn encode(&self, w: &mut Writer) {
        match self {
            Record::Put { loc, header, tail } => Record::encode_put(w, loc, header, tail),
            Record::Free { seq, band } => {
                w.u8(2).u64(*seq).u32(*band);
            }
            Record::BandReset { band } => {
                w.u8(3).u32(*band);
            }
            Record::Unrestored { device, seq, band } => {
                w.u8(4).u16(*device).u64(*seq).u32(*band);
            }
            Record::Missed { device } => {
                w.u8(5).u16(*device);
            }
        }
    }

    /// Decodes one record; `None` on malformed input.
    pub fn decode(r: &mut Reader<'_>) -> Option<Record> {
        match r.u8()? {
            1 => {
                let seq = r.u64()?;
                let band = r.u32()?;
                let start = r.u32()?;
                let device = r.u16()?;
                let s = r.take(3)?;
                let scheme = Scheme::decode([s[0], s[1], s[2]])?;
                let len = r.u64()?;
                let hlen = r.u32()? as usize;
                if hlen > MAX_HEADER_LEN {
                    return None;
                }
                let header = r.take(hlen)?.to_vec();
                let tails = r.u16()? as usize;
                if tails > MAX_TAIL_CHUNKS {
                    return None;
                }
                let tail = (0..tails).map(|_| r.u32()).collect::<Option<Vec<u32>>>()?;
                Some(Record::Put { loc: Location { seq, band, start, device, scheme, len }, header, tail })
            }
            2 => Some(Record::Free { seq: r.u64()?, band: r.u32()? }),
            3 => Some(Record::BandReset { band: r.u32()? }),
            4 => Some(Record::Unrestored { device: r.u16()?, seq: r.u64()?, band: r.u32()? }),
            5 => Some(Record::Missed { device: r.u16()? }),
            _ => None,
        }
    }

    /// Decodes a whole payload; `None` if any record is malformed.
    pub fn decode_all(payload: &[u8]) -> Option<Vec<Record>> {
        let mut r = Reader::new(payload);
        let mut out = Vec::new();
        while r.remaining() > 0 {
            out.push(Record::decode(&mut r)?);
        }
        Some(out)
    }
}

/// Bytes of a frame header.
pub const FRAME_HEADER: usize = 48;
/// Bytes of a put record besides its header and tail checksums: tag, seq, band, start, device,
/// scheme, len, header length, tail count.
pub const PUT_RECORD_FIXED: usize = 1 + 8 + 4 + 4 + 2 + 3 + 8 + 4 + 2;
/// Most chunks a row can have (one per device, and devices are counted in a `u16`): a record
/// claiming more tail checksums is garbage.
pub const MAX_TAIL_CHUNKS: usize = u16::MAX as usize;
/// Magic of a journal batch.
pub const BATCH_MAGIC: &[u8; 4] = b"RJB1";
/// Magic of a checkpoint.
pub const CKPT_MAGIC: &[u8; 4] = b"RCK1";
const FRAME_VERSION: u16 = 1;

/// The header of a framed payload (journal batch or checkpoint).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Frame {
    pub magic: [u8; 4],
    /// The store the frame belongs to.
    pub store: u64,
    /// Journal generation.
    pub gen: u64,
    /// Batch number (journal) or checkpoint number.
    pub number: u64,
    pub payload_len: u32,
    pub payload_crc: u32,
}

impl Frame {
    /// Frames `payload`: header + payload + zero padding to a multiple of 4 KiB.
    pub fn wrap(magic: &[u8; 4], store: u64, gen: u64, number: u64, payload: &[u8]) -> AlignedBuf {
        Frame::wrap_parts(magic, store, gen, number, &[payload])
    }

    /// [`Frame::wrap`] of the concatenation of `parts`, built in place: the frame is aligned for
    /// direct I/O as it is, so a checkpoint of many megabytes is copied once (into the frame)
    /// instead of three times (payload, frame, aligned copy for O_DIRECT).
    pub fn wrap_parts(magic: &[u8; 4], store: u64, gen: u64, number: u64, parts: &[&[u8]]) -> AlignedBuf {
        let len: usize = parts.iter().map(|p| p.len()).sum();
        let crc = parts.iter().fold(0, |c, p| crc32c::crc32c_append(c, p));
        let mut w = Writer::default();
        w.bytes(magic).u16(FRAME_VERSION).u16(0).u64(store).u64(gen).u64(number).u32(len as u32).u32(crc);
        let hcrc = crc32c::crc32c(&w.0);
        w.u32(hcrc).u32(0);
        debug_assert_eq!(w.0.len(), FRAME_HEADER);
        let mut frame = AlignedBuf::zeroed((FRAME_HEADER + len).div_ceil(4096) * 4096);
        frame[..FRAME_HEADER].copy_from_slice(&w.0);
        let mut at = FRAME_HEADER;
        for p in parts {
            frame[at..at + p.len()].copy_from_slice(p);
            at += p.len();
        }
        frame
    }

    /// Parses a frame header; `None` unless magic, version and header checksum are valid.
    pub fn parse(buf: &[u8]) -> Option<Frame> {
        let mut r = Reader::new(buf);
        let magic: [u8; 4] = r.take(4)?.try_into().ok()?;
        if &magic != BATCH_MAGIC && &magic != CKPT_MAGIC {
            return None;
        }
        if r.u16()? != FRAME_VERSION || r.u16()? != 0 {
            return None;
        }
        let store = r.u64()?;
        let gen = r.u64()?;
        let number = r.u64()?;
        let payload_len = r.u32()?;
        let payload_crc = r.u32()?;
        let hcrc = r.u32()?;
        if hcrc != crc32c::crc32c(&buf[..r.position() - 4]) {
            return None;
        }
        Some(Frame { magic, store, gen, number, payload_len, payload_crc })
    }

    /// Total framed size on the device.
    pub fn total_len(&self) -> u64 {
        ((FRAME_HEADER + self.payload_len as usize).div_ceil(4096) * 4096) as u64
    }

    /// The payload within a buffer holding the whole frame, if its checksum matches.
    pub fn payload<'a>(&self, frame: &'a [u8]) -> Option<&'a [u8]> {
        let p = frame.get(FRAME_HEADER..FRAME_HEADER + self.payload_len as usize)?;
        (crc32c::crc32c(p) == self.payload_crc).then_some(p)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::scheme::Placement;
    use proptest::prelude::*;

    fn sample() -> Vec<Record> {
        vec![
            Record::Put {
                loc: Location {
                    seq: 9,
                    band: 3,
                    start: 17,
                    device: 2,
                    scheme: Scheme::None(Placement::Isolated),
                    len: 12345,
                },
                header: b"bucket/key".to_vec(),
                tail: vec![0xDEAD_BEEF],
            },
            Record::Free { seq: 4, band: 1 },
            Record::BandReset { band: 7 },
            Record::Unrestored { device: 3, seq: 99, band: 2 },
            Record::Missed { device: 1 },
        ]
    }

    #[test]
    fn records_and_frames_roundtrip() {
        let mut w = Writer::default();
        for r in sample() {
            r.encode(&mut w);
        }
        let framed = Frame::wrap(BATCH_MAGIC, 77, 5, 11, &w.0);
        assert_eq!(framed.len() % 4096, 0);
        let f = Frame::parse(&framed).unwrap();
        assert_eq!((f.store, f.gen, f.number), (77, 5, 11));
        assert_eq!(Record::decode_all(f.payload(&framed).unwrap()).unwrap(), sample());
        let mut put = Writer::default();
        Record::encode_put(
            &mut put,
            &Location { seq: 1, band: 2, start: 3, device: 0, scheme: Scheme::Replicate(2), len: 9 },
            b"abc",
            &[1, 2],
        );
        assert_eq!(put.0.len(), PUT_RECORD_FIXED + 3 + 8);
        // Built from parts, the frame is the same bytes.
        let (a, b) = w.0.split_at(w.0.len() / 3);
        assert_eq!(Frame::wrap_parts(BATCH_MAGIC, 77, 5, 11, &[a, &[], b])[..], framed[..]);
        let mut torn = framed.to_vec();
        torn[FRAME_HEADER + 3] ^= 0x10;
        assert!(f.payload(&torn).is_none(), "payload corruption detected");
        let mut bad = framed.to_vec();
        bad[9] ^= 1;
        assert!(Frame::parse(&bad).is_none(), "header corruption detected");
    }

    proptest! {
        #[test]
        fn decoders_never_panic(bytes in proptest::collection::vec(any::<u8>(), 0..600)) {
            let _ = Record::decode_all(&bytes);
            if let Some(f) = Frame::parse(&bytes) {
                let _ = f.payload(&bytes);
                let _ = f.total_len();
            }
        }

        #[test]
        fn truncated_or_mutated_payloads_never_panic(cut in 0usize..100, pos in 0usize..100, v in any::<u8>()) {
            let mut w = Writer::default();
            for r in sample() { r.encode(&mut w); }
            let mut p = w.0.clone();
            let n = p.len();
            p[pos % n] = v;
            let _ = Record::decode_all(&p[..cut.min(n)]);
            let _ = Record::decode_all(&p);
        }
    }
}
