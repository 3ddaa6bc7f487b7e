//! `reo`: the one binary of Reo, a reliable, efficient flash object cache.
//!
//! Subcommands so far: `bench store` (the array store measured against the devices' raw
//! bandwidth in the same run), `bench cache` (the cache manager's DRAM hot path and memory per
//! object), `bench rebuild` (device replacement and prioritized rebuild), `bench replay` (`reo
//! replay` against libCacheSim on the same trace) and `crashtest` (the SIGKILL
//! crash-consistency workload and its checker). The gateway, replay and evaluation come with
//! their issues.

mod admin;
mod bench_cache;
mod bench_cluster;
mod bench_gateway;
mod bench_policy;
mod bench_rebuild;
mod bench_replay;
mod bench_store;
mod config;
mod crashtest;
mod eval;
mod gen_trace;
mod progress;
mod replay;
mod serve;

use clap::{Parser, Subcommand, ValueEnum};
use std::process::ExitCode;

#[derive(Parser)]
#[command(name = "reo", version, about = "Reo: a reliable, efficient flash object cache")]
struct Cli {
    /// Logs on stderr as text for people, or as one JSON object per line (timestamp, level,
    /// message, target and the event's fields) for log shippers.
    #[arg(long, global = true, value_enum, default_value_t = LogFormat::Text)]
    log_format: LogFormat,
    #[command(subcommand)]
    command: Command,
}

/// How log lines are written.
#[derive(Clone, Copy, Debug, PartialEq, Eq, ValueEnum)]
enum LogFormat {
    /// One line of text per event (colored on a terminal).
    Text,
    /// One JSON object per event and line.
    Json,
}

#[derive(Subcommand)]
enum Command {
    /// Serve S3 (write-back caching gateway in front of a backend; defaults need no arguments).
    Serve(serve::ServeArgs),
    /// Replay a trace (or a generated workload) through the cache over simulated devices.
    Replay(replay::ReplayArgs),
    /// Run a named experiment of the evaluation: report.md, results.json, plots.
    Eval(eval::EvalArgs),
    /// Administer a running server (status, devices, flush, scrub, hints) over its signed API.
    Admin(admin::AdminArgs),
    /// Measure performance against the machine's physical limits.
    Bench {
        #[command(subcommand)]
        what: BenchWhat,
    },
    /// Crash-consistency workload: `writer` puts and frees with durability=sync until killed;
    /// `verify` reopens the store and checks it against the writer's expected-state file.
    Crashtest {
        #[command(subcommand)]
        what: crashtest::CrashCommand,
    },
    /// Write a deterministic synthetic trace (medisyn, dedup, scan, oltp) to a file.
    GenTrace(gen_trace::GenTraceArgs),
}

#[derive(Subcommand)]
enum BenchWhat {
    /// The flash array store: raw device bandwidth vs put/get, degraded get, codec, recovery.
    Store(bench_store::BenchStoreArgs),
    /// The cache manager: lookup+update ops/s per replacement policy and DRAM bytes per object.
    Cache(bench_cache::BenchCacheArgs),
    /// The S3 gateway on loopback under a built-in load: GET hits of 4 KiB and 4 MiB objects,
    /// write-back PUTs of 64 KiB, against the raw read bandwidth of its device files.
    Gateway(bench_gateway::BenchGatewayArgs),
    /// Device replacement: fail a device, replace it, rebuild in class order; rebuild bandwidth
    /// against the replacement file's raw write bandwidth, and each class's time to redundancy.
    Rebuild(bench_rebuild::BenchRebuildArgs),
    /// A three-node cluster on loopback (a private etcd): PUT latency with one and two copies
    /// against a single node, GET hits through the home node and another, failover time.
    Cluster(bench_cluster::BenchClusterArgs),
    /// `reo replay` against libCacheSim on the same Zipf trace in the same run: requests/s of
    /// each, and their ratio (median and spread over the runs).
    Replay(bench_replay::BenchReplayArgs),
    /// Internal to `reo bench store`: the writer process its crash restart kills.
    #[command(hide = true)]
    StoreWriter(bench_store::crash_writer::StoreWriterArgs),
    /// Internal to `reo bench gateway --peer nginx`: the floor server it compares both with.
    #[command(hide = true)]
    HttpFloor(bench_gateway::floor::FloorArgs),
}

/// The log filter without `RUST_LOG`: s3s's own error log is off, as it logs every refused
/// request at ERROR (anonymous clients could flood it); denials are logged by the gateway at a
/// bounded rate (`reo_gateway::denials`).
const DEFAULT_LOG: &str = "info,s3s=off";

/// Logs to stderr in `format`, `RUST_LOG` filtering (default [`DEFAULT_LOG`]), for every
/// command: the store and the cache report device failures, rebuilds and data loss through
/// `tracing` whichever command drives them.
fn init_logging(format: LogFormat) {
    let filter = tracing_subscriber::EnvFilter::try_from_default_env()
        .unwrap_or_else(|_| tracing_subscriber::EnvFilter::new(DEFAULT_LOG));
    let fmt = tracing_subscriber::fmt().with_env_filter(filter).with_writer(std::io::stderr);
    let _ = match format {
        // The message and the event's fields at the top level of each object, beside
        // `timestamp`, `level` and `target`: what log shippers index without a mapping.
        LogFormat::Json => fmt.json().flatten_event(true).try_init(),
        LogFormat::Text => fmt.with_ansi(progress::on_terminal()).try_init(), // no escape codes in log files
    };
}

fn main() -> ExitCode {
    let cli = Cli::parse();
    init_logging(cli.log_format);
    let result = match cli.command {
        Command::Bench { what: BenchWhat::Store(args) } => bench_store::run(&args),
        Command::Bench { what: BenchWhat::Cache(args) } => bench_cache::run(&args),
        Command::Bench { what: BenchWhat::Rebuild(args) } => bench_rebuild::run(&args),
        Command::Bench { what: BenchWhat::Gateway(args) } => bench_gateway::run(&args),
        Command::Bench { what: BenchWhat::Cluster(args) } => bench_cluster::run(&args),
        Command::Bench { what: BenchWhat::Replay(args) } => bench_replay::run(&args),
        Command::Bench { what: BenchWhat::StoreWriter(args) } => bench_store::crash_writer::run(&args),
        Command::Bench { what: BenchWhat::HttpFloor(args) } => bench_gateway::floor::run(&args),
        Command::Crashtest { what } => crashtest::run(what),
        Command::Serve(args) => serve::run(&args),
        Command::Replay(args) => replay::run(&args),
        Command::Eval(args) => eval::run(&args),
        Command::GenTrace(args) => gen_trace::run(&args),
        Command::Admin(args) => admin::run(&args),
    };
    progress::steps_done();
    match result {
        Ok(code) => code,
        Err(e) => {
            eprintln!("reo: {e}");
            ExitCode::from(2)
        }
    }
}
