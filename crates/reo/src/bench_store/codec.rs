//! The Reed-Solomon codec alone, on one stripe of the benchmark's rs scheme, shards the size of a
//! chunk body (chunk − 512-byte trailer slot), each operation repeated for about half a second. Rates
//! are data bytes (k shards) per second.
//!
//! - encode: `reo_store::rs::encode`, as a put does per stripe;
//! - decode (the JSON figure): data shard 0 lost and rebuilt the way a degraded read does it,
//!   the k source shards packed, combined with the cached coefficients of their pattern
//!   (`decode_packed`) and the result unpacked;
//! - the crate's own decoder on the same stripe (`reo_store::rs::decode`, about 190 µs fixed per
//!   call), printed for comparison.

use super::raw::fill;
use super::{progress, Plan};
use reo_store::rs::{decode, decode_packed, encode, pack, padded, unpack};
use reo_store::{Scheme, CHUNK_SLOT};
use std::time::Instant;

/// Seconds each of encode and decode runs for.
const SECONDS: f64 = 0.5;
const GIB: f64 = (1u64 << 30) as f64;

/// Calls `f` until `SECONDS` have passed; returns calls per second.
fn rate(mut f: impl FnMut()) -> f64 {
    let t0 = Instant::now();
    let mut calls = 0u64;
    loop {
        for _ in 0..16 {
            f();
        }
        calls += 16;
        let secs = t0.elapsed().as_secs_f64();
        if secs >= SECONDS {
            return calls as f64 / secs;
        }
    }
}

/// Returns (encode GiB/s, decode GiB/s) of data bytes.
pub fn run(plan: &Plan) -> Result<(f64, f64), String> {
    let Scheme::Rs { k, p } = plan.rs else { return Err("bench store: codec: not an rs scheme".into()) };
    let (k, p) = (k as usize, p as usize);
    let len = plan.chunk as usize - CHUNK_SLOT; // shards are chunk bodies
    let data: Vec<Vec<u8>> = (0..k)
        .map(|i| {
            let mut v = vec![0u8; len];
            fill(&mut v, 3000 + i as u64);
            v
        })
        .collect();
    let mut parity = vec![vec![0u8; len]; p];
    let shards: Vec<&[u8]> = data.iter().map(|v| v.as_slice()).collect();
    let enc = rate(|| {
        let mut outs: Vec<&mut [u8]> = parity.iter_mut().map(|v| v.as_mut_slice()).collect();
        encode(&shards, &mut outs);
    });

    // Lose data shard 0; rebuild it from the other k − 1 data shards and parity shard 0.
    let present: Vec<Option<&[u8]>> = (0..k).map(|i| (i != 0).then(|| data[i].as_slice())).collect();
    let par: Vec<Option<&[u8]>> = (0..p).map(|j| (j == 0).then(|| parity[j].as_slice())).collect();
    let mut out = vec![0u8; len];
    let mut ok = true;
    let crate_dec = rate(|| ok &= decode(k, p, &present, &par, &mut [(0, out.as_mut_slice())]));
    if !ok || out != data[0] {
        return Err("bench store: codec: decode restored WRONG BYTES".into());
    }
    // The store's path: sources 1..k and parity 0, packed; restore 0; unpack.
    let seg = padded(len);
    let from: Vec<usize> = (1..k).chain([k]).collect();
    let mut packed = vec![vec![0u8; seg]; k];
    let mut restored = vec![0u8; seg];
    out.fill(0);
    let dec = rate(|| {
        for (buf, &i) in packed.iter_mut().zip(&from) {
            pack(buf, if i < k { &data[i] } else { &parity[i - k] });
        }
        let src: Vec<&[u8]> = packed.iter().map(|v| v.as_slice()).collect();
        ok &= decode_packed(k, p, &from, &src, &mut [(0, restored.as_mut_slice())]);
        unpack(&mut out, &restored);
    });
    if !ok || out != data[0] {
        return Err("bench store: codec: packed decode restored WRONG BYTES".into());
    }
    let bytes = (k * len) as f64;
    let (e, d, c) = (enc * bytes / GIB, dec * bytes / GIB, crate_dec * bytes / GIB);
    progress(format_args!(
        "codec rs({k},{p}) on {len}-byte shards: encode {e:.2} GiB/s, decode {d:.2} GiB/s (the crate's decoder \
         call: {c:.2} GiB/s)"
    ));
    Ok((e, d))
}
