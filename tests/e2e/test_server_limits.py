"""What a connection may cost `reo serve` before it has sent a signed request: a request header
that never finishes is cut off at `[server] header_timeout`; at most `max_connections` are open
at once (the rest wait in the kernel's backlog and are served as others close); and when file
descriptors run out the accept loop backs off instead of spinning a core and flooding the log."""

import os
import socket
import time
import unittest
import urllib.request

from server import Server

BIN = os.environ.get("REO_BIN", "target/debug/reo")


def health(srv, timeout=10):
    with urllib.request.urlopen(srv.endpoint + "/_reo/health", timeout=timeout) as r:
        return r.status


def cpu_seconds(pid):
    with open(f"/proc/{pid}/stat") as f:
        fields = f.read().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


class ServerLimitsTest(unittest.TestCase):
    def start(self, server_toml, **kw):
        srv = Server(BIN, **kw)
        cfg = os.path.join(srv.data_dir, "reo.toml")
        with open(cfg, "w") as f:
            f.write("[server]\n" + server_toml)
        srv.extra = ["--config", cfg]
        srv.start()
        self.addCleanup(srv.cleanup)
        self.addCleanup(srv.stop)
        return srv

    def connect(self, srv):
        s = socket.create_connection(("127.0.0.1", srv.port), timeout=30)
        self.addCleanup(s.close)
        return s

    def test_bodies_in_memory_are_bounded_by_the_budget(self):
        # A write-back PUT streams into the cache: however large its body, it holds four
        # fragments in memory (the piece being read, the piece being written, a spare one, the
        # first fragment kept for last). Two slow 6 MiB uploads hold 4 MiB each of the 10 MiB
        # budget; a third PUT does not fit and gets 503 SlowDown; once the slow ones are gone, it
        # fits.
        from botocore.auth import S3SigV4Auth
        from botocore.awsrequest import AWSRequest
        from botocore.credentials import Credentials
        from botocore.exceptions import ClientError
        from reoapi import metric
        from server import ACCESS, SECRET
        srv = self.start('memory_budget = "10MiB"\nmax_body = "8MiB"\n')
        s3 = srv.client()
        s3.create_bucket(Bucket="budget")
        fragment = 1 << 20
        slow = []
        for i in range(2):
            url = f"{srv.endpoint}/budget/slow{i}"
            req = AWSRequest(method="PUT", url=url, headers={"Content-Length": str(6 << 20),
                                                              "x-amz-content-sha256": "UNSIGNED-PAYLOAD"})
            S3SigV4Auth(Credentials(ACCESS, SECRET), "s3", "us-east-1").add_auth(req)
            c = socket.create_connection(("127.0.0.1", srv.port), timeout=30)
            slow.append(c)
            head = f"PUT /budget/slow{i} HTTP/1.1\r\n" + "".join(f"{k}: {v}\r\n" for k, v in req.headers.items())
            c.sendall((head + f"Host: 127.0.0.1:{srv.port}\r\n\r\n").encode() + b"x" * (2 << 20))
            deadline = time.time() + 30
            while metric(srv, "reo_gateway_body_bytes_in_memory") < (i + 1) * 4 * fragment:
                self.assertLess(time.time(), deadline)
                time.sleep(0.05)
        try:
            # Streamed: 2 MiB of each body arrived, 6 MiB declared, 4 MiB held each.
            self.assertEqual(metric(srv, "reo_gateway_body_bytes_in_memory"), 8 * fragment)
            with self.assertRaises(ClientError) as e:
                s3.put_object(Bucket="budget", Key="second", Body=os.urandom(6 << 20))
            self.assertEqual(e.exception.response["Error"]["Code"], "SlowDown")
            self.assertGreaterEqual(metric(srv, "reo_gateway_memory_budget_refusals_total"), 1)
        finally:
            for c in slow:
                c.close()
        deadline = time.time() + 30
        while metric(srv, "reo_gateway_body_bytes_in_memory") > 0:
            self.assertLess(time.time(), deadline, "the abandoned bodies' bytes were not released")
            time.sleep(0.05)
        body = os.urandom(6 << 20)
        s3.put_object(Bucket="budget", Key="second", Body=body)
        self.assertEqual(s3.get_object(Bucket="budget", Key="second")["Body"].read(), body)
        for i in range(2):
            with self.assertRaises(ClientError):
                s3.head_object(Bucket="budget", Key=f"slow{i}")

    def test_large_puts_completions_and_flushes_stream_through_bounded_memory(self):
        # 64 MiB objects every way a body reaches flash or the backend: a write-back PUT (into the
        # cache), a multipart upload (parts of 8 MiB into part files, then the completion), a
        # write-through PUT (into the backend and a clean copy) and a write-around PUT (into the
        # backend); then the flusher writes the write-back objects to the backend a fragment at a
        # time. The server's peak memory grows by far less than one object throughout.
        import hashlib
        from reoapi import admin
        srv = Server(BIN, device_mib=512, extra=["--flush-delay-ms", "600000",
                                                 "--write-policy", "big/through/=write-through",
                                                 "--write-policy", "big/around/=write-around"])
        srv.start()
        self.addCleanup(srv.cleanup)
        self.addCleanup(srv.stop)
        s3 = srv.client()
        s3.create_bucket(Bucket="big")

        def peak_mib():
            with open(f"/proc/{srv.proc.pid}/status") as f:
                return next(int(l.split()[1]) for l in f if l.startswith("VmHWM:")) / 1024

        size, part = 64 << 20, 8 << 20
        body = os.urandom(size)
        want = hashlib.md5(body).hexdigest()
        base = peak_mib()
        for key in ("put", "through/put", "around/put"):
            etag = s3.put_object(Bucket="big", Key=key, Body=body)["ETag"]
            self.assertEqual(etag, f'"{want}"', key)
        up = s3.create_multipart_upload(Bucket="big", Key="mpu")["UploadId"]
        parts = []
        for i in range(size // part):
            r = s3.upload_part(Bucket="big", Key="mpu", UploadId=up, PartNumber=i + 1,
                               Body=body[i * part:(i + 1) * part])
            parts.append({"PartNumber": i + 1, "ETag": r["ETag"]})
        s3.complete_multipart_upload(Bucket="big", Key="mpu", UploadId=up, MultipartUpload={"Parts": parts})
        grew = peak_mib() - base
        self.assertLess(grew, 32, f"peak memory grew by {grew:.0f} MiB for 64 MiB objects")
        # Both write-back objects go to the backend now (the flusher held three copies of an
        # object once, then two).
        admin(BIN, srv, "flush", "--timeout", "120s")
        flushed = peak_mib() - base
        self.assertLess(flushed, 32, f"peak memory grew by {flushed:.0f} MiB once 64 MiB objects were flushed "
                                     f"({grew:.0f} MiB before the flush)")
        files = [os.path.join(d, f) for d, _, fs in os.walk(os.path.join(srv.backend_dir, "big")) for f in fs]
        names = sorted(os.path.basename(f) for f in files if os.path.basename(f).startswith("o."))
        self.assertEqual(names, ["o.mpu", "o.put", "o.put", "o.put"])
        temp = [f for f in files if "/t." in f[len(srv.backend_dir):]]
        self.assertFalse(temp, "no temporary file is left")
        for key in ("put", "through/put", "around/put", "mpu"):
            got = s3.get_object(Bucket="big", Key=key)["Body"].read()
            self.assertEqual(hashlib.md5(got).hexdigest(), want, key)

    def test_a_trickling_body_is_cut_off_and_nothing_stored(self):
        from botocore.auth import S3SigV4Auth
        from botocore.awsrequest import AWSRequest
        from botocore.credentials import Credentials
        from botocore.exceptions import ClientError
        from server import ACCESS, SECRET
        srv = self.start('body_idle_timeout = "2s"\nheader_timeout = "2s"\nmax_requests_per_connection = 3\n')
        s3 = srv.client()
        s3.create_bucket(Bucket="slow")
        req = AWSRequest(method="PUT", url=f"{srv.endpoint}/slow/k",
                         headers={"Content-Length": "1000", "x-amz-content-sha256": "UNSIGNED-PAYLOAD"})
        S3SigV4Auth(Credentials(ACCESS, SECRET), "s3", "us-east-1").add_auth(req)
        with socket.create_connection(("127.0.0.1", srv.port), timeout=30) as c:
            head = "PUT /slow/k HTTP/1.1\r\n" + "".join(f"{k}: {v}\r\n" for k, v in req.headers.items())
            c.sendall((head + f"Host: 127.0.0.1:{srv.port}\r\n\r\n").encode() + b"x" * 10)
            start = time.time()
            answer = c.recv(4096)
            waited = time.time() - start
        self.assertIn(b" 400 ", answer.split(b"\r\n")[0])
        self.assertIn(b"RequestTimeout", answer)
        self.assertLess(waited, 20)
        with self.assertRaises(ClientError):
            s3.head_object(Bucket="slow", Key="k")
        # An idle keep-alive connection is closed too (the header timeout covers the wait for
        # the next request's header).
        with socket.create_connection(("127.0.0.1", srv.port), timeout=30) as c:
            c.sendall(f"GET /_reo/health HTTP/1.1\r\nHost: 127.0.0.1:{srv.port}\r\n\r\n".encode())
            self.assertIn(b"200 OK", c.recv(4096))
            start = time.time()
            self.assertEqual(c.recv(4096), b"", "the idle connection stayed open")
            self.assertLess(time.time() - start, 20)
        # The third request of a connection is its last.
        with socket.create_connection(("127.0.0.1", srv.port), timeout=30) as c:
            for i in range(3):
                c.sendall(f"GET /_reo/health HTTP/1.1\r\nHost: 127.0.0.1:{srv.port}\r\n\r\n".encode())
                answer = c.recv(4096)
                self.assertIn(b"200 OK", answer)
                self.assertEqual(b"connection: close" in answer.lower(), i == 2, answer)
            self.assertEqual(c.recv(4096), b"")

    def test_an_unfinished_header_is_cut_off(self):
        srv = self.start('header_timeout = "1s"\n')
        s = self.connect(srv)
        s.sendall(b"GET /_reo/health HTTP/1.1\r\nHost: reo\r\n")  # and never the blank line
        t = time.monotonic()
        got = b""
        while chunk := s.recv(4096):
            got += chunk
        waited = time.monotonic() - t
        self.assertLess(waited, 20, "the connection stayed open")
        self.assertGreaterEqual(waited, 0.9)
        self.assertNotIn(b"200 OK", got)
        self.assertEqual(health(srv), 200)  # others are served meanwhile and after

    def test_connections_beyond_the_limit_wait_for_one_to_close(self):
        srv = self.start('max_connections = 3\nheader_timeout = "60s"\n')
        idle = [self.connect(srv) for _ in range(3)]
        time.sleep(0.2)  # accepted: the three permits are taken
        with self.assertRaises(OSError):  # queued in the backlog, not served
            health(srv, timeout=1.5)
        idle[0].close()
        self.assertEqual(health(srv), 200)

    def test_a_form_upload_is_refused_before_its_body_is_read(self):
        srv = self.start("")
        rss = lambda: int(next(line.split()[1] for line in open(f"/proc/{srv.proc.pid}/status")  # noqa: E731
                               if line.startswith("VmRSS:")))
        before = rss()
        for path in ("/any-bucket", "/_reo/admin/flush"):
            s = self.connect(srv)
            s.sendall(f"POST {path} HTTP/1.1\r\nHost: reo\r\nContent-Type: multipart/form-data; boundary=b\r\n"
                      f"Content-Length: {256 << 20}\r\n\r\n".encode() + b"--b\r\n")
            try:
                s.sendall(b"x" * (1 << 20))
            except (BrokenPipeError, ConnectionResetError):
                pass  # refused and closed before this much of the body went out: what is checked
            head = s.recv(4096).decode(errors="replace")
            self.assertTrue(head.startswith("HTTP/1.1 501"), head[:200])
            self.assertIn("POST Object", head)
        self.assertLess(rss() - before, 64 << 10, "the form's body was buffered (KiB)")
        self.assertEqual(health(srv), 200)

    def test_running_out_of_descriptors_does_not_spin(self):
        # 96 descriptors, and a connection cap above them: accept() fails with EMFILE.
        srv = self.start("max_connections = 1000\n", nofile=96)
        log = os.path.join(srv.data_dir, "server.log")
        conns = [socket.create_connection(("127.0.0.1", srv.port), timeout=30) for _ in range(150)]
        try:
            time.sleep(0.5)
            cpu0, log0, t0 = cpu_seconds(srv.proc.pid), os.path.getsize(log), time.monotonic()
            time.sleep(3)
            cpu = cpu_seconds(srv.proc.pid) - cpu0
            wall = time.monotonic() - t0
            grown = os.path.getsize(log) - log0
            # Spinning costs a whole core and megabytes of log a second.
            self.assertLess(cpu / wall, 0.3, f"{cpu:.2f} s of CPU in {wall:.1f} s")
            self.assertLess(grown, 20_000, f"{grown} bytes of log in {wall:.1f} s")
        finally:
            for c in conns:
                c.close()
        deadline = time.monotonic() + 30
        while True:
            try:
                self.assertEqual(health(srv, timeout=5), 200)
                break
            except OSError:
                if time.monotonic() > deadline:
                    raise
                time.sleep(0.2)


if __name__ == "__main__":
    unittest.main()
