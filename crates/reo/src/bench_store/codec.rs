//! The Reed-Solomon codec alone: `reo_store::rs::encode` and `decode` on one stripe of the
//! benchmark's rs scheme, shards the size of a chunk body (chunk − 16-byte trailer), repeated for
//! about half a second each. Rates are data bytes (k shards) per second.

use super::raw::fill;
use super::{progress, Plan};
use reo_store::rs::{decode, encode};
use reo_store::Scheme;
use std::time::Instant;

/// Bytes of the chunk trailer: shards are chunk bodies.
const TRAILER: usize = 16;
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
    let len = plan.chunk as usize - TRAILER;
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
    let dec = rate(|| ok &= decode(k, p, &present, &par, &mut [(0, out.as_mut_slice())]));
    if !ok || out != data[0] {
        return Err("bench store: codec: decode restored WRONG BYTES".into());
    }
    let bytes = (k * len) as f64;
    let (e, d) = (enc * bytes / GIB, dec * bytes / GIB);
    progress(format_args!("codec rs({k},{p}) on {len}-byte shards: encode {e:.2} GiB/s, decode {d:.2} GiB/s"));
    Ok((e, d))
}
