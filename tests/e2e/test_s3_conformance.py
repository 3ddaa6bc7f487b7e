"""S3 details clients rely on, with boto3 against a running `reo serve`: standard object headers
and checksums are kept (across a restart, copies and multipart uploads) and returned,
server-side encryption is refused rather than silently ignored, a 304 carries its validators,
listing edge cases answer as S3 does (MaxKeys=0, v1 Prefix, empty delimiter, owners, ListBuckets
pages), bucket configurations Reo does not keep read as "none", and partNumber is honoured or
refused."""

import base64
import datetime
import hashlib
import os
import subprocess
import unittest
import zlib
import urllib.error
import urllib.request

import boto3
from botocore.config import Config
from botocore.exceptions import ClientError

from server import ACCESS, SECRET, Server

BIN = os.environ.get("REO_BIN", "target/debug/reo")
srv = None


def setUpModule():
    global srv
    srv = Server(BIN)
    srv.start()


def tearDownModule():
    assert srv.stop() == 0
    srv.cleanup()


class ConformanceTest(unittest.TestCase):
    def setUp(self):
        self.s3 = srv.client()
        self.bucket = "conf-" + self._testMethodName.replace("_", "-")[5:50].strip("-")
        self.s3.create_bucket(Bucket=self.bucket)

    def error(self, call, **kw):
        with self.assertRaises(ClientError) as e:
            call(**kw)
        r = e.exception.response
        return r["ResponseMetadata"]["HTTPStatusCode"], r["Error"]["Code"], r

    HEADERS = {
        "CacheControl": "max-age=600",
        "ContentDisposition": 'attachment; filename="report.pdf"',
        "ContentEncoding": "identity",
        "ContentLanguage": "fr-CA",
        "ContentType": "application/pdf",
        "Expires": datetime.datetime(2033, 12, 1, 16, 0, tzinfo=datetime.timezone.utc),
        "WebsiteRedirectLocation": "/elsewhere",
        "StorageClass": "STANDARD_IA",
    }

    def assert_headers(self, r, **changed):
        want = dict(self.HEADERS, **changed)
        got = {k: r.get(k) for k in want}
        self.assertEqual(got, want)

    def test_standard_headers_and_checksums_are_kept(self):
        b = self.bucket
        body = b"a report" * 1000
        sha = base64.b64encode(hashlib.sha256(body).digest()).decode()
        self.s3.put_object(Bucket=b, Key="doc", Body=body, ChecksumAlgorithm="SHA256", **self.HEADERS)
        self.assert_headers(self.s3.head_object(Bucket=b, Key="doc"))
        self.assert_headers(self.s3.get_object(Bucket=b, Key="doc"))
        # The checksum on request, of the whole object only.
        self.assertNotIn("ChecksumSHA256", self.s3.head_object(Bucket=b, Key="doc"))
        self.assertEqual(self.s3.head_object(Bucket=b, Key="doc", ChecksumMode="ENABLED")["ChecksumSHA256"], sha)
        self.assertEqual(self.s3.get_object(Bucket=b, Key="doc", ChecksumMode="ENABLED")["ChecksumSHA256"], sha)
        ranged = self.s3.get_object(Bucket=b, Key="doc", ChecksumMode="ENABLED", Range="bytes=0-9")
        self.assertNotIn("ChecksumSHA256", ranged)
        # response-* parameters override what a GET answers, not what is stored.
        r = self.s3.get_object(Bucket=b, Key="doc", ResponseContentType="text/plain",
                               ResponseCacheControl="no-store", ResponseContentDisposition="inline")
        self.assertEqual((r["ContentType"], r["CacheControl"], r["ContentDisposition"]),
                         ("text/plain", "no-store", "inline"))
        self.assert_headers(self.s3.head_object(Bucket=b, Key="doc"))
        # A copy keeps them (COPY) or takes the request's (REPLACE); the checksum stays with the bytes.
        self.s3.copy_object(Bucket=b, Key="copy", CopySource=f"{b}/doc")
        self.assert_headers(self.s3.head_object(Bucket=b, Key="copy"))
        self.s3.copy_object(Bucket=b, Key="copy", CopySource=f"{b}/doc", MetadataDirective="REPLACE",
                            CacheControl="no-cache", ContentType="text/x-other")
        r = self.s3.head_object(Bucket=b, Key="copy", ChecksumMode="ENABLED")
        self.assertEqual((r["CacheControl"], r["ContentType"], r.get("ContentLanguage"), r["ChecksumSHA256"]),
                         ("no-cache", "text/x-other", None, sha))
        # A multipart upload's object gets the headers its creation named.
        up = self.s3.create_multipart_upload(Bucket=b, Key="multi", **self.HEADERS)["UploadId"]
        e = self.s3.upload_part(Bucket=b, Key="multi", UploadId=up, PartNumber=1, Body=body)["ETag"]
        self.s3.complete_multipart_upload(Bucket=b, Key="multi", UploadId=up,
                                          MultipartUpload={"Parts": [{"PartNumber": 1, "ETag": e}]})
        self.assert_headers(self.s3.head_object(Bucket=b, Key="multi"))
        # They survive a restart, dirty or flushed.
        srv.stop()
        srv.start()
        self.assert_headers(self.s3.head_object(Bucket=b, Key="doc"))
        self.assertEqual(self.s3.head_object(Bucket=b, Key="doc", ChecksumMode="ENABLED")["ChecksumSHA256"], sha)
        self.assert_headers(self.s3.head_object(Bucket=b, Key="multi"))

    def test_header_rules(self):
        b = self.bucket
        too_much = {"a": "x" * 2000, "b": "y" * 100}
        self.assertEqual(self.error(self.s3.put_object, Bucket=b, Key="k", Body=b"1", Metadata=too_much)[:2],
                         (400, "MetadataTooLarge"))
        self.assertEqual(self.error(self.s3.put_object, Bucket=b, Key="k", Body=b"1", StorageClass="GLACIER")[1],
                         "NotImplemented")
        self.assertEqual(self.error(self.s3.put_object, Bucket=b, Key="k", Body=b"1",
                                    WebsiteRedirectLocation="ftp://x")[1], "InvalidRedirectLocation")
        self.assertEqual(self.error(self.s3.head_object, Bucket=b, Key="k")[0], 404)
        self.s3.put_object(Bucket=b, Key="k", Body=b"1", StorageClass="STANDARD")
        self.assertNotIn("StorageClass", self.s3.head_object(Bucket=b, Key="k"))

    def test_server_side_encryption_is_refused_not_ignored(self):
        b = self.bucket
        key = b"k" * 32
        for extra in ({"ServerSideEncryption": "AES256"},
                      {"ServerSideEncryption": "aws:kms", "SSEKMSKeyId": "some-key"},
                      {"SSECustomerAlgorithm": "AES256", "SSECustomerKey": key}):
            status, code, _ = self.error(self.s3.put_object, Bucket=b, Key="secret", Body=b"plaintext", **extra)
            self.assertEqual((status, code), (501, "NotImplemented"), extra)
            self.assertEqual(self.error(self.s3.head_object, Bucket=b, Key="secret")[0], 404)
            status, code, _ = self.error(self.s3.create_multipart_upload, Bucket=b, Key="secret", **extra)
            self.assertEqual(code, "NotImplemented")
        self.s3.put_object(Bucket=b, Key="plain", Body=b"plaintext")
        status, code, _ = self.error(self.s3.copy_object, Bucket=b, Key="copy", CopySource=f"{b}/plain",
                                     ServerSideEncryption="AES256")
        self.assertEqual(code, "NotImplemented")
        # Reading with an SSE-C key: no object here is encrypted.
        status, code, _ = self.error(self.s3.get_object, Bucket=b, Key="plain", SSECustomerAlgorithm="AES256",
                                     SSECustomerKey=key)
        self.assertEqual((status, code), (400, "InvalidRequest"))
        self.assertEqual(self.error(self.s3.head_object, Bucket=b, Key="plain", SSECustomerAlgorithm="AES256",
                                    SSECustomerKey=key)[0], 400)

    def test_acls_tags_and_object_lock_are_refused_not_ignored(self):
        b = self.bucket
        for extra in ({"ACL": "public-read"}, {"GrantRead": 'id="someone"'}, {"Tagging": "team=storage"},
                      {"ObjectLockMode": "COMPLIANCE",
                       "ObjectLockRetainUntilDate": datetime.datetime(2040, 1, 1, tzinfo=datetime.timezone.utc)},
                      {"ObjectLockLegalHoldStatus": "ON"}):
            status, code, _ = self.error(self.s3.put_object, Bucket=b, Key="k", Body=b"x", **extra)
            self.assertEqual((status, code), (501, "NotImplemented"), extra)
            self.assertEqual(self.error(self.s3.create_multipart_upload, Bucket=b, Key="k", **extra)[1],
                             "NotImplemented")
        self.assertEqual(self.error(self.s3.head_object, Bucket=b, Key="k")[0], 404)
        # The private default, as rclone sends it, is what every object is.
        self.s3.put_object(Bucket=b, Key="k", Body=b"x", ACL="private")
        self.assertEqual(self.error(self.s3.copy_object, Bucket=b, Key="c", CopySource=f"{b}/k",
                                    Tagging="a=b", TaggingDirective="REPLACE")[1], "NotImplemented")
        self.assertEqual(self.error(self.s3.create_bucket, Bucket=f"{b}-public", ACL="public-read")[1],
                         "NotImplemented")
        self.assertEqual(self.error(self.s3.create_bucket, Bucket=f"{b}-locked",
                                    ObjectLockEnabledForBucket=True)[1], "NotImplemented")
        # A location: the region the request was signed for, or refused.
        self.assertEqual(self.error(self.s3.create_bucket, Bucket=f"{b}-eu",
                                    CreateBucketConfiguration={"LocationConstraint": "eu-west-1"})[1],
                         "IllegalLocationConstraintException")
        eu = boto3.client("s3", endpoint_url=srv.endpoint, region_name="eu-west-1", aws_access_key_id=ACCESS,
                          aws_secret_access_key=SECRET, config=Config(s3={"addressing_style": "path"}))
        eu.create_bucket(Bucket=f"{b}-eu", CreateBucketConfiguration={"LocationConstraint": "eu-west-1"})
        self.s3.head_bucket(Bucket=f"{b}-eu")

    def test_not_modified_carries_its_validators(self):
        put = self.s3.put_object(Bucket=self.bucket, Key="k", Body=b"body")
        head = self.s3.head_object(Bucket=self.bucket, Key="k")
        status, code, r = self.error(self.s3.get_object, Bucket=self.bucket, Key="k", IfNoneMatch=put["ETag"])
        self.assertEqual(status, 304)
        headers = r["ResponseMetadata"]["HTTPHeaders"]
        self.assertEqual(headers.get("etag"), put["ETag"])
        self.assertEqual(headers.get("last-modified"), head["ResponseMetadata"]["HTTPHeaders"]["last-modified"])

    def test_listing_edge_cases(self):
        b = self.bucket
        for k in ("a b/1", "a b/2", "c"):
            self.s3.put_object(Bucket=b, Key=k, Body=b"x")
        r = self.s3.list_objects_v2(Bucket=b, MaxKeys=0)
        self.assertEqual((r["IsTruncated"], r["KeyCount"], r.get("Contents")), (False, 0, None))
        r = self.s3.list_objects(Bucket=b, MaxKeys=0)
        self.assertFalse(r["IsTruncated"])
        # A paginator ends.
        pages = list(self.s3.get_paginator("list_objects_v2").paginate(Bucket=b, PaginationConfig={"PageSize": 1}))
        self.assertEqual(sum(len(p.get("Contents", [])) for p in pages), 3)
        # v1 does not encode Prefix in its answer; an empty delimiter is no delimiter and not echoed.
        r = self.s3.list_objects(Bucket=b, Prefix="a b/", EncodingType="url")
        self.assertEqual(r["Prefix"], "a b/")
        self.assertEqual(r["Contents"][0]["Key"], "a%20b/1")  # asked for by the caller: not decoded
        r = self.s3.list_objects_v2(Bucket=b, Delimiter="")
        self.assertNotIn("Delimiter", r)
        self.assertEqual(len(r["Contents"]), 3)
        # Owners: always in v1, on request in v2.
        self.assertEqual(self.s3.list_objects(Bucket=b)["Contents"][0]["Owner"]["ID"], ACCESS)
        self.assertNotIn("Owner", self.s3.list_objects_v2(Bucket=b)["Contents"][0])
        self.assertEqual(self.s3.list_objects_v2(Bucket=b, FetchOwner=True)["Contents"][0]["Owner"]["ID"], ACCESS)

    def test_list_buckets_pages_and_prefix(self):
        names = [f"{self.bucket}-{i}" for i in range(5)]
        for n in names:
            self.s3.create_bucket(Bucket=n)
        seen, token = [], None
        while True:
            kw = {"ContinuationToken": token} if token else {}
            r = self.s3.list_buckets(MaxBuckets=2, Prefix=f"{self.bucket}-", **kw)
            self.assertLessEqual(len(r["Buckets"]), 2)
            seen += [x["Name"] for x in r["Buckets"]]
            token = r.get("ContinuationToken")
            if not token:
                break
        self.assertEqual(seen, names)
        self.assertEqual(r["Owner"]["ID"], ACCESS)

    def test_absent_bucket_configurations_read_as_none(self):
        b = self.bucket
        for call, code in ((self.s3.get_bucket_cors, "NoSuchCORSConfiguration"),
                           (self.s3.get_bucket_lifecycle_configuration, "NoSuchLifecycleConfiguration"),
                           (self.s3.get_bucket_policy, "NoSuchBucketPolicy"),
                           (self.s3.get_bucket_tagging, "NoSuchTagSet"),
                           (self.s3.get_bucket_website, "NoSuchWebsiteConfiguration")):
            self.assertEqual(self.error(call, Bucket=b)[:2], (404, code))
            self.assertEqual(self.error(call, Bucket="no-such-bucket-here")[1], "NoSuchBucket")
        # Setting one is not supported, and says so.
        status, code, _ = self.error(self.s3.put_bucket_cors, Bucket=b, CORSConfiguration={
            "CORSRules": [{"AllowedMethods": ["GET"], "AllowedOrigins": ["*"]}]})
        self.assertEqual((status, code), (501, "NotImplemented"))

    def test_upload_part_copy(self):
        b = self.bucket
        src = os.urandom(7 << 20)
        self.s3.put_object(Bucket=b, Key="src", Body=src)
        etag = self.s3.head_object(Bucket=b, Key="src")["ETag"]
        up = self.s3.create_multipart_upload(Bucket=b, Key="dst")["UploadId"]
        p1 = self.s3.upload_part_copy(Bucket=b, Key="dst", UploadId=up, PartNumber=1, CopySource=f"{b}/src",
                                      CopySourceRange=f"bytes=0-{(5 << 20) - 1}", CopySourceIfMatch=etag)
        p2 = self.s3.upload_part_copy(Bucket=b, Key="dst", UploadId=up, PartNumber=2, CopySource=f"{b}/src")
        p3 = self.s3.upload_part_copy(Bucket=b, Key="dst", UploadId=up, PartNumber=3, CopySource=f"{b}/src",
                                      CopySourceRange=f"bytes={5 << 20}-{len(src) - 1}")
        self.assertEqual(p1["CopyPartResult"]["ETag"], f'"{hashlib.md5(src[:5 << 20]).hexdigest()}"')
        # Conditions and ranges are checked.
        self.assertEqual(self.error(self.s3.upload_part_copy, Bucket=b, Key="dst", UploadId=up, PartNumber=4,
                                    CopySource=f"{b}/src", CopySourceIfNoneMatch=etag)[:2], (412, "PreconditionFailed"))
        self.assertEqual(self.error(self.s3.upload_part_copy, Bucket=b, Key="dst", UploadId=up, PartNumber=4,
                                    CopySource=f"{b}/src", CopySourceRange=f"bytes=0-{len(src)}")[1], "InvalidRange")
        self.assertEqual(self.error(self.s3.upload_part_copy, Bucket=b, Key="dst", UploadId=up, PartNumber=4,
                                    CopySource=f"{b}/src", CopySourceRange="bytes=9-2")[1], "InvalidArgument")
        parts = [{"PartNumber": n, "ETag": p["CopyPartResult"]["ETag"]} for n, p in ((1, p1), (2, p2), (3, p3))]
        self.s3.complete_multipart_upload(Bucket=b, Key="dst", UploadId=up, MultipartUpload={"Parts": parts})
        self.assertEqual(self.s3.get_object(Bucket=b, Key="dst")["Body"].read(), src[:5 << 20] + src + src[5 << 20:])

    def test_aws_cli_copies_a_large_object_between_s3_locations(self):
        # `aws s3 cp s3://… s3://…` above its 8 MiB multipart threshold uses UploadPartCopy.
        b = self.bucket
        src = os.urandom(20 << 20)
        self.s3.put_object(Bucket=b, Key="big", Body=src)
        env = dict(os.environ, AWS_ACCESS_KEY_ID=ACCESS, AWS_SECRET_ACCESS_KEY=SECRET, AWS_DEFAULT_REGION="us-east-1",
                   AWS_CONFIG_FILE="/dev/null", AWS_SHARED_CREDENTIALS_FILE="/dev/null")
        p = subprocess.run(["aws", "--endpoint-url", srv.endpoint, "s3", "cp", f"s3://{b}/big", f"s3://{b}/big-copy"],
                           env=env, capture_output=True, text=True, timeout=300)
        self.assertEqual(p.returncode, 0, p.stderr)
        got = self.s3.get_object(Bucket=b, Key="big-copy")
        self.assertTrue(got["ETag"].endswith('-3"'), got["ETag"])  # it did go through parts
        self.assertEqual(hashlib.sha256(got["Body"].read()).digest(), hashlib.sha256(src).digest())

    def test_request_ids_on_answers_and_errors(self):
        r = self.s3.put_object(Bucket=self.bucket, Key="k", Body=b"x")
        ok_id = r["ResponseMetadata"]["RequestId"]
        self.assertRegex(ok_id, r"^[0-9A-F]{16}$")
        self.assertTrue(r["ResponseMetadata"]["HostId"])
        status, code, err = self.error(self.s3.get_object, Bucket=self.bucket, Key="absent")
        self.assertEqual(code, "NoSuchKey")
        self.assertRegex(err["ResponseMetadata"]["RequestId"], r"^[0-9A-F]{16}$")
        self.assertNotEqual(err["ResponseMetadata"]["RequestId"], ok_id)
        # The error body names it too (botocore reads it from there when the header is absent).
        req = urllib.request.Request(f"{srv.endpoint}/{self.bucket}/absent")  # anonymous: AccessDenied
        with self.assertRaises(urllib.error.HTTPError) as e:
            urllib.request.urlopen(req, timeout=30)
        body = e.exception.read().decode()
        self.assertIn(f"<RequestId>{e.exception.headers['x-amz-request-id']}</RequestId>", body)

    def test_presigned_urls_live_a_week_at_most(self):
        self.s3.put_object(Bucket=self.bucket, Key="k", Body=b"shared")
        get = lambda url: urllib.request.urlopen(url, timeout=30).read()  # noqa: E731
        v4 = srv.client(signature_version="s3v4")  # boto3 presigns path-style URLs with SigV2 otherwise
        week = v4.generate_presigned_url("get_object", Params={"Bucket": self.bucket, "Key": "k"},
                                              ExpiresIn=604800)
        self.assertEqual(get(week), b"shared")
        longer = v4.generate_presigned_url("get_object", Params={"Bucket": self.bucket, "Key": "k"},
                                                ExpiresIn=604801)
        with self.assertRaises(urllib.error.HTTPError) as e:
            get(longer)
        self.assertEqual(e.exception.code, 400)
        self.assertIn("AuthorizationQueryParametersError", e.exception.read().decode())
        with self.assertRaises(urllib.error.HTTPError) as e:
            get(week.replace("X-Amz-Expires=604800", "X-Amz-Expires=-1"))
        self.assertEqual(e.exception.code, 403)

    def test_signature_v2_is_refused(self):
        v2 = srv.client(signature_version="s3")
        status, code, r = self.error(v2.list_objects_v2, Bucket=self.bucket)
        self.assertEqual((status, code), (403, "AccessDenied"))
        self.assertIn("Signature Version 2", r["Error"]["Message"])
        self.assertEqual(self.error(v2.put_object, Bucket=self.bucket, Key="v2", Body=b"x")[1], "AccessDenied")
        self.s3.put_object(Bucket=self.bucket, Key="k", Body=b"x")
        url = self.s3.generate_presigned_url("get_object", Params={"Bucket": self.bucket, "Key": "k"})
        self.assertIn("AWSAccessKeyId=", url)  # boto3's default presign for path-style URLs: SigV2
        with self.assertRaises(urllib.error.HTTPError) as e:
            urllib.request.urlopen(url, timeout=30)
        self.assertEqual(e.exception.code, 403)
        self.assertEqual(self.error(self.s3.head_object, Bucket=self.bucket, Key="v2")[0], 404)

    def test_part_number_of_a_get(self):
        b = self.bucket
        self.s3.put_object(Bucket=b, Key="single", Body=b"whole object")
        self.assertEqual(self.s3.get_object(Bucket=b, Key="single", PartNumber=1)["Body"].read(), b"whole object")
        self.assertEqual(self.error(self.s3.get_object, Bucket=b, Key="single", PartNumber=2)[:2],
                         (416, "InvalidPartNumber"))
        up = self.s3.create_multipart_upload(Bucket=b, Key="multi")["UploadId"]
        e1 = self.s3.upload_part(Bucket=b, Key="multi", UploadId=up, PartNumber=1, Body=b"a" * (5 << 20))["ETag"]
        e2 = self.s3.upload_part(Bucket=b, Key="multi", UploadId=up, PartNumber=2, Body=b"b")["ETag"]
        self.s3.complete_multipart_upload(Bucket=b, Key="multi", UploadId=up, MultipartUpload={
            "Parts": [{"PartNumber": 1, "ETag": e1}, {"PartNumber": 2, "ETag": e2}]})
        r = self.s3.get_object(Bucket=b, Key="multi", PartNumber=2)
        self.assertEqual((r["Body"].read(), r["PartsCount"], r["ContentRange"]), (b"b", 2, f"bytes {5 << 20}-{5 << 20}/{(5 << 20) + 1}"))
        self.assertEqual(self.s3.head_object(Bucket=b, Key="multi", PartNumber=1)["ContentLength"], 5 << 20)
        self.assertEqual(self.error(self.s3.get_object, Bucket=b, Key="multi", PartNumber=3)[:2], (416, "InvalidPartNumber"))
        # An overwrite by a single PUT: the old part boundaries no longer apply.
        self.s3.put_object(Bucket=b, Key="multi", Body=b"now single")
        self.assertEqual(self.s3.get_object(Bucket=b, Key="multi", PartNumber=1)["Body"].read(), b"now single")
        self.assertEqual(self.error(self.s3.get_object, Bucket=b, Key="multi", PartNumber=2)[:2], (416, "InvalidPartNumber"))

    def test_multipart_checksums_and_object_attributes(self):
        b, s3 = self.bucket, self.s3
        parts = [os.urandom(5 << 20), os.urandom(5 << 20), b"tail"]
        sums = [base64.b64encode(hashlib.sha256(p).digest()).decode() for p in parts]
        up = s3.create_multipart_upload(Bucket=b, Key="sum", ChecksumAlgorithm="SHA256")
        self.assertEqual((up["ChecksumAlgorithm"], up["ChecksumType"]), ("SHA256", "COMPOSITE"))
        listed = []
        # The second part is sent without any checksum (boto3 adds a CRC32 unless told not to):
        # the gateway computes the upload's.
        bare = srv.client(request_checksum_calculation="when_required")
        for n, (p, want) in enumerate(zip(parts, sums), 1):
            if n == 2:
                r = bare.upload_part(Bucket=b, Key="sum", UploadId=up["UploadId"], PartNumber=n, Body=p)
            else:
                r = s3.upload_part(Bucket=b, Key="sum", UploadId=up["UploadId"], PartNumber=n, Body=p,
                                   ChecksumSHA256=want)
            self.assertEqual(r["ChecksumSHA256"], want)
            listed.append({"PartNumber": n, "ETag": r["ETag"], "ChecksumSHA256": want})
        self.assertEqual([p["ChecksumSHA256"] for p in s3.list_parts(Bucket=b, Key="sum", UploadId=up["UploadId"])["Parts"]], sums)
        composite = base64.b64encode(hashlib.sha256(b"".join(base64.b64decode(x) for x in sums)).digest()).decode() + "-3"
        wrong = dict(listed[0], ChecksumSHA256=sums[1])
        self.assertEqual(self.error(s3.complete_multipart_upload, Bucket=b, Key="sum", UploadId=up["UploadId"],
                                    MultipartUpload={"Parts": [wrong] + listed[1:]})[1], "InvalidPart")
        self.assertEqual(self.error(s3.complete_multipart_upload, Bucket=b, Key="sum", UploadId=up["UploadId"],
                                    ChecksumSHA256=sums[0] + "-3", MultipartUpload={"Parts": listed})[1], "BadDigest")
        self.assertEqual(self.error(s3.head_object, Bucket=b, Key="sum")[0], 404, "a refused completion wrote")
        r = s3.complete_multipart_upload(Bucket=b, Key="sum", UploadId=up["UploadId"], ChecksumSHA256=composite,
                                         MultipartUpload={"Parts": listed})
        self.assertEqual((r["ChecksumSHA256"], r["ChecksumType"]), (composite, "COMPOSITE"))
        h = s3.head_object(Bucket=b, Key="sum", ChecksumMode="ENABLED")
        self.assertEqual((h["ChecksumSHA256"], h["ChecksumType"]), (composite, "COMPOSITE"))
        g = s3.get_object(Bucket=b, Key="sum", PartNumber=2, ChecksumMode="ENABLED")
        self.assertEqual((g["Body"].read(), g["ChecksumSHA256"]), (parts[1], sums[1]))
        a = s3.get_object_attributes(Bucket=b, Key="sum", MaxParts=2, PartNumberMarker=1,
                                     ObjectAttributes=["ETag", "Checksum", "ObjectParts", "StorageClass", "ObjectSize"])
        self.assertEqual(a["ETag"], r["ETag"].strip('"'))
        self.assertEqual((a["ObjectSize"], a["StorageClass"]), (sum(map(len, parts)), "STANDARD"))
        self.assertEqual(a["Checksum"]["ChecksumSHA256"], composite)
        op = a["ObjectParts"]
        self.assertEqual((op["TotalPartsCount"], op["IsTruncated"]), (3, False))
        self.assertEqual([(p["PartNumber"], p["Size"], p["ChecksumSHA256"]) for p in op["Parts"]],
                         [(2, 5 << 20, sums[1]), (3, 4, sums[2])])
        # A CRC upload asked for FULL_OBJECT: the CRC of the whole object, not of the parts'.
        up = s3.create_multipart_upload(Bucket=b, Key="crc", ChecksumAlgorithm="CRC32", ChecksumType="FULL_OBJECT")
        e = s3.upload_part(Bucket=b, Key="crc", UploadId=up["UploadId"], PartNumber=1, Body=b"hello ",
                           ChecksumAlgorithm="CRC32")["ETag"]
        self.assertEqual(self.error(s3.upload_part, Bucket=b, Key="crc", UploadId=up["UploadId"], PartNumber=2,
                                    Body=b"x", ChecksumAlgorithm="SHA1")[1], "InvalidRequest")
        r = s3.complete_multipart_upload(Bucket=b, Key="crc", UploadId=up["UploadId"],
                                         MultipartUpload={"Parts": [{"PartNumber": 1, "ETag": e}]})
        self.assertEqual(r["ChecksumCRC32"], base64.b64encode(zlib.crc32(b"hello ").to_bytes(4, "big")).decode())
        self.assertEqual(self.error(s3.create_multipart_upload, Bucket=b, Key="x", ChecksumAlgorithm="SHA256",
                                    ChecksumType="FULL_OBJECT")[1], "InvalidRequest")

    def test_conditional_writes_and_completions(self):
        b, s3 = self.bucket, self.s3
        etag = s3.put_object(Bucket=b, Key="cond", Body=b"one", IfNoneMatch="*")["ETag"]
        self.assertEqual(self.error(s3.put_object, Bucket=b, Key="cond", Body=b"x", IfNoneMatch="*")[:2],
                         (412, "PreconditionFailed"))
        s3.put_object(Bucket=b, Key="cond", Body=b"two", IfMatch=etag)
        self.assertEqual(self.error(s3.put_object, Bucket=b, Key="absent", Body=b"x", IfMatch="*")[:2],
                         (404, "NoSuchKey"))

        def complete(key, **cond):
            up = s3.create_multipart_upload(Bucket=b, Key=key)["UploadId"]
            e = s3.upload_part(Bucket=b, Key=key, UploadId=up, PartNumber=1, Body=b"abc")["ETag"]
            return lambda: s3.complete_multipart_upload(Bucket=b, Key=key, UploadId=up, **cond,
                                                        MultipartUpload={"Parts": [{"PartNumber": 1, "ETag": e}]})
        self.assertEqual(self.error(complete("cond", IfNoneMatch="*"))[:2], (412, "PreconditionFailed"))
        self.assertEqual(s3.get_object(Bucket=b, Key="cond")["Body"].read(), b"two", "a refused completion wrote")
        self.assertEqual(self.error(complete("absent", IfMatch="*"))[:2], (404, "NoSuchKey"))
        current = s3.head_object(Bucket=b, Key="cond")["ETag"]
        self.assertEqual(self.error(complete("cond", IfMatch='"0123"'))[:2], (412, "PreconditionFailed"))
        complete("cond", IfMatch=current)()
        self.assertEqual(s3.get_object(Bucket=b, Key="cond")["Body"].read(), b"abc")
        complete("fresh", IfNoneMatch="*")()

    def test_aws_chunked_is_no_content_encoding(self):
        for sent, kept in (("gzip, aws-chunked", "gzip"), ("aws-chunked", None), ("deflate, gzip", "deflate, gzip")):
            self.s3.put_object(Bucket=self.bucket, Key="enc", Body=b"x", ContentEncoding=sent)
            self.assertEqual(self.s3.head_object(Bucket=self.bucket, Key="enc").get("ContentEncoding"), kept, sent)


if __name__ == "__main__":
    unittest.main()
