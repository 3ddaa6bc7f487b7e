"""Lifecycle: SIGTERM drains a request in flight and writes the checkpoint, so the restart is
warm (clean cached objects are hits, no backend read); `reo serve` with no arguments runs on the
embedded defaults (./reo-data, 5 device files of 256 MiB, a local backend directory,
127.0.0.1:9000, generated credentials printed once)."""

import os
import shutil
import signal
import stat
import socket
import subprocess
import tempfile
import unittest
import urllib.request

import boto3
from botocore.auth import S3SigV4Auth
from botocore.awsrequest import AWSRequest
from botocore.config import Config
from botocore.credentials import Credentials

from reoapi import admin, metric, query, wait_for
from server import ACCESS, ADMIN_ACCESS, ADMIN_SECRET, SECRET, Server

BIN = os.environ.get("REO_BIN", "target/debug/reo")


def read_head(sock):
    """Reads one response head (status line and headers) from `sock`."""
    buf = b""
    while b"\r\n\r\n" not in buf:
        chunk = sock.recv(4096)
        if not chunk:
            raise AssertionError(f"connection closed after {buf!r}")
        buf += chunk
    return buf


def health_ok(srv):
    try:
        with urllib.request.urlopen(srv.endpoint + "/_reo/health", timeout=1) as r:
            return r.status == 200
    except OSError:
        return False


def wait_healthy(proc):
    """Waits until the `reo serve` process `proc` answers on 127.0.0.1:9000 (or has exited)."""

    def healthy():
        if proc.poll() is not None:
            return True  # exited: the caller's assertion says so
        try:
            with urllib.request.urlopen("http://127.0.0.1:9000/_reo/health", timeout=1) as r:
                return r.status == 200
        except OSError:
            return False

    wait_for(healthy, "reo serve to listen on 127.0.0.1:9000", timeout=120)
    assert proc.poll() is None, f"reo serve exited with {proc.returncode}"


def refuses_connections(port):
    try:
        socket.create_connection(("127.0.0.1", port), timeout=1).close()
        return False
    except OSError:
        return True


class LifecycleTest(unittest.TestCase):
    def test_sigterm_drains_a_request_and_the_restart_is_warm(self):
        srv = Server(BIN, device_mib=32)
        srv.start()
        s3 = srv.client()
        s3.create_bucket(Bucket="warm")
        cached = os.urandom(200 * 1024)
        s3.put_object(Bucket="warm", Key="cached", Body=cached)
        admin(BIN, srv, "flush", "--timeout", "60s")  # now clean, still on flash
        self.assertTrue(query(srv, "warm", "cached")["cached"])
        # A PUT whose body has not arrived yet: `Expect: 100-continue` tells us when the server
        # has taken the request in hand (it asks for the body).
        body = os.urandom(1 << 20)
        req = AWSRequest(method="PUT", url=f"{srv.endpoint}/warm/drained", data=body, headers={"Expect": "100-continue"})
        S3SigV4Auth(Credentials(ACCESS, SECRET), "s3", "us-east-1").add_auth(req)
        head = f"PUT /warm/drained HTTP/1.1\r\nHost: 127.0.0.1:{srv.port}\r\nContent-Length: {len(body)}\r\n"
        head += "".join(f"{k}: {v}\r\n" for k, v in req.prepare().headers.items() if k.lower() != "content-length")
        sock = socket.create_connection(("127.0.0.1", srv.port), timeout=60)
        sock.sendall(head.encode() + b"\r\n")
        self.assertTrue(read_head(sock).startswith(b"HTTP/1.1 100"))
        srv.proc.send_signal(signal.SIGTERM)
        # Shutdown has begun once the listener is closed; the request in hand still completes.
        wait_for(lambda: refuses_connections(srv.port), "the listener to close")
        sock.sendall(body)
        answer = read_head(sock)
        sock.close()
        self.assertTrue(answer.startswith(b"HTTP/1.1 200"), answer)
        self.assertEqual(srv.proc.wait(timeout=60), 0)
        srv.log.close()
        with open(os.path.join(srv.data_dir, "server.log")) as f:
            self.assertIn("store closed (checkpoint written)", f.read())

        srv2 = Server(BIN, data_dir=srv.data_dir, device_mib=32)
        srv2.start()
        try:
            with open(os.path.join(srv.data_dir, "server.log")) as f:
                self.assertIn("(clean restart)", f.read())
            s3 = srv2.client()
            self.assertEqual(s3.get_object(Bucket="warm", Key="cached")["Body"].read(), cached)
            self.assertEqual(s3.get_object(Bucket="warm", Key="drained")["Body"].read(), body)
            self.assertEqual(metric(srv2, "reo_gateway_backend_reads_total"), 0, "the restart was cold")
        finally:
            self.assertEqual(srv2.stop(), 0)
            srv2.cleanup()

    def test_the_secret_key_from_a_file_or_the_environment(self):
        for how in ("file", "env"):
            srv = Server(BIN)
            self.addCleanup(srv.cleanup)
            key_file = os.path.join(srv.data_dir, "secret")
            with open(key_file, "w") as f:
                f.write(ADMIN_SECRET + "\n")
            args = [os.path.abspath(BIN), "serve", "--data-dir", srv.data_dir, "--listen", f"127.0.0.1:{srv.port}",
                    "--device-mib", "64", "--access-key", ADMIN_ACCESS]
            env = dict(os.environ)
            if how == "file":
                args += ["--secret-key-file", key_file]
            else:
                env["REO_SECRET_KEY"] = ADMIN_SECRET
            proc = subprocess.Popen(args, env=env, stdout=srv.log, stderr=srv.log)
            srv.proc = proc
            try:
                wait_for(lambda: health_ok(srv) or proc.poll() is not None, "reo serve to start", timeout=120)
                self.assertIsNone(proc.poll(), how)
                with open(f"/proc/{proc.pid}/cmdline", "rb") as f:
                    self.assertNotIn(ADMIN_SECRET.encode(), f.read())  # not in the process list
                srv.client(ADMIN_ACCESS, ADMIN_SECRET).create_bucket(Bucket=f"secret-{how}")  # accepted
            finally:
                self.assertEqual(srv.stop(), 0)

    def test_no_arguments_runs_on_embedded_defaults(self):
        try:
            with socket.socket() as s:
                s.bind(("127.0.0.1", 9000))
        except OSError:
            self.skipTest("127.0.0.1:9000 is in use on this machine")
        cwd = tempfile.mkdtemp(prefix="reo-defaults-")
        self.addCleanup(shutil.rmtree, cwd, True)
        log = open(os.path.join(cwd, "server.log"), "wb")
        self.addCleanup(log.close)
        proc = subprocess.Popen([os.path.abspath(BIN), "serve"], cwd=cwd, stdout=subprocess.PIPE, stderr=log, text=True)
        try:
            lines = [proc.stdout.readline() for _ in range(2)]
            self.assertIn("generated credentials", lines[0])
            access = lines[1].split("access key:")[1].strip()
            wait_healthy(proc)
            data = os.path.join(cwd, "reo-data")
            # The secret is in the credentials file only (never printed), and nobody else reads
            # the data directory, the credentials or the devices.
            with open(os.path.join(data, "credentials")) as f:
                secret = f.read().split()[1]
            for path, mode in ((data, 0o700), (os.path.join(data, "credentials"), 0o600),
                               (os.path.join(data, "dev0.img"), 0o600)):
                self.assertEqual(stat.S_IMODE(os.stat(path).st_mode), mode, path)
            for i in range(5):
                self.assertEqual(os.path.getsize(os.path.join(data, f"dev{i}.img")), 256 << 20)
            self.assertFalse(os.path.exists(os.path.join(data, "dev5.img")))
            with open(os.path.join(data, "credentials")) as f:
                self.assertEqual(f.read().split(), [access, secret])
            s3 = boto3.client("s3", endpoint_url="http://127.0.0.1:9000", region_name="us-east-1",
                              aws_access_key_id=access, aws_secret_access_key=secret,
                              config=Config(s3={"addressing_style": "path"}, retries={"max_attempts": 1}))
            s3.create_bucket(Bucket="photos")
            s3.put_object(Bucket="photos", Key="cat.jpg", Body=b"meow")
            self.assertEqual(s3.get_object(Bucket="photos", Key="cat.jpg")["Body"].read(), b"meow")
            self.assertTrue(os.path.isfile(os.path.join(data, "backend", "photos", "b.bucket")))
        finally:
            proc.send_signal(signal.SIGTERM)
            rest, _ = proc.communicate(timeout=60)
        self.assertEqual(proc.returncode, 0)
        self.assertNotIn(secret, "".join(lines) + rest)
        # Modes widened by hand are narrowed again at the next start, with a warning.
        os.chmod(data, 0o755)
        os.chmod(os.path.join(data, "credentials"), 0o644)
        os.chmod(os.path.join(data, "dev1.img"), 0o644)
        # Credentials are printed once: a second start reuses them silently.
        proc = subprocess.Popen([os.path.abspath(BIN), "serve"], cwd=cwd, stdout=subprocess.PIPE, stderr=log, text=True)
        try:
            wait_healthy(proc)
        finally:
            proc.send_signal(signal.SIGTERM)
            out, _ = proc.communicate(timeout=60)
        self.assertEqual(proc.returncode, 0)
        self.assertNotIn("generated credentials", out)
        for path, mode in ((data, 0o700), (os.path.join(data, "credentials"), 0o600),
                           (os.path.join(data, "dev1.img"), 0o600)):
            self.assertEqual(stat.S_IMODE(os.stat(path).st_mode), mode, path)
        with open(os.path.join(cwd, "server.log")) as f:
            self.assertIn("credentials was mode 644; now 600", f.read())


if __name__ == "__main__":
    unittest.main()
