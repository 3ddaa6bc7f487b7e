//! `reo replay` from the command line: the JSON line's fields, failure points, and a bad trace
//! line named by file and line (or skipped and counted with `--skip-bad`).

use std::process::Command;

fn reo(args: &[&str]) -> std::process::Output {
    Command::new(env!("CARGO_BIN_EXE_reo")).args(args).output().expect("reo runs")
}

#[test]
fn json_line_has_the_named_fields_and_windows() {
    let out = reo(&[
        "replay",
        "--gen",
        "medisyn:weak,requests=3000",
        "--cache",
        "10%",
        "--window",
        "1000",
        "--fail-at",
        "1500:0",
        "--json",
    ]);
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    let text = String::from_utf8(out.stdout).unwrap();
    let v: serde_json::Value = serde_json::from_str(text.lines().last().unwrap()).unwrap();
    for f in [
        "requests",
        "hit_ratio",
        "byte_hit_ratio",
        "clwa",
        "flwa",
        "space_efficiency",
        "flash_write_bytes",
        "backend_read_bytes",
        "mean_latency_ms",
        "bandwidth_mibps",
        "requests_per_s",
        "windows",
    ] {
        assert!(v.get(f).is_some(), "{f} missing");
    }
    assert_eq!(v["requests"], 3000);
    let windows = v["windows"].as_array().unwrap();
    assert_eq!(windows.len(), 3);
    assert_eq!(windows[0]["failed_devices"], 0);
    assert_eq!(windows[2]["failed_devices"], 1);
    assert_eq!(v["failed_devices"], 1);
}

#[test]
fn a_bad_trace_line_is_named_or_skipped() {
    let dir = tempfile::tempdir().unwrap();
    let trace = dir.path().join("t.csv");
    std::fs::write(&trace, "0,get,1,0,4096\n1,get,2,0,4096\n2,frobnicate,3,0,4096\n3,get,1,0,4096\n").unwrap();
    let path = trace.to_str().unwrap();
    let out = reo(&["replay", path, "--cache", "1MiB", "--json"]);
    assert!(!out.status.success());
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(err.contains("t.csv:3"), "{err}");
    let out = reo(&["replay", path, "--cache", "1MiB", "--skip-bad", "--json"]);
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    let v: serde_json::Value =
        serde_json::from_str(String::from_utf8(out.stdout).unwrap().lines().last().unwrap()).unwrap();
    assert_eq!(v["requests"], 3);
    assert_eq!(v["hits"], 1);
    assert_eq!(v["skipped_lines"], 1);
}
