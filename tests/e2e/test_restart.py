"""Write-back durability: objects acknowledged but not yet flushed survive SIGKILL; after the
restart they are served and the flusher writes them to the backend directory. A delete of an
unflushed object is not undone by the restart."""

import os
import signal
import time
import unittest

from botocore.exceptions import ClientError

from reoapi import put_until_refused
from server import Server

BIN = os.environ.get("REO_BIN", "target/debug/reo")


class RestartTest(unittest.TestCase):
    def test_sigkill_then_restart_flushes(self):
        srv = Server(BIN, extra=["--flush-delay-ms", "600000"])  # nothing flushes before the kill
        srv.start()
        s3 = srv.client()
        s3.create_bucket(Bucket="wback")
        data = os.urandom(1500 * 1024)
        s3.put_object(Bucket="wback", Key="keep", Body=data, ContentType="text/x-kept", Metadata={"m": "1"})
        s3.put_object(Bucket="wback", Key="gone", Body=b"delete me")
        s3.delete_object(Bucket="wback", Key="gone")
        backend_file = os.path.join(srv.backend_dir, "wback", "o.keep")
        self.assertFalse(os.path.exists(backend_file), "flushed despite the delay")
        # Reads after writes see the unflushed object.
        self.assertEqual(s3.get_object(Bucket="wback", Key="keep")["Body"].read(), data)
        self.assertEqual([o["Key"] for o in s3.list_objects_v2(Bucket="wback")["Contents"]], ["keep"])
        srv.stop(signal.SIGKILL)

        srv2 = Server(BIN, data_dir=srv.data_dir)
        srv2.start()
        try:
            s3 = srv2.client()
            g = s3.get_object(Bucket="wback", Key="keep")
            self.assertEqual(g["Body"].read(), data)
            self.assertEqual((g["ContentType"], g["Metadata"]), ("text/x-kept", {"m": "1"}))
            deadline = time.time() + 30
            while not os.path.exists(backend_file) and time.time() < deadline:
                time.sleep(0.1)
            with open(backend_file, "rb") as f:
                self.assertEqual(f.read(), data)
            with self.assertRaises(ClientError):
                s3.head_object(Bucket="wback", Key="gone")
        finally:
            self.assertEqual(srv2.stop(), 0)
        with open(os.path.join(srv.data_dir, "server.log")) as f:
            log = f.read()
        self.assertIn("recovered after a crash", log)
        srv2.cleanup()

    def test_dirty_budget_exhausted_gives_slowdown_then_recovers(self):
        srv = Server(BIN, extra=["--flush-delay-ms", "600000"], device_mib=16)
        srv.start()
        s3 = srv.client()
        s3.create_bucket(Bucket="full")
        acked, e = put_until_refused(s3, "full", 512 * 1024)
        self.assertEqual(e.response["Error"]["Code"], "SlowDown")
        self.assertEqual(e.response["ResponseMetadata"]["HTTPStatusCode"], 503)
        self.assertGreater(len(acked), 3)
        self.assertEqual(srv.stop(), 0)
        # Restarted without the delay, the flusher drains the dirty data and writes succeed again.
        srv2 = Server(BIN, data_dir=srv.data_dir, device_mib=16)
        srv2.start()
        s3 = srv2.client()
        for k, body in acked.items():
            self.assertEqual(s3.get_object(Bucket="full", Key=k)["Body"].read(), body)
        deadline = time.time() + 60
        while True:
            try:
                s3.put_object(Bucket="full", Key="after", Body=os.urandom(512 * 1024))
                break
            except ClientError as e:
                self.assertEqual(e.response["Error"]["Code"], "SlowDown")
                self.assertLess(time.time(), deadline, "still SlowDown after 60 s of flushing")
                time.sleep(0.2)
        for k, body in acked.items():
            path = os.path.join(srv2.backend_dir, "full", "o." + k)
            while not os.path.exists(path) and time.time() < deadline:
                time.sleep(0.1)
            with open(path, "rb") as f:
                self.assertEqual(f.read(), body)
        self.assertEqual(srv2.stop(), 0)
        with open(os.path.join(srv.data_dir, "server.log")) as f:
            log = f.read()
        self.assertIn("store closed (checkpoint written)", log)
        self.assertIn("(clean restart)", log)
        srv2.cleanup()


if __name__ == "__main__":
    unittest.main()
