"""A register-model checker for per-key histories of PUT, GET and DELETE, with real invocation and
response times (one process's `time.monotonic()`): what the cluster tests use to decide whether a
GET through any node returned what read-your-writes and monotonic reads across nodes allow.

Every PUT writes a value no other PUT writes (the tests make each body unique), so a value read
names the one PUT that wrote it. A DELETE writes ABSENT (None), as does the start of the history
(nothing written yet). Each write has an outcome:

* `ok`: acknowledged; it took effect at some instant inside [start, end].
* `fail`: definitely not applied (refused before anything was done, e.g. a 4xx): its value must
  never be read. (Not a connection error: a client may have sent the request once before.)
* `unknown`: no answer or an error that does not say (a 503 from a node whose forward to the
  home node timed out, a connection reset by a dying node): it may take effect at any instant
  after its start, or never. Its end is +inf.

A GET that returned over [s, e] (outcome `ok`; a GET without an answer reads nothing and is not
recorded) with value v is legal when some write w of v (or the initial ABSENT, for None)
1. was invoked before the GET returned (w.start < e; nothing is read from the future), and
2. is not known to be overwritten before the GET started: there is no write w' known to have
   taken effect before s (acknowledged with w'.end < s, or whose value a GET that returned before s
   read) that began after w had certainly taken effect (w'.start > eff_end(w)).

eff_end(w) is w's end, or earlier, the end of the first GET that read w's value (a write that was
read had taken effect by then; this lets an `unknown` write be ordered too). The second part of
rule 2 is what catches a non-monotonic read: once any GET has returned a newer value, a GET that
starts afterwards may not return an older one, whichever node served either.

These are necessary conditions of linearizability checked per read (not a search for one total
order explaining every read at once), which with unique values is enough to catch a stale read,
a lost or resurrected write, a read of a value never written or of a failed write, and a read
going back in time. `allowed_final` gives the values a key may hold once everything has quiesced,
for comparing the backend after a full flush.
"""

import math
import threading
import time
from collections import defaultdict
from dataclasses import dataclass, field

INF = math.inf
ABSENT = None  # the value of a DELETE, and of a key before its first write

OK, FAIL, UNKNOWN = "ok", "fail", "unknown"


@dataclass
class Op:
    kind: str  # "put", "delete" or "get"
    key: str
    value: object  # put: the value written; get: the value read (None: 404); delete: None
    start: float
    end: float = INF  # INF while unanswered (an `unknown` write)
    outcome: str = OK
    node: str = ""  # which node served it (for the report only)
    note: str = ""  # e.g. the error of an `unknown` write
    ident: int = field(default=0, compare=False)

    def describe(self, t0=0.0):
        end = "∞" if self.end == INF else f"{self.end - t0:.4f}"
        v = "404/absent" if self.value is None else short(self.value)
        extra = f" ({self.note})" if self.note else ""
        return f"#{self.ident} {self.kind} {v} via {self.node or '?'} [{self.start - t0:.4f}, {end}] {self.outcome}{extra}"


def short(v):
    s = repr(v)
    return s if len(s) <= 40 else s[:37] + "..."


class History:
    """Thread-safe recorder: `begin` before sending a request, then exactly one of `ok`, `fail`,
    `unknown` (writes) or `ok`/`drop` (reads) when its answer (or failure) is known."""

    def __init__(self):
        self.lock = threading.Lock()
        self.ops = []

    def begin(self, kind, key, value=None, node="", start=None):
        op = Op(kind, key, value, time.monotonic() if start is None else start, INF, UNKNOWN, node)
        with self.lock:
            op.ident = len(self.ops)
            self.ops.append(op)
        return op

    @staticmethod
    def _end(end):
        return time.monotonic() if end is None else end

    def ok(self, op, value=None, end=None):
        """Acknowledged (a write) or answered (a read, `value` being what it returned)."""
        op.end = self._end(end)
        op.outcome = OK
        if op.kind == "get":
            op.value = value

    def fail(self, op, note=""):
        """A write definitely not applied (a read: use `drop`)."""
        assert op.kind != "get"
        op.outcome, op.note = FAIL, note

    def unknown(self, op, note=""):
        """A write that may or may not have been applied."""
        assert op.kind != "get"
        op.outcome, op.end, op.note = UNKNOWN, INF, note

    def drop(self, op):
        """A read that returned nothing: it constrains nothing."""
        assert op.kind == "get"
        with self.lock:
            op.outcome = "dropped"

    def add(self, kind, key, value, start, end, outcome=OK, node=""):
        """Records a finished operation (for synthetic histories)."""
        op = self.begin(kind, key, value, node, start)
        op.end, op.outcome = (INF if outcome == UNKNOWN else end), outcome
        return op

    def by_key(self):
        out = defaultdict(list)
        with self.lock:
            for op in self.ops:
                out[op.key].append(op)
        return out

    def check(self):
        """Every violation, as text (empty: the history is legal)."""
        problems = []
        for key, ops in sorted(self.by_key().items()):
            problems += check_key(key, ops)
        return problems

    def allowed_final(self, key):
        return allowed_final(self.by_key().get(key, []))

    def counts(self):
        c = defaultdict(int)
        with self.lock:
            for op in self.ops:
                c[(op.kind, op.outcome)] += 1
        return dict(c)


INITIAL = Op("init", "", ABSENT, -INF, -INF, OK, "", ident=-1)


def _writes(ops):
    return [INITIAL] + [o for o in ops if o.kind in ("put", "delete")]


def _effective_ends(writes, reads):
    """eff_end of each write (by ident): its end, or the end of the first read of its value."""
    eff = {w.ident: (w.end if w.outcome == OK else INF) for w in writes}
    by_value = {w.value: w for w in writes if w.kind == "put"}
    for r in reads:
        w = by_value.get(r.value)
        if w is not None and r.value is not None:
            eff[w.ident] = min(eff[w.ident], r.end)
    return eff


def _known_before(t, writes, eff):
    """The writes known to have taken effect before time t."""
    return [w for w in writes if w.outcome != FAIL and eff[w.ident] < t]


def check_key(key, ops):
    """The violations of one key's history (see the module docstring for the rules)."""
    writes = _writes(ops)
    reads = [o for o in ops if o.kind == "get" and o.outcome == OK]
    eff = _effective_ends(writes, reads)
    puts_by_value = {}
    for w in writes:
        if w.kind == "put":
            if w.value in puts_by_value:
                raise ValueError(f"key {key!r}: value {short(w.value)} written twice (values must be unique)")
            puts_by_value[w.value] = w
    t0 = min((o.start for o in ops), default=0.0)
    problems = []
    for r in reads:
        if r.value is None:
            candidates = [w for w in writes if w.kind in ("init", "delete")]
        else:
            w = puts_by_value.get(r.value)
            if w is None:
                problems.append(f"key {key!r}: {r.describe(t0)} read a value no PUT wrote")
                continue
            candidates = [w]
        live = [w for w in candidates if w.outcome != FAIL]
        if not live:
            problems.append(f"key {key!r}: {r.describe(t0)} read the value of a failed write: "
                            f"{candidates[0].describe(t0)}")
            continue
        live = [w for w in live if w.start < r.end]
        if not live:
            problems.append(f"key {key!r}: {r.describe(t0)} read a value written only after it returned: "
                            f"{candidates[0].describe(t0)}")
            continue
        known = _known_before(r.start, writes, eff)
        # A candidate is overwritten when some other known write began after it had taken
        # effect: compare with the latest-starting known write (the runner-up for itself).
        top = sorted(known, key=lambda k: k.start)[-2:]
        stale = None
        for w in live:
            others = [k for k in top if k is not w]
            newest = others[-1] if others else None
            if newest is None or newest.start <= eff[w.ident]:
                stale = None
                break
            stale = stale or (w, newest)
        if stale:
            w, k = stale
            how = "acknowledged" if k.outcome == OK and k.end < r.start else "read by an earlier GET"
            problems.append(f"key {key!r}: stale read {r.describe(t0)}: it returned {w.describe(t0)}, but "
                            f"{k.describe(t0)} started after that and was {how} before the GET started"
                            + _context(ops, r, t0))
    return problems


def _context(ops, r, t0, n=8):
    """The operations around a bad read, for the report."""
    near = sorted(ops, key=lambda o: o.start)
    i = next(j for j, o in enumerate(near) if o is r)
    lines = [o.describe(t0) for o in near[max(0, i - n):i + 2]]
    return "\n    history around it:\n      " + "\n      ".join(lines)


def allowed_final(ops):
    """The values (None: absent) a key may hold once every operation has finished: those of the
    writes not known to be overwritten by a write known to have taken effect."""
    writes = _writes(ops)
    reads = [o for o in ops if o.kind == "get" and o.outcome == OK]
    eff = _effective_ends(writes, reads)
    known = _known_before(INF, writes, eff)
    top = sorted(known, key=lambda k: k.start)[-2:]
    out = set()
    for w in writes:
        if w.outcome == FAIL:
            continue
        others = [k for k in top if k is not w]
        if not others or others[-1].start <= eff[w.ident]:
            out.add(w.value)
    return out
