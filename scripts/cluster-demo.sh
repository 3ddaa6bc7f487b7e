#!/usr/bin/env bash
# A Reo cluster to try in one command: a private etcd and three `reo serve` gateways on loopback
# ports, over one local directory backend. Any gateway takes any S3 request; a write is
# acknowledged once it is on two gateways' flash, and a GET through any gateway returns the
# latest acknowledged write. Prints the endpoints, the credentials and example aws-cli commands;
# Ctrl-C stops everything.
#
#   scripts/cluster-demo.sh [DIR]
#
# DIR holds etcd's data and log, each gateway's data directory (with its server.log) and the
# backend: a given DIR is kept (run the script again over it to restart the same cluster);
# without one, a new temporary directory is used and removed at the end.
#
# Environment: REO_BIN (default: target/release/reo, else target/debug/reo, else reo on PATH),
# ETCD (default: etcd on PATH; Debian: apt-get install etcd-server), REO_DEMO_PORT (the first of
# the ports used, default 9100: etcd's client and peer ports, then the gateways' S3 ports at
# +11, +12, +13).
set -euo pipefail

root="$(cd "$(dirname "$0")/.." && pwd)"
if [ -n "${REO_BIN:-}" ]; then
  reo="$REO_BIN"
elif [ -x "$root/target/release/reo" ]; then
  reo="$root/target/release/reo"
elif [ -x "$root/target/debug/reo" ]; then
  reo="$root/target/debug/reo"
else
  reo="$(command -v reo || true)"
fi
etcd="${ETCD:-$(command -v etcd || true)}"
if [ -z "$reo" ] || [ ! -x "$reo" ]; then
  echo "no reo binary: build it (cargo build --release -p reo) or set REO_BIN" >&2
  exit 1
fi
if [ -z "$etcd" ] || [ ! -x "$etcd" ]; then
  echo "no etcd: apt-get install etcd-server, or set ETCD" >&2
  exit 1
fi
"$reo" serve --help | grep -q -- --cluster || { echo "$reo has no cluster support (reo serve --cluster)" >&2; exit 1; }

base="${REO_DEMO_PORT:-9100}"
etcd_port=$base
peer_port=$((base + 1))
nodes=(n1 n2 n3)
s3_port() { echo $((base + 11 + ${1#n} - 1)); }

# Someone else's service on one of the ports would get our traffic: refuse to start instead.
for p in "$etcd_port" "$peer_port" $(for n in "${nodes[@]}"; do s3_port "$n"; done); do
  if (exec 3<>"/dev/tcp/127.0.0.1/$p") 2>/dev/null; then
    echo "port $p is in use: set REO_DEMO_PORT to a free range" >&2
    exit 1
  fi
done

if [ $# -ge 1 ]; then
  dir="$(mkdir -p "$1" && cd "$1" && pwd)"
  keep=1
else
  dir="$(mktemp -d "${TMPDIR:-/tmp}/reo-cluster-demo.XXXXXX")"
  keep=0
fi
mkdir -p "$dir/backend"

pids=()
# shellcheck disable=SC2317  # called by the traps below
cleanup() {
  trap - INT TERM EXIT
  echo
  echo "stopping the gateways and etcd..."
  # The gateways first (SIGTERM: they finish what is in hand), etcd last, each by its own pid.
  for ((i = ${#pids[@]} - 1; i >= 0; i--)); do
    kill "${pids[$i]}" 2>/dev/null || true
    wait "${pids[$i]}" 2>/dev/null || true
  done
  if [ "$keep" = 0 ]; then
    rm -rf "$dir"
  else
    echo "the data stays in $dir"
  fi
}
trap cleanup EXIT
trap 'cleanup; exit 130' INT TERM

# Secrets, made once per directory and kept with it: the admin key every gateway shares (used
# here as the demo's S3 credentials too) and the cluster secret peers authenticate with.
secret() { head -c 24 /dev/urandom | od -An -tx1 | tr -d ' \n'; }
umask 077
[ -s "$dir/admin-secret" ] || secret >"$dir/admin-secret"
[ -s "$dir/cluster-secret" ] || secret >"$dir/cluster-secret"
umask 022
access="REODEMOADMIN0001"
secret_key="$(head -n 1 "$dir/admin-secret")"

wait_http() { # URL WHAT PID: until URL answers 200, as long as PID lives (60 s at most)
  for _ in $(seq 600); do
    curl -sf -o /dev/null "$1" && return 0
    kill -0 "$3" 2>/dev/null || { echo "$2 exited; its log: $4" >&2; exit 1; }
    sleep 0.1
  done
  echo "$2 did not answer $1 within 60 s; its log: $4" >&2
  exit 1
}

etcd_url="http://127.0.0.1:$etcd_port"
peer_url="http://127.0.0.1:$peer_port"
"$etcd" --name demo --data-dir "$dir/etcd" \
  --listen-client-urls "$etcd_url" --advertise-client-urls "$etcd_url" \
  --listen-peer-urls "$peer_url" --initial-advertise-peer-urls "$peer_url" \
  --initial-cluster "demo=$peer_url" >>"$dir/etcd.log" 2>&1 &
pids+=($!)
wait_http "$etcd_url/health" etcd "$!" "$dir/etcd.log"

for n in "${nodes[@]}"; do
  port="$(s3_port "$n")"
  mkdir -p "$dir/$n"
  "$reo" serve --data-dir "$dir/$n" --listen "127.0.0.1:$port" --backend "$dir/backend" \
    --devices 2 --device-mib 128 --access-key "$access" --secret-key-file "$dir/admin-secret" \
    --cluster "etcd://127.0.0.1:$etcd_port" --node-id "$n" --advertise "127.0.0.1:$port" \
    --cluster-secret-file "$dir/cluster-secret" >>"$dir/$n/server.log" 2>&1 &
  pids+=($!)
done
for i in "${!nodes[@]}"; do
  n="${nodes[$i]}"
  wait_http "http://127.0.0.1:$(s3_port "$n")/_reo/health" "gateway $n" "${pids[$((i + 1))]}" "$dir/$n/server.log"
done

# Until every gateway reports itself a settled member of a cluster of three.
admin() { REO_ENDPOINT="http://127.0.0.1:$(s3_port "$1")" REO_ACCESS_KEY="$access" REO_SECRET_KEY="$secret_key" "$reo" admin "${@:2}"; }
for n in "${nodes[@]}"; do
  for _ in $(seq 300); do
    st="$(admin "$n" cluster status --json 2>/dev/null || true)"
    if grep -Eq '"settled": ?true' <<<"$st" && [ "$(grep -o '"advertise"' <<<"$st" | wc -l)" -eq 3 ]; then
      break
    fi
    sleep 0.1
  done
  grep -Eq '"settled": ?true' <<<"$st" || { echo "gateway $n did not settle in 30 s: $st" >&2; exit 1; }
done

e1="http://127.0.0.1:$(s3_port n1)"
e2="http://127.0.0.1:$(s3_port n2)"
cat <<EOF

Reo cluster demo: 3 gateways over the backend directory $dir/backend
  etcd  $etcd_url   (log: $dir/etcd.log)
EOF
for n in "${nodes[@]}"; do
  echo "  $n    http://127.0.0.1:$(s3_port "$n")   (log: $dir/$n/server.log)"
done
cat <<EOF

S3 credentials (every gateway's admin key; for applications, add users on every gateway):
  export AWS_ACCESS_KEY_ID=$access
  export AWS_SECRET_ACCESS_KEY=$secret_key
  export AWS_DEFAULT_REGION=us-east-1

Try, with those exported:
  aws --endpoint-url $e1 s3 mb s3://demo
  echo hello | aws --endpoint-url $e1 s3 cp - s3://demo/hello
  aws --endpoint-url $e2 s3 cp s3://demo/hello -        # the same object through another gateway
  REO_ENDPOINT=$e1 REO_ACCESS_KEY=$access REO_SECRET_KEY=$secret_key $reo admin cluster status

Ctrl-C stops everything.
EOF

# Until Ctrl-C, or until one of the processes dies (then everything stops, saying which).
set +e
wait -n "${pids[@]}"
echo "a process of the demo exited (status $?); see the logs above" >&2
exit 1
