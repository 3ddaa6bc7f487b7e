//! The block-workload experiments: `dedup` (CacheDedup: LRU/ARC against D-LRU/D-ARC/CD-ARC, miss
//! ratio and flash writes over cache sizes on the WebVM/Homes/Mail-like workloads), `admission`
//! (the Fusion-io study: admit-all, SEQR, SSEQR, TC and their combinations with cache-based and
//! GC-based eviction at three cache sizes on a TPC-E-with-backup-like mix) and `selective` (SDCC:
//! the watchlist against admit-all on an OLTP-like skew).
//!
//! Every 4 KiB block is an object (numeric keys, so SEQR sees adjacent blocks); clean data is
//! unprotected and isolated (these experiments are about replacement and admission, not
//! redundancy), dirty data mirrored; writes are write-through (a client write is an admission
//! candidate like a read miss, as in the study's tables).

use reo_cache::{AdmissionConfig, ClassSchemes, DedupKind, EvictionMode, PolicyKind};
use reo_store::{Placement, Scheme};
use reo_trace::generate::GenSpec;

use super::outcome::{Outcome, Plot, Row, Section};
use super::run::{base, row, run_all, share, working_set, Job};
use crate::error::EvalError;
use crate::replay::ReplayConfig;

const BLOCK: u64 = 4096;

fn block_config(name: &str, cache_bytes: u64) -> ReplayConfig {
    let mut cfg = base(name, cache_bytes);
    let none = Scheme::None(Placement::Isolated);
    let mirror = Scheme::Replicate(2);
    cfg.cache.class_schemes = Some(ClassSchemes([mirror, mirror, none, none]));
    cfg.cache.fragment_size = BLOCK;
    cfg.object_hint = Some(BLOCK);
    cfg.write_back = false;
    cfg
}

fn table(rows: &[Row], label: &str) -> String {
    let gib = |b: u64| b as f64 / (1u64 << 30) as f64;
    let opt = |x: Option<f64>| x.map_or("-".into(), |v| format!("{v:.2}"));
    let mut t = format!("| {label} | cache % | hit ratio | cache writes GiB | GC writes GiB | flash writes GiB | CLWA | FLWA | multiplier |\n|---|---|---|---|---|---|---|---|---|\n");
    for r in rows {
        t += &format!(
            "| {} | {} | {:.3} | {:.3} | {:.3} | {:.3} | {} | {} | {} |\n",
            r.config,
            r.cache_size_pct.unwrap_or(0.0),
            r.hit_ratio,
            gib(r.cache_write_bytes),
            gib(r.gc_write_bytes),
            gib(r.flash_write_bytes),
            opt(r.clwa),
            opt(r.flwa),
            opt(r.multiplier)
        );
    }
    t
}

fn series(rows: &[&Row], names: &[String], metric: fn(&Row) -> f64) -> Vec<(String, Vec<(f64, f64)>)> {
    names
        .iter()
        .map(|c| {
            let pts =
                rows.iter().filter(|r| &r.config == c).map(|r| (r.cache_size_pct.unwrap_or(0.0), metric(r))).collect();
            (c.clone(), pts)
        })
        .collect()
}

/// CacheDedup.
pub fn dedup(quick: bool, progress: &(dyn Fn(&str) + Sync)) -> Result<Outcome, EvalError> {
    let workloads: &[&str] = if quick { &["webvm"] } else { &["webvm", "homes", "mail"] };
    let pcts: &[f64] = if quick { &[5.0, 20.0] } else { &[2.0, 5.0, 10.0, 20.0, 40.0] };
    let names: Vec<String> = ["lru", "arc", "d-lru", "d-arc", "cd-arc"].map(String::from).to_vec();
    let mut jobs = Vec::new();
    for &w in workloads {
        let spec: GenSpec = format!("dedup:{w}").parse()?;
        let ws = working_set(&spec)?;
        for name in &names {
            for &pct in pcts {
                let mut cfg = block_config(name, share(&ws, pct));
                match name.as_str() {
                    "lru" => cfg.cache.policy = PolicyKind::Lru,
                    "arc" => cfg.cache.policy = PolicyKind::Arc,
                    d => cfg.cache.dedup = d.parse::<DedupKind>().map_err(|e| EvalError::Config(e.to_string()))?,
                }
                jobs.push(Job {
                    spec: spec.clone(),
                    cfg,
                    workload: w.into(),
                    cache_size_pct: Some(pct),
                    write_ratio: None,
                });
            }
        }
    }
    let reports = run_all(&jobs, progress)?;
    let rows: Vec<Row> = jobs.iter().zip(&reports).map(|(j, r)| row(j, r)).collect();
    let mut sections = Vec::new();
    for &w in workloads {
        let mine: Vec<&Row> = rows.iter().filter(|r| r.workload == w).collect();
        let owned: Vec<Row> = mine.iter().map(|r| (*r).clone()).collect();
        let plots = vec![
            Plot::line(
                &format!("dedup-{w}-miss-ratio"),
                &format!("Miss ratio, {w}"),
                "cache size (% of working set)",
                "miss ratio",
                series(&mine, &names, |r| 1.0 - r.hit_ratio),
            ),
            Plot::line(
                &format!("dedup-{w}-flash-writes"),
                &format!("Flash writes, {w}"),
                "cache size (% of working set)",
                "GiB",
                series(&mine, &names, |r| r.flash_write_bytes as f64 / (1u64 << 30) as f64),
            ),
        ];
        sections.push(Section { title: format!("Dedup, {w}"), text: table(&owned, "policy"), plots });
    }
    Ok(Outcome { rows, sections })
}

/// The Fusion-io study's admission × eviction tables.
pub fn admission(quick: bool, progress: &(dyn Fn(&str) + Sync)) -> Result<Outcome, EvalError> {
    let pcts: &[f64] = if quick { &[10.0] } else { &[5.0, 10.0, 20.0] };
    let kinds: &[&str] = if quick { &["aa", "seqr+tc"] } else { &["aa", "seqr", "sseqr", "tc", "seqr+tc", "sseqr+tc"] };
    let spec: GenSpec = "scan".parse()?;
    let ws = working_set(&spec)?;
    let mut names = Vec::new();
    let mut jobs = Vec::new();
    for eviction in ["cache-eviction", "gc-eviction"] {
        for &kind in kinds {
            let name = format!("{kind}/{eviction}");
            names.push(name.clone());
            for &pct in pcts {
                let mut cfg = block_config(&name, share(&ws, pct));
                cfg.cache.admission = kind.parse::<AdmissionConfig>().map_err(|e| EvalError::Config(e.to_string()))?;
                cfg.cache.eviction =
                    if eviction == "gc-eviction" { EvictionMode::GcBased } else { EvictionMode::CacheBased };
                jobs.push(Job {
                    spec: spec.clone(),
                    cfg,
                    workload: "scan".into(),
                    cache_size_pct: Some(pct),
                    write_ratio: None,
                });
            }
        }
    }
    let reports = run_all(&jobs, progress)?;
    let rows: Vec<Row> = jobs.iter().zip(&reports).map(|(j, r)| row(j, r)).collect();
    let all: Vec<&Row> = rows.iter().collect();
    let plots = vec![
        Plot::line(
            "admission-hit-ratio",
            "Hit ratio by admission and eviction",
            "cache size (% of working set)",
            "hit ratio",
            series(&all, &names, |r| r.hit_ratio),
        ),
        Plot::line(
            "admission-multiplier",
            "CLWA × FLWA by admission and eviction",
            "cache size (% of working set)",
            "multiplier",
            series(&all, &names, |r| r.multiplier.unwrap_or(0.0)),
        ),
    ];
    Ok(Outcome {
        sections: vec![Section {
            title: "Admission and eviction (TPC-E with backup-like mix)".into(),
            text: table(&rows, "admission/eviction"),
            plots,
        }],
        rows,
    })
}

/// SDCC's selective caching.
pub fn selective(quick: bool, progress: &(dyn Fn(&str) + Sync)) -> Result<Outcome, EvalError> {
    let pcts: &[f64] = if quick { &[5.0] } else { &[2.0, 5.0, 10.0] };
    let spec: GenSpec = "oltp".parse()?;
    let ws = working_set(&spec)?;
    let names: Vec<String> = ["aa", "watchlist"].map(String::from).to_vec();
    let mut jobs = Vec::new();
    for name in &names {
        for &pct in pcts {
            let mut cfg = block_config(name, share(&ws, pct));
            cfg.cache.policy = PolicyKind::Clock;
            cfg.cache.admission = name.parse::<AdmissionConfig>().map_err(|e| EvalError::Config(e.to_string()))?;
            jobs.push(Job {
                spec: spec.clone(),
                cfg,
                workload: "oltp".into(),
                cache_size_pct: Some(pct),
                write_ratio: None,
            });
        }
    }
    let reports = run_all(&jobs, progress)?;
    let rows: Vec<Row> = jobs.iter().zip(&reports).map(|(j, r)| row(j, r)).collect();
    let all: Vec<&Row> = rows.iter().collect();
    let plots = vec![
        Plot::line(
            "selective-hit-ratio",
            "Hit ratio, OLTP",
            "cache size (% of working set)",
            "hit ratio",
            series(&all, &names, |r| r.hit_ratio),
        ),
        Plot::line(
            "selective-promotes",
            "Flash writes (promotes), OLTP",
            "cache size (% of working set)",
            "GiB",
            series(&all, &names, |r| r.flash_write_bytes as f64 / (1u64 << 30) as f64),
        ),
    ];
    Ok(Outcome {
        sections: vec![Section {
            title: "Selective caching (SDCC watchlist)".into(),
            text: table(&rows, "admission"),
            plots,
        }],
        rows,
    })
}
