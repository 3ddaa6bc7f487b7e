//! `reo admin`'s answers as aligned text for people (`--output table`): the server's typed
//! answers (`reo_gateway::api::admin_types`) rendered line by line. `--output json` prints the
//! same answers re-serialized instead ([`json`]).

use reo_gateway::api::admin_types::{DeviceFailed, DeviceReplaced, HealthReport, Scrubbed, Status, UserKeys, UserList};
use serde_json::Value;

/// `v` as indented JSON on stdout.
pub fn json(v: &impl serde::Serialize) {
    println!("{}", serde_json::to_string_pretty(v).unwrap_or_default());
}

fn mib(bytes: u64) -> f64 {
    bytes as f64 / f64::from(1 << 20)
}

/// The backend's state as a phrase: "up", or "down for 12 s (last error: …)".
pub fn backend(b: &HealthReport) -> String {
    if b.up {
        return "up".into();
    }
    format!(
        "down for {:.0} s (last error: {}){}",
        b.down_seconds,
        b.last_error.as_deref().unwrap_or("?"),
        if b.slowing_down { "; writes get 503 SlowDown" } else { "" }
    )
}

/// "; N of them stuck (bucket missing in the backend: a, b)" when objects are stuck, else "".
pub fn stuck_note(s: &Status) -> String {
    if s.stuck.objects == 0 {
        return String::new();
    }
    let buckets: Vec<&str> = s.stuck.buckets.iter().map(|b| b.bucket.as_str()).collect();
    format!("; {} of them stuck (bucket missing in the backend: {})", s.stuck.objects, buckets.join(", "))
}

/// `reo admin status`.
pub fn status(s: &Status) {
    println!("devices:");
    for d in &s.devices {
        println!(
            "  dev{}: {:<10} {} reads ({:.1} MiB), {} writes ({:.1} MiB), {} syncs, {} errors",
            d.device,
            d.health,
            d.count("reads"),
            mib(d.count("read_bytes")),
            d.count("writes"),
            mib(d.count("write_bytes")),
            d.count("syncs"),
            d.count("errors")
        );
    }
    let io = &s.io;
    println!(
        "io: {} reads ({:.1} MiB), {} puts ({:.1} MiB), {} degraded reads, {} read errors, {} write errors, {} checksum errors, {} slow reads left behind",
        io.reads, mib(io.read_bytes), io.puts, mib(io.put_bytes), io.degraded_reads,
        io.read_errors, io.write_errors, io.checksum_errors, io.slow_reads
    );
    println!(
        "space: {} of {} bands free, {:.1} MiB capacity",
        s.space.free_bands,
        s.space.total_bands,
        mib(s.space.capacity)
    );
    for p in &s.space.per_scheme {
        println!("  {}: {} bands, {:.1} MiB live", p.scheme, p.bands, mib(p.live_bytes));
    }
    let c = &s.cache;
    println!(
        "cache: {} objects, {:.1} of {:.1} MiB, hit ratio {:.3} ({} of {} requests)",
        c.objects,
        mib(c.bytes),
        mib(c.capacity),
        c.hit_ratio,
        c.hits,
        c.requests
    );
    println!(
        "dirty: {} objects, {:.1} MiB, flush lag {:.1} s; backend {}",
        s.dirty_objects,
        mib(s.dirty_bytes),
        s.flush_lag_seconds,
        backend(&s.backend)
    );
    if s.stuck.objects > 0 {
        println!("stuck: {} objects, {:.1} MiB, not flushable for now:", s.stuck.objects, mib(s.stuck.bytes));
        for b in &s.stuck.buckets {
            println!(
                "  {}: {} objects, {:.1} MiB, for {:.0} s (e.g. {}): {}",
                b.bucket,
                b.objects,
                mib(b.bytes),
                b.since_seconds,
                b.key,
                b.reason
            );
        }
    }
    match &s.rebuild {
        Some(r) => println!(
            "rebuild: dev{} {} ({} of {} blobs, {:.1} of {:.1} MiB)",
            r.device,
            r.state,
            r.blobs_done,
            r.blobs_total,
            mib(r.bytes_done),
            mib(r.bytes_total)
        ),
        None => println!("rebuild: none"),
    }
    println!("data-loss events: {}; hints in force: {}", s.data_loss_events, s.hints);
}

/// `reo admin scrub`.
pub fn scrubbed(r: &Scrubbed) {
    println!(
        "scrubbed {} blobs: {} chunks verified ({:.1} MiB read), {} bad, {} repaired, {} skipped; \
         {} blobs unrecoverable, {} blobs restored",
        r.blobs,
        r.chunks_verified,
        mib(r.bytes_read),
        r.chunks_bad,
        r.chunks_repaired,
        r.chunks_skipped,
        r.unrecoverable,
        r.blobs_restored
    );
}

/// `reo admin device fail`.
pub fn device_failed(r: &DeviceFailed) {
    println!(
        "dev{} failed: {} fragments keep full redundancy, {} degraded, {} lost of clean objects \
         (refetched from the backend), {} lost of unflushed objects",
        r.device, r.healthy_fragments, r.degraded_fragments, r.lost_clean_fragments, r.lost_dirty_fragments
    );
}

/// `reo admin device replace`, once the rebuild has started.
pub fn device_replaced(r: &DeviceReplaced) {
    let rate = r.rate_bps.map_or_else(|| "unlimited".to_string(), |b| format!("{:.1} MiB/s", mib(b)));
    println!("dev{} replaced by {}; rebuild {} (bandwidth {rate})", r.device, r.path, r.rebuild);
}

/// A user's new key pair.
pub fn user_keys(k: &UserKeys, what: &str) {
    println!("user {} ({}) {what}; its key pair (the secret is not shown again):", k.name, k.role.as_str());
    println!("  access key: {}", k.access_key);
    println!("  secret key: {}", k.secret_key);
}

/// `reo admin user list`, one aligned row per user.
pub fn users(l: &UserList) {
    for u in &l.users {
        let scopes: Vec<String> = u.scopes.iter().map(ToString::to_string).collect();
        println!(
            "{:<24} {:<10} {:<24} {}{}",
            u.name,
            u.role.as_str(),
            u.access_key,
            if scopes.is_empty() { "every bucket".to_string() } else { scopes.join(", ") },
            if u.builtin { " (built-in)" } else { "" }
        );
    }
}

/// `reo admin cluster status` (the cluster layer's answer, untyped: it comes from reo-cluster's
/// extension as JSON).
pub fn cluster(s: &Value) {
    let flag = |k: &str| s[k].as_bool().unwrap_or(false);
    println!(
        "node {} — view {} ({}){}{}",
        s["node_id"].as_str().unwrap_or("?"),
        s["view"].as_str().unwrap_or("?"),
        if flag("settled") { "settled" } else { "changing" },
        if flag("fenced") { ", FENCED (no valid lease: writes refused)" } else { "" },
        if flag("etcd_up") { "" } else { ", etcd unreachable" },
    );
    println!("{:<16} {:<24} {:>10} {:>14} {:>12}", "member", "address", "home share", "replica free", "replicas held");
    for m in s["members"].as_array().into_iter().flatten() {
        println!(
            "{:<16} {:<24} {:>9.1}% {:>14} {:>12}",
            m["id"].as_str().unwrap_or("?"),
            m["advertise"].as_str().unwrap_or("?"),
            m["home_share"].as_f64().unwrap_or(0.0) * 100.0,
            m["replica_free"],
            m["replicas_held"]
        );
    }
    let pending = s["pending_failover"].as_array().map_or(0, Vec::len);
    println!(
        "replicas held here: {} objects, {} bytes; unflushed here: {} objects; awaiting failover: {pending} node(s) {}",
        s["replicas"]["objects"], s["replicas"]["bytes"], s["dirty_objects"], s["pending_failover"]
    );
}
