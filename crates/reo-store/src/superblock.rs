//! The superblock: the first 8 KiB of every device (two 4 KiB copies) say which store the device
//! belongs to, its position in the array, and the layout of the rest of the device.
//!
//! ```text
//! device: | superblock A (4 KiB) | superblock B (4 KiB) | journal | checkpoint A | checkpoint B | zone 0 | zone 1 | …
//! superblock: magic "REOSTOR1" | format u32 | store_id u64 | device_index u16 | devices u16 |
//!             device_len u64 | chunk u32 | zone u64 | zones u32 | journal_off u64 | journal_len u64 |
//!             ckpt_off u64 | ckpt_len u64 | data_off u64 | codec u32 | flags u32 | crc32c u32 (of all before)
//! ```
//!
//! `flags` (since format 3): bit 0 = *rebuilding*: this device replaced a failed one and its
//! chunks of blobs written before the replacement are not all rebuilt yet (see `resync.rs`).
//! Format [`FORMAT_VERSION`] is written and read. Older formats are refused with the reason
//! (their chunk trailers, column placement or records differ, see `decode`).

use crate::bytes::{Reader, Writer};
use crate::config::StoreConfig;
use crate::error::{Error, Result};
use reo_media::{AlignedBuf, Media};

/// Magic of the superblock.
pub const MAGIC: &[u8; 8] = b"REOSTOR1";
/// On-device format version; bumped on any incompatible change.
pub const FORMAT_VERSION: u32 = 9;
/// Superblock flag: the device is being rebuilt.
pub const FLAG_REBUILDING: u32 = 1;
/// Bytes of a superblock before its checksum (which covers them).
pub const SUPERBLOCK_BODY: usize = 8 + 4 + 8 + 2 + 2 + 8 + 4 + 8 + 4 + 8 * 5 + 4 + 4;
/// Bytes reserved for the two superblock copies.
pub const SUPERBLOCK_AREA: u64 = 8192;

/// Layout of every device of a store (identical on all devices but for the index).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Layout {
    /// Id of the store (from the clock and process id at format time; never 0), written on every
    /// member: a device with another id is not of this store.
    pub store_id: u64,
    /// Devices in the array (1 to 64).
    pub devices: u16,
    /// Bytes of each device the store uses: the shortest device's length at format time.
    pub device_len: u64,
    /// Chunk size in bytes (a multiple of 4 KiB, [`crate::MIN_CHUNK`] to [`crate::MAX_CHUNK`]).
    pub chunk: u32,
    /// Zone size in bytes (a multiple of `chunk`): one band's share of each device.
    pub zone: u64,
    /// Zones per device, which is the number of bands.
    pub zones: u32,
    /// Byte offset of the metadata journal on each device.
    pub journal_off: u64,
    /// Bytes of the journal region.
    pub journal_len: u64,
    /// Byte offset of checkpoint slot 0; slot 1 follows it.
    pub ckpt_off: u64,
    /// Bytes of one checkpoint slot.
    pub ckpt_len: u64,
    /// Byte offset of zone 0 (MiB-aligned when planned).
    pub data_off: u64,
    /// Id of the Reed-Solomon codec the parity was written with ([`crate::rs::CODEC_ID`]).
    pub codec: u32,
}

const MIB: u64 = 1 << 20;

impl Layout {
    /// Computes a fresh layout for `devices` devices of at least `device_len` bytes.
    pub fn plan(cfg: &StoreConfig, devices: usize, device_len: u64, store_id: u64) -> Result<Layout> {
        cfg.validate()?;
        if devices == 0 || devices > 64 {
            return Err(Error::Config(format!("a store needs 1 to 64 devices, got {devices}")));
        }
        let chunk = u64::from(cfg.chunk_size);
        let journal_len = cfg.journal_size.unwrap_or((device_len / 32).clamp(MIB, 256 * MIB) / 4096 * 4096);
        let ckpt_len = cfg.checkpoint_size.unwrap_or((device_len / 32).clamp(MIB, 1024 * MIB) / 4096 * 4096);
        let journal_off = SUPERBLOCK_AREA;
        let ckpt_off = journal_off + journal_len;
        let data_off = (ckpt_off + 2 * ckpt_len).div_ceil(MIB) * MIB;
        let room = device_len.saturating_sub(data_off);
        let zone = match cfg.zone_size {
            Some(z) => z,
            None => (64 * MIB).min(room / 16 / chunk * chunk).max(2 * chunk),
        };
        let zones = room / zone;
        if zones < 2 {
            return Err(Error::Config(format!(
                "devices of {device_len} bytes are too small: after {data_off} bytes of metadata they \
                 hold {zones} zones of {zone} bytes; at least 2 are needed (use larger devices or \
                 smaller zone, journal or checkpoint sizes)"
            )));
        }
        Ok(Layout {
            store_id,
            devices: devices as u16,
            device_len,
            chunk: chunk as u32,
            zone,
            zones: zones.min(u64::from(u32::MAX)) as u32,
            journal_off,
            journal_len,
            ckpt_off,
            ckpt_len,
            data_off,
            codec: crate::codec::CODEC_ID,
        })
    }

    /// Byte offset on each device of sector `sector` of band `band`.
    pub fn offset(&self, band: u32, sector: u64) -> u64 {
        self.data_off + u64::from(band) * self.zone + sector * 4096
    }

    /// Sectors per zone.
    pub fn zone_sectors(&self) -> u64 {
        self.zone / 4096
    }

    /// Offset of checkpoint slot 0 or 1.
    pub fn ckpt_slot(&self, slot: u64) -> u64 {
        self.ckpt_off + slot * self.ckpt_len
    }

    /// Encodes the superblock of device `index` (one 4 KiB block).
    pub fn encode(&self, index: u16) -> Vec<u8> {
        self.encode_flags(index, 0)
    }

    /// Writes both superblock copies of device `index` with `flags` to `media`, synced.
    pub(crate) fn write_superblocks(&self, media: &dyn Media, index: usize, flags: u32) -> std::io::Result<()> {
        let sb = self.encode_flags(index as u16, flags);
        let mut two = AlignedBuf::zeroed(8192);
        two[..4096].copy_from_slice(&sb);
        two[4096..].copy_from_slice(&sb);
        media.write_at(&two, 0)?;
        media.sync()
    }

    /// Encodes the superblock of device `index` with `flags`.
    pub fn encode_flags(&self, index: u16, flags: u32) -> Vec<u8> {
        let mut w = Writer::default();
        w.bytes(MAGIC)
            .u32(FORMAT_VERSION)
            .u64(self.store_id)
            .u16(index)
            .u16(self.devices)
            .u64(self.device_len)
            .u32(self.chunk)
            .u64(self.zone)
            .u32(self.zones)
            .u64(self.journal_off)
            .u64(self.journal_len)
            .u64(self.ckpt_off)
            .u64(self.ckpt_len)
            .u64(self.data_off)
            .u32(self.codec)
            .u32(flags);
        debug_assert_eq!(w.0.len(), SUPERBLOCK_BODY);
        let crc = crc32c::crc32c(&w.0);
        w.u32(crc);
        w.0.resize(4096, 0);
        w.0
    }

    /// Decodes a superblock: `Ok(None)` for a blank (all-zero magic) block, an error for a block
    /// that is neither blank nor a valid superblock of this format.
    pub fn decode(buf: &[u8]) -> std::result::Result<Option<(Layout, u16)>, String> {
        Ok(Self::decode_flags(buf)?.map(|(l, i, _)| (l, i)))
    }

    /// [`Layout::decode`], also returning the flags.
    pub fn decode_flags(buf: &[u8]) -> std::result::Result<Option<(Layout, u16, u32)>, String> {
        let mut r = Reader::new(buf);
        let magic = r.take(8).ok_or("truncated superblock")?;
        if magic.iter().all(|&b| b == 0) {
            return Ok(None);
        }
        if magic != MAGIC {
            return Err("not a Reo device (bad magic)".into());
        }
        let version = r.u32().ok_or("truncated superblock")?;
        if (2..FORMAT_VERSION).contains(&version) {
            // Format 4 moved each chunk's trailer into a 512-byte slot (`chunk.rs`); format 5
            // shifts a blob's columns by its data width from run to run (`geometry.rs`); format
            // 7 drops the slot from a blob's short last row and keeps its checksums in the
            // blob's record; format 8 narrows small blobs to the columns they need, in rows they
            // share; format 9 lets a `replicate` band hold the isolated copies small blobs kept
            // of themselves (`shed.rs`), which format 8 would replay as a band of another
            // scheme. The chunks of an older store would fail verification or be looked for on
            // the wrong devices, so it is refused as a whole.
            let what = match version {
                2 | 3 => "16-byte chunk trailers",
                4 => "columns rotated by one device",
                5 | 6 => "a trailer slot in every chunk",
                7 => "small blobs over whole rows",
                _ => "no shed copies in replicated bands",
            };
            return Err(format!(
                "format version {version} was written by an older reo ({what}); this build reads format \
                 {FORMAT_VERSION} only: flush its dirty data with the reo that wrote it, then reformat the devices \
                 (their contents are lost)"
            ));
        }
        if version != FORMAT_VERSION {
            return Err(format!(
                "format version {version} is not supported (this build reads format {FORMAT_VERSION})"
            ));
        }
        let t = "truncated superblock";
        let store_id = r.u64().ok_or(t)?;
        let index = r.u16().ok_or(t)?;
        let layout = Layout {
            store_id,
            devices: r.u16().ok_or(t)?,
            device_len: r.u64().ok_or(t)?,
            chunk: r.u32().ok_or(t)?,
            zone: r.u64().ok_or(t)?,
            zones: r.u32().ok_or(t)?,
            journal_off: r.u64().ok_or(t)?,
            journal_len: r.u64().ok_or(t)?,
            ckpt_off: r.u64().ok_or(t)?,
            ckpt_len: r.u64().ok_or(t)?,
            data_off: r.u64().ok_or(t)?,
            codec: r.u32().ok_or(t)?,
        };
        let flags = r.u32().ok_or(t)?;
        let body = r.position();
        let crc = r.u32().ok_or(t)?;
        if crc != crc32c::crc32c(&buf[..body]) {
            return Err("superblock checksum mismatch".into());
        }
        layout.sane().map_err(|e| format!("superblock describes an impossible layout: {e}"))?;
        if index >= layout.devices {
            return Err(format!("superblock: device index {index} of a {}-device store", layout.devices));
        }
        Ok(Some((layout, index, flags)))
    }

    /// Internal consistency, so a decoded layout can never drive I/O out of bounds.
    fn sane(&self) -> std::result::Result<(), String> {
        let chunk_ok = (crate::config::MIN_CHUNK..=crate::config::MAX_CHUNK).contains(&self.chunk)
            && self.chunk.is_multiple_of(4096);
        // In u128: a crafted superblock (with a valid checksum) must not overflow a sum.
        let wide = |v: u64| u128::from(v);
        let end = wide(self.zone) * u128::from(self.zones) + wide(self.data_off);
        if !chunk_ok
            || self.devices == 0
            || self.devices > 64
            || self.zone == 0
            || !self.zone.is_multiple_of(u64::from(self.chunk))
            || self.journal_off < SUPERBLOCK_AREA
            || wide(self.ckpt_off) < wide(self.journal_off) + wide(self.journal_len)
            || wide(self.data_off) < wide(self.ckpt_off) + 2 * wide(self.ckpt_len)
            || end > wide(self.device_len)
            || self.codec != crate::codec::CODEC_ID
        {
            return Err(format!("{self:?}"));
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    #[test]
    fn roundtrip_and_blank() {
        let l = Layout::plan(&StoreConfig::default(), 4, 1 << 30, 77).unwrap();
        let b = l.encode(2);
        assert_eq!(Layout::decode(&b).unwrap(), Some((l, 2)));
        assert_eq!(Layout::decode(&[0u8; 4096]).unwrap(), None);
        let mut bad = b.clone();
        bad[20] ^= 1;
        assert!(Layout::decode(&bad).is_err());
        assert!(l.zones >= 16);
        let f = l.encode_flags(1, FLAG_REBUILDING);
        assert_eq!(Layout::decode_flags(&f).unwrap(), Some((l, 1, FLAG_REBUILDING)));
    }

    /// `sb` with its format version replaced (and its checksum fixed).
    fn with_version(sb: &[u8], version: u32) -> Vec<u8> {
        let mut b = sb.to_vec();
        b[8..12].copy_from_slice(&version.to_le_bytes());
        let body = SUPERBLOCK_BODY;
        let crc = crc32c::crc32c(&b[..body]);
        b[body..body + 4].copy_from_slice(&crc.to_le_bytes());
        b
    }

    #[test]
    fn an_older_format_is_refused_with_a_reason() {
        let l = Layout::plan(&StoreConfig::default(), 4, 1 << 30, 77).unwrap();
        for old in 3u32..FORMAT_VERSION {
            let e = Layout::decode(&with_version(&l.encode(0), old)).unwrap_err();
            assert!(e.contains(&format!("format version {old}")) && e.contains("reformat"), "{e}");
        }
        let e = Layout::decode(&with_version(&l.encode(0), FORMAT_VERSION + 1)).unwrap_err();
        assert!(e.contains("not supported"), "{e}");
    }

    #[test]
    fn tiny_devices_are_refused_with_a_reason() {
        let e = Layout::plan(&StoreConfig::default(), 4, 2 << 20, 1).unwrap_err();
        assert!(e.to_string().contains("too small"), "{e}");
    }

    proptest! {
        #[test]
        fn decode_never_panics(bytes in proptest::collection::vec(any::<u8>(), 0..200)) {
            let _ = Layout::decode(&bytes);
        }

        /// Structure-aware: well-formed superblocks with a valid checksum and hostile fields
        /// (the checksum gates nothing an attacker who writes the device cannot compute). Decoding
        /// never panics, and whatever it accepts is a layout whose every area lies within the
        /// device, in order.
        #[test]
        fn checksummed_hostile_superblocks_decode_safely(
            f in proptest::collection::vec(any::<u64>(), 10),
            small in proptest::collection::vec(any::<u32>(), 4),
            index in any::<u16>(),
            devices in any::<u16>(),
            pick in proptest::collection::vec(0u8..4, 10),
        ) {
            // Each field is either hostile (any value) or one of a few edge values, so that the
            // sanity checks are reached with sums near their limits.
            let edge = |v: u64, p: u8| match p { 0 => v, 1 => u64::MAX - (v & 0xffff), 2 => v & 0xffff_ffff, _ => (v & 0xff) << 20 };
            let l = Layout {
                store_id: f[0],
                devices,
                device_len: edge(f[1], pick[1]),
                chunk: if pick[0] == 0 { small[0] } else { 1 << (12 + small[0] % 9) },
                zone: edge(f[2], pick[2]),
                zones: small[1],
                journal_off: edge(f[3], pick[3]),
                journal_len: edge(f[4], pick[4]),
                ckpt_off: edge(f[5], pick[5]),
                ckpt_len: edge(f[6], pick[6]),
                data_off: edge(f[7], pick[7]),
                codec: if pick[8] == 0 { small[2] } else { crate::codec::CODEC_ID },
            };
            if let Ok(Some((d, i, _))) = Layout::decode_flags(&l.encode_flags(index, small[3])) {
                prop_assert_eq!(d, l);
                prop_assert!(i < d.devices && d.devices <= 64);
                prop_assert!(d.journal_off >= SUPERBLOCK_AREA);
                prop_assert!(d.journal_off.checked_add(d.journal_len).is_some_and(|e| e <= d.ckpt_off));
                prop_assert!(d.ckpt_len.checked_mul(2).and_then(|c| c.checked_add(d.ckpt_off)).is_some_and(|e| e <= d.data_off));
                prop_assert!(d.zone.checked_mul(u64::from(d.zones)).and_then(|z| z.checked_add(d.data_off)).is_some_and(|e| e <= d.device_len));
            }
        }

        #[test]
        fn decode_never_panics_on_mutated_superblocks(pos in 0usize..120, val in any::<u8>(), cut in 0usize..4096) {
            let l = Layout::plan(&StoreConfig::default(), 3, 1 << 30, 5).unwrap();
            let mut b = l.encode(1);
            b[pos] = val;
            let _ = Layout::decode(&b[..cut]);
            let _ = Layout::decode(&b);
        }
    }
}
