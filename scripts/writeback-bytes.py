#!/usr/bin/env python3
"""Device bytes a real `reo serve` writes for small write-back PUTs and their flush.

Starts `reo serve` (5 device files, the local backend, a flush delay long enough that nothing
is written back during the PUTs), PUTs COUNT objects of SIZE bytes with THREADS concurrent boto3
clients, then runs `reo admin flush`, and reads the device byte counters from /metrics before,
between and after. Prints one JSON object: user bytes, device bytes written in each phase split
into data (puts), metadata (journal and checkpoints) and cleaner, the same per user byte, and the
bytes the flush made clean in place (no rewrite).

    REO_BIN=target/release/reo python3 scripts/writeback-bytes.py [--count 2000] [--size 4096] [--threads 1]
"""

import argparse
import json
import os
import sys
import urllib.request
from concurrent.futures import ThreadPoolExecutor

sys.path.insert(0, os.path.join(os.path.dirname(__file__), "..", "tests", "e2e"))
from reoapi import admin  # noqa: E402
from server import METRICS_TOKEN, Server  # noqa: E402

COUNTERS = {
    "device": "reo_device_write_bytes_total",
    "data": "reo_store_put_device_bytes_total",
    "metadata": "reo_store_journal_device_bytes_total",
    "cleaner": "reo_store_gc_device_bytes_total",
    "in_place": "reo_cache_cleaned_in_place_bytes_total",
}


def scrape(srv):
    req = urllib.request.Request(srv.endpoint + "/metrics", headers={"Authorization": f"Bearer {METRICS_TOKEN}"})
    with urllib.request.urlopen(req) as r:
        text = r.read().decode()
    out = {k: 0.0 for k in COUNTERS}
    for line in text.splitlines():
        if line.startswith("#"):
            continue
        name = line.split("{")[0].split(" ")[0]
        for k, metric in COUNTERS.items():
            if name == metric:
                out[k] += float(line.rsplit(" ", 1)[1])
    return out


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--count", type=int, default=2000)
    ap.add_argument("--size", type=int, default=4096)
    ap.add_argument("--threads", type=int, default=1)
    a = ap.parse_args()
    binary = os.environ.get("REO_BIN", "target/release/reo")
    srv = Server(binary, device_mib=256, extra=["--flush-delay-ms", "3600000"])
    srv.start()
    try:
        s3 = srv.client()
        s3.create_bucket(Bucket="writeback")
        before = scrape(srv)
        body = os.urandom(a.size)

        def put(i):
            s3.put_object(Bucket="writeback", Key=f"o{i}", Body=body[: a.size - 8] + i.to_bytes(8, "little"))

        with ThreadPoolExecutor(a.threads) as pool:
            list(pool.map(put, range(a.count)))
        mid = scrape(srv)
        admin(binary, srv, "flush")
        after = scrape(srv)
        user = a.count * a.size
        phases = {
            "put": {k: mid[k] - before[k] for k in COUNTERS},
            "flush": {k: after[k] - mid[k] for k in COUNTERS},
        }
        total = {k: after[k] - before[k] for k in COUNTERS}
        print(json.dumps({
            "count": a.count, "size": a.size, "threads": a.threads, "user_bytes": user,
            "phases": phases,
            "device_per_user_byte": round(total["device"] / user, 3),
            "per_user_byte": {p: {k: round(v / user, 3) for k, v in d.items()} for p, d in phases.items()},
        }, indent=1))
    finally:
        srv.stop()
        srv.cleanup()


if __name__ == "__main__":
    main()
