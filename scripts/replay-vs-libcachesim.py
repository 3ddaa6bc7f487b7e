#!/usr/bin/env python3
"""The table of docs/EVALUATION.md "Policies end to end": `reo replay` beside libCacheSim 0.3.5 on
the same oracleGeneral traces, every policy, caches of 1 %, 5 % and 10 % of the working set.

  python3 scripts/replay-vs-libcachesim.py [--reo target/release/reo] [--requests 1000000]
      [--objects 200000] [--capacity logical|flash] [--kinds zipf,zipf-var,scan-zipf]

Under `--capacity flash` the cache share is flash (data and redundancy) and libCacheSim gets the
user bytes reo's policy was given out of it (`policy_capacity_bytes` of the report).

Prints a Markdown table (miss ratio and byte miss ratio of each, and the differences); needs
`pip install libcachesim==0.3.5`. The traces come from tests/e2e/lcsref.py (deterministic)."""

import argparse
import os
import sys
import tempfile

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "tests", "e2e"))
import lcsref  # noqa: E402


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--reo", default="target/release/reo")
    ap.add_argument("--requests", type=int, default=1_000_000)
    ap.add_argument("--objects", type=int, default=200_000)
    ap.add_argument("--capacity", default="logical")
    ap.add_argument("--kinds", default="zipf,zipf-var,scan-zipf")
    ap.add_argument("--policies", default=",".join(lcsref.POLICIES))
    ap.add_argument("--shares", default="0.01,0.05,0.10")
    a = ap.parse_args()
    print(f"--capacity {a.capacity}; {a.requests} requests over {a.objects} objects\n")
    print(f"| trace | cache | policy | reo miss | libCacheSim miss | Δ | reo byte miss | libCacheSim byte miss | Δ |")
    print("|---|---|---|---|---|---|---|---|---|")
    worst = 0.0
    with tempfile.TemporaryDirectory() as d:
        for kind in a.kinds.split(","):
            ids, sizes = lcsref.make_trace(kind, a.objects, a.requests, seed=1)
            ws = lcsref.working_set_bytes(ids, sizes)
            path = os.path.join(d, f"{kind}.oracle")
            lcsref.write_oracle(path, ids, sizes)
            for share in map(float, a.shares.split(",")):
                cache = int(ws * share)
                for policy in a.policies.split(","):
                    rep = lcsref.reo_replay(a.reo, path, policy, cache, a.capacity)
                    got = lcsref.reo_ratios(rep)
                    # Under --capacity flash the cache size is flash: the reference gets the user
                    # bytes reo's policy was given out of it (the objects' footprint decides).
                    held = cache if a.capacity == "logical" else rep["policy_capacity_bytes"]
                    ref = lcsref.libcachesim_ratios(path, policy, held)
                    dm, db = got[0] - ref[0], got[1] - ref[1]
                    worst = max(worst, abs(dm), abs(db))
                    print(f"| {kind} | {share:.0%} | {policy} | {got[0]:.4f} | {ref[0]:.4f} | {dm:+.4f} "
                          f"| {got[1]:.4f} | {ref[1]:.4f} | {db:+.4f} |", flush=True)
    print(f"\nlargest difference: {worst:.4f}")


if __name__ == "__main__":
    main()
