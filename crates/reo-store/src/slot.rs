//! [`Slot`]: a device position in the array whose media can be swapped by `replace_device`.
//!
//! Every I/O of the store goes through a slot, which forwards it to the media currently installed.
//! The forwarding costs one uncontended read lock per I/O; a replacement takes the write lock for
//! the instant of the swap.
//!
//! Each swap bumps the slot's *generation*. A read records it when it is queued and charges an
//! error or checksum failure to the device only if the generation is unchanged when the read is
//! finished: a read that straddled a replacement may have run on the old media (a hung device's
//! read failing long after the admin replaced it), and its failure is not the new device's.

use parking_lot::RwLock;
use reo_media::Media;
use std::io;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;

/// One device position.
pub(crate) struct Slot {
    media: RwLock<Arc<dyn Media>>,
    /// Media swapped in so far.
    generation: AtomicU64,
}

impl Slot {
    pub fn new(media: Arc<dyn Media>) -> Slot {
        Slot { media: RwLock::new(media), generation: AtomicU64::new(0) }
    }

    /// The media currently installed.
    pub fn get(&self) -> Arc<dyn Media> {
        self.media.read().clone()
    }

    /// Installs `media` in place of the current one.
    pub fn swap(&self, media: Arc<dyn Media>) {
        let mut m = self.media.write();
        *m = media;
        self.generation.fetch_add(1, Ordering::SeqCst);
    }

    /// How many times media was swapped in (see the module doc).
    pub fn generation(&self) -> u64 {
        self.generation.load(Ordering::SeqCst)
    }
}

impl Media for Slot {
    fn len(&self) -> u64 {
        self.get().len()
    }

    fn read_at(&self, buf: &mut [u8], offset: u64) -> io::Result<()> {
        self.get().read_at(buf, offset)
    }

    fn write_at(&self, buf: &[u8], offset: u64) -> io::Result<()> {
        self.get().write_at(buf, offset)
    }

    fn write_vectored_at(&self, parts: &[&[u8]], offset: u64) -> io::Result<()> {
        self.get().write_vectored_at(parts, offset)
    }

    fn vector_align(&self) -> usize {
        self.get().vector_align()
    }

    fn sync(&self) -> io::Result<()> {
        self.get().sync()
    }

    fn stores_bytes(&self) -> bool {
        self.get().stores_bytes()
    }

    fn describe(&self) -> String {
        self.get().describe()
    }

    fn read_discard(&self, len: usize, offset: u64) -> io::Result<()> {
        self.get().read_discard(len, offset)
    }

    fn write_zeros(&self, len: usize, offset: u64) -> io::Result<()> {
        self.get().write_zeros(len, offset)
    }
}
