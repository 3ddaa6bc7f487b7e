//! Reo's device layer: the [`Media`] trait every device implements, and its implementations.
//!
//! A device is a flat byte space addressed by offset. The store above issues positional reads and
//! writes (4 KiB aligned in offset and length, so that O_DIRECT works) and calls [`Media::sync`]
//! (fdatasync) at its durability points.
//!
//! Implementations:
//! - [`FileMedia`]: a regular file or a block device, optionally with O_DIRECT;
//! - [`MemMedia`]: real bytes in memory (fast tests);
//! - [`SimMedia`]: stores no bytes but accounts every read, write and sync exactly (the simulator);
//! - [`FaultyMedia`]: wraps any media and injects faults: fail-stop, I/O error at the Nth
//!   operation, power cut (drop / tear / reorder unsynced writes), silent bit flips, slowness;
//! - [`AbsentMedia`]: a configured device that is missing: every I/O fails (it opens as failed).
//!
//! [`IoPool`] runs per-device I/O in parallel, [`ReadLanes`] queues reads per device;
//! [`AlignedBuf`] is the aligned buffer type O_DIRECT needs. [`rng`] holds the seeded random
//! generators of every crate (fault injection here; traces, admission and simulation above).

mod absent;
mod aligned;
mod faulty;
mod file;
mod lanes;
mod mem;
mod pool;
pub mod rng;
mod sim;
mod stream;

pub use absent::AbsentMedia;
pub use aligned::{AlignedBuf, ALIGN};
pub use faulty::{FaultyMedia, OpKind, PowerCut};
pub use file::{FileMedia, FileOptions};
pub use lanes::{Completion, ReadBatch, ReadLanes, Waited};
pub use mem::MemMedia;
pub use pool::IoPool;
pub use sim::{MediaStats, SimMedia};
pub use stream::copy_streaming;

use std::io;

/// One device: a flat, fixed-size byte space with positional I/O and a durability barrier.
///
/// All methods take `&self`: a device is shared by many threads, and implementations must allow
/// concurrent reads and writes to disjoint ranges.
pub trait Media: Send + Sync {
    /// Usable size in bytes.
    fn len(&self) -> u64;

    /// True when the device has no usable bytes.
    fn is_empty(&self) -> bool {
        self.len() == 0
    }

    /// Reads exactly `buf.len()` bytes at `offset`. A short device is an error.
    fn read_at(&self, buf: &mut [u8], offset: u64) -> io::Result<()>;

    /// Writes all of `buf` at `offset`. Not durable until [`Media::sync`] returns.
    fn write_at(&self, buf: &[u8], offset: u64) -> io::Result<()>;

    /// Writes the concatenation of `parts` at `offset`, as one device write. Not durable until
    /// [`Media::sync`] returns. The default gathers the parts into one buffer.
    fn write_vectored_at(&self, parts: &[&[u8]], offset: u64) -> io::Result<()> {
        self.write_at(&parts.concat(), offset)
    }

    /// The alignment, of address and of length, that every part of a
    /// [`Media::write_vectored_at`] needs for the device to take it straight from the caller's
    /// memory (no bounce copy); 1 when any part does. Parts that miss it are still written, by a
    /// copy.
    fn vector_align(&self) -> usize {
        1
    }

    /// Makes every write that returned before this call durable (fdatasync).
    fn sync(&self) -> io::Result<()>;

    /// False for media that keep no bytes (simulation): reads return zeros and the store skips
    /// checksum verification.
    fn stores_bytes(&self) -> bool {
        true
    }

    /// A short human-readable name (path, "mem", "sim") for messages.
    fn describe(&self) -> String;

    /// Reads `len` bytes at `offset` and discards them: the I/O of a read whose bytes nobody
    /// needs (the simulator's sized reads). Byte-less media only count it; others really read
    /// (so errors are real), through a scratch buffer.
    fn read_discard(&self, len: usize, offset: u64) -> io::Result<()> {
        let mut scratch = vec![0u8; len];
        self.read_at(&mut scratch, offset)
    }

    /// Writes `len` zero bytes at `offset`: the I/O of a write whose contents do not matter (the
    /// simulator's sized writes). Byte-less media only count it; others really write zeros.
    fn write_zeros(&self, len: usize, offset: u64) -> io::Result<()> {
        self.write_at(&vec![0u8; len], offset)
    }
}

/// Checks that `[offset, offset + len)` lies within a device of `size` bytes.
pub(crate) fn check_range(size: u64, offset: u64, len: usize) -> io::Result<()> {
    match offset.checked_add(len as u64) {
        Some(end) if end <= size => Ok(()),
        _ => Err(io::Error::new(
            io::ErrorKind::InvalidInput,
            format!("I/O at offset {offset} length {len} is beyond the device end ({size} bytes)"),
        )),
    }
}
