"""The model behind test_crash_gateway: unique values, per-key operation histories, and what a key
may read at a given time, as linearizability over real time allows it.

* Every body a client writes is unique (a serial number and a per-run nonce up front) and
  registered by its MD5, so any body read back names the operation that wrote it. A key's state is
  a *version*: a value id and how its ETag is formed (`mpu`: a multipart upload's
  `md5(part md5s)-N`; otherwise the MD5 of the body, which a copy of a multipart value also gets),
  or ABSENT (deleted, never written).
* Every operation has a start time and, when answered, an end time (`time.monotonic()`, one
  process). Its outcome: `ok` (acknowledged: applied), `error` (a definite S3 error response: not
  applied), `refused` (never reached a server: not applied) or `inflight` (no answer because the
  server was killed or the client gave up: it may or may not have been applied, but no later than
  the server's death, which becomes its end time).
* A key's history starts with a baseline: ABSENT at first, then what the last verify phase read
  there (a pseudo-operation, acknowledged, at the read's times: what was read once stays).
* The versions a key may show while a read runs over [a, b] are those of the operations (ok or in
  flight) that started before b and are not *definitely overwritten* before a: no acknowledged
  operation on the key started after they ended and ended before a. After a kill (a = b = +inf)
  that is the set the brief calls allowed: acknowledged operations no acknowledged operation
  strictly follows, every in-flight operation not so followed, the baseline unless something
  acknowledged follows it. This is a necessary condition of linearizability (a check of each read
  on its own, not a search for one order explaining all reads), which is what a per-key register
  with unique values needs to catch a lost, resurrected or invented version.
"""

import hashlib
import itertools
import math
import os
import struct
import threading
from collections import Counter
from dataclasses import dataclass

ABSENT = (None, False)  # the version of a key with no object

INF = math.inf


def md5(data):
    return hashlib.md5(data).hexdigest()


@dataclass
class Value:
    vid: int
    md5: str
    size: int
    mpu_etag: str = None  # set for a body born of a multipart upload


class Values:
    """Every body written in a run, by content (thread-safe)."""

    def __init__(self):
        self.lock = threading.Lock()
        self.serial = itertools.count(1)
        self.nonce = os.urandom(8)  # two runs never share a body
        self.by_md5 = {}
        self.by_id = {}

    def register(self, data, mpu_etag=None):
        """The value id of `data` (a new one unless this content was registered before: the empty
        body is one value however many PUTs write it)."""
        h = md5(data)
        with self.lock:
            v = self.by_md5.get(h)
            if v is None:
                v = Value(len(self.by_id) + 1, h, len(data))
                self.by_md5[h] = v
                self.by_id[v.vid] = v
            if mpu_etag:
                v.mpu_etag = mpu_etag
            return v.vid

    def _prefix(self):
        with self.lock:
            n = next(self.serial)
        return struct.pack(">Q", n) + self.nonce

    def body(self, rng, size):
        """A new unique body of `size` bytes (bodies under 16 bytes are random, unique only by
        chance; size 0 is the one empty value). Returns (value id, bytes)."""
        data = (self._prefix() + rng.randbytes(size - 16)) if size >= 16 else rng.randbytes(size)
        return self.register(data), data

    def multipart(self, rng, sizes):
        """Parts of a new unique multipart body. Returns (value id, parts, the S3 multipart ETag)."""
        parts = [self._prefix() + rng.randbytes(sizes[0] - 16)] + [rng.randbytes(s) for s in sizes[1:]]
        etag = md5(b"".join(hashlib.md5(p).digest() for p in parts)) + f"-{len(parts)}"
        return self.register(b"".join(parts), etag), parts, etag

    def version_of(self, body, etag):
        """The version a GET answered (body, ETag without quotes): (version, problem or None)."""
        h = md5(body)
        v = self.by_md5.get(h)
        if v is None:
            return None, f"a body no client wrote ({len(body)} bytes, md5 {h}, starts {body[:16].hex()})"
        if etag == h:
            return (v.vid, False), None
        if v.mpu_etag and etag == v.mpu_etag:
            return (v.vid, True), None
        return (v.vid, False), (f"ETag {etag!r} matches neither the body's MD5 {h} "
                                f"nor a multipart ETag of it ({v.mpu_etag})")

    def describe(self, version):
        if version == ABSENT:
            return "ABSENT"
        vid, mpu = version
        v = self.by_id[vid]
        return f"v{vid}({v.size} B{', multipart ETag' if mpu else ''})"


@dataclass(eq=False)
class Op:
    id: int
    kind: str  # put | mpu | copy | delete | dels (one key of a DeleteObjects) | read (a baseline)
    key: str
    start: float
    cycle: int
    versions: frozenset = frozenset()  # what it writes (an in-flight copy: any source version)
    end: float = None
    outcome: str = "pending"  # ok | error | refused | inflight
    detail: str = ""  # why it failed, what was odd about it
    src: str = None  # a copy's source key

    @property
    def counts(self):
        """Whether the operation may have been applied (ok or in flight)."""
        return self.outcome in ("ok", "inflight")


class Model:
    """Per-key histories (thread-safe appends) and the checks of reads against them."""

    def __init__(self, keys, values):
        self.values = values
        self.lock = threading.Lock()
        self.ids = itertools.count(1)
        base = frozenset([ABSENT])
        # What decides the allowed versions: the baseline and every operation since.
        self.hist = {k: [Op(0, "read", k, -INF, -1, base, -INF, "ok", "initial: absent")] for k in keys}
        # Everything ever done on each key, for the reports.
        self.log = {k: list(h) for k, h in self.hist.items()}
        self.cycle_ops = []
        self.violations = []
        self.stats = Counter()  # (kind, outcome) → count
        self.reasons = Counter()  # (outcome, detail) → count, of the operations not acknowledged
        self.gets_checked = Counter()  # phase → count
        self.context = ""  # the cycle's settings, for the reports

    # ---- recording ----

    def begin(self, kind, key, start, cycle, versions=frozenset(), src=None):
        with self.lock:
            op = Op(next(self.ids), kind, key, start, cycle, frozenset(versions), src=src)
            self.hist[key].append(op)
            self.log[key].append(op)
            self.cycle_ops.append(op)
        return op

    @staticmethod
    def finish(op, outcome, end, versions=None, detail=""):
        op.outcome, op.end = outcome, end
        if versions is not None:
            op.versions = frozenset(versions)
        if detail:
            op.detail = (op.detail + " " + detail).strip()

    def close_cycle(self, t_kill, t_dead):
        """Settles the cycle's operations after the kill, once every client thread is done, and
        returns them. One started after the SIGKILL was sent never reached a live server (boto3
        takes milliseconds to send a request; the process is gone microseconds after the signal);
        one still unanswered may have been applied until the server was seen dead. In-flight
        copies get every version their source may have held meanwhile."""
        for op in self.cycle_ops:
            if op.outcome in ("pending", "inflight") and op.start >= t_kill:
                op.outcome, op.end = "refused", op.start
            elif op.outcome in ("pending", "inflight"):
                op.outcome, op.end = "inflight", t_dead
        copies = [op for op in self.cycle_ops if op.kind == "copy" and op.outcome == "inflight"]
        for _ in range(len(copies) + 1):  # a copy of a copy in flight: iterate to the fixed point
            changed = False
            for op in copies:
                vs = frozenset((vid, False) for (vid, _) in self.candidates(op.src, op.start, op.end) if vid)
                if vs != op.versions:
                    op.versions, changed = vs, True
            if not changed:
                break
        for op in self.cycle_ops:
            self.stats[(op.kind, op.outcome)] += 1
            if op.outcome != "ok":
                self.reasons[(op.outcome, op.detail)] += 1
        ops, self.cycle_ops = self.cycle_ops, []
        return ops

    def observe(self, key, version, start, end, cycle):
        """A verify read: what it read becomes the key's baseline."""
        op = Op(next(self.ids), "read", key, start, cycle, frozenset([version]), end, "ok", "verify read")
        self.hist[key] = [op]
        self.log[key].append(op)

    # ---- checks ----

    def candidates(self, key, a, b):
        """{version: [ops writing it]} a read of `key` over [a, b] may return (see the module doc)."""
        hist = [o for o in self.hist[key] if o.counts]
        acked = [o for o in hist if o.outcome == "ok"]
        out = {}
        for o in hist:
            if o.start >= b:
                continue
            if any(o2.start > o.end and o2.end < a for o2 in acked):
                continue
            for v in o.versions:
                out.setdefault(v, []).append(o)
        return out

    def allowed(self, key):
        return self.candidates(key, INF, INF)

    def check_read(self, key, got, problem, a, b, phase, cycle, t_ref, by_vid=False, note=None,
                   ref="the kill of this cycle"):
        """Checks a read of `key` over [a, b] that returned version `got` (None: a body no client
        wrote) with `problem` (the body/ETag mismatch, if any); `by_vid`: any ETag form will do
        (a copy's source, the backend's files). Records and prints a violation; returns whether
        the read was fine."""
        self.gets_checked[phase] += 1
        allowed = self.candidates(key, a, b)
        ok = got is not None and problem is None and (
            got in allowed if not by_vid else got[0] in {v[0] for v in allowed})
        if not ok:
            self._violation(self.report(key, got, problem or note, allowed, a, b, phase, cycle, t_ref, ref))
        return ok

    def check_copy(self, op, cycle, t_ref):
        """An acknowledged copy must have copied a version its source may have held meanwhile."""
        return self.check_read(op.src, next(iter(op.versions)), None, op.start, op.end,
                               "copy source", cycle, t_ref, by_vid=True,
                               note=f"copied to {op.key} by op #{op.id}")

    def problem(self, text):
        """A violation outside the histories (an answer that contradicts the request)."""
        self._violation("VIOLATION: " + text)

    def _violation(self, text):
        with self.lock:
            self.violations.append(text)
        print(text, flush=True)

    def report(self, key, got, problem, allowed, a, b, phase, cycle, t_ref, ref):
        """A violation's text: what was read, which operation wrote it, what was allowed and
        the key's history, times relative to `t_ref` (described by `ref`)."""
        rel = lambda t: "-inf" if t == -INF else ("+inf" if t == INF else f"{t - t_ref:+.3f}")  # noqa: E731
        where = f"cycle {cycle}" + (f", {self.context}" if self.context else "")
        lines = [f"VIOLATION ({phase}, {where}) key {key}: read "
                 + (self.values.describe(got) if got is not None else "?")
                 + (f" at [{rel(a)}, {rel(b)}] s" if a != INF else "")
                 + f" (times in s relative to {ref})"]
        if problem:
            lines.append(f"  problem: {problem}")
        w = None
        if got is not None:
            writers = [o for o in self.log[key] if o.kind != "read" and any(v[0] == got[0] for v in o.versions)]
            if writers:
                w = writers[-1]
                ago = sum(1 for o in self.log[key][self.log[key].index(w) + 1:] if o.kind != "read")
                lines.append(f"  written by op #{w.id} ({w.kind}, {w.outcome}, cycle {w.cycle}), "
                             f"{ago} ops on the key ago")
            elif got == ABSENT:
                lines.append("  (absent: no delete of this key explains it)")
            else:
                lines.append("  written by no operation on this key")
        lines.append("  allowed: " + (", ".join(f"{self.values.describe(v)} by " + ",".join(f"#{o.id}" for o in ops)
                                                for v, ops in allowed.items()) or "nothing"))
        # The baseline (what the last verify read, or the first operation not yet superseded by a
        # verify read) and the latest operations since.
        base = self.log[key].index(self.hist[key][0])
        recent = self.log[key][base:]
        shown = recent if len(recent) <= 16 else recent[:1] + recent[-15:]
        if w is not None and w not in shown:  # the writer of what was read, wherever it is
            shown = sorted(shown + [w], key=lambda o: o.id)
        left_out = ", some left out" if len(shown) < len(recent) else ""
        lines.append(f"  history since the baseline ({len(recent)} ops{left_out}):")
        for o in shown:
            vs = ", ".join(sorted(self.values.describe(v) for v in o.versions)) or "-"
            end = rel(o.end) if o.end is not None else "?"
            lines.append(f"    #{o.id:<6} c{o.cycle:<3} {o.kind:<6} {o.outcome:<8} [{rel(o.start)}, {end}] {vs}"
                         + (f"  (from {o.src})" if o.src else "") + (f"  ({o.detail})" if o.detail else ""))
        return "\n".join(lines)
