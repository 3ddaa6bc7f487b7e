//! What `reo bench rebuild` writes and how it proves the rebuild: every blob carries bytes of its
//! own (a pseudo-random stream seeded by its index, so a chunk of zeros, of another blob or of
//! another offset never passes), the losses must be exactly the blobs the failed device held
//! alone, and every rebuilt blob is read back from the replacement and compared.

use reo_store::{Location, Placement, Scheme, ScrubOptions, Store};

/// The bytes of the i-th blob: its index, then an xorshift stream seeded by it.
pub fn payload(i: u64, len: u64) -> Vec<u8> {
    let mut data = Vec::with_capacity(len as usize + 8);
    data.extend(i.to_le_bytes());
    let mut x = i.wrapping_mul(0x9E37_79B9_7F4A_7C15) | 1;
    while data.len() < len as usize {
        x ^= x << 13;
        x ^= x >> 7;
        x ^= x << 17;
        data.extend(x.to_le_bytes());
    }
    data.truncate(len as usize);
    data
}

/// A blob header like the cache's: magic, version, kind, flags (bit 0 dirty), class at offset 7,
/// then the blob's index.
pub fn header(class: u8, i: u64) -> Vec<u8> {
    let mut h = b"RCB1".to_vec();
    h.extend([1, 0, u8::from(class == 1), class]);
    h.extend(i.to_le_bytes());
    h
}

/// The index a blob's header carries.
fn index_of(loc: &Location, head: &[u8]) -> Result<u64, String> {
    let i = head.get(8..16).and_then(|b| b.try_into().ok()).map(u64::from_le_bytes);
    i.ok_or_else(|| format!("bench rebuild: the blob of sequence number {} has a foreign header", loc.seq))
}

/// Is `loc` a blob without redundancy held by device `d` alone?
fn alone_on(loc: &Location, d: usize) -> bool {
    loc.scheme == Scheme::None(Placement::Isolated) && usize::from(loc.device) == d
}

/// The blobs that failing device `d` loses by design: isolated ones on it.
pub fn expected_losses(store: &Store, d: usize) -> usize {
    store.blobs().iter().filter(|(loc, _)| alone_on(loc, d)).count()
}

/// Fails unless the rebuild of device `d` lost exactly the `expected` blobs held there alone.
pub fn check_losses(lost: &[Location], d: usize, expected: usize) -> Result<(), String> {
    let mut seqs: Vec<u64> = lost.iter().map(|l| l.seq).collect();
    seqs.sort_unstable();
    if let Some(w) = seqs.windows(2).find(|w| w[0] == w[1]) {
        return Err(format!("bench rebuild: the blob of sequence number {} was reported lost twice", w[0]));
    }
    if let Some(loc) = lost.iter().find(|l| !alone_on(l, d)) {
        return Err(format!(
            "bench rebuild: the blob of sequence number {} ({:?}) was lost although it had redundancy or lived on another device",
            loc.seq, loc.scheme
        ));
    }
    if lost.len() != expected {
        return Err(format!(
            "bench rebuild: {} blobs lost, {expected} expected (the isolated blobs of the failed device)",
            lost.len()
        ));
    }
    Ok(())
}

/// Checks what the rebuild wrote onto device `rebuilt`, from that device: a scrub must find every
/// chunk of every live blob readable and matching its checksum (which binds the blob's sequence
/// number, so a chunk of another blob fails it); then, with two other devices failed, every
/// Reed-Solomon blob is read (the replacement is among the k devices left) and, with every other
/// device failed, every replicated blob (the replacement is the only copy left), and each is
/// compared byte for byte with what was put. Returns the number of blobs compared, which must be
/// the `redundant` blobs the fill put.
pub fn verify(store: &Store, n: usize, rebuilt: usize, blob: u64, redundant: u64) -> Result<u64, String> {
    let scrub = store.scrub(&ScrubOptions::default());
    if scrub.chunks_bad > 0 || scrub.chunks_skipped > 0 || !scrub.unrecoverable.is_empty() {
        return Err(format!(
            "bench rebuild: scrub after the rebuild: {} bad, {} skipped, {} unrecoverable chunks",
            scrub.chunks_bad,
            scrub.chunks_skipped,
            scrub.unrecoverable.len()
        ));
    }
    let blobs = store.blobs();
    let others: Vec<usize> = (0..n).filter(|&d| d != rebuilt).collect();
    let mut compared = 0;
    let mut check = |keep: fn(&Scheme) -> bool| -> Result<(), String> {
        for (loc, head) in blobs.iter().filter(|(l, _)| keep(&l.scheme)) {
            let i = index_of(loc, head)?;
            let got = store.read_all(loc).map_err(|e| format!("bench rebuild: read back blob {i}: {e}"))?;
            if got != payload(i, blob) {
                return Err(format!("bench rebuild: blob {i} read back from the rebuilt device differs"));
            }
            compared += 1;
        }
        Ok(())
    };
    let fail = |d: usize| store.fail_device(d).map_err(|e| format!("bench rebuild: fail device {d} to read back: {e}"));
    for &d in &others[..2] {
        fail(d)?;
    }
    check(|s| matches!(s, Scheme::Rs { .. }))?;
    for &d in &others[2..] {
        fail(d)?;
    }
    check(|s| matches!(s, Scheme::Replicate(_)))?;
    if compared != redundant {
        return Err(format!("bench rebuild: {compared} redundant blobs read back, {redundant} put"));
    }
    Ok(compared)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn payloads_differ_per_blob_and_are_not_mostly_zeros() {
        let a = payload(1, 4096);
        let b = payload(2, 4096);
        assert_eq!(a.len(), 4096);
        assert_eq!(payload(1, 4096), a, "the stream is reproducible for verification");
        assert_ne!(a[8..], b[8..]);
        assert!(a.iter().filter(|&&x| x == 0).count() < 64, "real bytes, not zeros");
        assert_eq!(payload(3, 5).len(), 5);
    }

    #[test]
    fn only_the_isolated_blobs_of_the_failed_device_may_be_lost() {
        let iso = |device, seq| Location {
            seq,
            band: 0,
            start: 0,
            device,
            scheme: Scheme::None(Placement::Isolated),
            len: 1,
        };
        check_losses(&[iso(1, 1), iso(1, 2)], 1, 2).unwrap();
        assert!(check_losses(&[iso(1, 1), iso(1, 1)], 1, 2).unwrap_err().contains("reported lost twice"));
        assert!(check_losses(&[iso(1, 1)], 1, 2).unwrap_err().contains("2 expected"));
        assert!(check_losses(&[iso(0, 1)], 1, 1).unwrap_err().contains("another device"));
        let rs = Location { scheme: Scheme::Rs { k: 2, p: 2 }, ..iso(1, 3) };
        assert!(check_losses(&[rs], 1, 1).unwrap_err().contains("redundancy"));
    }
}
