//! [`ObjectEntry`]: the cache's DRAM state of one object, packed into 32 bytes.
//!
//! Per object the index keeps: the key (a [`ThinKey`]: the key bytes after a 2-byte length, behind
//! an 8-byte pointer), the location of its blob when the object is a single fragment (the common case), its
//! size, its read counter `Freq` (for the hot threshold H = Freq / Size), its class and its
//! dirty / pinned / referenced bits. ETag, content type and user metadata are *not* in DRAM: they
//! live in the blob header on flash (and in the backend), read only when a request needs them.
//! Multi-fragment objects keep their fragments' locations in the index's side table instead.
//!
//! Packing (two `u64` words next to the store sequence number):
//! * `place`: band (24 bits) | start sector (24) | device (8; 0xFF = all devices of the row) |
//!   scheme code (5) | has-blob (1) | fragmented (1) | class set by command (1);
//! * `state`: size (43 bits, < 8 TiB, S3's largest object is 5 TiB) | freq (16, saturating) |
//!   class (2) | dirty (1) | pinned (1) | referenced (1) | spare (0).

use reo_store::{Location, ROW_BAND};

use crate::thinkey::ThinKey;

/// Largest object size an entry can hold (8 TiB − 1).
pub const MAX_OBJECT_SIZE: u64 = (1 << 43) - 1;
/// Largest band number a packed location can hold.
pub const MAX_BAND: u32 = (1 << 24) - 1;
/// Largest start sector a packed location can hold (zones up to 64 GiB).
pub const MAX_START: u32 = (1 << 24) - 1;
/// Largest number of devices (the device byte's 0xFF means "row").
pub const MAX_DEVICES: usize = 255;
/// Number of distinct scheme codes (see `SchemeTable`).
pub const SCHEME_CODES: usize = 32;

/// Object classes of the Reo paper (docs/REFERENCES.md §P1, Table II): what the object's
/// redundancy depends on.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord, serde::Serialize)]
#[serde(rename_all = "kebab-case")]
pub enum Class {
    /// 0: system metadata.
    Metadata = 0,
    /// 1: dirty (write-back data not yet in the backend): the only copy.
    Dirty = 1,
    /// 2: hot clean data.
    Hot = 2,
    /// 3: cold clean data.
    Cold = 3,
}

impl Class {
    /// Every class, in code order (0–3).
    pub const ALL: [Class; 4] = [Class::Metadata, Class::Dirty, Class::Hot, Class::Cold];

    /// The class whose code is the low 2 bits of `b` (the other bits are ignored).
    pub fn from_bits(b: u64) -> Class {
        Class::ALL[(b & 3) as usize]
    }

    /// Stable lower-case name (`metadata`, `dirty`, `hot`, `cold`).
    pub fn as_str(self) -> &'static str {
        match self {
            Class::Metadata => "metadata",
            Class::Dirty => "dirty",
            Class::Hot => "hot",
            Class::Cold => "cold",
        }
    }
}

const BAND_SHIFT: u32 = 0;
const START_SHIFT: u32 = 24;
const DEV_SHIFT: u32 = 48;
const SCHEME_SHIFT: u32 = 56;
const HAS_BLOB: u64 = 1 << 61;
const FRAGMENTED: u64 = 1 << 62;
const EXPLICIT: u64 = 1 << 63;

const SIZE_MASK: u64 = MAX_OBJECT_SIZE;
const FREQ_SHIFT: u32 = 43;
const CLASS_SHIFT: u32 = 59;
const DIRTY: u64 = 1 << 61;
const PINNED: u64 = 1 << 62;
const REFERENCED: u64 = 1 << 63;

/// A blob location in 16 bytes: the store's sequence number and the packed place word. The scheme
/// is a code into the manager's scheme table; the length is known from the object's size.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct PackedLoc {
    /// The store's sequence number of the blob.
    pub seq: u64,
    /// band | start | device | scheme code (the `place` layout's low 61 bits).
    pub place: u64,
}

impl PackedLoc {
    /// Packs `loc` whose scheme has code `scheme`. `None` if a field exceeds its width (checked
    /// against the store's layout at open, so this only fails on a broken invariant).
    pub fn pack(loc: &Location, scheme: u8) -> Option<PackedLoc> {
        if loc.band > MAX_BAND || loc.start > MAX_START || (scheme as usize) >= SCHEME_CODES {
            return None;
        }
        let dev = if loc.device == ROW_BAND {
            0xFF
        } else if (loc.device as usize) < MAX_DEVICES {
            u64::from(loc.device)
        } else {
            return None;
        };
        let place = u64::from(loc.band) << BAND_SHIFT
            | u64::from(loc.start) << START_SHIFT
            | dev << DEV_SHIFT
            | u64::from(scheme) << SCHEME_SHIFT;
        Some(PackedLoc { seq: loc.seq, place })
    }

    /// The code of the blob's scheme in the manager's scheme table (< [`SCHEME_CODES`]).
    pub fn scheme_code(&self) -> u8 {
        ((self.place >> SCHEME_SHIFT) & 31) as u8
    }

    /// The store location, given the scheme the code names and the blob's length.
    pub fn unpack(&self, scheme: reo_store::Scheme, len: u64) -> Location {
        let dev = (self.place >> DEV_SHIFT) & 0xFF;
        Location {
            seq: self.seq,
            band: ((self.place >> BAND_SHIFT) & u64::from(MAX_BAND)) as u32,
            start: ((self.place >> START_SHIFT) & u64::from(MAX_START)) as u32,
            device: if dev == 0xFF { ROW_BAND } else { dev as u16 },
            scheme,
            len,
        }
    }
}

/// One object's DRAM state (32 bytes). See the module documentation for the layout.
#[derive(Debug, Clone)]
pub struct ObjectEntry {
    key: ThinKey,
    seq: u64,
    place: u64,
    state: u64,
}

impl ObjectEntry {
    /// A new entry: `size` bytes, class `class`, no blob yet, counters at zero.
    pub fn new(key: &[u8], size: u64, class: Class) -> ObjectEntry {
        debug_assert!(size <= MAX_OBJECT_SIZE);
        ObjectEntry {
            key: ThinKey::new(key),
            seq: 0,
            place: 0,
            state: (size & SIZE_MASK) | (class as u64) << CLASS_SHIFT,
        }
    }

    /// The object's key.
    pub fn key(&self) -> &[u8] {
        &self.key
    }

    /// Object size in bytes.
    pub fn size(&self) -> u64 {
        self.state & SIZE_MASK
    }

    /// Sets the size in bytes; only the low 43 bits are kept, so keep it ≤ [`MAX_OBJECT_SIZE`].
    pub fn set_size(&mut self, size: u64) {
        self.state = (self.state & !SIZE_MASK) | (size & SIZE_MASK);
    }

    /// Reads since the object entered the cache (saturating at 65,535).
    pub fn freq(&self) -> u32 {
        ((self.state >> FREQ_SHIFT) & 0xFFFF) as u32
    }

    /// Sets Freq, saturating at 65,535.
    pub fn set_freq(&mut self, f: u32) {
        self.state = (self.state & !(0xFFFF << FREQ_SHIFT)) | (u64::from(f.min(0xFFFF)) << FREQ_SHIFT);
    }

    /// Counts one read and marks the entry referenced (GC-based eviction's second chance).
    pub fn touch(&mut self) {
        self.set_freq(self.freq().saturating_add(1));
        self.state |= REFERENCED;
    }

    /// The object's class.
    pub fn class(&self) -> Class {
        Class::from_bits(self.state >> CLASS_SHIFT)
    }

    /// Sets the class (this entry's bits only: the blobs are not moved).
    pub fn set_class(&mut self, c: Class) {
        self.state = (self.state & !(3 << CLASS_SHIFT)) | (c as u64) << CLASS_SHIFT;
    }

    fn flag(&self, f: u64) -> bool {
        self.state & f != 0
    }

    fn set_flag(&mut self, f: u64, on: bool) {
        if on {
            self.state |= f
        } else {
            self.state &= !f
        }
    }

    /// Holds acknowledged writes not yet on the backend (the only copy).
    pub fn dirty(&self) -> bool {
        self.flag(DIRTY)
    }

    /// Sets or clears the dirty bit.
    pub fn set_dirty(&mut self, on: bool) {
        self.set_flag(DIRTY, on)
    }

    /// Under a lease (pin): not evicted until the lease ends.
    pub fn pinned(&self) -> bool {
        self.flag(PINNED)
    }

    /// Sets or clears the pinned bit (the lease itself is kept by the manager).
    pub fn set_pinned(&mut self, on: bool) {
        self.set_flag(PINNED, on)
    }

    /// Read since it was written or last kept by the cleaner (GC-based eviction's second chance).
    pub fn referenced(&self) -> bool {
        self.flag(REFERENCED)
    }

    /// Sets or clears the referenced bit.
    pub fn set_referenced(&mut self, on: bool) {
        self.set_flag(REFERENCED, on)
    }

    /// True when the object is cut into several fragments (locations in the side table).
    pub fn fragmented(&self) -> bool {
        self.place & FRAGMENTED != 0
    }

    /// Marks the object as cut into several fragments (or not).
    pub fn set_fragmented(&mut self, on: bool) {
        if on {
            self.place |= FRAGMENTED
        } else {
            self.place &= !FRAGMENTED
        }
    }

    /// The blob of a single-fragment object, if cached.
    pub fn blob(&self) -> Option<PackedLoc> {
        (self.place & HAS_BLOB != 0).then_some(PackedLoc { seq: self.seq, place: self.place & (HAS_BLOB - 1) })
    }

    /// The class was set by a classification command (`#SETID#`): hotness does not change it.
    pub fn explicit_class(&self) -> bool {
        self.place & EXPLICIT != 0
    }

    /// Sets or clears the explicit-class bit (see [`ObjectEntry::explicit_class`]).
    pub fn set_explicit_class(&mut self, on: bool) {
        if on {
            self.place |= EXPLICIT
        } else {
            self.place &= !EXPLICIT
        }
    }

    /// Sets the single-fragment blob's location (`None`: no blob), keeping the fragmented and
    /// explicit-class bits.
    pub fn set_blob(&mut self, loc: Option<PackedLoc>) {
        let keep = self.place & (FRAGMENTED | EXPLICIT);
        match loc {
            Some(l) => {
                self.seq = l.seq;
                self.place = l.place | HAS_BLOB | keep;
            }
            None => {
                self.seq = 0;
                self.place = keep;
            }
        }
    }

    /// H = Freq / Size (reads per byte), the Reo paper §IV.C.1.
    pub fn hotness(&self) -> f64 {
        f64::from(self.freq()) / self.size().max(1) as f64
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use reo_store::{Placement, Scheme};

    #[test]
    fn entry_is_thirty_two_bytes() {
        assert_eq!(std::mem::size_of::<ObjectEntry>(), 32);
        assert_eq!(std::mem::size_of::<Option<ObjectEntry>>(), 32);
    }

    #[test]
    fn fields_do_not_overlap() {
        let mut e = ObjectEntry::new(b"k", MAX_OBJECT_SIZE, Class::Cold);
        e.set_freq(70_000);
        e.set_dirty(true);
        e.set_pinned(true);
        e.set_class(Class::Hot);
        e.set_fragmented(true);
        let loc = Location {
            seq: u64::MAX - 1,
            band: MAX_BAND,
            start: MAX_START,
            device: 254,
            scheme: Scheme::None(Placement::Isolated),
            len: 9,
        };
        e.set_blob(PackedLoc::pack(&loc, 31));
        assert_eq!(e.size(), MAX_OBJECT_SIZE);
        assert_eq!(e.freq(), 0xFFFF);
        assert!(e.dirty() && e.pinned() && !e.referenced() && e.fragmented());
        assert_eq!(e.class(), Class::Hot);
        let b = e.blob().unwrap();
        assert_eq!(b.scheme_code(), 31);
        assert_eq!(b.unpack(loc.scheme, 9), loc);
        e.touch();
        e.set_dirty(false);
        e.set_size(5);
        assert!(e.referenced() && !e.dirty() && e.pinned() && e.fragmented() && e.size() == 5);
        e.set_explicit_class(true);
        e.set_blob(None);
        assert!(e.blob().is_none() && e.fragmented() && e.explicit_class());
        e.set_blob(PackedLoc::pack(&loc, 3));
        assert!(e.explicit_class() && e.blob().unwrap().scheme_code() == 3);
        let row = Location { device: ROW_BAND, ..loc };
        assert_eq!(PackedLoc::pack(&row, 0).unwrap().unpack(loc.scheme, 9), row);
        assert!(PackedLoc::pack(&Location { band: MAX_BAND + 1, ..loc }, 0).is_none());
        assert!(PackedLoc::pack(&loc, 32).is_none());
    }
}
