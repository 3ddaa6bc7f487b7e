//! Chunk trailers: every chunk on a device ends with a [`SLOT`]-byte *trailer slot*, zeros then
//! 16 bytes that bind the body to the blob and position it belongs to and carry a CRC32C of all.
//!
//! ```text
//! chunk = body (height − 512 bytes) | 496 zero bytes | seq: u64 LE | index: u32 LE |
//!         crc32c(body ‖ zeros ‖ seq ‖ index ‖ place): u32 LE
//! ```
//! `seq` is the blob's unique sequence number and `index` the chunk's position in the blob, so a
//! stale chunk (an older blob's, a misdirected or lost write) fails verification just like a flipped
//! bit: the store never mistakes it for the data it wants.
//!
//! The chunks of a blob's short last row (format 7, `geometry.rs`) have no slot: the whole chunk
//! is body, and the same checksum, `crc32c(body ‖ seq ‖ index ‖ place)` ([`tail_crc`]), is kept
//! in the blob's `Put` record instead ([`verify_tail`]). A slot there doubled a 4 KiB blob, as
//! it took a sector of its own; in the metadata the checksum costs 4 bytes a chunk.
//!
//! Why a 512-byte slot for a 16-byte trailer (format 4; format 3 had the trailer right after a
//! body of `height − 16` bytes): a body of whole 512-byte sectors lets a put hand the devices the
//! caller's own memory, chunk body by chunk body, with the slot as a separate I/O vector —
//! O_DIRECT needs every vector a multiple of the logical block size. Copying the blob into column
//! buffers instead cost a large share of the raw write bandwidth on the reference machine (the
//! copy's memory traffic competes with the device's); see `lay_out.rs`. The slot costs 0.8% of a
//! 64 KiB chunk (12.5% of the smallest, 4 KiB).

/// Bytes of the trailer at the end of every chunk.
pub const TRAILER: usize = 16;

/// Bytes of the trailer slot that ends every chunk: zeros, then the 16-byte trailer.
pub const SLOT: usize = 512;

const ZEROS: [u8; 4096] = [0; 4096];

fn crc(body: &[u8], seq: u64, index: u32, place: u64) -> u32 {
    finish(crc32c::crc32c(body), seq, index, place)
}

/// The checksum of a chunk from the CRC32C of its body (CRC32C can be continued, so a body's
/// CRC is computed once for all the chunks that share it, as the copies of a replicated chunk).
fn finish(body_crc: u32, seq: u64, index: u32, place: u64) -> u32 {
    let c = crc32c::crc32c_append(body_crc, &seq.to_le_bytes());
    let c = crc32c::crc32c_append(c, &index.to_le_bytes());
    crc32c::crc32c_append(c, &place.to_le_bytes())
}

/// CRC32C of a chunk body made of `bytes` followed by `zeros` zero bytes (a short chunk's
/// padding), for [`seal_trailer`].
pub fn body_crc(bytes: &[u8], zeros: usize) -> u32 {
    let mut c = crc32c::crc32c(bytes);
    let mut left = zeros;
    while left > 0 {
        let n = left.min(ZEROS.len());
        c = crc32c::crc32c_append(c, &ZEROS[..n]);
        left -= n;
    }
    c
}

/// The place a chunk was written to (band and row start), bound into its checksum without being
/// stored: a chunk read from anywhere else fails verification.
pub fn place(band: u32, row_start: u64) -> u64 {
    (u64::from(band) << 32) ^ row_start
}

/// Zeroes the trailer slot's padding and writes the trailer into the last [`TRAILER`] bytes of
/// `chunk`, covering the rest (body and padding) by the checksum.
pub fn seal(chunk: &mut [u8], seq: u64, index: u32, place: u64) {
    let n = chunk.len() - TRAILER;
    let pad = chunk.len() - SLOT;
    chunk[pad..n].fill(0);
    let c = crc32c::crc32c(&chunk[..n]);
    seal_trailer(&mut chunk[n..], c, seq, index, place);
}

/// Fills the [`SLOT`] bytes `slot` of a chunk whose body has CRC32C `body_crc` ([`body_crc`]):
/// the same slot as [`seal`] writes, for a body that was computed, copied or left in the
/// caller's memory without being read back (`lay_out.rs`).
pub fn seal_slot(slot: &mut [u8], body_crc: u32, seq: u64, index: u32, place: u64) {
    let (pad, trailer) = slot.split_at_mut(SLOT - TRAILER);
    pad.fill(0);
    seal_trailer(trailer, crc32c::crc32c_append(body_crc, &ZEROS[..SLOT - TRAILER]), seq, index, place);
}

/// Writes the [`TRAILER`] bytes `trailer` of a chunk whose body and padding have CRC32C
/// `body_crc`.
fn seal_trailer(trailer: &mut [u8], body_crc: u32, seq: u64, index: u32, place: u64) {
    let c = finish(body_crc, seq, index, place);
    trailer[..8].copy_from_slice(&seq.to_le_bytes());
    trailer[8..12].copy_from_slice(&index.to_le_bytes());
    trailer[12..16].copy_from_slice(&c.to_le_bytes());
}

/// The checksum of a short last row's chunk (no slot) whose body has CRC32C `body_crc`
/// ([`body_crc`]), kept in the blob's record.
pub fn tail_crc(body_crc: u32, seq: u64, index: u32, place: u64) -> u32 {
    finish(body_crc, seq, index, place)
}

/// True when the slot-less chunk `body` (of a short last row) has the checksum `crc` its
/// record keeps for (`seq`, `index`, `place`).
pub fn verify_tail(body: &[u8], seq: u64, index: u32, place: u64, crc: u32) -> bool {
    tail_crc(crc32c::crc32c(body), seq, index, place) == crc
}

/// True when `chunk` carries a valid trailer for (`seq`, `index`).
pub fn verify(chunk: &[u8], seq: u64, index: u32, place: u64) -> bool {
    if chunk.len() < SLOT {
        return false;
    }
    let n = chunk.len() - TRAILER;
    let t = &chunk[n..];
    let (s, i, c) = (
        u64::from_le_bytes(t[..8].try_into().unwrap()),
        u32::from_le_bytes(t[8..12].try_into().unwrap()),
        u32::from_le_bytes(t[12..16].try_into().unwrap()),
    );
    s == seq && i == index && c == crc(&chunk[..n], seq, index, place)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn seal_verify_and_detect_every_bit_flip() {
        let mut c = vec![0u8; 4096];
        for (i, b) in c.iter_mut().enumerate().take(4096 - SLOT) {
            *b = (i * 7) as u8;
        }
        seal(&mut c, 42, 3, 9);
        assert!(verify(&c, 42, 3, 9));
        assert!(!verify(&c, 43, 3, 9), "other blob");
        assert!(!verify(&c, 42, 4, 9), "other position");
        assert!(!verify(&c, 42, 3, 10), "other place (misdirected write)");
        for bit in (0..c.len() * 8).step_by(97) {
            let mut d = c.clone();
            d[bit / 8] ^= 1 << (bit % 8);
            assert!(!verify(&d, 42, 3, 9), "flip at bit {bit} undetected");
        }
        assert!(!verify(&[0u8; 16], 0, 0, 0));
        // The slot's padding is covered: a chunk with junk there fails.
        let mut d = c.clone();
        d[4096 - SLOT] = 1;
        assert!(!verify(&d, 42, 3, 9), "junk in the padding");
    }

    #[test]
    fn a_tail_chunk_verifies_against_its_recorded_checksum_only() {
        let body: Vec<u8> = (0..4096).map(|i| (i * 31 + 7) as u8).collect();
        let crc = tail_crc(body_crc(&body[..1000], 3096), 42, 3, 9);
        let mut padded = body[..1000].to_vec();
        padded.resize(4096, 0);
        assert!(verify_tail(&padded, 42, 3, 9, crc));
        assert!(!verify_tail(&padded, 43, 3, 9, crc), "other blob");
        assert!(!verify_tail(&padded, 42, 4, 9, crc), "other position");
        assert!(!verify_tail(&padded, 42, 3, 10, crc), "other place (misdirected write)");
        assert!(!verify_tail(&padded, 42, 3, 9, crc ^ 1), "other recorded checksum");
        for bit in (0..padded.len() * 8).step_by(61) {
            let mut d = padded.clone();
            d[bit / 8] ^= 1 << (bit % 8);
            assert!(!verify_tail(&d, 42, 3, 9, crc), "flip at bit {bit} undetected");
        }
    }

    #[test]
    fn a_slot_from_the_body_crc_equals_seal() {
        for (len, zeros) in [(3584, 0), (100, 3484), (0, 3584), (1, 9000)] {
            let body: Vec<u8> = (0..len).map(|i| (i * 13 + 1) as u8).collect();
            let mut sealed = body.clone();
            sealed.resize(len + zeros, 0);
            sealed.resize(len + zeros + SLOT, 0xEE); // junk in the slot: seal zeroes it
            seal(&mut sealed, 7, 2, 5);
            let mut slot = [0xEEu8; SLOT];
            seal_slot(&mut slot, body_crc(&body, zeros), 7, 2, 5);
            assert_eq!(&sealed[len + zeros..], &slot, "len {len} + {zeros} zeros");
            assert!(verify(&sealed, 7, 2, 5));
        }
    }
}
