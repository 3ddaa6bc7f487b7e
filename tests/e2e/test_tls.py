"""HTTPS: `reo serve --tls-listen --tls-cert --tls-key` with a throwaway CA made by openssl;
boto3 verifies the chain against that CA and talks S3 over TLS (a PUT and a GET, a multipart
upload); `reo admin` over https with `--tls-ca` (and refused without it); the console's session
cookie `Secure` under TLS; a client that does not trust the CA is refused at the handshake; with TLS configured
and no `--listen`, no plain HTTP address is served; a bad certificate file stops the start with
a message naming it; a client that never finishes its handshake loses its connection at the
header timeout."""

import http.client
import json
import os
import socket
import ssl
import subprocess
import tempfile
import time
import unittest
import urllib.parse

import boto3
from botocore.config import Config
from botocore.exceptions import SSLError

from server import ACCESS, ADMIN_ACCESS, ADMIN_SECRET, SECRET, Server, free_port

BIN = os.environ.get("REO_BIN", "target/debug/reo")


def make_ca_and_cert(d):
    """A CA, and a certificate it signed for 127.0.0.1 and localhost; returns (ca, cert, key)."""
    def run(*args):
        subprocess.run(["openssl", *args], check=True, capture_output=True, cwd=d)
    run("req", "-x509", "-newkey", "rsa:2048", "-nodes", "-keyout", "ca.key", "-out", "ca.pem", "-days", "2",
        "-subj", "/CN=reo test CA")
    run("req", "-newkey", "ec", "-pkeyopt", "ec_paramgen_curve:prime256v1", "-nodes", "-keyout", "key.pem",
        "-out", "srv.csr", "-subj", "/CN=127.0.0.1")
    with open(os.path.join(d, "ext.cnf"), "w") as f:
        f.write("subjectAltName=IP:127.0.0.1,DNS:localhost\nextendedKeyUsage=serverAuth\n")
    run("x509", "-req", "-in", "srv.csr", "-CA", "ca.pem", "-CAkey", "ca.key", "-CAcreateserial", "-out", "cert.pem",
        "-days", "2", "-extfile", "ext.cnf")
    return [os.path.join(d, n) for n in ("ca.pem", "cert.pem", "key.pem")]


class TlsTest(unittest.TestCase):
    @classmethod
    def setUpClass(cls):
        cls.pki = tempfile.mkdtemp(prefix="reo-tls-")
        cls.ca, cert, key = make_ca_and_cert(cls.pki)
        cls.tls_port = free_port()
        cls.srv = Server(BIN, device_mib=32, extra=[
            "--tls-listen", f"127.0.0.1:{cls.tls_port}", "--tls-cert", cert, "--tls-key", key])
        cls.srv.start()
        cls.https = f"https://127.0.0.1:{cls.tls_port}"

    @classmethod
    def tearDownClass(cls):
        assert cls.srv.stop() == 0
        cls.srv.cleanup()

    def client(self, verify):
        return boto3.client("s3", endpoint_url=self.https, region_name="us-east-1", verify=verify,
                            aws_access_key_id=ACCESS, aws_secret_access_key=SECRET,
                            config=Config(s3={"addressing_style": "path"}, retries={"max_attempts": 1}))

    def test_s3_over_tls_with_a_verified_chain(self):
        s3 = self.client(self.ca)
        s3.create_bucket(Bucket="tls")
        body = os.urandom(300_000)
        s3.put_object(Bucket="tls", Key="k", Body=body)
        self.assertEqual(s3.get_object(Bucket="tls", Key="k")["Body"].read(), body)
        up = s3.create_multipart_upload(Bucket="tls", Key="mp")["UploadId"]
        parts = [os.urandom(5 << 20), os.urandom(1000)]
        etags = [s3.upload_part(Bucket="tls", Key="mp", UploadId=up, PartNumber=i + 1, Body=p)["ETag"]
                 for i, p in enumerate(parts)]
        s3.complete_multipart_upload(Bucket="tls", Key="mp", UploadId=up, MultipartUpload={
            "Parts": [{"PartNumber": i + 1, "ETag": e} for i, e in enumerate(etags)]})
        self.assertEqual(s3.get_object(Bucket="tls", Key="mp")["Body"].read(), b"".join(parts))

    def test_admin_and_console_over_tls(self):
        # `reo admin` over https: trusted through --tls-ca, refused without it.
        env = dict(os.environ, REO_ENDPOINT=self.https, REO_ACCESS_KEY=ADMIN_ACCESS, REO_SECRET_KEY=ADMIN_SECRET)
        ok = subprocess.run([BIN, "admin", "--tls-ca", self.ca, "--output", "json", "status"], env=env,
                            capture_output=True, text=True, timeout=60)
        self.assertEqual(ok.returncode, 0, ok.stderr)
        self.assertEqual(len(json.loads(ok.stdout)["devices"]), 5)
        bad = subprocess.run([BIN, "admin", "status"], env=env, capture_output=True, text=True, timeout=60)
        self.assertNotEqual(bad.returncode, 0)
        self.assertIn(self.https, bad.stderr)
        # The console's session cookie is Secure on the TLS listener.
        ctx = ssl.create_default_context(cafile=self.ca)
        c = http.client.HTTPSConnection("127.0.0.1", self.tls_port, context=ctx, timeout=30)
        form = urllib.parse.urlencode({"access_key": ADMIN_ACCESS, "secret_key": ADMIN_SECRET})
        c.request("POST", "/_reo/console/login", form, {"Content-Type": "application/x-www-form-urlencoded"})
        r = c.getresponse()
        r.read()
        c.close()
        self.assertEqual(r.status, 303)
        self.assertIn("; Secure", r.headers["Set-Cookie"])

    def test_an_untrusted_chain_is_refused(self):
        with self.assertRaises(SSLError):
            self.client(True).list_buckets()

    def test_no_plain_http_unless_asked(self):
        # The harness's --listen is given, so plain HTTP is served there too; a server with TLS
        # alone serves nothing else.
        port = free_port()
        d = tempfile.mkdtemp(prefix="reo-tls-only-")
        log = open(os.path.join(d, "server.log"), "wb")
        p = subprocess.Popen([BIN, "serve", "--data-dir", d, "--device-mib", "32", "--tls-listen", f"127.0.0.1:{port}",
                              "--tls-cert", os.path.join(self.pki, "cert.pem"),
                              "--tls-key", os.path.join(self.pki, "key.pem")], stdout=log, stderr=log)
        try:
            ctx = ssl.create_default_context(cafile=self.ca)
            deadline = time.time() + 60
            while True:
                try:
                    with socket.create_connection(("127.0.0.1", port), timeout=5) as s:
                        with ctx.wrap_socket(s, server_hostname="127.0.0.1") as t:
                            t.sendall(b"GET /_reo/health HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n")
                            self.assertIn(b"200 OK", t.recv(1000))
                    break
                except OSError:
                    self.assertLess(time.time(), deadline, "the TLS-only server did not come up")
                    time.sleep(0.1)
            with open(os.path.join(d, "server.log")) as f:
                text = f.read()
            self.assertIn(f"S3 on https://127.0.0.1:{port}", text)
            self.assertNotIn("S3 on http://", text)
        finally:
            p.terminate()
            p.wait(timeout=60)
            log.close()
            subprocess.run(["rm", "-rf", d])

    def test_a_bad_certificate_file_stops_the_start(self):
        bad = os.path.join(self.pki, "bad.pem")
        with open(bad, "w") as f:
            f.write("not a certificate\n")
        d = tempfile.mkdtemp(prefix="reo-tls-bad-")
        p = subprocess.run([BIN, "serve", "--data-dir", d, "--device-mib", "32", "--tls-listen",
                            f"127.0.0.1:{free_port()}", "--tls-cert", bad,
                            "--tls-key", os.path.join(self.pki, "key.pem")], capture_output=True, text=True, timeout=60)
        subprocess.run(["rm", "-rf", d])
        self.assertNotEqual(p.returncode, 0)
        self.assertIn("--tls-cert", p.stderr)
        self.assertIn("bad.pem", p.stderr)

    def test_an_unfinished_handshake_is_cut_off(self):
        with socket.create_connection(("127.0.0.1", self.tls_port), timeout=60) as s:
            s.sendall(b"\x16\x03\x01")  # the start of a ClientHello, never finished
            start = time.time()
            self.assertEqual(s.recv(100), b"", "the server closes the connection")
            self.assertLess(time.time() - start, 30)


if __name__ == "__main__":
    unittest.main()
