//! The crash restart of `reo bench store` measures a reopen after a real SIGKILL: its writer
//! process (`reo bench store-writer`) must acknowledge its blobs only once they are durable, and
//! be killable in the middle of further puts, leaving a store that reopens with every one of them.

use reo_media::{FileMedia, FileOptions, Media, ALIGN};
use reo_store::{Store, StoreConfig};
use std::io::{BufRead, BufReader};
use std::os::unix::process::ExitStatusExt;
use std::process::{Command, Stdio};
use std::sync::Arc;

/// Blobs the writer puts after `--blobs`, flushed, before its acknowledgement (its `IN_FLIGHT`).
const IN_FLIGHT: usize = 4096;

/// The writer's blob `i`, re-derived here from its definition (`bench_store/phases.rs`
/// `Pattern`, `crash_writer.rs` `small_len`): a 1 MiB xorshift stream seeded with 7, blob `i` being
/// the `small_len(i)` bytes at a window chosen by `i`.
struct Contents(Vec<u8>);

impl Contents {
    fn new() -> Contents {
        let mut v = vec![0u8; 4096 + (1 << 20)];
        let mut x = 7u64.wrapping_mul(0x9E37_79B9_7F4A_7C15) | 1;
        for c in v.chunks_mut(8) {
            x ^= x << 13;
            x ^= x >> 7;
            x ^= x << 17;
            c.copy_from_slice(&x.to_le_bytes()[..c.len()]);
        }
        Contents(v)
    }

    fn len(i: u64) -> usize {
        1024 + ((i.wrapping_mul(0x9E37_79B9_7F4A_7C15) >> 32) % 3073) as usize
    }

    fn blob(&self, i: u64) -> &[u8] {
        let off = (i.wrapping_mul(7919) % ((1 << 20) / ALIGN) as u64) as usize * ALIGN;
        &self.0[off..off + Self::len(i)]
    }
}

#[test]
fn the_killed_writer_leaves_every_acknowledged_blob() {
    let tmp = tempfile::tempdir().unwrap();
    let (n, mib, blobs) = (4, 64u64, 3000usize);
    // The benchmark creates the files; the writer formats them.
    let open = |i: usize| -> Arc<dyn Media> {
        let opts = FileOptions { direct: false, create_len: Some(mib << 20) };
        Arc::new(FileMedia::open(&tmp.path().join(format!("dev{i}.img")), &opts).unwrap())
    };
    drop((0..n).map(open).collect::<Vec<_>>());
    let mut child = Command::new(env!("CARGO_BIN_EXE_reo"))
        .args(["bench", "store-writer", "--dir"])
        .arg(tmp.path())
        .args(["--devices", &n.to_string(), "--device-size", &mib.to_string(), "--chunk", "64"])
        .args(["--blobs", &blobs.to_string(), "--no-direct"])
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::inherit())
        .spawn()
        .expect("start the writer");
    let mut line = String::new();
    BufReader::new(child.stdout.take().unwrap()).read_line(&mut line).unwrap();
    child.kill().expect("SIGKILL the writer");
    let status = child.wait().unwrap();
    let acked = blobs + IN_FLIGHT;
    assert!(line.starts_with(&format!("acknowledged {acked} ")), "writer said {line:?} ({status})");
    assert_eq!(status.signal(), Some(libc::SIGKILL), "the writer was still running when killed");

    let (store, report) = Store::open((0..n).map(open).collect(), &StoreConfig::default()).unwrap();
    assert!(!report.formatted && !report.clean, "{report:?}");
    assert!(report.records_replayed >= acked as u64, "{report:?}");
    let contents = Contents::new();
    let mut seen = std::collections::HashSet::new();
    for (loc, head) in store.blobs() {
        let i = u64::from_le_bytes(head[..8].try_into().unwrap());
        assert!(seen.insert(i), "blob {i} live twice");
        assert_eq!(loc.len, Contents::len(i) as u64, "blob {i}");
        assert!(store.read_all(&loc).unwrap() == contents.blob(i), "blob {i} read back wrong bytes");
    }
    let lost = (0..acked as u64).filter(|i| !seen.contains(i)).count();
    assert_eq!(lost, 0, "{lost} acknowledged blobs lost");
}
