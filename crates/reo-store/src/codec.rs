//! The Reed-Solomon codec of the on-flash format: `reed-solomon-simd` 3.x (GF(2^16), Leopard-style
//! FFT; codec id 1 in the superblock). Encoders and decoders are kept per thread and reset between
//! uses, so the hot path allocates nothing after warm-up.
//!
//! Shards are chunk bodies (chunk height − trailer slot), always even in length as the crate
//! requires.
//!
//! A decode call has a fixed cost of about 190 µs (the erasure locator is evaluated over the
//! whole field) whatever the shard length, so the read path decodes all stripes of a read that
//! lost the same columns in *one* call: [`pack`] lays each stripe's shard into a segment of a
//! long shard, [`unpack`] takes a restored shard back out. The code works symbol by symbol
//! (32 two-byte symbols per 64-byte block: low bytes in the first half, high bytes in the second),
//! so a segment holds the body's whole 64-byte blocks as they are and its tail block split the way
//! the crate splits a short shard's tail; the symbols of every stripe then sit in the long shard
//! exactly as in a call of their own, and the result is the same bytes.
//!
//! Even one call per read costs more than the read itself (about 1 ms per MiB restored), so
//! [`decode_packed`] does not run the decoder on the data at all. The code is linear over
//! GF(2^16): a lost data shard is a fixed combination `Σ κ_j · shard_j` of the k shards it is
//! rebuilt from, the coefficients depending only on which shards those are. They are found once
//! per pattern by one decoder call on 64-byte unit shards (symbol j of shard j is the field's
//! one, everything else zero, so symbol j of each restored shard is its κ_j) and cached; the
//! data then costs k multiplications by constants and k − 1 XORs per restored shard, with the
//! crate's own SIMD kernels.

use reed_solomon_simd::engine::{tables, utils, DefaultEngine, Engine, GfElement};
use reed_solomon_simd::{ReedSolomonDecoder, ReedSolomonEncoder};
use std::cell::RefCell;
use std::collections::HashMap;
use std::sync::OnceLock;

/// Codec id recorded in the superblock: stripes written by another code cannot be decoded.
pub const CODEC_ID: u32 = 1;

/// Per restored data shard: (its index, the log of κ_j for each source shard j, `None` for 0).
type Coefficients = Vec<(usize, Vec<Option<GfElement>>)>;
/// Cached coefficients by (k, p, source shards).
type CoefficientCache = HashMap<(usize, usize, Vec<usize>), Coefficients>;

thread_local! {
    static ENCODER: RefCell<Option<ReedSolomonEncoder>> = const { RefCell::new(None) };
    static DECODER: RefCell<Option<ReedSolomonDecoder>> = const { RefCell::new(None) };
    /// Coefficients by pattern, and a scratch buffer for one product.
    static COEFFICIENTS: RefCell<CoefficientCache> = RefCell::new(HashMap::new());
    static SCRATCH: RefCell<Vec<[u8; 64]>> = const { RefCell::new(Vec::new()) };
}

/// The SIMD engine (AVX2, SSSE3 or Neon as the CPU allows), shared by all threads.
fn engine() -> &'static DefaultEngine {
    static ENGINE: OnceLock<DefaultEngine> = OnceLock::new();
    ENGINE.get_or_init(DefaultEngine::new)
}

/// Computes the `parity.len()` parity shards of `data` (all shards the same even length).
pub fn encode(data: &[&[u8]], parity: &mut [&mut [u8]]) {
    encode_with(data, parity.len(), |i, shard| parity[i].copy_from_slice(shard));
}

/// Computes the `p` parity shards of `data` (all shards the same even length) and hands each
/// to `take(i, shard)` from the encoder's own buffer, so the caller decides how it leaves it.
pub fn encode_with(data: &[&[u8]], p: usize, mut take: impl FnMut(usize, &[u8])) {
    let len = data[0].len();
    ENCODER.with(|cell| {
        let mut slot = cell.borrow_mut();
        let enc = match slot.as_mut() {
            Some(e) => {
                e.reset(data.len(), p, len).expect("valid codec parameters");
                e
            }
            None => slot.insert(ReedSolomonEncoder::new(data.len(), p, len).expect("valid codec parameters")),
        };
        for d in data {
            enc.add_original_shard(d).expect("shard accepted");
        }
        let out = enc.encode().expect("encode");
        for (i, shard) in out.recovery_iter().enumerate() {
            take(i, shard);
        }
    });
}

/// Bytes of the segment holding a `len`-byte shard in a batched decode: `len` rounded up to 64.
pub fn padded(len: usize) -> usize {
    len.div_ceil(64) * 64
}

/// Lays shard `src` into segment `dst` (`padded(src.len())` bytes) of a batched shard, with the
/// symbol positions the crate gives a shard of its own. Bytes of `dst` no symbol uses are left
/// as they are (whatever they hold, they only affect unused symbols).
pub fn pack(dst: &mut [u8], src: &[u8]) {
    let whole = src.len() / 64 * 64;
    dst[..whole].copy_from_slice(&src[..whole]);
    let tail = &src[whole..];
    if !tail.is_empty() {
        let (lo, hi) = tail.split_at(tail.len() / 2);
        dst[whole..whole + lo.len()].copy_from_slice(lo);
        dst[whole + 32..whole + 32 + hi.len()].copy_from_slice(hi);
    }
}

/// The inverse of [`pack`]: shard `dst` out of segment `src`.
pub fn unpack(dst: &mut [u8], src: &[u8]) {
    let whole = dst.len() / 64 * 64;
    dst[..whole].copy_from_slice(&src[..whole]);
    let half = (dst.len() - whole) / 2;
    if half > 0 {
        let (lo, hi) = dst[whole..].split_at_mut(half);
        lo.copy_from_slice(&src[whole..whole + half]);
        hi.copy_from_slice(&src[whole + 32..whole + 32 + half]);
    }
}

/// The coefficients restoring every data shard not in `from` (k distinct shard indexes,
/// parity shards numbered from k) as combinations of the shards of `from`.
///
/// Shard `j` of the source set is the unit vector e_j, so each restored shard holds its
/// coefficients. In the crate's layout ([`pack`]) a 64-byte block holds 32 field elements (low
/// bytes, then high bytes), so element `j` sits in block `j / 32`: the unit shards are as many
/// blocks long as k needs (a single 64-byte block served k ≤ 32 only, and indexed out of range
/// above).
fn coefficients(k: usize, p: usize, from: &[usize]) -> Option<Coefficients> {
    let one = tables::get_exp_log().exp[0]; // the field's multiplicative identity
    let at = |j: usize| (j / 32 * 64 + j % 32, j / 32 * 64 + 32 + j % 32); // (low, high) byte of element j
    let len = 64 * k.div_ceil(32);
    let mut units = vec![vec![0u8; len]; k];
    for (j, u) in units.iter_mut().enumerate() {
        let (lo, hi) = at(j);
        u[lo] = one as u8;
        u[hi] = (one >> 8) as u8;
    }
    let shard = |i: usize| from.iter().position(|&f| f == i).map(|j| units[j].as_slice());
    let data: Vec<Option<&[u8]>> = (0..k).map(shard).collect();
    let parity: Vec<Option<&[u8]>> = (k..k + p).map(shard).collect();
    let targets: Vec<usize> = (0..k).filter(|i| !from.contains(i)).collect();
    let mut outs = vec![vec![0u8; len]; targets.len()];
    {
        let mut restored: Vec<(usize, &mut [u8])> =
            targets.iter().zip(outs.iter_mut()).map(|(&i, o)| (i, o.as_mut_slice())).collect();
        if !decode(k, p, &data, &parity, &mut restored) {
            return None;
        }
    }
    let log = &tables::get_exp_log().log;
    Some(
        targets
            .into_iter()
            .zip(outs)
            .map(|(i, o)| {
                let kappa = (0..k).map(|j| {
                    let (lo, hi) = at(j);
                    GfElement::from(o[lo]) | GfElement::from(o[hi]) << 8
                });
                (i, kappa.map(|c| (c != 0).then(|| log[c as usize])).collect())
            })
            .collect(),
    )
}

/// Restores data shards from exactly k good shards of a `k + p` stripe: `from[j]` is the index
/// of `shards[j]` (parity numbered from k), every shard a multiple of 64 bytes long in the
/// crate's layout ([`pack`]). Each `restored` pair is (data index not in `from`, output).
/// Returns false if `from` is not k distinct valid indexes or a restored index is in it.
pub fn decode_packed(
    k: usize,
    p: usize,
    from: &[usize],
    shards: &[&[u8]],
    restored: &mut [(usize, &mut [u8])],
) -> bool {
    let mut sorted = from.to_vec();
    sorted.sort_unstable();
    sorted.dedup();
    if from.len() != k || sorted.len() != k || sorted.last().is_some_and(|&i| i >= k + p) {
        return false;
    }
    let key = (k, p, from.to_vec());
    let Some(coef) = COEFFICIENTS.with(|c| {
        let mut c = c.borrow_mut();
        if !c.contains_key(&key) {
            let v = coefficients(k, p, from)?;
            c.insert(key.clone(), v);
        }
        c.get(&key).cloned()
    }) else {
        return false;
    };
    let e = engine();
    SCRATCH.with(|scratch| {
        let mut tmp = scratch.borrow_mut();
        for (i, out) in restored.iter_mut() {
            let Some((_, logs)) = coef.iter().find(|(t, _)| t == i) else { return false };
            let (out, rest) = out.as_chunks_mut::<64>();
            debug_assert!(rest.is_empty(), "packed shards are multiples of 64 bytes");
            out.iter_mut().for_each(|c| *c = [0; 64]);
            for (j, log_m) in logs.iter().enumerate() {
                let Some(log_m) = *log_m else { continue };
                let (src, _) = shards[j].as_chunks::<64>();
                tmp.clear();
                tmp.extend_from_slice(src);
                e.mul(&mut tmp, log_m);
                utils::xor(out, &tmp);
            }
        }
        true
    })
}

/// Restores missing data shards of a `k + p` stripe.
///
/// `data[i]` / `parity[j]` are `Some` for shards known good. Every missing data shard is written
/// into `restored` (pairs of data index and output buffer). Returns false when fewer than `k`
/// shards are present.
pub fn decode(
    k: usize,
    p: usize,
    data: &[Option<&[u8]>],
    parity: &[Option<&[u8]>],
    restored: &mut [(usize, &mut [u8])],
) -> bool {
    let present = data.iter().chain(parity).filter(|s| s.is_some()).count();
    if present < k {
        return false;
    }
    if restored.is_empty() {
        return true;
    }
    let len = data.iter().chain(parity).flatten().next().map(|s| s.len()).unwrap_or(0);
    DECODER.with(|cell| {
        let mut slot = cell.borrow_mut();
        let dec = match slot.as_mut() {
            Some(d) => {
                d.reset(k, p, len).expect("valid codec parameters");
                d
            }
            None => slot.insert(ReedSolomonDecoder::new(k, p, len).expect("valid codec parameters")),
        };
        for (i, s) in data.iter().enumerate() {
            if let Some(s) = s {
                dec.add_original_shard(i, s).expect("shard accepted");
            }
        }
        for (j, s) in parity.iter().enumerate() {
            if let Some(s) = s {
                dec.add_recovery_shard(j, s).expect("shard accepted");
            }
        }
        let result = dec.decode().expect("decode with enough shards");
        for (i, out) in restored.iter_mut() {
            match result.restored_original(*i) {
                Some(src) => out.copy_from_slice(src),
                None => return false,
            }
        }
        true
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn shards(k: usize, len: usize, seed: u8) -> Vec<Vec<u8>> {
        (0..k).map(|i| (0..len).map(|j| (j as u8).wrapping_mul(31) ^ i as u8 ^ seed).collect()).collect()
    }

    #[test]
    fn any_p_losses_are_restored() {
        for (k, p) in [(1, 1), (2, 2), (4, 2), (3, 3), (6, 2)] {
            let len = 4080;
            let data = shards(k, len, 9);
            let mut parity = vec![vec![0u8; len]; p];
            {
                let d: Vec<&[u8]> = data.iter().map(|v| v.as_slice()).collect();
                let mut pr: Vec<&mut [u8]> = parity.iter_mut().map(|v| v.as_mut_slice()).collect();
                encode(&d, &mut pr);
            }
            // Every pattern of up to p lost shards among k + p.
            for mask in 0u32..(1 << (k + p)) {
                if mask.count_ones() as usize > p {
                    continue;
                }
                let lost = |i: usize| mask & (1 << i) != 0;
                let dv: Vec<Option<&[u8]>> = (0..k).map(|i| (!lost(i)).then(|| data[i].as_slice())).collect();
                let pv: Vec<Option<&[u8]>> = (0..p).map(|j| (!lost(k + j)).then(|| parity[j].as_slice())).collect();
                let mut outs: Vec<(usize, Vec<u8>)> =
                    (0..k).filter(|&i| lost(i)).map(|i| (i, vec![0u8; len])).collect();
                let mut r: Vec<(usize, &mut [u8])> = outs.iter_mut().map(|(i, v)| (*i, v.as_mut_slice())).collect();
                assert!(decode(k, p, &dv, &pv, &mut r), "k={k} p={p} mask={mask:b}");
                for (i, v) in &outs {
                    assert_eq!(v, &data[*i], "k={k} p={p} mask={mask:b} shard {i}");
                }
            }
        }
    }

    /// Stripes of different lengths packed into one long shard decode in one call to exactly
    /// what each would restore on its own.
    #[test]
    fn batched_decode_equals_one_call_per_stripe() {
        let (k, p) = (3, 2);
        let lens = [65024usize, 65520, 3584, 4080, 12272, 64, 2];
        type Stripe = (Vec<Vec<u8>>, Vec<Vec<u8>>); // (data, parity)
        let stripes: Vec<Stripe> = lens
            .iter()
            .enumerate()
            .map(|(i, &len)| {
                let data = shards(k, len, i as u8 * 17 + 1);
                let mut parity = vec![vec![0u8; len]; p];
                let d: Vec<&[u8]> = data.iter().map(|v| v.as_slice()).collect();
                let mut pr: Vec<&mut [u8]> = parity.iter_mut().map(|v| v.as_mut_slice()).collect();
                encode(&d, &mut pr);
                (data, parity)
            })
            .collect();
        // Lose data shards 0 and 2; keep data 1 and both parity shards.
        let total: usize = lens.iter().map(|&l| padded(l)).sum();
        let mut long: Vec<Vec<u8>> = vec![vec![0xEE; total]; k + p];
        let mut at = 0;
        for (data, parity) in &stripes {
            let seg = padded(data[0].len());
            pack(&mut long[1][at..at + seg], &data[1]);
            pack(&mut long[k][at..at + seg], &parity[0]);
            pack(&mut long[k + 1][at..at + seg], &parity[1]);
            at += seg;
        }
        let dv = [None, Some(long[1].as_slice()), None];
        let pv = [Some(long[k].as_slice()), Some(long[k + 1].as_slice())];
        let (mut r0, mut r2) = (vec![0u8; total], vec![0u8; total]);
        assert!(decode(k, p, &dv, &pv, &mut [(0, r0.as_mut_slice()), (2, r2.as_mut_slice())]));
        let mut at = 0;
        for (data, _) in &stripes {
            let len = data[0].len();
            let seg = padded(len);
            let (mut a, mut b) = (vec![0u8; len], vec![0u8; len]);
            unpack(&mut a, &r0[at..at + seg]);
            unpack(&mut b, &r2[at..at + seg]);
            assert_eq!(a, data[0], "len {len}");
            assert_eq!(b, data[2], "len {len}");
            at += seg;
        }
    }

    /// A whole encoded stripe: k data shards of `len` pseudo-random bytes, then p parity shards.
    fn stripe(k: usize, p: usize, len: usize, seed: u8) -> Vec<Vec<u8>> {
        let mut all = shards(k, len, seed);
        let mut parity = vec![vec![0u8; len]; p];
        {
            let d: Vec<&[u8]> = all.iter().map(|v| v.as_slice()).collect();
            let mut pr: Vec<&mut [u8]> = parity.iter_mut().map(|v| v.as_mut_slice()).collect();
            encode(&d, &mut pr);
        }
        all.extend(parity);
        all
    }

    /// Wide stripes (k > 32, up to the 64 devices a store may have): the coefficient path
    /// restores any lost data shards (it panicked past 32 before).
    #[test]
    fn decode_packed_restores_wide_stripes() {
        for (k, p) in [(33, 1), (40, 2), (62, 2)] {
            let len = 64 * 3;
            let stripe = stripe(k, p, len, 9);
            let (data, all) = (&stripe[..k], stripe.iter().map(|v| v.as_slice()).collect::<Vec<&[u8]>>());
            // Lose the first, a middle and the last data shards (as many as p allows).
            let lost: Vec<usize> = [0, 32, k - 1].into_iter().take(p).collect();
            let from: Vec<usize> = (0..k + p).filter(|i| !lost.contains(i)).take(k).collect();
            let src: Vec<&[u8]> = from.iter().map(|&i| all[i]).collect();
            let mut outs: Vec<Vec<u8>> = lost.iter().map(|_| vec![0xAB; len]).collect();
            let mut r: Vec<(usize, &mut [u8])> =
                lost.iter().zip(outs.iter_mut()).map(|(&i, o)| (i, o.as_mut_slice())).collect();
            assert!(decode_packed(k, p, &from, &src, &mut r), "k={k} p={p}");
            for (&i, o) in lost.iter().zip(&outs) {
                assert_eq!(o, &data[i], "k={k} p={p} shard {i}");
            }
        }
    }

    /// The coefficient path restores exactly what the decoder restores, for every choice of k
    /// source shards, on random-looking data.
    #[test]
    fn decode_packed_equals_the_decoder() {
        for (k, p) in [(1, 1), (2, 2), (2, 1), (4, 2), (3, 3), (6, 2)] {
            let len = 64 * 37;
            let stripe = stripe(k, p, len, 5);
            let (data, all) = (&stripe[..k], stripe.iter().map(|v| v.as_slice()).collect::<Vec<&[u8]>>());
            for mask in 0u32..(1 << (k + p)) {
                if mask.count_ones() as usize != k {
                    continue;
                }
                let from: Vec<usize> = (0..k + p).filter(|&i| mask & (1 << i) != 0).collect();
                let src: Vec<&[u8]> = from.iter().map(|&i| all[i]).collect();
                let lost: Vec<usize> = (0..k).filter(|i| !from.contains(i)).collect();
                let mut outs: Vec<Vec<u8>> = lost.iter().map(|_| vec![0xAB; len]).collect();
                let mut r: Vec<(usize, &mut [u8])> =
                    lost.iter().zip(outs.iter_mut()).map(|(&i, o)| (i, o.as_mut_slice())).collect();
                assert!(decode_packed(k, p, &from, &src, &mut r), "k={k} p={p} from={from:?}");
                for (&i, o) in lost.iter().zip(&outs) {
                    assert_eq!(o, &data[i], "k={k} p={p} from={from:?} shard {i}");
                }
            }
            if k > 1 {
                assert!(!decode_packed(k, p, &vec![0; k], &vec![all[0]; k], &mut []), "duplicate sources refused");
            }
        }
    }

    #[test]
    fn too_many_losses_is_refused() {
        let data = shards(2, 64, 1);
        let dv = [None, Some(data[1].as_slice())];
        let pv = [None];
        let mut out = vec![0u8; 64];
        assert!(!decode(2, 1, &dv, &pv, &mut [(0, out.as_mut_slice())]));
    }
}
