"""`/metrics` as Prometheus reads it: a live exposition of a real `reo serve` parsed with the
Python `prometheus_client` parser (the reference implementation's), every metric that
docs/METRICS.md lists as present *always* or *after a request* found with its documented type and
labels and a `# HELP` line, and the values following the traffic: requests counted by operation
and status, hits by class, bytes in and out, device I/O with its latency."""

import os
import re
import unittest
import urllib.request

from prometheus_client.parser import text_string_to_metric_families

from server import METRICS_TOKEN, Server

BIN = os.environ.get("REO_BIN", "target/debug/reo")
DOC = os.path.join(os.path.dirname(__file__), "..", "..", "docs", "METRICS.md")


def documented():
    """{name: (type, {labels}, present)} from docs/METRICS.md's tables."""
    rows = {}
    with open(DOC, encoding="utf-8") as f:
        lines = f.read().splitlines()
    for line in lines:
        m = re.match(r"^\| `(reo_[a-z0-9_]+)` \| (counter|gauge|histogram) \| ([a-z_, ]*) \| .* \| ([a-z ,]+) \|$", line)
        if m:
            labels = {x.strip() for x in m.group(3).split(",") if x.strip()}
            rows[m.group(1)] = (m.group(2), labels, m.group(4))
    return rows


class MetricsTest(unittest.TestCase):
    @classmethod
    def setUpClass(cls):
        cls.srv = Server(BIN, device_mib=32)
        cls.srv.start()

    @classmethod
    def tearDownClass(cls):
        assert cls.srv.stop() == 0
        cls.srv.cleanup()

    def scrape(self):
        req = urllib.request.Request(self.srv.endpoint + "/metrics", headers={"Authorization": f"Bearer {METRICS_TOKEN}"})
        with urllib.request.urlopen(req, timeout=30) as r:
            self.assertTrue(r.headers["Content-Type"].startswith("text/plain; version=0.0.4"))
            text = r.read().decode()
        families = {f.name: f for f in text_string_to_metric_families(text)}
        return text, families

    @staticmethod
    def value(families, family, sample, **labels):
        for s in families[family].samples:
            if s.name == sample and all(s.labels.get(k) == v for k, v in labels.items()):
                return s.value
        raise KeyError((sample, labels))

    def test_every_documented_metric_is_exposed_with_its_type_and_labels(self):
        s3 = self.srv.client()
        s3.create_bucket(Bucket="metered")
        s3.put_object(Bucket="metered", Key="k", Body=b"m" * 10_000)
        for _ in range(3):
            self.assertEqual(s3.get_object(Bucket="metered", Key="k")["Body"].read(), b"m" * 10_000)
        s3.head_object(Bucket="metered", Key="k")
        text, families = self.scrape()
        docs = documented()
        self.assertGreater(len(docs), 120, "the doc's tables were not parsed")
        for name, (kind, labels, present) in docs.items():
            if present not in ("always", "after a request", "after a request with a body", "after a write"):
                continue
            # The parser names a counter family without its `_total`.
            family = name[: -len("_total")] if kind == "counter" else name
            with self.subTest(metric=name):
                self.assertIn(family, families, f"{name} is documented but not exposed")
                f = families[family]
                self.assertEqual(f.type, kind)
                self.assertIn(f"# HELP {name} ", text)
                seen = set()
                for s in f.samples:
                    seen |= set(s.labels) - {"le"}
                self.assertEqual(seen, labels, f"labels of {name}")
        exposed = {n + ("_total" if f.type == "counter" else "") for n, f in families.items()}
        self.assertEqual(exposed - set(docs), set(), "exposed but not documented in docs/METRICS.md")

    def test_values_follow_the_traffic(self):
        s3 = self.srv.client()
        s3.create_bucket(Bucket="traffic")
        _, before = self.scrape()
        puts = self.value(before, "reo_gateway_requests", "reo_gateway_requests_total", op="put", code="200") if any(
            s.labels.get("op") == "put" and s.labels.get("code") == "200" for s in before["reo_gateway_requests"].samples) else 0
        hot_hits = self.value(before, "reo_cache_class_hits", "reo_cache_class_hits_total", **{"class": "dirty"})
        memory_hits = self.value(before, "reo_cache_tier_hits", "reo_cache_tier_hits_total", tier="memory")
        for i in range(4):
            s3.put_object(Bucket="traffic", Key=f"o{i}", Body=os.urandom(8192))
        for i in range(4):
            s3.get_object(Bucket="traffic", Key=f"o{i}")["Body"].read()
        try:
            s3.get_object(Bucket="traffic", Key="missing")
        except s3.exceptions.NoSuchKey:
            pass
        _, after = self.scrape()
        self.assertEqual(self.value(after, "reo_gateway_requests", "reo_gateway_requests_total", op="put", code="200"), puts + 4)
        self.assertGreaterEqual(self.value(after, "reo_gateway_requests", "reo_gateway_requests_total", op="get", code="404"), 1)
        # Write-back objects are dirty until flushed: their hits count in the dirty class (or hot
        # or cold once flushed; the sum over classes covers either).
        hits = sum(self.value(after, "reo_cache_class_hits", "reo_cache_class_hits_total", **{"class": c})
                   for c in ("dirty", "hot", "cold"))
        self.assertGreaterEqual(hits - hot_hits, 4)
        # A write leaves a copy in the memory tier (on by default): the reads cost no device read.
        self.assertEqual(self.value(after, "reo_cache_tier_hits", "reo_cache_tier_hits_total", tier="memory") - memory_hits, 4)
        self.assertGreaterEqual(self.value(after, "reo_cache_memory_objects", "reo_cache_memory_objects"), 4)
        self.assertGreater(self.value(after, "reo_cache_memory_capacity_bytes", "reo_cache_memory_capacity_bytes"), 0)
        self.assertGreaterEqual(self.value(after, "reo_gateway_received_bytes", "reo_gateway_received_bytes_total", op="put"), 4 * 8192)
        self.assertGreaterEqual(self.value(after, "reo_gateway_sent_bytes", "reo_gateway_sent_bytes_total", op="get"), 4 * 8192)
        self.assertGreater(self.value(after, "reo_device_io_duration_seconds", "reo_device_io_duration_seconds_count", device="0", call="sync"), 0)
        self.assertGreater(self.value(after, "reo_device_syncs", "reo_device_syncs_total", device="0"), 0)
        self.assertEqual(self.value(after, "reo_device_state", "reo_device_state", device="0", state="healthy"), 1)
        self.assertEqual(self.value(after, "reo_gateway_requests_in_flight", "reo_gateway_requests_in_flight"), 1,
                         "the scrape itself is the one request in flight")
        schemes = {s.labels["class"]: s.labels["scheme"] for s in after["reo_cache_class_scheme_info"].samples}
        self.assertEqual(set(schemes), {"metadata", "dirty", "hot", "cold"})


if __name__ == "__main__":
    unittest.main()
