"""The S3 backend end to end: a real moto_server as the backend store, `reo serve` in front of it
(configured by reo.toml's [backend] section, or by `--backend s3+http://…`), boto3 against both.
Write-back PUTs reach moto after the flush with content type, user metadata and ETag; objects put
directly into moto are GET misses served through the cache (whole and ranged); listings, deletes
and bucket operations pass through; backend hints are forwarded; while moto is down writes are
kept on flash and flushed once it is back; and while another writer rewrites objects in moto,
every answer through the gateway is one whole version."""

import base64
import hashlib
import os
import random
import shutil
import signal
import subprocess
import sys
import threading
import time
import unittest
import urllib.request

import boto3
from botocore.config import Config
from botocore.exceptions import ClientError

from reoapi import admin, call, hint, metric, wait_for
from server import Server, free_port

BIN = os.environ.get("REO_BIN", "target/debug/reo")
MOTO_KEY, MOTO_SECRET = "motokey", "motosecret"


class Moto:
    """A moto_server on a free loopback port."""

    def __init__(self, port=None):
        self.port = port or free_port()
        self.proc = None

    @property
    def endpoint(self):
        return f"http://127.0.0.1:{self.port}"

    def start(self):
        exe = shutil.which("moto_server")
        cmd = [exe] if exe else [sys.executable, "-m", "moto.server"]
        self.proc = subprocess.Popen(cmd + ["-H", "127.0.0.1", "-p", str(self.port)],
                                     stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        deadline = time.time() + 60
        while time.time() < deadline:
            if self.proc.poll() is not None:
                raise RuntimeError("moto_server exited; install it with: python3 -m pip install 'moto[server]'")
            try:
                with urllib.request.urlopen(self.endpoint + "/moto-api/", timeout=1):
                    return
            except OSError:
                time.sleep(0.1)
        raise RuntimeError("moto_server did not answer within 60 s")

    def stop(self):
        if self.proc and self.proc.poll() is None:
            self.proc.send_signal(signal.SIGTERM)
            self.proc.wait(timeout=30)

    def client(self):
        return boto3.client("s3", endpoint_url=self.endpoint, region_name="us-east-1",
                            aws_access_key_id=MOTO_KEY, aws_secret_access_key=MOTO_SECRET,
                            config=Config(s3={"addressing_style": "path"}, retries={"max_attempts": 1}))


def reo_over(moto, flag=False, policies=(), cache=""):
    """A reo serve whose backend is `moto`, configured by reo.toml (or the --backend flag), with
    the write `policies` given (`scope=policy`) and `cache`, lines of reo.toml's [cache] section."""
    srv = Server(BIN, device_mib=32)
    if flag:
        srv.extra = ["--backend", f"s3+http://127.0.0.1:{moto.port}"]
        os.environ["AWS_ACCESS_KEY_ID"], os.environ["AWS_SECRET_ACCESS_KEY"] = MOTO_KEY, MOTO_SECRET
    else:
        cfg = os.path.join(srv.data_dir, "reo.toml")
        with open(cfg, "w") as f:
            f.write(f'[backend]\nkind = "s3"\nendpoint = "{moto.endpoint}"\nallow_http = true\n'
                    f'region = "us-east-1"\naccess_key_id = "{MOTO_KEY}"\nsecret_access_key = "{MOTO_SECRET}"\n')
            if cache:
                f.write(f"[cache]\n{cache}\n")
        srv.extra = ["--config", cfg]
    for p in policies:
        srv.extra += ["--write-policy", p]
    srv.start()
    return srv


def code(e):
    return e.exception.response["Error"]["Code"]


moto = srv = None


def setUpModule():
    global moto, srv
    moto = Moto()
    moto.start()
    srv = reo_over(moto)


def tearDownModule():
    rc = srv.stop()
    srv.cleanup()
    moto.stop()
    assert rc == 0, rc


class S3BackendTest(unittest.TestCase):
    @classmethod
    def setUpClass(cls):
        srv.client().create_bucket(Bucket="wbk")

    def setUp(self):
        self.s3 = srv.client()
        self.moto = moto.client()

    def test_write_back_reaches_moto_with_metadata(self):
        data = os.urandom(300_000)
        put = self.s3.put_object(Bucket="wbk", Key="docs/a.bin", Body=data, ContentType="text/x-reo",
                                 Metadata={"colour": "blue"})
        admin(BIN, srv, "flush")
        got = self.moto.get_object(Bucket="wbk", Key="docs/a.bin")
        self.assertEqual(got["Body"].read(), data)
        self.assertEqual(got["ContentType"], "text/x-reo")
        self.assertEqual(got["Metadata"]["colour"], "blue")
        self.assertEqual(got["Metadata"]["reo-etag"], put["ETag"].strip('"'))
        head = self.s3.head_object(Bucket="wbk", Key="docs/a.bin")
        self.assertEqual((head["ETag"], head["ContentType"], head["Metadata"]), (put["ETag"], "text/x-reo", {"colour": "blue"}))

    def test_write_backs_carry_the_bytes_sha256(self):
        # What the gateway sends the store, seen through a recording proxy: every upload carries
        # x-amz-checksum-sha256 of its bytes, for the store to check (moto does not). The flusher
        # streams an object over 8 MiB as a multipart upload of 8 MiB parts, each part carrying
        # its own bytes' checksum.
        from types import SimpleNamespace
        from tcpproxy import Proxy
        proxy = Proxy(moto.port)
        proxy.record = True
        other = reo_over(SimpleNamespace(endpoint=f"http://127.0.0.1:{proxy.port}", port=proxy.port))
        try:
            s3 = other.client()
            s3.create_bucket(Bucket="sums")
            small, large = os.urandom(200_000), os.urandom(20 << 20)
            s3.put_object(Bucket="sums", Key="small", Body=small)
            s3.put_object(Bucket="sums", Key="large", Body=large)
            admin(BIN, other, "flush")
            sent = bytes(proxy.sent).lower()
            part = 8 << 20
            pieces = [("a small PUT", small)] + [(f"part {i // part + 1} of a large PUT", large[i:i + part])
                                                 for i in range(0, len(large), part)]
            for what, body in pieces:
                want = base64.b64encode(hashlib.sha256(body).digest()).lower()
                self.assertTrue(b"x-amz-checksum-sha256: " + want in sent, what)
        finally:
            self.assertEqual(other.stop(), 0)
            other.cleanup()
            proxy.close()

    def test_a_listing_page_asks_the_store_for_about_a_page(self):
        # 3,000 keys under one prefix and one more beside it, put straight into moto. A page of
        # one common prefix asks moto for two small pages (the group, then past it), not for the
        # whole bucket (which takes four of its 1,000-key pages).
        from concurrent.futures import ThreadPoolExecutor
        from types import SimpleNamespace
        from tcpproxy import Proxy
        self.moto.create_bucket(Bucket="many")
        with ThreadPoolExecutor(8) as pool:
            list(pool.map(lambda i: moto.client().put_object(Bucket="many", Key=f"a/{i:05}", Body=b""), range(3000)))
        self.moto.put_object(Bucket="many", Key="b", Body=b"")
        proxy = Proxy(moto.port)
        other = reo_over(SimpleNamespace(endpoint=f"http://127.0.0.1:{proxy.port}", port=proxy.port))
        try:
            s3 = other.client()
            proxy.record = True
            page = s3.list_objects_v2(Bucket="many", Delimiter="/", MaxKeys=1)
            self.assertEqual([p["Prefix"] for p in page["CommonPrefixes"]], ["a/"])
            self.assertTrue(page["IsTruncated"])
            asked = bytes(proxy.sent).count(b"list-type=2")
            self.assertLessEqual(asked, 2, f"{asked} listings of the store for one page")
            rest = s3.list_objects_v2(Bucket="many", Delimiter="/", ContinuationToken=page["NextContinuationToken"])
            self.assertEqual([o["Key"] for o in rest["Contents"]], ["b"])
            self.assertFalse(rest["IsTruncated"])
        finally:
            self.assertEqual(other.stop(), 0)
            other.cleanup()
            proxy.close()

    def test_miss_from_moto_whole_and_ranged(self):
        data = os.urandom(200_000)
        mput = self.moto.put_object(Bucket="wbk", Key="direct/x", Body=data, ContentType="image/png",
                                    Metadata={"k": "v"})
        reads = metric(srv, "reo_gateway_backend_reads_total")
        part = self.s3.get_object(Bucket="wbk", Key="direct/x", Range="bytes=70000-70099")
        self.assertEqual(part["Body"].read(), data[70000:70100])
        self.assertEqual(part["ContentRange"], f"bytes 70000-70099/{len(data)}")
        got = self.s3.get_object(Bucket="wbk", Key="direct/x")
        self.assertEqual(got["Body"].read(), data)
        self.assertEqual((got["ETag"], got["ContentType"], got["Metadata"]), (mput["ETag"], "image/png", {"k": "v"}))
        self.assertGreater(metric(srv, "reo_gateway_backend_reads_total"), reads, "the miss did not read moto")
        with self.assertRaises(ClientError) as e:
            self.s3.get_object(Bucket="wbk", Key="direct/none")
        self.assertEqual(code(e), "NoSuchKey")

    def test_copy_and_multipart_reach_moto(self):
        src = os.urandom(70_000)
        self.moto.put_object(Bucket="wbk", Key="cp/src", Body=src, ContentType="a/b", Metadata={"m": "1"})
        self.s3.copy_object(Bucket="wbk", Key="cp/dst", CopySource={"Bucket": "wbk", "Key": "cp/src"})
        up = self.s3.create_multipart_upload(Bucket="wbk", Key="cp/multi", ContentType="c/d", Metadata={"n": "2"})
        parts = [os.urandom(5 << 20), os.urandom(1000)]
        etags = [self.s3.upload_part(Bucket="wbk", Key="cp/multi", UploadId=up["UploadId"], PartNumber=i + 1,
                                     Body=p)["ETag"] for i, p in enumerate(parts)]
        done = self.s3.complete_multipart_upload(
            Bucket="wbk", Key="cp/multi", UploadId=up["UploadId"],
            MultipartUpload={"Parts": [{"ETag": e, "PartNumber": i + 1} for i, e in enumerate(etags)]})
        self.assertTrue(done["ETag"].strip('"').endswith("-2"))
        admin(BIN, srv, "flush")
        dst = self.moto.get_object(Bucket="wbk", Key="cp/dst")
        self.assertEqual((dst["Body"].read(), dst["ContentType"], dst["Metadata"]["m"]), (src, "a/b", "1"))
        multi = self.moto.get_object(Bucket="wbk", Key="cp/multi")
        self.assertEqual(multi["Body"].read(), b"".join(parts))
        self.assertEqual((multi["ContentType"], multi["Metadata"]["n"]), ("c/d", "2"))
        # The gateway's multipart ETag is what the store keeps for it, so it survives the flush.
        self.assertEqual(multi["Metadata"]["reo-etag"], done["ETag"].strip('"'))
        self.assertEqual(self.s3.head_object(Bucket="wbk", Key="cp/multi")["ETag"], done["ETag"])

    def test_list_and_delete_pass_through(self):
        self.moto.put_object(Bucket="wbk", Key="l/m1", Body=b"1")
        self.s3.put_object(Bucket="wbk", Key="l/r1", Body=b"2")
        self.s3.put_object(Bucket="wbk", Key="l/sub/r2", Body=b"3")
        page = self.s3.list_objects_v2(Bucket="wbk", Prefix="l/", Delimiter="/")
        self.assertEqual([o["Key"] for o in page["Contents"]], ["l/m1", "l/r1"])
        self.assertEqual([p["Prefix"] for p in page["CommonPrefixes"]], ["l/sub/"])
        admin(BIN, srv, "flush")
        keys = [o["Key"] for o in self.moto.list_objects_v2(Bucket="wbk", Prefix="l/")["Contents"]]
        self.assertEqual(keys, ["l/m1", "l/r1", "l/sub/r2"])
        for k in keys:
            self.s3.delete_object(Bucket="wbk", Key=k)
        # Write-back deletes reach the store with the flusher (a flush waits for them).
        admin(BIN, srv, "flush")
        self.assertEqual(self.moto.list_objects_v2(Bucket="wbk", Prefix="l/")["KeyCount"], 0)
        with self.assertRaises(ClientError) as e:
            self.s3.head_object(Bucket="wbk", Key="l/m1")
        self.assertEqual(e.exception.response["ResponseMetadata"]["HTTPStatusCode"], 404)

    def test_keys_the_store_cannot_hold_are_refused_before_the_ack(self):
        dirty = metric(srv, "reo_gateway_dirty_objects")
        for key in ("a//b", "/lead", "trail/"):
            with self.assertRaises(ClientError) as e:
                self.s3.put_object(Bucket="wbk", Key=key, Body=b"x")
            self.assertEqual(code(e), "InvalidArgument", key)
            self.assertIn("S3 backend cannot store", e.exception.response["Error"]["Message"])
        self.assertLessEqual(metric(srv, "reo_gateway_dirty_objects"), dirty, "a refused write was kept")

    def test_bucket_operations_pass_through(self):
        self.s3.create_bucket(Bucket="made-by-reo")
        self.moto.head_bucket(Bucket="made-by-reo")
        self.moto.create_bucket(Bucket="made-in-moto")
        names = [b["Name"] for b in self.s3.list_buckets()["Buckets"]]
        self.assertIn("made-by-reo", names)
        self.assertIn("made-in-moto", names)
        self.s3.head_bucket(Bucket="made-in-moto")
        # Creating an existing bucket answers what the store answers (us-east-1: 200, as AWS does).
        outcome = []
        for client in (self.moto, self.s3):
            try:
                client.create_bucket(Bucket="made-in-moto")
                outcome.append("ok")
            except ClientError as e:
                outcome.append(e.response["Error"]["Code"])
        self.assertEqual(outcome[0], outcome[1])
        self.moto.put_object(Bucket="made-in-moto", Key="x", Body=b"x")
        with self.assertRaises(ClientError) as e:
            self.s3.delete_bucket(Bucket="made-in-moto")
        self.assertEqual(code(e), "BucketNotEmpty")
        self.s3.delete_bucket(Bucket="made-by-reo")
        with self.assertRaises(ClientError) as e:
            self.moto.head_bucket(Bucket="made-by-reo")
        self.assertEqual(e.exception.response["ResponseMetadata"]["HTTPStatusCode"], 404)
        with self.assertRaises(ClientError) as e:
            self.s3.put_object(Bucket="no-such-bucket", Key="k", Body=b"x")
        self.assertEqual(code(e), "NoSuchBucket")

    def test_backend_hints_are_forwarded(self):
        self.moto.put_object(Bucket="wbk", Key="h/obj", Body=b"h" * 1000)
        now = time.time()
        h = hint("wbk", "h/obj", "prefetch", now - 1, now + 600, target="backend")
        status, body = call(srv, "POST", "/_reo/hints", body=h)
        self.assertEqual(status, 200, body)
        hid = body["request_id"]
        missing = hint("wbk", "h/none", "prefetch", now - 1, now + 600, target="backend")
        mid = call(srv, "POST", "/_reo/hints", body=missing)[1]["request_id"]

        def result(i):
            hs = call(srv, "GET", "/_reo/hints")[1]
            hs = hs["hints"] if isinstance(hs, dict) else hs
            return next((x.get("backend_result") for x in hs if x["request_id"] == i), None)

        self.assertEqual(wait_for(lambda: result(hid), "the backend hint"),
                         "checked it exists (S3 has no read-ahead to request) on 1 objects, 1000 bytes")
        self.assertEqual(wait_for(lambda: result(mid), "the failing hint"), 'error: key "h/none" does not exist')


class StreamedBackendWritesTest(unittest.TestCase):
    """Write-through and write-around bodies stream into the store as they arrive: one that ends
    within a part is one PUT with the body's MD5 as its ETag; a larger one is a multipart upload,
    begun before its MD5 is known, whose ETag is the store's own `md5(part md5s)-N` unless the
    client sent Content-MD5. Whatever it is, the client, the gateway and the store agree on it."""

    @classmethod
    def setUpClass(cls):
        cls.srv = reo_over(moto, policies=["swr/through/=write-through", "swr/around/=write-around"])
        cls.srv.client().create_bucket(Bucket="swr")

    @classmethod
    def tearDownClass(cls):
        rc = cls.srv.stop()
        cls.srv.cleanup()
        assert rc == 0, rc

    def test_bodies_stream_into_the_store_with_one_etag_everywhere(self):
        import base64
        import hashlib
        s3, store = self.srv.client(), moto.client()
        big, small = os.urandom((20 << 20) + 1234), os.urandom(100_000)
        for mode in ("through", "around"):
            for name, body, md5_header in (("big", big, False), ("big-md5", big, True), ("small", small, False)):
                key = f"{mode}/{name}"
                kw = {"ContentMD5": base64.b64encode(hashlib.md5(body).digest()).decode()} if md5_header else {}
                etag = s3.put_object(Bucket="swr", Key=key, Body=body, ContentType="x/y",
                                     Metadata={"k": "v"}, **kw)["ETag"]
                if body is big and not md5_header:
                    self.assertTrue(etag.strip('"').endswith("-3"), f"{key}: {etag}")
                else:
                    self.assertEqual(etag, f'"{hashlib.md5(body).hexdigest()}"', key)
                # In the store at once, with its metadata, before any flush.
                held = store.get_object(Bucket="swr", Key=key)
                self.assertEqual((held["Body"].read() == body, held["ContentType"], held["Metadata"].get("k")),
                                 (True, "x/y", "v"), key)
                head = s3.head_object(Bucket="swr", Key=key)
                self.assertEqual((head["ETag"], head["ContentLength"]), (etag, len(body)), key)
                kept = store.head_object(Bucket="swr", Key=key)
                self.assertEqual(kept["Metadata"].get("reo-etag") or kept["ETag"].strip('"'), etag.strip('"'), key)
                self.assertEqual(s3.get_object(Bucket="swr", Key=key)["Body"].read(), body, key)
        # Nothing is left half-uploaded in the store.
        self.assertFalse(store.list_multipart_uploads(Bucket="swr").get("Uploads"))


class BackendDownTest(unittest.TestCase):
    """Moto stops: write-back PUTs are still acknowledged and stay dirty; once a store answers
    again on the same port, the flusher writes them."""

    def test_writes_wait_on_flash_while_the_backend_is_down(self):
        m = Moto()
        m.start()
        r = reo_over(m, flag=True)
        try:
            s3 = r.client()
            s3.create_bucket(Bucket="down")
            m.stop()
            data = os.urandom(50_000)
            s3.put_object(Bucket="down", Key="kept", Body=data)
            self.assertEqual(s3.get_object(Bucket="down", Key="kept")["Body"].read(), data)
            wait_for(lambda: metric(r, "reo_gateway_flush_errors_total") > 0, "a failed flush")
            self.assertGreater(metric(r, "reo_gateway_dirty_objects"), 0)
            m2 = Moto(port=m.port)  # an empty store on the same address
            m2.start()
            try:
                m2.client().create_bucket(Bucket="down")
                wait_for(lambda: metric(r, "reo_gateway_dirty_objects") == 0, "the flush after the outage", timeout=60)
                self.assertEqual(m2.client().get_object(Bucket="down", Key="kept")["Body"].read(), data)
            finally:
                m2.stop()
        finally:
            rc = r.stop()
            r.cleanup()
            m.stop()
        self.assertEqual(rc, 0)


class AnotherWriterTest(unittest.TestCase):
    """Another writer rewrites objects in moto behind the gateway while clients read them through
    it, with every hit revalidated (so copies are dropped and refilled all the time) and the memory
    tier off (every hit from flash, the large objects read a fragment window at a time): every
    answer is one version, whole — its body's MD5 is the ETag it was sent under."""

    SECS = 15

    def test_every_answer_is_one_version_while_another_writer_rewrites(self):
        r = reo_over(moto, cache='revalidate_after = "0s"\nmemory = "0"')
        try:
            s3, behind = r.client(), moto.client()
            s3.create_bucket(Bucket="other")
            # One-fragment objects and objects of three fragments (the gateway's are 1 MiB).
            sizes = {f"s{i}": 1000 + 700 * i for i in range(4)} | {f"l{i}": (5 << 19) + 4099 * i for i in range(2)}
            for k, n in sizes.items():
                behind.put_object(Bucket="other", Key=k, Body=os.urandom(n))
            stop = time.time() + self.SECS
            lock = threading.Lock()
            seen, wrong, cut, reads = {}, [], [], [0]

            def writer():
                rng = random.Random(1)
                while time.time() < stop:
                    k = rng.choice(sorted(sizes))
                    behind.put_object(Bucket="other", Key=k, Body=os.urandom(sizes[k]))

            def reader(i):
                rng, c = random.Random(100 + i), r.client(retries={"max_attempts": 1})
                while time.time() < stop:
                    k = rng.choice(sorted(sizes))
                    try:
                        got = c.get_object(Bucket="other", Key=k)
                        body = got["Body"].read()
                    except ClientError as e:
                        # A version that changed in the backend while it was fetched: S3's 503.
                        with lock:
                            cut.append(f"{k}: {e.response['Error']['Code']}")
                        continue
                    except Exception as e:  # noqa: BLE001 - a body cut off between windows
                        with lock:
                            cut.append(f"{k}: {type(e).__name__}")
                        continue
                    etag = got["ETag"].strip('"')
                    with lock:
                        reads[0] += 1
                        seen.setdefault(k, set()).add(etag)
                        if hashlib.md5(body).hexdigest() != etag or len(body) != sizes[k]:
                            wrong.append(f"{k}: {len(body)} bytes, MD5 {hashlib.md5(body).hexdigest()} under ETag {etag}")

            threads = [threading.Thread(target=writer)] + [threading.Thread(target=reader, args=(i,)) for i in range(4)]
            for t in threads:
                t.start()
            for t in threads:
                t.join()
            print(f"\n  {reads[0]} whole answers, {sum(len(v) for v in seen.values())} versions seen, "
                  f"{len(cut)} refused or cut off", flush=True)
            self.assertEqual(wrong, [], f"{len(wrong)} of {reads[0]} answers mixed versions")
            self.assertGreater(reads[0], 100, "too few reads to say anything")
            # The reads did see the other writer's versions (else nothing was tested).
            self.assertGreater(sum(len(v) for v in seen.values()), 2 * len(sizes), seen)
            self.assertLess(len(cut), reads[0], f"mostly refused: {cut[:5]}")
        finally:
            rc = r.stop()
            r.cleanup()
        self.assertEqual(rc, 0)
