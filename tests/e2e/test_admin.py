"""`reo admin` against a running server: status, flush (waits until nothing is dirty, flush delay
notwithstanding), scrub, device fail (objects still served), device replace (rebuild followed to
the end), hints; and `reo serve --config` validation."""

import json
import os
import subprocess
import tempfile
import time
import unittest
import urllib.request

from reoapi import admin, hint, call
from server import Server, free_port

BIN = os.environ.get("REO_BIN", "target/debug/reo")


class AdminTest(unittest.TestCase):
    @classmethod
    def setUpClass(cls):
        cls.srv = Server(BIN, device_mib=32, extra=["--flush-delay-ms", "1500"])
        cls.srv.start()

    @classmethod
    def tearDownClass(cls):
        assert cls.srv.stop() == 0
        cls.srv.cleanup()

    def status(self):
        return json.loads(admin(BIN, self.srv, "status", "--json").stdout)

    def test_1_status_and_flush(self):
        s3 = self.srv.client()
        s3.create_bucket(Bucket="adm")
        for i in range(5):
            s3.put_object(Bucket="adm", Key=f"o{i}", Body=os.urandom(100_000))
        s = self.status()
        self.assertEqual(len(s["devices"]), 5)
        self.assertTrue(all(d["health"] == "healthy" for d in s["devices"]))
        self.assertTrue(all(d["io"]["writes"] > 0 and d["io"]["errors"] == 0 for d in s["devices"]), s["devices"])
        self.assertGreater(s["dirty_bytes"], 0)
        for field in ("io", "space", "cache", "flush_lag_seconds", "rebuild", "data_loss_events"):
            self.assertIn(field, s)
        text = admin(BIN, self.srv, "status").stdout
        self.assertIn("dirty:", text)
        self.assertIn("dev0: healthy", text)
        p = admin(BIN, self.srv, "flush")
        self.assertIn("nothing is dirty", p.stdout)
        self.assertEqual(self.status()["dirty_bytes"], 0)
        self.assertTrue(os.path.exists(os.path.join(self.srv.backend_dir, "adm", "o.o0")))

    def test_2_scrub(self):
        out = json.loads(admin(BIN, self.srv, "scrub").stdout)
        self.assertGreater(out["chunks_verified"], 0)
        self.assertEqual(out["unrecoverable"], 0)

    def test_3_device_fail_and_replace(self):
        s3 = self.srv.client()
        s3.create_bucket(Bucket="dev")
        objs = {f"k{i}": os.urandom(150_000) for i in range(6)}
        for k, v in objs.items():
            s3.put_object(Bucket="dev", Key=k, Body=v)
        admin(BIN, self.srv, "device", "fail", "1")
        s = self.status()
        self.assertEqual(s["devices"][1]["health"], "failed")
        for k, v in objs.items():
            self.assertEqual(s3.get_object(Bucket="dev", Key=k)["Body"].read(), v)
        # A replacement is a new file inside the data directory: nothing else is created, and
        # nothing existing is overwritten.
        outside = tempfile.mkdtemp(prefix="reo-outside-")
        os.symlink(outside, os.path.join(self.srv.data_dir, "out"))
        with open(os.path.join(self.srv.data_dir, "taken.img"), "wb") as f:
            f.write(b"keep me")
        for bad in (os.path.join(outside, "abs.img"), "../escaped.img", "state/../dev1.img.replaced",
                    "out/evil.img", "dev2.img", "taken.img"):
            p = admin(BIN, self.srv, "device", "replace", "1", bad, check=False)
            self.assertNotEqual(p.returncode, 0, bad)
            self.assertIn("path", p.stderr, bad)
        self.assertEqual(os.listdir(outside), [])
        self.assertFalse(os.path.exists(os.path.join(self.srv.data_dir, "..", "escaped.img")))
        with open(os.path.join(self.srv.data_dir, "taken.img"), "rb") as f:
            self.assertEqual(f.read(), b"keep me")
        self.assertEqual(self.status()["devices"][1]["health"], "failed")
        p = admin(BIN, self.srv, "device", "replace", "1", "dev1-new.img")
        self.assertIn("rebuild of dev1: done", p.stdout)
        s = self.status()
        self.assertTrue(all(d["health"] == "healthy" for d in s["devices"]), s["devices"])
        self.assertEqual(s["rebuild"]["state"], "done")
        for k, v in objs.items():
            self.assertEqual(s3.get_object(Bucket="dev", Key=k)["Body"].read(), v)
        bad = admin(BIN, self.srv, "device", "fail", "9", check=False)
        self.assertNotEqual(bad.returncode, 0)
        self.assertIn("device", bad.stderr)

    def test_4_hints(self):
        now = time.time()
        out = json.loads(admin(BIN, self.srv, "hints", "submit", json.dumps(hint("b", "k", "pin", now + 999, now + 9999))).stdout)
        listed = json.loads(admin(BIN, self.srv, "hints").stdout)
        self.assertIn(out["request_id"], [h["request_id"] for h in listed["hints"]])
        admin(BIN, self.srv, "hints", "cancel", out["request_id"])
        self.assertEqual(json.loads(admin(BIN, self.srv, "hints", "list").stdout)["hints"], [])

    def test_5_bad_credentials(self):
        env = dict(os.environ, REO_ENDPOINT=self.srv.endpoint, REO_ACCESS_KEY="REOTESTACCESSKEY0001", REO_SECRET_KEY="nope")
        p = subprocess.run([BIN, "admin", "status"], env=env, capture_output=True, text=True, timeout=60)
        self.assertNotEqual(p.returncode, 0)
        self.assertIn("403", p.stderr)
        # A wrong secret: the key is named, the secret said to be wrong.
        self.assertIn('refused the signature made with access key "REOTESTACCESSKEY0001"', p.stderr)
        self.assertIn("secret key", p.stderr)
        # An access key the server does not know: named and said refused.
        env["REO_ACCESS_KEY"] = "NOSUCHKEY0000000"
        p = subprocess.run([BIN, "admin", "status"], env=env, capture_output=True, text=True, timeout=60)
        self.assertNotEqual(p.returncode, 0)
        self.assertIn('refused the access key "NOSUCHKEY0000000"', p.stderr)

    def test_6_wrong_endpoint(self):
        endpoint = f"http://127.0.0.1:{free_port()}"
        env = dict(os.environ, REO_ENDPOINT=endpoint, REO_ACCESS_KEY="A", REO_SECRET_KEY="S")
        p = subprocess.run([BIN, "admin", "status"], env=env, capture_output=True, text=True, timeout=60)
        self.assertNotEqual(p.returncode, 0)
        self.assertIn(f"cannot reach {endpoint}: connection refused; is `reo serve` running there?", p.stderr)

    def test_7_output_formats(self):
        # --output json is the status --json of old; the typed answer, every field there.
        s = json.loads(admin(BIN, self.srv, "--output", "json", "status").stdout)
        self.assertEqual(len(s["devices"]), 5)
        self.assertIn("backend", s)
        # Global: after the subcommand too.
        self.assertEqual(json.loads(admin(BIN, self.srv, "status", "--output", "json").stdout).keys(), s.keys())
        # Commands whose answer printed as JSON get a text form.
        text = admin(BIN, self.srv, "--output", "table", "scrub").stdout
        self.assertRegex(text, r"^scrubbed \d+ blobs: \d+ chunks verified")
        # Piped, a scrub shows no spinner: stderr stays empty.
        self.assertEqual(admin(BIN, self.srv, "scrub").stderr, "")


class FlushDelayTest(unittest.TestCase):
    def test_flush_takes_everything_despite_the_flush_delay(self):
        srv = Server(BIN, device_mib=32, extra=["--flush-delay-ms", "600000"])
        srv.start()
        self.addCleanup(srv.cleanup)
        self.addCleanup(lambda: self.assertEqual(srv.stop(), 0))
        s3 = srv.client()
        s3.create_bucket(Bucket="late")
        s3.put_object(Bucket="late", Key="k", Body=b"flush me now")
        self.assertEqual(self.status(srv)["dirty_objects"], 1)
        p = admin(BIN, srv, "flush", "--timeout", "30s")
        self.assertIn("nothing is dirty", p.stdout)
        with open(os.path.join(srv.backend_dir, "late", "o.k"), "rb") as f:
            self.assertEqual(f.read(), b"flush me now")
        # Later writes wait for the delay again.
        s3.put_object(Bucket="late", Key="k2", Body=b"later")
        self.assertEqual(self.status(srv)["dirty_objects"], 1)

    @staticmethod
    def status(srv):
        return json.loads(admin(BIN, srv, "status", "--json").stdout)


class ConfigTest(unittest.TestCase):
    def test_bad_field_is_named(self):
        d = tempfile.mkdtemp(prefix="reo-cfg-")
        cfg = os.path.join(d, "reo.toml")
        with open(cfg, "w") as f:
            f.write('[cache]\ndevice_size = "lots"\n')
        p = subprocess.run([BIN, "serve", "--config", cfg, "--data-dir", d], capture_output=True, text=True, timeout=60)
        self.assertEqual(p.returncode, 2)
        self.assertIn('reo.toml: cache.device_size: expected a size like "4GiB"', p.stderr)

    def test_config_file_is_used(self):
        srv = Server(BIN, device_mib=32, env={"REO_METRICS_TOKEN": ""})
        with open(os.path.join(srv.data_dir, "reo.toml"), "w") as f:
            f.write('[server]\nanonymous_metrics = true\n[hints]\npromote_bandwidth = "1MiB"\n'
                    '[metrics]\ntoken = "config-file-token-0123"\n[cache]\ncheckpoint_size = "3MiB"\n')
        srv.extra = ["--config", os.path.join(srv.data_dir, "reo.toml")]
        srv.start()
        try:
            status, body = call(srv, "GET", "/metrics", sign=False)
            self.assertEqual(status, 200, "anonymous_metrics = true lets anyone scrape")
            self.assertIn(b"reo_gateway_request_duration_seconds_bucket", body)
            req = urllib.request.Request(srv.endpoint + "/metrics",
                                         headers={"Authorization": "Bearer config-file-token-0123"})
            with urllib.request.urlopen(req, timeout=10) as r:
                self.assertEqual(r.status, 200)
            # The devices were formatted with checkpoint slots of the size asked for: the
            # superblock's ckpt_len (after magic, format, store id, index, count, length, chunk,
            # zone, zones, journal offset and length, and the slots' offset).
            with open(os.path.join(srv.data_dir, "dev0.img"), "rb") as d:
                head = d.read(80)
            self.assertEqual(head[:8], b"REOSTOR1")
            self.assertEqual(int.from_bytes(head[72:80], "little"), 3 << 20)
        finally:
            self.assertEqual(srv.stop(), 0)
            srv.cleanup()


if __name__ == "__main__":
    unittest.main()


class LogFormatTest(unittest.TestCase):
    def test_json_logs_are_one_object_per_line(self):
        srv = Server(BIN, device_mib=32, extra=["--log-format", "json"], env={"RUST_LOG": "info"})
        srv.start()
        self.addCleanup(srv.cleanup)
        admin(BIN, srv, "device", "fail", "1")  # a WARN event with fields
        self.assertEqual(srv.stop(), 0)
        with open(os.path.join(srv.data_dir, "server.log")) as f:
            lines = [l for l in f.read().splitlines() if l.strip()]
        self.assertGreater(len(lines), 2, lines)
        events = [json.loads(l) for l in lines]  # every line is one JSON object
        for e in events:
            self.assertIn(e["level"], ("TRACE", "DEBUG", "INFO", "WARN", "ERROR"), e)
            self.assertIn("message", e)
            self.assertIn("timestamp", e)
        failed = [e for e in events if e["message"] == "device failed by command"]
        self.assertEqual([(e["level"], e["device"]) for e in failed], [("WARN", 1)])
