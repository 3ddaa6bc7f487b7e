"""Hints and the query API end to end: a prefetch makes the next GET a hit without a backend read,
a pin survives cache pressure, an evict removes, a lease expires (its pin ends), hints survive a
restart; query answers; anonymous and badly signed API calls are denied."""

import os
import time
import unittest

from reoapi import call, hint, metric, query, wait_for
from server import Server

BIN = os.environ.get("REO_BIN", "target/debug/reo")
srv = None


def setUpModule():
    global srv
    # "cold" objects go to the backend only (not cached); "hot" ones are cached clean.
    srv = Server(BIN, device_mib=32, extra=["--write-policy", "cold=write-around", "--write-policy", "hot=write-through"])
    srv.start()
    s3 = srv.client()
    s3.create_bucket(Bucket="cold")
    s3.create_bucket(Bucket="hot")


def tearDownModule():
    assert srv.stop() == 0
    srv.cleanup()


def submit(h):
    status, body = call(srv, "POST", "/_reo/hints", body=h)
    assert status == 200, body
    return body["request_id"]


class HintTest(unittest.TestCase):
    def setUp(self):
        self.s3 = srv.client()

    def test_prefetch_makes_get_a_hit(self):
        data = os.urandom(300 * 1024)
        self.s3.put_object(Bucket="cold", Key="pre", Body=data)
        self.assertFalse(query(srv, "cold", "pre")["cached"])
        now = time.time()
        submit(hint("cold", "pre", "prefetch", now - 1, now + 600, priority=5))
        wait_for(lambda: query(srv, "cold", "pre")["cached_bytes"] == len(data), "the prefetch")
        reads = metric(srv, "reo_gateway_backend_reads_total")
        self.assertEqual(self.s3.get_object(Bucket="cold", Key="pre")["Body"].read(), data)
        self.assertEqual(metric(srv, "reo_gateway_backend_reads_total"), reads, "the GET went to the backend")
        # Counted by the hint thread after the bytes are on flash: waited for, not raced.
        wait_for(lambda: metric(srv, "reo_hints_prefetched_bytes_total") > 0, "the prefetch's count")
        self.assertGreater(metric(srv, 'reo_device_writes_total{device="0"}'), 0)
        self.assertGreater(metric(srv, 'reo_gateway_request_duration_seconds_count{op="get"}'), 0)

    def test_open_is_a_prefetch_and_close_an_evict(self):
        self.s3.put_object(Bucket="cold", Key="file", Body=b"x" * 5000)
        now = time.time()
        submit(hint("cold", "file", "open", now - 1, now + 600))
        wait_for(lambda: query(srv, "cold", "file")["cached"], "open")
        submit(hint("cold", "file", "close", now - 1, now + 600))
        wait_for(lambda: not query(srv, "cold", "file")["cached"], "close")

    def test_pin_survives_cache_pressure(self):
        data = os.urandom(200 * 1024)
        self.s3.put_object(Bucket="cold", Key="pinned", Body=data)
        now = time.time()
        submit(hint("cold", "pinned", "pin", now - 1, now + 600))
        wait_for(lambda: query(srv, "cold", "pinned")["pinned"], "the pin")
        evictions = metric(srv, 'reo_cache_evictions_total{cause="policy"}')
        blob = os.urandom(1 << 20)
        for i in range(60):  # about twice the cache
            self.s3.put_object(Bucket="hot", Key=f"pressure/{i}", Body=blob)
        self.assertGreater(metric(srv, 'reo_cache_evictions_total{cause="policy"}'), evictions, "no cache pressure")
        q = query(srv, "cold", "pinned")
        self.assertEqual((q["cached_bytes"], q["pinned"]), (len(data), True))
        self.assertEqual(q["leases"][0]["intent"], "pin")

    def test_evict_removes(self):
        self.s3.put_object(Bucket="hot", Key="ev", Body=b"e" * 10000)
        self.assertTrue(query(srv, "hot", "ev")["cached"])
        now = time.time()
        submit(hint("hot", "ev", "evict", now - 1, now + 600))
        wait_for(lambda: not query(srv, "hot", "ev")["cached"], "the eviction")
        self.assertEqual(self.s3.get_object(Bucket="hot", Key="ev")["Body"].read(), b"e" * 10000)

    def test_lease_expires(self):
        self.s3.put_object(Bucket="cold", Key="short", Body=b"s" * 4096)
        now = time.time()
        rid = submit(hint("cold", "short", "pin", now - 1, now + 3))
        wait_for(lambda: query(srv, "cold", "short")["pinned"], "the pin")
        wait_for(lambda: not query(srv, "cold", "short")["pinned"], "the lease end", timeout=20)
        _, body = call(srv, "GET", "/_reo/hints")
        self.assertNotIn(rid, [h["request_id"] for h in body["hints"]])

    def test_prefix_and_range_and_cancel(self):
        for i in range(3):
            self.s3.put_object(Bucket="cold", Key=f"dir/{i}", Body=b"p" * 3000)
        now = time.time()
        submit({"app_id": "e2e", "bucket": "cold", "prefix": "dir/", "intent": "prefetch",
                "lease": {"start": int(now) - 1, "end": int(now) + 600}})
        wait_for(lambda: all(o["cached"] for o in
                             call(srv, "GET", "/_reo/query", {"bucket": "cold", "prefix": "dir/"})[1]["objects"]), "prefix")
        later = submit(hint("cold", "dir/0", "unpin", now + 3600, now + 7200))
        status, _ = call(srv, "DELETE", f"/_reo/hints/{later}")
        self.assertEqual(status, 200)
        status, _ = call(srv, "DELETE", f"/_reo/hints/{later}")
        self.assertEqual(status, 404)

    def test_reorganize_follows_a_prefix_move(self):
        data = os.urandom(120 * 1024)
        self.s3.put_object(Bucket="cold", Key="v1/obj", Body=data)
        now = time.time()
        submit(hint("cold", "v1/obj", "prefetch", now - 1, now + 600))
        wait_for(lambda: query(srv, "cold", "v1/obj")["cached"], "the prefetch")
        for _ in range(4):
            self.assertEqual(self.s3.get_object(Bucket="cold", Key="v1/obj")["Body"].read(), data)
        # The application moves v1/ to v2/ in the backend and tells the cache.
        self.s3.copy_object(Bucket="cold", Key="v2/obj", CopySource={"Bucket": "cold", "Key": "v1/obj"})
        before = query(srv, "cold", "v1/obj")
        self.assertGreaterEqual(before["freq"], 4)
        submit({"app_id": "e2e", "bucket": "cold", "intent": "reorganize", "reorganize": {"from": "v1/", "to": "v2/"},
                "lease": {"start": int(now) - 1, "end": int(now) + 600}})
        # The move puts the new key, then gives it the history, then drops the old key: the old
        # key gone is the end of it (the new key cached alone may still lack its history).
        wait_for(lambda: query(srv, "cold", "v2/obj")["cached_bytes"] == len(data)
                 and not query(srv, "cold", "v1/obj")["cached"], "the move")
        # The access history came along: the same Freq and H under the new key.
        after = query(srv, "cold", "v2/obj")
        self.assertEqual((after["freq"], after["h"]), (before["freq"], before["h"]))
        reads = metric(srv, "reo_gateway_backend_reads_total")
        self.assertEqual(self.s3.get_object(Bucket="cold", Key="v2/obj")["Body"].read(), data)
        self.assertEqual(metric(srv, "reo_gateway_backend_reads_total"), reads)

    def test_query_answers(self):
        self.s3.put_object(Bucket="hot", Key="q", Body=b"q" * 70000)
        q = query(srv, "hot", "q")
        self.assertTrue(q["cached"])
        self.assertEqual((q["size"], q["cached_bytes"], q["dirty"], q["degraded"]), (70000, 70000, False, False))
        for field in ("class", "schemes", "devices", "freq", "h", "sense", "sense_code", "leases", "pinned"):
            self.assertIn(field, q)
        self.assertEqual(q["sense_code"], 0)
        self.assertFalse(query(srv, "hot", "absent")["cached"])
        status, body = call(srv, "GET", "/_reo/query", {"bucket": "hot"})
        self.assertEqual(status, 400)

    def test_bad_hints_are_refused_naming_the_field(self):
        now = time.time()
        status, body = call(srv, "POST", "/_reo/hints", body=hint("cold", "k", "pin", now + 10, now))
        self.assertEqual(status, 400)
        self.assertIn("lease", body["error"])
        status, body = call(srv, "POST", "/_reo/hints", body=hint("cold", "k", "teleport", now, now + 1))
        self.assertEqual(status, 400)

    def test_auth(self):
        now = time.time()
        h = hint("cold", "k", "prefetch", now, now + 60)
        status, _ = call(srv, "POST", "/_reo/hints", body=h, sign=False)
        self.assertEqual(status, 403)
        status, _ = call(srv, "GET", "/_reo/admin/status", sign=False)
        self.assertEqual(status, 403)
        status, _ = call(srv, "POST", "/_reo/hints", body=h, secret="wrong-secret-wrong-secret-wrong-secret0")
        self.assertEqual(status, 403)
        status, _ = call(srv, "GET", "/_reo/health", sign=False)
        self.assertEqual(status, 200)


class ThrottleTest(unittest.TestCase):
    def test_prefetches_keep_to_the_promote_budget(self):
        t = Server(BIN, device_mib=32, extra=["--promote-bps", "200000", "--write-policy", "thr=write-around"])
        t.start()
        try:
            s3 = t.client()
            s3.create_bucket(Bucket="thr")
            for i in range(3):
                s3.put_object(Bucket="thr", Key=f"t/{i}", Body=os.urandom(200_000))
            now = time.time()
            status, body = call(t, "POST", "/_reo/hints", body={
                "app_id": "e2e", "bucket": "thr", "prefix": "t/", "intent": "prefetch",
                "lease": {"start": int(now) - 1, "end": int(now) + 600}})
            self.assertEqual(status, 200, body)
            started = time.time()
            wait_for(lambda: all(o["cached"] for o in call(t, "GET", "/_reo/query", {"bucket": "thr", "prefix": "t/"})[1]["objects"]),
                     "the prefetches")
            # 600 kB at 200 kB/s with one second of burst: at least about 2 s.
            self.assertGreater(time.time() - started, 1.5)
            self.assertGreater(metric(t, "reo_hints_throttle_waits_total"), 0)
        finally:
            self.assertEqual(t.stop(), 0)
            t.cleanup()


class HintRestartTest(unittest.TestCase):
    def test_hints_survive_restart(self):
        a = Server(BIN, device_mib=32)
        a.start()
        try:
            now = time.time()
            status, body = call(a, "POST", "/_reo/hints", body=hint("b", "k", "pin", now + 3600, now + 7200))
            self.assertEqual(status, 200, body)
            rid = body["request_id"]
        finally:
            self.assertEqual(a.stop(), 0)
        b = Server(BIN, data_dir=a.data_dir, device_mib=32)
        b.start()
        try:
            _, body = call(b, "GET", "/_reo/hints")
            hints = {h["request_id"]: h for h in body["hints"]}
            self.assertIn(rid, hints)
            self.assertEqual((hints[rid]["intent"], hints[rid]["state"]), ("pin", "scheduled"))
        finally:
            self.assertEqual(b.stop(), 0)
            b.cleanup()


if __name__ == "__main__":
    unittest.main()
