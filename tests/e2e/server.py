"""Starts and stops a real `reo serve` on a free loopback port with a temporary data directory."""

import os
import resource
import shutil
import signal
import socket
import subprocess
import tempfile
import time
import urllib.request

import boto3
from botocore.config import Config

# A hung gateway must fail the request that hit it, not stall the suite: every socket the tests
# open without their own timeout (urllib's included) gives up after this long.
socket.setdefaulttimeout(120)

# The built-in admin (the admin API), and the `readwrite` user every test's S3 traffic uses
# (added by `Server.start`), as the gateway would be run: applications never hold the admin key.
ADMIN_ACCESS = "REOTESTACCESSKEY0001"
ADMIN_SECRET = "reo-test-secret-key-0000000000000000000"
# The bearer token /metrics is scraped with (REO_METRICS_TOKEN; anonymous scrapes are refused).
METRICS_TOKEN = "reo-test-metrics-token-000000"
ACCESS = "REOTESTREADWRITE0001"
SECRET = "reo-test-readwrite-secret-000000000000"


# Ports are handed out below the kernel's ephemeral range (32768 and up by default): a port there
# can be taken by any outgoing connection between the moment it is found free and the moment a
# server (or a node restarted on its old port) binds it. Each process starts at its own offset so
# that concurrent suites rarely probe the same ports.
_PORT_LOW, _PORT_HIGH = 20000, 32000
_next_port = _PORT_LOW + (os.getpid() * 7919) % (_PORT_HIGH - _PORT_LOW)


def free_port():
    """A loopback port no one listens on, outside the ephemeral range."""
    global _next_port
    for _ in range(_PORT_HIGH - _PORT_LOW):
        port = _next_port
        _next_port = _PORT_LOW + (_next_port + 1 - _PORT_LOW) % (_PORT_HIGH - _PORT_LOW)
        with socket.socket() as s:
            try:
                s.bind(("127.0.0.1", port))
            except OSError:
                continue
            return port
    raise RuntimeError(f"no free port in {_PORT_LOW}..{_PORT_HIGH}")


class Server:
    def __init__(self, binary, data_dir=None, extra=(), device_mib=64, env=None, nofile=None):
        self.binary = binary
        self.nofile = nofile  # the server's open-file limit (soft and hard), if not inherited
        self.env = env  # extra environment variables of the server process
        self.data_dir = data_dir or tempfile.mkdtemp(prefix="reo-e2e-")
        self.port = free_port()
        self.proc = None
        self.extra = list(extra)
        self.device_mib = device_mib
        self.log = open(os.path.join(self.data_dir, "server.log"), "ab")

    @property
    def endpoint(self):
        return f"http://127.0.0.1:{self.port}"

    @property
    def backend_dir(self):
        return os.path.join(self.data_dir, "backend")

    def start(self, timeout=60):
        if self.log.closed:
            self.log = open(os.path.join(self.data_dir, "server.log"), "ab")
        self.proc = subprocess.Popen(
            [self.binary, "serve", "--data-dir", self.data_dir, "--listen", f"127.0.0.1:{self.port}",
             "--devices", "5", "--device-mib", str(self.device_mib), "--access-key", ADMIN_ACCESS,
             "--secret-key", ADMIN_SECRET] + self.extra,
            stdout=self.log, stderr=self.log, env={**os.environ, "REO_METRICS_TOKEN": METRICS_TOKEN, **(self.env or {})},
            preexec_fn=(lambda: resource.setrlimit(resource.RLIMIT_NOFILE, (self.nofile, self.nofile)))
            if self.nofile else None)
        deadline = time.time() + timeout
        while time.time() < deadline:
            if self.proc.poll() is not None:
                raise RuntimeError(f"reo serve exited with {self.proc.returncode}; see {self.data_dir}/server.log")
            try:
                with urllib.request.urlopen(self.endpoint + "/_reo/health", timeout=1) as r:
                    if r.status == 200:
                        self.add_user("e2e", "readwrite", ACCESS, SECRET)
                        return
            except OSError:
                time.sleep(0.1)
        raise RuntimeError(f"reo serve did not become healthy within {timeout} s")

    def add_user(self, name, role, access, secret, scopes=()):
        """Adds a user with the given key pair through the admin API (kept across restarts: one
        that exists already is left as it is)."""
        import reoapi
        status, body = reoapi.call(self, "POST", "/_reo/admin/users", body={
            "name": name, "role": role, "scopes": list(scopes), "access_key": access, "secret_key": secret})
        if status not in (200, 409):
            raise RuntimeError(f"adding user {name}: HTTP {status}: {body}")

    def stop(self, sig=signal.SIGTERM):
        if self.proc and self.proc.poll() is None:
            self.proc.send_signal(sig)
            self.proc.wait(timeout=60)
        self.log.close()
        return self.proc.returncode

    def kill(self):
        """SIGKILL (a crash); returns once the process is gone, with the `time.monotonic()` read
        just after the signal was sent (a request sent later cannot reach a live server, one sent
        earlier may have). A new `start` restarts it over the same data directory."""
        sent = time.monotonic()
        if self.proc and self.proc.poll() is None:
            self.proc.kill()
            sent = time.monotonic()
            self.proc.wait(timeout=60)
        self.log.close()
        return sent

    def cleanup(self):
        shutil.rmtree(self.data_dir, ignore_errors=True)

    def client(self, access=ACCESS, secret=SECRET, region="us-east-1", **cfg):
        cfg.setdefault("retries", {"max_attempts": 1})
        return boto3.client(
            "s3", endpoint_url=self.endpoint, region_name=region,
            aws_access_key_id=access, aws_secret_access_key=secret,
            config=Config(s3={"addressing_style": "path"}, **cfg))
