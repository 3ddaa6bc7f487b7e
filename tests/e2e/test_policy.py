"""Write policies by rule: write-through and write-around reach the backend before the 200;
read-only refuses writes; write-back stays the default."""

import os
import unittest

from botocore.exceptions import ClientError

from server import Server

BIN = os.environ.get("REO_BIN", "target/debug/reo")


class PolicyTest(unittest.TestCase):
    def test_policies(self):
        srv = Server(BIN, extra=["--flush-delay-ms", "600000",
                                 "--write-policy", "pol/through/=write-through",
                                 "--write-policy", "pol/around/=write-around",
                                 "--write-policy", "frozen=read-only"])
        srv.start()
        try:
            s3 = srv.client()
            s3.create_bucket(Bucket="pol")
            s3.create_bucket(Bucket="frozen")
            backend = os.path.join(srv.backend_dir, "pol")
            s3.put_object(Bucket="pol", Key="through/a", Body=b"T")
            self.assertTrue(os.path.exists(os.path.join(backend, "d.through", "o.a")))
            s3.put_object(Bucket="pol", Key="around/a", Body=b"A")
            self.assertTrue(os.path.exists(os.path.join(backend, "d.around", "o.a")))
            s3.put_object(Bucket="pol", Key="back", Body=b"B")
            self.assertFalse(os.path.exists(os.path.join(backend, "o.back")), "write-back flushed early")
            for k, v in [("through/a", b"T"), ("around/a", b"A"), ("back", b"B")]:
                self.assertEqual(s3.get_object(Bucket="pol", Key=k)["Body"].read(), v)
            with self.assertRaises(ClientError) as e:
                s3.put_object(Bucket="frozen", Key="x", Body=b"no")
            self.assertEqual(e.exception.response["Error"]["Code"], "AccessDenied")
            self.assertIn("read-only", e.exception.response["Error"]["Message"])
            with self.assertRaises(ClientError):
                s3.delete_object(Bucket="frozen", Key="x")
            self.assertEqual(s3.list_objects_v2(Bucket="frozen")["KeyCount"], 0)
        finally:
            self.assertEqual(srv.stop(), 0)
        srv.cleanup()


if __name__ == "__main__":
    unittest.main()
