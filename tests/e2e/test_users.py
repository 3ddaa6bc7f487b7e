"""Users and roles against a real `reo serve`: a `readwrite` key cannot reach the admin API (the
review's finding: every S3 key holder could replace a device with a file anywhere), a `readonly`
key only reads, scopes confine a user to buckets and prefixes (objects, listings, ListBuckets,
copies, batch deletes, hints, queries), and `reo admin user add/list/rotate/remove` manage the
users, whose changes take effect at once and survive a restart."""

import json
import os
import time
import unittest

from botocore.exceptions import ClientError

from reoapi import admin, call, hint
from server import ACCESS, ADMIN_ACCESS, ADMIN_SECRET, SECRET, Server

BIN = os.environ.get("REO_BIN", "target/debug/reo")


def code(e):
    return e.exception.response["Error"]["Code"]


class UsersTest(unittest.TestCase):
    @classmethod
    def setUpClass(cls):
        cls.srv = Server(BIN, device_mib=32)
        cls.srv.start()
        s3 = cls.srv.client()
        for b in ("photos", "logs", "private"):
            s3.create_bucket(Bucket=b)
        for k in ("user1/a.jpg", "user2/b.jpg"):
            s3.put_object(Bucket="photos", Key=k, Body=k.encode())
        s3.put_object(Bucket="private", Key="secret.txt", Body=b"s")

    @classmethod
    def tearDownClass(cls):
        assert cls.srv.stop() == 0
        cls.srv.cleanup()

    def add(self, name, role, *scopes):
        args = ["user", "add", name, "--role", role, "--json"]
        for s in scopes:
            args += ["--scope", s]
        pair = json.loads(admin(BIN, self.srv, *args).stdout)
        return pair["access_key"], pair["secret_key"]

    def test_readwrite_keys_cannot_use_the_admin_api(self):
        target = os.path.join(self.srv.data_dir, "..", "escaped.img")
        for method, path, query in (("POST", "/_reo/admin/device/replace", {"device": "1", "path": target}),
                                    ("POST", "/_reo/admin/device/fail", {"device": "1"}),
                                    ("POST", "/_reo/admin/flush", None), ("GET", "/_reo/admin/status", None),
                                    ("GET", "/_reo/admin/users", None)):
            status, body = call(self.srv, method, path, query, access=ACCESS, secret=SECRET)
            self.assertEqual(status, 403, (path, body))
        self.assertFalse(os.path.exists(target))
        status, body = call(self.srv, "GET", "/_reo/admin/status")
        self.assertEqual(status, 200, body)
        self.assertTrue(all(d["health"] == "healthy" for d in body["devices"]))
        # The readwrite key is no admin for `reo admin` either.
        env_args = ["--access-key", ACCESS, "--secret-key", SECRET]
        p = admin(BIN, self.srv, *env_args, "status", check=False)
        self.assertEqual(p.returncode, 2)
        self.assertIn("may not", p.stderr)

    def test_admin_requests_cannot_be_replayed_or_carry_unsigned_bodies(self):
        import urllib.error
        import urllib.request
        from botocore.auth import S3SigV4Auth, S3SigV4QueryAuth
        from botocore.awsrequest import AWSRequest
        from botocore.credentials import Credentials

        def send(method, url, headers, data=b""):
            r = urllib.request.Request(url, data=data or None, method=method, headers=headers)
            try:
                with urllib.request.urlopen(r, timeout=60) as resp:
                    return resp.status, resp.read()
            except urllib.error.HTTPError as e:
                return e.code, e.read()

        creds = Credentials(ADMIN_ACCESS, ADMIN_SECRET)
        url = self.srv.endpoint + "/_reo/admin/flush"
        req = AWSRequest(method="POST", url=url, data=b"")
        S3SigV4Auth(creds, "s3", "us-east-1").add_auth(req)
        captured = dict(req.prepare().headers)
        self.assertEqual(send("POST", url, captured)[0], 200)
        status, body = send("POST", url, captured)
        self.assertEqual(status, 403)
        self.assertIn(b"replay", body)
        # Unsigned bodies and presigned URLs are refused on the API.
        req = AWSRequest(method="POST", url=url, data=b"", headers={"x-amz-content-sha256": "UNSIGNED-PAYLOAD"})
        S3SigV4Auth(creds, "s3", "us-east-1").add_auth(req)
        status, body = send("POST", url, dict(req.prepare().headers))
        self.assertEqual(status, 403, body)
        req = AWSRequest(method="GET", url=self.srv.endpoint + "/_reo/admin/status")
        S3SigV4QueryAuth(creds, "s3", "us-east-1", expires=60).add_auth(req)
        self.assertEqual(send("GET", req.url, {})[0], 403)
        # Reads are not mutations: the same signed GET may be sent again.
        status_url = self.srv.endpoint + "/_reo/admin/status"
        req = AWSRequest(method="GET", url=status_url)
        S3SigV4Auth(creds, "s3", "us-east-1").add_auth(req)
        h = dict(req.prepare().headers)
        self.assertEqual((send("GET", status_url, h)[0], send("GET", status_url, h)[0]), (200, 200))

    def test_readonly_reads_only(self):
        a, s = self.add("viewer", "readonly")
        s3 = self.srv.client(a, s)
        self.assertEqual(s3.get_object(Bucket="photos", Key="user1/a.jpg")["Body"].read(), b"user1/a.jpg")
        self.assertEqual(len(s3.list_objects_v2(Bucket="photos")["Contents"]), 2)
        for op in (lambda: s3.put_object(Bucket="photos", Key="user1/new", Body=b"x"),
                   lambda: s3.delete_object(Bucket="photos", Key="user1/a.jpg"),
                   lambda: s3.create_bucket(Bucket="viewer-bucket"),
                   lambda: s3.create_multipart_upload(Bucket="photos", Key="m"),
                   lambda: s3.copy_object(Bucket="photos", Key="c", CopySource="photos/user1/a.jpg")):
            with self.assertRaises(ClientError) as e:
                op()
            self.assertEqual(code(e), "AccessDenied")
            self.assertIn("viewer (readonly)", e.exception.response["Error"]["Message"])
        status, _ = call(self.srv, "POST", "/_reo/hints", body=hint("photos", "user1/a.jpg", "pin", time.time(),
                                                                         time.time() + 60), access=a, secret=s)
        self.assertEqual(status, 403)
        self.assertEqual(self.srv.client().head_object(Bucket="photos", Key="user1/a.jpg")["ContentLength"], 11)

    def test_scopes_confine_a_user(self):
        a, s = self.add("user1", "readwrite", "photos/user1/", "logs")
        s3 = self.srv.client(a, s)
        s3.put_object(Bucket="photos", Key="user1/mine", Body=b"m")
        s3.put_object(Bucket="logs", Key="any/key", Body=b"l")
        self.assertEqual(s3.get_object(Bucket="photos", Key="user1/mine")["Body"].read(), b"m")
        self.assertEqual([o["Key"] for o in s3.list_objects_v2(Bucket="photos", Prefix="user1/")["Contents"]],
                         ["user1/a.jpg", "user1/mine"])
        self.assertEqual(sorted(b["Name"] for b in s3.list_buckets()["Buckets"]), ["logs", "photos"])
        denied = (
            lambda: s3.get_object(Bucket="photos", Key="user2/b.jpg"),
            lambda: s3.put_object(Bucket="photos", Key="user2/b.jpg", Body=b"overwritten"),
            lambda: s3.get_object(Bucket="private", Key="secret.txt"),
            lambda: s3.list_objects_v2(Bucket="photos"),  # the whole bucket reaches user2's keys
            lambda: s3.list_objects(Bucket="photos", Prefix="user2/"),
            lambda: s3.delete_bucket(Bucket="photos"),  # a prefix does not own the bucket
            lambda: s3.copy_object(Bucket="photos", Key="user1/stolen", CopySource="private/secret.txt"),
            lambda: s3.delete_objects(Bucket="photos", Delete={"Objects": [{"Key": "user1/mine"},
                                                                          {"Key": "user2/b.jpg"}]}),
        )
        for i, op in enumerate(denied):
            with self.assertRaises(ClientError, msg=i) as e:
                op()
            self.assertEqual(code(e), "AccessDenied", i)
        # Nothing denied happened: user2's object is intact, the batch deleted nothing.
        admin_s3 = self.srv.client(ADMIN_ACCESS, ADMIN_SECRET)
        self.assertEqual(admin_s3.get_object(Bucket="photos", Key="user2/b.jpg")["Body"].read(), b"user2/b.jpg")
        self.assertEqual(admin_s3.get_object(Bucket="photos", Key="user1/mine")["Body"].read(), b"m")
        with self.assertRaises(ClientError):
            admin_s3.head_object(Bucket="photos", Key="user1/stolen")
        # Hints and queries stay within the scopes too.
        now = time.time()
        status, _ = call(self.srv, "POST", "/_reo/hints", body=hint("photos", "user2/b.jpg", "pin", now, now + 60),
                         access=a, secret=s)
        self.assertEqual(status, 403)
        status, body = call(self.srv, "POST", "/_reo/hints", body=hint("photos", "user1/mine", "pin", now, now + 60),
                            access=a, secret=s)
        self.assertEqual(status, 200, body)
        mine = body["request_id"]
        status, _ = call(self.srv, "GET", "/_reo/query", {"bucket": "private", "key": "secret.txt"}, access=a, secret=s)
        self.assertEqual(status, 403)
        status, body = call(self.srv, "GET", "/_reo/query", {"bucket": "photos", "key": "user1/mine"}, access=a, secret=s)
        self.assertEqual(status, 200, body)
        # Another user neither sees nor cancels user1's hint.
        b, t = self.add("user2", "readwrite", "photos/user2/")
        status, body = call(self.srv, "GET", "/_reo/hints", access=b, secret=t)
        self.assertEqual((status, body["hints"]), (200, []))
        status, _ = call(self.srv, "DELETE", f"/_reo/hints/{mine}", access=b, secret=t)
        self.assertEqual(status, 403)
        status, body = call(self.srv, "GET", "/_reo/hints", access=a, secret=s)
        self.assertEqual([h["request_id"] for h in body["hints"]], [mine])
        self.assertEqual(body["hints"][0]["owner"], "user1")

    def test_users_are_managed_with_reo_admin(self):
        a, s = self.add("rotating", "readwrite", "logs")
        self.srv.client(a, s).put_object(Bucket="logs", Key="r", Body=b"r")
        listed = admin(BIN, self.srv, "user", "list").stdout
        self.assertIn("rotating", listed)
        self.assertIn("(built-in)", listed)
        self.assertNotIn(s, listed)
        users = json.loads(admin(BIN, self.srv, "user", "list", "--json").stdout)["users"]
        self.assertEqual(users[0]["name"], "admin")
        self.assertTrue(all("secret_key" not in u for u in users))
        self.assertEqual(admin(BIN, self.srv, "user", "add", "rotating", "--role", "readonly", check=False).returncode, 2)
        p = admin(BIN, self.srv, "user", "add", "bad", "--role", "root", check=False)
        self.assertEqual(p.returncode, 2)
        self.assertIn("role", p.stderr)
        p = admin(BIN, self.srv, "user", "remove", "admin", check=False)
        self.assertIn("built-in", p.stderr)
        # Rotation: the old secret stops working at once, the new one works.
        new = json.loads(admin(BIN, self.srv, "user", "rotate", "rotating", "--json").stdout)
        self.assertEqual(new["access_key"], a)
        with self.assertRaises(ClientError) as e:
            self.srv.client(a, s).get_object(Bucket="logs", Key="r")
        self.assertEqual(code(e), "SignatureDoesNotMatch")
        s = new["secret_key"]
        self.assertEqual(self.srv.client(a, s).get_object(Bucket="logs", Key="r")["Body"].read(), b"r")
        # Users survive a restart, with their roles.
        self.srv.stop()
        self.srv.start()
        self.assertEqual(self.srv.client(a, s).get_object(Bucket="logs", Key="r")["Body"].read(), b"r")
        with self.assertRaises(ClientError) as e:
            self.srv.client(a, s).put_object(Bucket="photos", Key="user2/x", Body=b"x")
        self.assertEqual(code(e), "AccessDenied")
        admin(BIN, self.srv, "user", "remove", "rotating")
        with self.assertRaises(ClientError) as e:
            self.srv.client(a, s).get_object(Bucket="logs", Key="r")
        self.assertEqual(code(e), "InvalidAccessKeyId")


if __name__ == "__main__":
    unittest.main()
