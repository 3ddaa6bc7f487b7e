//! `reo crashtest`: the process-crash consistency workload (kill -9 loop, reliability test A1).
//!
//! `writer` opens (or recovers) a store on device files and puts and frees blobs with
//! `durability = sync` until it is killed. Around every operation it appends to an expected-state
//! file — `P id` before a put, `A id` after it is acknowledged, `F id` before a free, `f id` after —
//! and prints `acked id` to stdout so a harness can kill it at a chosen moment. `verify` reopens
//! the store and checks it against that file: every acknowledged, unfreed blob is present and
//! byte-exact; every acknowledged free is absent; anything pending may or may not be there but is
//! exact if it is; nothing unknown appears.

use clap::{Args, Subcommand};
use reo_media::{FileMedia, FileOptions, Media};
use reo_store::{
    Durability, Error, KeepAll, Location, Placement, PutOptions, Scheme, Store, StoreConfig, VictimPolicy,
};
use std::collections::{BTreeMap, HashMap};
use std::fs::OpenOptions;
use std::io::Write;
use std::path::{Path, PathBuf};
use std::process::ExitCode;
use std::sync::Arc;

#[derive(Subcommand)]
pub enum CrashCommand {
    /// Put and free blobs with durability=sync until killed, logging intent and acknowledgement.
    Writer(CrashArgs),
    /// Reopen the store and check it against the expected-state file.
    Verify(CrashArgs),
}

#[derive(Args)]
pub struct CrashArgs {
    /// Directory holding the device files dev0.img … devN-1.img.
    #[arg(long)]
    dir: PathBuf,
    /// Expected-state file.
    #[arg(long)]
    state: PathBuf,
    /// Number of devices.
    #[arg(long, default_value_t = 4)]
    devices: usize,
    /// Size of each device file in MiB.
    #[arg(long, default_value_t = 64)]
    device_mib: u64,
    /// Seed of the writer's choices.
    #[arg(long, default_value_t = 1)]
    seed: u64,
}

pub fn run(cmd: CrashCommand) -> Result<ExitCode, String> {
    match cmd {
        CrashCommand::Writer(a) => writer(&a),
        CrashCommand::Verify(a) => verify(&a),
    }
}

fn open_store(a: &CrashArgs) -> Result<(Store, reo_store::OpenReport), String> {
    std::fs::create_dir_all(&a.dir).map_err(|e| format!("cannot create {}: {e}", a.dir.display()))?;
    let opts = FileOptions { direct: false, create_len: Some(a.device_mib << 20) };
    let mut devs: Vec<Arc<dyn Media>> = Vec::new();
    for i in 0..a.devices {
        let p = a.dir.join(format!("dev{i}.img"));
        devs.push(Arc::new(FileMedia::open(&p, &opts).map_err(|e| e.to_string())?));
    }
    let cfg = StoreConfig { chunk_size: 16 << 10, ..StoreConfig::default() };
    Store::open(devs, &cfg).map_err(|e| e.to_string())
}

/// Content of blob `id`: deterministic, so the checker needs no copy.
pub fn content(id: u64) -> Vec<u8> {
    let len = (id.wrapping_mul(2_654_435_761) % 90_000) as usize;
    let mut x = id ^ 0x5851_F42D_4C95_7F2D;
    (0..len)
        .map(|_| {
            x ^= x << 13;
            x ^= x >> 7;
            x ^= x << 17;
            x as u8
        })
        .collect()
}

/// Last marker per id in the expected-state file.
fn read_state(path: &Path) -> Result<BTreeMap<u64, char>, String> {
    let text = match std::fs::read_to_string(path) {
        Ok(t) => t,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => String::new(),
        Err(e) => return Err(format!("cannot read {}: {e}", path.display())),
    };
    let mut m = BTreeMap::new();
    for line in text.lines() {
        // A kill can cut the last line short: ignore what does not parse.
        let mut it = line.split(' ');
        if let (Some(k), Some(id), None) = (it.next(), it.next(), it.next()) {
            if let (Some(c), Ok(id)) = (k.chars().next(), id.parse::<u64>()) {
                if k.len() == 1 && "PAFf".contains(c) {
                    m.insert(id, c);
                }
            }
        }
    }
    Ok(m)
}

fn header_id(h: &[u8]) -> Option<u64> {
    std::str::from_utf8(h).ok()?.parse().ok()
}

fn writer(a: &CrashArgs) -> Result<ExitCode, String> {
    let (store, _) = open_store(a)?;
    let state = read_state(&a.state)?;
    let mut log = OpenOptions::new()
        .create(true)
        .append(true)
        .open(&a.state)
        .map_err(|e| format!("cannot open {}: {e}", a.state.display()))?;
    let mut live: HashMap<u64, Location> =
        store.blobs().into_iter().filter_map(|(l, h)| header_id(&h).map(|id| (id, l))).collect();
    let mut id = state.keys().next_back().map_or(1, |m| m + 1);
    let n = a.devices as u8;
    let schemes = [
        Scheme::Replicate(n),
        Scheme::Rs { k: n.saturating_sub(2).max(1), p: 2.min(n - 1).max(1) },
        Scheme::None(Placement::Isolated),
    ];
    let mut x = a.seed | 1;
    let mut out = std::io::stdout();
    loop {
        x ^= x << 13;
        x ^= x >> 7;
        x ^= x << 17;
        let data = content(id);
        let opts = PutOptions::new(schemes[(x % 3) as usize]).durability(Durability::Sync).placement(id);
        writeln!(log, "P {id}").map_err(|e| e.to_string())?;
        let loc = loop {
            match store.put(id.to_string().as_bytes(), &data, &opts) {
                Ok(l) => break l,
                Err(Error::OutOfSpace { .. }) => {
                    // Make room as a cache would: evict (free) a blob, then clean a band.
                    if let Some(&victim) = live.keys().next() {
                        let loc = live.remove(&victim).expect("present");
                        writeln!(log, "F {victim}").map_err(|e| e.to_string())?;
                        store.free(&loc, Durability::Sync).map_err(|e| format!("free {victim}: {e}"))?;
                        writeln!(log, "f {victim}").map_err(|e| e.to_string())?;
                    }
                    store.seal_open_bands();
                    let cleaned = store.gc(VictimPolicy::Greedy, &mut KeepAll).map_err(|e| e.to_string())?;
                    if cleaned.is_none() && live.is_empty() {
                        return Err("store full with nothing to clean".into());
                    }
                    // The cleaner moved blobs: refresh the locations.
                    live = store.blobs().into_iter().filter_map(|(l, h)| header_id(&h).map(|i| (i, l))).collect();
                }
                Err(e) => return Err(format!("put {id}: {e}")),
            }
        };
        writeln!(log, "A {id}").map_err(|e| e.to_string())?;
        live.insert(id, loc);
        writeln!(out, "acked {id}").and_then(|_| out.flush()).map_err(|e| e.to_string())?;
        if live.len() > 100 || x.is_multiple_of(4) {
            let victim = *live.keys().nth((x >> 8) as usize % live.len()).expect("non-empty");
            let loc = live.remove(&victim).expect("present");
            writeln!(log, "F {victim}").map_err(|e| e.to_string())?;
            store.free(&loc, Durability::Sync).map_err(|e| format!("free {victim}: {e}"))?;
            writeln!(log, "f {victim}").map_err(|e| e.to_string())?;
        }
        id += 1;
    }
}

fn verify(a: &CrashArgs) -> Result<ExitCode, String> {
    let state = read_state(&a.state)?;
    let t = std::time::Instant::now();
    let (store, report) = open_store(a)?;
    let open_ms = t.elapsed().as_secs_f64() * 1e3;
    let mut violations = Vec::new();
    let mut present: HashMap<u64, Location> = HashMap::new();
    for (loc, h) in store.blobs() {
        match header_id(&h) {
            Some(id) => {
                present.insert(id, loc);
            }
            None => violations.push(format!("blob {} has an unknown header {h:?}", loc.seq)),
        }
    }
    let mut acked = 0;
    for (&id, &mark) in &state {
        match (mark, present.get(&id)) {
            ('A', None) => violations.push(format!("acknowledged blob {id} is missing")),
            ('f', Some(_)) => violations.push(format!("blob {id} was freed (acknowledged) but is back")),
            _ => {}
        }
        acked += u64::from(mark == 'A');
    }
    for (id, loc) in &present {
        if !state.contains_key(id) {
            violations.push(format!("blob {id} was never put"));
            continue;
        }
        match store.read_all(loc) {
            Ok(b) if b == content(*id) => {}
            Ok(_) => violations.push(format!("blob {id}: wrong bytes")),
            Err(e) => violations.push(format!("blob {id}: unreadable: {e}")),
        }
    }
    store.close().map_err(|e| e.to_string())?;
    for v in &violations {
        eprintln!("violation: {v}");
    }
    println!(
        "{}",
        serde_json::json!({
            "acked_live": acked,
            "present": present.len(),
            "violations": violations.len(),
            "open_ms": open_ms,
            "batches_replayed": report.batches_replayed,
            "dropped_unverified": report.dropped_unverified,
        })
    );
    Ok(if violations.is_empty() { ExitCode::SUCCESS } else { ExitCode::from(1) })
}
