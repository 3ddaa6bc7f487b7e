//! Reliability test A1: SIGKILL a real `reo crashtest writer` process in a loop while it writes
//! with durability=sync, then check the reopened store against its expected-state file.
//! `REO_CRASH_CYCLES` sets the number of cycles (CI: 20; a long run: e.g. 1000).

use std::io::{BufRead, BufReader};
use std::process::{Command, Stdio};

#[test]
fn kill_nine_loop_loses_no_acknowledged_write() {
    let cycles: u64 = std::env::var("REO_CRASH_CYCLES").ok().and_then(|v| v.parse().ok()).unwrap_or(20);
    let bin = env!("CARGO_BIN_EXE_reo");
    let tmp = tempfile::tempdir().unwrap();
    let dir = tmp.path();
    let state = dir.join("state.log");
    let common = |cmd: &str| {
        let mut c = Command::new(bin);
        c.args(["crashtest", cmd, "--dir"]).arg(dir).arg("--state").arg(&state).args(["--device-mib", "32"]);
        c
    };
    let mut total_acked = 0u64;
    for cycle in 0..cycles {
        let mut child = common("writer")
            .args(["--seed", &(cycle + 1).to_string()])
            .stdout(Stdio::piped())
            .stderr(Stdio::inherit())
            .spawn()
            .expect("start writer");
        // Kill after a varying number of acknowledgements: the event, not a timer.
        let target = 1 + (cycle * 7919) % 60;
        let mut lines = BufReader::new(child.stdout.take().unwrap()).lines();
        let mut seen = 0;
        while seen < target {
            match lines.next() {
                Some(Ok(l)) if l.starts_with("acked ") => seen += 1,
                Some(Ok(_)) => {}
                _ => panic!("cycle {cycle}: writer exited early: {:?}", child.wait()),
            }
        }
        child.kill().expect("SIGKILL the writer");
        child.wait().unwrap();
        total_acked += seen;
        let out = common("verify").output().expect("run verify");
        assert!(
            out.status.success(),
            "cycle {cycle}: verify failed\nstdout: {}\nstderr: {}",
            String::from_utf8_lossy(&out.stdout),
            String::from_utf8_lossy(&out.stderr)
        );
        let report: serde_json::Value =
            serde_json::from_str(String::from_utf8_lossy(&out.stdout).lines().last().unwrap()).unwrap();
        assert_eq!(report["violations"], 0, "cycle {cycle}: {report}");
    }
    eprintln!("crash loop: {cycles} cycles, {total_acked} acknowledged puts, 0 violations");
}
