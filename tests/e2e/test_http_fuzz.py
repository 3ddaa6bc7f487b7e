"""An HTTP fuzzer against a real `reo serve`: random and malformed requests — mangled request
lines and headers, huge and negative numbers, hostile XML, form-data, chunked and aws-chunked
bodies that lie about their lengths, unsigned and wrongly signed requests, signed requests with
hostile query strings — sent raw over sockets while a correct client writes and reads objects.
Asserted: no answer is a 500 (a request the server cannot handle is refused with a 4xx), the
server never panics or dies, its memory stays bounded, and the correct client loses nothing.
`REO_FUZZ_REQUESTS` sets the number of fuzzed requests (default 3,000)."""

import hashlib
import os
import random
import socket
import threading
import time
import unittest

from botocore.auth import S3SigV4Auth
from botocore.awsrequest import AWSRequest
from botocore.credentials import Credentials

from server import ACCESS, SECRET, Server

BIN = os.environ.get("REO_BIN", "target/debug/reo")
REQUESTS = int(os.environ.get("REO_FUZZ_REQUESTS", "3000"))

NUMBERS = ["-1", "0", "1", "18446744073709551615", "18446744073709551616", "99999999999999999999999",
           "-9223372036854775808", "1e9", "0x10", " 7", "", "NaN"]
PATHS = ["/", "/fuzz", "/fuzz/", "/fuzz/key", "/fuzz/" + "k" * 2000, "/fuzz/%ZZ", "/fuzz/../../etc/passwd",
         "/_reo/admin/status", "/_reo/hints", "/_reo/query", "/metrics", "/fuzz/a%00b", "//", "/FUZZ/x",
         "/fuzz/\u00e9\U0001F600"]
QUERIES = ["", "?delete", "?uploads", "?partNumber=", "?partNumber=-1&uploadId=x", "?list-type=2&max-keys=-5",
           "?max-keys=99999999999999", "?attributes", "?uploadId=../../x&partNumber=1", "?acl", "?versioning",
           "?prefix=%FF%FE&delimiter=%00", "?continuation-token=zz", "?X-Amz-Expires=-1&X-Amz-Signature=00",
           "?" + "a=b&" * 500]
METHODS = ["GET", "PUT", "POST", "DELETE", "HEAD", "OPTIONS", "PATCH", "BREW", "G\x00T"]
HEADERS = ["Content-Length", "Content-MD5", "x-amz-content-sha256", "x-amz-decoded-content-length", "Range",
           "x-amz-checksum-crc32", "x-amz-checksum-sha256", "x-amz-trailer", "Transfer-Encoding", "Expect",
           "Content-Encoding", "x-amz-copy-source", "x-amz-copy-source-range", "x-amz-meta-a", "If-Match",
           "x-amz-date", "Authorization", "x-amz-object-attributes", "x-amz-mp-object-size", "Content-Type"]
XML = [b"<Delete><Object><Key>" + b"A" * 5000 + b"</Key></Object></Delete>",
       b"<Delete>" + b"<Object><Key>k</Key></Object>" * 1500 + b"</Delete>",
       b"<!DOCTYPE x [<!ENTITY a \"aaaaaaaaaa\"><!ENTITY b \"&a;&a;&a;&a;&a;&a;\">]><Delete><Object><Key>&b;</Key></Object></Delete>",
       b"<Delete><Object><Key>&#0;&#xD800;&#1114112;</Key></Object></Delete>",
       b"<CompleteMultipartUpload><Part><PartNumber>-1</PartNumber><ETag>x</ETag></Part></CompleteMultipartUpload>",
       b"<" * 10000, b"\xff\xfe<x/>", b""]


def signed_headers(srv, method, path_query, body, extra):
    url = srv.endpoint + path_query
    req = AWSRequest(method=method, url=url, data=body, headers=dict(extra))
    S3SigV4Auth(Credentials(ACCESS, SECRET), "s3", "us-east-1").add_auth(req)
    return dict(req.headers)


def random_request(rng, srv):
    method = rng.choice(METHODS)
    path = rng.choice(PATHS) + rng.choice(QUERIES)
    body = rng.choice([b"", os.urandom(rng.randint(0, 4096)), rng.choice(XML),
                       b"--b\r\nContent-Disposition: form-data; name=\"file\"\r\n\r\n" + b"x" * 1000 + b"\r\n--b--\r\n",
                       b"5;chunk-signature=00\r\nhello\r\n0\r\n\r\n", b"ffffffff\r\nabc\r\n"])
    headers = {h: rng.choice(NUMBERS + ["garbage", "\u00ff", "a" * 9000, "bytes=5-1", "chunked", "100-continue",
                                        "aws-chunked", "STREAMING-AWS4-HMAC-SHA256-PAYLOAD", "UNSIGNED-PAYLOAD",
                                        "x-amz-checksum-crc32", "fuzz/key", "multipart/form-data; boundary=b"])
               for h in rng.sample(HEADERS, rng.randint(0, 6))}
    if rng.random() < 0.5:  # signed, so the request gets past authentication
        try:
            safe = {k: v for k, v in headers.items() if k not in ("Authorization", "x-amz-date") and v.isascii()}
            headers = {**headers, **signed_headers(srv, method if method.isalpha() else "GET", path
                                                   if path.isascii() else "/fuzz", body, safe)}
        except Exception:
            pass
    line = f"{method} {path} HTTP/1.1\r\n".encode("utf-8", "surrogateescape")
    if rng.random() < 0.05:
        line = rng.choice([b"GET\r\n", b"GET / HTTP/9.9\r\n", b"\x00\x01\x02 / HTTP/1.1\r\n", b" / HTTP/1.1\r\n"])
    head = b"".join(f"{k}: {v}\r\n".encode("utf-8", "surrogateescape") for k, v in headers.items()
                    if k.lower() not in ("host",))
    if "Content-Length" not in headers and rng.random() < 0.8:
        head += f"Content-Length: {len(body)}\r\n".encode()
    return line + head + f"Host: 127.0.0.1:{srv.port}\r\nConnection: close\r\n\r\n".encode() + body


def status_of(raw):
    first = raw.split(b"\r\n", 1)[0].split()
    return int(first[1]) if len(first) > 1 and first[1].isdigit() else None


def rss_kib(pid):
    with open(f"/proc/{pid}/status") as f:
        for line in f:
            if line.startswith("VmRSS:"):
                return int(line.split()[1])
    return 0


class HttpFuzzTest(unittest.TestCase):
    def test_random_and_malformed_requests(self):
        srv = Server(BIN, device_mib=64, extra=[])
        srv.start()
        self.addCleanup(srv.cleanup)
        s3 = srv.client()
        s3.create_bucket(Bucket="fuzz")
        s3.create_bucket(Bucket="good")
        stop, lost, written = threading.Event(), [], {}

        def correct_client():
            i = 0
            while not stop.is_set():
                body = os.urandom(random.randint(1, 300_000))
                key = f"k{i % 40}"
                try:
                    s3.put_object(Bucket="good", Key=key, Body=body)
                    written[key] = hashlib.md5(body).hexdigest()
                    got = s3.get_object(Bucket="good", Key=key)["Body"].read()
                    if hashlib.md5(got).hexdigest() != written[key]:
                        lost.append(key)
                except Exception as e:  # a refusal is not a loss; a wrong read is
                    if "SlowDown" not in str(e):
                        lost.append(f"{key}: {e}")
                i += 1

        t = threading.Thread(target=correct_client)
        t.start()
        rng = random.Random(int(os.environ.get("REO_FUZZ_SEED", "1729")))
        statuses, peak = {}, 0
        try:
            for n in range(REQUESTS):
                raw = random_request(rng, srv)
                try:
                    with socket.create_connection(("127.0.0.1", srv.port), timeout=30) as c:
                        c.sendall(raw)
                        c.shutdown(socket.SHUT_WR)
                        answer = b""
                        while len(answer) < 65536:
                            piece = c.recv(65536)
                            if not piece:
                                break
                            answer += piece
                except OSError:  # the server closed the connection on a request it refused
                    answer = b""
                status = status_of(answer)
                statuses[status] = statuses.get(status, 0) + 1
                self.assertNotEqual(status, 500, (raw[:300], answer[:500]))
                self.assertIsNone(srv.proc.poll(), f"the server died on request {n}: {raw[:300]!r}")
                if n % 100 == 0:
                    peak = max(peak, rss_kib(srv.proc.pid))
        finally:
            stop.set()
            t.join()
        peak = max(peak, rss_kib(srv.proc.pid))
        print(f"\n  {REQUESTS} fuzzed requests: statuses {dict(sorted(statuses.items(), key=str))}; "
              f"peak RSS {peak // 1024} MiB; correct client wrote {len(written)} keys")
        self.assertEqual(lost, [])
        for key, md5 in written.items():
            self.assertEqual(hashlib.md5(s3.get_object(Bucket="good", Key=key)["Body"].read()).hexdigest(), md5)
        self.assertLess(peak, 1 << 20, "RSS above 1 GiB")
        self.assertEqual(srv.stop(), 0)
        with open(os.path.join(srv.data_dir, "server.log")) as f:
            self.assertNotIn("panicked", f.read())


if __name__ == "__main__":
    unittest.main()
