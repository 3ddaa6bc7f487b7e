//! Chunk trailers: every chunk on a device ends with 16 bytes that bind its body to the blob and
//! position it belongs to and carry a CRC32C of both.
//!
//! ```text
//! chunk = body (height − 16 bytes) | seq: u64 LE | index: u32 LE | crc32c(body ‖ seq ‖ index ‖ place): u32 LE
//! ```
//! `seq` is the blob's unique sequence number and `index` the chunk's position in the blob, so a
//! stale chunk (an older blob's, a misdirected or lost write) fails verification just like a flipped
//! bit: the store never mistakes it for the data it wants.

/// Bytes of the trailer at the end of every chunk.
pub const TRAILER: usize = 16;

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
    const ZEROS: [u8; 4096] = [0; 4096];
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
    ((band as u64) << 32) ^ row_start
}

/// Writes the trailer into the last [`TRAILER`] bytes of `chunk`, covering the rest as body.
pub fn seal(chunk: &mut [u8], seq: u64, index: u32, place: u64) {
    let n = chunk.len() - TRAILER;
    let c = crc32c::crc32c(&chunk[..n]);
    seal_trailer(&mut chunk[n..], c, seq, index, place);
}

/// Writes the [`TRAILER`] bytes `trailer` of a chunk whose body has CRC32C `body_crc`
/// ([`body_crc`]): the same trailer as [`seal`] writes, for a body that was computed or copied
/// without being read back (`lay_out.rs`).
pub fn seal_trailer(trailer: &mut [u8], body_crc: u32, seq: u64, index: u32, place: u64) {
    let c = finish(body_crc, seq, index, place);
    trailer[..8].copy_from_slice(&seq.to_le_bytes());
    trailer[8..12].copy_from_slice(&index.to_le_bytes());
    trailer[12..16].copy_from_slice(&c.to_le_bytes());
}

/// True when `chunk` carries a valid trailer for (`seq`, `index`).
pub fn verify(chunk: &[u8], seq: u64, index: u32, place: u64) -> bool {
    if chunk.len() <= TRAILER {
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
        for (i, b) in c.iter_mut().enumerate().take(4080) {
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
    }

    #[test]
    fn a_trailer_from_the_body_crc_equals_seal() {
        for (len, zeros) in [(4080, 0), (100, 3980), (0, 4080), (1, 9000)] {
            let body: Vec<u8> = (0..len).map(|i| (i * 13 + 1) as u8).collect();
            let mut sealed = body.clone();
            sealed.resize(len + zeros + TRAILER, 0);
            seal(&mut sealed, 7, 2, 5);
            let mut trailer = [0u8; TRAILER];
            seal_trailer(&mut trailer, body_crc(&body, zeros), 7, 2, 5);
            assert_eq!(&sealed[len + zeros..], &trailer, "len {len} + {zeros} zeros");
        }
    }
}
