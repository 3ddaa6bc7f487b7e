"""Reo's replay beside libCacheSim's (docs/REFERENCES.md §A5), on the same trace and capacity.

Writes deterministic traces in libCacheSim's oracleGeneral format (which `reo replay --format
oracle` reads), runs each through libCacheSim (the Python binding, `pip install libcachesim`) and
through `reo replay --json`, and returns both miss ratios and byte miss ratios. Used by
tests/e2e/test_replay_reference.py (small traces, in CI) and by scripts/replay-vs-libcachesim.py
(the full table of docs/EVALUATION.md). Reference values are always computed here, never stored.

Trace kinds (the workloads of issue 29):
  zipf      Zipf-distributed requests over equal-sized (4 KiB) objects;
  zipf-var  the same popularity, each object's size drawn log-uniform in 1 KiB–1 MiB;
  scan-zipf Zipf over 4 KiB objects, with one request in five part of a sequential scan over
            objects outside the popular set (each scan reads 2,000 objects once).
"""

import json
import os
import subprocess

import numpy as np

# Policies as reo names them -> the libCacheSim cache class and its parameters. reo's `clock` is
# SDCC's 2-bit utility CLOCK: libCacheSim's Clock with a 2-bit counter.
POLICIES = {
    "lru": ("LRU", {}),
    "arc": ("ARC", {}),
    "s3-fifo": ("S3FIFO", {"small_size_ratio": 0.1, "ghost_size_ratio": 0.9, "move_to_main_threshold": 2}),
    "sieve": ("Sieve", {}),
    "clock": ("Clock", {"n_bit_counter": 2}),
}

UNIT = 4096


def zipf_ranks(rng, objects, requests, alpha):
    """`requests` object ranks in 0..objects, P(rank k) proportional to 1/(k+1)^alpha."""
    weights = 1.0 / np.arange(1, objects + 1, dtype=np.float64) ** alpha
    cdf = np.cumsum(weights)
    cdf /= cdf[-1]
    return np.minimum(np.searchsorted(cdf, rng.random(requests)), objects - 1)


def make_trace(kind, objects, requests, seed=1, alpha=1.0):
    """(ids, sizes) of a trace of `kind`; ids start at 1, sizes in bytes."""
    rng = np.random.default_rng(seed)
    # A permutation so that popularity is not the id order (ids 1..objects).
    perm = rng.permutation(objects) + 1
    if kind in ("zipf", "zipf-var"):
        ids = perm[zipf_ranks(rng, objects, requests, alpha)]
    elif kind == "scan-zipf":
        ids = perm[zipf_ranks(rng, objects, requests, alpha)]
        # Every 10,000 requests, a 2,000-request scan over the next never-seen ids.
        scan, period, next_cold = 2000, 10_000, objects + 1
        for start in range(period - scan, requests - scan + 1, period):
            ids[start : start + scan] = np.arange(next_cold, next_cold + scan)
            next_cold += scan
    else:
        raise ValueError(f"unknown trace kind {kind!r}")
    if kind == "zipf-var":
        # Per object, log-uniform in [1 KiB, 1 MiB].
        table = np.exp(np.random.default_rng(seed + 1).uniform(np.log(1024), np.log(1 << 20), ids.max() + 1))
        sizes = table.astype(np.int64)[ids]
    else:
        sizes = np.full(len(ids), UNIT, dtype=np.int64)
    return ids.astype(np.uint64), sizes


def write_oracle(path, ids, sizes):
    """oracleGeneral: u32 timestamp, u64 id, u32 size, i64 next access (here -1: unknown)."""
    rec = np.zeros(len(ids), dtype=[("ts", "<u4"), ("id", "<u8"), ("size", "<u4"), ("next", "<i8")])
    rec["ts"] = np.arange(len(ids)) // 1000
    rec["id"] = ids
    rec["size"] = sizes
    rec["next"] = -1
    rec.tofile(path)


def working_set_bytes(ids, sizes):
    """Bytes of the distinct objects (each at its size)."""
    _, first = np.unique(ids, return_index=True)
    return int(sizes[first].sum())


def libcachesim_ratios(path, policy, cache_bytes):
    """(miss ratio, byte miss ratio) of libCacheSim's `policy` over the oracleGeneral trace."""
    import libcachesim as lcs

    name, params = POLICIES[policy]
    reader = lcs.TraceReader(str(path), lcs.TraceType.ORACLE_GENERAL_TRACE)
    cache = getattr(lcs, name)(cache_size=cache_bytes, **params)
    miss, byte_miss = cache.process_trace(reader)
    return float(miss), float(byte_miss)


def reo_replay(reo_bin, path, policy, cache_bytes, capacity="logical", extra=()):
    """The JSON report of `reo replay` over the oracleGeneral trace."""
    cmd = [
        reo_bin, "replay", str(path), "--format", "oracle", "--policy", policy,
        "--redundancy", "0-parity", "--admission", "aa", "--cache", str(cache_bytes),
        "--capacity", capacity, "--json", *extra,
    ]
    out = subprocess.run(cmd, check=True, capture_output=True, text=True, env={**os.environ, "RUST_LOG": "error"})
    return json.loads(out.stdout.strip().splitlines()[-1])


def reo_ratios(report):
    """(miss ratio, byte miss ratio) of a `reo replay --json` report."""
    return 1.0 - report["hit_ratio"], 1.0 - report["byte_hit_ratio"]
