//! Slow and stuck devices (reliability catalogue B6): a device whose reads hang must not stall
//! the reads that can do without it, must not turn into wrong bytes or a `Corrupt` answer where
//! waiting would succeed, and is marked failed once stuck past `stuck_read_fail_after`.
//!
//! The stuck device is a [`Gated`] one whose reads wait at a closed gate: each test waits for
//! events (a read held at the gate, a reply on a channel), never for time to pass. A read that
//! waited for the gate when it should not would hang: replies are awaited with a generous bound
//! so that such a bug fails the test instead.

mod common;
use common::*;
use reo_media::Media;
use reo_store::{
    Durability, Error, Location, Placement, PutOptions, RebuildOptions, RebuildState, Scheme, Store, StoreConfig,
};
use std::sync::mpsc::channel;
use std::sync::Arc;
use std::time::Duration;

/// Bound on a reply that must come without the stuck device (a failure, not a speed target).
const REPLY: Duration = Duration::from_secs(60);
const DEVICE_LEN: u64 = 16 << 20;

/// Opens a gate when dropped (a failing assertion must not leave lane threads parked at it).
struct OpenOnDrop(Arc<Gated>);

impl Drop for OpenOnDrop {
    fn drop(&mut self) {
        self.0.open();
    }
}

fn config(slow_ms: u64, stuck_ms: Option<u64>) -> StoreConfig {
    StoreConfig {
        slow_read_after: Some(Duration::from_millis(slow_ms)),
        stuck_read_fail_after: stuck_ms.map(Duration::from_millis),
        ..small_config()
    }
}

/// A store over 4 gated in-memory devices.
fn gated_store(cfg: &StoreConfig) -> (Arc<Store>, Vec<Arc<Gated>>) {
    let devs = devices(4, DEVICE_LEN);
    let gates: Vec<Arc<Gated>> = devs.iter().map(|f| Arc::new(Gated::new(f.clone() as Arc<dyn Media>))).collect();
    let media: Vec<Arc<dyn Media>> = gates.iter().map(|g| g.clone() as Arc<dyn Media>).collect();
    (Arc::new(Store::open(media, cfg).expect("open").0), gates)
}

fn put(store: &Store, id: u64, len: usize, opts: &PutOptions) -> (Location, Vec<u8>) {
    let data = content(id, len);
    (store.put(b"s", &data, opts).unwrap(), data)
}

/// Reads `loc` whole on another thread, by `Store::read` and by the zero-copy read.
fn read_elsewhere(store: &Arc<Store>, loc: Location) -> std::sync::mpsc::Receiver<(Result<Vec<u8>, Error>, bool)> {
    let (tx, rx) = channel();
    let store = store.clone();
    std::thread::spawn(move || {
        let copied = store.read_all(&loc);
        let zero_copy = store.read_bytes(&loc, 0, loc.len).map(|b| b.into_vec());
        let same = match (&copied, &zero_copy) {
            (Ok(a), Ok(b)) => a == b,
            (Err(_), Err(_)) => true,
            _ => false,
        };
        let _ = tx.send((copied, same));
    });
    rx
}

/// With every read of device 1 hanging, rs(2,2), rs(2,1) and replicate(2) blobs (most with
/// chunks on device 1) read back exact without it, by both read paths; the reads left behind
/// are counted as slow reads, not as errors, and the device stays up. The threshold is 200 ms
/// so that a lane of another device preempted on a loaded machine is not taken for slow too.
#[test]
fn a_stuck_device_does_not_stall_reads_of_redundant_blobs() {
    let cfg = config(200, None);
    let (store, gates) = gated_store(&cfg);
    let mut blobs = Vec::new();
    for (i, scheme) in
        [Scheme::Rs { k: 2, p: 2 }, Scheme::Rs { k: 2, p: 1 }, Scheme::Replicate(2)].into_iter().enumerate()
    {
        let opts = PutOptions::new(scheme).durability(Durability::Sync);
        for j in 0..4u64 {
            blobs.push(put(&store, 10 * i as u64 + j, 50_000 + 7_000 * j as usize, &opts));
        }
    }
    let before = store.stats();
    gates[1].arm_for(usize::MAX);
    let _open = OpenOnDrop(gates[1].clone());
    for (loc, data) in &blobs {
        let (got, same) = read_elsewhere(&store, *loc).recv_timeout(REPLY).expect("a read waited for the stuck device");
        assert_eq!(got.as_ref().ok(), Some(data), "{:?}: {:?}", loc.scheme, got.as_ref().err());
        assert!(same, "the zero-copy read returned other bytes");
    }
    let after = store.stats();
    assert!(gates[1].reads() > 0, "device 1 was asked for its chunks at least once");
    assert!(after.slow_reads > before.slow_reads, "{after:?}");
    assert!(after.degraded_reads > before.degraded_reads, "the chunks of device 1 were rebuilt");
    assert_eq!((after.read_errors, after.checksum_errors, after.ejections), (0, 0, 0), "slowness is not an error");
    assert!(store.failed_devices().is_empty(), "a slow device is not failed below stuck_read_fail_after");
}

/// A read that cannot be rebuilt without the stuck device waits for it and returns exact bytes
/// (never `Corrupt` for slowness): an rs(2,2) blob with devices 2 and 3 failed, and an isolated
/// blob on the stuck device (no redundancy: it waits, and returns exact once the device answers).
#[test]
fn a_read_that_needs_the_stuck_device_waits_for_it() {
    // Two lane threads per device: the retry's read reaches the gate beside the first one.
    let cfg = StoreConfig { read_depth: 2, ..config(20, None) };
    let (store, gates) = gated_store(&cfg);
    let rs = PutOptions::new(Scheme::Rs { k: 2, p: 2 }).durability(Durability::Sync);
    let blobs: Vec<(Location, Vec<u8>)> = (0..4).map(|i| put(&store, i, 60_000, &rs)).collect();
    let (isolated, isolated_data) =
        put(&store, 9, 30_000, &PutOptions::new(Scheme::None(Placement::Isolated)).placement(1));
    assert_eq!(isolated.device, 1, "the isolated blob lives on device 1");
    store.fail_device(2).unwrap();
    store.fail_device(3).unwrap();

    // The isolated blob: its read waits at the gate, then completes.
    gates[1].arm_for(1);
    let reply = read_elsewhere(&store, isolated);
    gates[1].wait_held();
    let slow_before = store.stats().slow_reads;
    gates[1].open();
    let (got, same) = reply.recv_timeout(REPLY).expect("the read finished once the device answered");
    assert_eq!(got.unwrap(), isolated_data);
    assert!(same);
    assert_eq!(store.stats().slow_reads, slow_before, "a blob without redundancy is never left behind");

    // An rs blob needing device 1: the hedged try leaves it behind, cannot rebuild, and reads
    // again waiting for it — the second read reaching the gate shows the retry.
    let (loc, data) = &blobs[0];
    gates[1].arm_for(2);
    let reply = read_elsewhere(&store, *loc);
    assert!(gates[1].held_within(2, REPLY), "the read did not come back to device 1 after leaving it behind");
    gates[1].open();
    let (got, same) = reply.recv_timeout(REPLY).expect("the read finished once the device answered");
    assert_eq!(got.as_ref().ok(), Some(data), "{:?}", got.as_ref().err());
    assert!(same);
    assert!(store.stats().slow_reads > slow_before, "the first try left device 1 behind");
    for (loc, data) in &blobs[1..] {
        assert_eq!(&store.read_all(loc).unwrap(), data);
    }
    assert_eq!(store.stats().checksum_errors, 0);
}

/// A device with a read in service past `stuck_read_fail_after` is marked failed by a reader
/// waiting on it: the isolated blob's read, waiting at the gate, ends `Corrupt` (its only device
/// failed) and device 1 is failed and counted as ejected; rs blobs read exact without it. Then
/// it is replaced: the replacement gets lanes of its own (the stuck read, still held, neither
/// blocks it nor makes it look stuck), the rebuild completes, and device 1 alone with device 0
/// serves every rs blob.
#[test]
fn a_device_stuck_past_the_limit_is_failed_and_can_be_replaced() {
    let cfg = config(20, Some(80));
    let (store, gates) = gated_store(&cfg);
    let rs = PutOptions::new(Scheme::Rs { k: 2, p: 2 }).durability(Durability::Sync);
    let blobs: Vec<(Location, Vec<u8>)> = (0..3).map(|i| put(&store, i, 40_000, &rs)).collect();
    let (isolated, _) = put(&store, 9, 30_000, &PutOptions::new(Scheme::None(Placement::Isolated)).placement(1));
    gates[1].arm_for(usize::MAX);
    let _open = OpenOnDrop(gates[1].clone());
    let (tx, rx) = channel();
    let reader = store.clone();
    std::thread::spawn(move || {
        let _ = tx.send(reader.read_all(&isolated));
    });
    let got = rx.recv_timeout(REPLY).expect("the reader gave up on the stuck device");
    assert!(matches!(got, Err(Error::Corrupt { .. })), "{got:?}");
    assert_eq!(store.failed_devices(), vec![1]);
    assert_eq!(store.stats().ejections, 1);
    for (loc, data) in &blobs {
        let (got, same) = read_elsewhere(&store, *loc).recv_timeout(REPLY).expect("reads go around the failed device");
        assert_eq!(got.as_ref().ok(), Some(data));
        assert!(same);
    }
    // The replacement: a fresh device in place of the stuck one (whose read is still held).
    let fresh: Arc<dyn Media> = devices(1, DEVICE_LEN)[0].clone();
    let rebuild = store.replace_device(1, fresh, RebuildOptions::default()).unwrap();
    assert_eq!(rebuild.wait().state, RebuildState::Done);
    store.fail_device(2).unwrap();
    store.fail_device(3).unwrap();
    for (loc, data) in &blobs {
        let (got, _) = read_elsewhere(&store, *loc).recv_timeout(REPLY).expect("the new device 1 answers");
        assert_eq!(got.as_ref().ok(), Some(data), "{:?}", got.as_ref().err());
    }
    assert_eq!(store.failed_devices(), vec![2, 3], "the replacement is not taken for the stuck device");
    assert_eq!(store.stats().ejections, 1);
}
