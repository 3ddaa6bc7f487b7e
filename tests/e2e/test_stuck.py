"""A bucket deleted in the backend behind the gateway (its directory removed) while objects of it
are unflushed: the objects are kept on flash and readable, reported as stuck (status, `reo admin
status`, `/metrics`, a log line naming bucket and key), the backend is not declared down (other
buckets take writes and flush), and once the bucket is recreated they flush byte-exact."""

import os
import shutil
import unittest

from reoapi import admin, metric, wait_for
from test_outage import BIN, backend_bytes, start, status


class StuckTest(unittest.TestCase):
    def test_a_bucket_deleted_behind_the_gateway_keeps_its_objects_until_recreated(self):
        # Flushing is held off (1 h delay) until `reo admin flush`; a backend wrongly declared
        # down would refuse writes after 1 s.
        srv = start('[flush]\ndelay_ms = 3600000\nbackend_down_slowdown_after = "1s"\n')

        def stop():
            self.assertEqual(srv.stop(), 0)
            srv.cleanup()

        self.addCleanup(stop)
        s3 = srv.client()
        s3.create_bucket(Bucket="gone")
        s3.create_bucket(Bucket="kept")
        body = os.urandom(70_000)
        s3.put_object(Bucket="gone", Key="obj", Body=body)
        shutil.rmtree(os.path.join(srv.backend_dir, "gone"))  # another client of the backend
        p = admin(BIN, srv, "flush", "--timeout", "3s", check=False)
        self.assertEqual(p.returncode, 1, p.stderr)
        self.assertIn("1 of them stuck (bucket missing in the backend: gone)", p.stderr)
        s = status(srv)
        self.assertTrue(s["backend"]["up"] and not s["backend"]["slowing_down"], s["backend"])
        self.assertEqual((s["stuck"]["objects"], s["stuck"]["bytes"]), (1, 70_000), s["stuck"])
        self.assertIn("NoSuchBucket", s["stuck"]["buckets"][0]["reason"])
        self.assertEqual((metric(srv, "reo_gateway_stuck_objects"), metric(srv, "reo_gateway_stuck_bytes")),
                         (1, 70_000))
        self.assertIn("stuck: 1 objects", admin(BIN, srv, "status").stdout)
        with open(os.path.join(srv.data_dir, "server.log"), encoding="utf-8", errors="replace") as f:
            log = f.read()
        self.assertIn('bucket "gone" is missing in the backend', log)
        self.assertIn('object "obj"', log)
        # Acknowledged data is kept and served; other buckets are not held up.
        self.assertEqual(s3.get_object(Bucket="gone", Key="obj")["Body"].read(), body)
        s3.put_object(Bucket="kept", Key="k", Body=b"accepted")
        # Recreated through the gateway: the stuck object flushes.
        s3.create_bucket(Bucket="gone")
        admin(BIN, srv, "flush", "--timeout", "60s")
        self.assertEqual(backend_bytes(srv, "gone", "obj"), body)
        self.assertEqual(backend_bytes(srv, "kept", "k"), b"accepted")
        s = wait_for(lambda: (lambda s: s if s["stuck"]["objects"] == 0 else None)(status(srv)), "nothing stuck")
        self.assertEqual(s["dirty_objects"], 0)
        self.assertEqual(metric(srv, "reo_gateway_stuck_objects"), 0)


if __name__ == "__main__":
    unittest.main()
