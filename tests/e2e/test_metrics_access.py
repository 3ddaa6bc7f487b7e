"""Who may read `/metrics` (device health, dirty bytes, rebuild state): nobody anonymously by
default; Prometheus with the bearer token (`REO_METRICS_TOKEN` / `[metrics] token`); an admin's
signed request; not a `readwrite` user; anyone on the separate `--metrics-listen` address. Denied
requests are counted in the metrics and logged at WARN at a bounded rate, so an anonymous client
cannot flood the log."""

import os
import unittest
import urllib.error
import urllib.request

from reoapi import call, metric
from server import ACCESS, METRICS_TOKEN, SECRET, Server, free_port

BIN = os.environ.get("REO_BIN", "target/debug/reo")


def get(url, headers=None):
    try:
        with urllib.request.urlopen(urllib.request.Request(url, headers=headers or {}), timeout=30) as r:
            return r.status, r.read()
    except urllib.error.HTTPError as e:
        return e.code, e.read()


class MetricsAccessTest(unittest.TestCase):
    @classmethod
    def setUpClass(cls):
        cls.metrics_port = free_port()
        cls.srv = Server(BIN, device_mib=32, extra=["--metrics-listen", f"127.0.0.1:{cls.metrics_port}"])
        cls.srv.start()

    @classmethod
    def tearDownClass(cls):
        assert cls.srv.stop() == 0
        cls.srv.cleanup()

    def test_who_may_scrape(self):
        url = self.srv.endpoint + "/metrics"
        self.assertEqual(get(url)[0], 403, "anonymous")
        status, body = get(url, {"Authorization": "Bearer not-the-token-0000000"})
        self.assertEqual(status, 401)
        status, body = get(url, {"Authorization": f"Bearer {METRICS_TOKEN}"})
        self.assertEqual(status, 200)
        self.assertIn(b"reo_gateway_dirty_objects", body)
        self.assertEqual(call(self.srv, "GET", "/metrics", access=ACCESS, secret=SECRET)[0], 403, "readwrite")
        self.assertEqual(call(self.srv, "GET", "/metrics")[0], 200, "admin")
        # The separate address: metrics only, no authentication.
        other = f"http://127.0.0.1:{self.metrics_port}"
        status, body = get(other + "/metrics")
        self.assertEqual(status, 200)
        self.assertIn(b"reo_gateway_denied_requests_total", body)
        self.assertEqual(get(other + "/_reo/admin/status")[0], 404)

    def test_denials_are_counted_and_their_log_is_bounded(self):
        before = metric(self.srv, "reo_gateway_denied_requests_total")
        for _ in range(200):
            self.assertEqual(get(self.srv.endpoint + "/some-bucket/key")[0], 403)
        self.assertEqual(metric(self.srv, "reo_gateway_denied_requests_total"), before + 200)
        with open(os.path.join(self.srv.data_dir, "server.log")) as f:
            log = f.read()
        lines = [l for l in log.splitlines() if "denied: 403" in l]
        self.assertGreaterEqual(len(lines), 1)
        self.assertLessEqual(len(lines), 3, "a denial message per request")
        self.assertNotIn("ERROR", log, "s3s's own error log is on")


if __name__ == "__main__":
    unittest.main()
