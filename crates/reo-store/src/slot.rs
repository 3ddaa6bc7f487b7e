//! [`Slot`]: a device position in the array whose media can be swapped by `replace_device`.
//!
//! Every I/O of the store goes through a slot, which forwards it to the media currently installed.
//! The forwarding costs one uncontended read lock per I/O; a replacement takes the write lock for
//! the instant of the swap.

use reo_media::Media;
use std::io;
use std::sync::{Arc, RwLock};

/// One device position.
pub(crate) struct Slot {
    media: RwLock<Arc<dyn Media>>,
}

impl Slot {
    pub fn new(media: Arc<dyn Media>) -> Slot {
        Slot { media: RwLock::new(media) }
    }

    /// The media currently installed.
    pub fn get(&self) -> Arc<dyn Media> {
        self.media.read().unwrap_or_else(|e| e.into_inner()).clone()
    }

    /// Installs `media` in place of the current one.
    pub fn swap(&self, media: Arc<dyn Media>) {
        *self.media.write().unwrap_or_else(|e| e.into_inner()) = media;
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
