//! FileMedia on a real block device: a loop device over a file, when the machine allows one
//! (root and a working `losetup`); the test skips cleanly, saying why, where it does not.

use reo_media::{AlignedBuf, FileMedia, FileOptions, Media};
use std::path::Path;
use std::process::Command;

struct Loop(String);

impl Drop for Loop {
    fn drop(&mut self) {
        let _ = Command::new("losetup").args(["-d", &self.0]).status();
    }
}

fn attach(image: &Path, sector: u32) -> Option<Loop> {
    let out = Command::new("losetup")
        .args(["-f", "--show", "--sector-size", &sector.to_string()])
        .arg(image)
        .output()
        .ok()?;
    if !out.status.success() {
        eprintln!("skipping: losetup failed: {}", String::from_utf8_lossy(&out.stderr).trim());
        return None;
    }
    Some(Loop(String::from_utf8_lossy(&out.stdout).trim().to_string()))
}

#[test]
fn block_device_size_direct_io_and_sync() {
    let tmp = tempfile::TempDir::new().unwrap();
    let image = tmp.path().join("loop.img");
    std::fs::File::create(&image).unwrap().set_len(64 << 20).unwrap();
    for sector in [512, 4096] {
        let Some(dev) = attach(&image, sector) else { break };
        for direct in [false, true] {
            let m = FileMedia::open(Path::new(&dev.0), &FileOptions { direct, create_len: None }).unwrap();
            assert_eq!(m.len(), 64 << 20, "size discovered by ioctl (sector {sector})");
            let mut buf = AlignedBuf::zeroed(1 << 20);
            for (i, b) in buf.iter_mut().enumerate() {
                *b = (i * 13 + sector as usize + usize::from(direct)) as u8;
            }
            m.write_at(&buf, 8 << 20).unwrap();
            m.sync().unwrap();
            let mut back = AlignedBuf::zeroed(1 << 20);
            m.read_at(&mut back, 8 << 20).unwrap();
            assert_eq!(&back[..], &buf[..], "sector {sector} direct {direct}");
            assert!(m.read_at(&mut back, (64 << 20) - 4096).is_err(), "read past the end is refused");
        }
    }
}
