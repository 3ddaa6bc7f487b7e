//! The results: a table of every figure with its ratio against its target (PASS/MISS) for people,
//! and one JSON object on a single line — always the last line of output — for scripts.

use super::phases::StorePhases;
use super::recover::Recovery;
use super::Plan;
use serde_json::json;

/// Targets, as ratios measured in the same run.
const PUT_NONE: f64 = 0.8; // put none ≥ 0.8 × raw write
const PUT_RS: f64 = 0.8; // put rs ≥ 0.8 × raw write × k/(k+p)
const GET: f64 = 0.9; // get ≥ 0.9 × raw read
const DEGRADED: f64 = 0.5; // degraded get ≥ 0.5 × get
const RECOVER_S: f64 = 1.0; // crash restart ≤ 1 s per million blobs

/// Everything one run measured.
pub struct Results<'a> {
    pub plan: &'a Plan,
    pub quick: bool,
    pub direct: bool,
    pub precondition_s: f64,
    pub raw_write_mibps: f64,
    pub raw_read_mibps: f64,
    pub phases: StorePhases,
    pub encode_gibps: f64,
    pub decode_gibps: f64,
    pub recovery: Recovery,
    pub elapsed_s: f64,
}

/// The four throughput ratios.
struct Ratios {
    put_none: f64,
    put_rs: f64,
    get: f64,
    degraded_get: f64,
}

fn round(x: f64, digits: i32) -> f64 {
    let m = 10f64.powi(digits);
    (x * m).round() / m
}

/// CPU model (from /proc/cpuinfo) and core count.
fn machine() -> (String, usize) {
    let cpu = std::fs::read_to_string("/proc/cpuinfo")
        .ok()
        .and_then(|s| {
            s.lines()
                .filter_map(|l| l.split_once(':'))
                .find(|(k, _)| matches!(k.trim(), "model name" | "Model" | "cpu model" | "Hardware"))
                .map(|(_, v)| v.trim().to_string())
        })
        .unwrap_or_else(|| "unknown".into());
    (cpu, std::thread::available_parallelism().map(|n| n.get()).unwrap_or(1))
}

impl Results<'_> {
    fn ratios(&self) -> Ratios {
        let p = &self.phases;
        Ratios {
            put_none: p.put_none / self.raw_write_mibps,
            put_rs: p.put_rs / (self.raw_write_mibps * self.plan.data_fraction),
            get: p.get / self.raw_read_mibps,
            degraded_get: p.degraded_get / p.get,
        }
    }

    /// (ratio met, figure) for every target.
    fn checks(&self) -> [bool; 5] {
        let r = self.ratios();
        [
            r.put_none >= PUT_NONE,
            r.put_rs >= PUT_RS,
            r.get >= GET,
            r.degraded_get >= DEGRADED,
            self.recovery.s_per_million <= RECOVER_S,
        ]
    }

    pub fn print_table(&self) {
        let (p, plan, r) = (&self.phases, self.plan, self.ratios());
        let checks = self.checks();
        let (cpu, cores) = machine();
        println!();
        println!(
            "reo bench store: {} devices x {} MiB, {}, {} KiB blobs, {} KiB chunks, raw I/O {} KiB",
            plan.n,
            plan.device_len >> 20,
            if self.direct { "O_DIRECT" } else { "buffered I/O" },
            plan.blob >> 10,
            plan.chunk >> 10,
            plan.io >> 10
        );
        println!("machine: {cpu}, {cores} cores");
        println!();
        println!("  {:<34} {:>16}   {:<30} {:>6}  result", "figure", "value", "target", "ratio");
        let row = |name: &str, value: String, target: &str, ratio: Option<(f64, bool)>| {
            let (ratio, verdict) = match ratio {
                Some((x, ok)) => (format!("{x:.2}"), if ok { "PASS" } else { "MISS" }),
                None => (String::new(), ""),
            };
            println!("  {name:<34} {value:>16}   {target:<30} {ratio:>6}  {verdict}");
        };
        let mibps = |x: f64| format!("{x:.1} MiB/s");
        let gibps = |x: f64| format!("{x:.2} GiB/s");
        row("raw sequential write", mibps(self.raw_write_mibps), "(physical limit)", None);
        row("raw sequential read", mibps(self.raw_read_mibps), "(physical limit)", None);
        row(
            "put none(isolated)",
            mibps(p.put_none),
            &format!(">= {PUT_NONE} x raw write"),
            Some((r.put_none, checks[0])),
        );
        row(
            &format!("put {}", plan.rs),
            mibps(p.put_rs),
            &format!(">= {PUT_RS} x raw write x {:.2}", plan.data_fraction),
            Some((r.put_rs, checks[1])),
        );
        row("put replicate(2)", mibps(p.put_replicate), "(no target)", None);
        row(&format!("get {}", plan.rs), mibps(p.get), &format!(">= {GET} x raw read"), Some((r.get, checks[2])));
        row(
            "degraded get (device 0 failed)",
            mibps(p.degraded_get),
            &format!(">= {DEGRADED} x get"),
            Some((r.degraded_get, checks[3])),
        );
        row(&format!("encode {}", plan.rs), gibps(self.encode_gibps), "(no target)", None);
        row("decode (1 data shard lost)", gibps(self.decode_gibps), "(no target)", None);
        let rec = &self.recovery;
        row(
            "crash restart",
            format!("{:.3} s/M blobs", rec.s_per_million),
            &format!("<= {RECOVER_S} s per million blobs"),
            Some((rec.s_per_million / RECOVER_S, checks[4])),
        );
        println!();
        println!(
            "crash restart: {} blobs of 1-4 KiB put at {:.0}/s, reopen {:.3} s, {} journal batches / {} records replayed",
            rec.blobs, rec.puts_per_s, rec.open_s, rec.batches_replayed, rec.records_replayed
        );
        println!(
            "degraded get: {} reads reconstructed {} chunks; precondition {:.1} s; total {:.1} s",
            p.degraded_reads, p.reconstructed_chunks, self.precondition_s, self.elapsed_s
        );
        if !self.direct {
            println!(
                "note: buffered I/O: the raw read and the gets are served from a hot page cache, not the \
                 devices, so read ratios compare CPU paths, not device bandwidth"
            );
        }
        let met = checks.iter().filter(|&&c| c).count();
        println!("targets met: {met} of {}", checks.len());
        println!();
    }

    pub fn json(&self) -> String {
        let (p, plan, r, rec) = (&self.phases, self.plan, self.ratios(), &self.recovery);
        let (cpu, cores) = machine();
        let v = json!({
            "bench": "store",
            "quick": self.quick,
            "devices": plan.n,
            "device_bytes": plan.device_len,
            "blob_bytes": plan.blob,
            "chunk_bytes": plan.chunk,
            "direct": self.direct,
            "rs_scheme": plan.rs.to_string(),
            "rs_data_fraction": round(plan.data_fraction, 4),
            "raw_io_bytes": plan.io,
            "raw_bytes": plan.raw_per_device * plan.n as u64,
            "raw_write_mibps": round(self.raw_write_mibps, 1),
            "raw_read_mibps": round(self.raw_read_mibps, 1),
            "put_mibps": {
                "none": round(p.put_none, 1),
                "rs": round(p.put_rs, 1),
                "replicate": round(p.put_replicate, 1),
            },
            "get_mibps": round(p.get, 1),
            "degraded_get_mibps": round(p.degraded_get, 1),
            "encode_gibps": round(self.encode_gibps, 2),
            "decode_gibps": round(self.decode_gibps, 2),
            "recover_s_per_million_blobs": round(rec.s_per_million, 4),
            "recover_blobs": rec.blobs,
            "recover_open_s": round(rec.open_s, 4),
            "recover_batches_replayed": rec.batches_replayed,
            "recover_records_replayed": rec.records_replayed,
            "recover_puts_per_s": round(rec.puts_per_s, 0),
            "ratios": {
                "put_none": round(r.put_none, 3),
                "put_rs": round(r.put_rs, 3),
                "get": round(r.get, 3),
                "degraded_get": round(r.degraded_get, 3),
            },
            "targets_met": self.checks().iter().all(|&c| c),
            "machine": { "cpu": cpu, "cores": cores },
            "elapsed_s": round(self.elapsed_s, 1),
        });
        v.to_string()
    }
}
