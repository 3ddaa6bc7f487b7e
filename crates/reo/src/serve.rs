//! `reo serve`: the S3 gateway with embedded defaults (`./reo-data`, 5 device files of 256 MiB,
//! a local backend directory `./reo-data/backend`, `127.0.0.1:9000`, generated credentials).

use std::net::SocketAddr;
use std::path::PathBuf;
use std::process::ExitCode;

use clap::Args;

#[derive(Args, Debug)]
pub struct ServeArgs {
    /// Directory of the device files, the gateway's state and (by default) the backend.
    #[arg(long, default_value = "./reo-data")]
    data_dir: PathBuf,
    /// Address to serve S3 on.
    #[arg(long, default_value = "127.0.0.1:9000")]
    listen: SocketAddr,
    /// Local backend directory (buckets are directories). Default: <data-dir>/backend.
    #[arg(long)]
    backend: Option<PathBuf>,
    /// Number of device files.
    #[arg(long, default_value_t = 5)]
    devices: usize,
    /// Size of each device file created on first start, in MiB.
    #[arg(long, default_value_t = 256)]
    device_mib: u64,
    /// S3 access key (with --secret-key). Default: generated once, kept in <data-dir>/credentials.
    #[arg(long)]
    access_key: Option<String>,
    /// S3 secret key.
    #[arg(long)]
    secret_key: Option<String>,
    /// Largest PUT or part body accepted, in MiB.
    #[arg(long, default_value_t = 1024)]
    max_body_mib: u64,
    /// Minimum age of a written object before it is flushed to the backend, in milliseconds
    /// (rewrites within it cost one backend write).
    #[arg(long, default_value_t = 0)]
    flush_delay_ms: u64,
    /// Write policy by bucket or key prefix, BUCKET[/PREFIX]=POLICY with POLICY one of
    /// write-back (the default), write-through, write-around, read-only; repeatable, the longest
    /// match wins.
    #[arg(long = "write-policy", value_name = "RULE")]
    write_policies: Vec<reo_gateway::gateway::policy::PolicyRule>,
}

pub fn run(a: &ServeArgs) -> Result<ExitCode, String> {
    let cfg = reo_gateway::launch::ServeConfig {
        data_dir: a.data_dir.clone(),
        listen: a.listen,
        backend: a.backend.clone(),
        devices: a.devices,
        device_mib: a.device_mib,
        access_key: a.access_key.clone(),
        secret_key: a.secret_key.clone(),
        max_body: a.max_body_mib << 20,
        flush_delay: std::time::Duration::from_millis(a.flush_delay_ms),
        policies: a.write_policies.clone(),
    };
    reo_gateway::launch::run(&cfg)?;
    Ok(ExitCode::SUCCESS)
}
