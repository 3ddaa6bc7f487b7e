//! Shared test fixtures: small stores over in-memory devices wrapped in fault injectors.
#![allow(dead_code)]

use reo_media::{FaultyMedia, Media, MemMedia};
use reo_store::{Placement, Scheme, Store, StoreConfig};
use std::sync::Arc;

/// A small-geometry config: 16 KiB chunks, 256 KiB zones, small metadata regions.
pub fn small_config() -> StoreConfig {
    StoreConfig {
        chunk_size: 16 << 10,
        zone_size: Some(256 << 10),
        journal_size: Some(256 << 10),
        checkpoint_size: Some(512 << 10),
        io_threads: Some(4),
        create: true,
        ..Default::default()
    }
}

/// `n` fault-injecting in-memory devices of `len` bytes.
pub fn devices(n: usize, len: u64) -> Vec<Arc<FaultyMedia>> {
    (0..n).map(|_| Arc::new(FaultyMedia::new(Arc::new(MemMedia::new(len))))).collect()
}

pub fn as_media(devs: &[Arc<FaultyMedia>]) -> Vec<Arc<dyn Media>> {
    devs.iter().map(|d| d.clone() as Arc<dyn Media>).collect()
}

/// Opens (or formats) a store over `devs`.
pub fn open(devs: &[Arc<FaultyMedia>], cfg: &StoreConfig) -> Store {
    Store::open(as_media(devs), cfg).expect("open store").0
}

/// Deterministic content for blob `id` of `len` bytes.
pub fn content(id: u64, len: usize) -> Vec<u8> {
    let mut x = id.wrapping_mul(0x9E37_79B9_7F4A_7C15) ^ 0xD1B5_4A32_D192_ED03;
    (0..len)
        .map(|_| {
            x ^= x << 13;
            x ^= x >> 7;
            x ^= x << 17;
            x as u8
        })
        .collect()
}

/// Every scheme worth testing over `n` devices.
pub fn schemes(n: usize) -> Vec<Scheme> {
    let mut v = vec![Scheme::None(Placement::Isolated), Scheme::None(Placement::Striped)];
    for r in 2..=n as u8 {
        v.push(Scheme::Replicate(r));
    }
    for p in 1..n as u8 {
        for k in 1..=(n as u8 - p) {
            if k == 1 || k + p == n as u8 || (k, p) == (2, 1) {
                v.push(Scheme::Rs { k, p });
            }
        }
    }
    v
}

/// Sizes that exercise empty, sub-chunk, exact-row and multi-row blobs.
pub const SIZES: &[usize] = &[0, 1, 100, 3584, 3585, 4080, 4081, 15_872, 16_368, 40_000, 100_000, 200_000];
