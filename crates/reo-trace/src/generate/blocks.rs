//! What the block generators (dedup, scan, oltp) share: Poisson arrival clock and the request
//! of one fixed-size block.

use crate::hash::block_key;
use crate::request::{Op, Request};
use reo_media::rng::Xoshiro256pp;

/// Poisson arrivals at `rate` requests per second.
#[derive(Debug, Clone)]
pub struct Arrivals {
    rate: f64,
    now_s: f64,
}

impl Arrivals {
    pub fn new(rate: f64) -> Self {
        Arrivals { rate, now_s: 0.0 }
    }

    /// The next arrival time in ns.
    pub fn next_ns(&mut self, rng: &mut Xoshiro256pp) -> u64 {
        self.now_s += rng.exp(self.rate);
        (self.now_s * 1e9) as u64
    }
}

/// The whole-block request of block `block` of `volume`.
pub fn block_request(time_ns: u64, op: Op, volume: u64, block: u64, block_size: u64, fp: Option<u64>) -> Request {
    Request {
        time_ns,
        op,
        key: block_key(volume, block),
        offset: 0,
        len: block_size,
        obj_size: block_size,
        fingerprint: fp,
    }
}
