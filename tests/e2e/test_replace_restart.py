"""A replaced device survives a restart: after `reo admin device replace`, the name the next start
opens as that device (dev1.img) leads to the replacement, so a restarted gateway serves from the
rebuilt device — not from the failed device's file, which missed every write since."""

import json
import os
import shutil
import signal
import unittest

from reoapi import admin, call, wait_for
from server import Server

BIN = os.environ.get("REO_BIN", "target/debug/reo")


def put_objects(s3, bucket, prefix, count, size):
    """Puts `count` random objects of `size` bytes; returns {key: bytes}."""
    objs = {f"{prefix}{i}": os.urandom(size) for i in range(count)}
    for k, v in objs.items():
        s3.put_object(Bucket=bucket, Key=k, Body=v)
    return objs


def fail_and_replace(test, srv, device, path):
    """Fails `device` and replaces it by `path` with `reo admin`, the rebuild followed to its end."""
    admin(BIN, srv, "device", "fail", str(device))
    p = admin(BIN, srv, "device", "replace", str(device), path)
    test.assertIn(f"rebuild of dev{device}: done", p.stdout)


def served_by_device_1_alone(test, srv, s3, bucket, objs):
    """Every device healthy; then, with all but device 1 failed, every object reads exact."""
    status = json.loads(admin(BIN, srv, "status", "--json").stdout)
    test.assertTrue(all(d["health"] == "healthy" for d in status["devices"]), status["devices"])
    for d in (0, 2, 3, 4):
        admin(BIN, srv, "device", "fail", str(d))
    for k, v in objs.items():
        test.assertEqual(s3.get_object(Bucket=bucket, Key=k)["Body"].read(), v, k)


class ReplaceRestartTest(unittest.TestCase):
    def test_a_restart_opens_the_replacement(self):
        # Objects stay dirty (flush an hour away): dirty data is replicated on every device, so
        # with every other device failed a GET reads device 1 alone.
        srv = Server(BIN, device_mib=32, extra=["--flush-delay-ms", "3600000"])
        srv.start()
        try:
            s3 = srv.client()
            s3.create_bucket(Bucket="rrb")
            objs = put_objects(s3, "rrb", "before", 4, 120_000)
            fail_and_replace(self, srv, 1, "dev1-new.img")
            # Written in full to the replacement, never to the failed device's file.
            objs.update(put_objects(s3, "rrb", "after", 4, 120_000))
            dev1 = os.path.join(srv.data_dir, "dev1.img")
            self.assertEqual(os.readlink(dev1), "dev1-new.img")
            self.assertFalse(os.path.exists(dev1 + ".replaced"), "the failed device's file is removed")
            self.assertEqual(srv.stop(), 0)

            srv.start()
            served_by_device_1_alone(self, srv, s3, "rrb", objs)
        finally:
            srv.stop()
            srv.cleanup()

    def test_a_replacement_whose_disk_is_gone_opens_failed(self):
        # A replacement on another disk mounted inside the data directory (`spare/`): linked by
        # its absolute path. Gone at the next start, the gateway still starts, that device failed.
        srv = Server(BIN, device_mib=32)
        spare = os.path.realpath(os.path.join(srv.data_dir, "spare"))
        os.mkdir(spare)
        srv.start()
        try:
            s3 = srv.client()
            s3.create_bucket(Bucket="gone")
            objs = put_objects(s3, "gone", "k", 3, 90_000)
            fail_and_replace(self, srv, 3, "spare/d3.img")
            self.assertEqual(os.readlink(os.path.join(srv.data_dir, "dev3.img")), "spare/d3.img")
            self.assertEqual(srv.stop(), 0)
            shutil.rmtree(spare)
            srv.start()
            status = json.loads(admin(BIN, srv, "status", "--json").stdout)
            self.assertEqual([d["health"] for d in status["devices"]],
                             ["healthy", "healthy", "healthy", "failed", "healthy"])
            for k, v in objs.items():
                self.assertEqual(s3.get_object(Bucket="gone", Key=k)["Body"].read(), v, k)
        finally:
            srv.stop()
            srv.cleanup()
            shutil.rmtree(spare, ignore_errors=True)

    def test_a_rebuild_killed_midway_resumes_at_start(self):
        # Dirty objects (replicated on every device) and a rebuild held to 64 KiB/s: the gateway
        # is killed while it runs, and the next start must finish it onto the replacement.
        srv = Server(BIN, device_mib=32, extra=["--flush-delay-ms", "3600000"])
        srv.start()
        try:
            s3 = srv.client()
            s3.create_bucket(Bucket="resume")
            objs = put_objects(s3, "resume", "k", 8, 150_000)
            admin(BIN, srv, "device", "fail", "1")
            p = admin(BIN, srv, "device", "replace", "1", "dev1-new.img", "--bandwidth", "64KiB", "--no-follow")
            self.assertEqual(json.loads(p.stdout)["rate_bps"], 64 << 10)
            status = json.loads(admin(BIN, srv, "status", "--json").stdout)
            self.assertEqual((status["rebuild"]["device"], status["rebuild"]["state"]), (1, "running"))
            srv.stop(signal.SIGKILL)

            srv.start()  # no rebuild bandwidth: the resumed rebuild goes as fast as it can
            status = json.loads(admin(BIN, srv, "status", "--json").stdout)
            self.assertIsNotNone(status["rebuild"], "the interrupted rebuild was not resumed")
            self.assertEqual(status["rebuild"]["device"], 1)

            def done():
                s = json.loads(admin(BIN, srv, "status", "--json").stdout)
                return s if s["rebuild"]["state"] != "running" else None
            status = wait_for(done, "the resumed rebuild to end", timeout=120)
            self.assertEqual(status["rebuild"]["state"], "done")
            served_by_device_1_alone(self, srv, s3, "resume", objs)
        finally:
            srv.stop()
            srv.cleanup()

    def test_a_rebuild_bandwidth_must_be_a_positive_size(self):
        srv = Server(BIN, device_mib=32)
        srv.start()
        try:
            admin(BIN, srv, "device", "fail", "4")
            p = admin(BIN, srv, "device", "replace", "4", "d4.img", "--bandwidth", "0", check=False)
            self.assertNotEqual(p.returncode, 0)
            self.assertIn("more than 0", p.stderr)

            status, body = call(srv, "POST", "/_reo/admin/device/replace",
                                {"device": "4", "path": "d4.img", "rate_bps": "fast"})
            self.assertEqual(status, 400, body)
            self.assertFalse(os.path.exists(os.path.join(srv.data_dir, "d4.img")), "nothing created")
        finally:
            srv.stop()
            srv.cleanup()

    def test_a_replacement_path_may_not_be_a_device_file_name(self):
        srv = Server(BIN, device_mib=32)
        srv.start()
        try:
            p = admin(BIN, srv, "device", "replace", "2", "spare2.img", check=False)
            self.assertNotEqual(p.returncode, 0)
            self.assertIn("healthy", p.stderr)
            self.assertFalse(os.path.exists(os.path.join(srv.data_dir, "spare2.img")), "nothing created")
            admin(BIN, srv, "device", "fail", "2")
            p = admin(BIN, srv, "device", "replace", "2", "dev2.img.replaced", check=False)
            self.assertNotEqual(p.returncode, 0)
            self.assertIn("device files use", p.stderr)
            self.assertTrue(os.path.isfile(os.path.join(srv.data_dir, "dev2.img")))
        finally:
            srv.stop()
            srv.cleanup()


if __name__ == "__main__":
    unittest.main()
