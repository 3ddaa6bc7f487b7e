"""Payload integrity against a running `reo serve`: a body that does not match a digest its
client sent (Content-MD5, the signed x-amz-content-sha256, an x-amz-checksum-* header or
aws-chunked trailer) is refused with S3's error and leaves nothing behind — no object, no
replaced version, no backend write, no part — while matching digests are accepted and the
checksum is echoed. Requests are built and signed with botocore's SigV4 signer so that the
digests can be wrong on purpose."""

import base64
import hashlib
import os
import unittest
import urllib.error
import urllib.request
import zlib

from botocore.auth import SigV4Auth
from botocore.awsrequest import AWSRequest
from botocore.credentials import Credentials
from botocore.exceptions import ClientError

from reoapi import admin
from server import ACCESS, SECRET, Server

BIN = os.environ.get("REO_BIN", "target/debug/reo")
BUCKET = "integrity"
BODY = b"the bytes the client meant to store " * 300


def b64(b):
    return base64.b64encode(b).decode()


def crc32(b):
    return b64(zlib.crc32(b).to_bytes(4, "big"))


def reflected_crc(poly, width):
    """A reflected CRC with all-ones init and final xor (CRC32C, CRC64NVME), byte-table driven:
    botocore needs its CRT extension for these, which CI does not install."""
    mask = (1 << width) - 1
    table = []
    for i in range(256):
        c = i
        for _ in range(8):
            c = (c >> 1) ^ poly if c & 1 else c >> 1
        table.append(c)

    def digest(data):
        c = mask
        for byte in data:
            c = table[(c ^ byte) & 0xFF] ^ (c >> 8)
        return (c ^ mask).to_bytes(width // 8, "big")
    return digest


CRC32C = reflected_crc(0x82F63B78, 32)
CRC64NVME = reflected_crc(0x9A6C9329AC4BC9B5, 64)
assert CRC32C(b"123456789").hex() == "e3069283" and CRC64NVME(b"123456789").hex() == "ae8b14860a799888"


class IntegrityTest(unittest.TestCase):
    @classmethod
    def setUpClass(cls):
        cls.srv = Server(BIN)
        cls.srv.start()
        cls.s3 = cls.srv.client()
        cls.s3.create_bucket(Bucket=BUCKET)

    @classmethod
    def tearDownClass(cls):
        assert cls.srv.stop() == 0
        cls.srv.cleanup()

    def raw(self, method, path, body, headers, signed_body=None):
        """A SigV4-signed request; x-amz-content-sha256 is that of `signed_body` when given.
        Returns (status, headers, body)."""
        url = self.srv.endpoint + path
        h = dict(headers)
        h.setdefault("x-amz-content-sha256", hashlib.sha256(body if signed_body is None else signed_body).hexdigest())
        req = AWSRequest(method=method, url=url, data=body, headers=h)
        SigV4Auth(Credentials(ACCESS, SECRET), "s3", "us-east-1").add_auth(req)
        r = urllib.request.Request(url, data=body, method=method, headers=dict(req.prepare().headers))
        try:
            with urllib.request.urlopen(r, timeout=60) as resp:
                return resp.status, resp.headers, resp.read()
        except urllib.error.HTTPError as e:
            return e.code, e.headers, e.read()

    def assert_refused(self, got, status, code):
        self.assertEqual((got[0], f"<Code>{code}</Code>" in got[2].decode()), (status, True), got[2])

    def assert_absent(self, key):
        with self.assertRaises(ClientError) as e:
            self.s3.head_object(Bucket=BUCKET, Key=key)
        self.assertEqual(e.exception.response["Error"]["Code"], "404")
        admin(BIN, self.srv, "flush")
        self.assertFalse(any(key in f for _, _, fs in os.walk(self.srv.backend_dir) for f in fs),
                         f"{key} reached the backend")

    def chunked_with_trailer(self, key, data, trailer_value):
        """An aws-chunked PUT (STREAMING-UNSIGNED-PAYLOAD-TRAILER, as the SDKs send over HTTPS)
        whose CRC32 comes in the trailer."""
        body = b"%x\r\n" % len(data) + data + b"\r\n0\r\nx-amz-checksum-crc32:" + trailer_value.encode() + b"\r\n\r\n"
        return self.raw("PUT", f"/{BUCKET}/{key}", body, {
            "Content-Encoding": "aws-chunked", "x-amz-decoded-content-length": str(len(data)),
            "x-amz-trailer": "x-amz-checksum-crc32", "x-amz-content-sha256": "STREAMING-UNSIGNED-PAYLOAD-TRAILER"})

    def test_a_wrong_content_md5_is_refused(self):
        got = self.raw("PUT", f"/{BUCKET}/md5", BODY, {"Content-MD5": b64(hashlib.md5(b"other").digest())})
        self.assert_refused(got, 400, "BadDigest")
        self.assert_absent("md5")
        for bad in ("not-a-digest", ""):
            got = self.raw("PUT", f"/{BUCKET}/md5", BODY, {"Content-MD5": bad})
            self.assert_refused(got, 400, "InvalidDigest")
        self.assert_absent("md5")
        got = self.raw("PUT", f"/{BUCKET}/md5", BODY, {"Content-MD5": b64(hashlib.md5(BODY).digest())})
        self.assertEqual(got[0], 200)
        self.assertEqual(got[1]["ETag"], f'"{hashlib.md5(BODY).hexdigest()}"')

    def test_a_wrong_signed_payload_hash_is_refused(self):
        got = self.raw("PUT", f"/{BUCKET}/sha", BODY, {}, signed_body=b"another body")
        self.assert_refused(got, 400, "XAmzContentSHA256Mismatch")
        self.assert_absent("sha")

    def test_every_flexible_checksum_is_checked(self):
        algos = {
            "crc32": lambda b: zlib.crc32(b).to_bytes(4, "big"),
            "crc32c": CRC32C,
            "crc64nvme": CRC64NVME,
            "sha1": lambda b: hashlib.sha1(b).digest(),
            "sha256": lambda b: hashlib.sha256(b).digest(),
        }
        for name, digest in algos.items():
            key = f"flex-{name}"
            got = self.raw("PUT", f"/{BUCKET}/{key}", BODY, {f"x-amz-checksum-{name}": b64(digest(b"x" + BODY))})
            self.assert_refused(got, 400, "BadDigest")
            self.assertIn(name.upper(), got[2].decode())
            self.assert_absent(key)
            got = self.raw("PUT", f"/{BUCKET}/{key}", BODY, {f"x-amz-checksum-{name}": b64(digest(BODY))})
            self.assertEqual(got[0], 200, got[2])
            self.assertEqual(got[1][f"x-amz-checksum-{name}"], b64(digest(BODY)))
        # As boto3 sends one, with the algorithm named.
        r = self.s3.put_object(Bucket=BUCKET, Key="flex-boto3", Body=BODY, ChecksumAlgorithm="SHA1")
        self.assertEqual(r["ChecksumSHA1"], b64(hashlib.sha1(BODY).digest()))
        two = {"x-amz-checksum-crc32": crc32(BODY), "x-amz-checksum-sha1": b64(hashlib.sha1(BODY).digest())}
        self.assert_refused(self.raw("PUT", f"/{BUCKET}/two", BODY, two), 400, "InvalidRequest")
        self.assert_absent("two")

    def test_a_checksum_in_the_aws_chunked_trailer_is_checked(self):
        data = BODY[:5000]
        self.assert_refused(self.chunked_with_trailer("trailer", data, crc32(b"x" + data)), 400, "BadDigest")
        self.assert_absent("trailer")
        got = self.chunked_with_trailer("trailer", data, crc32(data))
        self.assertEqual(got[0], 200, got[2])
        self.assertEqual(got[1]["x-amz-checksum-crc32"], crc32(data))
        self.assertEqual(self.s3.get_object(Bucket=BUCKET, Key="trailer")["Body"].read(), data)

    def test_a_refused_overwrite_keeps_the_previous_version(self):
        self.s3.put_object(Bucket=BUCKET, Key="keep", Body=b"version one")
        got = self.raw("PUT", f"/{BUCKET}/keep", BODY, {"x-amz-checksum-crc32": crc32(b"damaged")})
        self.assert_refused(got, 400, "BadDigest")
        self.assertEqual(self.s3.get_object(Bucket=BUCKET, Key="keep")["Body"].read(), b"version one")

    def test_a_part_that_does_not_match_is_not_kept(self):
        up = self.s3.create_multipart_upload(Bucket=BUCKET, Key="parts")["UploadId"]
        path = f"/{BUCKET}/parts?partNumber=1&uploadId={up}"
        got = self.raw("PUT", path, BODY, {"Content-MD5": b64(hashlib.md5(b"other").digest())})
        self.assert_refused(got, 400, "BadDigest")
        got = self.raw("PUT", path, BODY, {"x-amz-checksum-sha256": b64(hashlib.sha256(b"other").digest())})
        self.assert_refused(got, 400, "BadDigest")
        self.assertEqual(self.s3.list_parts(Bucket=BUCKET, Key="parts", UploadId=up).get("Parts", []), [])
        r = self.s3.upload_part(Bucket=BUCKET, Key="parts", UploadId=up, PartNumber=1, Body=BODY,
                                ChecksumAlgorithm="SHA256")
        self.assertEqual(r["ChecksumSHA256"], b64(hashlib.sha256(BODY).digest()))
        self.s3.abort_multipart_upload(Bucket=BUCKET, Key="parts", UploadId=up)

    def test_delete_objects_checks_its_digests_and_reads_any_unicode_key(self):
        keys = ["emoji-\U0001F600.txt", "plain.txt", "math-\U0001D400"]
        for k in keys:
            self.s3.put_object(Bucket=BUCKET, Key=k, Body=b"x")
        # How minio-py writes keys outside the Basic Multilingual Plane: as character references.
        objects = "".join(f"<Object><Key>{''.join(c if ord(c) < 0x10000 else f'&#{ord(c)};' for c in k)}</Key></Object>"
                          for k in keys)
        xml = f"<Delete>{objects}</Delete>".encode()
        md5 = {"Content-MD5": b64(hashlib.md5(xml).digest())}
        # A damaged body: refused whole, nothing deleted.
        self.assert_refused(self.raw("POST", f"/{BUCKET}?delete", xml, {"Content-MD5": b64(hashlib.md5(b"x").digest())}),
                            400, "BadDigest")
        self.assert_refused(self.raw("POST", f"/{BUCKET}?delete", xml, md5, signed_body=b"other"),
                            400, "XAmzContentSHA256Mismatch")
        for k in keys:
            self.s3.head_object(Bucket=BUCKET, Key=k)
        status, _, body = self.raw("POST", f"/{BUCKET}?delete", xml, md5)
        self.assertEqual(status, 200, body)
        self.assertEqual(body.decode().count("<Deleted>"), 3, body)
        self.assertIn("emoji-\U0001F600.txt", body.decode())
        for k in keys:
            self.assert_absent(k)
        # boto3's own DeleteObjects (its checksum header) goes the same way.
        self.s3.put_object(Bucket=BUCKET, Key=keys[0], Body=b"x")
        r = self.s3.delete_objects(Bucket=BUCKET, Delete={"Objects": [{"Key": keys[0]}]})
        self.assertEqual([d["Key"] for d in r["Deleted"]], [keys[0]])
        self.assert_absent(keys[0])


if __name__ == "__main__":
    unittest.main()
