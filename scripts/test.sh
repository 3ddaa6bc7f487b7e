#!/usr/bin/env bash
# Reo's whole test suite, as CI runs it on a fresh machine. Installs what it needs itself.
#   scripts/test.sh            formatting, lints, every test (the store's 20-cycle kill -9 loop and
#                              the gateway's 34-kill model-checked loop included)
#   S3TESTS_DIR=DIR scripts/test.sh   the ceph/s3-tests checkout to run (default
#                              ../shared/vendor/s3-tests; said plainly when absent)
#   REO_CRASH_CYCLES=1000 scripts/test.sh   the store's long crash loop (the gateway's long loop
#                              runs for hours: its command is in the README)
set -euo pipefail
cd "$(dirname "$0")/.."
# Each stage's heading says when it began, so a slow CI run shows where its time went.
stage() { echo "== $* (at $((SECONDS / 60)) min $((SECONDS % 60)) s)"; }

# Toolchain components (the machine's rustup has no network for new toolchains, but has these).
if ! cargo fmt --version >/dev/null 2>&1 || ! cargo clippy --version >/dev/null 2>&1; then
  rustup component add rustfmt clippy
fi

# protoc builds etcd-client's gRPC types (reo-cluster); etcd-server is the real etcd the cluster's
# end-to-end tests start.
if ! command -v protoc >/dev/null || ! command -v etcd >/dev/null; then
  apt-get install -y -qq protobuf-compiler etcd-server >/dev/null || { apt-get update -qq && apt-get install -y -qq protobuf-compiler etcd-server >/dev/null; }
fi
stage "format"
cargo fmt --all -- --check
stage "lints"
cargo clippy --workspace --all-targets -- -D warnings
stage "import cycles (no module of a crate imports one that imports it back)"
python3 scripts/use-cycles.py
stage "tests"
# moto_server is the S3 store the S3 backend's tests (Rust and end-to-end) run against; boto3
# drives the gateway end to end, and the AWS CLI is one of the clients it is checked with;
# prometheus-client's parser reads `/metrics` as Prometheus would (tests/e2e/test_metrics.py).
python3 -m pip install --quiet --disable-pip-version-check boto3 awscli "moto[server]" "prometheus-client==0.26.0"
# libCacheSim: the reference `reo replay`'s policies are checked against, on the same traces
# (tests/e2e/test_replay_reference.py computes its figures in the run; docs/REFERENCES.md §A5).
python3 -m pip install --quiet --disable-pip-version-check "libcachesim==0.3.5"
# rclone and s3cmd: two more clients the gateway is checked with (tests/e2e/test_clients.py).
if ! command -v rclone >/dev/null || ! command -v s3cmd >/dev/null; then
  apt-get install -y -qq rclone s3cmd >/dev/null || { apt-get update -qq && apt-get install -y -qq rclone s3cmd >/dev/null; }
fi
# Chromium and chromedriver (Debian's), driven by Selenium: the web console's browser test
# (tests/e2e/test_console.py).
if ! command -v chromium >/dev/null || ! command -v chromedriver >/dev/null; then
  apt-get install -y -qq chromium chromium-driver >/dev/null || { apt-get update -qq && apt-get install -y -qq chromium chromium-driver >/dev/null; }
fi
python3 -m pip install --quiet --disable-pip-version-check "selenium==4.38.0" jsonschema
# promtool (Debian's prometheus package) checks deploy/'s Prometheus configuration, alert rules
# and every query of the Grafana dashboard (tests/e2e/test_deploy.py).
if ! command -v promtool >/dev/null; then
  apt-get install -y -qq prometheus >/dev/null || { apt-get update -qq && apt-get install -y -qq prometheus >/dev/null; }
fi
cargo test --workspace --no-run
stage "tests built; running them"
# Bounded so that a hang fails CI with its test named instead of running out its clock.
timeout --signal=KILL 1200 cargo test --workspace
stage "the library quickstart (examples/quickstart.rs of reo-cache)"
cargo run -q -p reo-cache --example quickstart
stage "gateway end-to-end (boto3 against a real reo serve)"
# The binary `cargo test` built for the reo crate's own integration tests (cargo keeps it
# current at target/debug/reo). A `cargo build -p reo` here would compile the workspace again
# (~3.5 min on 2 cores): without the dev-dependencies its dependencies' features differ.
test -x target/debug/reo || { echo "target/debug/reo missing after cargo test" >&2; exit 1; }
REO_BIN="$PWD/target/debug/reo" timeout --signal=KILL 1200 python3 -m unittest discover -s tests/e2e -t tests/e2e -v
stage "ceph/s3-tests (tests/s3tests/run.py: failures beyond tests/s3tests/expected-failures.txt fail)"
S3TESTS_DIR="${S3TESTS_DIR:-$PWD/../shared/vendor/s3-tests}"
if [ -d "$S3TESTS_DIR/s3tests" ]; then
  python3 -m pip install --quiet --disable-pip-version-check -r "$S3TESTS_DIR/requirements.txt"
  REO_BIN="$PWD/target/debug/reo" timeout --signal=KILL 1800 python3 tests/s3tests/run.py "$S3TESTS_DIR"
else
  echo "ceph/s3-tests is not at $S3TESTS_DIR: NOT RUN (set S3TESTS_DIR to a checkout of the suite)"
fi
stage "all tests passed"
