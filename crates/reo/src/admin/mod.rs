//! `reo admin`: administers a running `reo serve` through its signed API (`/_reo/admin/...`,
//! `/_reo/hints`, `/_reo/query`). Requests are SigV4-signed ([`sigv4`]) with a user's key pair
//! (an admin's for `/_reo/admin`) and sent over a small blocking HTTP/1.1 client ([`http`]). Long
//! operations (device replacement, flush) poll the server's status and draw a progress bar until
//! they end. `reo admin user ...` manages the users.

pub(crate) mod http;
pub(crate) mod sigv4;

use std::io::Write;
use std::process::ExitCode;
use std::time::Duration;

use clap::{Args, Subcommand};
use serde_json::Value;

#[derive(Args, Debug)]
pub struct AdminArgs {
    /// The server, http://HOST:PORT.
    #[arg(long, env = "REO_ENDPOINT", default_value = "http://127.0.0.1:9000")]
    endpoint: String,
    /// An access key of the server: an admin's (hints and queries: any user's).
    #[arg(long, env = "REO_ACCESS_KEY")]
    access_key: String,
    /// Its secret key.
    #[arg(long, env = "REO_SECRET_KEY", hide_env_values = true)]
    secret_key: String,
    #[command(subcommand)]
    what: AdminCommand,
}

#[derive(Subcommand, Debug)]
enum AdminCommand {
    /// Devices, I/O, space, dirty bytes, flush lag, hit ratio, rebuild state (--json: raw).
    Status {
        #[arg(long)]
        json: bool,
    },
    /// Fail or replace a device.
    Device {
        #[command(subcommand)]
        what: DeviceCommand,
    },
    /// Flush every unflushed object to the backend; waits until nothing is dirty (with
    /// --timeout, at most that long: then exits 1 saying what is left and the backend's state).
    Flush {
        /// Give up after this long, e.g. 30s, 5m.
        #[arg(long, value_parser = parse_timeout)]
        timeout: Option<Duration>,
    },
    /// Verify every chunk on flash and repair what redundancy allows.
    Scrub,
    /// List, submit or cancel hints.
    Hints {
        #[command(subcommand)]
        what: Option<HintsCommand>,
    },
    /// Manage the gateway's users (key pairs with a role and optional scopes).
    User {
        #[command(subcommand)]
        what: UserCommand,
    },
    /// This node's cluster: members, leases, home shares, replicas, failovers; or leave it.
    Cluster {
        #[command(subcommand)]
        what: ClusterCommand,
    },
    /// What the cache holds of an object (--key) or of every object under --prefix.
    Query {
        #[arg(long)]
        bucket: String,
        #[arg(long, conflicts_with = "prefix")]
        key: Option<String>,
        #[arg(long)]
        prefix: Option<String>,
    },
}

#[derive(Subcommand, Debug)]
enum ClusterCommand {
    /// Members, leases, home shares, replica bytes per node, failovers pending (--json: raw).
    Status {
        #[arg(long)]
        json: bool,
    },
    /// Write back this node's unflushed objects, then deregister it from the cluster.
    Leave,
}

#[derive(Subcommand, Debug)]
enum DeviceCommand {
    /// Mark device N failed (its data is served degraded or refetched).
    Fail { device: usize },
    /// Replace failed device N with a new device file at PATH (relative to the server's data
    /// directory) and follow the rebuild until it ends.
    Replace {
        device: usize,
        path: String,
        /// Most bytes per second the rebuild may write, e.g. 200MiB (default: the server's
        /// rebuild bandwidth, `reo serve --rebuild-bps`).
        #[arg(long, value_parser = parse_bandwidth)]
        bandwidth: Option<u64>,
        /// Return once the rebuild has started (follow it with `reo admin status`).
        #[arg(long)]
        no_follow: bool,
    },
}

#[derive(Subcommand, Debug)]
enum UserCommand {
    /// Add a user and print its new key pair (the only time the secret is shown).
    Add {
        name: String,
        /// admin, readwrite or readonly.
        #[arg(long)]
        role: reo_gateway::users::Role,
        /// Confine the user to a bucket or a key prefix, BUCKET or BUCKET/PREFIX (repeatable;
        /// none: every bucket).
        #[arg(long = "scope", value_name = "SCOPE")]
        scopes: Vec<String>,
        /// Print one JSON object with access_key and secret_key.
        #[arg(long)]
        json: bool,
    },
    /// List the users (names, roles, scopes, access keys; never secrets).
    List {
        #[arg(long)]
        json: bool,
    },
    /// Remove a user: its key stops working at once.
    Remove { name: String },
    /// Give a user a new secret key (the access key stays) and print the pair.
    Rotate {
        name: String,
        #[arg(long)]
        json: bool,
    },
}

#[derive(Subcommand, Debug)]
enum HintsCommand {
    /// The hints in force (the default).
    List,
    /// Submit a hint given as JSON (see README: Hints).
    Submit { json: String },
    /// Withdraw a hint by request id.
    Cancel { id: String },
}

fn parse_timeout(s: &str) -> Result<Duration, String> {
    crate::config::parse_duration(s)
        .ok_or_else(|| format!("expected a duration like \"30s\", \"5m\" or \"250ms\", got {s:?}"))
}

/// A bandwidth as a size per second, e.g. `200MiB`; more than 0.
fn parse_bandwidth(s: &str) -> Result<u64, String> {
    match crate::config::parse_size(s) {
        Some(0) => Err("must be more than 0 (leave it out for the server's rebuild bandwidth)".into()),
        Some(b) => Ok(b),
        None => Err(format!("expected bytes per second as a size like \"200MiB\" or \"64KiB\", got {s:?}")),
    }
}

struct Admin {
    client: http::Client,
}

impl Admin {
    /// A signed call; a non-2xx answer becomes an error with the server's message.
    fn call(&self, method: &str, path: &str, query: &[(&str, String)], body: &[u8]) -> Result<Value, String> {
        let q: Vec<(String, String)> = query.iter().map(|(k, v)| (k.to_string(), v.clone())).collect();
        let (status, v) = self.client.call(method, path, &q, body)?;
        if !(200..300).contains(&status) {
            let msg = v.get("error").and_then(Value::as_str).map_or_else(|| v.to_string(), str::to_string);
            return Err(format!("{method} {path}: HTTP {status}: {}", msg.trim()));
        }
        Ok(v)
    }

    fn status(&self) -> Result<Value, String> {
        self.call("GET", "/_reo/admin/status", &[], b"")
    }
}

/// A user's new key pair, as JSON or as text.
fn print_pair(v: &Value, json: bool, what: &str) {
    if json {
        print_json(
            &serde_json::json!({"name": v["name"], "role": v["role"], "access_key": v["access_key"], "secret_key": v["secret_key"]}),
        );
        return;
    }
    println!(
        "user {} ({}) {what}; its key pair (the secret is not shown again):",
        str_of(&v["name"]),
        str_of(&v["role"])
    );
    println!("  access key: {}", str_of(&v["access_key"]));
    println!("  secret key: {}", str_of(&v["secret_key"]));
}

fn str_of(v: &Value) -> &str {
    v.as_str().unwrap_or("?")
}

fn user(a: &Admin, what: &UserCommand) -> Result<(), String> {
    match what {
        UserCommand::Add { name, role, scopes, json } => {
            let body = serde_json::json!({"name": name, "role": role.as_str(), "scopes": scopes});
            let v = a.call("POST", "/_reo/admin/users", &[], body.to_string().as_bytes())?;
            print_pair(&v, *json, "added");
        }
        UserCommand::List { json } => {
            let v = a.call("GET", "/_reo/admin/users", &[], b"")?;
            if *json {
                print_json(&v);
                return Ok(());
            }
            for u in v["users"].as_array().into_iter().flatten() {
                let scopes: Vec<&str> =
                    u["scopes"].as_array().into_iter().flatten().filter_map(Value::as_str).collect();
                println!(
                    "{:<24} {:<10} {:<24} {}{}",
                    str_of(&u["name"]),
                    str_of(&u["role"]),
                    str_of(&u["access_key"]),
                    if scopes.is_empty() { "every bucket".to_string() } else { scopes.join(", ") },
                    if u["builtin"].as_bool().unwrap_or(false) { " (built-in)" } else { "" }
                );
            }
        }
        UserCommand::Remove { name } => {
            a.call("DELETE", &format!("/_reo/admin/users/{name}"), &[], b"")?;
            println!("user {name} removed");
        }
        UserCommand::Rotate { name, json } => {
            let v = a.call("POST", &format!("/_reo/admin/users/{name}/rotate"), &[], b"")?;
            print_pair(&v, *json, "has a new secret key");
        }
    }
    Ok(())
}

fn print_json(v: &Value) {
    println!("{}", serde_json::to_string_pretty(v).unwrap_or_default());
}

fn mib(v: &Value) -> f64 {
    v.as_u64().unwrap_or(0) as f64 / f64::from(1 << 20)
}

/// Draws `[#####.....]  50.0% label` on stderr, in place.
fn progress(fraction: f64, label: &str) {
    let f = fraction.clamp(0.0, 1.0);
    let filled = (f * 30.0).round() as usize;
    eprint!("\r[{}{}] {:5.1}% {label}   ", "#".repeat(filled), ".".repeat(30 - filled), f * 100.0);
    let _ = std::io::stderr().flush();
}

fn show_status(s: &Value) {
    println!("devices:");
    for d in s["devices"].as_array().into_iter().flatten() {
        let io = &d["io"];
        println!(
            "  dev{}: {:<10} {} reads ({:.1} MiB), {} writes ({:.1} MiB), {} syncs, {} errors",
            d["device"],
            d["health"].as_str().unwrap_or("?"),
            io["reads"],
            mib(&io["read_bytes"]),
            io["writes"],
            mib(&io["write_bytes"]),
            io["syncs"],
            io["errors"]
        );
    }
    let io = &s["io"];
    println!(
        "io: {} reads ({:.1} MiB), {} puts ({:.1} MiB), {} degraded reads, {} read errors, {} write errors, {} checksum errors, {} slow reads left behind",
        io["reads"], mib(&io["read_bytes"]), io["puts"], mib(&io["put_bytes"]), io["degraded_reads"],
        io["read_errors"], io["write_errors"], io["checksum_errors"], io["slow_reads"]
    );
    println!(
        "space: {} of {} bands free, {:.1} MiB capacity",
        s["space"]["free_bands"],
        s["space"]["total_bands"],
        mib(&s["space"]["capacity"])
    );
    for p in s["space"]["per_scheme"].as_array().into_iter().flatten() {
        println!(
            "  {}: {} bands, {:.1} MiB live",
            p["scheme"].as_str().unwrap_or("?"),
            p["bands"],
            mib(&p["live_bytes"])
        );
    }
    let c = &s["cache"];
    println!(
        "cache: {} objects, {:.1} of {:.1} MiB, hit ratio {:.3} ({} of {} requests)",
        c["objects"],
        mib(&c["bytes"]),
        mib(&c["capacity"]),
        c["hit_ratio"].as_f64().unwrap_or(0.0),
        c["hits"],
        c["requests"]
    );
    println!(
        "dirty: {} objects, {:.1} MiB, flush lag {:.1} s; backend {}",
        s["dirty_objects"],
        mib(&s["dirty_bytes"]),
        s["flush_lag_seconds"].as_f64().unwrap_or(0.0),
        backend_state(s)
    );
    let stuck = &s["stuck"];
    if stuck["objects"].as_u64().unwrap_or(0) > 0 {
        println!("stuck: {} objects, {:.1} MiB, not flushable for now:", stuck["objects"], mib(&stuck["bytes"]));
        for b in stuck["buckets"].as_array().into_iter().flatten() {
            println!(
                "  {}: {} objects, {:.1} MiB, for {:.0} s (e.g. {}): {}",
                b["bucket"].as_str().unwrap_or("?"),
                b["objects"],
                mib(&b["bytes"]),
                b["since_seconds"].as_f64().unwrap_or(0.0),
                b["key"].as_str().unwrap_or("?"),
                b["reason"].as_str().unwrap_or("?")
            );
        }
    }
    match s["rebuild"].as_object() {
        Some(r) => println!(
            "rebuild: dev{} {} ({} of {} blobs, {:.1} of {:.1} MiB)",
            r["device"],
            r["state"].as_str().unwrap_or("?"),
            r["blobs_done"],
            r["blobs_total"],
            mib(&r["bytes_done"]),
            mib(&r["bytes_total"])
        ),
        None => println!("rebuild: none"),
    }
    println!("data-loss events: {}; hints in force: {}", s["data_loss_events"], s["hints"]);
}

/// Polls status until the rebuild of `device` is no longer running.
fn follow_rebuild(a: &Admin, device: usize) -> Result<Value, String> {
    loop {
        let s = a.status()?;
        let r = &s["rebuild"];
        let state = r["state"].as_str().unwrap_or("none").to_string();
        let total = r["bytes_total"].as_u64().unwrap_or(0);
        let done = r["bytes_done"].as_u64().unwrap_or(0);
        let f = if total == 0 { 1.0 } else { done as f64 / total as f64 };
        progress(
            f,
            &format!(
                "rebuilding dev{device}: {:.1}/{:.1} MiB ({state})",
                mib(&r["bytes_done"]),
                mib(&r["bytes_total"])
            ),
        );
        if state != "running" && state != "paused" {
            eprintln!();
            return Ok(s);
        }
        std::thread::sleep(Duration::from_millis(250));
    }
}

/// The backend's state in a status answer, as a phrase: "up", or "down for 12 s (last error: …)".
fn backend_state(s: &Value) -> String {
    let b = &s["backend"];
    if b["up"].as_bool().unwrap_or(true) {
        return "up".into();
    }
    format!(
        "down for {:.0} s (last error: {}){}",
        b["down_seconds"].as_f64().unwrap_or(0.0),
        b["last_error"].as_str().unwrap_or("?"),
        if b["slowing_down"].as_bool().unwrap_or(false) { "; writes get 503 SlowDown" } else { "" }
    )
}

/// "; N stuck (bucket missing in the backend: a, b)" when objects are stuck, else "".
fn stuck_note(s: &Value) -> String {
    let n = s["stuck"]["objects"].as_u64().unwrap_or(0);
    if n == 0 {
        return String::new();
    }
    let buckets: Vec<&str> =
        s["stuck"]["buckets"].as_array().into_iter().flatten().filter_map(|b| b["bucket"].as_str()).collect();
    format!("; {n} of them stuck (bucket missing in the backend: {})", buckets.join(", "))
}

/// Wakes the flusher and polls status until nothing is dirty; Ok(false) if `timeout` passed first
/// (the message, on stderr, says what is left and the backend's state).
fn flush(a: &Admin, timeout: Option<Duration>) -> Result<bool, String> {
    let began = std::time::Instant::now();
    let first = a.call("POST", "/_reo/admin/flush", &[], b"")?;
    let start = first["dirty_bytes"].as_u64().unwrap_or(0).max(1);
    let mut kicked = began;
    loop {
        let s = a.status()?;
        let (n, bytes) = (s["dirty_objects"].as_u64().unwrap_or(0), s["dirty_bytes"].as_u64().unwrap_or(0));
        let backend = backend_state(&s);
        progress(
            1.0 - bytes as f64 / start as f64,
            &format!("{n} objects ({:.1} MiB) still dirty; backend {backend}", mib(&s["dirty_bytes"])),
        );
        if n == 0 {
            eprintln!();
            println!("flushed: nothing is dirty");
            return Ok(true);
        }
        if timeout.is_some_and(|t| began.elapsed() >= t) {
            eprintln!();
            eprintln!(
                "reo: flush timed out after {:.1} s: {n} objects ({bytes} bytes) still dirty; backend {backend}{}",
                began.elapsed().as_secs_f64(),
                stuck_note(&s)
            );
            return Ok(false);
        }
        if kicked.elapsed() >= Duration::from_secs(1) {
            // Wake the flusher again: after an outage it retries now instead of after its backoff.
            a.call("POST", "/_reo/admin/flush", &[], b"")?;
            kicked = std::time::Instant::now();
        }
        std::thread::sleep(Duration::from_millis(200));
    }
}

/// The cluster status as text.
fn show_cluster(s: &serde_json::Value) {
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

pub fn run(args: &AdminArgs) -> Result<ExitCode, String> {
    let a = Admin { client: http::Client::new(&args.endpoint, args.access_key.clone(), args.secret_key.clone())? };
    match &args.what {
        AdminCommand::Status { json: true } => print_json(&a.status()?),
        AdminCommand::Status { json: false } => show_status(&a.status()?),
        AdminCommand::Device { what: DeviceCommand::Fail { device } } => {
            print_json(&a.call("POST", "/_reo/admin/device/fail", &[("device", device.to_string())], b"")?)
        }
        AdminCommand::Device { what: DeviceCommand::Replace { device, path, bandwidth, no_follow } } => {
            let mut q = vec![("device", device.to_string()), ("path", path.clone())];
            q.extend(bandwidth.map(|b| ("rate_bps", b.to_string())));
            print_json(&a.call("POST", "/_reo/admin/device/replace", &q, b"")?);
            if *no_follow {
                return Ok(ExitCode::SUCCESS);
            }
            let s = follow_rebuild(&a, *device)?;
            let state = s["rebuild"]["state"].as_str().unwrap_or("none");
            println!("rebuild of dev{device}: {state}");
            if state != "done" {
                return Ok(ExitCode::from(1));
            }
        }
        AdminCommand::Flush { timeout } => {
            if !flush(&a, *timeout)? {
                return Ok(ExitCode::from(1));
            }
        }
        AdminCommand::Scrub => print_json(&a.call("POST", "/_reo/admin/scrub", &[], b"")?),
        AdminCommand::Hints { what: None | Some(HintsCommand::List) } => {
            print_json(&a.call("GET", "/_reo/hints", &[], b"")?)
        }
        AdminCommand::Hints { what: Some(HintsCommand::Submit { json }) } => {
            print_json(&a.call("POST", "/_reo/hints", &[], json.as_bytes())?)
        }
        AdminCommand::Hints { what: Some(HintsCommand::Cancel { id }) } => {
            print_json(&a.call("DELETE", &format!("/_reo/hints/{id}"), &[], b"")?)
        }
        AdminCommand::User { what } => user(&a, what)?,
        AdminCommand::Cluster { what: ClusterCommand::Status { json } } => {
            let s = a.call("GET", "/_reo/admin/cluster", &[], b"")?;
            if *json {
                print_json(&s);
            } else {
                show_cluster(&s);
            }
        }
        AdminCommand::Cluster { what: ClusterCommand::Leave } => {
            print_json(&a.call("POST", "/_reo/admin/cluster/leave", &[], b"")?)
        }
        AdminCommand::Query { bucket, key, prefix } => {
            let mut q = vec![("bucket", bucket.clone())];
            match (key, prefix) {
                (Some(k), _) => q.push(("key", k.clone())),
                (None, Some(p)) => q.push(("prefix", p.clone())),
                (None, None) => return Err("query: give --key or --prefix".into()),
            }
            print_json(&a.call("GET", "/_reo/query", &q, b"")?)
        }
    }
    Ok(ExitCode::SUCCESS)
}
