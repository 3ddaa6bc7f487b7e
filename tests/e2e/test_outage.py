"""Backend outage under write-back: the local backend directory is renamed away (the store is gone,
as a dead volume or an unreachable object store is). Writes are acknowledged and readable from the
cache; `503 SlowDown` comes when the dirty budget is exhausted, or once the backend has been down
longer than `flush.backend_down_slowdown_after`; `reo admin flush --timeout` fails saying what is
left; after the backend is restored every acknowledged object reaches it byte-exact and writes are
accepted again."""

import os
import signal
import threading
import unittest

from botocore.exceptions import ClientError

from reoapi import admin, call, metric, put_until_refused, wait_for
from server import Server

BIN = os.environ.get("REO_BIN", "target/debug/reo")


def start(toml):
    srv = Server(BIN, device_mib=32)
    cfg = os.path.join(srv.data_dir, "reo.toml")
    with open(cfg, "w") as f:
        f.write(toml)
    srv.extra = ["--config", cfg]
    srv.start()
    return srv


def status(srv):
    code, body = call(srv, "GET", "/_reo/admin/status")
    assert code == 200, body
    return body


class Outage:
    """Renames the backend directory away (down) and back (up)."""

    def __init__(self, srv):
        self.root, self.away = srv.backend_dir, srv.backend_dir + ".away"

    def down(self):
        os.rename(self.root, self.away)

    def up(self):
        os.rename(self.away, self.root)


def backend_bytes(srv, bucket, key):
    with open(os.path.join(srv.backend_dir, bucket, "o." + key), "rb") as f:
        return f.read()


class OutageTest(unittest.TestCase):
    def down_after_a_first_flush(self, toml, bucket):
        """A server configured with `toml`, `bucket` known to it, then the backend taken away."""
        srv = start(toml)

        def stop():
            self.assertEqual(srv.stop(), 0)
            srv.cleanup()

        self.addCleanup(stop)
        s3 = srv.client()
        s3.create_bucket(Bucket=bucket)
        s3.put_object(Bucket=bucket, Key="first", Body=b"before the outage")
        wait_for(lambda: status(srv)["dirty_objects"] == 0, "the first flush")
        outage = Outage(srv)
        outage.down()
        return srv, s3, outage

    def test_dirty_budget_exhausted_during_an_outage(self):
        toml = '[flush]\ndirty_limit = "1MiB"\nbackend_down_slowdown_after = "1h"\n'
        srv, s3, outage = self.down_after_a_first_flush(toml, "out")
        acked, e = put_until_refused(s3, "out", 128 * 1024)
        err = e.response
        self.assertEqual(err["Error"]["Code"], "SlowDown")
        self.assertEqual(err["ResponseMetadata"]["HTTPStatusCode"], 503)
        self.assertIn("dirty budget", err["Error"]["Message"])
        # 1 MiB of 128 KiB objects: 8 fit.
        self.assertEqual(len(acked), 8)
        for k, body in acked.items():
            self.assertEqual(s3.get_object(Bucket="out", Key=k)["Body"].read(), body)
        # The flusher's failures mark the backend down; the status says so.
        s = wait_for(lambda: (lambda s: s if not s["backend"]["up"] else None)(status(srv)), "backend down")
        self.assertIn("unavailable", s["backend"]["last_error"])
        self.assertFalse(s["backend"]["slowing_down"])
        self.assertEqual(s["dirty_objects"], 8)
        self.assertEqual((metric(srv, "reo_backend_up"), metric(srv, "reo_backend_slowing_down")), (0, 0))
        self.assertGreater(metric(srv, "reo_backend_failures_total"), 0)
        # reo admin flush with a deadline gives up, saying what is left and why.
        p = admin(BIN, srv, "flush", "--timeout", "2s", check=False)
        self.assertEqual(p.returncode, 1, p.stderr)
        self.assertIn("flush timed out after", p.stderr)
        self.assertIn(f"8 objects ({8 * 128 * 1024} bytes) still dirty", p.stderr)
        self.assertIn("backend down for", p.stderr)
        # Restored: flush drains everything, byte-exact in the backend directory.
        outage.up()
        p = admin(BIN, srv, "flush", "--timeout", "60s")
        self.assertIn("nothing is dirty", p.stdout)
        for k, body in acked.items():
            self.assertEqual(backend_bytes(srv, "out", k), body, k)
        self.assertTrue(status(srv)["backend"]["up"])
        self.assertEqual(metric(srv, "reo_backend_up"), 1)
        s3.put_object(Bucket="out", Key="after", Body=b"accepted again")
        self.assertEqual(s3.get_object(Bucket="out", Key="after")["Body"].read(), b"accepted again")

    def test_backend_down_too_long_gives_slowdown(self):
        srv, s3, outage = self.down_after_a_first_flush('[flush]\nbackend_down_slowdown_after = "2s"\n', "down")
        during = os.urandom(300 * 1024)
        s3.put_object(Bucket="down", Key="during", Body=during)
        self.assertEqual(s3.get_object(Bucket="down", Key="during")["Body"].read(), during)
        s = wait_for(lambda: (lambda s: s if s["backend"]["slowing_down"] else None)(status(srv)),
                     "SlowDown after 2 s down")
        self.assertGreaterEqual(s["backend"]["down_seconds"], 2.0)
        with self.assertRaises(ClientError) as e:
            s3.put_object(Bucket="down", Key="refused", Body=b"x")
        err = e.exception.response
        self.assertEqual((err["Error"]["Code"], err["ResponseMetadata"]["HTTPStatusCode"]), ("SlowDown", 503))
        self.assertIn("backend has been down", err["Error"]["Message"])
        # Reads of acknowledged objects go on meanwhile.
        self.assertEqual(s3.get_object(Bucket="down", Key="during")["Body"].read(), during)
        text = admin(BIN, srv, "status").stdout
        self.assertIn("writes get 503 SlowDown", text)
        outage.up()
        admin(BIN, srv, "flush", "--timeout", "60s")
        self.assertEqual(backend_bytes(srv, "down", "during"), during)
        s = status(srv)
        self.assertTrue(s["backend"]["up"] and not s["backend"]["slowing_down"], s["backend"])
        s3.put_object(Bucket="down", Key="refused", Body=b"now accepted")
        admin(BIN, srv, "flush", "--timeout", "60s")
        self.assertEqual(backend_bytes(srv, "down", "refused"), b"now accepted")

    def test_rewrites_through_an_outage_end_with_the_last_version(self):
        srv, s3, outage = self.down_after_a_first_flush('[flush]\nbackend_down_slowdown_after = "1h"\n', "rewrites")
        outage.up()  # the writer starts with the backend up
        last, acks, errors, stop = {}, [0], [], threading.Event()

        def writer():
            c = srv.client()
            i = 0
            while not stop.is_set():
                key, body = f"k{i % 7}", os.urandom(20_000 + 997 * (i % 13))
                try:
                    c.put_object(Bucket="rewrites", Key=key, Body=body)
                    last[key] = body
                    acks[0] += 1
                except Exception as e:  # noqa: BLE001 - every failure is a finding
                    errors.append(repr(e))
                i += 1

        t = threading.Thread(target=writer)
        t.start()
        try:
            wait_for(lambda: acks[0] >= 20, "writes before the outage")
            outage.down()
            wait_for(lambda: not status(srv)["backend"]["up"], "the flusher to see the outage")
            n = acks[0]
            wait_for(lambda: acks[0] >= n + 30, "writes during the outage")
            outage.up()
            n = acks[0]
            wait_for(lambda: acks[0] >= n + 20, "writes after the outage")
        finally:
            stop.set()
            t.join(timeout=60)
        self.assertEqual(errors, [])
        admin(BIN, srv, "flush", "--timeout", "60s")
        self.assertTrue(status(srv)["backend"]["up"])
        for key, body in last.items():
            self.assertEqual(backend_bytes(srv, "rewrites", key), body, f"{key}: not the last acknowledged version")
            self.assertEqual(s3.get_object(Bucket="rewrites", Key=key)["Body"].read(), body)

    def test_a_restart_during_the_outage_keeps_the_backend_down_not_empty(self):
        srv, s3, outage = self.down_after_a_first_flush('[flush]\nbackend_down_slowdown_after = "1h"\n', "crash")
        during = os.urandom(150 * 1024)
        s3.put_object(Bucket="crash", Key="during", Body=during)
        srv.stop(signal.SIGKILL)
        srv.start()  # same data directory, the backend directory still away
        self.assertFalse(os.path.exists(srv.backend_dir), "the backend directory was recreated empty")
        s3 = srv.client()
        self.assertEqual(s3.get_object(Bucket="crash", Key="during")["Body"].read(), during)
        # The bucket holds an unflushed object, so writes to it are still accepted.
        s3.put_object(Bucket="crash", Key="after-restart", Body=b"still accepted")
        wait_for(lambda: not status(srv)["backend"]["up"], "the flusher to find the backend down")
        outage.up()
        admin(BIN, srv, "flush", "--timeout", "60s")
        self.assertEqual(backend_bytes(srv, "crash", "during"), during)
        self.assertEqual(backend_bytes(srv, "crash", "after-restart"), b"still accepted")
        self.assertEqual(backend_bytes(srv, "crash", "first"), b"before the outage")

    def test_deletes_during_an_outage_are_kept_and_applied_when_it_ends(self):
        srv, s3, outage = self.down_after_a_first_flush('[flush]\nbackend_down_slowdown_after = "1h"\n', "dels")
        # "first" is in the backend; deleting it with the backend gone is acknowledged (204).
        s3.delete_object(Bucket="dels", Key="first")
        with self.assertRaises(Exception) as ctx:
            s3.head_object(Bucket="dels", Key="first")
        self.assertIn("404", str(ctx.exception))
        outage.up()
        # Requests reach the backend again once the gateway's probe (once a second) sees it.
        wait_for(lambda: status(srv)["backend"]["reachable"], "the backend reachable again")
        # Still pending: the backend has the object, the gateway's listing does not.
        listed = [o["Key"] for o in s3.list_objects_v2(Bucket="dels").get("Contents", [])]
        self.assertNotIn("first", listed)
        admin(BIN, srv, "flush", "--timeout", "60s")
        self.assertFalse(os.path.exists(os.path.join(srv.backend_dir, "dels", "o.first")), "the delete reached the backend")
        self.assertEqual(status(srv)["dirty_objects"], 0)


if __name__ == "__main__":
    unittest.main()
