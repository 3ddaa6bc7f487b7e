"""The register-model checker (history.py) on synthetic histories: it must pass legal ones —
concurrency lets a read return either side — and flag each kind of bad read, so that a cluster
test passing with it means something. Needs no server.

    cd tests/e2e && python3 -m unittest test_history -v
"""

import random
import unittest

from history import FAIL, OK, UNKNOWN, History


def hist(*ops):
    """ops: (kind, value, start, end[, outcome]) on one key "k"."""
    h = History()
    for o in ops:
        kind, value, start, end = o[:4]
        h.add(kind, "k", value, start, end, o[4] if len(o) > 4 else OK)
    return h


class LegalHistories(unittest.TestCase):
    def assertLegal(self, h):
        self.assertEqual(h.check(), [])

    def test_sequential(self):
        self.assertLegal(hist(("get", None, 0, 1), ("put", "a", 2, 3), ("get", "a", 4, 5), ("put", "b", 6, 7),
                              ("get", "b", 8, 9), ("delete", None, 10, 11), ("get", None, 12, 13),
                              ("put", "c", 14, 15), ("get", "c", 16, 17)))

    def test_a_read_concurrent_with_a_write_may_return_either_side(self):
        for seen in ("a", "b"):
            self.assertLegal(hist(("put", "a", 0, 1), ("put", "b", 2, 5), ("get", seen, 3, 4)))

    def test_a_read_concurrent_with_a_delete_may_miss(self):
        self.assertLegal(hist(("put", "a", 0, 1), ("delete", None, 2, 5), ("get", None, 3, 4), ("get", "a", 3, 6)))

    def test_overlapping_writes_either_may_win(self):
        # b and c overlap: either may take effect last, and reads after both may see either one
        # (each read on its own; the checker does not demand one order for all reads).
        for seen in ("b", "c"):
            self.assertLegal(hist(("put", "b", 0, 3), ("put", "c", 1, 2), ("get", seen, 4, 5)))

    def test_an_unknown_write_may_appear_late_or_never(self):
        self.assertLegal(hist(("put", "a", 0, 1), ("put", "x", 2, 0, UNKNOWN), ("get", "a", 3, 4),
                              ("get", "x", 10, 11), ("get", "x", 12, 13)))
        self.assertLegal(hist(("put", "a", 0, 1), ("put", "x", 2, 0, UNKNOWN), ("get", "a", 3, 4), ("get", "a", 50, 51)))

    def test_a_failed_write_is_invisible_and_harmless(self):
        self.assertLegal(hist(("put", "a", 0, 1), ("put", "x", 2, 3, FAIL), ("get", "a", 4, 5)))

    def test_keys_are_independent(self):
        h = History()
        h.add("put", "k1", "a", 0, 1)
        h.add("put", "k2", "b", 2, 3)
        h.add("get", "k1", "a", 4, 5)
        h.add("get", "k2", None, 0.5, 1.5)
        self.assertEqual(h.check(), [])

    def test_final_values(self):
        self.assertEqual(hist(("put", "a", 0, 1), ("put", "b", 2, 3)).allowed_final("k"), {"b"})
        self.assertEqual(hist(("put", "a", 0, 1), ("delete", None, 2, 3)).allowed_final("k"), {None})
        self.assertEqual(hist(("put", "a", 0, 3), ("put", "b", 1, 2)).allowed_final("k"), {"a", "b"})
        self.assertEqual(hist(("put", "a", 0, 1), ("put", "x", 2, 0, UNKNOWN)).allowed_final("k"), {"a", "x"})
        self.assertEqual(hist(("put", "a", 0, 1), ("put", "x", 2, 3, FAIL)).allowed_final("k"), {"a"})
        self.assertEqual(hist().allowed_final("k"), {None})
        # An unknown write a later read saw took effect before that read ended.
        self.assertEqual(hist(("put", "x", 0, 0, UNKNOWN), ("get", "x", 1, 2), ("put", "b", 3, 4)).allowed_final("k"),
                         {"b"})

    def test_random_linearizable_histories_pass(self):
        # A real register: each operation takes effect at its own instant (1, 2, 3, ...), inside
        # an interval of random width around it, so intervals overlap in every way; some writes
        # lose their answer (unknown) and some are refused (never take effect). No false alarm.
        for seed in range(200):
            rng = random.Random(seed)
            h = History()
            value = None
            for i in range(1, 120):
                t = float(i)
                start, end = t - rng.uniform(0, 6), t + rng.uniform(0, 6)
                kind = rng.choice(("put", "put", "get", "get", "delete"))
                if kind == "get":
                    h.add("get", "k", value, start, end)
                    continue
                fate = rng.choices((OK, UNKNOWN, FAIL), (8, 1, 1))[0]
                v = f"v{i}" if kind == "put" else None
                h.add(kind, "k", v, start, end, fate)
                if fate != FAIL:
                    value = v
            self.assertEqual(h.check(), [], f"seed {seed}")
            self.assertIn(value, h.allowed_final("k"), f"seed {seed}")
            # The same history with one read, after everything, of a value certainly overwritten.
            ops = h.by_key()["k"]
            old = next((p for p in ops if p.kind == "put" and p.outcome == OK and any(
                w.kind in ("put", "delete") and w.outcome == OK and w.start > p.end for w in ops)), None)
            if old is not None:
                h.add("get", "k", old.value, 1000, 1001)
                self.assertEqual(len(h.check()), 1, f"seed {seed}: a stale read of {old.value} not flagged")

    def test_recorder(self):
        h = History()
        w = h.begin("put", "k", "v", node="n1")
        h.ok(w)
        r = h.begin("get", "k", node="n2")
        h.ok(r, "v")
        lost = h.begin("get", "k", node="n3")
        h.drop(lost)
        u = h.begin("put", "k", "u", node="n3")
        h.unknown(u, "timeout")
        self.assertEqual(h.check(), [])
        self.assertEqual(h.counts()[("get", OK)], 1)


class BadHistories(unittest.TestCase):
    def assertFlags(self, h, *words):
        problems = h.check()
        self.assertEqual(len(problems), 1, problems)
        for w in words:
            self.assertIn(w, problems[0])

    def test_stale_read(self):
        self.assertFlags(hist(("put", "a", 0, 1), ("put", "b", 2, 3), ("get", "a", 4, 5)), "stale read")

    def test_stale_read_across_a_delete(self):
        self.assertFlags(hist(("put", "a", 0, 1), ("delete", None, 2, 3), ("get", "a", 4, 5)), "stale read")

    def test_lost_write_reads_absent(self):
        self.assertFlags(hist(("put", "a", 0, 1), ("get", None, 2, 3)), "stale read")

    def test_never_written_value(self):
        self.assertFlags(hist(("put", "a", 0, 1), ("get", "zzz", 2, 3)), "no PUT wrote")

    def test_failed_write_read(self):
        self.assertFlags(hist(("put", "a", 0, 1), ("put", "x", 2, 3, FAIL), ("get", "x", 4, 5)), "failed write")

    def test_read_from_the_future(self):
        self.assertFlags(hist(("get", "a", 0, 1), ("put", "a", 2, 3)), "only after")

    def test_reads_going_back_in_time(self):
        # b is still in flight, but once a GET has returned b, a later GET may not return a.
        self.assertFlags(hist(("put", "a", 0, 1), ("put", "b", 2, 10), ("get", "b", 3, 4), ("get", "a", 5, 6)),
                         "stale read", "read by an earlier GET")

    def test_reads_going_back_in_time_with_an_unknown_write(self):
        self.assertFlags(hist(("put", "a", 0, 1), ("put", "x", 2, 0, UNKNOWN), ("get", "x", 3, 4), ("get", "a", 5, 6)),
                         "stale read")

    def test_each_bad_read_is_reported(self):
        h = hist(("put", "a", 0, 1), ("put", "b", 2, 3), ("get", "a", 4, 5), ("get", "b", 6, 7), ("get", "a", 8, 9))
        self.assertEqual(len(h.check()), 2)

    def test_values_must_be_unique(self):
        with self.assertRaises(ValueError):
            hist(("put", "a", 0, 1), ("put", "a", 2, 3)).check()


if __name__ == "__main__":
    unittest.main()
