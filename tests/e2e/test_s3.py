"""End-to-end S3 tests with boto3 against a running `reo serve` (started once per module)."""

import datetime
import hashlib
import os
import unittest
import urllib.parse
import urllib.request

from botocore.exceptions import ClientError

from server import METRICS_TOKEN, Server

BIN = os.environ.get("REO_BIN", "target/debug/reo")
srv = None


def setUpModule():
    global srv
    srv = Server(BIN)
    srv.start()


def tearDownModule():
    assert srv.stop() == 0, "reo serve did not exit cleanly on SIGTERM"
    srv.cleanup()


def code(e):
    return e.exception.response["Error"]["Code"]


class S3Test(unittest.TestCase):
    bucket = None

    def setUp(self):
        self.s3 = srv.client()
        type(self).n = getattr(type(self), "n", 0) + 1
        self.bucket = f"b-{self._testMethodName.replace('_', '-')[:40]}-{self.n}"
        self.s3.create_bucket(Bucket=self.bucket)

    def keys(self, **kw):
        r = self.s3.list_objects_v2(Bucket=self.bucket, **kw)
        return [o["Key"] for o in r.get("Contents", [])], [p["Prefix"] for p in r.get("CommonPrefixes", [])]

    def test_buckets(self):
        names = [b["Name"] for b in self.s3.list_buckets()["Buckets"]]
        self.assertIn(self.bucket, names)
        self.s3.head_bucket(Bucket=self.bucket)
        self.s3.put_object(Bucket=self.bucket, Key="x", Body=b"1")
        # Re-creating it: 200 in us-east-1 (its objects stay), 409 elsewhere, as AWS answers.
        self.s3.create_bucket(Bucket=self.bucket)
        self.assertEqual(self.s3.get_object(Bucket=self.bucket, Key="x")["Body"].read(), b"1")
        eu = srv.client(region="eu-west-1")
        with self.assertRaises(ClientError) as e:
            eu.create_bucket(Bucket=self.bucket, CreateBucketConfiguration={"LocationConstraint": "eu-west-1"})
        self.assertEqual(code(e), "BucketAlreadyOwnedByYou")
        with self.assertRaises(ClientError) as e:
            self.s3.delete_bucket(Bucket=self.bucket)
        self.assertEqual(code(e), "BucketNotEmpty")
        self.s3.delete_object(Bucket=self.bucket, Key="x")
        self.s3.delete_bucket(Bucket=self.bucket)
        with self.assertRaises(ClientError) as e:
            self.s3.head_bucket(Bucket=self.bucket)
        self.assertEqual(e.exception.response["ResponseMetadata"]["HTTPStatusCode"], 404)
        with self.assertRaises(ClientError) as e:
            self.s3.list_objects_v2(Bucket="no-such-bucket-here")
        self.assertEqual(code(e), "NoSuchBucket")
        v = self.s3.get_bucket_versioning(Bucket=names[0])
        self.assertNotIn("Status", v)

    def test_put_get_head_delete(self):
        data = os.urandom(3 * 1024 * 1024 + 17)
        r = self.s3.put_object(Bucket=self.bucket, Key="obj", Body=data, ContentType="image/png",
                               Metadata={"color": "blue"})
        self.assertEqual(r["ETag"], '"%s"' % hashlib.md5(data).hexdigest())
        g = self.s3.get_object(Bucket=self.bucket, Key="obj")
        self.assertEqual(g["Body"].read(), data)
        self.assertEqual(g["ContentType"], "image/png")
        self.assertEqual(g["Metadata"], {"color": "blue"})
        h = self.s3.head_object(Bucket=self.bucket, Key="obj")
        self.assertEqual(h["ContentLength"], len(data))
        self.assertEqual(h["ETag"], r["ETag"])
        self.s3.put_object(Bucket=self.bucket, Key="empty", Body=b"")
        self.assertEqual(self.s3.get_object(Bucket=self.bucket, Key="empty")["Body"].read(), b"")
        self.s3.delete_object(Bucket=self.bucket, Key="obj")
        with self.assertRaises(ClientError) as e:
            self.s3.get_object(Bucket=self.bucket, Key="obj")
        self.assertEqual(code(e), "NoSuchKey")
        self.s3.delete_object(Bucket=self.bucket, Key="never-existed")

    def test_puts_after_an_early_answer_on_the_same_connection(self):
        # boto3 sends `Expect: 100-continue` with every PUT; an empty body, or an error before the
        # body is read, is answered at once without a 100. Regression: botocore then parsed the
        # connection's next answer with the early one's status line and the next PUT hung until
        # its read timeout (the gateway now closes such a connection). Retries off, a short read
        # timeout: a hang fails the PUT instead of being retried away.
        s3 = srv.client(read_timeout=10, retries={"total_max_attempts": 1})
        for i in range(3):
            s3.put_object(Bucket=self.bucket, Key=f"empty{i}", Body=b"")
            s3.put_object(Bucket=self.bucket, Key=f"full{i}", Body=b"x" * 1000)
            with self.assertRaises(ClientError) as e:
                s3.put_object(Bucket="no-such-bucket-early", Key="k", Body=b"y" * 100_000)
            self.assertEqual(code(e), "NoSuchBucket")
            s3.put_object(Bucket=self.bucket, Key=f"after-error{i}", Body=b"z" * 1000)
        self.assertEqual(s3.get_object(Bucket=self.bucket, Key="after-error2")["Body"].read(), b"z" * 1000)
        self.assertEqual(s3.get_object(Bucket=self.bucket, Key="empty2")["Body"].read(), b"")

    def test_ranges(self):
        data = bytes(range(256)) * 8192  # 2 MiB: crosses a 1 MiB fragment
        self.s3.put_object(Bucket=self.bucket, Key="r", Body=data)
        for rng, want in [("bytes=0-9", data[:10]), ("bytes=1048570-1048589", data[1048570:1048590]),
                          ("bytes=-5", data[-5:]), ("bytes=2097000-", data[2097000:])]:
            g = self.s3.get_object(Bucket=self.bucket, Key="r", Range=rng)
            self.assertEqual(g["Body"].read(), want, rng)
            self.assertEqual(g["ResponseMetadata"]["HTTPStatusCode"], 206)
        self.assertEqual(g["ContentRange"], f"bytes 2097000-{len(data) - 1}/{len(data)}")
        with self.assertRaises(ClientError) as e:
            self.s3.get_object(Bucket=self.bucket, Key="r", Range="bytes=99999999-")
        self.assertEqual(code(e), "InvalidRange")

    def test_conditionals(self):
        etag = self.s3.put_object(Bucket=self.bucket, Key="c", Body=b"hello")["ETag"]
        self.assertEqual(self.s3.get_object(Bucket=self.bucket, Key="c", IfMatch=etag)["Body"].read(), b"hello")
        with self.assertRaises(ClientError) as e:
            self.s3.get_object(Bucket=self.bucket, Key="c", IfMatch='"0000"')
        self.assertEqual(e.exception.response["ResponseMetadata"]["HTTPStatusCode"], 412)
        with self.assertRaises(ClientError) as e:
            self.s3.get_object(Bucket=self.bucket, Key="c", IfNoneMatch=etag)
        self.assertEqual(e.exception.response["ResponseMetadata"]["HTTPStatusCode"], 304)
        future = datetime.datetime.now(datetime.timezone.utc) + datetime.timedelta(hours=1)
        past = datetime.datetime(2000, 1, 1, tzinfo=datetime.timezone.utc)
        with self.assertRaises(ClientError) as e:
            self.s3.get_object(Bucket=self.bucket, Key="c", IfModifiedSince=future)
        self.assertEqual(e.exception.response["ResponseMetadata"]["HTTPStatusCode"], 304)
        self.s3.get_object(Bucket=self.bucket, Key="c", IfModifiedSince=past)
        with self.assertRaises(ClientError) as e:
            self.s3.get_object(Bucket=self.bucket, Key="c", IfUnmodifiedSince=past)
        self.assertEqual(e.exception.response["ResponseMetadata"]["HTTPStatusCode"], 412)
        with self.assertRaises(ClientError) as e:
            self.s3.head_object(Bucket=self.bucket, Key="c", IfNoneMatch=etag)
        self.assertEqual(e.exception.response["ResponseMetadata"]["HTTPStatusCode"], 304)
        with self.assertRaises(ClientError) as e:
            self.s3.put_object(Bucket=self.bucket, Key="c", Body=b"again", IfNoneMatch="*")
        self.assertEqual(e.exception.response["ResponseMetadata"]["HTTPStatusCode"], 412)
        self.s3.put_object(Bucket=self.bucket, Key="new", Body=b"first", IfNoneMatch="*")

    def test_odd_keys_listed_with_url_encoding(self):
        odd = ["with space", "plus+sign", "percent%41", "unicodé/ñ", "a", "a/b", "dots/../x", "q?&=#"]
        for k in odd:
            self.s3.put_object(Bucket=self.bucket, Key=k, Body=k.encode())
        for k in odd:
            self.assertEqual(self.s3.get_object(Bucket=self.bucket, Key=k)["Body"].read(), k.encode())
        keys, _ = self.keys()  # boto3 sends encoding-type=url and decodes
        self.assertEqual(keys, sorted(odd, key=lambda k: k.encode()))
        v1 = self.s3.list_objects(Bucket=self.bucket, EncodingType="url")
        # Asked explicitly, the encoding is left to the caller: keys arrive percent-encoded.
        self.assertIn("with%20space", [o["Key"] for o in v1["Contents"]])
        self.assertEqual(sorted(urllib.parse.unquote(o["Key"]) for o in v1["Contents"]), sorted(odd))
        versions = self.s3.list_object_versions(Bucket=self.bucket)["Versions"]
        self.assertEqual(sorted(v["Key"] for v in versions), sorted(odd))
        self.assertTrue(all(v["VersionId"] == "null" and v["IsLatest"] for v in versions))

    def test_list_delimiters_and_paging(self):
        for k in ["a", "a/b", "a/c/d", "b", "c/x", "c/y", "d"]:
            self.s3.put_object(Bucket=self.bucket, Key=k, Body=b"")
        self.assertEqual(self.keys(Delimiter="/"), (["a", "b", "d"], ["a/", "c/"]))
        self.assertEqual(self.keys(Delimiter="/", Prefix="a/"), (["a/b"], ["a/c/"]))
        self.assertEqual(len(self.keys(Delimiter="")[0]), 7)
        self.assertEqual(self.keys(StartAfter="b")[0], ["c/x", "c/y", "d"])
        seen, token = [], None
        while True:
            kw = {"MaxKeys": 2, "Delimiter": "/"}
            if token:
                kw["ContinuationToken"] = token
            r = self.s3.list_objects_v2(Bucket=self.bucket, **kw)
            seen += [o["Key"] for o in r.get("Contents", [])] + [p["Prefix"] for p in r.get("CommonPrefixes", [])]
            if not r["IsTruncated"]:
                break
            token = r["NextContinuationToken"]
        self.assertEqual(sorted(seen), ["a", "a/", "b", "c/", "d"])
        pages = self.s3.get_paginator("list_objects").paginate(Bucket=self.bucket, PaginationConfig={"PageSize": 3})
        self.assertEqual(sum(len(p.get("Contents", [])) for p in pages), 7)
        self.s3.delete_objects(Bucket=self.bucket, Delete={"Objects": [{"Key": "a"}, {"Key": "b"}]})
        self.assertEqual(self.keys(Delimiter="/")[0], ["d"])

    def test_multipart(self):
        parts = [os.urandom(5 * 1024 * 1024), os.urandom(1234)]
        up = self.s3.create_multipart_upload(Bucket=self.bucket, Key="mp", ContentType="text/csv")["UploadId"]
        ups = self.s3.list_multipart_uploads(Bucket=self.bucket)["Uploads"]
        self.assertEqual([u["UploadId"] for u in ups], [up])
        etags = [self.s3.upload_part(Bucket=self.bucket, Key="mp", UploadId=up, PartNumber=i + 1, Body=p)["ETag"]
                 for i, p in enumerate(parts)]
        listed = self.s3.list_parts(Bucket=self.bucket, Key="mp", UploadId=up)["Parts"]
        self.assertEqual([p["Size"] for p in listed], [len(p) for p in parts])
        done = {"Parts": [{"ETag": e, "PartNumber": i + 1} for i, e in enumerate(etags)]}
        r = self.s3.complete_multipart_upload(Bucket=self.bucket, Key="mp", UploadId=up, MultipartUpload=done)
        md5s = b"".join(hashlib.md5(p).digest() for p in parts)
        self.assertEqual(r["ETag"], '"%s-2"' % hashlib.md5(md5s).hexdigest())
        again = self.s3.complete_multipart_upload(Bucket=self.bucket, Key="mp", UploadId=up, MultipartUpload=done)
        self.assertEqual(again["ETag"], r["ETag"])
        g = self.s3.get_object(Bucket=self.bucket, Key="mp")
        self.assertEqual(g["Body"].read(), b"".join(parts))
        self.assertEqual(g["ContentType"], "text/csv")
        up2 = self.s3.create_multipart_upload(Bucket=self.bucket, Key="mp2")["UploadId"]
        self.s3.abort_multipart_upload(Bucket=self.bucket, Key="mp2", UploadId=up2)
        with self.assertRaises(ClientError) as e:
            self.s3.upload_part(Bucket=self.bucket, Key="mp2", UploadId=up2, PartNumber=1, Body=b"x")
        self.assertEqual(code(e), "NoSuchUpload")

    def test_copy(self):
        self.s3.put_object(Bucket=self.bucket, Key="src", Body=b"copy me", ContentType="text/plain",
                           Metadata={"k": "v"})
        self.s3.copy_object(Bucket=self.bucket, Key="dst", CopySource={"Bucket": self.bucket, "Key": "src"})
        g = self.s3.get_object(Bucket=self.bucket, Key="dst")
        self.assertEqual((g["Body"].read(), g["ContentType"], g["Metadata"]), (b"copy me", "text/plain", {"k": "v"}))
        self.s3.copy_object(Bucket=self.bucket, Key="dst", CopySource={"Bucket": self.bucket, "Key": "src"},
                            MetadataDirective="REPLACE", ContentType="a/b", Metadata={"n": "1"})
        h = self.s3.head_object(Bucket=self.bucket, Key="dst")
        self.assertEqual((h["ContentType"], h["Metadata"]), ("a/b", {"n": "1"}))

    def test_auth_rejected(self):
        with self.assertRaises(ClientError) as e:
            srv.client(secret="wrong-secret").list_buckets()
        self.assertEqual(code(e), "SignatureDoesNotMatch")
        with self.assertRaises(ClientError) as e:
            srv.client(access="UNKNOWNKEY0000000000").list_buckets()
        self.assertEqual(code(e), "InvalidAccessKeyId")
        with self.assertRaises(urllib.error.HTTPError) as e:
            urllib.request.urlopen(srv.endpoint + "/")
        self.assertEqual(e.exception.code, 403)
        self.assertIn(b"<Code>AccessDenied</Code>", e.exception.read())
        # A client clock 20 minutes slow.
        import botocore.auth
        from unittest import mock
        skewed = datetime.datetime.now(datetime.timezone.utc).replace(tzinfo=None) - datetime.timedelta(minutes=20)
        with mock.patch.object(botocore.auth, "get_current_datetime", return_value=skewed):
            with self.assertRaises(ClientError) as e:
                srv.client().list_buckets()
        self.assertEqual(code(e), "RequestTimeTooSkewed")

    def test_presigned_and_unsigned(self):
        self.s3.put_object(Bucket=self.bucket, Key="p", Body=b"presigned")
        v4 = srv.client(signature_version="s3v4")  # boto3 presigns path-style URLs with SigV2 otherwise
        url = v4.generate_presigned_url("get_object", Params={"Bucket": self.bucket, "Key": "p"}, ExpiresIn=60)
        with urllib.request.urlopen(url) as r:
            self.assertEqual(r.read(), b"presigned")
        req = urllib.request.Request(f"{srv.endpoint}/{self.bucket}/p", data=b"x", method="PUT")
        with self.assertRaises(urllib.error.HTTPError) as e:
            urllib.request.urlopen(req)
        self.assertEqual(e.exception.code, 403)
        self.assertIn(b"<Code>AccessDenied</Code>", e.exception.read())

    def test_checksum_modes_and_key_limits(self):
        old_sdk = srv.client(request_checksum_calculation="when_required",
                             response_checksum_validation="when_required")
        old_sdk.put_object(Bucket=self.bucket, Key="old", Body=b"no checksum")
        self.assertEqual(self.s3.get_object(Bucket=self.bucket, Key="old")["Body"].read(), b"no checksum")
        self.s3.put_object(Bucket=self.bucket, Key="crc", Body=b"x" * 100000, ChecksumAlgorithm="SHA256")
        self.assertEqual(old_sdk.get_object(Bucket=self.bucket, Key="crc")["Body"].read(), b"x" * 100000)
        longest = "k" * 1024
        self.s3.put_object(Bucket=self.bucket, Key=longest, Body=b"ok")
        self.assertEqual(self.keys()[0], ["crc", longest, "old"])
        with self.assertRaises(ClientError) as e:
            self.s3.put_object(Bucket=self.bucket, Key="k" * 1025, Body=b"no")
        self.assertEqual(code(e), "KeyTooLongError")

    def test_reads_during_rewrites_are_consistent(self):
        import threading
        bodies = [os.urandom(100_000), os.urandom(300_000)]
        self.s3.put_object(Bucket=self.bucket, Key="hot", Body=bodies[0])
        stop = threading.Event()

        def writer():
            w, i = srv.client(), 0
            while not stop.is_set():
                w.put_object(Bucket=self.bucket, Key="hot", Body=bodies[i % 2])
                i += 1

        t = threading.Thread(target=writer)
        t.start()
        try:
            for _ in range(40):
                try:
                    g = self.s3.get_object(Bucket=self.bucket, Key="hot")
                except ClientError as e:
                    self.assertEqual(code(e), "SlowDown")
                    continue
                data = g["Body"].read()
                self.assertIn(data, bodies)
                self.assertEqual(g["ETag"], '"%s"' % hashlib.md5(data).hexdigest())
        finally:
            stop.set()
            t.join()

    def test_metrics(self):
        req = urllib.request.Request(srv.endpoint + "/metrics", headers={"Authorization": f"Bearer {METRICS_TOKEN}"})
        with urllib.request.urlopen(req) as r:
            text = r.read().decode()
        self.assertIn("reo_cache_requests_total ", text)
        self.assertIn("reo_gateway_dirty_objects ", text)
        self.assertIn("reo_gateway_flush_lag_seconds ", text)


if __name__ == "__main__":
    unittest.main()
