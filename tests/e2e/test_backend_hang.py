"""A backend that hangs instead of failing — moto_server frozen with SIGSTOP, or a proxy in front
of it that stops forwarding (a partition) — must not hold up what the cache can answer:

* cached GETs (flushed objects, unflushed writes, pending deletes → 404) keep answering while it
  hangs, also with revalidation on (the cached copy is served when the backend does not answer),
  and after a kill -9 and a restart with the backend still hung;
* the restart does not wait for the backend (it is probed in the background);
* a miss gets `503 SlowDown` with `Retry-After` once the backend's deadline has passed (and at once
  while the backend is known to be down);
* writes and deletes are acknowledged during the hang, and once the backend answers again the flush
  leaves it exactly right.

Each phase's GET latencies and the start-up time are printed (docs/RELIABILITY.md has the figures).
What is asserted is that no answer waited for the backend: each is well under the backend's
deadline, which a wait on the hung backend would reach."""

import os
import signal
import statistics
import time
import unittest

from botocore.exceptions import ClientError

from reoapi import admin, call, wait_for
from server import Server
from tcpproxy import FORWARD, HANG, Proxy
from test_s3backend import MOTO_KEY, MOTO_SECRET, Moto

BIN = os.environ.get("REO_BIN", "target/debug/reo")
# The backend's deadline in these tests (backend.timeout); an answer that waited on the hung
# backend takes at least this long.
DEADLINE_S = 4
BUCKET = "hang"


def percentiles(lat):
    s = sorted(lat)
    return statistics.median(s), s[min(len(s) - 1, int(len(s) * 0.99))]


class BackendHangTest(unittest.TestCase):
    def setUp(self):
        self.moto = Moto()
        self.moto.start()
        self.addCleanup(self.moto.stop)
        self.proxy = Proxy(self.moto.port)
        self.addCleanup(self.proxy.close)

    def start(self, revalidate):
        srv = Server(BIN, device_mib=64)
        cfg = os.path.join(srv.data_dir, "reo.toml")
        with open(cfg, "w") as f:
            f.write(
                f'[backend]\nkind = "s3"\nendpoint = "http://127.0.0.1:{self.proxy.port}"\nallow_http = true\n'
                f'access_key_id = "{MOTO_KEY}"\nsecret_access_key = "{MOTO_SECRET}"\n'
                f'connect_timeout = "2s"\ntimeout = "{DEADLINE_S}s"\n'
                + ('[cache]\nrevalidate_after = "0s"\n' if revalidate else ""))
        srv.extra = ["--config", cfg]
        srv.start()

        def stop():
            srv.stop()
            srv.cleanup()

        self.addCleanup(stop)
        return srv

    def timed_start(self, srv):
        t = time.monotonic()
        srv.start()
        return time.monotonic() - t

    def client(self, srv):
        return srv.client(connect_timeout=5, read_timeout=3 * DEADLINE_S)

    def get(self, s3, key):
        """(seconds, body or None for NoSuchKey)."""
        t = time.monotonic()
        try:
            body = s3.get_object(Bucket=BUCKET, Key=key)["Body"].read()
        except ClientError as e:
            self.assertEqual(e.response["Error"]["Code"], "NoSuchKey", key)
            body = None
        return time.monotonic() - t, body

    def check_all(self, s3, expect, rounds, what):
        """GETs every key of `expect` `rounds` times: bytes (or 404) as expected, none waiting for
        the backend; returns (p50, p99) in ms."""
        lat = []
        for _ in range(rounds):
            for k, v in expect.items():
                dt, body = self.get(s3, k)
                self.assertEqual(body, v, f"{what}: {k}")
                self.assertLess(dt, DEADLINE_S / 2, f"{what}: GET {k} took {dt:.2f} s: it waited for the backend")
                lat.append(dt)
        p50, p99 = percentiles(lat)
        print(f"\n  {what}: {len(lat)} GETs, p50 {p50 * 1e3:.1f} ms, p99 {p99 * 1e3:.1f} ms", end="")
        return p50, p99

    def run_hang(self, freeze, thaw, revalidate):
        srv = self.start(revalidate)
        s3 = self.client(srv)
        s3.create_bucket(Bucket=BUCKET)
        expect = {f"k{i:02}": os.urandom(20_000 + i) for i in range(30)}
        for k, v in expect.items():
            s3.put_object(Bucket=BUCKET, Key=k, Body=v)
        admin(BIN, srv, "flush", "--timeout", "60s")
        self.check_all(s3, expect, 5, "backend up")

        freeze()
        if revalidate:
            # Every hit asks the backend first; the first one after the hang began waits out the
            # deadline and gets the cached copy, and marks the backend down: then none asks.
            dt, body = self.get(s3, "k00")
            self.assertEqual(body, expect["k00"])
            self.assertLess(dt, DEADLINE_S + 2)
            wait_for(lambda: not call(srv, "GET", "/_reo/admin/status")[1]["backend"]["up"], "backend down", 30)
        # Writes and deletes during the hang are acknowledged (write-back).
        t = time.monotonic()
        for i in range(10):
            expect[f"k{i:02}"] = os.urandom(5_000 + i)  # overwrites
            expect[f"n{i:02}"] = os.urandom(7_000 + i)  # new objects
        for k in [f"k{i:02}" for i in range(10)] + [f"n{i:02}" for i in range(10)]:
            s3.put_object(Bucket=BUCKET, Key=k, Body=expect[k])
        for i in range(25, 30):
            s3.delete_object(Bucket=BUCKET, Key=f"k{i:02}")
            expect[f"k{i:02}"] = None
        print(f"\n  20 PUTs and 5 DELETEs during the hang: {time.monotonic() - t:.2f} s", end="")
        self.check_all(s3, expect, 5, "backend hung")

        # kill -9 and a restart with the backend still hung.
        srv.stop(signal.SIGKILL)
        started = self.timed_start(srv)
        print(f"\n  restart with the backend hung: healthy after {started:.2f} s", end="")
        self.assertLess(started, DEADLINE_S / 2, "the restart waited for the backend")
        s3 = self.client(srv)
        self.check_all(s3, expect, 5, "backend hung, after kill -9 and restart")

        # A miss needs the backend: 503 SlowDown with Retry-After, within the deadline.
        t = time.monotonic()
        with self.assertRaises(ClientError) as cm:
            s3.get_object(Bucket=BUCKET, Key="never-written")
        dt = time.monotonic() - t
        err = cm.exception.response
        self.assertEqual((err["Error"]["Code"], err["ResponseMetadata"]["HTTPStatusCode"]), ("SlowDown", 503))
        self.assertEqual(err["ResponseMetadata"]["HTTPHeaders"].get("retry-after"), "1")
        self.assertLess(dt, DEADLINE_S + 2)
        print(f"\n  a miss while hung: 503 SlowDown after {dt:.2f} s", end="")

        thaw()
        admin(BIN, srv, "flush", "--timeout", "120s")
        m = self.moto.client()
        listed = sorted(o["Key"] for o in m.list_objects_v2(Bucket=BUCKET).get("Contents", []))
        self.assertEqual(listed, sorted(k for k, v in expect.items() if v is not None))
        for k, v in expect.items():
            if v is not None:
                self.assertEqual(m.get_object(Bucket=BUCKET, Key=k)["Body"].read(), v, k)
        self.check_all(s3, expect, 1, "backend back")

    def test_moto_frozen_with_sigstop(self):
        self.run_hang(lambda: self.moto.proc.send_signal(signal.SIGSTOP),
                      lambda: self.moto.proc.send_signal(signal.SIGCONT), revalidate=False)

    def test_a_proxy_that_stops_forwarding_with_revalidation_on(self):
        self.run_hang(lambda: self.proxy.set_mode(HANG), lambda: self.proxy.set_mode(FORWARD), revalidate=True)


if __name__ == "__main__":
    unittest.main()
