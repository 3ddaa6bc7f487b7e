//! `reo admin`: administers a running `reo serve` through its signed API (`/_reo/admin/...`,
//! `/_reo/hints`, `/_reo/query`). Requests are SigV4-signed ([`sign`]) with a user's key pair
//! (an admin's for `/_reo/admin`) and sent over http or https ([`client`]); answers are the
//! server's own types, shown as text ([`show`]) or JSON (`--output`). Long operations (device
//! replacement, flush) poll the server's status and show their progress until they end; a scrub,
//! which the server runs within the request, shows a spinner. `reo admin user ...` manages the
//! users.

pub(crate) mod client;
mod refusal;
mod show;
pub(crate) mod sign;

use std::path::PathBuf;
use std::process::ExitCode;
use std::time::Duration;

use clap::{Args, Subcommand, ValueEnum};
use reo_gateway::api::admin_types::{
    DeviceFailed, DeviceReplaced, Flushing, Scrubbed, Status, UserKeys, UserList, UserRemoved,
};
use serde_json::Value;

use crate::progress::{Progress, Unit};

/// How answers are printed.
#[derive(Clone, Copy, Debug, PartialEq, Eq, ValueEnum)]
pub enum Output {
    /// Aligned text for people.
    Table,
    /// The server's answer as JSON (for scripts).
    Json,
}

#[derive(Args, Debug)]
pub struct AdminArgs {
    /// The server, http://HOST:PORT or https://HOST:PORT.
    #[arg(long, env = "REO_ENDPOINT", default_value = "http://127.0.0.1:9000")]
    endpoint: String,
    /// An access key of the server: an admin's (hints and queries: any user's).
    #[arg(long, env = "REO_ACCESS_KEY")]
    access_key: String,
    /// Its secret key.
    #[arg(long, env = "REO_SECRET_KEY", hide_env_values = true)]
    secret_key: String,
    /// PEM certificates to trust for an https endpoint besides the system's (a private CA's).
    #[arg(long, env = "REO_TLS_CA")]
    tls_ca: Option<PathBuf>,
    /// table (text for people) or json (the server's answer). Default: table for status, user
    /// and cluster status; json for the rest, as they printed before (their --json flags say
    /// json too).
    #[arg(long, global = true, value_enum)]
    output: Option<Output>,
    #[command(subcommand)]
    what: AdminCommand,
}

#[derive(Subcommand, Debug)]
enum AdminCommand {
    /// Devices, I/O, space, dirty bytes, flush lag, hit ratio, rebuild state (--json: as
    /// --output json).
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
    /// Members, leases, home shares, replica bytes per node, failovers pending (--json: as
    /// --output json).
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
        /// Print one JSON object with access_key and secret_key (as --output json).
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

/// A signed client and how to print its answers.
struct Admin {
    client: client::Client,
    output: Option<Output>,
}

impl Admin {
    fn status(&self) -> Result<Status, String> {
        self.client.call("GET", "/_reo/admin/status", &[], b"")
    }

    /// The output asked for: `--output`, else `json` if the command's `--json` flag is given,
    /// else the command's own default.
    fn output(&self, json_flag: bool, default: Output) -> Output {
        self.output.unwrap_or(if json_flag { Output::Json } else { default })
    }

    /// `v` as JSON, or as text by `table`.
    fn print<T: serde::Serialize>(&self, v: &T, json_flag: bool, default: Output, table: impl FnOnce(&T)) {
        match self.output(json_flag, default) {
            Output::Json => show::json(v),
            Output::Table => table(v),
        }
    }
}

fn user(a: &Admin, what: &UserCommand) -> Result<(), String> {
    match what {
        UserCommand::Add { name, role, scopes, json } => {
            let body = serde_json::json!({"name": name, "role": role.as_str(), "scopes": scopes});
            let k: UserKeys = a.client.call("POST", "/_reo/admin/users", &[], body.to_string().as_bytes())?;
            a.print(&k, *json, Output::Table, |k| show::user_keys(k, "added"));
        }
        UserCommand::List { json } => {
            let l: UserList = a.client.call("GET", "/_reo/admin/users", &[], b"")?;
            a.print(&l, *json, Output::Table, show::users);
        }
        UserCommand::Remove { name } => {
            let r: UserRemoved = a.client.call("DELETE", &format!("/_reo/admin/users/{name}"), &[], b"")?;
            a.print(&r, false, Output::Table, |r| println!("user {} removed", r.removed));
        }
        UserCommand::Rotate { name, json } => {
            let k: UserKeys = a.client.call("POST", &format!("/_reo/admin/users/{name}/rotate"), &[], b"")?;
            a.print(&k, *json, Output::Table, |k| show::user_keys(k, "has a new secret key"));
        }
    }
    Ok(())
}

/// Polls status until the rebuild of `device` is no longer running; its last status.
fn follow_rebuild(a: &Admin, device: usize) -> Result<Status, String> {
    let bar = Progress::bar(&format!("rebuilding dev{device}"), None, Unit::Bytes);
    loop {
        let s = a.status()?;
        let Some(r) = &s.rebuild else {
            return Ok(s);
        };
        bar.set_total(r.bytes_total);
        bar.set(r.bytes_done, &format!("{} of {} blobs ({})", r.blobs_done, r.blobs_total, r.state));
        if !r.ongoing() {
            bar.finish();
            return Ok(s);
        }
        std::thread::sleep(Duration::from_millis(250));
    }
}

/// Wakes the flusher and polls status until nothing is dirty; Ok(false) if `timeout` passed first
/// (the message, on stderr, says what is left and the backend's state).
fn flush(a: &Admin, timeout: Option<Duration>) -> Result<bool, String> {
    let began = std::time::Instant::now();
    let first: Flushing = a.client.call("POST", "/_reo/admin/flush", &[], b"")?;
    let bar = Progress::bar("flushing", Some(first.dirty_bytes.max(1)), Unit::Bytes);
    let mut kicked = began;
    loop {
        let s = a.status()?;
        let backend = show::backend(&s.backend);
        bar.set(
            first.dirty_bytes.saturating_sub(s.dirty_bytes),
            &format!("{} objects still dirty; backend {backend}", s.dirty_objects),
        );
        if s.dirty_objects == 0 {
            bar.finish();
            println!("flushed: nothing is dirty");
            return Ok(true);
        }
        if timeout.is_some_and(|t| began.elapsed() >= t) {
            bar.finish();
            eprintln!(
                "reo: flush timed out after {:.1} s: {} objects ({} bytes) still dirty; backend {backend}{}",
                began.elapsed().as_secs_f64(),
                s.dirty_objects,
                s.dirty_bytes,
                show::stuck_note(&s)
            );
            return Ok(false);
        }
        if kicked.elapsed() >= Duration::from_secs(1) {
            // Wake the flusher again: after an outage it retries now instead of after its backoff.
            a.client.call::<Flushing>("POST", "/_reo/admin/flush", &[], b"")?;
            kicked = std::time::Instant::now();
        }
        std::thread::sleep(Duration::from_millis(200));
    }
}

pub fn run(args: &AdminArgs) -> Result<ExitCode, String> {
    let keys = sign::Keys { access: args.access_key.clone(), secret: args.secret_key.clone() };
    let a = Admin { client: client::Client::new(&args.endpoint, keys, args.tls_ca.as_deref())?, output: args.output };
    let raw = |method: &str, path: &str, query: &[(&str, String)], body: &[u8]| -> Result<(), String> {
        // Hints, queries and a cluster's leave have no text form: JSON either way.
        show::json(&a.client.call::<Value>(method, path, query, body)?);
        Ok(())
    };
    match &args.what {
        AdminCommand::Status { json } => a.print(&a.status()?, *json, Output::Table, show::status),
        AdminCommand::Device { what: DeviceCommand::Fail { device } } => {
            let r: DeviceFailed =
                a.client.call("POST", "/_reo/admin/device/fail", &[("device", device.to_string())], b"")?;
            a.print(&r, false, Output::Json, show::device_failed);
        }
        AdminCommand::Device { what: DeviceCommand::Replace { device, path, bandwidth, no_follow } } => {
            let mut q = vec![("device", device.to_string()), ("path", path.clone())];
            q.extend(bandwidth.map(|b| ("rate_bps", b.to_string())));
            let r: DeviceReplaced = a.client.call("POST", "/_reo/admin/device/replace", &q, b"")?;
            a.print(&r, false, Output::Json, show::device_replaced);
            if *no_follow {
                return Ok(ExitCode::SUCCESS);
            }
            let s = follow_rebuild(&a, *device)?;
            let state = s.rebuild.as_ref().map_or("none", |r| r.state.as_str());
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
        AdminCommand::Scrub => {
            // The server scrubs within the request: a spinner while it reads every chunk.
            let spin = Progress::spinner("scrubbing every chunk on flash");
            let r: Scrubbed = a.client.call("POST", "/_reo/admin/scrub", &[], b"")?;
            spin.finish();
            a.print(&r, false, Output::Json, show::scrubbed);
        }
        AdminCommand::Hints { what: None | Some(HintsCommand::List) } => raw("GET", "/_reo/hints", &[], b"")?,
        AdminCommand::Hints { what: Some(HintsCommand::Submit { json }) } => {
            raw("POST", "/_reo/hints", &[], json.as_bytes())?
        }
        AdminCommand::Hints { what: Some(HintsCommand::Cancel { id }) } => {
            raw("DELETE", &format!("/_reo/hints/{id}"), &[], b"")?
        }
        AdminCommand::User { what } => user(&a, what)?,
        AdminCommand::Cluster { what: ClusterCommand::Status { json } } => {
            let s: Value = a.client.call("GET", "/_reo/admin/cluster", &[], b"")?;
            a.print(&s, *json, Output::Table, show::cluster);
        }
        AdminCommand::Cluster { what: ClusterCommand::Leave } => raw("POST", "/_reo/admin/cluster/leave", &[], b"")?,
        AdminCommand::Query { bucket, key, prefix } => {
            let mut q = vec![("bucket", bucket.clone())];
            match (key, prefix) {
                (Some(k), _) => q.push(("key", k.clone())),
                (None, Some(p)) => q.push(("prefix", p.clone())),
                (None, None) => return Err("query: give --key or --prefix".into()),
            }
            raw("GET", "/_reo/query", &q, b"")?
        }
    }
    Ok(ExitCode::SUCCESS)
}
