//! The results: a table of every figure with its ratio against its target (PASS/MISS) for people,
//! and one JSON object on a single line — always the last line of output — for scripts.

use super::phases::Measured;
use super::recover::Recovery;
use super::{Acc, Plan};
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
    pub measured: Measured,
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

/// `f` of every throughput figure, as a JSON object keyed by figure.
fn per_figure<V: Into<serde_json::Value>>(m: &Measured, f: impl Fn(&Acc) -> V) -> serde_json::Value {
    json!({
        "raw_write": f(&m.raw_write).into(),
        "raw_read": f(&m.raw_read).into(),
        "raw_read_run": f(&m.raw_read_run).into(),
        "raw_read_checked": f(&m.raw_read_checked).into(),
        "put_none": f(&m.put_none).into(),
        "put_rs": f(&m.put_rs).into(),
        "put_replicate": f(&m.put_replicate).into(),
        "get": f(&m.get).into(),
        "get_parallel": f(&m.get_parallel).into(),
        "degraded_get": f(&m.degraded_get).into(),
    })
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
        let m = &self.measured;
        let raw_write = m.raw_write.mibps();
        Ratios {
            put_none: m.put_none.mibps() / raw_write,
            put_rs: m.put_rs.mibps() / (raw_write * self.plan.data_fraction),
            get: m.get.mibps() / m.raw_read.mibps(),
            degraded_get: m.degraded_get.mibps() / m.get.mibps(),
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
        let (m, plan, r) = (&self.measured, self.plan, self.ratios());
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
        println!(
            "  {:<31} {:>16}   {:<29} {:>5}  {:<6} rounds (min-max MiB/s), median shown",
            "figure", "value", "target", "ratio", "result"
        );
        let row = |name: &str, value: String, target: &str, ratio: Option<(f64, bool)>, acc: Option<&Acc>| {
            let (ratio, verdict) = match ratio {
                Some((x, ok)) => (format!("{x:.2}"), if ok { "PASS" } else { "MISS" }),
                None => (String::new(), ""),
            };
            let spread = acc.map(|a| {
                let min = a.rounds.iter().copied().fold(f64::INFINITY, f64::min);
                let max = a.rounds.iter().copied().fold(0.0, f64::max);
                format!("{} ({min:.0}-{max:.0})", a.rounds.len())
            });
            let spread = spread.unwrap_or_default();
            println!("  {name:<31} {value:>16}   {target:<29} {ratio:>5}  {verdict:<6} {spread}");
        };
        let mibps = |a: &Acc| format!("{:.1} MiB/s", a.mibps());
        let gibps = |x: f64| format!("{x:.2} GiB/s");
        row("raw sequential write", mibps(&m.raw_write), "(physical limit)", None, Some(&m.raw_write));
        row("raw sequential read", mibps(&m.raw_read), "(physical limit)", None, Some(&m.raw_read));
        let name = format!("raw read, {} KiB I/Os", reo_store::MAX_READ_RUN >> 10);
        row(&name, mibps(&m.raw_read_run), "(the get's read size)", None, Some(&m.raw_read_run));
        let checked = &m.raw_read_checked;
        row("raw read, every byte checked", mibps(checked), "(CRC32C by a 2nd thread)", None, Some(checked));
        let target = format!(">= {PUT_NONE} x raw write");
        row("put none(isolated)", mibps(&m.put_none), &target, Some((r.put_none, checks[0])), Some(&m.put_none));
        let target = format!(">= {PUT_RS} x raw write x {:.2}", plan.data_fraction);
        row(&format!("put {}", plan.rs), mibps(&m.put_rs), &target, Some((r.put_rs, checks[1])), Some(&m.put_rs));
        row("put replicate(2)", mibps(&m.put_replicate), "(no target)", None, Some(&m.put_replicate));
        let target = format!(">= {GET} x raw read");
        row(&format!("get {}", plan.rs), mibps(&m.get), &target, Some((r.get, checks[2])), Some(&m.get));
        let target = format!(">= {DEGRADED} x get");
        let ratio = Some((r.degraded_get, checks[3]));
        row("degraded get (device 0 failed)", mibps(&m.degraded_get), &target, ratio, Some(&m.degraded_get));
        let name = format!("get from {} readers", plan.n);
        row(&name, mibps(&m.get_parallel), "(no target)", None, Some(&m.get_parallel));
        row(&format!("encode {}", plan.rs), gibps(self.encode_gibps), "(no target)", None, None);
        row("decode (1 data shard lost)", gibps(self.decode_gibps), "(no target)", None, None);
        let rec = &self.recovery;
        row(
            "crash restart",
            format!("{:.3} s/M blobs", rec.s_per_million),
            &format!("<= {RECOVER_S} s per million blobs"),
            Some((rec.s_per_million / RECOVER_S, checks[4])),
            None,
        );
        println!();
        println!(
            "crash restart: {} blobs of 1-4 KiB put at {:.0}/s and acknowledged, writer killed (SIGKILL) mid-puts, {} live after the reopen of {:.3} s (its checkpoint durable after {:.3} s), {} journal batches / {} records replayed",
            rec.acknowledged, rec.puts_per_s, rec.blobs, rec.open_s, rec.writable_s, rec.batches_replayed, rec.records_replayed
        );
        println!(
            "degraded get: {} reads rebuilt {} chunks; raw and store rounds alternate; precondition {:.1} s; total {:.1} s",
            m.degraded_reads, m.reconstructed_chunks, self.precondition_s, self.elapsed_s
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
        let (m, plan, r, rec) = (&self.measured, self.plan, self.ratios(), &self.recovery);
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
            "raw_bytes_per_pass": plan.raw_per_device * plan.n as u64,
            "raw_write_mibps": round(m.raw_write.mibps(), 1),
            "raw_read_mibps": round(m.raw_read.mibps(), 1),
            "raw_read_run_mibps": round(m.raw_read_run.mibps(), 1),
            "raw_read_checked_mibps": round(m.raw_read_checked.mibps(), 1),
            "put_mibps": {
                "none": round(m.put_none.mibps(), 1),
                "rs": round(m.put_rs.mibps(), 1),
                "replicate": round(m.put_replicate.mibps(), 1),
            },
            "get_mibps": round(m.get.mibps(), 1),
            "get_readers": plan.get_readers,
            "get_parallel_mibps": round(m.get_parallel.mibps(), 1),
            "degraded_get_mibps": round(m.degraded_get.mibps(), 1),
            "encode_gibps": round(self.encode_gibps, 2),
            "decode_gibps": round(self.decode_gibps, 2),
            "recover_s_per_million_blobs": round(rec.s_per_million, 4),
            "recover_blobs": rec.blobs,
            "recover_acknowledged_blobs": rec.acknowledged,
            "recover_survivors": rec.survivors,
            "recover_open_s": round(rec.open_s, 4),
            "recover_writable_s_per_million_blobs": round(rec.writable_s * 1e6 / rec.blobs as f64, 4),
            "recover_batches_replayed": rec.batches_replayed,
            "recover_records_replayed": rec.records_replayed,
            "recover_puts_per_s": round(rec.puts_per_s, 0),
            "aggregate_mibps": per_figure(m, |a| round(a.aggregate_mibps(), 1)),
            "ratios": {
                "put_none": round(r.put_none, 3),
                "put_rs": round(r.put_rs, 3),
                "get": round(r.get, 3),
                "degraded_get": round(r.degraded_get, 3),
            },
            "targets_met": self.checks().iter().all(|&c| c),
            "rounds": { "write": m.raw_write.rounds.len(), "read": m.raw_read.rounds.len() },
            // Every round's MiB/s, in order, for the drift within a run (BENCHMARKS.md).
            "round_mibps": per_figure(m, |a| a.rounds.iter().map(|&x| round(x, 1)).collect::<Vec<f64>>()),
            "cores_busy": per_figure(m, |a| round(a.cores(), 2)),
            "machine": { "cpu": cpu, "cores": cores },
            "elapsed_s": round(self.elapsed_s, 1),
        });
        v.to_string()
    }
}
