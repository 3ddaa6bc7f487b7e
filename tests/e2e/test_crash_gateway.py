"""Crash consistency of the gateway, model-checked: a kill -9 loop against real `reo serve`
processes under a concurrent S3 workload, over the local directory backend and over moto_server
(through a proxy that can refuse connections or hang, as a dead or partitioned store does).

Each cycle, 8 boto3 clients PUT, DELETE, DeleteObjects, copy, multipart-upload and GET 200 shared
keys for 1–3 s, and `reo serve` is SIGKILLed at the end of that window, in the middle of requests
and of flushes. It is restarted over the same data directory and every key is read back with no
other traffic. What a key may read is what linearizability over real time allows (crashmodel.py):
an acknowledged write or delete must not be lost or undone, a refused one (an S3 error) must not
appear, an unanswered one may or may not have happened (but no later than the kill), and what was
read once stays. GETs during the load are checked the same way over their own interval. At the end
everything is flushed and the backend must hold exactly the final state.

What it proves, when it passes: no acknowledged operation is lost or reordered by a crash (at any
point of a write, a delete or a flush), nothing unacknowledged is invented, ETags match the bytes,
and the flusher writes exactly what the gateway serves — with the backend up, refusing connections
or hanging. Every violation is printed with the key's history (times relative to the kill); the
test fails after the run if there was any. It also prints what the docs quote: kills, operations
per outcome, start-up times and verify-phase GET latencies per backend state.

While the backend refuses or hangs, requests that need it may fail (an error: not applied) or
hang (in flight until the kill); start-ups and GETs are bounded (START_BOUND, client timeouts,
VERIFY_BUDGET), so a gateway that blocks on its backend shows in the printed start-up times and
latencies instead of stalling the run. A start-up past its bound fails the test.

    REO_BIN=target/debug/reo python3 -m unittest discover -s tests/e2e -t tests/e2e -k crash -v

Environment: REO_BIN (default target/debug/reo), REO_GATEWAY_CRASH_CYCLES (kills of the local
variant, default 20; the moto variant does half, the SIGSTOP one a fifth), REO_GATEWAY_CRASH_SEED
(default random, printed: it replays the operation choices and kill times, not the thread
interleaving). A failed run keeps its data directory (server.log included) and prints its path."""

import concurrent.futures
import os
import random
import signal
import threading
import time
import unittest
from collections import Counter, defaultdict

import boto3
from botocore.config import Config
from botocore.exceptions import ClientError, EndpointConnectionError

from crashmodel import ABSENT, INF, Model, Values, md5
from reoapi import admin, call, wait_for
from server import ACCESS, SECRET, Server, free_port
from tcpproxy import Proxy
from test_s3backend import MOTO_KEY, MOTO_SECRET, Moto


BIN = os.environ.get("REO_BIN", "target/debug/reo")
CYCLES = int(os.environ.get("REO_GATEWAY_CRASH_CYCLES", "20"))
SEED = int(os.environ.get("REO_GATEWAY_CRASH_SEED") or random.SystemRandom().randrange(1 << 31))

BUCKET = "crash"
KEYS = [f"k{i:03d}" for i in range(200)]
HOT = KEYS[:16]  # 40% of the operations go here, so keys see several operations per cycle
CLIENTS = 8
# Client timeouts: generous, so a gateway blocked on a hung backend shows up as slow operations
# (or as timeouts, counted), not as a stuck harness.
CONNECT_TIMEOUT, READ_TIMEOUT = 10, 30
START_BOUND = 180  # s for a start-up to reach a healthy /_reo/health before it counts as failed
VERIFY_THREADS = 32  # a hung backend's GETs time out in one round, not several
VERIFY_BUDGET = 60  # s after which a verify phase issues no more GETs (the rest stay unverified)
DEVICE_MIB = 256  # the dirty budget (half a device's worth of cache) is never the limit
PART = 5 << 20

# Operation weights (multipart uploads move 5 MiB: rare).
OPS = {"put": 40, "get": 20, "delete": 14, "dels": 7, "copy": 12, "mpu": 1}


def now():
    return time.monotonic()


def pick(rng):
    return rng.choice(HOT) if rng.random() < 0.4 else rng.choice(KEYS)


def body_size(rng):
    """0–300 KB, mostly small."""
    r = rng.random()
    if r < 0.01:
        return 0
    if r < 0.55:
        return rng.randint(16, 4096)
    if r < 0.85:
        return rng.randint(4097, 64 << 10)
    return rng.randint(64 << 10, 300_000)


def outcome_of(e):
    """What an exception says about whether the request was applied: ("error", code) for a
    definite S3 error response (4xx, or a 5xx with an error code: not applied), ("refused", why)
    when the connection was never made (not applied), else ("inflight", why): no answer."""
    if isinstance(e, ClientError):
        status = e.response.get("ResponseMetadata", {}).get("HTTPStatusCode", 0)
        code = e.response.get("Error", {}).get("Code", "")
        if 400 <= status < 500 or (code and not code.isdigit()):
            return "error", f"{status} {code}"
        return "inflight", f"{status} without an S3 error code"
    if isinstance(e, EndpointConnectionError):
        return "refused", "connection refused"
    return "inflight", type(e).__name__


def percentile(xs, p):
    xs = sorted(xs)
    return xs[min(len(xs) - 1, int(p / 100 * len(xs)))] if xs else float("nan")


class CrashRun:
    """One kill -9 loop: a server, the model, the workload, the verify phases and the numbers."""

    def __init__(self, name, seed, srv, schedule, apply=lambda kind: None):
        self.name, self.seed, self.srv = name, seed, srv
        self.schedule = schedule  # cycle index 0..kills → (backend state, flush delay ms)
        self.apply = apply  # puts the backend in a state (up, refuse, hang, sigstop)
        self.base_extra = list(srv.extra)
        self.rng = random.Random(f"{seed}/{name}")
        self.values = Values()
        self.model = Model(KEYS, self.values)
        self.problems = []  # findings outside the model (a start-up past the bound)
        self.startups = defaultdict(list)  # backend state → seconds
        self.latency = defaultdict(list)  # backend state → verify GET seconds
        self.get_errors = defaultdict(Counter)  # backend state → error → count
        self.unverified = Counter()  # backend state → keys a verify phase could not read
        self.load_stats = defaultdict(Counter)  # backend state → load-phase outcome counts
        self.ack_latency = defaultdict(list)  # backend state → seconds to acknowledge (no multipart)
        self.copies = []  # acknowledged copies, their source checked at the cycle's end
        self.kills = 0

    def client(self, pool=10):
        return boto3.client(
            "s3", endpoint_url=self.srv.endpoint, region_name="us-east-1",
            aws_access_key_id=ACCESS, aws_secret_access_key=SECRET,
            config=Config(s3={"addressing_style": "path"}, retries={"total_max_attempts": 1},
                          connect_timeout=CONNECT_TIMEOUT, read_timeout=READ_TIMEOUT, max_pool_connections=pool))

    # ---- server life ----

    def start(self, i, cycle):
        kind, delay = self.schedule(i)
        self.apply(kind)
        self.srv.extra = self.base_extra + ["--flush-delay-ms", str(delay)]
        self.srv.port = free_port()  # no request of the killed server's clients can reach it
        t0 = now()
        try:
            self.srv.start(timeout=START_BOUND)
        except RuntimeError as e:
            self.problems.append(f"cycle {cycle} ({kind}): {e} (see {self.srv.data_dir}/server.log)")
            print(f"PROBLEM: {self.problems[-1]}", flush=True)
            self.srv.kill()
            self.apply("up")  # get on with the run
            t0 = now()
            self.srv.start(timeout=START_BOUND)
            kind = "up"
        self.startups[kind].append(now() - t0)
        return kind

    # ---- the loop ----

    def run(self, kills):
        print(f"\n[{self.name}] seed {self.seed} (REO_GATEWAY_CRASH_SEED={self.seed} replays it), {kills} kills, "
              f"data dir {self.srv.data_dir}", flush=True)
        t_run = now()
        kind = self.start(0, 0)
        self.client().create_bucket(Bucket=BUCKET)
        for cycle in range(kills):
            self.model.context = f"load [{kind}, flush delay {self.schedule(cycle)[1]} ms]"
            t_kill, loaded, tally = self.load(cycle, kind)
            self.model.context += f", verify [{self.schedule(cycle + 1)[0]}]"
            self.kills += 1
            kind_next = self.start(cycle + 1, cycle)
            t_v = now()
            self.verify(cycle, kind_next, t_kill, "verify")
            print(f"  cycle {cycle:>3} [{kind}, delay {self.schedule(cycle)[1]} ms] killed at {loaded:.2f} s; ops "
                  + " ".join(f"{k} {v}" for k, v in sorted(tally.items()))
                  + f"; restart [{kind_next}] {self.startups[kind_next][-1]:.1f} s; verify {now() - t_v:.1f} s; "
                  f"violations {len(self.model.violations)}", flush=True)
            kind = kind_next
        self.final(kind)
        self.wall = now() - t_run
        self.summary()

    def load(self, cycle, kind):
        """The clients for 1–3 s, then SIGKILL; checks the load's GETs and copies once every
        outcome is known. Returns the kill's time, the seconds of load before it, and the count
        of each outcome."""
        stop = threading.Event()
        gets = []
        clients = [self.client() for _ in range(CLIENTS)]  # boto3's session is not thread-safe
        rngs = [random.Random(f"{self.seed}/{self.name}/{cycle}/{i}") for i in range(CLIENTS)]
        threads = [threading.Thread(target=self.worker, args=(clients[i], rngs[i], cycle, stop, gets))
                   for i in range(CLIENTS)]
        t0 = now()
        for t in threads:
            t.start()
        time.sleep(self.rng.uniform(1, 3))
        # The kill's time is read after the signal went out: read before it, a client thread
        # could send a request in the gap (the GIL moves between threads) and see it applied.
        t_kill = self.srv.kill()
        t_dead = now()
        stop.set()
        for t in threads:
            t.join(timeout=2 * READ_TIMEOUT)
            if t.is_alive():
                raise AssertionError("a client thread did not end after the kill (harness bug)")
        ops = self.model.close_cycle(t_kill, t_dead)
        tally = Counter(op.outcome for op in ops)
        # How the gateway served the load in this backend state: acknowledgement latencies, and
        # the operations that had been waiting over a second when the kill came (blocked).
        st = self.load_stats[kind]
        st["ok"] += tally["ok"]
        st["inflight"] += tally["inflight"]
        st["blocked"] += sum(1 for op in ops if op.outcome == "inflight" and op.start < t_kill - 1)
        st["seconds"] += t_kill - t0
        self.ack_latency[kind] += [op.end - op.start for op in ops if op.outcome == "ok" and op.kind != "mpu"]
        for op in self.copies:
            self.model.check_copy(op, cycle, t_kill)
        self.copies = []
        for key, a, b, got, problem in gets:
            self.model.check_read(key, got, problem, a, b, "load GET", cycle, t_kill)
        return t_kill, t_kill - t0, tally

    def worker(self, s3, rng, cycle, stop, gets):
        kinds, weights = list(OPS), list(OPS.values())
        while not stop.is_set():
            kind = rng.choices(kinds, weights)[0]
            getattr(self, "op_" + kind)(s3, rng, cycle, gets)

    # ---- operations ----

    def failed(self, op, e):
        outcome, why = outcome_of(e)
        self.model.finish(op, outcome, now() if outcome != "inflight" else None, detail=why)

    def op_put(self, s3, rng, cycle, gets):
        key = pick(rng)
        vid, data = self.values.body(rng, body_size(rng))
        op = self.model.begin("put", key, now(), cycle, {(vid, False)})
        try:
            r = s3.put_object(Bucket=BUCKET, Key=key, Body=data)
        except Exception as e:  # noqa: BLE001 - every failure is classified
            return self.failed(op, e)
        self.model.finish(op, "ok", now())
        if r.get("ETag", "").strip('"') != md5(data):
            self.model.problem(f"PUT of {key} (op #{op.id}) answered ETag {r.get('ETag')} for a body of MD5 "
                               f"{md5(data)}: {r['ResponseMetadata']}")

    def op_delete(self, s3, rng, cycle, gets):
        key = pick(rng)
        op = self.model.begin("delete", key, now(), cycle, {ABSENT})
        try:
            s3.delete_object(Bucket=BUCKET, Key=key)
        except Exception as e:  # noqa: BLE001
            return self.failed(op, e)
        self.model.finish(op, "ok", now())

    def op_dels(self, s3, rng, cycle, gets):
        """DeleteObjects: each key a delete with the batch's times; a per-key error: not deleted."""
        keys = set()
        n = rng.randint(2, 5)
        while len(keys) < n:
            keys.add(pick(rng))
        t = now()
        ops = {k: self.model.begin("dels", k, t, cycle, {ABSENT}) for k in sorted(keys)}
        try:
            r = s3.delete_objects(Bucket=BUCKET, Delete={"Objects": [{"Key": k} for k in ops]})
        except Exception as e:  # noqa: BLE001
            for op in ops.values():
                self.failed(op, e)
            return
        t = now()
        deleted = {d["Key"] for d in r.get("Deleted", [])}
        errors = {d["Key"]: d.get("Code", "") for d in r.get("Errors", [])}
        for k, op in ops.items():
            if k in errors:
                self.model.finish(op, "error", t, detail=f"per-key error {errors[k]}")
            elif k in deleted:
                self.model.finish(op, "ok", t)
            else:  # neither deleted nor an error: no answer for this key
                self.model.finish(op, "inflight", None, detail="not in the answer")

    def op_copy(self, s3, rng, cycle, gets):
        """CopyObject from another key; its value is what the answered ETag names (the gateway
        answers the MD5 of the copied bytes); in flight, any value the source may have held."""
        key, src = pick(rng), pick(rng)
        while src == key:
            src = pick(rng)
        op = self.model.begin("copy", key, now(), cycle, src=src)
        try:
            r = s3.copy_object(Bucket=BUCKET, Key=key, CopySource={"Bucket": BUCKET, "Key": src})
        except Exception as e:  # noqa: BLE001
            return self.failed(op, e)
        etag = r["CopyObjectResult"]["ETag"].strip('"')
        v = self.values.by_md5.get(etag)
        if v is None:
            self.model.finish(op, "inflight", None, detail=f"answered unknown ETag {etag}")
            self.model.problem(f"CopyObject {src} → {key} (op #{op.id}) answered ETag {etag}, "
                               "the MD5 of no body written")
            return
        self.model.finish(op, "ok", now(), {(v.vid, False)})
        self.copies.append(op)

    def op_mpu(self, s3, rng, cycle, gets):
        """A 5 MiB part and a small last one; the object appears with CompleteMultipartUpload."""
        key = pick(rng)
        vid, parts, etag = self.values.multipart(rng, [PART, rng.randint(1, 100_000)])
        try:
            up = s3.create_multipart_upload(Bucket=BUCKET, Key=key)["UploadId"]
            done = [{"PartNumber": i + 1,
                     "ETag": s3.upload_part(Bucket=BUCKET, Key=key, UploadId=up, PartNumber=i + 1, Body=p)["ETag"]}
                    for i, p in enumerate(parts)]
        except Exception as e:  # noqa: BLE001 - nothing is visible before the completion
            op = self.model.begin("mpu", key, now(), cycle, {(vid, True)})
            self.model.finish(op, "error", op.start, detail=f"before completion: {outcome_of(e)[1]}")
            return
        op = self.model.begin("mpu", key, now(), cycle, {(vid, True)})
        try:
            r = s3.complete_multipart_upload(Bucket=BUCKET, Key=key, UploadId=up, MultipartUpload={"Parts": done})
        except Exception as e:  # noqa: BLE001
            return self.failed(op, e)
        self.model.finish(op, "ok", now())
        if r["ETag"].strip('"') != etag:
            self.model.problem(f"CompleteMultipartUpload of {key} (op #{op.id}) answered ETag {r['ETag']}, "
                               f"expected {etag}")

    def op_get(self, s3, rng, cycle, gets):
        """A GET checked once the cycle is over: it must return a version the key may have held
        at some point while it ran."""
        key = pick(rng)
        t0 = now()
        try:
            r = s3.get_object(Bucket=BUCKET, Key=key)
            body = r["Body"].read()
            t1 = now()
            got, problem = self.values.version_of(body, r["ETag"].strip('"'))
        except ClientError as e:
            if e.response.get("Error", {}).get("Code") != "NoSuchKey":
                return
            t1, got, problem = now(), ABSENT, None
        except Exception:  # noqa: BLE001 - no answer (the kill): nothing to check
            return
        gets.append((key, t0, t1, got, problem))

    # ---- checks ----

    def read_all(self, kind):
        """GETs every key (VERIFY_THREADS at a time, VERIFY_BUDGET s to issue them): key → (t0,
        t1, version or None, problem) or None when it could not be read."""
        s3 = self.client(pool=VERIFY_THREADS)
        deadline = now() + VERIFY_BUDGET

        def one(key):
            if now() > deadline:
                self.get_errors[kind]["skipped (verify budget)"] += 1
                return key, None
            t0 = now()
            try:
                r = s3.get_object(Bucket=BUCKET, Key=key)
                body, etag = r["Body"].read(), r["ETag"].strip('"')
                got, problem = self.values.version_of(body, etag)
            except ClientError as e:
                if e.response.get("Error", {}).get("Code") != "NoSuchKey":
                    self.latency[kind].append(now() - t0)
                    self.get_errors[kind][outcome_of(e)[1]] += 1
                    return key, None
                got, problem = ABSENT, None
            except Exception as e:  # noqa: BLE001 - a timeout, a cut-off body: counted
                self.latency[kind].append(now() - t0)
                self.get_errors[kind][type(e).__name__] += 1
                return key, None
            t1 = now()
            self.latency[kind].append(t1 - t0)
            return key, (t0, t1, got, problem)

        with concurrent.futures.ThreadPoolExecutor(VERIFY_THREADS) as ex:
            return dict(ex.map(one, KEYS))

    def verify(self, cycle, kind, t_ref, phase, ref="the kill of this cycle"):
        """Every key against the model, alone on the server; what was read becomes the baseline."""
        for key, res in self.read_all(kind).items():
            if res is None:
                self.unverified[kind] += 1
                continue
            t0, t1, got, problem = res
            self.model.check_read(key, got, problem, INF, INF, phase, cycle, t_ref, ref=ref)
            if got is not None:
                self.model.observe(key, got, t0, t1, cycle)

    def final(self, kind):
        """Flush everything; the gateway must still read the same, and the backend hold exactly
        the model's final state."""
        if kind != "up":
            self.apply("up")
        admin(BIN, self.srv, "flush", "--timeout", "120s")
        wait_for(lambda: call(self.srv, "GET", "/_reo/admin/status")[1]["dirty_objects"] == 0,
                 "dirty objects to reach 0", timeout=120)
        self.verify(self.kills, "up", now(), "post-flush verify", ref="the final check")
        stored = self.backend_objects()
        for key in sorted(set(stored) - set(KEYS)):
            self.model.problem(f"the backend holds {key!r}, a key no client wrote")
        for key in KEYS:
            got = self.values.version_of(stored[key], md5(stored[key]))[0] if key in stored else ABSENT
            self.model.check_read(key, got, None, INF, INF, "backend", self.kills, now(), by_vid=True,
                                  ref="the final check")
        rc = self.srv.stop()
        if rc != 0:
            self.problems.append(f"reo serve exited with {rc} on SIGTERM (see {self.srv.data_dir}/server.log)")

    def backend_objects(self):
        """{key: bytes} of the bucket in the backend, read around the gateway."""
        raise NotImplementedError

    # ---- the numbers ----

    def summary(self):
        st = self.model.stats
        kinds = sorted({k for k, _ in st})
        print(f"\n[{self.name}] summary (seed {self.seed}): {self.kills} kills in {self.wall:.0f} s")
        print("  operations        ok  error refused inflight")
        for k in kinds:
            print(f"    {k:<10} " + " ".join(f"{st[(k, o)]:>{w}}" for o, w in
                                              (("ok", 8), ("error", 6), ("refused", 7), ("inflight", 8))))
        print("  why not acknowledged: " + ", ".join(f"{o} {d or '-'} ×{n}"
                                                    for (o, d), n in self.model.reasons.most_common(8)))
        inflight = sum(v for (k, o), v in st.items() if o == "inflight")
        print(f"  in flight at the kills: {inflight} ({inflight / max(1, self.kills):.1f} per kill)")
        print("  GETs checked: " + ", ".join(f"{p} {n}" for p, n in sorted(self.model.gets_checked.items())))
        for kind, ts in sorted(self.startups.items()):
            print(f"  start-up [{kind}]: n {len(ts)}, p50 {percentile(ts, 50):.2f} s, max {max(ts):.2f} s")
        for kind, ls in sorted(self.latency.items()):
            errs = ", ".join(f"{e} ×{n}" for e, n in self.get_errors[kind].most_common()) or "none"
            print(f"  verify GETs [{kind}]: n {len(ls)}, p50 {percentile(ls, 50) * 1e3:.1f} ms, "
                  f"p99 {percentile(ls, 99) * 1e3:.1f} ms, max {max(ls) * 1e3:.0f} ms; errors: {errs}; "
                  f"unverified keys {self.unverified[kind]}")
        for kind, st in sorted(self.load_stats.items()):
            ls = self.ack_latency[kind]
            print(f"  load [{kind}]: {st['ok'] / max(st['seconds'], 1e-9):.0f} acknowledged ops/s, latency p50 "
                  f"{percentile(ls, 50) * 1e3:.1f} ms, p99 {percentile(ls, 99) * 1e3:.1f} ms; in flight at the kills "
                  f"{st['inflight']}, of them blocked over 1 s: {st['blocked']}")
        print(f"  problems: {len(self.problems)}; violations: {len(self.model.violations)}", flush=True)


class LocalRun(CrashRun):
    def backend_objects(self):
        """The bucket's object files (`o.<key>`; the keys need no encoding)."""
        d = os.path.join(self.srv.backend_dir, BUCKET)
        out = {}
        for name in os.listdir(d):
            if name.startswith("o."):
                with open(os.path.join(d, name), "rb") as f:
                    out[name[2:]] = f.read()
        return out


class MotoRun(CrashRun):
    def __init__(self, moto, *a, **kw):
        super().__init__(*a, **kw)
        self.moto = moto

    def backend_objects(self):
        m = self.moto.client()
        out = {}
        for page in m.get_paginator("list_objects_v2").paginate(Bucket=BUCKET):
            for o in page.get("Contents", []):
                out[o["Key"]] = m.get_object(Bucket=BUCKET, Key=o["Key"])["Body"].read()
        return out


class GatewayCrashTest(unittest.TestCase):
    def finish(self, run):
        """Fails with every violation (each was printed in full as found); keeps the data
        directory of a failed run for the post-mortem."""
        bad = run.model.violations + run.problems
        if bad:
            self.fail(f"{len(run.model.violations)} violations, {len(run.problems)} problems in {run.kills} kills "
                      f"(seed {run.seed}; data dir kept: {run.srv.data_dir}); the first:\n" + "\n".join(bad[:3]))
        run.srv.cleanup()

    def test_crash_local_backend(self):
        """The local directory backend; the flush delay alternates between 0 and 3 s."""
        srv = Server(BIN, device_mib=DEVICE_MIB)
        self.addCleanup(srv.kill)
        run = LocalRun("local", SEED, srv, lambda i: ("up", 0 if i % 2 == 0 else 3000))
        run.run(CYCLES)
        self.finish(run)

    def moto_run(self, name, kills, state_of, sigstop):
        moto = Moto()
        moto.start()
        self.addCleanup(moto.stop)
        if sigstop:
            self.addCleanup(lambda: moto.proc.send_signal(signal.SIGCONT))  # before moto.stop
            port = moto.port

            def apply(kind):
                moto.proc.send_signal(signal.SIGSTOP if kind == "sigstop" else signal.SIGCONT)
        else:
            proxy = Proxy(moto.port)
            self.addCleanup(proxy.close)
            port = proxy.port

            def apply(kind):
                proxy.set_mode({"up": "forward"}.get(kind, kind))
        srv = Server(BIN, device_mib=DEVICE_MIB, extra=["--backend", f"s3+http://127.0.0.1:{port}"],
                     env={"AWS_ACCESS_KEY_ID": MOTO_KEY, "AWS_SECRET_ACCESS_KEY": MOTO_SECRET})
        self.addCleanup(srv.kill)
        run = MotoRun(moto, name, SEED, srv, lambda i: (state_of(i / kills), 0 if i % 2 == 0 else 3000), apply)
        run.run(kills)
        self.finish(run)

    def test_crash_moto_backend_refusing_and_hanging(self):
        """moto_server behind the proxy: up, then refusing connections, then hanging, then up."""
        def state(f):
            return "up" if f < 0.3 else "refuse" if f < 0.5 else "hang" if f < 0.7 else "up"
        self.moto_run("moto", max(5, CYCLES // 2), state, sigstop=False)

    def test_crash_moto_backend_sigstopped(self):
        """moto_server itself stopped (SIGSTOP) for the middle cycles, as an operator would see a
        hung store, then continued."""
        self.moto_run("moto-sigstop", max(3, CYCLES // 5), lambda f: "sigstop" if 0.4 <= f < 0.6 else "up",
                      sigstop=True)


if __name__ == "__main__":
    unittest.main()
