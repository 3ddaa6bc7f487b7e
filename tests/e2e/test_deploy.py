"""The deployment files are what they claim: the Grafana dashboard matches the dashboard model
(a JSON schema of the fields Grafana requires to load it), every query is valid PromQL
(promtool) over metrics docs/METRICS.md lists; the Prometheus configuration and alert rules pass
`promtool check`; the systemd unit passes `systemd-analyze verify`. promtool comes with Debian's
`prometheus` package (scripts/test.sh installs it)."""

import json
import os
import re
import shutil
import subprocess
import tempfile
import unittest

import jsonschema

ROOT = os.path.join(os.path.dirname(__file__), "..", "..")
DEPLOY = os.path.join(ROOT, "deploy")
BIN = os.environ.get("REO_BIN", "target/debug/reo")

# The part of Grafana's dashboard model a dashboard needs to load and show its panels.
DASHBOARD_SCHEMA = {
    "type": "object",
    "required": ["uid", "title", "schemaVersion", "panels", "templating", "time"],
    "properties": {
        "uid": {"type": "string", "pattern": "^[a-zA-Z0-9_-]{1,40}$"},
        "title": {"type": "string", "minLength": 1},
        "schemaVersion": {"type": "integer", "minimum": 36},
        "time": {"type": "object", "required": ["from", "to"]},
        "templating": {"type": "object", "required": ["list"], "properties": {"list": {"type": "array", "items": {
            "type": "object", "required": ["name", "type"]}}}},
        "panels": {"type": "array", "minItems": 1, "items": {
            "type": "object",
            "required": ["id", "type", "title", "gridPos", "datasource", "targets"],
            "properties": {
                "id": {"type": "integer"},
                "type": {"enum": ["timeseries", "stat", "gauge", "table", "bargauge"]},
                "gridPos": {"type": "object", "required": ["h", "w", "x", "y"], "properties": {
                    "w": {"type": "integer", "minimum": 1, "maximum": 24},
                    "x": {"type": "integer", "minimum": 0, "maximum": 23}}},
                "targets": {"type": "array", "minItems": 1, "items": {
                    "type": "object", "required": ["refId", "expr"],
                    "properties": {"expr": {"type": "string", "minLength": 1}}}},
            },
        }},
    },
}


def documented_metrics():
    with open(os.path.join(ROOT, "docs", "METRICS.md"), encoding="utf-8") as f:
        return set(re.findall(r"^\| `(reo_[a-z0-9_]+)` \|", f.read(), re.M))


class DeployTest(unittest.TestCase):
    def test_grafana_dashboard(self):
        with open(os.path.join(DEPLOY, "grafana", "reo.json"), encoding="utf-8") as f:
            dash = json.load(f)
        jsonschema.validate(dash, DASHBOARD_SCHEMA)
        ids = [p["id"] for p in dash["panels"]]
        self.assertEqual(len(ids), len(set(ids)), "panel ids are unique")
        for p in dash["panels"]:
            self.assertLessEqual(p["gridPos"]["x"] + p["gridPos"]["w"], 24, p["title"])
        known = documented_metrics()
        exprs = [t["expr"] for p in dash["panels"] for t in p["targets"]]
        for e in exprs:
            for name in re.findall(r"\b(reo_[a-z0-9_]+)", e):
                base = re.sub(r"_(bucket|sum|count)$", "", name)
                self.assertTrue(name in known or base in known, f"{name} (in {e}) is not a documented metric")
        titles = " ".join(p["title"].lower() for p in dash["panels"])
        for topic in ("hit ratio", "throughput", "latency", "device health", "space by class", "dirty", "flush lag",
                      "rebuild"):
            self.assertIn(topic, titles)
        promtool = shutil.which("promtool")
        if promtool is None:
            self.skipTest("promtool is not installed (scripts/test.sh installs it)")
        # Every query as a recording rule: promtool parses each as PromQL.
        with tempfile.TemporaryDirectory() as d:
            rules = {"groups": [{"name": "dashboard", "rules": [
                {"record": f"dashboard:query{i}", "expr": e.replace("$job", ".*").replace("$instance", ".*")}
                for i, e in enumerate(exprs)]}]}
            path = os.path.join(d, "rules.json")
            with open(path, "w") as f:
                json.dump(rules, f)
            r = subprocess.run([promtool, "check", "rules", path], capture_output=True, text=True)
            self.assertEqual(r.returncode, 0, r.stdout + r.stderr)

    def test_prometheus_configuration_and_alerts(self):
        promtool = shutil.which("promtool")
        if promtool is None:
            self.skipTest("promtool is not installed (scripts/test.sh installs it)")
        with tempfile.TemporaryDirectory() as d:
            token = os.path.join(d, "token")
            with open(token, "w") as f:
                f.write("t0k\n")
            with open(os.path.join(DEPLOY, "prometheus.yml"), encoding="utf-8") as f:
                cfg = f.read().replace("/etc/prometheus/reo-metrics-token", token)
            with open(os.path.join(d, "prometheus.yml"), "w") as f:
                f.write(cfg)
            shutil.copy(os.path.join(DEPLOY, "reo-alerts.yml"), d)
            r = subprocess.run([promtool, "check", "config", os.path.join(d, "prometheus.yml")], capture_output=True, text=True)
            self.assertEqual(r.returncode, 0, r.stdout + r.stderr)
            self.assertIn("rules found", r.stdout)
        with open(os.path.join(DEPLOY, "reo-alerts.yml"), encoding="utf-8") as f:
            alerts = f.read()
        known = documented_metrics()
        for name in set(re.findall(r"\b(reo_[a-z0-9_]+)", alerts)):
            self.assertIn(name, known, f"alert rule uses {name}, not a documented metric")

    def test_systemd_unit(self):
        analyze = shutil.which("systemd-analyze")
        if analyze is None:
            self.skipTest("systemd-analyze is not installed")
        binary = os.path.abspath(BIN)
        with tempfile.TemporaryDirectory() as d:
            with open(os.path.join(DEPLOY, "reo.service"), encoding="utf-8") as f:
                unit = f.read().replace("/usr/local/bin/reo", binary)
            path = os.path.join(d, "reo.service")
            with open(path, "w") as f:
                f.write(unit)
            r = subprocess.run([analyze, "verify", path], capture_output=True, text=True)
            self.assertEqual(r.returncode, 0, r.stdout + r.stderr)
            self.assertNotIn("Unknown key", r.stderr)
            self.assertNotIn("Unknown lvalue", r.stderr)
        # The unit starts the binary with options it has.
        r = subprocess.run([binary, "--log-format", "json", "serve", "--help"], capture_output=True, text=True)
        self.assertEqual(r.returncode, 0, r.stderr)
        self.assertIn("--config", r.stdout)


if __name__ == "__main__":
    unittest.main()
