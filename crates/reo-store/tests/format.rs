//! On-device format versions: a store of an older format is refused with a message naming its
//! version, and left untouched.

mod common;

use common::{content, devices, open, small_config};
use reo_media::Media;
use reo_store::{Durability, PutOptions, Scheme, FORMAT_VERSION};

/// Bytes of a superblock before its checksum (see `superblock.rs`).
const BODY: usize = 96;

/// The format version in each of the two superblock copies of `d`.
fn versions(d: &dyn Media) -> [u32; 2] {
    let mut b = vec![0u8; 8192];
    d.read_at(&mut b, 0).unwrap();
    [0, 4096].map(|o| u32::from_le_bytes(b[o + 8..o + 12].try_into().unwrap()))
}

/// Rewrites both superblock copies of `d` as format `version` (checksums fixed).
fn set_version(d: &dyn Media, version: u32) {
    let mut b = vec![0u8; 8192];
    d.read_at(&mut b, 0).unwrap();
    for o in [0, 4096] {
        b[o + 8..o + 12].copy_from_slice(&version.to_le_bytes());
        let crc = crc32c::crc32c(&b[o..o + BODY]);
        b[o + BODY..o + BODY + 4].copy_from_slice(&crc.to_le_bytes());
    }
    d.write_at(&b, 0).unwrap();
    d.sync().unwrap();
}

#[test]
fn an_older_format_store_is_refused_naming_its_version_and_left_intact() {
    let cfg = small_config();
    let devs = devices(4, 16 << 20);
    let store = open(&devs, &cfg);
    let opts = PutOptions::new(Scheme::Rs { k: 2, p: 2 }).durability(Durability::Sync);
    let blobs: Vec<_> = (0..8)
        .map(|i| {
            let data = content(i, 30_000);
            (store.put(b"h", &data, &opts).unwrap(), data)
        })
        .collect();
    store.close().unwrap();
    for d in &devs {
        assert_eq!(versions(d.as_ref()), [FORMAT_VERSION; 2]);
    }
    // Format 8 had no shed copies in replicated bands, 7 put small blobs over whole rows, 6 kept
    // a trailer slot in every chunk, 4 rotated columns by one device: their chunks would not
    // verify or be looked for on the wrong devices (and an 8 reading a 9 would turn a band of
    // dirty replicas into an isolated one), so the store is refused, not misread, and not
    // written to.
    for old in [8, 7, 6, 4] {
        for d in &devs {
            set_version(d.as_ref(), old);
        }
        let e = reo_store::Store::open(common::as_media(&devs), &cfg).err().expect("older format refused").to_string();
        assert!(e.contains(&format!("format version {old}")) && e.contains("reformat"), "{e}");
        for d in &devs {
            assert_eq!(versions(d.as_ref()), [old; 2], "a refused store is left as it was");
        }
    }
    // Written back as the current format (what the devices really hold), it opens exact.
    for d in &devs {
        set_version(d.as_ref(), FORMAT_VERSION);
    }
    let store = open(&devs, &cfg);
    for (loc, data) in &blobs {
        assert_eq!(&store.read_all(loc).unwrap(), data);
    }
}
