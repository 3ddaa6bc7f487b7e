"""The Reo cluster end to end (issue 26): a private etcd and 3–4 real `reo serve` nodes on loopback
over one local directory backend (cluster.py), driven with boto3 through every node.

* (a) Read-after-write across nodes: 8 clients, each request to a random node, thousands of
  mixed PUT/GET/DELETE on 20 keys, every GET checked against the register model (history.py);
  then every key read through every node, a full flush, and the backend compared with what the
  nodes serve. Once with a steady membership (no request may fail), once with a node SIGKILLed
  mid-run and restarted (requests to it fail, writes elsewhere may get 503 while the membership
  changes, no read through a live node may fail, and still zero violations).
* (b) Failover: the owner of ≥ 1,000 acknowledged, unflushed objects (flush delay 600 s) is
  SIGKILLed; all of them reach the backend byte-exact within the lease TTL + 5 s, while GETs
  through the survivors return the right bytes.
* (c) The newest replica wins: keys overwritten several times through different nodes before
  the owner's kill; the backend holds each key's last acknowledged version.
* (d) A node SIGSTOPped past its lease, new versions written through the others, SIGCONTed: it
  never serves its stale versions, serves the new ones, and the backend ends up with the new ones
  even when the stale node is flushed last.
* (e) A node killed during a stream of PUTs: each PUT succeeds or gets 503; every acknowledged
  object is readable byte-exact through the survivors and flushed. And a replica holder killed:
  the writes whose copy it held are replicated again before the cluster settles, so they read
  right from their replicas while their home is stopped.
* (f) etcd down: a just-read object still reads through every node, a PUT is refused with a 503
  that says why (etcd / cluster coordination); writes work again once etcd is back.
* (g) Operations: `reo admin cluster status --json` (fields and members), the API refuses
  unsigned and non-admin callers, peer paths refuse S3 users, and `reo admin cluster leave`
  flushes the node's dirty objects before it leaves.
* (h) The failover of (b) over an S3 backend: a moto_server bucket instead of the directory,
  300 objects of 1–4 KiB (a fifth overwritten through other nodes); the killed home's objects are
  in moto byte-exact (read with boto3 straight from moto) within the lease TTL + 5 s, and read
  right through the survivors meanwhile and after.
* (i) A rolling restart under the load of (a): each node in turn SIGTERMed, started again over
  its data directory, and the cluster settled with all three before the next; zero violations,
  and after a full flush the backend holds each key's last acknowledged value. Once with the
  default flush delay, once with nothing flushed by itself (every restarted node comes back
  holding unflushed writes), once with each node away longer than its lease (failed over, then
  re-joining).
* A randomized loop of SIGKILL/SIGSTOP of nodes under the same load as (a), then a full flush and
  a byte-exact comparison of the backend with the model: REO_CLUSTER_LONG=1 (REO_CLUSTER_CYCLES,
  default 20); skipped otherwise, as (a) with its kill covers the short version.

The whole module is skipped, saying so, when etcd is not installed (/usr/bin/etcd, or REO_ETCD)
or when the binary has no `--cluster` flag. A failed test keeps its cluster directory (etcd's
data and log, each node's server.log, the backend) and names it in the failure.

    cd tests/e2e && REO_BIN=/path/to/reo python3 -m unittest test_cluster -v

Environment: REO_BIN (default target/debug/reo), REO_CLUSTER_SEED (default random, printed:
replays the operation choices, not the thread interleaving), REO_CLUSTER_LONG, REO_CLUSTER_CYCLES.
"""

import concurrent.futures
import hashlib
import itertools
import os
import random
import subprocess
import threading
import time
import unittest
from collections import Counter

from botocore.exceptions import ClientError

import reoapi
from cluster import ETCD, Cluster, error_code, now, retry, wait_until, write_outcome
from history import FAIL, History
from server import ACCESS, SECRET

BIN = os.environ.get("REO_BIN", "target/debug/reo")
SEED = int(os.environ.get("REO_CLUSTER_SEED") or random.SystemRandom().randrange(1 << 31))
LONG = os.environ.get("REO_CLUSTER_LONG") == "1"
CYCLES = int(os.environ.get("REO_CLUSTER_CYCLES", "20"))

CLIENTS = 8
TTL_MS = 2000  # short leases keep the failover tests short; the bound checked is TTL + 5 s
LONG_DELAY_MS = 600_000  # nothing flushes by itself within a test


def setUpModule():
    if not os.access(ETCD, os.X_OK):
        raise unittest.SkipTest(f"etcd is not installed at {ETCD} (Debian: apt-get install etcd-server; or set "
                                "REO_ETCD): the cluster tests need a real etcd")
    try:
        helptext = subprocess.run([BIN, "serve", "--help"], capture_output=True, text=True, timeout=60).stdout
    except OSError as e:
        raise unittest.SkipTest(f"REO_BIN={BIN} cannot run: {e}")
    if "--cluster" not in helptext:
        raise unittest.SkipTest(f"{BIN} has no `serve --cluster`: built without cluster support")
    print(f"\n[test_cluster] seed {SEED} (REO_CLUSTER_SEED replays the choices)", flush=True)


class Bodies:
    """Unique object bodies: `<key>.<serial>.<nonce>|` then random bytes, so any body read back
    names the PUT that wrote it, and anything else (a torn or foreign body) names nothing."""

    def __init__(self):
        self.nonce = os.urandom(4).hex()
        self.serial = itertools.count(1)
        self.by_name = {}

    def make(self, key, rng, lo=16, hi=2048):
        name = f"{key}.{next(self.serial)}.{self.nonce}"
        body = name.encode() + b"|" + rng.randbytes(rng.randint(lo, hi))
        self.by_name[name] = body
        return name, body

    def name_of(self, body):
        """The value a body stands for in the history: its name, or a description that no PUT
        wrote (the checker flags it)."""
        if body is None:
            return None
        head = body.split(b"|", 1)[0].decode(errors="replace")
        if self.by_name.get(head) == body:
            return head
        return f"<{len(body)} bytes no PUT wrote: {body[:48]!r}>"


def is_404(e):
    return isinstance(e, ClientError) and error_code(e)[0] == 404


class Load:
    """CLIENTS threads of random PUT/GET/DELETE on `keys`, each request to a random node,
    recorded in a History. `down(nid)`/`up(nid)` mark the windows in which a node is out (killed,
    stopped or restarting) and the membership changing: errors from that node, and 503s on writes
    anywhere, are expected inside them; any other error is a problem."""

    WEIGHTS = (("put", 45), ("get", 40), ("delete", 15))

    def __init__(self, cluster, bucket, keys, seed):
        self.c = cluster
        self.bucket = bucket
        self.keys = keys
        self.seed = seed
        self.history = History()
        self.bodies = Bodies()
        self.lock = threading.Lock()
        self.count = 0
        self.stop = threading.Event()
        self.windows = []  # [node, start, end or None]
        self.errors = []  # (start, end, node, kind, note)
        self.problems = []

    def down(self, nid):
        with self.lock:
            self.windows.append([nid, now(), None])

    def up(self, nid):
        """The node is back and the cluster settled; a second of grace for answers in flight."""
        with self.lock:
            for w in self.windows:
                if w[0] == nid and w[2] is None:
                    w[2] = now() + 1.0

    def in_window(self, t0, t1, nid=None):
        with self.lock:
            return any((nid is None or w[0] == nid) and w[1] <= t1 and (w[2] is None or t0 <= w[2])
                       for w in self.windows)

    def worker(self, i):
        rng = random.Random(f"{self.seed}-{i}")
        ids = self.c.ids()
        clients = self.c.clients()
        kinds, weights = zip(*self.WEIGHTS)
        while not self.stop.is_set():
            nid, key = rng.choice(ids), rng.choice(self.keys)
            kind = rng.choices(kinds, weights)[0]
            self.one(clients[nid], nid, kind, key, rng)
            with self.lock:
                self.count += 1

    def one(self, s3, nid, kind, key, rng):
        h = self.history
        if kind == "put":
            name, body = self.bodies.make(key, rng)
            op = h.begin("put", key, name, node=nid)
        else:
            op = h.begin(kind, key, node=nid)
        try:
            if kind == "put":
                s3.put_object(Bucket=self.bucket, Key=key, Body=body)
                h.ok(op)
            elif kind == "delete":
                s3.delete_object(Bucket=self.bucket, Key=key)
                h.ok(op)
            else:
                got = s3.get_object(Bucket=self.bucket, Key=key)["Body"].read()
                h.ok(op, self.bodies.name_of(got))
        except Exception as e:  # noqa: BLE001 - every failure is classified and recorded
            if kind == "get" and is_404(e):
                h.ok(op, None)
                return
            end = now()
            if kind == "get":
                h.drop(op)
                note = f"{error_code(e)[:2]}" if isinstance(e, ClientError) else type(e).__name__
            else:
                outcome, note = write_outcome(e)
                (h.fail if outcome == FAIL else h.unknown)(op, note)
            with self.lock:
                self.errors.append((op.start, end, nid, kind, note))
            if "refused" in note or "EndpointConnectionError" in note:
                time.sleep(0.05)  # a dead node refuses at once: do not spin on it

    def run(self, until, controller=None):
        """Runs the clients until `until(count)` holds after `controller` (if any) returned."""
        ts = [threading.Thread(target=self.worker, args=(i,), daemon=True) for i in range(CLIENTS)]
        for t in ts:
            t.start()
        try:
            if controller:
                controller()
            wait_until(lambda: until(self.count), "the load to reach its operation count", timeout=300, interval=0.1)
        finally:
            self.stop.set()
            for t in ts:
                t.join(timeout=120)

    def error_problems(self):
        """Errors the interface does not allow: any outside a window; inside one, a failed read
        through a live node (reads keep working) or a write error other than 503 from one."""
        out = []
        retry_reads = 0
        for t0, t1, nid, kind, note in self.errors:
            if self.in_window(t0, t1, nid):
                continue  # the node itself was out
            if kind != "get" and note.startswith("503") and self.in_window(t0, t1):
                continue  # a write refused while the membership changed
            if kind == "get" and note.startswith("(503,"):
                # A read that overlapped a write of its key may be asked to retry (the object
                # changed between its info and its bytes: S3's 503, which clients retry). Rare,
                # never wrong bytes; counted below.
                retry_reads += 1
                continue
            out.append(f"{kind} via {nid} failed: {note} (at {t0 - self.history.ops[0].start:.3f} s)")
        gets = sum(1 for op in self.history.ops if op.kind == "get")
        if retry_reads > max(3, gets // 100):
            out.append(f"{retry_reads} of {gets} reads were answered 503 (more than 1%)")
        return out

    def final_reads(self, nids):
        """Every key through every node in `nids`, recorded (the checker covers them too); the
        value each returned, per key."""
        seen = {}
        clients = {nid: self.c.client(nid, retries=3) for nid in nids}
        for key in self.keys:
            for nid in nids:
                op = self.history.begin("get", key, node=nid)
                try:
                    got = clients[nid].get_object(Bucket=self.bucket, Key=key)["Body"].read()
                    self.history.ok(op, self.bodies.name_of(got))
                except ClientError as e:
                    if not is_404(e):
                        self.history.drop(op)
                        self.problems.append(f"final GET {key} via {nid}: {error_code(e)}")
                        continue
                    self.history.ok(op, None)
                seen.setdefault(key, {})[nid] = op.value
        return seen

    def summary(self):
        counts = self.history.counts()
        errs = Counter((nid, kind, note) for _, _, nid, kind, note in self.errors)
        print(f"  operations: {sum(counts.values())}: " + ", ".join(f"{k} {o} {n}" for (k, o), n in sorted(counts.items())))
        if errs:
            print("  errors: " + ", ".join(f"{k} via {n}: {note} ×{c}" for (n, k, note), c in errs.most_common(12)))


class ClusterTest(unittest.TestCase):
    def cluster(self, **kw):
        c = Cluster(BIN, **kw)
        self.addCleanup(c.close)
        self.c = c
        c.start()
        return c

    def done(self, c):
        """The end of a test that passed its checks: no node may have panicked; then the
        cluster's directory goes (a failure keeps it)."""
        self.check(c, [], "problems")
        c.cleanup()

    def check(self, c, problems, what):
        """Fails with the first problems (and any panic in a node's log) and the nodes' last log
        lines; all of them go to problems.txt in the cluster directory, which a failure keeps."""
        problems = list(problems) + [f"a node panicked: {p}" for p in c.panics()]
        if problems:
            with open(os.path.join(c.dir, "problems.txt"), "w") as f:
                f.write("\n".join(problems) + "\n")
            self.fail(f"{len(problems)} {what} (all in {c.dir}/problems.txt); the first:\n" + "\n".join(problems[:5])
                      + "\n" + c.logs(10))

    def bucket(self, c, name):
        retry(lambda: c.client("n1").create_bucket(Bucket=name), f"create bucket {name}", 30)
        # Every node must see it before the load starts (they share the backend).
        for nid in c.ids():
            retry(lambda nid=nid: c.client(nid).head_bucket(Bucket=name), f"bucket {name} via {nid}", 30,
                  ok_errors=(404, 503))

    def put_many(self, c, bucket, objects, nids=None, threads=CLIENTS):
        """PUTs {key: body} spread over the nodes, retrying 503s (before any fault: the test is
        not about these writes' refusals); fails on any other error."""
        nids = nids or c.ids()
        items = sorted(objects.items())

        def part(i):
            clients = {nid: c.client(nid) for nid in nids}
            for j, (k, body) in enumerate(items[i::threads]):
                nid = nids[(i + j) % len(nids)]
                retry(lambda: clients[nid].put_object(Bucket=bucket, Key=k, Body=body), f"PUT {k} via {nid}", 30)
        with concurrent.futures.ThreadPoolExecutor(threads) as ex:
            list(ex.map(part, range(threads)))

    def victim_by_dirty(self, c, nids=None):
        """The node with the most dirty objects of its own, and that count."""
        dirty = {nid: c.dirty(nid) for nid in (nids or c.ids())}
        print(f"  dirty objects per node: {dirty}", flush=True)
        victim = max(dirty, key=dirty.get)
        return victim, dirty[victim]

    def read_all(self, c, bucket, expect, nids, problems, what, each=True):
        """GETs every key of `expect` ({key: bytes}) through each node of `nids` (each=False: through
        one of them, in turn), retrying 503s for a while; wrong bytes and failures go to `problems`."""
        def one(args):
            nid, keys = args
            s3 = c.client(nid, retries=4)
            for k in keys:
                try:
                    got = s3.get_object(Bucket=bucket, Key=k)["Body"].read()
                except Exception as e:  # noqa: BLE001 - reported as a problem
                    problems.append(f"{what}: GET {k} via {nid}: {error_code(e) if isinstance(e, ClientError) else e!r}")
                    continue
                if got != expect[k]:
                    problems.append(f"{what}: GET {k} via {nid}: wrong bytes ({len(got)} bytes: {got[:40]!r}, "
                                    f"expected {expect[k][:40]!r})")
        keys = sorted(expect)
        if each:
            jobs = [(nid, keys[i::4]) for nid in nids for i in range(4)]
        else:
            jobs = [(nid, keys[j::4 * len(nids)]) for j, nid in enumerate(nids * 4)]
        with concurrent.futures.ThreadPoolExecutor(8) as ex:
            list(ex.map(one, jobs))

    def backend_matches(self, c, bucket, expect, problems, what, absent_ok=()):
        """The backend holds exactly `expect` ({key: bytes}); keys of `absent_ok` may be missing."""
        stored = c.backend_objects(bucket)
        for k, body in sorted(expect.items()):
            if k not in stored:
                if k not in absent_ok:
                    problems.append(f"{what}: {k} is not in the backend")
            elif stored[k] != body:
                problems.append(f"{what}: {k} in the backend: wrong bytes ({stored[k][:40]!r}, expected {body[:40]!r})")
        for k in sorted(set(stored) - set(expect)):
            problems.append(f"{what}: the backend holds {k}, which no acknowledged PUT left there")


class ReadAfterWrite(ClusterTest):
    """(a) The register model over 3 nodes."""

    KEYS = [f"k{i:02d}" for i in range(20)]

    def run_load(self, name, kill=False, roll=False, away=0.0, **kw):
        c = self.cluster(nodes=3, lease_ttl_ms=TTL_MS, **kw)
        self.bucket(c, "ryw")
        load = Load(c, "ryw", self.KEYS, SEED)
        t0 = now()
        marks = {}

        def controller():
            if roll:
                return rolling_restart()
            if not kill:
                return
            victim = random.Random(SEED).choice(c.ids())
            wait_until(lambda: load.count >= 1000, "1,000 operations before the kill", timeout=120)
            load.down(victim)
            marks["kill"] = c.kill(victim)
            c.wait_member_gone(victim)
            marks["gone"] = now()
            c.restart(victim)
            c.wait_settled(timeout=30)
            load.up(victim)
            marks["back"] = now()
            marks["count"] = load.count
            print(f"  killed {victim} after {marks['kill'] - t0:.1f} s; out of the members "
                  f"{marks['gone'] - marks['kill']:.1f} s later; back and settled after "
                  f"{marks['back'] - marks['gone']:.1f} s more", flush=True)

        def rolling_restart():
            # As an operator upgrades a cluster: one node at a time is shut down gracefully,
            # started again over its data directory, and the next waits until all three are
            # settled members again.
            wait_until(lambda: load.count >= 800, "800 operations before the first restart", timeout=120)
            for nid in c.ids():
                load.down(nid)
                t = now()
                rc = c.stop(nid)
                if rc != 0:
                    load.problems.append(f"{nid} exited with {rc} on SIGTERM")
                stopped = now()
                time.sleep(away)
                c.restart(nid)
                c.wait_settled(members=c.ids(), timeout=30)
                load.up(nid)
                print(f"  {nid}: SIGTERM to exit {stopped - t:.1f} s, away {away:.1f} s, then settled "
                      f"{now() - stopped:.1f} s (at {load.count} operations)", flush=True)
            marks["count"] = load.count

        target = 3000
        after = 1000 if kill else 500
        load.run(lambda n: n >= target and (not (kill or roll) or n >= marks.get("count", 1 << 60) + after),
                 controller)
        wall = now() - t0
        c.wait_settled(timeout=30)
        final = load.final_reads(c.ids())
        print(f"\n[{name}] {load.count} operations in {wall:.1f} s ({load.count / wall:.0f}/s)")
        load.summary()
        problems = load.history.check()
        problems += load.error_problems() + load.problems
        for key, by_node in sorted(final.items()):
            if len(set(by_node.values())) > 1:
                problems.append(f"after the load, the nodes disagree on {key}: {by_node}")
        # Everything to the backend, then the backend must hold what the nodes serve.
        c.flush(*c.ids())
        stored = c.backend_objects("ryw")
        for key in self.KEYS:
            want = final.get(key, {}).get("n1")
            have = load.bodies.name_of(stored[key]) if key in stored else None
            if have != want:
                problems.append(f"after a full flush the backend holds {have!r} for {key}, the nodes serve {want!r}")
        print(f"  violations and problems: {len(problems)}", flush=True)
        self.check(c, problems, "violations")
        self.done(c)

    def test_a1_steady_membership(self):
        self.run_load("read-after-write", kill=False)

    def test_a2_a_node_killed_and_restarted_mid_run(self):
        self.run_load("read-after-write, kill -9 and restart", kill=True)

    def test_i_rolling_restart_without_loss(self):
        # A graceful restart must hand over or flush what the node holds: no acknowledged write
        # may be lost or rolled back, and reads through the nodes that are up keep working.
        self.run_load("read-after-write, rolling restart", roll=True)

    def test_i2_rolling_restart_with_everything_unflushed(self):
        # As (i), with nothing flushed by itself: each restarted node comes back holding
        # unflushed writes (its own and its peers' replicas) that only its data directory and
        # the replicas have, so none may be lost or rolled back across the restart.
        self.run_load("read-after-write, rolling restart, unflushed", roll=True, flush_delay_ms=LONG_DELAY_MS)

    def test_i3_rolling_restart_slower_than_the_lease(self):
        # As (i), with each node away longer than its lease (a slow restart): every restart is a
        # failover and a re-join, the node's keys move to the others and back, and the next node
        # restarted has just handed those keys back. Nothing it flushed or handed over before
        # leaving may come back over a newer write when it is failed over in turn.
        self.run_load("read-after-write, rolling restart past the lease", roll=True, away=TTL_MS / 1000 + 1.5)


class Failover(ClusterTest):
    """(b), (c): the owner of unflushed objects dies; the replica holders flush them."""

    def kill_owner_and_check(self, c, bucket, final, min_dirty, victim=None):
        """Kills the node with the most dirty objects (≥ min_dirty), reads through the survivors
        meanwhile, and checks the failover: all its objects in the backend, byte-exact, within the
        lease TTL + 5 s; finally a flush of the survivors puts everything there."""
        problems = []
        self.assertEqual(len(c.backend_objects(bucket)), 0,
                         "objects reached the backend before the kill: the flush delay did not hold")
        if victim is None:
            victim, d = self.victim_by_dirty(c)
        else:
            d = c.dirty(victim)
        self.assertGreaterEqual(d, min_dirty, f"{victim} holds only {d} unflushed objects")
        survivors = [n for n in c.ids() if n != victim]
        # The victim's own dirty keys, exactly, if its query says so (cross-checked with its count).
        mine = c.dirty_keys(victim, bucket, sorted({k[:-2] for k in final})) or set()
        exact = len(mine) == d
        if not exact:
            print(f"  the victim's query lists {len(mine)} dirty keys, its status {d}: checking counts only")

        stop = threading.Event()
        reads = Counter()

        def whose(k):
            return f"{victim}'s" if k in mine else "a survivor's" if exact else "home unknown"

        def reader(i):
            rng = random.Random(f"{SEED}-r{i}")
            s3s = {nid: c.client(nid, retries=4) for nid in survivors}
            keys = sorted(final)
            while not stop.is_set():
                nid, k = rng.choice(survivors), rng.choice(keys)
                t0 = now()
                try:
                    got = s3s[nid].get_object(Bucket=bucket, Key=k)["Body"].read()
                except Exception as e:  # noqa: BLE001 - reported
                    problems.append(f"during the failover: GET {k} ({whose(k)}) via {nid}, {t0 - killed:.2f}–"
                                    f"{now() - killed:.2f} s after the kill: "
                                    f"{error_code(e) if isinstance(e, ClientError) else e!r}")
                    reads["failed"] += 1
                    continue
                reads["ok" if got == final[k] else "wrong"] += 1
                if got != final[k]:
                    problems.append(f"during the failover: GET {k} ({whose(k)}) via {nid}, {t0 - killed:.2f}–"
                                    f"{now() - killed:.2f} s after the kill: wrong bytes {got[:40]!r}, "
                                    f"expected {final[k][:40]!r}")
        readers = [threading.Thread(target=reader, args=(i,), daemon=True) for i in range(4)]
        killed = c.kill(victim)
        for t in readers:
            t.start()
        bound = c.lease_ttl + 5

        def arrived():
            stored = c.backend_keys(bucket)
            return (len(stored) >= d and (not exact or mine <= stored)), len(stored)
        try:
            wait_until(lambda: arrived()[0], f"{d} objects of {victim} in the backend", timeout=killed + bound - now(),
                       interval=0.2)
            took = now() - killed
        except AssertionError:
            # Not in time: how late (or whether at all) says more than the bare failure.
            late = None
            try:
                wait_until(lambda: arrived()[0], "late failover", timeout=120)
                late = now() - killed
            except AssertionError:
                pass
            problems.append(f"the failover did not put {victim}'s {d} objects in the backend within "
                            f"{bound:.0f} s of the kill: {arrived()[1]} there at the deadline" +
                            (f"; all there after {late:.1f} s" if late else "; not even after 120 s more") +
                            f"; survivors' status: {[c.status(n) for n in survivors]}")
            took = None
        c.wait_member_gone(victim, timeout=30)
        stop.set()
        for t in readers:
            t.join(timeout=120)
        print(f"  killed {victim} ({d} dirty objects): failover done in "
              + (f"{took:.2f} s" if took is not None else "TOO LONG") + f"; reads meanwhile: {dict(reads)}", flush=True)
        # What reached the backend is byte-exact, and (when known exactly) is the victim's objects.
        stored = c.backend_objects(bucket)
        for k, body in stored.items():
            if final.get(k) != body:
                problems.append(f"after the failover the backend holds a wrong {k}: {body[:40]!r}, "
                                f"expected {final.get(k, b'(no such key)')[:40]!r}")
        # Every object reads right through a survivor, and a flush puts all in the backend.
        self.read_all(c, bucket, final, survivors, problems, "after the failover", each=False)
        c.flush(*survivors)
        self.backend_matches(c, bucket, final, problems, "after the survivors' flush")
        self.check(c, problems, "problems")

    def test_b_failover_flushes_every_unflushed_object_of_a_killed_node(self):
        c = self.cluster(nodes=3, lease_ttl_ms=TTL_MS, flush_delay_ms=LONG_DELAY_MS)
        self.bucket(c, "failover")
        rng = random.Random(SEED)
        # 3 × 1,100: the most loaded of three homes holds well over 1,000.
        objects = {f"o{i:04d}": rng.randbytes(rng.randint(256, 2048)) for i in range(3300)}
        t = now()
        self.put_many(c, "failover", objects)
        print(f"\n  {len(objects)} PUTs in {now() - t:.1f} s", flush=True)
        self.kill_owner_and_check(c, "failover", objects, min_dirty=1000)
        self.done(c)

    def test_c_the_newest_replica_wins(self):
        # A home node sends each new version of a key to the key's previous replica targets
        # first, so the holders of a key would all have its newest version, unless a target
        # missed one. Make some miss: four nodes, three copies (two replica targets per key),
        # and while one node is stopped (longer than the 2 s a replica target may take, shorter
        # than its lease) new versions of the victim's keys go to another target instead. The
        # stopped node keeps the older replica (nothing is dropped before the owner's flush,
        # which the flush delay holds off), so at the failover the holders disagree and the
        # newest version must win. The default lease (5 s) leaves room for the 2.8 s stop.
        c = self.cluster(nodes=4, replicas=3, lease_ttl_ms=None, flush_delay_ms=LONG_DELAY_MS)
        self.bucket(c, "newest")
        rng = random.Random(SEED + 1)
        keys = [f"v{i:03d}" for i in range(200)]
        final = {}
        ids = c.ids()
        s3s = c.clients()

        def write(batch, nids, threads=8):
            def part(i):
                for j, (k, body) in enumerate(batch[i::threads]):
                    nid = nids[(i + j) % len(nids)]
                    retry(lambda: s3s[nid].put_object(Bucket="newest", Key=k, Body=body), f"PUT {k} via {nid}", 30)
            with concurrent.futures.ThreadPoolExecutor(threads) as ex:
                list(ex.map(part, range(threads)))
            final.update(batch)

        def version(ks, n):
            return [(k, f"{k} v{n}|".encode() + rng.randbytes(rng.randint(64, 1024))) for k in ks]
        write(version(keys, 1), ids)
        homes = c.homes("newest", ["v"])
        self.assertEqual(set(homes), set(keys), "every key is unflushed at exactly one home")
        victim = max(ids, key=lambda n: sum(1 for h in homes.values() if h == n))
        theirs = sorted(k for k, h in homes.items() if h == victim)
        others = [n for n in ids if n != victim]
        write(version(theirs, 2), ids)
        stopped = others[0]
        c.sigstop(stopped)
        t = now()
        try:
            writer = threading.Thread(target=write, args=(version(theirs, 3), [n for n in ids if n != stopped]))
            writer.start()
            time.sleep(max(0.0, 2.8 - (now() - t)))  # the stop's length is the point, not an event
        finally:
            c.sigcont(stopped)
        writer.join()
        c.wait_settled(timeout=30)
        # A fourth version for half of them: holders differ in how many updates they got.
        write(version([k for k in theirs if rng.random() < 0.5], 4), ids)
        # Evidence that targets were replaced (a counter of this build's status, not of the
        # interface: printed, not asserted).
        counters = (c.status(victim) or {}).get("counters", {})
        print(f"\n  {victim} is home of {len(theirs)} keys; {stopped} was stopped 2.8 s during their third version; "
              f"replica sends that failed over to another target: {counters.get('replica_failures', '?')}", flush=True)
        self.kill_owner_and_check(c, "newest", final, min_dirty=len(theirs), victim=victim)
        self.done(c)

class MotoFailover(ClusterTest):
    """(h) The failover of (b) over an S3 backend (a moto_server): the survivors' flush of a dead
    node's objects goes through the S3 client, its retries and credentials, not a directory."""

    def test_h_moto_backend_failover(self):
        from test_s3backend import MOTO_KEY, MOTO_SECRET, Moto
        moto = Moto()
        moto.start()
        self.addCleanup(moto.stop)
        s3 = moto.client()
        c = self.cluster(nodes=3, lease_ttl_ms=TTL_MS, flush_delay_ms=LONG_DELAY_MS,
                         backend=f"s3+http://127.0.0.1:{moto.port}",
                         env={"AWS_ACCESS_KEY_ID": MOTO_KEY, "AWS_SECRET_ACCESS_KEY": MOTO_SECRET,
                              "AWS_REGION": "us-east-1"})

        # The failover checks read "the backend": here that is moto, read straight with boto3.
        # What counts as arrived within the bound is a key whose bytes in moto are the expected
        # ones (its ETag is the MD5 of a single-part PUT's bytes), so the deadline covers
        # byte-exactness, not just presence; the full bytes are compared again afterwards.
        objects = {}

        def moto_keys(bucket, exact=False):
            out = set()
            for page in s3.get_paginator("list_objects_v2").paginate(Bucket=bucket):
                for o in page.get("Contents", ()):
                    k = o["Key"]
                    if not exact or (k in objects and o["ETag"].strip('"') == hashlib.md5(objects[k]).hexdigest()):
                        out.add(k)
            return out
        c.backend_keys = lambda bucket: moto_keys(bucket, exact=True)
        c.backend_objects = lambda bucket: {k: s3.get_object(Bucket=bucket, Key=k)["Body"].read()
                                            for k in moto_keys(bucket)}

        self.bucket(c, "mfo")
        s3.head_bucket(Bucket="mfo")  # the bucket went through to moto
        rng = random.Random(SEED + 7)
        objects.update({f"m{i:04d}": rng.randbytes(rng.randint(1024, 4096)) for i in range(300)})
        t = now()
        self.put_many(c, "mfo", objects)
        # Overwrite a fifth of them through other nodes than the first time: the backend must end
        # with the second version, which may live at a different replica holder than the first.
        again = {k: rng.randbytes(rng.randint(1024, 4096)) for k in sorted(objects)[::5]}
        self.put_many(c, "mfo", again, nids=list(reversed(c.ids())))
        objects.update(again)
        print(f"\n  {len(objects)} objects ({len(again)} overwritten) in {now() - t:.1f} s", flush=True)
        Failover.kill_owner_and_check(self, c, "mfo", objects, min_dirty=60)
        self.done(c)


class Partition(ClusterTest):
    """(d) A node stopped past its lease comes back: it must not serve or flush what it had."""

    def test_d_a_sigstopped_node_never_serves_or_flushes_stale_data(self):
        c = self.cluster(nodes=3, lease_ttl_ms=TTL_MS, flush_delay_ms=LONG_DELAY_MS)
        self.bucket(c, "part")
        rng = random.Random(SEED + 2)
        keys = [f"p{i:03d}" for i in range(300)]
        v1 = {k: b"v1|" + rng.randbytes(rng.randint(64, 1024)) for k in keys}
        self.put_many(c, "part", v1)
        x, d = self.victim_by_dirty(c)
        problems = []
        # Through x, so that x caches every key (and holds permissions on those of other homes).
        self.read_all(c, "part", v1, [x], problems, "before the stop")
        self.check(c, problems, "problems before the stop")
        others = [n for n in c.ids() if n != x]
        stopped = c.sigstop(x)
        c.wait_member_gone(x)
        print(f"\n  stopped {x} (home of {d} dirty objects); out of the members after {now() - stopped:.1f} s", flush=True)
        v2 = {k: b"v2|" + rng.randbytes(rng.randint(64, 1024)) for k in keys}
        self.put_many(c, "part", v2, nids=others)
        resumed = c.sigcont(x)
        # From the moment it runs again, x may refuse or delay a read, never answer v1.
        served = Counter()
        pending = set(keys)
        s3 = c.client(x, read_timeout=10)

        def poll():
            for k in sorted(pending):
                try:
                    got = s3.get_object(Bucket="part", Key=k)["Body"].read()
                except Exception as e:  # noqa: BLE001 - a refused read is allowed here, counted
                    served[f"error {error_code(e)[:2] if isinstance(e, ClientError) else type(e).__name__}"] += 1
                    continue
                if got == v2[k]:
                    served["v2"] += 1
                    pending.discard(k)
                elif got == v1[k]:
                    served["STALE v1"] += 1
                    problems.append(f"{x} served the stale v1 of {k} {now() - resumed:.2f} s after SIGCONT")
                else:
                    served["other"] += 1
                    problems.append(f"{x} served bytes no PUT wrote for {k}: {got[:40]!r}")
            return not pending
        try:
            wait_until(poll, f"{x} to serve every new version", timeout=c.lease_ttl + 20, interval=0.2)
        except AssertionError as e:
            problems.append(f"{e}: {len(pending)} keys still not served as v2")
        print(f"  after SIGCONT, reads through {x}: {dict(served)}", flush=True)
        c.wait_settled(timeout=30)
        # The others first, the stale node last: a stale flush from x would overwrite v2 in the
        # backend, and nothing after it would put v2 back.
        c.flush(*others)
        c.flush(x)
        self.backend_matches(c, "part", v2, problems, "after a full flush")
        self.read_all(c, "part", v2, c.ids(), problems, "after a full flush")
        self.check(c, problems, "problems")
        self.done(c)


class ReplicaTargetDies(ClusterTest):
    """(e) A node dies while PUTs stream in: none acknowledged is lost."""

    def test_e_a_replica_holder_killed_during_puts(self):
        c = self.cluster(nodes=3, lease_ttl_ms=TTL_MS, flush_delay_ms=LONG_DELAY_MS)
        self.bucket(c, "target-dies")
        victim, writers = "n3", ["n1", "n2"]
        acked, refused, problems = {}, {}, []
        lock = threading.Lock()
        stop = threading.Event()
        counter = itertools.count()

        def writer(i):
            rng = random.Random(f"{SEED}-w{i}")
            s3s = {nid: c.client(nid) for nid in writers}
            while not stop.is_set():
                n = next(counter)
                k, nid = f"s{n:05d}", writers[n % 2]
                body = rng.randbytes(rng.randint(64, 4096))
                try:
                    s3s[nid].put_object(Bucket="target-dies", Key=k, Body=body)
                except ClientError as e:
                    status, code, msg = error_code(e)
                    with lock:
                        refused[k] = body
                    if status != 503:
                        problems.append(f"PUT {k} via {nid}: {status} {code} {msg} (allowed: success or 503)")
                    continue
                except Exception as e:  # noqa: BLE001 - not an allowed outcome
                    with lock:
                        refused[k] = body
                    problems.append(f"PUT {k} via {nid}: {e!r} (allowed: success or 503)")
                    continue
                with lock:
                    acked[k] = body
        ts = [threading.Thread(target=writer, args=(i,), daemon=True) for i in range(4)]
        for t in ts:
            t.start()
        try:
            wait_until(lambda: len(acked) >= 300, "300 acknowledged PUTs before the kill", timeout=120)
            killed = c.kill(victim)
            before = len(acked)
            c.wait_member_gone(victim)
            gone = now()
            wait_until(lambda: len(acked) >= before + 300, "300 more acknowledged PUTs after the kill", timeout=120)
        finally:
            stop.set()
            for t in ts:
                t.join(timeout=120)
        print(f"\n  killed {victim} after {before} acknowledged PUTs; out of the members {gone - killed:.1f} s later; "
              f"{len(acked)} acknowledged, {len(refused)} refused in all", flush=True)
        c.wait_settled(writers, writers, timeout=30)
        self.read_all(c, "target-dies", acked, writers, problems, "after the kill")
        # A refused PUT may or may not have taken effect, but never as other bytes.
        s3 = c.client("n1", retries=4)
        for k, body in sorted(refused.items()):
            try:
                got = s3.get_object(Bucket="target-dies", Key=k)["Body"].read()
            except ClientError as e:
                if not is_404(e):
                    problems.append(f"GET of the refused {k}: {error_code(e)}")
                continue
            if got != body:
                problems.append(f"the refused PUT {k} reads as other bytes")
        c.flush(*writers)
        self.backend_matches(c, "target-dies", {**refused, **acked}, problems, "after the survivors' flush",
                             absent_ok=set(refused))
        self.check(c, problems, "problems")
        self.done(c)

    def test_e2_copies_a_dead_holder_took_are_made_again(self):
        # An unflushed write has two copies: at its home and at one replica target. When a
        # target dies, the writes whose copy it held are down to one; before the membership
        # settles, their homes replicate them again to the live members. Proof: kill the node
        # holding the most replicas of one home (at least half of its keys' copies, usually all),
        # let the cluster settle, then SIGSTOP that home (well within its lease) and read a
        # sample of its keys through the third node, which can answer them only from the home's
        # replicas (the backend has none of them): each must read right. Without the
        # re-replication, every sampled key whose copy was on the dead node answers 404.
        c = self.cluster(nodes=3, lease_ttl_ms=20_000, flush_delay_ms=LONG_DELAY_MS)
        self.bucket(c, "restored")
        rng = random.Random(SEED + 2)
        objects = {f"r{i:03d}": rng.randbytes(rng.randint(64, 2048)) for i in range(300)}
        self.put_many(c, "restored", objects)
        homes = c.homes("restored", ["r"])
        held = {nid: (c.status(nid) or {}).get("replicas", {}).get("by_owner", {}) for nid in c.ids()}
        victim, home = max(((v, h) for v in c.ids() for h in c.ids() if h != v), key=lambda p: held[p[0]].get(p[1], 0))
        reader = next(n for n in c.ids() if n not in (victim, home))
        theirs = sorted(k for k, h in homes.items() if h == home)
        # The reader held the other copies of the home's keys: those cannot tell restored copies
        # from copies it had all along.
        self.assertEqual(held[reader].get(home, 0) + held[victim].get(home, 0), len(theirs),
                         f"replicas of {home}'s keys by holder: {held}")
        self.assertGreaterEqual(2 * held[victim].get(home, 0), len(theirs), f"replicas by holder: {held}")
        c.kill(victim)
        c.wait_member_gone(victim)
        restored = (c.status(home) or {}).get("counters", {}).get("copies_restored", 0)
        self.assertEqual(restored, held[victim][home],
                         f"{home} replicated {restored} of its writes again after {victim}, which held "
                         f"{held[victim][home]} of their copies, died")
        sample = rng.sample(theirs, 16)
        clients = {k: c.client(reader) for k in sample}
        problems = []
        c.sigstop(home)
        t = now()
        try:
            def read(k):
                try:
                    got = clients[k].get_object(Bucket="restored", Key=k)["Body"].read()
                except Exception as e:  # noqa: BLE001 - reported
                    return f"GET {k} via {reader} while its home {home} is stopped: " + \
                        (f"{error_code(e)}" if isinstance(e, ClientError) else repr(e))
                return None if got == objects[k] else f"GET {k} via {reader} while {home} is stopped: wrong bytes"
            with concurrent.futures.ThreadPoolExecutor(len(sample)) as ex:
                problems += [p for p in ex.map(read, sample) if p]
        finally:
            took = c.sigcont(home) - t
        print(f"\n  {victim} held {held[victim][home]} of {home}'s {len(theirs)} copies; {home} replicated {restored} "
              f"again; {len(sample)} of its keys read through {reader} while it was stopped {took:.1f} s", flush=True)
        # A lease of 20 s is renewed every 6.7 s: a stop under 12 s ends before it can expire
        # (each read waits out a 2 s peer timeout; 16 of them take 4–7 s on a 2-core machine).
        self.assertLess(took, 12.0, f"{home} was stopped too close to its lease for the reads to mean anything")
        survivors = [home, reader]
        c.wait_settled(survivors, survivors, timeout=30)
        self.read_all(c, "restored", objects, survivors, problems, f"after {home} resumed", each=False)
        c.flush(*survivors)
        self.backend_matches(c, "restored", objects, problems, "after the survivors' flush")
        self.check(c, problems, "problems")
        self.done(c)

class EtcdDown(ClusterTest):
    """(f) Without etcd: cached reads go on (within the permission lease), writes are refused
    with a reason, and all recovers when etcd is back."""

    def test_f_etcd_down_then_back(self):
        permission_ms = 10_000
        c = self.cluster(nodes=3, lease_ttl_ms=TTL_MS, permission_ms=permission_ms, flush_delay_ms=LONG_DELAY_MS)
        self.bucket(c, "etcd-down")
        body = os.urandom(1000)
        retry(lambda: c.client("n1").put_object(Bucket="etcd-down", Key="cached", Body=body), "PUT cached", 30)
        # Its home (the one node holding it unflushed), then written back: a clean object is what
        # the other nodes cache under a permission (an unflushed one is always read at its home).
        homes = c.homes("etcd-down", ["cached"])
        self.assertEqual(list(homes), ["cached"], homes)
        home = homes["cached"]
        c.flush(home)
        self.assertEqual(c.backend_objects("etcd-down").get("cached"), body)
        for nid in c.ids():  # the others now hold a permission on it
            self.assertEqual(c.client(nid).get_object(Bucket="etcd-down", Key="cached")["Body"].read(), body)
        read_at = now()
        c.etcd.kill()
        # Through a node holding a permission, the read goes on. The home node holds none (it
        # decides, and cannot know whether it still is home without etcd): it may refuse, and
        # must not serve anything else.
        home_reads = Counter()

        def read_everywhere(when):
            for nid in c.ids():
                try:
                    got = c.client(nid).get_object(Bucket="etcd-down", Key="cached")["Body"].read()
                except ClientError as e:
                    if nid != home or error_code(e)[0] != 503:
                        raise AssertionError(f"a cached read through {nid} {when}: {error_code(e)}") from e
                    home_reads["503"] += 1
                    continue
                self.assertEqual(got, body, f"a cached read through {nid} {when}")
                if nid == home:
                    home_reads["ok"] += 1
        read_everywhere("right after etcd died")
        # A node learns that etcd is gone at its next keep-alive (every TTL/3): by the end of its
        # lease at the latest, it must refuse writes — and keep refusing.
        acked_while_down = []
        refusal = {}

        def refused():
            k = f"w{len(acked_while_down) + len(refusal)}"
            try:
                c.client("n2").put_object(Bucket="etcd-down", Key=k, Body=b"x")
            except ClientError as e:
                refusal.update(zip(("status", "code", "message"), error_code(e)))
                return True
            acked_while_down.append((k, now() - read_at))
            return False
        wait_until(refused, "a PUT to be refused with etcd down", timeout=c.lease_ttl + 2, interval=0.1)
        self.assertEqual(refusal["status"], 503, refusal)
        msg = refusal["message"].lower()
        self.assertTrue(any(w in msg for w in ("etcd", "cluster", "coordinat")),
                        f"the refusal does not say why: {refusal}")
        for nid in c.ids():
            with self.assertRaises(ClientError, msg=f"a PUT through {nid} with etcd down") as cm:
                c.client(nid).put_object(Bucket="etcd-down", Key=f"refused-{nid}", Body=b"x")
            self.assertEqual(error_code(cm.exception)[0], 503, f"PUT through {nid} with etcd down")
        # Reads of the cached object still work, within the permission lease of the last read.
        read_everywhere(f"with etcd down {now() - read_at:.1f} s")
        self.assertLess(now() - read_at, permission_ms / 1000, "the test is too slow for the permission lease")
        print(f"\n  etcd killed; PUTs acknowledged before the first refusal: {acked_while_down}; refusal: {refusal}; "
              f"reads through the home {home} meanwhile: {dict(home_reads)}", flush=True)
        down_for = now() - read_at
        c.etcd.start()
        back = now()
        for nid in c.ids():
            retry(lambda nid=nid: c.client(nid).put_object(Bucket="etcd-down", Key=f"after-{nid}", Body=nid.encode()),
                  f"a PUT through {nid} after etcd came back", 30)
        print(f"  etcd down {down_for:.1f} s; writes through every node again {now() - back:.1f} s after its restart",
              flush=True)
        c.wait_settled(timeout=30)
        # Read-your-writes across nodes again.
        for i, nid in enumerate(c.ids()):
            new = os.urandom(500)
            c.client(nid, retries=3).put_object(Bucket="etcd-down", Key="cached", Body=new)
            other = c.ids()[(i + 1) % len(c.ids())]
            self.assertEqual(c.client(other).get_object(Bucket="etcd-down", Key="cached")["Body"].read(), new,
                             f"a PUT through {nid}, then a GET through {other}")
        for k, _ in acked_while_down:  # acknowledged: they must exist
            self.assertEqual(c.client("n3").get_object(Bucket="etcd-down", Key=k)["Body"].read(), b"x", k)
        self.done(c)


class Operations(ClusterTest):
    """(g) The admin side: status, the API's access, peer paths, graceful leave."""

    FIELDS = ("node_id", "fenced", "settled", "members", "pending_failover", "replicas", "dirty_objects")

    def test_g1_status(self):
        c = self.cluster(nodes=3, lease_ttl_ms=TTL_MS)
        for nid in c.nodes:
            st = c.admin_status(nid)
            for f in self.FIELDS:
                self.assertIn(f, st, f"`reo admin cluster status --json` of {nid}")
            self.assertEqual(st["node_id"], nid)
            self.assertFalse(st["fenced"])
            self.assertEqual(sorted((m["id"], m["advertise"]) for m in st["members"]),
                             sorted((m.id, f"127.0.0.1:{m.port}") for m in c.nodes.values()))
            self.assertLessEqual({"objects", "bytes"}, set(st["replicas"]), f"replicas of {nid}: {st['replicas']}")
        self.done(c)

    def test_g2_status_api_and_peer_paths_refuse_others(self):
        c = self.cluster(nodes=3, lease_ttl_ms=TTL_MS)
        for nid, n in c.nodes.items():
            code, body = reoapi.call(n, "GET", "/_reo/admin/cluster")
            self.assertEqual(code, 200, f"GET /_reo/admin/cluster (admin-signed) on {nid}: {body!r:.200}")
            self.assertEqual(body["node_id"], nid, "GET /_reo/admin/cluster")
            # Not for anonymous callers, nor for S3 users: only the admin.
            self.assertIn(reoapi.call(n, "GET", "/_reo/admin/cluster", sign=False)[0], (401, 403))
            self.assertIn(reoapi.call(n, "GET", "/_reo/admin/cluster", access=ACCESS, secret=SECRET)[0], (401, 403))
            # Peer paths take the cluster secret, not an S3 user's signature.
            for how in ({"sign": False}, {"access": ACCESS, "secret": SECRET}):
                st_code = reoapi.call(n, "POST", "/_reo/peer/replica", body={}, **how)[0]
                self.assertTrue(400 <= st_code < 500, f"{nid}: /_reo/peer/ with {how}: HTTP {st_code}")
        self.done(c)

    def test_g3_leave(self):
        c = self.cluster(nodes=3, lease_ttl_ms=TTL_MS, flush_delay_ms=LONG_DELAY_MS)
        self.bucket(c, "leave")
        rng = random.Random(SEED + 3)
        objects = {f"l{i:03d}": rng.randbytes(rng.randint(64, 1024)) for i in range(300)}
        self.put_many(c, "leave", objects)
        x, d = self.victim_by_dirty(c)
        rest = [n for n in c.ids() if n != x]
        reoapi.admin(BIN, c.node(x), "cluster", "leave")
        # Whether the command returns when the leave is done or once it has begun is not said:
        # poll for its end.
        wait_until(lambda: (c.status(x) or {}).get("dirty_objects") == 0, f"{x} to flush its dirty objects", 60)
        c.wait_settled(rest, rest, timeout=30)
        self.assertTrue(c.node(x).alive, f"{x} exited on `cluster leave`")
        self.assertGreaterEqual(len(c.backend_objects("leave")), d, f"{x}'s {d} dirty objects were not flushed")
        problems = []
        self.read_all(c, "leave", objects, rest, problems, "after the leave")
        new = {k: rng.randbytes(100) for k in list(objects)[:30]}
        self.put_many(c, "leave", new, nids=rest)
        objects.update(new)
        self.read_all(c, "leave", objects, rest, problems, "after writes without the leaver")
        c.flush(*rest)
        self.backend_matches(c, "leave", objects, problems, "after the flush")
        self.check(c, problems, "problems")
        self.done(c)


class Listing(ClusterTest):
    """(j) A listing through any node shows the objects and deletes acknowledged through every
    node, written back or not."""

    def listed(self, c, nid, bucket, page=7, **kw):
        """{key: size} of a whole ListObjectsV2 through `nid`, in pages of `page` keys, and the
        common prefixes (with a delimiter)."""
        s3 = c.client(nid, retries=4)
        keys, prefixes = {}, []
        for p in s3.get_paginator("list_objects_v2").paginate(Bucket=bucket, PaginationConfig={"PageSize": page}, **kw):
            keys.update({o["Key"]: o["Size"] for o in p.get("Contents", [])})
            prefixes += [x["Prefix"] for x in p.get("CommonPrefixes", [])]
        return keys, prefixes

    def test_j_listings_merge_every_nodes_unflushed_objects(self):
        c = self.cluster(nodes=3, lease_ttl_ms=TTL_MS, flush_delay_ms=LONG_DELAY_MS)
        self.bucket(c, "lst")
        rng = random.Random(SEED + 10)
        objects = {f"{g}-{i:03d}": rng.randbytes(rng.randint(1, 300)) for g in "abc" for i in range(40)}
        self.put_many(c, "lst", objects)
        self.assertEqual(c.backend_objects("lst"), {}, "the objects must be unflushed for this test")
        dirty = {nid: c.dirty(nid) for nid in c.ids()}
        self.assertTrue(all(dirty.values()), f"every node must hold some of the unflushed objects: {dirty}")
        want = {k: len(v) for k, v in objects.items()}
        for nid in c.ids():
            keys, _ = self.listed(c, nid, "lst")
            self.assertEqual(keys, want, f"ListObjectsV2 through {nid} (unflushed on {dirty})")
            _, prefixes = self.listed(c, nid, "lst", page=2, Delimiter="-")
            self.assertEqual(prefixes, ["a-", "b-", "c-"], f"common prefixes through {nid}")
            keys, _ = self.listed(c, nid, "lst", page=5, Prefix="b-", StartAfter="b-009")
            self.assertEqual(keys, {k: n for k, n in want.items() if k.startswith("b-") and k > "b-009"},
                             f"a prefix and a start through {nid}")
        # Unflushed deletes through every node hide the keys everywhere.
        gone = sorted(rng.sample(sorted(objects), 30))
        for j, k in enumerate(gone):
            nid = c.ids()[j % 3]
            retry(lambda k=k, nid=nid: c.client(nid).delete_object(Bucket="lst", Key=k), f"DELETE {k} via {nid}", 30)
        c.flush(*c.ids())
        for k in gone:
            del want[k]
        self.assertEqual(set(c.backend_objects("lst")), set(want), "the backend after the flush")
        for nid in c.ids():
            keys, _ = self.listed(c, nid, "lst", page=1000)
            self.assertEqual(keys, want, f"ListObjectsV2 through {nid} after deletes and a flush (the backend is "
                                         f"written by every node)")
        more = {f"d-{i:03d}": rng.randbytes(50) for i in range(20)}
        self.put_many(c, "lst", more)
        want.update({k: 50 for k in more})
        retry(lambda: c.client("n2").delete_object(Bucket="lst", Key="a-000"), "DELETE a-000", 30)
        want.pop("a-000", None)
        for nid in c.ids():
            keys, _ = self.listed(c, nid, "lst", page=1000)
            self.assertEqual(keys, want, f"ListObjectsV2 through {nid} after deletes, a flush and new writes")
            v1 = c.client(nid, retries=4).list_objects(Bucket="lst", MaxKeys=1000)
            self.assertEqual({o["Key"] for o in v1.get("Contents", [])}, set(want), f"ListObjects (v1) through {nid}")
        self.done(c)


@unittest.skipUnless(LONG, "the long kill/stop loop runs with REO_CLUSTER_LONG=1 (REO_CLUSTER_CYCLES cycles)")
class Chaos(ClusterTest):
    """Random SIGKILL (then restart), SIGSTOP past the lease, and short SIGSTOP (within it) of a
    random node, under the load of (a), cycle after cycle; then the register model, a full
    flush and the backend against what the nodes serve."""

    def test_long_kill_stop_loop(self):
        c = self.cluster(nodes=3, lease_ttl_ms=TTL_MS, flush_delay_ms=3000)
        self.bucket(c, "chaos")
        keys = [f"c{i:02d}" for i in range(40)]
        load = Load(c, "chaos", keys, SEED)
        rng = random.Random(SEED + 4)
        actions = Counter()

        def controller():
            for cycle in range(CYCLES):
                time.sleep(rng.uniform(0.5, 3.0))  # load between faults: a random span, not an event
                nid = rng.choice(c.ids())
                what = rng.choice(["kill", "stop-long", "stop-short"])
                actions[what] += 1
                load.down(nid)
                if what == "kill":
                    c.kill(nid)
                    c.wait_member_gone(nid)
                    c.restart(nid)
                elif what == "stop-long":
                    c.sigstop(nid)
                    c.wait_member_gone(nid)
                    c.sigcont(nid)
                else:
                    c.sigstop(nid)
                    time.sleep(rng.uniform(0.1, c.lease_ttl / 2))  # a pause shorter than the lease
                    c.sigcont(nid)
                c.wait_settled(timeout=60)
                load.up(nid)
                print(f"  cycle {cycle + 1}/{CYCLES}: {what} {nid}; {load.count} operations so far", flush=True)

        t0 = now()
        load.run(lambda n: True, controller)
        c.wait_settled(timeout=30)
        final = load.final_reads(c.ids())
        print(f"\n[chaos] {CYCLES} cycles {dict(actions)}, {load.count} operations in {now() - t0:.0f} s")
        load.summary()
        problems = load.history.check() + load.error_problems() + load.problems
        c.flush(*c.ids())
        stored = c.backend_objects("chaos")
        for key in keys:
            want = final.get(key, {}).get("n1")
            have = load.bodies.name_of(stored[key]) if key in stored else None
            if have != want:
                problems.append(f"after a full flush the backend holds {have!r} for {key}, the nodes serve {want!r}")
            if want not in load.history.allowed_final(key):
                problems.append(f"{key}: the nodes serve {want!r}, which the model does not allow at the end")
        self.check(c, problems, "violations")
        self.done(c)


if __name__ == "__main__":
    unittest.main()
