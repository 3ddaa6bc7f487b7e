"""A Reo cluster of real processes for the end-to-end tests: a private etcd on free loopback ports
and N `reo serve` nodes (server.py's Server) over one shared backend (a local directory, or the
`--backend` URL given), with helpers to SIGKILL, SIGTERM, SIGSTOP, SIGCONT and restart nodes and
etcd, to wait for what the nodes report in `cluster status` (polled, never a fixed sleep where an
event can be polled), to read the backend directory around the gateways, and boto3 clients per
node.

Each node is started as

    reo serve --data-dir DIR/nI --listen 127.0.0.1:PORT --backend DIR/backend
              --cluster etcd://127.0.0.1:P --node-id nI --advertise 127.0.0.1:PORT
              --cluster-secret-file DIR/cluster-secret --lease-ttl-ms ... [--replicas ...] ...

and gets the `readwrite` user through its own admin API (Server.start): users are per node, so
every node is given the same ones. Everything lives under one temporary directory (`Cluster.dir`:
etcd's data and log, each node's data directory with its server.log, the backend), which the
tests keep when they fail, for the post-mortem.

    c = Cluster(BIN, nodes=3, lease_ttl_ms=2000)
    c.start()                      # etcd, the nodes, then waits until all are settled members
    s3 = c.client("n1")
    c.kill("n2"); c.wait_member_gone("n2")
"""

import os
import shutil
import signal
import subprocess
import tempfile
import threading
import time
import urllib.error
import urllib.request

from botocore.exceptions import (ClientError, ConnectionClosedError, ConnectTimeoutError, EndpointConnectionError,
                                 ReadTimeoutError)

import reoapi
from history import FAIL, UNKNOWN
from server import Server, free_port

ETCD = os.environ.get("REO_ETCD", "/usr/bin/etcd")
# Long enough for any peer traffic a node may wait for (a replica target timing out, a permission
# being revoked), short enough that a request to a SIGSTOPped node gives up within a test.
CONNECT_TIMEOUT, READ_TIMEOUT = 5, 30


def now():
    return time.monotonic()


def wait_until(pred, what, timeout, interval=0.05):
    """Polls `pred` until it returns something truthy other than a `(False, why)` pair (returned);
    fails naming `what` and the last value seen when `timeout` seconds pass first."""
    deadline = now() + timeout
    while True:
        last = pred()
        if last and not (isinstance(last, tuple) and last[0] is False):
            return last
        if now() >= deadline:
            raise AssertionError(f"timed out after {timeout:.1f} s waiting for {what}; last: {last!r}")
        time.sleep(interval)


class Etcd:
    """A single-member etcd on free loopback ports with its own data directory (kept across
    `kill` and `start`, so a restart keeps the cluster's keys and leases)."""

    def __init__(self, base_dir):
        self.dir = os.path.join(base_dir, "etcd")
        self.client_port, self.peer_port = free_port(), free_port()
        self.proc = None
        self.log = None

    @property
    def client_url(self):
        return f"http://127.0.0.1:{self.client_port}"

    @property
    def reo_url(self):
        """How `reo serve --cluster` names it."""
        return f"etcd://127.0.0.1:{self.client_port}"

    def start(self, timeout=30):
        peer = f"http://127.0.0.1:{self.peer_port}"
        self.log = open(self.dir + ".log", "ab")
        self.proc = subprocess.Popen(
            [ETCD, "--name", "t", "--data-dir", self.dir,
             "--listen-client-urls", self.client_url, "--advertise-client-urls", self.client_url,
             "--listen-peer-urls", peer, "--initial-advertise-peer-urls", peer, "--initial-cluster", f"t={peer}"],
            stdout=self.log, stderr=self.log)
        wait_until(self.healthy, f"etcd to answer /health on {self.client_url} (log: {self.dir}.log)", timeout)

    def healthy(self):
        if self.proc.poll() is not None:
            raise RuntimeError(f"etcd exited with {self.proc.returncode}; see {self.dir}.log")
        try:
            with urllib.request.urlopen(self.client_url + "/health", timeout=1) as r:
                return r.status == 200 and b'"true"' in r.read()
        except OSError:
            return False

    def kill(self):
        """SIGKILL: the nodes' connections drop at once, as when etcd's host dies."""
        self._signal(signal.SIGKILL)

    def stop(self):
        self._signal(signal.SIGTERM)

    def _signal(self, sig):
        if self.proc and self.proc.poll() is None:
            self.proc.send_signal(sig)
            self.proc.wait(timeout=60)
        if self.log:
            self.log.close()


class Node(Server):
    """One `reo serve` of the cluster; `id` is its --node-id."""

    def __init__(self, binary, node_id, data_dir, **kw):
        os.makedirs(data_dir, exist_ok=True)
        super().__init__(binary, data_dir=data_dir, **kw)
        self.id = node_id
        self.stopped = False  # SIGSTOPped

    @property
    def alive(self):
        return self.proc is not None and self.proc.poll() is None

    def sigstop(self):
        self.proc.send_signal(signal.SIGSTOP)
        self.stopped = True
        return now()

    def sigcont(self):
        self.proc.send_signal(signal.SIGCONT)
        self.stopped = False
        return now()

    def kill(self):
        if self.stopped and self.alive:
            self.proc.send_signal(signal.SIGCONT)  # a stopped process dies of SIGKILL too; tidy
            self.stopped = False
        return super().kill()

    def tail_log(self, lines=30):
        try:
            with open(os.path.join(self.data_dir, "server.log"), "rb") as f:
                return b"\n".join(f.read().splitlines()[-lines:]).decode(errors="replace")
        except OSError as e:
            return str(e)


class Cluster:
    """etcd plus `nodes` gateways n1…nN over one backend directory. Keyword arguments are the
    cluster flags (None: the server's default); `extra` goes to every node as it is."""

    def __init__(self, binary, nodes=3, replicas=None, min_replicas=None, lease_ttl_ms=2000, permission_ms=None,
                 flush_delay_ms=None, extra=(), device_mib=32, backend=None, env=None):
        """`backend`: a `--backend` URL shared by the nodes (e.g. an S3 store, whose credentials
        come through `env`) instead of the local directory; the backend_* readers below read the
        directory only, so a test over another store reads that store itself."""
        self.binary = binary
        self.dir = tempfile.mkdtemp(prefix="reo-cluster-")
        self.backend = os.path.join(self.dir, "backend")
        os.makedirs(self.backend)
        backend_flag = backend or self.backend
        self.lease_ttl = (lease_ttl_ms or 5000) / 1000
        self.secret_file = os.path.join(self.dir, "cluster-secret")
        with open(self.secret_file, "w") as f:
            f.write(os.urandom(24).hex() + "\n")  # 48 characters: the minimum is 32
        self.etcd = Etcd(self.dir)
        flags = []
        for flag, v in (("--replicas", replicas), ("--min-replicas", min_replicas), ("--lease-ttl-ms", lease_ttl_ms),
                        ("--permission-ms", permission_ms), ("--flush-delay-ms", flush_delay_ms)):
            if v is not None:
                flags += [flag, str(v)]
        self.nodes = {}
        for i in range(1, nodes + 1):
            nid = f"n{i}"
            n = Node(binary, nid, os.path.join(self.dir, nid), device_mib=device_mib, env=env)
            n.extra = ["--backend", backend_flag, "--cluster", self.etcd.reo_url, "--node-id", nid,
                       "--advertise", f"127.0.0.1:{n.port}", "--cluster-secret-file", self.secret_file,
                       *flags, *extra]
            self.nodes[nid] = n

    # ---- processes ----

    def start(self, timeout=60):
        """etcd, then every node (in parallel: each formats its devices), then waits until every
        node is a settled member."""
        self.etcd.start()
        self._parallel([lambda n=n: n.start(timeout) for n in self.nodes.values()])
        self.wait_settled(timeout=timeout)

    @staticmethod
    def _parallel(fns):
        errors = []

        def run(fn):
            try:
                fn()
            except Exception as e:  # noqa: BLE001 - re-raised below, with the others
                errors.append(e)
        ts = [threading.Thread(target=run, args=(fn,)) for fn in fns]
        for t in ts:
            t.start()
        for t in ts:
            t.join()
        if errors:
            raise errors[0]

    def node(self, nid):
        return self.nodes[nid]

    def ids(self):
        return list(self.nodes)

    def live(self):
        """The nodes running and not stopped."""
        return [n for n in self.nodes.values() if n.alive and not n.stopped]

    def kill(self, nid):
        """SIGKILL; returns the time just after the signal."""
        return self.nodes[nid].kill()

    def sigstop(self, nid):
        return self.nodes[nid].sigstop()

    def sigcont(self, nid):
        return self.nodes[nid].sigcont()

    def stop(self, nid, timeout=60):
        """SIGTERM (a graceful shutdown, as an operator's restart does) and waits for the exit;
        returns the exit status."""
        n = self.nodes[nid]
        if n.stopped and n.alive:
            n.sigcont()
        n.proc.send_signal(signal.SIGTERM)
        n.proc.wait(timeout=timeout)
        n.log.close()
        return n.proc.returncode

    def restart(self, nid, timeout=60):
        """Starts a killed or stopped (SIGTERM) node again over its data directory and port."""
        self.nodes[nid].start(timeout)

    def close(self):
        """Ends every process (kept: the directory; `cleanup` removes it)."""
        for n in self.nodes.values():
            try:
                n.kill()
            except Exception:  # noqa: BLE001 - best effort: the others must still go
                pass
        self.etcd.kill()

    def cleanup(self):
        self.close()
        shutil.rmtree(self.dir, ignore_errors=True)

    def panics(self):
        """Every panic a node logged ("nI: thread ... panicked at FILE:LINE: message"): a node
        may go on after a panicking task, but the request or peer call it served did not."""
        out = []
        for n in self.nodes.values():
            try:
                with open(os.path.join(n.data_dir, "server.log"), "rb") as f:
                    text = f.read().decode(errors="replace").splitlines()
            except OSError:
                continue
            for i, line in enumerate(text):
                if " panicked at " in line:
                    out.append(f"{n.id}: {line.strip()} {text[i + 1].strip() if i + 1 < len(text) else ''}")
        return out

    def logs(self, lines=20):
        """The end of every node's log, for a failure message."""
        return "\n".join(f"--- {n.id} ({n.data_dir}/server.log):\n{n.tail_log(lines)}" for n in self.nodes.values())

    # ---- cluster status ----

    # Where a node's cluster status is: with the other admin calls (admin-signed).
    STATUS_PATH = "/_reo/admin/cluster"

    def status(self, nid, timeout=5):
        """The cluster status JSON of a node (parsed), or None if it does not answer."""
        try:
            st, body = reoapi.call(self.nodes[nid], "GET", self.STATUS_PATH, timeout=timeout)
        except (OSError, urllib.error.URLError):
            return None
        return body if st == 200 and isinstance(body, dict) else None

    def admin_status(self, nid):
        """`reo admin cluster status --json` (the CLI, as an operator runs it)."""
        import json
        return json.loads(reoapi.admin(self.binary, self.nodes[nid], "cluster", "status", "--json").stdout)

    @staticmethod
    def member_ids(st):
        return sorted(m["id"] for m in st.get("members", []))

    def settled(self, nids=None, members=None):
        """(False, why) or True: every node of `nids` (default: the live ones) answers, is not
        fenced, is settled, sees exactly `members` (default: `nids`) and has no failover pending."""
        nids = list(nids or [n.id for n in self.live()])
        want = sorted(members or nids)
        for nid in nids:
            st = self.status(nid)
            if st is None:
                return False, f"{nid} does not answer"
            if st.get("fenced") or not st.get("settled") or st.get("pending_failover"):
                return False, f"{nid}: fenced {st.get('fenced')}, settled {st.get('settled')}, " \
                              f"pending_failover {st.get('pending_failover')}"
            if self.member_ids(st) != want:
                return False, f"{nid} sees members {self.member_ids(st)}, not {want}"
        return True

    def wait_settled(self, nids=None, members=None, timeout=30):
        wait_until(lambda: self.settled(nids, members), f"the cluster to settle ({self.dir})", timeout)

    def wait_member_gone(self, gone, timeout=None):
        """Until every live node sees `gone` out of the members with nothing pending for it: its
        lease expired and the failover of its objects is done. Default bound: the lease TTL + 5 s."""
        rest = [n.id for n in self.live() if n.id != gone]
        self.wait_settled(rest, rest, timeout=timeout or self.lease_ttl + 5)

    def dirty_keys(self, nid, bucket, prefixes):
        """The keys of `bucket` under `prefixes` that a node holds unflushed as their home (its
        /_reo/query; a peer's replicas live in a separate area and are not listed), or None if
        it does not answer. Each prefix must cover at most 1,000 keys (the query's limit)."""
        out = set()
        for p in prefixes:
            try:
                st, body = reoapi.call(self.nodes[nid], "GET", "/_reo/query", {"bucket": bucket, "prefix": p}, timeout=30)
            except OSError:
                return None
            if st != 200:
                return None
            out |= {o["key"] for o in body["objects"] if o.get("dirty")}
        return out

    def homes(self, bucket, prefixes, nids=None):
        """{key: node} for the unflushed keys under `prefixes` (with a long flush delay: every key
        written), from each node's query; fails if a key is dirty at two nodes (two homes)."""
        out = {}
        for nid in nids or self.ids():
            for k in self.dirty_keys(nid, bucket, prefixes) or ():
                if k in out:
                    raise AssertionError(f"{bucket}/{k} is unflushed at two homes: {out[k]} and {nid}")
                out[k] = nid
        return out

    def dirty(self, nid):
        return self.status(nid)["dirty_objects"]

    def flush(self, *nids, timeout="120s"):
        """`reo admin flush` on the nodes (at once: each writes its own objects): returns once
        nothing is dirty on any of them."""
        self._parallel([lambda n=n: reoapi.admin(self.binary, self.nodes[n], "flush", "--timeout", timeout)
                        for n in nids])

    # ---- the backend, read around the gateways ----

    def backend_keys(self, bucket):
        """The keys of a bucket in the backend directory (a listing only: cheap to poll)."""
        try:
            return {n[2:] for n in os.listdir(os.path.join(self.backend, bucket)) if n.startswith("o.")}
        except FileNotFoundError:
            return set()

    def backend_objects(self, bucket):
        """{key: bytes} of a bucket in the backend directory (keys the tests use need no
        encoding: `o.<key>` files; temporary files are `t.*`, whole files renamed into place)."""
        d = os.path.join(self.backend, bucket)
        out = {}
        try:
            names = os.listdir(d)
        except FileNotFoundError:
            return out
        for name in names:
            if name.startswith("o."):
                try:
                    with open(os.path.join(d, name), "rb") as f:
                        out[name[2:]] = f.read()
                except FileNotFoundError:
                    pass  # deleted between the listing and the open
        return out

    # ---- S3 clients ----

    def client(self, nid, retries=0, read_timeout=READ_TIMEOUT):
        """A boto3 client of one node. retries=0: every 503 and connection error reaches the test
        (the history tests must see each attempt's outcome); otherwise botocore's standard mode
        retries 503 SlowDown and connection errors that many times, with backoff, for tests where
        the interface allows a write to be refused briefly."""
        return self.nodes[nid].client(retries={"max_attempts": 1 + retries, "mode": "standard"},
                                      connect_timeout=CONNECT_TIMEOUT, read_timeout=read_timeout)

    def clients(self, **kw):
        return {nid: self.client(nid, **kw) for nid in self.nodes}


def error_code(e):
    """(HTTP status, S3 code, message) of a ClientError."""
    r = e.response
    return r.get("ResponseMetadata", {}).get("HTTPStatusCode"), r.get("Error", {}).get("Code"), \
        r.get("Error", {}).get("Message", "")


def write_outcome(e):
    """What a failed write tells: FAIL (definitely not applied: refused with a 4xx before anything
    was done) or UNKNOWN (it may or may not have been applied), with a short note for the report.

    A connection error is UNKNOWN too, even "connection refused": when a server dies after
    reading a request but before answering, botocore (through urllib3/http.client) sends it again
    on a new connection even with retries off, and reports only that second attempt's refusal —
    while the first one may have been applied (a node forwards a write to its home node at once).
    A 5xx is UNKNOWN as S3 has it (a node whose forward to the home node timed out cannot know
    either)."""
    if isinstance(e, ClientError):
        status, code, _ = error_code(e)
        return (FAIL if status and 400 <= status < 500 else UNKNOWN), f"{status} {code}"
    if isinstance(e, (EndpointConnectionError, ConnectTimeoutError)):
        return UNKNOWN, "connection refused"
    if isinstance(e, (ReadTimeoutError, ConnectionClosedError)):
        return UNKNOWN, type(e).__name__
    return UNKNOWN, type(e).__name__


def retry(fn, what, timeout, ok_errors=(503,)):
    """Calls fn() until it returns (its value), retrying on the HTTP statuses in `ok_errors` and on
    connection errors, for at most `timeout` seconds."""
    deadline = now() + timeout
    while True:
        try:
            return fn()
        except ClientError as e:
            if error_code(e)[0] not in ok_errors or now() >= deadline:
                raise AssertionError(f"{what}: {error_code(e)}") from e
        except (EndpointConnectionError, ConnectionClosedError, ReadTimeoutError, ConnectTimeoutError) as e:
            if now() >= deadline:
                raise AssertionError(f"{what}: {e}") from e
        time.sleep(0.1)

